// file_recovery_crash_test.cpp — finalize-only file recovery with real processes and SIGKILL.
//
//  * P10 (inside the recovery-bundle transaction), library level: a fork()ed child arms
//    CRASHSIM_ARM=P10:1 + CRASHSIM_FAILPOINT_MODE=self BEFORE touching the store, runs the
//    reconciler and dies inside the bundle commit; the parent confirms death by signal 9,
//    reopens the store (no trace of the bundle, operation still prepared/indeterminate),
//    reconciles again → exactly one bundle; a third pass changes nothing.
//  * The instrumented crashsim-agent: write-config-port and edit-two-files killed at the
//    Write/Edit's P2, P3, P4, P5 and then `crashsim-agent recover`: P4/P5 → completed /
//    recovery_bundle_completed with the reference workspace, every operation ran once; P2/P3 →
//    parked reconcile_matches_prior_state with the workspace untouched. A recovery killed at
//    P10 and run again leaves exactly one bundle in the ledger. The afterCrash scenarios get
//    their mutation between the kill and the recovery.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "agent_process.h"
#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"
#include "recovery/file_reconcile.h"
#include "verdicts/workspace_expect.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kAgent;
using testutil::kScenarioDir;

using Sandbox = testutil::AgentSandbox;

using testutil::readFile;

std::map<std::string, std::string> snapshot(const fs::path& ws) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(ws)) {
    if (e.path().filename() == std::string(kWorkspaceMarkerName)) continue;
    const std::string rel = fs::relative(e.path(), ws).generic_string();
    if (e.is_symlink()) {
      out[rel] = "symlink:" + fs::read_symlink(e).string();
    } else if (e.is_regular_file()) {
      out[rel] = readFile(e.path());
    }
  }
  return out;
}

std::vector<RuntimeEvent> runEvents(RuntimeStore& s, const RunIdentity& id) {
  std::vector<RuntimeEvent> out;
  for (auto& e : s.readRunEvents(id.sessionId, id.runId)) out.push_back(e.event);
  return out;
}

size_t countIdsEnding(const std::vector<RuntimeEvent>& events, const std::string& suffix) {
  size_t n = 0;
  for (const auto& e : events) n += e.id.ends_with(suffix) ? 1 : 0;
  return n;
}

// A copy: callers often pass a temporary resolution.
std::optional<ToolDecision> decisionFor(const RecoveryResolution& r, const std::string& callId) {
  for (const auto& d : r.decisions) {
    if (d.toolCallId == callId) return d;
  }
  return std::nullopt;
}

std::map<std::string, int> executions(const fs::path& effects) {
  std::map<std::string, int> out;
  for (const auto& line : EffectsLog::read(effects))
    ++out[line.at("operationId").get<std::string>()];
  return out;
}

void expectRebuildReproduces(RuntimeStore& s) {
  const auto ops = s.listToolOperations();
  const auto journal = s.listJournal();
  s.rebuildProjections();
  EXPECT_EQ(s.listToolOperations(), ops);
  EXPECT_EQ(s.listJournal(), journal);
}

struct KillRun : testutil::AgentExit {
  bool reachedFailpoint = false;
};

// crashsim-agent <args>; when `arm` is set, waits for the control line, SIGKILLs and reaps.
KillRun runAgentKilledAt(const std::vector<std::string>& args, const std::string& arm,
                         const fs::path& log) {
  std::vector<std::pair<std::string, std::string>> env;
  if (!arm.empty()) env.emplace_back("CRASHSIM_ARM", arm);
  testutil::AgentProcess child(kAgent, args, env, log);
  KillRun r;
  if (!arm.empty()) {
    r.reachedFailpoint = child.waitForControlLine(std::chrono::seconds(60)).has_value();
    child.kill();
  }
  static_cast<testutil::AgentExit&>(r) = child.reap();
  return r;
}

std::vector<std::string> commandArgs(const char* command, const Sandbox& box,
                                     const fs::path& file) {
  return {command,           "--store",    box.store().string(), "--workspace",
          box.ws().string(), "--scenario", file.string()};
}

