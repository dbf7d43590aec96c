// Claim repair saga (g): claim without start → deterministic repair start + abandoned
// terminal + failed header; runtime_admission start left alone by the saga and repaired as an
// ordinary run by startup repair; idempotent; dry run.
#include "continuation_test_util.h"
#include "crashsim/hashing.h"
#include "crashsim/startup_repair.h"

using namespace crashsim;
using namespace ctest;

namespace {

struct Repair : ::testing::Test {
  TempStore ts{"repair"};
  Host h;
  ContinuationPlan plan;
  ContinuationClaim claim;
  void SetUp() override {
    makeFailedRun(*ts, "s1", "r1", 10);
    plan = planContinuation(*ts, "s1", "r1", h.host());
    ASSERT_EQ(plan.decision, "continue");
    claim.claimId = plan.claimId;
    claim.boundary = *plan.boundary;
    claim.boundaryDigest = plan.boundary->manifestDigest;
    claim.providerReplayDigest = plan.providerReplayDigest;
    claim.target = PrefixIdentity{"s1", plan.invocationId, plan.runId, plan.turnId};
    claim.claimedAt = 7000;
    RunHeader& th = claim.targetRunHeader;
    th.sessionId = "s1";
    th.runId = plan.runId;
    th.invocationId = plan.invocationId;
    th.turnId = plan.turnId;
    th.status = "created";
    th.createdAt = th.updatedAt = 7000;
    th.workspaceIdentity = kWorkspace;
    th.parentRunId = "r1";
    th.parentTurnId = plan.sourceTurnId;
    th.continuationSource = Json{{"protocol", "continuation_source_v2"},
                                 {"claimId", plan.claimId},
                                 {"boundaryDigest", claim.boundaryDigest},
                                 {"sourceInvocationId", plan.sourceInvocationId},
                                 {"sourceRunId", "r1"},
                                 {"sourceTurnId", plan.sourceTurnId},
                                 {"sourceRuntimeEventHighWater", plan.sourceRuntimeEventHighWater},
                                 {"sourcePrefixDigest", plan.sourcePrefixDigest},
                                 {"replayManifestDigest", claim.boundaryDigest}};
    ASSERT_EQ(claimContinuation(*ts, claim).result, "acquired");
  }
  RuntimeStore& s() { return *ts; }
};

}  // namespace

TEST_F(Repair, ClaimWithoutStartGetsDeterministicRepairStartAndAbandonedTerminal) {
  ClaimRepairReport r = repairContinuationClaims(s(), RepairMode::strict, false);
  ASSERT_EQ(r.claims.size(), 1u);
  EXPECT_EQ(r.claims[0].actions, (std::vector<std::string>{"created_target_header", "repair_start",
                                                           "repair_terminal", "failed_header"}));
  auto events = s().readRunEvents("s1", plan.runId);
  ASSERT_EQ(events.size(), 2u);
  const RuntimeEvent& start = events[0].event;
  EXPECT_EQ(start.id, deriveContinuationRepairId("start", plan.claimId));
  EXPECT_EQ(start.ts, 7000);
  EXPECT_FALSE(start.runtimeProtocol);
  EXPECT_EQ(start.json["actions"]["continuationStart"]["provenance"], "claim_repair");
  const RuntimeEvent& term = events[1].event;
  EXPECT_EQ(term.id, deriveContinuationRepairId("terminal", plan.claimId));
  EXPECT_EQ(term.ts, 7001);
  EXPECT_EQ(term.json["status"], "failed");
  EXPECT_EQ(term.json["actions"]["stateDelta"]["failureClass"],
            "continuation_abandoned_before_provider_dispatch");
  EXPECT_EQ(term.json["actions"]["stateDelta"]["recovered"], true);
  auto header = s().readRun("s1", plan.runId);
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, "failed");
  EXPECT_EQ(header->failureClass, "continuation_abandoned_before_provider_dispatch");
  auto state = readClaimById(s(), plan.claimId);
  EXPECT_EQ(state->startKind, "claim_repair");
  // Idempotent: a second saga writes nothing.
  const std::string hash = s().ledgerHash();
  ClaimRepairReport again = repairContinuationClaims(s(), RepairMode::strict, false);
  EXPECT_EQ(again.claims[0].actions, std::vector<std::string>{"already_repaired"});
  EXPECT_EQ(s().ledgerHash(), hash);
  // The source's claim is now classified as an existing (terminal) continuation.
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_already_exists"});
  // And the repaired target is the next candidate, continuing from it.
  ContinuationPlan next = planLatestContinuation(s(), "s1", h.host());
  EXPECT_EQ(next.sourceRunId, plan.runId);
  EXPECT_EQ(next.decision, "continue") << next.toJson().dump();
  EXPECT_EQ(next.lineageDepth, 2u);
}

TEST_F(Repair, DryRunReportsWithoutWriting) {
  const std::string hash = s().ledgerHash();
  ClaimRepairReport r = repairContinuationClaims(s(), RepairMode::strict, true);
  EXPECT_EQ(r.claims[0].actions, (std::vector<std::string>{"created_target_header", "repair_start",
                                                           "repair_terminal", "failed_header"}));
  EXPECT_EQ(s().ledgerHash(), hash);
  EXPECT_FALSE(s().readRun("s1", plan.runId));
}

TEST_F(Repair, ExistingTargetHeaderIsKeptWhenEqualToClaimHeader) {
  s().createRun(claim.targetRunHeader);
  ClaimRepairReport r = repairContinuationClaims(s(), RepairMode::strict, false);
  EXPECT_EQ(r.claims[0].actions,
            (std::vector<std::string>{"repair_start", "repair_terminal", "failed_header"}));
}

