// `crashsim sweep` end to end with the real agent: reports validate, determinism, sharding.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "crashsim/build_paths.h"
#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"
#include "test_util.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;
namespace reports = crashsim::reports;

namespace {}  // namespace

TEST(Sweep, ReportsValidateAgainstTheSchemaAndEveryCaseHasV1ToV9) {
  auto d = freshDir("crashsim-sweep-schema");
  auto r = sh(cs() + " sweep --scenario bash-touch-marker --double-faults --jobs 2 --out " +
              (d / "out").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  auto rep = loadJson(d / "out" / "report.json");
  auto schema = loadJson(fs::path(CRASHSIM_SOURCE_DIR) / "reports" / "report.schema.json");
  auto violations = reports::validateSchema(schema, rep);
  for (const auto& v : violations) ADD_FAILURE() << v.path << ": " << v.message;
  ASSERT_GT(rep["summary"]["total"].get<int>(), 0);
  // V1–V9, and H1 for the races of two hosts (+H2).
  for (const auto& c : rep["cases"])
    EXPECT_EQ(c["checks"].size(), c["id"].get<std::string>().ends_with("+H2") ? 10u : 9u)
        << c["id"];
  for (auto f : {"junit.xml", "report.md", "report.html"})
    EXPECT_TRUE(fs::exists(d / "out" / f)) << f;
  // Exhaustive: every failpoint the one Bash call reaches has a case; Bash has no temp-file
  // boundary, so P3 (Write/Edit only) is not reached and has none.
  std::set<std::string> fps;
  for (const auto& c : rep["cases"]) fps.insert(c["failpoint"].get<std::string>());
  for (auto fp : {"P0", "P1", "P2", "P4", "P5", "P6", "P7", "P8", "P9"})
    EXPECT_TRUE(fps.count(fp)) << fp;
  EXPECT_FALSE(fps.count("P3"));
  fs::remove_all(d);
}

TEST(Sweep, SameSeedSameBuildGivesByteIdenticalReportApartFromTimingAndPlatform) {
  auto d = freshDir("crashsim-sweep-determinism");
  std::string base = cs() + " sweep --scenario write-config-port --seed 7 --jobs 2 --out ";
  auto a = sh(base + (d / "a").string() + " 2>/dev/null");
  auto b = sh(base + (d / "b").string() + " 2>/dev/null");
  EXPECT_EQ(a.exitCode, b.exitCode);
  auto ja = reports::withoutTimingAndPlatform(loadJson(d / "a" / "report.json"));
  auto jb = reports::withoutTimingAndPlatform(loadJson(d / "b" / "report.json"));
  EXPECT_EQ(ja.dump(2), jb.dump(2));
  fs::remove_all(d);
}

TEST(Sweep, ShardsAreDisjointAndMergeIntoTheFullSweep) {
  auto d = freshDir("crashsim-sweep-shards");
  std::string base = cs() + " sweep --scenario edit-two-files --jobs 2 ";
  ASSERT_EQ(sh(base + "--out " + (d / "full").string() + " 2>/dev/null").exitCode, 0);
  ASSERT_EQ(sh(base + "--shard 0/2 --out " + (d / "s0").string() + " 2>/dev/null").exitCode, 0);
  // The shard index can also come from the gtest sharding variables.
  ASSERT_EQ(sh("GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=2 " + base + "--out " + (d / "s1").string() +
               " 2>/dev/null")
                .exitCode,
            0);
  auto m = sh(cs() + " report merge " + (d / "s0" / "report.json").string() + " " +
              (d / "s1" / "report.json").string() + " --out " + (d / "merged").string());
  ASSERT_EQ(m.exitCode, 0) << m.out;
  auto full = loadJson(d / "full" / "report.json"), merged = loadJson(d / "merged" / "report.json");
  std::vector<std::string> a, b;
  for (const auto& c : full["cases"]) a.push_back(c["id"]);
  for (const auto& c : merged["cases"]) b.push_back(c["id"]);
  EXPECT_EQ(a, b);
  EXPECT_LT(loadJson(d / "s0" / "report.json")["cases"].size(), a.size());
  // Merging a shard with itself is refused (overlapping case sets), exit 2.
  auto dup = sh(cs() + " report merge " + (d / "s0" / "report.json").string() + " " +
                (d / "s0" / "report.json").string() + " --out " + (d / "bad").string() + " 2>&1");
  EXPECT_EQ(dup.exitCode, 2);
  EXPECT_NE(dup.out.find("report_merge_refused: refusing to merge"), std::string::npos) << dup.out;
  // A shard report that breaks report.schema.json is refused before anything is written, so a
  // merge never writes a report that fails its own schema.
  const nlohmann::json s0 = loadJson(d / "s0" / "report.json");
  const std::vector<std::function<void(nlohmann::json&)>> breaks = {
      [](nlohmann::json& r) { r["cases"][0]["verdict"] = "maybe"; },
      [](nlohmann::json& r) { r["cases"][0].erase("checks"); },
      [](nlohmann::json& r) { r["cases"][0]["id"] = "no-slashes"; },
      [](nlohmann::json& r) { r["summary"]["total"] = -1; },
      [](nlohmann::json& r) { r["unexpected"] = true; },
      [](nlohmann::json& r) { r["cases"] = "none"; },
  };
  for (size_t i = 0; i < breaks.size(); ++i) {
    nlohmann::json bad = s0;
    breaks[i](bad);
    const fs::path file = d / ("bad-" + std::to_string(i) + ".json");
    std::ofstream(file) << bad.dump();
    const fs::path out = d / ("bad-out-" + std::to_string(i));
    auto r = sh(cs() + " report merge " + file.string() + " " +
                (d / "s1" / "report.json").string() + " --out " + out.string() + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << i << ": " << r.out;
    EXPECT_NE(r.out.find("report_schema_violation"), std::string::npos) << i << ": " << r.out;
    EXPECT_FALSE(fs::exists(out / "report.json")) << i;
  }
  // A schema-valid shard whose coverage row ran more cases than it planned (report_merge_fuzz's
  // finding) is refused with its own code, nothing written.
  nlohmann::json inconsistent = s0;
  ASSERT_FALSE(inconsistent["coverage"].empty());
  inconsistent["coverage"][0]["run"] = inconsistent["coverage"][0]["planned"].get<int>() + 1;
  std::ofstream(d / "inconsistent.json") << inconsistent.dump();
  auto r = sh(cs() + " report merge " + (d / "inconsistent.json").string() + " " +
              (d / "s1" / "report.json").string() + " --out " + (d / "inc-out").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("report_invalid:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is inconsistent"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "inc-out" / "report.json"));
  fs::remove_all(d);
}