// Kills `run` at `arm`; returns the workspace snapshot right after the kill.
std::map<std::string, std::string> runAndKill(const Sandbox& box, const fs::path& file,
                                              const std::string& arm) {
  const KillRun seed =
      runAgentKilledAt({"seed", "--workspace", box.ws().string(), "--scenario", file.string()}, "",
                       box.base / "seed.log");
  EXPECT_TRUE(seed.exited && seed.exitCode == 0);
  const KillRun run = runAgentKilledAt(commandArgs("run", box, file), arm, box.base / "run.log");
  EXPECT_TRUE(run.reachedFailpoint) << arm << ": " << readFile(box.base / "run.log");
  EXPECT_TRUE(run.signaled && run.signal == SIGKILL);
  EXPECT_FALSE(fs::exists(box.store() / "agent-exit.json"));
  return snapshot(box.ws());
}

// ---------------------------------------------------------------------------------------------
// P10 with a forked child running the reconciler from the instrumented library.

bool reconcileKilledAtP10(const Sandbox& box) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    failpoints::resetForTesting();
    ::setenv("CRASHSIM_ARM", "P10:1", 1);
    ::setenv("CRASHSIM_FAILPOINT_MODE", "self", 1);
    ::setenv("CRASHSIM_CONTROL_FD", "2", 1);
    try {
      failpoints::initFromEnvironment();
      const WorkspaceIdentity ws = ensureWorkspaceIdentity(box.ws());
      auto store = RuntimeStore::open(box.store());
      reconcileIndeterminateOperations(*store, ws);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);  // P10 never reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

struct P10Case {
  const char* arm;  // where `run` was killed (the Write's P4 or P2)
  bool completes;
};
class FileRecoveryP10Test : public ::testing::TestWithParam<P10Case> {};

TEST_P(FileRecoveryP10Test, KillInsideTheBundleLeavesNoTraceAndTheNextRecoveryCommitsItOnce) {
  Sandbox box;
  const fs::path file = kScenarioDir / "write-config-port.json";
  const Scenario scenario = loadScenario(file);
  runAndKill(box, file, GetParam().arm);
  const RunIdentity id = freshRunIdentity(scenario);
  const std::string op = deriveOperationId(id.invocationId, "call-2");
  std::string ledgerBefore;
  size_t eventsBefore = 0;
  {
    auto store = RuntimeStore::open(box.store());
    ledgerBefore = store->ledgerHash();
    eventsBefore = runEvents(*store, id).size();
  }

  ASSERT_TRUE(reconcileKilledAtP10(box)) << "the child did not die by SIGKILL at P10";

  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(store->integrityCheck(), "ok");
  EXPECT_EQ(store->ledgerHash(), ledgerBefore) << "a kill inside the bundle leaves no trace";
  auto events = runEvents(*store, id);
  EXPECT_EQ(events.size(), eventsBefore);
  EXPECT_EQ(countIdsEnding(events, "_reconcile"), 0u);
  std::optional<ToolDecision> d = decisionFor(resolveRecovery(events), "call-2");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->status, code::indeterminate);
  EXPECT_EQ(d->reason, code::dispatch_without_response);
  for (const auto& row : store->listToolOperations()) {
    if (row.operationId == op) {
      EXPECT_EQ(row.currentState, "prepared");
    }
  }
  expectRebuildReproduces(*store);

  // The next recovery (unarmed, this process) commits the bundle exactly once.
  const WorkspaceIdentity ws = ensureWorkspaceIdentity(box.ws());
  const Json report = reconcileIndeterminateOperations(*store, ws);
  ASSERT_EQ(report["operations"].size(), 1u) << report.dump();
  EXPECT_EQ(report["operations"][0]["action"], "bundle_committed") << report.dump();
  events = runEvents(*store, id);
  EXPECT_EQ(countIdsEnding(events, "_reconcile"), 1u);
  EXPECT_EQ(countIdsEnding(events, "_decision"), 1u);
  d = decisionFor(resolveRecovery(events), "call-2");
  ASSERT_TRUE(d.has_value());
  if (GetParam().completes) {
    EXPECT_EQ(d->status, code::completed);
    EXPECT_EQ(d->reason, code::recovery_bundle_completed);
  } else {
    EXPECT_EQ(d->status, code::parked);
    EXPECT_EQ(d->reason, code::reconcile_matches_prior_state);
  }
  const std::string settled = store->ledgerHash();
  EXPECT_TRUE(reconcileIndeterminateOperations(*store, ws)["operations"].empty());
  EXPECT_EQ(store->ledgerHash(), settled);
  expectRebuildReproduces(*store);
}

