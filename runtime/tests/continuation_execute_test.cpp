// Execution revalidation (e.9): every revalidation code by name, ordering, the durable
// continuation-start before the provider, no duplicate user message.
#include "continuation_test_util.h"

using namespace crashsim;
using namespace ctest;

namespace {

struct Exec : ::testing::Test {
  TempStore ts{"exec"};
  Host h;
  RunIds src;
  ContinuationPlan plan;
  void SetUp() override {
    src = makeFailedRun(*ts, "s1", "r1", 10);
    plan = planContinuation(*ts, "s1", "r1", h.host());
    ASSERT_EQ(plan.decision, "continue");
  }
  RuntimeStore& s() { return *ts; }
  std::string execCode(const ContinuationPlan& p) {
    try {
      executeContinuation(s(), p, h.host());
    } catch (const Error& e) {
      return e.code();
    }
    return "no error";
  }
  void rawInsert(const std::string& id, const std::string& inv, const std::string& run,
                 const std::string& turn, int seq) {
    Json e = {{"id", id},
              {"sessionId", "s1"},
              {"invocationId", inv},
              {"runId", run},
              {"turnId", turn},
              {"ts", 99999},
              {"partial", false},
              {"role", "model"},
              {"author", "agent"},
              {"content", {{"kind", "text"}, {"text", "tampered"}}}};
    execSql(s(),
            "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, "
            "event_seq, event_kind, is_terminal, payload_json, committed_at) VALUES (" +
                sqlQuote(id) + ",'s1'," + sqlQuote(inv) + "," + sqlQuote(run) + "," +
                sqlQuote(turn) + "," + std::to_string(seq) + ",'text',0," +
                sqlQuote(stableJson(e)) + ",1)");
  }
};

}  // namespace

TEST_F(Exec, ContinuationCommitsClaimRunAndStartBeforeReturningHistory) {
  const size_t before = s().readAllEvents().size();
  ContinuationExecution ex = executeContinuation(s(), plan, h.host());
  EXPECT_EQ(ex.targetHeader.runId, plan.runId);
  EXPECT_EQ(ex.targetHeader.status, "created");
  EXPECT_EQ(ex.targetHeader.parentRunId, "r1");
  ASSERT_TRUE(ex.targetHeader.continuationSource);
  EXPECT_EQ((*ex.targetHeader.continuationSource)["protocol"], "continuation_source_v2");
  auto target = s().readRunEvents("s1", plan.runId);
  ASSERT_EQ(target.size(), 1u);  // only the start: no duplicate user message
  EXPECT_EQ(target[0].eventSeq, 1);
  EXPECT_TRUE(target[0].event.hasContinuationStart);
  EXPECT_EQ(target[0].event.runtimeProtocol, "t1_after_preflight_v1");
  EXPECT_EQ(target[0].event.json["actions"]["continuationStart"]["provenance"],
            "runtime_admission");
  EXPECT_EQ(s().readAllEvents().size(), before + 1);
  auto state = readClaimById(s(), plan.claimId);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->startKind, "runtime_admission");
  ASSERT_EQ(ex.replayHistory.size(), plan.runtimeContext.size());
  for (const auto& e : ex.replayHistory) EXPECT_EQ(e.runId, "r1");
  EXPECT_EQ(ex.providerReplayDigest, providerReplayDigest(ex.providerItems));
  ASSERT_TRUE(s().readRun("s1", plan.runId));
}

TEST_F(Exec, SecondExecutionOfSamePlanIsContinuationClaimConflict) {
  executeContinuation(s(), plan, h.host());
  EXPECT_EQ(execCode(plan), "continuation_claim_conflict");
}

TEST_F(Exec, ChangedSourcePrefixIsSourceIdentityChanged) {
  Json e = s().readRunEvents("s1", "r1")[0].event.json;
  e["content"]["text"] = "rewritten";
  execSql(s(), "UPDATE runtime_events SET payload_json = " + sqlQuote(stableJson(e)) +
                   " WHERE event_id = " + sqlQuote(e["id"].get<std::string>()));
  EXPECT_EQ(execCode(plan), "source_identity_changed");
}

TEST_F(Exec, PlanWithoutBoundaryIsSourceIdentityChanged) {
  ContinuationPlan p = plan;
  p.boundary.reset();
  EXPECT_EQ(execCode(p), "source_identity_changed");
}

