// The `crashsim` CLI, run as a real process: exit codes, ledger commands, catalogues, run/inspect.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/store.h"
#include "test_util.h"
// The runtime tests' ledger builders (hand-built RuntimeEvents, no runtime logic).
#include "../../runtime/tests/resolver_fixtures.h"

using namespace crashsim::harness;
using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {}  // namespace

TEST(CrashsimCli, UsageErrorsExitTwoWithOneLineReason) {
  auto r = sh(cs() + " sweep --shard 3/2 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("--shard must be I/N"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_EQ(sh(cs() + " no-such-command 2>/dev/null").exitCode, 2);
  EXPECT_EQ(sh(cs() + " run not-a-case 2>/dev/null").exitCode, 2);
  EXPECT_EQ(sh(cs() + " inspect /nonexistent-store 2>/dev/null").exitCode, 2);
  // The checkpoint capture (P18..P22) is reached only by a kill of a scenario that opts in
  // (git-workspace-checkpoint: the baseline and the Write's capture, contract d.1); another mode
  // is refused by name, not planned into an empty selection.
  r = sh(cs() + " sweep --failpoint P20 --list 2>/dev/null");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out,
            "git-workspace-checkpoint/P20#1/kill\ngit-workspace-checkpoint/P20#2/kill\n"
            "git-workspace-drift/P20#1/kill\ngit-workspace-drift/P20#2/kill\n"
            "git-workspace-gc/P20#1/kill\ngit-workspace-gc/P20#2/kill\n"
            "git-workspace-rebaseline/P20#1/kill\ngit-workspace-rebaseline/P20#2/kill\n"
            "git-workspace-restore/P20#1/kill\ngit-workspace-restore/P20#2/kill\n");
  r = sh(cs() + " sweep --failpoint P20 --mode stop --list 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("--failpoint P18..P22 (the workspace checkpoint capture) are kill mode"),
            std::string::npos)
      << r.out;
  // The isolated restore (P23..P26, #47 f): one case each, only for the scenario whose afterCrash
  // drifts under driftAction isolated_restore; kill mode only.
  r = sh(cs() + " sweep --failpoint P23 --list 2>/dev/null");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, "git-workspace-restore/P23#1/kill\n");
  r = sh(cs() + " sweep --failpoint P25 --mode powerloss --list 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("--failpoint P23..P26 (the workspace isolated restore) are kill mode"),
            std::string::npos)
      << r.out;
  // The confirmed rebaseline (P27..P29, #47 g): one case each, only for the scenario whose
  // afterCrash drifts under driftAction offer_rebaseline; kill mode only.
  r = sh(cs() + " sweep --failpoint P27 --failpoint P29 --list 2>/dev/null");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, "git-workspace-rebaseline/P27#1/kill\ngit-workspace-rebaseline/P29#1/kill\n");
  // The carrier GC (P30, #47 h): one case, only for the scenario whose recoveries end with a GC
  // under orphanGraceMs 0; kill mode only.
  r = sh(cs() + " sweep --failpoint P30 --list 2>/dev/null");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_EQ(r.out, "git-workspace-gc/P30#1/kill\n");
  r = sh(cs() + " sweep --failpoint P30 --mode stop --list 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("--failpoint P30 (the workspace carrier GC) is kill mode only"),
            std::string::npos)
      << r.out;
  r = sh(cs() + " sweep --failpoint P28 --mode stop --list 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("--failpoint P27..P29 (the workspace durable rebaseline) are kill mode"),
            std::string::npos)
      << r.out;
}

TEST(CrashsimCli, FailpointsCatalogueAsJsonHasCrashStopAdmissionAndImportRows) {
  auto r = sh(cs() + " failpoints --json");
  ASSERT_EQ(r.exitCode, 0);
  auto j = json::parse(r.out);
  // P18-P22 capture (run process), P23-P26 restore, P27-P29 rebaseline, P30 the carrier GC
  ASSERT_EQ(j.size(), 31u);
  for (int i = 0; i < 31; ++i) {
    EXPECT_EQ(j[i]["id"], "P" + std::to_string(i)) << i;
    EXPECT_EQ(j[i]["stopPath"], i == 12 || i == 13) << i;
    // P16, P17: the first writable open of a legacy directory (primary process).
    // P23-P26: an isolated restore, P27-P29 a durable rebaseline, P30 the GC at the end of a
    // host start-up (recovery process).
    EXPECT_EQ(j[i]["recoveryProcess"], i == 10 || i == 11 || i == 14 || i == 15 || i >= 23) << i;
    EXPECT_FALSE(j[i]["durableState"].get<std::string>().empty()) << i;
  }
  EXPECT_EQ(sh(cs() + " failpoints").exitCode, 0);
}

TEST(CrashsimCli, ScenariosListTheBuiltInScenarios) {
  auto r = sh(cs() + " scenarios --json");
  ASSERT_EQ(r.exitCode, 0);
  auto j = json::parse(r.out);
  EXPECT_GE(j.size(), 1u);
  bool found = false;
  for (const auto& s : j) found = found || s["id"] == "write-config-port";
  EXPECT_TRUE(found);
}

