// `--mode powerloss` end to end (issue 9 part 2): seeded crash states per case, D1/D2 next to
// V1–V9, reports that validate, and a planted fault that D2 must catch.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "crashsim/build_paths.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/harness/powerloss_mode.h"
#include "crashsim/reports/schema_validator.h"
#include "test_util.h"
#include "verdicts/d1_d2_powerloss.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;
namespace harness = crashsim::harness;
namespace reports = crashsim::reports;

namespace {

// Runs a sweep and returns its report (empty object when none was written).
json sweep(const fs::path& binary, const std::string& args, const fs::path& out, int* rc,
           const std::string& envPrefix = "") {
  auto r = sh(envPrefix + binary.string() + " sweep --jobs 2 " + args + " --out " + out.string() +
              " 2>&1");
  *rc = r.exitCode;
  if (!fs::exists(out / "report.json")) {
    ADD_FAILURE() << "no report.json; output:\n" << r.out;
    return json::object();
  }
  return loadJson(out / "report.json");
}

}  // namespace

TEST(PowerlossCaseId, SeedIsPartOfTheIdAndRequiredForPowerloss) {
  auto id = harness::parseCaseId("write-config-port/P6#1/powerloss@17");
  EXPECT_EQ(id.mode, "powerloss");
  ASSERT_TRUE(id.seed.has_value());
  EXPECT_EQ(*id.seed, 17u);
  EXPECT_EQ(id.str(), "write-config-port/P6#1/powerloss@17");
  EXPECT_THROW(harness::parseCaseId("write-config-port/P6#1/powerloss"), std::invalid_argument);
  EXPECT_THROW(harness::parseCaseId("write-config-port/P6#1/powerloss@x"), std::invalid_argument);
  EXPECT_THROW(harness::parseCaseId("write-config-port/P6#1/kill@3"), std::invalid_argument);
  EXPECT_FALSE(harness::parseCaseId("write-config-port/P6#1/kill").seed.has_value());
  // Seeds: deterministic, consecutive (so --states 4 visits the four crash kinds), and
  // different for different (scenario, failpoint, hit) or sweep seeds.
  auto s = harness::powerlossSeeds(id, 0, 4);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s, harness::powerlossSeeds(id, 0, 4));
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], s[0] + i);
  EXPECT_EQ(s[0] % 4, 0u);
  EXPECT_NE(s, harness::powerlossSeeds(id, 1, 4));
  auto other = id;
  other.hit = 2;
  EXPECT_NE(s, harness::powerlossSeeds(other, 0, 4));
}

TEST(PowerlossSweep, FullSyncEveryCasePassesV1ToV9AndD1D2AndTheReportValidates) {
  auto d = freshDir("crashsim-powerloss-full");
  int rc = -1;
  json rep = sweep(crashsimBinary(),
                   "--mode powerloss --scenario write-config-port --states 2 --no-barriers",
                   d / "out", &rc);
  EXPECT_EQ(rc, 0);
  auto schema = loadJson(fs::path(CRASHSIM_SOURCE_DIR) / "reports" / "report.schema.json");
  for (const auto& v : reports::validateSchema(schema, rep))
    ADD_FAILURE() << v.path << ": " << v.message;
  EXPECT_EQ(rep["selection"]["mode"], "powerloss");
  EXPECT_EQ(rep["platform"]["synchronous"], "FULL");
  ASSERT_GT(rep["summary"]["total"].get<int>(), 0);
  EXPECT_EQ(rep["summary"]["failed"], 0);
  const std::regex idPattern(R"(^write-config-port/P\d+#\d+/powerloss@\d+$)");
  std::map<std::string, std::set<std::string>> seedsPerPoint;
  for (const auto& c : rep["cases"]) {
    const std::string id = c["id"];
    EXPECT_TRUE(std::regex_match(id, idPattern)) << id;
    seedsPerPoint[id.substr(0, id.find("/powerloss@"))].insert(id);
    EXPECT_EQ(c["checks"].size(), 12u) << id;
    for (auto v : {"D1", "D2", "D3"})
      EXPECT_EQ(c["checks"][v], "pass") << id << " " << v << ": " << c["reasons"].dump();
    for (auto v : {"V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8"})
      EXPECT_EQ(c["checks"][v], "pass") << id << " " << v << ": " << c["reasons"].dump();
    EXPECT_NE(c["checks"]["V9"], "fail") << id;
  }
  // --states 2: every reached (failpoint, hit) has exactly two seeded crash states.
  EXPECT_GE(seedsPerPoint.size(), 8u);
  for (const auto& [point, ids] : seedsPerPoint) EXPECT_EQ(ids.size(), 2u) << point;
  EXPECT_NE(slurp(d / "out" / "report.html").find("<th>D1</th>"), std::string::npos);
  fs::remove_all(d);
}

