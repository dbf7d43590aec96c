// Every shipped scenario runs to completion in-process on the production library: the final
// workspace matches, the effects log has exactly one execution per dispatched operation, the
// ledger resolves to all-completed and the Phase 0 plan is safe_replay.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/hashing.h"
#include "crashsim/host.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"
#include "store_test_util.h"
#include "verdicts/workspace_expect.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kScenarioDir;

struct Sandbox {
  Sandbox() {
    std::random_device rd;
    base = fs::temp_directory_path() /
           ("crashsim-agent-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(base / "ws");
    fs::create_directories(base / "store");
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  AgentPaths paths() const { return AgentPaths{base / "store", base / "ws", {}}; }
  fs::path base;
};

std::vector<RuntimeEvent> eventsOf(const std::vector<StoredEvent>& rows) {
  std::vector<RuntimeEvent> out;
  for (const auto& r : rows) out.push_back(r.event);
  return out;
}

class ScenarioRun : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(ScenarioRun, CompletesWithExpectedWorkspaceOneExecutionPerOperationAndSafeReplay) {
  const Scenario scenario = loadScenario(kScenarioDir / (GetParam() + ".json"));
  Sandbox box;
  seedWorkspace(scenario, box.base / "ws");
  CancellationToken cancel;
  const RunSummary summary = runScenario(scenario, box.paths(), cancel);
  ASSERT_EQ(summary.status, "completed") << summary.toJson().dump();
  EXPECT_EQ(summary.toolCalls, scenario.callCount());

  // Final workspace.
  const auto problems = crashsim::harness::workspace::expectedProblems(scenario, box.base / "ws");
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);

  // Ledger.
  auto store = RuntimeStore::open(box.base / "store");
  const auto header = store->readRun(summary.identity.sessionId, summary.identity.runId);
  ASSERT_TRUE(header.has_value());
  EXPECT_EQ(header->status, "completed");
  EXPECT_EQ(header->workspaceIdentity, summary.workspaceIdentity);
  const auto events =
      eventsOf(store->readRunEvents(summary.identity.sessionId, summary.identity.runId));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().runtimeProtocol, std::string(code::t1_after_preflight_v1))
      << "event #1 carries the protocol marker";
  EXPECT_TRUE(events.back().isTerminal());
  const RecoveryResolution resolution = resolveRecovery(events);
  EXPECT_FALSE(resolution.hasCorruption);
  EXPECT_TRUE(resolution.issues.empty());
  EXPECT_EQ(resolution.toolBoundaryProtocol, std::string(code::t1_after_preflight_v1));
  EXPECT_EQ(resolution.decisions.size(), scenario.callCount());
  std::set<std::string> errorCalls(scenario.expect.errorCalls.begin(),
                                   scenario.expect.errorCalls.end());
  std::set<std::string> dispatchedOps;
  for (const auto& d : resolution.decisions) {
    EXPECT_EQ(d.status, "completed") << d.toolCallId;
    EXPECT_EQ(d.reason, code::matching_response) << d.toolCallId;
    EXPECT_EQ(d.responseIsError.value_or(false), errorCalls.count(d.toolCallId) > 0)
        << d.toolCallId;
    if (d.dispatchRuntimeEventId) {
      EXPECT_EQ(d.settlementOrigin, std::string(code::normal_t2));
      ASSERT_TRUE(d.operationId.has_value());
      EXPECT_EQ(*d.operationId, deriveOperationId(summary.identity.invocationId, d.toolCallId));
      dispatchedOps.insert(*d.operationId);
    } else {
      EXPECT_EQ(d.settlementOrigin, std::string(code::pre_t1_synthetic)) << d.toolCallId;
    }
  }
  const ResumePlan plan = buildResumePlan(events);
  EXPECT_EQ(plan.disposition, "safe_replay");
  EXPECT_EQ(buildResumePlan(events), plan) << "planning is pure";

  // Effects log: exactly one execution per dispatched operation, attempt 1.
  std::map<std::string, int> executions;
  for (const auto& line : EffectsLog::read(box.base / "store" / "effects.jsonl")) {
    ++executions[line.at("operationId").get<std::string>()];
    EXPECT_EQ(line.at("attempt"), 1);
    EXPECT_EQ(line.at("invocationId"), summary.identity.invocationId);
  }
  EXPECT_EQ(executions.size(), dispatchedOps.size());
  for (const auto& op : dispatchedOps) EXPECT_EQ(executions[op], 1) << op;
  EXPECT_EQ(summary.executions, dispatchedOps.size());