TEST(LedgerArgsHash, PrintsSha256AndRejectsNonStrictJsonNamingStrictJson) {
  auto d = freshDir("crashsim-cli-args");
  std::ofstream(d / "args.json") << R"({"command":"touch marker"})";
  auto r = sh(cs() + " ledger args-hash --tool Bash " + (d / "args.json").string());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  EXPECT_EQ(r.out.rfind("sha256:", 0), 0u);
  EXPECT_EQ(r.out.size(), 7u + 64u + 1u);
  // Same args via stdin, keys in another order → same hash.
  auto r2 = sh("printf '%s' '{ \"command\" : \"touch marker\" }' | " + cs() +
               " ledger args-hash --tool Bash -");
  EXPECT_EQ(r2.out, r.out);
  auto bad = sh("printf '%s' '{command: 1}' | " + cs() + " ledger args-hash --tool Bash");
  EXPECT_EQ(bad.exitCode, 2);
  EXPECT_NE(bad.out.find("strict JSON"), std::string::npos) << bad.out;
  EXPECT_TRUE(json::parse(bad.out).contains("error"));
  fs::remove_all(d);
}

TEST(LedgerResolve, UndecodableInputExitsTwoWithCodeMessageAndIndex) {
  auto r = sh("printf '%s' '[{\"id\":\"x\"}]' | " + cs() + " ledger resolve");
  EXPECT_EQ(r.exitCode, 2);
  auto j = json::parse(r.out);
  ASSERT_TRUE(j.contains("error")) << r.out;
  EXPECT_TRUE(j["error"]["code"].is_string());
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_EQ(j["error"]["index"], 0);
  auto notJson = sh("printf '%s' '[' | " + cs() + " ledger resolve");
  EXPECT_EQ(notJson.exitCode, 2);
  EXPECT_TRUE(json::parse(notJson.out)["error"]["index"].is_null());
}

// A real crashed ledger (agent killed at P2, T1 committed) resolved through the CLI.
TEST(LedgerResolve, CrashedLedgerAtP2IsIndeterminateDispatchWithoutResponse) {
  auto d = freshDir("crashsim-cli-resolve");
  auto scenario = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "bash-touch-marker.json";
  SpawnSpec seed;
  seed.exe = agentBinary();
  seed.args = {"seed", "--workspace", (d / "ws").string(), "--scenario", scenario.string()};
  ASSERT_EQ(runToEnd(seed).exitCode, 0);
  SpawnSpec run;
  run.exe = agentBinary();
  run.args = {
      "run",        "--store",        (d / "store").string(), "--workspace", (d / "ws").string(),
      "--scenario", scenario.string()};
  fs::create_directories(d / "store");
  auto child = runArmed(run, "P2", 1);
  ASSERT_TRUE(child.killedBySigkill()) << child.describe();
  EXPECT_NE(child.controlLine.find("\"P2\""), std::string::npos);
  std::string lines;
  {
    auto store = crashsim::RuntimeStore::open(d / "store");
    for (const auto& e : store->readAllEvents())
      lines += crashsim::encodeRuntimeEvent(e.event) + "\n";
    std::ofstream(d / "ledger.jsonl") << lines;
    auto runs = store->listRuns();
    ASSERT_EQ(runs.size(), 1u);
    // The high-water is the number of events handed in.
    size_t n = store->readRunEvents(runs[0].sessionId, runs[0].runId).size();
    auto r = sh(cs() + " ledger resolve " + (d / "ledger.jsonl").string() +
                " --expected-high-water " + std::to_string(n + 1));
    ASSERT_EQ(r.exitCode, 0) << r.out;
    auto j = json::parse(r.out);
    EXPECT_EQ(j["resolution"]["toolBoundaryProtocol"], "t1_after_preflight_v1");
    ASSERT_EQ(j["resolution"]["decisions"].size(), 1u);
    EXPECT_EQ(j["resolution"]["decisions"][0]["status"], "indeterminate");
    EXPECT_EQ(j["resolution"]["decisions"][0]["reason"], crashsim::code::dispatch_without_response);
    EXPECT_EQ(j["resolution"]["requiresReconciliation"], true);
    EXPECT_EQ(j["plan"]["disposition"], "blocked");
    EXPECT_EQ(j["plan"]["sourceRuntimeEventHighWater"], n);
    EXPECT_EQ(j["plan"]["diagnostics"][0]["code"], crashsim::code::runtime_offset_mismatch);
    EXPECT_TRUE(j["plan"]["directive"].is_string());
  }
  fs::remove_all(d);
}