TEST_F(Repair, RuntimeAdmissionStartWithoutTerminalIsLeftAloneAndPlansPark) {
  s().createRun(claim.targetRunHeader);
  commitContinuationStart(
      s(), claim,
      buildContinuationStartEvent(claim, "live-start", 7000, "runtime_admission", true));
  const std::string hash = s().ledgerHash();
  ClaimRepairReport r = repairContinuationClaims(s(), RepairMode::strict, false);
  EXPECT_EQ(r.claims[0].actions, std::vector<std::string>{"left_runtime_admission"});
  EXPECT_EQ(s().ledgerHash(), hash);
  EXPECT_EQ(s().readRun("s1", plan.runId)->status, "created");
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_started_indeterminate"});
}

TEST_F(Repair, ConflictingTargetHeaderStrictThrowsBestEffortSkipsSession) {
  RunHeader other = claim.targetRunHeader;
  other.cwd = "/elsewhere";
  s().createRun(other);
  try {
    repairContinuationClaims(s(), RepairMode::strict, false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "continuation_repair_failed");
  }
  ClaimRepairReport r = repairContinuationClaims(s(), RepairMode::bestEffort, false);
  EXPECT_EQ(r.skippedSessions, std::vector<std::string>{"s1"});
  EXPECT_EQ(r.claims[0].actions, std::vector<std::string>{"skipped_session"});
  EXPECT_TRUE(s().readRunEvents("s1", plan.runId).empty());
}

// g, run recovery step 3: the saga owns a claim target only until it has a live start. A target
// whose runtime_admission start committed and that then crashed mid-continuation is an
// ordinary run: the saga leaves it alone, startup repair recovers its terminal from its own
// ledger (fact before header), and the session continues from it (lineage r1 → target → next).
TEST_F(Repair, CrashedRuntimeAdmissionTargetIsRecoveredByStartupRepairAndContinued) {
  s().createRun(claim.targetRunHeader);
  commitContinuationStart(
      s(), claim,
      buildContinuationStartEvent(claim, "live-start", 7000, "runtime_admission", true));
  RunHeader running = claim.targetRunHeader;
  running.status = "running";
  s().updateRunHeader(running);
  RunIds t{"s1", plan.invocationId, plan.runId, plan.turnId};
  t.ts = 7000;
  s().append(t.model("working on it"));
  // The process dies here: start + model text, no terminal.
  ClaimRepairReport saga = repairContinuationClaims(s(), RepairMode::strict, false);
  EXPECT_EQ(saga.claims[0].actions, std::vector<std::string>{"left_runtime_admission"});
  RepairReport rep = startupRepair(s(), RepairMode::strict, false);
  std::optional<RunRepairAction> target;
  for (const RunRepairAction& a : rep.runs) {
    if (a.runId == plan.runId) target = a;
  }
  ASSERT_TRUE(target.has_value());
  EXPECT_EQ(target->action, "recover_terminal") << rep.toJson().dump();
  EXPECT_EQ(target->recoveryReason, "model_stream_completed_without_runtime_terminal");
  auto events = s().readRunEvents("s1", plan.runId);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].event.id, "live-start");
  EXPECT_EQ(events[2].event.id, recoveredTerminalEventId("s1", plan.runId));
  EXPECT_EQ(s().readRun("s1", plan.runId)->status, "failed");
  EXPECT_EQ(s().readRun("s1", plan.runId)->failureClass, "app_restarted");
  // The claim keeps its live start; the source's claim is now a finished continuation …
  EXPECT_EQ(readClaimById(s(), plan.claimId)->startKind, "runtime_admission");
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_already_exists"});
  // … and the repaired target is the next candidate (never continuation_started_indeterminate).
  ContinuationPlan next = planLatestContinuation(s(), "s1", h.host());
  EXPECT_EQ(next.decision, "continue") << next.toJson().dump();
  EXPECT_EQ(next.sourceRunId, plan.runId);
  EXPECT_EQ(next.lineageDepth, 2u);
  // Idempotent.
  const std::string hash = s().ledgerHash();
  EXPECT_FALSE(startupRepair(s(), RepairMode::strict, false).changed());
  EXPECT_EQ(s().ledgerHash(), hash);
}

// A claim_repair start without its terminal (saga interrupted between the two) stays owned by
// the saga: startup repair skips it and the next saga pass writes the abandoned terminal.
TEST_F(Repair, ClaimRepairStartWithoutTerminalIsLeftToTheSagaByStartupRepair) {
  s().createRun(claim.targetRunHeader);
  commitContinuationRepairStart(
      s(), claim,
      buildContinuationStartEvent(claim, deriveContinuationRepairId("start", plan.claimId),
                                  claim.claimedAt, "claim_repair", false));
  RepairReport rep = startupRepair(s(), RepairMode::strict, false);
  for (const RunRepairAction& a : rep.runs) {
    if (a.runId == plan.runId) {
      EXPECT_EQ(a.action, "skipped_claim_target");
    }
  }
  EXPECT_EQ(s().readRunEvents("s1", plan.runId).size(), 1u);
  ClaimRepairReport saga = repairContinuationClaims(s(), RepairMode::strict, false);
  EXPECT_EQ(saga.claims[0].actions, (std::vector<std::string>{"repair_terminal", "failed_header"}));
  EXPECT_EQ(s().readRun("s1", plan.runId)->failureClass,
            "continuation_abandoned_before_provider_dispatch");
}