  // Projections agree: every operation settled by T2.
  EXPECT_TRUE(store->listUnsettledToolOperations().empty());
  for (const auto& row : store->listToolOperations()) {
    EXPECT_EQ(row.currentState, "outcome_committed") << row.operationId;
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioRun,
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

TEST(AgentRun, PermissionDeniedIsSyntheticRefusalBeforeT1) {
  const Scenario scenario = loadScenario(kScenarioDir / "permission-denied.json");
  Sandbox box;
  CancellationToken cancel;
  const RunSummary summary = runScenario(scenario, box.paths(), cancel);
  ASSERT_EQ(summary.status, "completed");
  EXPECT_EQ(summary.refused, 1u);
  auto store = RuntimeStore::open(box.base / "store");
  const auto events =
      eventsOf(store->readRunEvents(summary.identity.sessionId, summary.identity.runId));
  const std::string op = deriveOperationId(summary.identity.invocationId, "call-1");
  bool sawResponse = false;
  for (const auto& e : events) {
    EXPECT_NE(e.id, op + "_dispatch") << "a refused call never reaches T1";
    if (e.id == op + "_response") {
      sawResponse = true;
      EXPECT_TRUE(e.isError);
      EXPECT_FALSE(e.refOperationId.has_value()) << "synthetic responses are unbound";
      EXPECT_EQ(e.json["content"]["result"]["error"]["code"], "tool_permission_denied");
    }
  }
  EXPECT_TRUE(sawResponse);
  EXPECT_FALSE(fs::exists(box.base / "ws" / "forbidden"));
}

TEST(AgentRun, CancelledTokenEndsTurnThroughTerminalFacts) {
  const Scenario scenario = loadScenario(kScenarioDir / "bash-touch-marker.json");
  Sandbox box;
  CancellationToken cancel;
  cancel.cancel("test stop");
  const RunSummary summary = runScenario(scenario, box.paths(), cancel);
  EXPECT_EQ(summary.status, "cancelled");
  auto store = RuntimeStore::open(box.base / "store");
  const auto header = store->readRun(summary.identity.sessionId, summary.identity.runId);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, "cancelled");
  const auto events =
      eventsOf(store->readRunEvents(summary.identity.sessionId, summary.identity.runId));
  ASSERT_EQ(events.size(), 2u);  // user + terminal
  EXPECT_TRUE(events.back().isTerminal());
  EXPECT_FALSE(fs::exists(box.base / "ws" / "marker"));
}

TEST(AgentRun, FileEvidenceIsBoundInTheDispatchWhenTheDecoderAcceptsIt) {
  const Scenario scenario = loadScenario(kScenarioDir / "write-config-port.json");
  Sandbox box;
  seedWorkspace(scenario, box.base / "ws");
  CancellationToken cancel;
  const RunSummary summary = runScenario(scenario, box.paths(), cancel);
  ASSERT_EQ(summary.status, "completed");
  auto store = RuntimeStore::open(box.base / "store");
  const std::string op = deriveOperationId(summary.identity.invocationId, "call-2");
  for (const auto& row : store->readRunEvents(summary.identity.sessionId, summary.identity.runId)) {
    if (row.event.id != op + "_dispatch") continue;
    const Json& dispatch = row.event.json["actions"]["toolDispatch"];
    EXPECT_EQ(dispatch["recoveryMode"], "reconcile");
    const Json& e = dispatch["fileEvidence"];
    EXPECT_EQ(e["targetPath"], "config.json");
    EXPECT_EQ(e["workspaceIdentity"], summary.workspaceIdentity);
    EXPECT_EQ(e["before"]["sha256"], fileStateOf("{\"name\":\"demo\",\"port\":3000}\n").sha256);
    EXPECT_EQ(e["expectedAfter"]["sha256"],
              fileStateOf("{\"name\":\"demo\",\"port\":4000}\n").sha256);
    return;
  }
  FAIL() << "dispatch of call-2 not found";
}

// Phase 4 (#47, workspace-continuity-contract.md d.1): git-workspace-checkpoint opts in with
// `optional_legacy`. Its seed is a real git repository (tracked .gitignore and a.txt, untracked
// bin/run.sh, ignored debug.log, symlink link). A full run captures twice: the baseline at p = 1,
// and after the Write's T2 at its response — rows 1 user, 2 step-1 text, 3-5 the Read's call,
// dispatch, response (effect none: no capture), 6-8 the Write's → p = 8. The user's index and
// HEAD are byte-identical (H1). Bugs caught: a capture after the Read, none after the Write, a
// baseline after the first provider step, a capture through the user's index.
TEST(AgentRun, CheckpointPolicyCapturesTheBaselineAndAfterTheEffectfulCall) {
  const Scenario scenario = loadScenario(kScenarioDir / "git-workspace-checkpoint.json");
  ASSERT_EQ(scenario.workspacePolicy.checkpointRequirement, "optional_legacy");
  Sandbox box;
  seedWorkspace(scenario, box.base / "ws");
  ASSERT_TRUE(fs::is_symlink(box.base / "ws" / "link"));
  auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string index = bytes(box.base / "ws" / ".git" / "index");
  const std::string head = bytes(box.base / "ws" / ".git" / "HEAD");
  ASSERT_FALSE(index.empty());
  CancellationToken cancel;
  const RunSummary summary = runScenario(scenario, box.paths(), cancel);
  ASSERT_EQ(summary.status, "completed") << summary.toJson().dump();
  auto store = RuntimeStore::open(box.base / "store");
  const auto checkpoints = listWorkspaceCheckpoints(*store);
  ASSERT_EQ(checkpoints.size(), 2u);
  EXPECT_EQ(checkpoints[0].coveredEventSeq, 1);
  EXPECT_EQ(checkpoints[1].coveredEventSeq, 8);
  for (const auto& c : checkpoints) {
    EXPECT_EQ(c.epoch, 1);
    EXPECT_EQ(c.kind, "captured");
    EXPECT_EQ(c.coveredRunId, summary.identity.runId);
  }
  EXPECT_NE(checkpoints[0].treeOid, checkpoints[1].treeOid);  // notes.txt entered L
  EXPECT_EQ(scanWorkspaceLineage(*store), "");
  EXPECT_EQ(bytes(box.base / "ws" / ".git" / "index"), index);
  EXPECT_EQ(bytes(box.base / "ws" / ".git" / "HEAD"), head);
}

// The default policy captures nothing: no carrier directory is ever made (existing scenarios and
// their reports unchanged).
TEST(AgentRun, DisabledPolicyMakesNoCarrier) {
  const Scenario scenario = loadScenario(kScenarioDir / "write-config-port.json");
  EXPECT_EQ(scenario.workspacePolicy.checkpointRequirement, "disabled");
  Sandbox box;
  seedWorkspace(scenario, box.base / "ws");
  CancellationToken cancel;
  ASSERT_EQ(runScenario(scenario, box.paths(), cancel).status, "completed");
  EXPECT_FALSE(fs::exists(box.base / "store" / "workspace"));
  EXPECT_TRUE(listWorkspaceCheckpoints(*RuntimeStore::open(box.base / "store")).empty());
}

// Bad scenario input is scenario_invalid with its JSON path.
TEST(AgentRun, WorkspacePolicyAndGitSeedAreCheckedByTheLoader) {
  Json j = Json::parse(R"({"id":"p","user":"u","model":[{"text":"done"}],"expect":{}})");
  auto pathOf = [](const Json& v) {
    try {
      parseScenario(v, "t.json");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "scenario_invalid");
      return e.path();
    }
    return std::string("<no error>");
  };
  Json a = j;
  a["workspacePolicy"] = {{"checkpointRequirement", "optional_legacy"}};
  EXPECT_EQ(pathOf(a), "$.workspacePolicy.checkpointRequirement");  // no git workspace
  Json b = j;
  b["workspace"] = {{"files", {{"a.txt", "x"}}}, {"git", {{"tracked", {"a.txt"}}}}};
  b["workspacePolicy"] = {{"checkpointRequirement", "sometimes"}};
  EXPECT_EQ(pathOf(b), "$.workspacePolicy.checkpointRequirement");
  Json c = j;
  c["workspace"] = {{"files", {{"a.txt", "x"}}}, {"git", {{"tracked", {"b.txt"}}}}};
  EXPECT_EQ(pathOf(c), "$.workspace.git.tracked[0]");
  Json d = j;
  d["workspace"] = {{"symlinks", {{"../l", "a"}}}};
  EXPECT_EQ(pathOf(d), "$.workspace.symlinks.../l");
  b["workspacePolicy"]["checkpointRequirement"] = "required";
  EXPECT_EQ(parseScenario(b).workspacePolicy.checkpointRequirement, "required");
}
