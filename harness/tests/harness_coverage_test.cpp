// Coverage is a verdict: a sweep that checks nothing, or checks less than the oracle predicts,
// is an error (exit 2), never a pass. Each test builds the bad input by hand (a program that is
// no instrumented agent, an agent whose hit counts disagree with the prediction, an empty
// scenario folder, a selection with no case, a missing shard) and runs the real binaries.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "crashsim/reports/report.h"
#include "test_util.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// One line on stderr, exit 2, and the line says why.
void expectExitTwo(const std::string& cmd, const std::string& why) {
  auto r = sh(cmd + " 2>&1 >/dev/null");
  EXPECT_EQ(r.exitCode, 2) << cmd << "\n" << r.out;
  EXPECT_NE(r.out.find(why), std::string::npos) << cmd << "\n" << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// An executable shell script in dir.
fs::path script(const fs::path& dir, const std::string& name, const std::string& body) {
  fs::create_directories(dir);
  auto p = dir / name;
  std::ofstream(p) << "#!/bin/sh\n" << body;
  ::chmod(p.c_str(), 0755);
  return p;
}

// The real agent, whose hit counts file is then edited by `sedExpr` (a runtime that reaches
// other hits than it reports to the harness).
fs::path agentRewritingHits(const fs::path& dir, const std::string& sedExpr) {
  return script(dir, "agent.sh",
                agentBinary().string() +
                    " \"$@\"; rc=$?\n"
                    "if [ -n \"$CRASHSIM_HITS_OUT\" ] && [ -f \"$CRASHSIM_HITS_OUT\" ]; then\n"
                    "  sed -i '" +
                    sedExpr +
                    "' \"$CRASHSIM_HITS_OUT\"\n"
                    "fi\nexit $rc\n");
}

}  // namespace

TEST(Coverage, AProgramThatIsNoInstrumentedAgentExitsTwo) {
  expectExitTwo("CRASHSIM_AGENT=/bin/true " + cs() + " sweep --scenario write-config-port",
                "is CRASHSIM_AGENT");
  // A real agent run whose hit counts never reach the harness (a failed write of the hit file,
  // an agent built without failpoints): the reference run has no hits, not zero hits.
  auto d = freshDir("crashsim-cov-nohits");
  auto agent = script(d, "agent.sh",
                      "unset CRASHSIM_HITS_OUT\nexec " + agentBinary().string() + " \"$@\"\n");
  expectExitTwo(
      "CRASHSIM_AGENT=" + agent.string() + " " + cs() + " sweep --scenario write-config-port",
      "no readable failpoint hit counts");
  fs::remove_all(d);
}

TEST(Coverage, AReferenceRunThatReachesOtherHitsThanPredictedExitsTwo) {
  // The agent crosses P4 once more than the oracle predicts from the scenario (a runtime that
  // grew a boundary crossing, or an oracle that is wrong): the plan would miss a window.
  auto d = freshDir("crashsim-cov-mismatch");
  auto agent = agentRewritingHits(d, "s/\"P4\":\\([0-9]*\\)/\"P4\":9\\1/");
  expectExitTwo(
      "CRASHSIM_AGENT=" + agent.string() + " " + cs() + " sweep --scenario write-config-port",
      "reached P4");
  fs::remove_all(d);
}

TEST(Coverage, SelectionsThatPlanNoCaseExitTwo) {
  expectExitTwo(cs() + " sweep --failpoint P10", "add --double-faults");
  expectExitTwo(cs() + " sweep --scenario bash-touch-marker --failpoint P3",
                "the selection plans no case");
  expectExitTwo(cs() + " sweep --case 'no-such/*'", "the selection plans no case");
  expectExitTwo(cs() + " sweep --scenario write-config-port --shard 99/100", "shard 99/100");
  auto d = freshDir("crashsim-cov-empty");
  expectExitTwo(cs() + " --scenarios " + d.string() + " sweep", "holds no scenario");
  fs::remove_all(d);
}

