// Real child processes of the instrumented crashsim-agent, killed with SIGKILL at every reachable
// (P0..P9, hit) of every scenario (first hits per failpoint, bounded to keep the test fast);
// the reopened store must hold exactly the durable state the failpoint catalogue names.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "agent_process.h"
#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "verdicts/workspace_expect.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kAgent;
using testutil::kScenarioDir;
constexpr uint64_t kMaxHitsPerFailpoint = 2;

using Sandbox = testutil::AgentSandbox;

struct AgentRun : testutil::AgentExit {
  std::optional<Json> control;  // the control line, when armed
};

// Spawns crashsim-agent <args> with `env` added; when `armed`, waits for the control line,
// SIGKILLs the child and reaps it; otherwise waits for a normal exit.
AgentRun runAgent(const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env, bool armed,
                  const fs::path& logFile) {
  testutil::AgentProcess child(kAgent, args, env, logFile);
  AgentRun result;
  if (armed) {
    result.control = child.waitForControlLine(std::chrono::seconds(30));
    child.kill();
  }
  static_cast<testutil::AgentExit&>(result) = child.reap();
  return result;
}

std::vector<std::string> runArgs(const Sandbox& box, const fs::path& scenarioFile) {
  return {"run",
          "--store",
          box.store().string(),
          "--workspace",
          box.ws().string(),
          "--scenario",
          scenarioFile.string()};
}

void seed(const Sandbox& box, const fs::path& scenarioFile) {
  auto r = runAgent({"seed", "--workspace", box.ws().string(), "--scenario", scenarioFile.string()},
                    {}, false, box.base / "seed.log");
  ASSERT_TRUE(r.exited && r.exitCode == 0);
}

std::vector<RuntimeEvent> eventsOf(const std::vector<StoredEvent>& rows) {
  std::vector<RuntimeEvent> out;
  for (const auto& r : rows) out.push_back(r.event);
  return out;
}

std::map<std::string, int> executionsPerOperation(const fs::path& effects) {
  std::map<std::string, int> out;
  for (const auto& line : EffectsLog::read(effects))
    ++out[line.at("operationId").get<std::string>()];
  return out;
}