// #44 §3: a power cut at the barriers. S#1 is the first COMMIT of a store being created (a
// power cut there may revert the unlink of the journal of its switch to WAL: a hot journal V2
// must read as the first writer would, and D1 must compare the crash state, not the schema the
// checks' own open creates); F#4 falls between the rename of the Write's replace and its
// directory fsync. All four crash kinds of each pass every check, D3 included.
TEST(PowerlossSweep, BarrierCasesPassEveryCheckInEveryCrashKind) {
  auto d = freshDir("crashsim-powerloss-barriers");
  int rc = -1;
  json rep = sweep(crashsimBinary(),
                   "--mode powerloss --scenario write-config-port --states 4 --case "
                   "'write-config-port/S#1/*' --case 'write-config-port/F#4/*'",
                   d / "out", &rc);
  EXPECT_EQ(rc, 0);
  ASSERT_EQ(rep["cases"].size(), 8u) << rep.dump().substr(0, 2000);
  for (const auto& c : rep["cases"]) {
    const std::string id = c["id"];
    for (auto v : {"V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8", "D1", "D2", "D3"})
      EXPECT_EQ(c["checks"][v], "pass") << id << " " << v << ": " << c["reasons"].dump();
  }
  fs::remove_all(d);
}

TEST(PowerlossSweep, PlantedCompletedWithoutResponseFailsD2) {
  // The resolver (planted) calls an operation whose response never became durable completed:
  // D2 must catch it on the crashed ledger, independently of the oracle (V4).
  auto d = freshDir("crashsim-powerloss-plant");
  int rc = -1;
  json rep = sweep(plantedBinary(),
                   "--mode powerloss --scenario write-config-port --failpoint P4 --states 1",
                   d / "out", &rc, "CRASHSIM_PLANT=resolver_completed_dispatch ");
  EXPECT_EQ(rc, 1);
  bool d2Failed = false;
  for (const auto& c : rep["cases"])
    if (c["checks"]["D2"] == "fail") {
      d2Failed = true;
      EXPECT_NE(c["reasons"]["D2"].get<std::string>().find("not in the ledger"), std::string::npos)
          << c["reasons"].dump();
    }
  EXPECT_TRUE(d2Failed) << rep.dump(2).substr(0, 4000);
  fs::remove_all(d);
}