TEST(Coverage, ListPlansWithoutRunningAndTheManifestLocksTheCaseSet) {
  auto d = freshDir("crashsim-cov-list");
  const std::string sel =
      " sweep --scenario write-config-port --double-faults --path-mutations off --case "
      "'write-config-port/P4#*'";
  // (the generated path mutations of P4#2 are harness_path_mutation_test's)
  // --list runs nothing: a program that is no agent is not even consulted.
  auto list = sh("CRASHSIM_AGENT=/bin/false " + cs() + sel + " --list 2>/dev/null");
  ASSERT_EQ(list.exitCode, 0);
  // From the contract: P4 is reached by each of the two dispatched calls (Read, Write); the
  // Write's recovery seals the run (P8, P9), commits the completed bundle (P10) and continues
  // (the claim P11, its target run P14, its start P15, then the continuation's own terminal:
  // P8#2, P9#2) — and, as the first P4 hit whose recovery has that work, two hosts race on its
  // crash state (+H2); the Read's recovery parks.
  const std::string want =
      "write-config-port/P4#1/kill\n"
      "write-config-port/P4#1/kill+R:P8#1\n"
      "write-config-port/P4#1/kill+R:P9#1\n"
      "write-config-port/P4#2/kill\n"
      "write-config-port/P4#2/kill+R:P8#1\n"
      "write-config-port/P4#2/kill+R:P8#2\n"
      "write-config-port/P4#2/kill+R:P9#1\n"
      "write-config-port/P4#2/kill+R:P9#2\n"
      "write-config-port/P4#2/kill+R:P10#1\n"
      "write-config-port/P4#2/kill+R:P11#1\n"
      "write-config-port/P4#2/kill+R:P14#1\n"
      "write-config-port/P4#2/kill+R:P15#1\n"
      "write-config-port/P4#2/kill+H2\n";
  EXPECT_EQ(list.out, want);
  std::ofstream(d / "manifest.txt") << want;
  auto run = sh(cs() + sel + " --expect-cases 13 --expect-manifest " +
                (d / "manifest.txt").string() + " --out " + (d / "out").string() + " 2>&1");
  ASSERT_EQ(run.exitCode, 0) << run.out;
  auto rep = json::parse(slurp(d / "out" / "report.json"));
  EXPECT_EQ(rep["cases"].size(), 13u);
  std::vector<std::string> ids;
  for (const auto& c : rep["cases"]) ids.push_back(c["id"]);
  EXPECT_EQ(rep["manifest"]["digest"], crashsim::reports::manifestDigest(ids));
  EXPECT_EQ(rep["manifest"]["sweepDigest"], rep["manifest"]["digest"]);
  // The coverage table: P10 in the recovery is predicted once (only the Write's), planned, run.
  bool sawP10 = false;
  for (const auto& row : rep["coverage"]) {
    EXPECT_EQ(row["skipped"], 0) << row.dump();
    EXPECT_EQ(row["planned"], row["run"]) << row.dump();
    if (row["process"] == "recovery" && row["failpoint"] == "P10") {
      sawP10 = true;
      // Scenario-wide: one bundle per primary that leaves the Write indeterminate (P2–P5).
      EXPECT_EQ(row["predicted"], 4) << row.dump();
      EXPECT_EQ(row["planned"], 1);
      EXPECT_EQ(row["passed"], 1);
    }
  }
  EXPECT_TRUE(sawP10);
  // A manifest or count that differs from the plan is refused before anything runs.
  std::ofstream(d / "short.txt") << "write-config-port/P4#1/kill\n";
  expectExitTwo(cs() + sel + " --expect-manifest " + (d / "short.txt").string(),
                "--expect-manifest");
  expectExitTwo(cs() + sel + " --expect-cases 11", "--expect-cases 11");
  fs::remove_all(d);
}

TEST(Coverage, MergeRefusesAMissingShardAndNamesIt) {
  auto d = freshDir("crashsim-cov-merge");
  std::string base = cs() + " sweep --scenario bash-touch-marker --jobs 2 ";
  for (int i : {0, 2})
    ASSERT_EQ(sh(base + "--shard " + std::to_string(i) + "/3 --out " +
                 (d / std::to_string(i)).string() + " 2>/dev/null")
                  .exitCode,
              0);
  auto m = sh(cs() + " report merge " + (d / "0" / "report.json").string() + " " +
              (d / "2" / "report.json").string() + " --out " + (d / "merged").string() + " 2>&1");
  EXPECT_EQ(m.exitCode, 2) << m.out;
  EXPECT_NE(m.out.find("shard(s) 1/3 missing"), std::string::npos) << m.out;
  EXPECT_FALSE(fs::exists(d / "merged" / "report.json"));
  fs::remove_all(d);
}

TEST(Coverage, RunOfAHitThatIsNeverReachedIsAUsageErrorListingTheReachableHits) {
  auto r = sh(cs() + " run 'write-config-port/P4#99/kill' 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("P4#1-2"), std::string::npos) << r.out;
  auto d = sh(cs() + " run 'write-config-port/P4#1/kill+R:P10#1' 2>&1");
  EXPECT_EQ(d.exitCode, 2) << d.out;
  EXPECT_NE(d.out.find("P8#1, P9#1"), std::string::npos) << d.out;
}

// Barrier cases are planned from the reference run's counts: a hit past them is a usage error
// naming the reachable range, --failpoint S lists only store COMMIT barriers, and a runtime whose
// store writes bypass the barrier (fewer than the contract's named commits) is refused.
TEST(Coverage, BarrierCasesComeFromTheReferenceRunAndAreBoundedBelowByTheContract) {
  auto r = sh(cs() + " run 'bash-touch-marker/S#999/kill' 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("reaches S#1-"), std::string::npos) << r.out;
  auto list = sh(cs() + " sweep --scenario bash-touch-marker --failpoint S --list 2>/dev/null");
  ASSERT_EQ(list.exitCode, 0);
  EXPECT_EQ(list.out.rfind("bash-touch-marker/S#1/kill\n", 0), 0u) << list.out;
  EXPECT_EQ(list.out.find("/P"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("/F#"), std::string::npos) << list.out;
  auto d = freshDir("crashsim-cov-barrier");
  auto agent = agentRewritingHits(d, "s/\"S\":[0-9]*/\"S\":1/");
  expectExitTwo("CRASHSIM_AGENT=" + agent.string() + " " + cs() +
                    " sweep --scenario write-config-port --failpoint S",
                "store COMMIT barrier");
  fs::remove_all(d);
}