// The catalogue's durable state for failpoint `fp`, checked on the reopened store.
void expectCatalogueState(failpoints::Id fp, const Scenario& scenario, const Sandbox& box,
                          const std::string& label) {
  SCOPED_TRACE(label);
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(store->integrityCheck(), "ok");
  const RunIdentity id = freshRunIdentity(scenario);
  const auto header = store->readRun(id.sessionId, id.runId);
  ASSERT_TRUE(header.has_value()) << "the run header is created before any failpoint";
  const auto events = eventsOf(store->readRunEvents(id.sessionId, id.runId));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().runtimeProtocol, std::string("t1_after_preflight_v1"));
  bool terminal = false;
  for (const auto& e : events) terminal = terminal || e.isTerminal();
  const RecoveryResolution res = resolveRecovery(events);
  EXPECT_FALSE(res.hasCorruption);
  EXPECT_TRUE(res.issues.empty());
  const ResumePlan plan = buildResumePlan(events);
  EXPECT_EQ(buildResumePlan(events), plan);
  std::vector<const ToolDecision*> pending;
  for (const auto& d : res.decisions) {
    if (d.status != "completed") pending.push_back(&d);
  }
  const auto effects = executionsPerOperation(box.store() / "effects.jsonl");
  for (const auto& [op, n] : effects) EXPECT_EQ(n, 1) << "operation " << op << " executed twice";

  using failpoints::Id;
  switch (fp) {
    case Id::P0:  // no call: the decided calls were not committed
      EXPECT_FALSE(terminal);
      EXPECT_TRUE(pending.empty());
      EXPECT_LT(res.decisions.size(), scenario.callCount());
      EXPECT_EQ(plan.disposition, "safe_replay");
      break;
    case Id::P7:  // result delivered, next provider step not started: as P6, all settled
      EXPECT_FALSE(terminal);
      EXPECT_TRUE(pending.empty());
      EXPECT_FALSE(res.decisions.empty());
      EXPECT_EQ(plan.disposition, "safe_replay");
      break;
    case Id::P1: {  // call only
      EXPECT_FALSE(terminal);
      ASSERT_FALSE(pending.empty());
      for (const auto* d : pending) {
        EXPECT_EQ(d->status, "definitely_not_dispatched") << d->toolCallId;
        EXPECT_EQ(d->reason, code::new_protocol_before_dispatch) << d->toolCallId;
        EXPECT_FALSE(d->dispatchRuntimeEventId.has_value());
      }
      EXPECT_EQ(plan.disposition, "blocked");
      break;
    }
    case Id::P2:
    case Id::P3:
    case Id::P4:
    case Id::P5: {  // call + dispatch, no response
      EXPECT_FALSE(terminal);
      ASSERT_FALSE(pending.empty());
      const ToolDecision& armed = *pending.front();
      EXPECT_EQ(armed.status, "indeterminate");
      EXPECT_EQ(armed.reason, code::dispatch_without_response);
      EXPECT_TRUE(armed.dispatchRuntimeEventId.has_value());
      EXPECT_FALSE(armed.responseRuntimeEventId.has_value());
      EXPECT_TRUE(res.requiresReconciliation);
      for (size_t i = 1; i < pending.size(); ++i) {
        EXPECT_EQ(pending[i]->status, "definitely_not_dispatched");  // later calls of the step
      }
      EXPECT_EQ(plan.disposition, "blocked");
      ASSERT_TRUE(armed.operationId.has_value());
      // P2: the implementation has not started; P3–P5: the attempt is in the effects log.
      EXPECT_EQ(effects.count(*armed.operationId), fp == Id::P2 ? 0u : 1u);
      const auto unsettled = store->listUnsettledToolOperations();
      ASSERT_EQ(unsettled.size(), 1u);
      EXPECT_EQ(unsettled[0].operationId, *armed.operationId);
      EXPECT_EQ(unsettled[0].currentState, "prepared");
      if (fp == Id::P3) {
        // Partial side effect: the temp file exists, the target is not replaced yet.
        bool sawTemp = false;
        for (const auto& e : fs::recursive_directory_iterator(box.ws())) {
          const std::string n = e.path().filename().string();
          if (n.find(*armed.operationId) != std::string::npos && e.path().extension() == ".tmp")
            sawTemp = true;
        }
        EXPECT_TRUE(sawTemp);
      }
      break;
    }
    case Id::P6: {  // call + dispatch + response (normal_t2)
      EXPECT_FALSE(terminal);
      const ToolDecision* last = nullptr;
      for (const auto& d : res.decisions) {
        EXPECT_NE(d.status, "indeterminate");
        if (d.status == "completed") last = &d;
      }
      ASSERT_NE(last, nullptr);
      EXPECT_EQ(last->reason, code::matching_response);
      EXPECT_EQ(last->settlementOrigin, std::string("normal_t2"));
      for (const auto* d : pending) EXPECT_EQ(d->status, "definitely_not_dispatched");
      break;
    }
    case Id::P8:  // no terminal event, everything completed
      EXPECT_FALSE(terminal);
      EXPECT_TRUE(pending.empty());
      EXPECT_EQ(res.decisions.size(), scenario.callCount());
      EXPECT_EQ(plan.disposition, "safe_replay");
      EXPECT_EQ(header->status, "running");
      break;
    case Id::P9:  // terminal event committed, header stale
      EXPECT_TRUE(terminal);
      EXPECT_TRUE(events.back().isTerminal());
      EXPECT_EQ(header->status, "running");
      EXPECT_TRUE(pending.empty());
      EXPECT_EQ(plan.disposition, "safe_replay");
      break;
    default:
      FAIL() << "not an agent-process failpoint";
  }
}

class FailpointSweep : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST(AgentFailpoints, MalformedArmingExitsTwoBeforeAnyWork) {
  for (const char* arm : {"P99:1", "P4", "P4:0", "P4:x", "X:1", "P4:1:2"}) {
    Sandbox box;
    auto r = runAgent(runArgs(box, kScenarioDir / "bash-touch-marker.json"),
                      {{"CRASHSIM_ARM", arm}}, false, box.base / "agent.log");
    EXPECT_TRUE(r.exited) << arm;
    EXPECT_EQ(r.exitCode, 2) << arm;
    EXPECT_FALSE(fs::exists(box.store() / "runtime.sqlite")) << arm << ": no work was done";
    std::ifstream log(box.base / "agent.log");
    std::stringstream s;
    s << log.rdbuf();
    EXPECT_NE(s.str().find("CRASHSIM_ARM"), std::string::npos) << s.str();
  }
}

TEST(AgentFailpoints, SelfModeRaisesSigkillAndLeavesNoExitMarker) {
  Sandbox box;
  const fs::path file = kScenarioDir / "bash-touch-marker.json";
  auto r =
      runAgent(runArgs(box, file), {{"CRASHSIM_ARM", "P2:1"}, {"CRASHSIM_FAILPOINT_MODE", "self"}},
               false, box.base / "agent.log");
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_FALSE(fs::exists(box.store() / "agent-exit.json"));
}