INSTANTIATE_TEST_SUITE_P(FileRecovery, FileRecoveryP10Test,
                         ::testing::Values(P10Case{"P4:2", true}, P10Case{"P2:2", false}),
                         [](const ::testing::TestParamInfo<P10Case>& info) {
                           return std::string(info.param.completes ? "completed" : "parked");
                         });

// ---------------------------------------------------------------------------------------------
// The real crashsim-agent: run killed at the file tool's P2..P5, then `recover`.

struct AgentCase {
  std::string scenario;
  std::string arm;   // the file operation's hit of P2..P5
  std::string call;  // the file operation's call id
  bool completes;
};
class FileRecoveryAgentTest : public ::testing::TestWithParam<AgentCase> {};

TEST_P(FileRecoveryAgentTest, RecoverParksPriorStateOrCompletesWithTheReferenceWorkspace) {
  const AgentCase& c = GetParam();
  Sandbox box;
  const fs::path file = kScenarioDir / (c.scenario + ".json");
  const Scenario scenario = loadScenario(file);
  auto afterKill = runAndKill(box, file, c.arm);
  const KillRun rec =
      runAgentKilledAt(commandArgs("recover", box, file), "", box.base / "recover.log");
  ASSERT_TRUE(rec.exited) << readFile(box.base / "recover.log");
  SCOPED_TRACE(readFile(box.base / "recover.log"));

  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(store->integrityCheck(), "ok");
  const RunIdentity id = freshRunIdentity(scenario);
  const auto events = runEvents(*store, id);
  const RecoveryResolution res = resolveRecovery(events);
  EXPECT_FALSE(res.hasCorruption);
  std::optional<ToolDecision> d = decisionFor(res, c.call);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(countIdsEnding(events, "_decision"), 1u);
  if (c.completes) {
    EXPECT_EQ(d->status, code::completed);
    EXPECT_EQ(d->reason, code::recovery_bundle_completed);
    const auto problems = crashsim::harness::workspace::expectedProblems(scenario, box.ws());
    EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  } else {
    EXPECT_EQ(d->status, code::parked);
    EXPECT_EQ(d->reason, code::reconcile_matches_prior_state);
    for (auto it = afterKill.begin(); it != afterKill.end();) {
      it = it->first.ends_with(".tmp") ? afterKill.erase(it) : std::next(it);
    }
    EXPECT_EQ(snapshot(box.ws()), afterKill) << "workspace touched";
  }
  for (const auto& [op, n] : executions(box.store() / "effects.jsonl")) {
    EXPECT_EQ(n, 1) << "operation " << op << " executed " << n << " times";
  }
  expectRebuildReproduces(*store);
}

