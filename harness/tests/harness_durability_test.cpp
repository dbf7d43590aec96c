// `crashsim durability` end to end: three files, measurements and matrix; merging two
// platforms gives one matrix with two platform columns; mixing report kinds is refused.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "crashsim/build_paths.h"
#include "crashsim/reports/schema_validator.h"
#include "test_util.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {}  // namespace

TEST(Durability, ReportMeasuresThePlatformAndMergesTwoPlatformsIntoOneMatrix) {
  auto d = freshDir("crashsim-durability");
  // One scenario: the whole report, every matrix row and a NORMAL loss, in about half the
  // default selection's time under ASan (each case starts several sanitized processes in CI).
  auto r = sh(cs() + " durability --jobs 2 --scenario write-config-port --out " +
              (d / "a").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  for (auto f : {"durability.json", "durability.md", "durability.html"})
    ASSERT_TRUE(fs::exists(d / "a" / f)) << f << "\n" << r.out;

  auto doc = loadJson(d / "a" / "durability.json");
  const auto schema =
      loadJson(fs::path(CRASHSIM_SOURCE_DIR) / "reports" / "durability.schema.json");
  for (const auto& v : crashsim::reports::validateSchema(schema, doc))
    ADD_FAILURE() << "durability.json " << v.path << ": " << v.message;
  EXPECT_EQ(doc["kind"], "durability");
  EXPECT_EQ(doc["platforms"][0]["platform"]["journalMode"], "wal");
  EXPECT_EQ(doc["formatVersion"], 1);
  EXPECT_TRUE(doc.contains("crashsimVersion"));
  ASSERT_EQ(doc["platforms"].size(), 1u);
  const auto& p = doc["platforms"][0];
  for (auto k : {"os", "kernel", "fsType", "sqliteVersion", "sqliteCompileOptions"})
    EXPECT_TRUE(p["platform"].contains(k)) << k;
  EXPECT_TRUE(p["mount"].contains("mountOptions")) << p["mount"].dump();
  for (auto k : {"fsync", "fdatasync"}) {
    EXPECT_GT(p["measurements"][k]["samples"].get<int>(), 0) << k;
    EXPECT_GT(p["measurements"][k]["medianUs"].get<double>(), 0) << k;
    EXPECT_GE(p["measurements"][k]["p95Us"].get<double>(),
              p["measurements"][k]["medianUs"].get<double>());
  }
  for (auto s : {"FULL", "NORMAL"})
    EXPECT_GT(p["measurements"]["commitRate"][s]["commitsPerSecond"].get<double>(), 0) << s;

  // The matrix covers kill/FULL and powerloss/FULL+NORMAL; FULL passes everywhere, D2 never
  // fails, and NORMAL reports the acknowledged facts a power cut lost.
  std::set<std::string> combos;
  int normalLost = 0;
  for (const auto& c : p["matrix"]) {
    combos.insert(c["mode"].get<std::string>() + "/" + c["synchronous"].get<std::string>());
    EXPECT_EQ(c["d2Failed"], 0) << c.dump();
    if (c["synchronous"] == "FULL") {
      EXPECT_EQ(c["failed"], 0) << c.dump();
    }
    EXPECT_EQ(c["passed"].get<int>() + c["failed"].get<int>(), c["total"].get<int>());
    if (c["synchronous"] == "NORMAL") normalLost += c["d1Lost"].get<int>();
  }
  EXPECT_EQ(combos, (std::set<std::string>{"kill/FULL", "stop/FULL", "powerloss/FULL",
                                           "powerloss/NORMAL"}));
  EXPECT_GT(normalLost, 0);
  EXPECT_NE(slurp(d / "a" / "durability.md").find("| failpoint | mode | synchronous |"),
            std::string::npos);

  // A second "platform": the same document under another name.
  auto other = doc;
  other["platforms"][0]["name"] = "Other-OS-apfs";
  fs::create_directories(d / "b");
  std::ofstream(d / "b" / "durability.json") << other.dump(2);
  auto m = sh(cs() + " report merge " + (d / "a" / "durability.json").string() + " " +
              (d / "b" / "durability.json").string() + " --out " + (d / "m").string() + " 2>&1");
  EXPECT_EQ(m.exitCode, 0) << m.out;
  auto merged = loadJson(d / "m" / "durability.json");
  for (const auto& v : crashsim::reports::validateSchema(schema, merged))
    ADD_FAILURE() << "merged durability.json " << v.path << ": " << v.message;
  ASSERT_EQ(merged["platforms"].size(), 2u);
  EXPECT_EQ(merged["platforms"][1]["name"], "Other-OS-apfs");
  auto md = slurp(d / "m" / "durability.md");
  auto header = md.substr(md.find("| failpoint | mode | synchronous |"));
  header = header.substr(0, header.find('\n'));
  EXPECT_NE(header.find(p["name"].get<std::string>()), std::string::npos) << header;
  EXPECT_NE(header.find("Other-OS-apfs"), std::string::npos) << header;
  EXPECT_EQ(std::count(header.begin(), header.end(), '|'), 6) << header;  // 3 keys + 2 platforms
  EXPECT_NE(slurp(d / "m" / "durability.html").find("<th>Other-OS-apfs</th>"), std::string::npos);

  // The same platform twice is refused.
  auto dup = sh(cs() + " report merge " + (d / "a" / "durability.json").string() + " " +
                (d / "a" / "durability.json").string() + " --out " + (d / "x").string() + " 2>&1");
  EXPECT_EQ(dup.exitCode, 2) << dup.out;

  // A sweep report and a durability report do not mix.
  auto s = sh(cs() + " sweep --scenario bash-touch-marker --failpoint P4 --jobs 2 --out " +
              (d / "s").string() + " 2>/dev/null");
  ASSERT_TRUE(fs::exists(d / "s" / "report.json")) << s.out;
  auto mix = sh(cs() + " report merge " + (d / "s" / "report.json").string() + " " +
                (d / "a" / "durability.json").string() + " --out " + (d / "y").string() + " 2>&1");
  EXPECT_EQ(mix.exitCode, 2) << mix.out;
  EXPECT_NE(mix.out.find("cannot merge a sweep report"), std::string::npos) << mix.out;
  EXPECT_FALSE(fs::exists(d / "y" / "durability.json"));
  fs::remove_all(d);
}