TEST_P(FailpointSweep, EveryReachableFailpointLeavesTheCatalogueDurableState) {
  const fs::path file = kScenarioDir / (GetParam() + ".json");
  const Scenario scenario = loadScenario(file);
  // Reference run: unarmed, to completion, with hit counts.
  Json hits;
  {
    Sandbox box;
    seed(box, file);
    auto r =
        runAgent(runArgs(box, file), {{"CRASHSIM_HITS_OUT", (box.base / "hits.json").string()}},
                 false, box.base / "agent.log");
    ASSERT_TRUE(r.exited);
    ASSERT_EQ(r.exitCode, 0);
    ASSERT_TRUE(fs::exists(box.store() / "agent-exit.json")) << "normal-exit marker";
    EXPECT_TRUE(crashsim::harness::workspace::expectedProblems(scenario, box.ws()).empty());
    std::ifstream in(box.base / "hits.json");
    hits = Json::parse(in);
    for (const char* fp : {"P0", "P1", "P2", "P4", "P6", "P7", "P8", "P9"}) {
      EXPECT_GT(hits.at(fp).get<uint64_t>(), 0u) << fp << " is reached by every scenario";
    }
    EXPECT_EQ(hits.at("P10"), 0);
    EXPECT_EQ(hits.at("P11"), 0);
  }
  size_t cases = 0;
  for (int i = 0; i <= 9; ++i) {
    const auto fp = static_cast<failpoints::Id>(i);
    const std::string name(failpoints::name(fp));
    const uint64_t reached = hits.at(name).get<uint64_t>();
    for (uint64_t hit = 1; hit <= std::min(reached, kMaxHitsPerFailpoint); ++hit) {
      const std::string label = GetParam() + "/" + name + "#" + std::to_string(hit) + "/kill";
      Sandbox box;
      seed(box, file);
      auto r = runAgent(runArgs(box, file), {{"CRASHSIM_ARM", name + ":" + std::to_string(hit)}},
                        true, box.base / "agent.log");
      ASSERT_TRUE(r.control.has_value()) << label << ": no control line";
      EXPECT_EQ((*r.control)["failpoint"], name) << label;
      EXPECT_EQ((*r.control)["hit"], hit) << label;
      EXPECT_TRUE((*r.control)["pid"].is_number_integer()) << label;
      EXPECT_TRUE(r.signaled) << label;
      EXPECT_EQ(r.signal, SIGKILL) << label;
      EXPECT_FALSE(fs::exists(box.store() / "agent-exit.json")) << label;
      expectCatalogueState(fp, scenario, box, label);
      if (HasFailure()) {
        box.keep = true;
        FAIL() << label << " kept at " << box.base;
      }
      ++cases;
    }
  }
  EXPECT_GT(cases, 8u);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FailpointSweep,
                         ::testing::Values("write-config-port", "edit-two-files",
                                           "bash-touch-marker", "permission-denied", "tool-error",
                                           "parallel-calls", "read-then-write", "long-run"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

// --- recovery: what a host does at start-up after the kill ---------------------------------

namespace {

Json recover(const Sandbox& box, const fs::path& file, int* exitCode = nullptr) {
  const fs::path out = box.base / "recover.out";
  auto r = runAgent({"recover", "--store", box.store().string(), "--workspace", box.ws().string(),
                     "--scenario", file.string()},
                    {}, false, out);
  if (exitCode) *exitCode = r.exited ? r.exitCode : -1;
  std::ifstream in(out);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty() && line.front() == '{') last = line;
  }
  return last.empty() ? Json() : Json::parse(last);
}

void killAt(const Sandbox& box, const fs::path& file, const std::string& arm) {
  seed(box, file);
  auto r = runAgent(runArgs(box, file), {{"CRASHSIM_ARM", arm}}, true, box.base / "agent.log");
  ASSERT_TRUE(r.control.has_value()) << arm;
  ASSERT_TRUE(r.signaled && r.signal == SIGKILL);
}

}  // namespace