INSTANTIATE_TEST_SUITE_P(FileRecovery, FileRecoveryAgentTest,
                         ::testing::Values(AgentCase{"write-config-port", "P2:2", "call-2", false},
                                           AgentCase{"write-config-port", "P3:1", "call-2", false},
                                           AgentCase{"write-config-port", "P4:2", "call-2", true},
                                           AgentCase{"write-config-port", "P5:2", "call-2", true},
                                           AgentCase{"edit-two-files", "P2:1", "call-1", false},
                                           AgentCase{"edit-two-files", "P3:1", "call-1", false},
                                           AgentCase{"edit-two-files", "P4:1", "call-1", true},
                                           AgentCase{"edit-two-files", "P5:1", "call-1", true}),
                         [](const ::testing::TestParamInfo<AgentCase>& info) {
                           std::string n = info.param.scenario + "_" + info.param.arm;
                           for (auto& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// Double fault: `recover` itself killed at P10, then `recover` again → exactly one bundle, the
// reference workspace, every operation ran once.
TEST(FileRecoveryAgentDoubleFault, RecoverKilledAtP10ThenRecoveredAgainCommitsOneBundle) {
  Sandbox box;
  const fs::path file = kScenarioDir / "write-config-port.json";
  const Scenario scenario = loadScenario(file);
  runAndKill(box, file, "P4:2");
  const KillRun first =
      runAgentKilledAt(commandArgs("recover", box, file), "P10:1", box.base / "recover1.log");
  ASSERT_TRUE(first.reachedFailpoint) << readFile(box.base / "recover1.log");
  ASSERT_TRUE(first.signaled && first.signal == SIGKILL);
  const RunIdentity id = freshRunIdentity(scenario);
  {
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(countIdsEnding(runEvents(*store, id), "_reconcile"), 0u);
  }
  const KillRun second =
      runAgentKilledAt(commandArgs("recover", box, file), "", box.base / "recover2.log");
  ASSERT_TRUE(second.exited) << readFile(box.base / "recover2.log");
  auto store = RuntimeStore::open(box.store());
  const auto events = runEvents(*store, id);
  EXPECT_EQ(countIdsEnding(events, "_reconcile"), 1u);
  EXPECT_EQ(countIdsEnding(events, "_decision"), 1u);
  std::optional<ToolDecision> d = decisionFor(resolveRecovery(events), "call-2");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->reason, code::recovery_bundle_completed);
  EXPECT_TRUE(crashsim::harness::workspace::expectedProblems(scenario, box.ws()).empty());
  for (const auto& [op, n] : executions(box.store() / "effects.jsonl")) EXPECT_EQ(n, 1) << op;
  expectRebuildReproduces(*store);
}

// The afterCrash scenarios with real processes: the harness-side mutation between the kill and
// the recovery.
struct AfterCrashAgentCase {
  std::string scenario, arm;
};
class FileRecoveryAfterCrashAgentTest : public ::testing::TestWithParam<AfterCrashAgentCase> {};

TEST_P(FileRecoveryAfterCrashAgentTest, ParkedWithTheScenarioReasonExternalChangePreserved) {
  Sandbox box;
  const fs::path file = kScenarioDir / (GetParam().scenario + ".json");
  const Scenario scenario = loadScenario(file);
  ASSERT_TRUE(scenario.afterCrash);
  runAndKill(box, file, GetParam().arm);
  crashsim::harness::workspace::applyAfterCrash(scenario, box.ws());
  const KillRun rec =
      runAgentKilledAt(commandArgs("recover", box, file), "", box.base / "recover.log");
  ASSERT_TRUE(rec.exited) << readFile(box.base / "recover.log");
  auto store = RuntimeStore::open(box.store());
  std::optional<ToolDecision> d =
      decisionFor(resolveRecovery(runEvents(*store, freshRunIdentity(scenario))), "call-1");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->status, code::parked);
  EXPECT_EQ(d->reason, scenario.afterCrash->parkedReason);
  const auto problems = crashsim::harness::workspace::afterCrashProblems(scenario, box.ws());
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
}

INSTANTIATE_TEST_SUITE_P(FileRecovery, FileRecoveryAfterCrashAgentTest,
                         ::testing::Values(AfterCrashAgentCase{"external-edit-diverged", "P4:1"},
                                           AfterCrashAgentCase{"target-deleted", "P3:1"},
                                           AfterCrashAgentCase{"symlink-swap", "P5:1"}),
                         [](const ::testing::TestParamInfo<AfterCrashAgentCase>& info) {
                           std::string n = info.param.scenario + "_" + info.param.arm;
                           for (auto& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

}  // namespace