TEST(PowerlossRun, OneSeededCaseIsReproducibleFromItsId) {
  auto d = freshDir("crashsim-powerloss-run");
  auto r = sh(crashsimBinary().string() + " run write-config-port/P6#1/powerloss@17 --keep " +
              (d / "case").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_NE(r.out.find("D1 pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("D2 pass"), std::string::npos) << r.out;
  // The crash description names the seed and its crash kind (17 % 4 = keep_prefix).
  auto desc = loadJson(d / "case" / "powerloss.json");
  EXPECT_EQ(desc["seed"], 17);
  EXPECT_EQ(desc["kind"], "keep_prefix");
  fs::remove_all(d);
}

TEST(PowerlossSweep, NormalSyncReportsTheLostAcknowledgedCommitsAndWhatRecoveryDecided) {
  // synchronous=NORMAL: WAL commits are not synced, so a power cut loses acknowledged commits.
  // D1 must name them (and what recovery then decided); the sweep exits 1.
  auto d = freshDir("crashsim-powerloss-normal");
  int rc = -1;
  json rep = sweep(crashsimBinary(),
                   "--mode powerloss --synchronous normal --scenario write-config-port "
                   "--failpoint P6 --states 4",
                   d / "out", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(rep["platform"]["synchronous"], "NORMAL");
  ASSERT_EQ(rep["cases"].size(), 8u);  // P6#1, P6#2 × 4 states
  std::set<std::string> kinds;
  for (const auto& c : rep["cases"]) {
    const std::string id = c["id"];
    ASSERT_EQ(c["checks"]["D1"], "fail") << id;
    const std::string why = c["reasons"]["D1"];
    EXPECT_NE(why.find("acknowledged fact(s) lost by the power cut"), std::string::npos) << why;
    EXPECT_NE(why.find("synchronous=NORMAL"), std::string::npos) << why;
    EXPECT_NE(why.find("— recovery then"), std::string::npos) << why;
    for (auto k : {"drop_all", "keep_prefix", "keep_subset", "tear_last"})
      if (why.find(std::string("(") + k + ",") != std::string::npos) kinds.insert(k);
    EXPECT_NE(c["reproduce"].get<std::string>().find("--synchronous NORMAL"), std::string::npos);
  }
  EXPECT_EQ(kinds.size(), 4u);  // --states 4 visits every crash kind
  fs::remove_all(d);
}

TEST(PowerlossSweep, NormalSyncNeverRunsAToolTwiceBecauseT1IsAlwaysDurable) {
  // T1 is the dispatch fence: even on a NORMAL connection it is committed with synced WAL
  // frames, so no crash state can hold a tool's side effect without its dispatch (D2).
  auto d = freshDir("crashsim-powerloss-normal-d2");
  int rc = -1;
  json rep = sweep(crashsimBinary(),
                   "--mode powerloss --synchronous normal --scenario write-config-port "
                   "--failpoint P3 --failpoint P4 --failpoint P5 --states 4",
                   d / "out", &rc);
  ASSERT_FALSE(rep["cases"].empty());
  for (const auto& c : rep["cases"])
    EXPECT_EQ(c["checks"]["D2"], "pass") << c["id"] << ": " << c["reasons"]["D2"];
  fs::remove_all(d);
}

TEST(PowerlossChecks, DamagedStoreMustBeRefusedWithAStableCodeAndRunNothing) {
  auto d = freshDir("crashsim-powerloss-damaged");
  const fs::path store = d / "store", ws = d / "ws";
  fs::create_directories(store);
  fs::create_directories(ws);
  {
    std::ofstream db(store / "runtime.sqlite", std::ios::binary);
    db << std::string("SQLite format 3\0", 16) << std::string(8000, '\x5a');
  }
  fs::create_directories(d / "acked");
  fs::copy_file(store / "runtime.sqlite", d / "acked" / "runtime.sqlite");
  harness::CheckMap checks;
  auto findings = harness::checkPowerlossCrash(d, store, "FULL", checks);
  EXPECT_TRUE(findings.damaged);
  EXPECT_EQ(checks["D1"].status, "fail");  // the acknowledged store does not reopen
  EXPECT_NE(checks["D1"].reason.find("no longer opens"), std::string::npos) << checks["D1"].reason;
  EXPECT_EQ(checks["D2"].status, "pass");

  // The real agent refuses the damaged store with a stable code: D2 stays pass.
  harness::SpawnSpec recover;
  recover.exe = agentBinary();
  recover.args = {
      "recover",
      "--store",
      store.string(),
      "--workspace",
      ws.string(),
      "--scenario",
      (fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json").string()};
  recover.stdoutFile = d / "recover.stdout";
  auto r = harness::runToEnd(recover);
  EXPECT_TRUE(r.exited && r.exitCode == 2) << r.describe();
  harness::checkPowerlossRecovery(findings, store, r, recover.stdoutFile, checks);
  EXPECT_EQ(checks["D2"].status, "pass") << checks["D2"].reason;

  // A recovery that "repairs" (exits 0), or fails without a stable code, fails D2.
  harness::ChildResult ok;
  ok.exited = true;
  ok.exitCode = 0;
  harness::CheckMap a = checks;
  harness::checkPowerlossRecovery(findings, store, ok, recover.stdoutFile, a);
  EXPECT_EQ(a["D2"].status, "fail");
  EXPECT_NE(a["D2"].reason.find("exited 0 on a damaged store"), std::string::npos);
  { std::ofstream(d / "vague.stdout") << "{\"error\":{\"code\":\"oops\"}}\n"; }
  harness::CheckMap b = checks;
  harness::checkPowerlossRecovery(findings, store, r, d / "vague.stdout", b);
  EXPECT_EQ(b["D2"].status, "fail");
  EXPECT_NE(b["D2"].reason.find("without a stable code"), std::string::npos) << b["D2"].reason;
  fs::remove_all(d);
}