TEST(AgentHost, SecondHostOnALiveStoreIsRefusedAndTheLockDiesWithItsOwner) {
  // One host per store: while a run is blocked at P2 (alive, inside its tool call), a
  // `recover` on the same store must refuse with host_already_active and touch nothing; once
  // the owner is SIGKILLed, the kernel releases the lock and recovery proceeds.
  Sandbox box;
  const fs::path file = kScenarioDir / "bash-touch-marker.json";
  seed(box, file);
  testutil::AgentProcess owner(kAgent, runArgs(box, file), {{"CRASHSIM_ARM", "P2:1"}},
                               box.base / "owner.log");
  const std::optional<Json> line = owner.waitForControlLine(std::chrono::seconds(30));
  ASSERT_TRUE(line.has_value());
  ASSERT_EQ((*line)["failpoint"], "P2") << line->dump();
  auto store = RuntimeStore::open(box.store());
  const std::string before = store->ledgerHash();
  store.reset();
  std::vector<std::string> recover = runArgs(box, file);
  recover[0] = "recover";
  auto second = runAgent(recover, {}, false, box.base / "second.log");
  EXPECT_TRUE(second.exited);
  EXPECT_EQ(second.exitCode, 2);
  std::ifstream log(box.base / "second.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("host_already_active"), std::string::npos) << text.str();
  EXPECT_EQ(RuntimeStore::open(box.store())->ledgerHash(), before);
  owner.kill();
  EXPECT_TRUE(owner.reap().signaled);
  auto third = runAgent(recover, {}, false, box.base / "third.log");
  EXPECT_TRUE(third.exited);
  EXPECT_EQ(third.exitCode, 0);
}

TEST(AgentRecover, UndispatchedCallIsReissuedByTheContinuationAndRunsOnce) {
  const fs::path file = kScenarioDir / "write-config-port.json";
  const Scenario scenario = loadScenario(file);
  Sandbox box;
  killAt(box, file, "P1:2");  // call-2 (Write) committed, T1 not committed
  int rc = -1;
  const Json report = recover(box, file, &rc);
  ASSERT_TRUE(report.is_object()) << "no JSON report";
  EXPECT_EQ(rc, 0) << report.dump();
  EXPECT_EQ(report["plan"]["decision"], "continue") << report.dump();
  ASSERT_TRUE(report["continuation"].is_object()) << report.dump();
  EXPECT_EQ(report["continuation"]["status"], "completed");
  EXPECT_EQ(report["continuation"]["toolCalls"], 1) << "only the trimmed call is re-issued";
  EXPECT_TRUE(crashsim::harness::workspace::expectedProblems(scenario, box.ws()).empty());
  for (const auto& [op, n] : executionsPerOperation(box.store() / "effects.jsonl"))
    EXPECT_EQ(n, 1) << op;
  EXPECT_EQ(executionsPerOperation(box.store() / "effects.jsonl").size(), 2u);
}

TEST(AgentRecover, DeliveredResultsContinueFromTheCommittedHistory) {
  const fs::path file = kScenarioDir / "edit-two-files.json";
  const Scenario scenario = loadScenario(file);
  Sandbox box;
  killAt(box, file, "P7:1");  // first Edit completed and delivered
  const Json report = recover(box, file);
  ASSERT_TRUE(report.is_object());
  ASSERT_TRUE(report["continuation"].is_object()) << report.dump();
  EXPECT_EQ(report["continuation"]["status"], "completed");
  EXPECT_TRUE(crashsim::harness::workspace::expectedProblems(scenario, box.ws()).empty());
  for (const auto& [op, n] : executionsPerOperation(box.store() / "effects.jsonl"))
    EXPECT_EQ(n, 1) << op;
}

TEST(AgentRecover, IndeterminateOperationIsNeverRetried) {
  const fs::path file = kScenarioDir / "bash-touch-marker.json";
  Sandbox box;
  killAt(box, file, "P4:1");  // touch ran, T2 not committed
  const Json report = recover(box, file);
  ASSERT_TRUE(report.is_object());
  EXPECT_NE(report["plan"]["decision"], "continue") << report.dump();
  EXPECT_TRUE(report["continuation"].is_null());
  const auto effects = executionsPerOperation(box.store() / "effects.jsonl");
  ASSERT_EQ(effects.size(), 1u);
  EXPECT_EQ(effects.begin()->second, 1);
  // The run header is repaired from the ledger (terminal fact first).
  auto store = RuntimeStore::open(box.store());
  const auto header = store->readRun("session-bash-touch-marker", "run-bash-touch-marker-1");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, "failed");
}

TEST(AgentRecover, StaleHeaderAfterP9IsRepairedFromTheTerminalFact) {
  const fs::path file = kScenarioDir / "bash-touch-marker.json";
  Sandbox box;
  killAt(box, file, "P9:1");
  const Json report = recover(box, file);
  ASSERT_TRUE(report.is_object());
  auto store = RuntimeStore::open(box.store());
  const auto header = store->readRun("session-bash-touch-marker", "run-bash-touch-marker-1");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, "completed");
  EXPECT_TRUE(report["continuation"].is_null()) << "a completed run is not continued";
}