// Issue #44's example through the real command: the only operation has a completed recovery
// bundle whose dispatch names a recoveryMode the tool does not support. Expected from the
// reference (spec c.2, c.3 step 7, d.4): decision corruption / recovery_fact_corruption,
// issues [], diagnostics [tool_recovery_corruption]; the tail's f.6 code printed beside.
TEST(CrashsimLedgerResolve, AnInvalidRecoveryTailIsPrintedBesideTheResolution) {
  crashsim::testing::Ledger l = crashsim::testing::newProtocolT1("never_auto_retry");
  l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  std::string text = "[";
  for (const auto& e : l.events)
    text += (text.size() > 1 ? "," : "") + crashsim::encodeRuntimeEvent(e);
  text += "]";
  auto d = freshDir("crashsim-cli-tail");
  std::ofstream(d / "ledger.json") << text;
  auto r = sh(cs() + " ledger resolve " + (d / "ledger.json").string());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  auto j = json::parse(r.out);
  ASSERT_EQ(j["resolution"]["decisions"].size(), 1u) << r.out;
  EXPECT_EQ(j["resolution"]["decisions"][0]["status"], "corruption");
  EXPECT_EQ(j["resolution"]["decisions"][0]["reason"], "recovery_fact_corruption");
  EXPECT_EQ(j["resolution"]["issues"], json::array());
  EXPECT_EQ(j["resolution"]["hasCorruption"], true);
  EXPECT_EQ(j["plan"]["disposition"], "blocked");
  ASSERT_EQ(j["plan"]["diagnostics"].size(), 1u) << r.out;
  EXPECT_EQ(j["plan"]["diagnostics"][0]["code"], "tool_recovery_corruption");
  EXPECT_EQ(j["plan"]["rejectionReasons"], json::array({"dangling_tool_state"}));
  EXPECT_EQ(j["recoveryTails"], json::parse(R"([{"operationId":"op-1","toolCallId":"call-1",
      "firstRecoveryFactEventId":"rec","result":"recovery_mode_unsupported"}])"));
  fs::remove_all(d);
}

TEST(CrashsimRun, OneCaseVerboseKeepsTheStoreAndInspectShowsDecisions) {
  auto d = freshDir("crashsim-cli-run");
  auto keep = d / "case";
  auto r = sh(cs() + " run bash-touch-marker/P4#1/kill --keep " + keep.string());
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_NE(r.out.find("V1 pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("crashsim inspect"), std::string::npos);
  ASSERT_TRUE(fs::exists(keep / "store" / "runtime.sqlite"));
  // The Bash call ran and its T2 never committed: its outcome stays unknown (spec c.3), so the
  // crashed run's Phase 0 plan is blocked and inspect says so with exit 1.
  auto in = sh(cs() + " inspect " + (keep / "store").string() + " --json");
  ASSERT_EQ(in.exitCode, 1) << in.out;
  auto j = json::parse(in.out);
  EXPECT_EQ(j["integrity"], "ok");
  ASSERT_FALSE(j["runs"].empty());
  EXPECT_TRUE(j["runs"][0].contains("plan"));
  EXPECT_EQ(j["runs"][0]["plan"]["disposition"], "blocked");
  EXPECT_EQ(sh(cs() + " inspect " + (keep / "store").string()).exitCode, 1);
  fs::remove_all(d);
}

TEST(CrashsimRun, ReproduceLineWithAScenarioDirectoryRunsAsPrinted) {
  // A sweep over a non-default scenario directory prints `crashsim run CASE --keep DIR
  // --scenarios DIR`; that exact line must run the case.
  auto d = freshDir("crashsim-cli-reproduce");
  const std::string dir = (fs::path(CRASHSIM_SOURCE_DIR) / "scenarios").string();
  auto r = sh(cs() + " run write-config-port/P6#1/kill --keep " + (d / "case").string() +
              " --scenarios " + dir + " 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_NE(r.out.find("verdict: pass"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(CrashsimCli, VersionNamesThisBuildAndTheAgentItDrives) {
  auto r = sh(cs() + " --version");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_EQ(r.out.rfind("crashsim 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("agent: crashsim-agent 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failpoints P0-P17 compiled in"), std::string::npos) << r.out;
  // Without a command and without --version: a usage error.
  EXPECT_EQ(sh(cs() + " 2>/dev/null").exitCode, 2);
}

TEST(CrashsimCli, PipedSweepPrintsPlainProgressAndARecapWithoutColour) {
  // Not a TTY: plain lines (no carriage returns, no ANSI escapes), a closing summary; a failing
  // planted case is recapped under its verdict with its reproduce line.
  auto r = sh("CRASHSIM_PLANT=read_not_recorded " + plantedBinary().string() +
              " sweep --scenario write-config-port --failpoint P6 2>&1");
  EXPECT_EQ(r.exitCode, 1) << r.out;
  EXPECT_EQ(r.out.find('\r'), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\033["), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("crashsim sweep: 2/2 cases, 2 failed"), std::string::npos) << r.out;
  const auto recap = r.out.find("failures by verdict:");
  ASSERT_NE(recap, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  V8 — 2 case(s)", recap), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduce: CRASHSIM_PLANT=read_not_recorded ", recap), std::string::npos)
      << r.out;
}

TEST(CrashsimCli, PowerLossDoubleFaultsAreRefusedNotMislabelled) {
  auto r = sh(cs() + " sweep --mode powerloss --double-faults --scenario write-config-port 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("--double-faults"), std::string::npos) << r.out;
}