TEST_F(Exec, DifferentReplayIsSourceReplayChanged) {
  ContinuationPlan p = plan;
  p.runtimeContext.pop_back();
  EXPECT_EQ(execCode(p), "source_replay_changed");
  ContinuationPlan q = plan;
  q.providerReplayDigest = "sha256:" + std::string(64, 'c');
  EXPECT_EQ(execCode(q), "source_replay_changed");
}

TEST_F(Exec, HeaderStatusNotMatchingTerminalIsSourceTerminalChanged) {
  RunHeader hd = *s().readRun("s1", "r1");
  hd.status = "cancelled";
  hd.abortSource = "user";
  execSql(s(), "UPDATE agent_runs SET status='cancelled', header_json = " +
                   sqlQuote(stableJson(hd.toJson())) + " WHERE run_id = 'r1'");
  EXPECT_EQ(execCode(plan), "source_terminal_changed");
}

TEST_F(Exec, EventAfterPlannedHeadIsSourceHighWaterChanged) {
  rawInsert("late-1", src.invocation, "r1", src.turn, 5);
  EXPECT_EQ(execCode(plan), "source_high_water_changed");
}

TEST_F(Exec, ForeignInvocationInSourceRunIsSourceLedgerIdentityChanged) {
  rawInsert("foreign-1", "inv-foreign", "r1", src.turn, 1);
  EXPECT_EQ(execCode(plan), "source_ledger_identity_changed");
}

TEST_F(Exec, SafetyReinspectionCodes) {
  h.facts.workspaceIdentity = kOtherWorkspace;
  EXPECT_EQ(execCode(plan), "workspace_identity_changed");
  h.facts.workspaceIdentity = kWorkspace;
  h.facts.backgroundOperationsSettled = false;
  EXPECT_EQ(execCode(plan), "background_operation_started");
  h.facts.backgroundOperationsSettled = true;
  h.facts.availableToolNames.push_back("Fetch");
  EXPECT_EQ(execCode(plan), "tool_catalog_changed");
  h.facts.availableToolNames.pop_back();
  ContinuationPlan p = plan;
  p.safetySnapshot.workspaceCheckpoint = WorkspaceCheckpoint{"ref-1", true, 4};
  h.facts.workspaceCheckpoint = WorkspaceCheckpoint{"ref-2", true, 4};
  EXPECT_EQ(execCode(p), "workspace_checkpoint_changed");
  EXPECT_TRUE(listClaims(s()).empty());  // revalidation failures never claim
}

TEST_F(Exec, RevalidationOrderingSourceBeforeSafetyAndWorkspaceBeforeCatalog) {
  h.facts.workspaceIdentity = kOtherWorkspace;
  h.facts.availableToolNames = {"Read"};
  EXPECT_EQ(execCode(plan), "workspace_identity_changed");
  rawInsert("late-1", src.invocation, "r1", src.turn, 5);
  EXPECT_EQ(execCode(plan), "source_high_water_changed");
}

TEST_F(Exec, ExistingTargetRunIsTargetRunConflictAfterClaim) {
  RunIds squat = RunIds{"s1", "inv-squat", plan.runId, "turn-squat"};
  RunHeader hd = header(squat, 50);
  hd.status = "created";
  s().createRun(hd);
  EXPECT_EQ(execCode(plan), "target_run_conflict");
  // The claim was committed first (spec order), so it awaits the repair saga.
  EXPECT_EQ(listClaims(s()).size(), 1u);
}

TEST_F(Exec, ActiveRunInSessionIsRunActive) {
  RunIds other = ids("s1", "busy");
  s().createRun(header(other, 60));  // status running
  EXPECT_EQ(execCode(plan), "run_active");
}

TEST_F(Exec, NestedExecutionInSameProcessIsContinuationInProgress) {
  std::string nested;
  ContinuationHost host = h.host();
  host.inspector = [&]() {
    if (nested.empty()) {
      nested = "running";
      try {
        executeContinuation(s(), plan, h.host());
      } catch (const Error& e) {
        nested = e.code();
      }
    }
    return h.facts;
  };
  executeContinuation(s(), plan, host);
  EXPECT_EQ(nested, "continuation_in_progress");
}

TEST_F(Exec, ParkPlanCannotBeExecuted) {
  ContinuationPlan p = plan;
  p.decision = "park";
  EXPECT_EQ(execCode(p), "continuation_claim_invalid");
}
