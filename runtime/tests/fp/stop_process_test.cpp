// Stop on real processes (spec/termination-contract.md): a real crashsim-agent, real signals, a
// real /bin/sh. What must hold is written from the contract: a Bash tool running when the Stop
// comes has its process group terminated and its real result committed before the terminal; a
// Bash that ignores SIGTERM is sealed by the watchdog after the cooperative grace, stays
// indeterminate, and its late result never lands; a Stop racing the run's own terminal commit
// leaves exactly one terminal; a Stop on an idle runner is accepted as already idle and writes
// nothing. Readiness is observed (a file the command writes), never slept for.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../store_test_util.h"
#include "agent_process.h"
#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/host.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/tools.h"
#include "crashsim/workspace.h"

namespace fs = std::filesystem;
using namespace crashsim;
using Clock = std::chrono::steady_clock;

namespace {

using testutil::kAgent;

// A one-Bash-call scenario written into the sandbox.
fs::path bashScenario(const testutil::AgentSandbox& box, const std::string& command) {
  const Json sc = {
      {"id", "stop-bash"},
      {"description", "one long Bash call"},
      {"user", "run it"},
      {"tools", {"Bash"}},
      {"model",
       {{{"calls", {{{"id", "call-1"}, {"name", "Bash"}, {"args", {{"command", command}}}}}}},
        {{"text", "done"}}}},
      {"expect", {{"files", Json::object()}, {"toolCalls", 1}}}};
  const fs::path file = box.base / "stop-bash.json";
  std::ofstream(file) << sc.dump(2);
  return file;
}

std::vector<std::string> agentArgs(const char* command, const testutil::AgentSandbox& box,
                                   const fs::path& scenario, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {command,          "--store",         box.store().string(),
                                "--workspace",    box.ws().string(), "--scenario",
                                scenario.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Waits until `file` exists (the command started), at most 10 s.
bool waitForFile(const fs::path& file) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!fs::exists(file)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct StoppedRun {
  std::vector<StoredEvent> events;
  RunHeader header;
  std::optional<const StoredEvent*> response;  // call-1's function_response
  std::vector<const StoredEvent*> terminals;
};

StoppedRun read(const testutil::AgentSandbox& box, std::unique_ptr<RuntimeStore>& st) {
  st = RuntimeStore::open(box.store());
  StoppedRun r;
  const auto runs = st->listRuns();
  if (runs.empty()) return r;
  r.header = runs.front();
  r.events = st->readRunEvents(r.header.sessionId, r.header.runId);
  for (const auto& e : r.events) {
    if (e.event.contentKind == ContentKind::function_response) r.response = &e;
    if (e.event.isTerminal()) r.terminals.push_back(&e);
  }
  return r;
}

std::string errorCode(const RuntimeEvent& e) {
  const Json& res = e.json.at("content").at("result");
  return res.contains("error") ? res["error"].value("code", "") : "";
}

int effectLines(const testutil::AgentSandbox& box) {
  return static_cast<int>(EffectsLog::read(box.store() / "effects.jsonl").size());
}

TEST(StopProcess, ALongRunningBashIsCancelledMidRunAndItsResultCommittedBeforeTheTerminal) {
  testutil::AgentSandbox box;
  const fs::path sc = bashScenario(box, "echo started > started.txt; sleep 30; touch late");
  const auto start = Clock::now();
  testutil::AgentProcess agent(kAgent, agentArgs("run", box, sc), {}, box.base / "run.log");
  ASSERT_TRUE(waitForFile(box.ws() / "started.txt"));
  agent.signal(SIGINT);
  const testutil::AgentExit exit = agent.reap();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(exit.exited);
  EXPECT_EQ(exit.exitCode, 1);  // the run ended cancelled
  EXPECT_LT(secs, 10.0) << "the Stop did not end the Bash tool's process group";
  EXPECT_FALSE(fs::exists(box.ws() / "late"));
  std::unique_ptr<RuntimeStore> st;
  StoppedRun r = read(box, st);
  ASSERT_TRUE(r.response.has_value());
  const RuntimeEvent& resp = (*r.response)->event;
  EXPECT_TRUE(resp.refOperationId.has_value()) << "the real result goes through T2";
  EXPECT_EQ(errorCode(resp), "tool_cancelled");
  ASSERT_EQ(r.terminals.size(), 1u);
  EXPECT_EQ(r.terminals[0], &r.events.back());
  EXPECT_LT((*r.response)->eventSeq, r.terminals[0]->eventSeq);
  EXPECT_EQ(r.terminals[0]->event.json["actions"]["stateDelta"]["abortSource"], "user_stop");
  EXPECT_EQ(r.header.status, "cancelled");
  EXPECT_EQ(effectLines(box), 1);
  st.reset();
  // Resume after Stop: the Bash call is answered (it ran and was stopped), so the continuation
  // finishes the task without running it again.
  testutil::AgentProcess recover(kAgent, agentArgs("recover", box, sc), {},
                                 box.base / "recover.log");
  const testutil::AgentExit rexit = recover.reap();
  EXPECT_TRUE(rexit.exited && rexit.exitCode == 0) << rexit.exitCode;
  EXPECT_EQ(effectLines(box), 1);
  st = RuntimeStore::open(box.store());
  EXPECT_EQ(st->listRuns().size(), 2u);
  for (const auto& h : st->listRuns()) EXPECT_NE(h.status, "running") << h.runId;
}

// The watchdog case; returns what differs from the contract.
std::vector<std::string> watchdogProblems(const std::string& plant) {
  std::vector<std::string> bad;
  testutil::AgentSandbox box;
  // Ignores SIGTERM (the ignore is inherited by sleep): only SIGKILL ends it.
  const fs::path sc =
      bashScenario(box, "trap '' TERM; echo started > started.txt; sleep 30; touch late");
  std::vector<std::pair<std::string, std::string>> env;
  if (!plant.empty()) env.emplace_back("CRASHSIM_PLANT", plant);
  const auto start = Clock::now();
  testutil::AgentProcess agent(
      kAgent,
      agentArgs("run", box, sc,
                {"--cancellation-grace-ms", "300", "--bash-kill-grace-ms", "20000"}),
      env, box.base / "run.log");
  if (!waitForFile(box.ws() / "started.txt")) return {"the command never started"};
  agent.signal(SIGTERM);
  const testutil::AgentExit exit = agent.reap();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  if (!exit.exited || exit.exitCode != 1) bad.push_back("exit " + std::to_string(exit.exitCode));
  if (secs > 10.0) bad.push_back("the watchdog did not kill the process group (20 s grace ran)");
  if (fs::exists(box.ws() / "late")) bad.push_back("the command ran to its end");
  std::unique_ptr<RuntimeStore> st;
  StoppedRun r = read(box, st);
  if (r.response) bad.push_back("a late result was committed after the watchdog seal");
  if (r.terminals.size() != 1) {
    bad.push_back(std::to_string(r.terminals.size()) + " terminals");
    return bad;
  }
  const Json& delta = r.terminals[0]->event.json["actions"]["stateDelta"];
  if (delta.value("recoveryReason", "") != "cancellation_grace_expired")
    bad.push_back("terminal without recoveryReason cancellation_grace_expired");
  if (delta.value("abortSource", "") != "user_stop") bad.push_back("abortSource not user_stop");
  if (r.header.status != "cancelled") bad.push_back("header " + r.header.status);
  std::vector<RuntimeEvent> evs;
  for (const auto& e : r.events) evs.push_back(e.event);
  const auto res = resolveRecovery(evs);
  if (res.decisions.size() != 1 || res.decisions[0].status != "indeterminate")
    bad.push_back("the running Bash call is not left indeterminate");
  if (effectLines(box) != 1) bad.push_back("executions " + std::to_string(effectLines(box)));
  return bad;
}

TEST(StopProcess, ABashIgnoringSigtermIsSealedByTheWatchdogAndStaysIndeterminate) {
  const auto bad = watchdogProblems("");
  EXPECT_TRUE(bad.empty()) << bad.front();
}

TEST(StopProcess, PlantedLateResultAfterTheSealIsCaught) {
  const auto bad = watchdogProblems("late_result_after_seal");
  ASSERT_FALSE(bad.empty());
  EXPECT_EQ(bad.front(), "a late result was committed after the watchdog seal");
}

// Stop accepted while the run commits its own terminal (P8, inside the transaction; P9, between
// fact and header): exactly one terminal, the run's own (completed).
TEST(StopProcess, AStopRacingTheRunsOwnTerminalCommitLeavesExactlyOneTerminal) {
  for (const char* arm : {"P8:1", "P9:1"}) {
    testutil::AgentSandbox box;
    const fs::path sc = bashScenario(box, "true");
    testutil::AgentProcess agent(kAgent, agentArgs("run", box, sc),
                                 {{"CRASHSIM_ARM", arm}, {"CRASHSIM_FAILPOINT_MODE", "stop"}},
                                 box.base / "run.log");
    const auto ctl = agent.waitForControlLine(std::chrono::seconds(20));
    ASSERT_TRUE(ctl.has_value()) << arm;
    agent.signal(SIGINT);
    const testutil::AgentExit exit = agent.reap();
    EXPECT_TRUE(exit.exited && exit.exitCode == 0) << arm << " exit " << exit.exitCode;
    std::unique_ptr<RuntimeStore> st;
    StoppedRun r = read(box, st);
    ASSERT_EQ(r.terminals.size(), 1u) << arm;
    EXPECT_EQ(r.terminals[0]->event.status, EventStatus::completed) << arm;
    EXPECT_EQ(r.header.status, "completed") << arm;
  }
}

TEST(StopProcess, AStopOnAnIdleRunnerIsAcceptedAsAlreadyIdleAndWritesNothing) {
  testutil::AgentSandbox box;
  const fs::path file = bashScenario(box, "true");
  const Scenario sc = loadScenario(file);
  auto store = RuntimeStore::open(box.store());
  EffectsLog effects(box.store() / "effects.jsonl");
  ToolRuntime tools(ensureWorkspaceIdentity(box.ws()), ToolPolicy{{"Bash"}, {}}, effects);
  CancellationToken token;
  AgentRunner runner(*store, sc, tools, token);
  const StopReceipt before = runner.requestStop();
  EXPECT_TRUE(before.accepted);
  EXPECT_TRUE(before.alreadyIdle);
  EXPECT_FALSE(token.cancelled());
  const RunSummary s = runner.runFresh(freshRunIdentity(sc));
  EXPECT_EQ(s.status, "completed");
  const std::string ledger = store->ledgerHash();
  const StopReceipt after = runner.requestStop();
  EXPECT_TRUE(after.alreadyIdle);
  EXPECT_FALSE(token.cancelled());
  EXPECT_EQ(store->ledgerHash(), ledger);
}

}  // namespace

namespace {

// Stop during a continuation run: a run killed with call-2 committed and never dispatched (P1#2)
// is continued by `recover`; that process is stopped when its continuation run has T1 of the
// re-issued call-2 (its P2#1). The continuation run ends cancelled with the not_started closure;
// the next recovery continues from it, re-issues the call once and finishes the task.
TEST(StopProcess, AStopDuringAContinuationRunEndsItCancelledAndTheNextResumeFinishes) {
  testutil::AgentSandbox box;
  const fs::path sc = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json";
  {
    testutil::AgentProcess seed(
        kAgent, {"seed", "--workspace", box.ws().string(), "--scenario", sc.string()}, {},
        box.base / "seed.log");
    ASSERT_EQ(seed.reap().exitCode, 0);
  }
  {
    testutil::AgentProcess crash(kAgent, agentArgs("run", box, sc), {{"CRASHSIM_ARM", "P1:2"}},
                                 box.base / "run.log");
    ASSERT_TRUE(crash.waitForControlLine(std::chrono::seconds(20)).has_value());
    crash.kill();
    ASSERT_TRUE(crash.reap().signaled);
  }
  {
    testutil::AgentProcess recover(kAgent, agentArgs("recover", box, sc),
                                   {{"CRASHSIM_ARM", "P2:1"}, {"CRASHSIM_FAILPOINT_MODE", "stop"}},
                                   box.base / "recover1.log");
    ASSERT_TRUE(recover.waitForControlLine(std::chrono::seconds(20)).has_value());
    recover.signal(SIGINT);
    const testutil::AgentExit e = recover.reap();
    EXPECT_TRUE(e.exited && e.exitCode == 1) << e.exitCode;  // the continuation was cancelled
  }
  {
    auto st = RuntimeStore::open(box.store());
    const auto runs = st->listRuns();
    ASSERT_EQ(runs.size(), 2u);
    const RunHeader& cont = runs[0].runId == "run-write-config-port-1" ? runs[1] : runs[0];
    EXPECT_EQ(cont.status, "cancelled");
    EXPECT_EQ(cont.abortSource, "user_stop");
    const auto ev = st->readRunEvents(cont.sessionId, cont.runId);
    ASSERT_FALSE(ev.empty());
    EXPECT_TRUE(ev.back().event.isTerminal());
    ASSERT_GE(ev.size(), 2u);
    EXPECT_EQ(errorCode(ev[ev.size() - 2].event), "not_started");
  }
  EXPECT_EQ(EffectsLog::read(box.store() / "effects.jsonl").size(), 1u);  // only call-1 ran
  testutil::AgentProcess again(kAgent, agentArgs("recover", box, sc), {},
                               box.base / "recover2.log");
  const testutil::AgentExit e = again.reap();
  EXPECT_TRUE(e.exited && e.exitCode == 0) << e.exitCode;
  const auto effects = EffectsLog::read(box.store() / "effects.jsonl");
  ASSERT_EQ(effects.size(), 2u);
  EXPECT_EQ(effects[1].value("callId", ""), "call-2~1");  // re-issued once, under a new id
  std::ifstream in(box.ws() / "config.json");
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "{\"name\":\"demo\",\"port\":4000}\n");
  auto st = RuntimeStore::open(box.store());
  EXPECT_EQ(st->listRuns().size(), 3u);
  for (const auto& h : st->listRuns()) EXPECT_NE(h.status, "running") << h.runId;
}

}  // namespace

namespace {

struct FaultedStop {
  testutil::AgentExit exit;
  std::string log;
};

// write-config-port stopped at P2#2 (the Write through T1, never started) while the store's
// disk is full for the next `faults` WAL writes after the batch's P12 (CRASHSIM_FAULT_AFTER).
FaultedStop stopWithFullDisk(const testutil::AgentSandbox& box, const fs::path& sc, int faults) {
  {
    testutil::AgentProcess seed(
        kAgent, {"seed", "--workspace", box.ws().string(), "--scenario", sc.string()}, {},
        box.base / "seed.log");
    seed.reap();
  }
  testutil::AgentProcess agent(kAgent, agentArgs("run", box, sc),
                               {{"CRASHSIM_ARM", "P2:2"},
                                {"CRASHSIM_FAILPOINT_MODE", "stop"},
                                {"CRASHSIM_FAULT_AFTER", "P12:" + std::to_string(faults)}},
                               box.base / "run.log");
  FaultedStop out;
  if (!agent.waitForControlLine(std::chrono::seconds(20))) return out;
  agent.signal(SIGINT);
  out.exit = agent.reap();
  std::ifstream in(box.base / "run.log");
  out.log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return out;
}

TEST(StopProcess, ATerminationCommitThatFailsIsRetriedAsTheSameBatchAndLandsOnce) {
  testutil::AgentSandbox box;
  const fs::path sc = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json";
  const FaultedStop r = stopWithFullDisk(box, sc, 2);  // attempts 1 and 2 fail, 3 commits
  EXPECT_TRUE(r.exit.exited && r.exit.exitCode == 1) << r.log;
  std::unique_ptr<RuntimeStore> st;
  StoppedRun run = read(box, st);
  ASSERT_EQ(run.terminals.size(), 1u) << r.log;
  EXPECT_EQ(run.header.status, "cancelled");
  ASSERT_TRUE(run.response.has_value());
  EXPECT_EQ(errorCode((*run.response)->event), "not_started");
  EXPECT_EQ(testutil::pragma(st->handle(), "SELECT count(*) FROM runtime_turn_finalize"), "1");
}

TEST(StopProcess, ATerminationCommitThatNeverLandsAdmitsNothingAndRestartSealsOnce) {
  testutil::AgentSandbox box;
  const fs::path sc = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json";
  const FaultedStop r = stopWithFullDisk(box, sc, 100);
  EXPECT_TRUE(r.exit.exited && r.exit.exitCode == 1) << r.log;
  EXPECT_NE(r.log.find("\"status\":\"recovery_required\""), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("termination_commit_failed"), std::string::npos) << r.log;
  {
    std::unique_ptr<RuntimeStore> st;
    StoppedRun run = read(box, st);
    EXPECT_TRUE(run.terminals.empty());
    EXPECT_EQ(run.header.status, "running");
    for (const auto& e : run.events)  // no closure of the Write reached the store
      EXPECT_FALSE(e.event.contentKind == ContentKind::function_response &&
                   e.event.callId == "call-2");
  }
  EXPECT_EQ(effectLines(box), 1);  // the Write never started
  // The fault cleared: restart recovery writes the run's only terminal; the unstarted Write is
  // indeterminate to a process without memory, its reconciler sees the prior state and parks.
  testutil::AgentProcess recover(kAgent, agentArgs("recover", box, sc), {},
                                 box.base / "recover.log");
  recover.reap();
  std::unique_ptr<RuntimeStore> st;
  StoppedRun run = read(box, st);
  EXPECT_EQ(run.terminals.size(), 1u);
  EXPECT_NE(run.header.status, "running");
  EXPECT_EQ(effectLines(box), 1);
}

}  // namespace
