// Continuation claims and continuation-start writers (e.8, f.7), claim-state cross-checks and
// existing-claim classification (e.5).
#include "continuation_test_util.h"

using namespace crashsim;
using namespace ctest;

namespace {

struct Claims : ::testing::Test {
  TempStore ts{"claims"};
  Host h;
  RunIds src;
  ContinuationPlan plan;
  void SetUp() override {
    src = makeFailedRun(*ts, "s1", "r1", 10);
    plan = planContinuation(*ts, "s1", "r1", h.host());
    ASSERT_EQ(plan.decision, "continue");
  }
  RuntimeStore& s() { return *ts; }
};

std::string codeOrNoError(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "no error";
}

}  // namespace

TEST_F(Claims, FirstClaimIsAcquiredIdenticalRetryIsExisting) {
  ContinuationClaim c = claimFor(plan, 5000);
  EXPECT_EQ(claimContinuation(s(), c).result, "acquired");
  ClaimResult again = claimContinuation(s(), c);
  EXPECT_EQ(again.result, "existing");
  ASSERT_TRUE(again.existing);
  EXPECT_EQ(again.existing->claim.claimId, c.claimId);
  auto state = readClaimByBoundaryDigest(s(), c.boundaryDigest);
  ASSERT_TRUE(state);
  EXPECT_FALSE(state->startEventId);
  EXPECT_EQ(stableJson(state->claim.toJson()), stableJson(c.toJson()));
}

TEST_F(Claims, OtherClaimIdForSameBoundaryIsExisting) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  ContinuationPlan p2 = plan;
  p2.claimId = "other-claim";
  p2.runId = "other-run";
  p2.invocationId = "other-inv";
  p2.turnId = "other-turn";
  EXPECT_EQ(claimContinuation(s(), claimFor(p2, 6000)).result, "existing");
}

TEST_F(Claims, ReusedClaimIdOrTargetIdsOrSourceIsConflict) {
  ASSERT_EQ(claimContinuation(s(), claimFor(plan, 5000)).result, "acquired");
  RunIds other = makeFailedRun(s(), "s1", "r9", 20);
  ContinuationPlan p9 = planContinuation(s(), "s1", "r9", h.host());
  ASSERT_EQ(p9.decision, "continue");
  auto with = [&](auto mutate) {
    ContinuationPlan q = p9;
    mutate(q);
    return claimContinuation(s(), claimFor(q, 7000));
  };
  ClaimResult r1 = with([&](ContinuationPlan& q) { q.claimId = plan.claimId; });
  EXPECT_EQ(r1.result, "conflict");
  EXPECT_EQ(r1.conflictDetail, "claimId");
  EXPECT_EQ(with([&](ContinuationPlan& q) { q.invocationId = plan.invocationId; }).conflictDetail,
            "target invocation");
  EXPECT_EQ(with([&](ContinuationPlan& q) { q.runId = plan.runId; }).conflictDetail, "target run");
  EXPECT_EQ(with([&](ContinuationPlan& q) { q.turnId = plan.turnId; }).conflictDetail,
            "target session+turn");
  (void)other;
}

TEST_F(Claims, SameSourceHighWaterWithDifferentBoundaryIsConflict) {
  ASSERT_EQ(claimContinuation(s(), claimFor(plan, 5000)).result, "acquired");
  // A boundary with an extra (older) segment has another digest but the same immediate source.
  RunIds old = makeFailedRun(s(), "s1", "r0", 5);
  ImmutablePrefix p0 = readImmutablePrefix(s(), {old.session, old.invocation, old.run, old.turn});
  ImmutablePrefix p1 = readImmutablePrefix(s(), {src.session, src.invocation, src.run, src.turn});
  const ImmutablePrefix* segs[] = {&p0, &p1};
  ContinuationPlan q = plan;
  q.claimId = "c-x";
  q.runId = "run-x";
  q.invocationId = "inv-x";
  q.turnId = "turn-x";
  q.boundary = buildBoundaryCursor(segs);
  ClaimResult r = claimContinuation(s(), claimFor(q, 8000));
  EXPECT_EQ(r.result, "conflict");
  EXPECT_EQ(r.conflictDetail, "source (session, run, high-water)");
}

TEST_F(Claims, InvalidClaimsAreRejectedWithContinuationClaimInvalid) {
  ContinuationClaim c = claimFor(plan, 5000);
  c.targetRunHeader.createdAt = 1;
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), c); }), "continuation_claim_invalid");
  ContinuationPlan q = plan;
  q.runId = "r1";  // reuses the source run id
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), claimFor(q, 5000)); }),
            "continuation_claim_invalid");
  ContinuationClaim d = claimFor(plan, 5000);
  d.boundaryDigest = "sha256:" + std::string(64, '0');
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), d); }), "continuation_claim_invalid");
}

TEST_F(Claims, NonTerminalSourceIsContinuationBoundaryNotTerminal) {
  RunIds r = ids("s1", "live");
  RunHeader hd = header(r, 30);
  s().createRun(hd);
  appendAll(s(), {r.user("x")});
  ImmutablePrefix p = readImmutablePrefix(s(), {r.session, r.invocation, r.run, r.turn});
  const ImmutablePrefix* segs[] = {&p};
  ContinuationPlan q = plan;
  q.sourceRunId = "live";
  q.sourceInvocationId = r.invocation;
  q.sourceTurnId = r.turn;
  q.sourceRuntimeEventHighWater = 1;
  q.sourcePrefixDigest = p.prefixDigest;
  q.boundary = buildBoundaryCursor(segs);
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), claimFor(q, 5000)); }),
            "continuation_boundary_not_terminal");
  EXPECT_TRUE(listClaims(s()).empty());
  s().append(r.model("still writable: no seal"));
}

TEST_F(Claims, StaleOrMissingBoundaryIsChangedOrMissing) {
  ContinuationPlan q = plan;
  Json seg = q.boundary->segments[0];
  seg["prefixDigest"] = "sha256:" + std::string(64, 'a');
  q.boundary->segments = Json::array({seg});
  q.boundary->manifestDigest = manifestDigest(q.boundary->segments);
  q.sourcePrefixDigest = seg["prefixDigest"];
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), claimFor(q, 5000)); }),
            "continuation_boundary_changed");
  ContinuationPlan m = plan;
  Json seg2 = m.boundary->segments[0];
  seg2["identity"]["invocationId"] = "inv-ghost";
  m.boundary->segments = Json::array({seg2});
  m.boundary->manifestDigest = manifestDigest(m.boundary->segments);
  m.sourceInvocationId = "inv-ghost";
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), claimFor(m, 5000)); }),
            "continuation_boundary_missing");
}

TEST_F(Claims, NonEmptyTargetIsContinuationTargetNotEmpty) {
  RunIds t = RunIds{"s1", plan.invocationId, plan.runId, plan.turnId};
  s().append(t.user("squatter"));
  EXPECT_EQ(codeOrNoError([&] { claimContinuation(s(), claimFor(plan, 5000)); }),
            "continuation_target_not_empty");
  EXPECT_TRUE(listClaims(s()).empty());
}

TEST_F(Claims, ClaimSealsSourceAndReservesTargetEventOne) {
  ASSERT_EQ(claimContinuation(s(), claimFor(plan, 5000)).result, "acquired");
  RunIds t = RunIds{"s1", plan.invocationId, plan.runId, plan.turnId};
  EXPECT_EQ(codeOrNoError([&] { s().append(t.user("not the start")); }),
            "continuation_target_reserved");
  RunIds again = src;
  // The source is terminal anyway; the seal rule is checked for the source identity too.
  std::string c = codeOrNoError([&] { s().append(again.model("late")); });
  EXPECT_TRUE(c == "continuation_source_sealed" || c == "run_sealed") << c;
}

TEST_F(Claims, ContinuationStartIsEventOneRetryIsIdempotentDifferentIsConflict) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  RuntimeEvent start = buildContinuationStartEvent(c, "start-1", 5001, "runtime_admission", true);
  WriteResult w = commitContinuationStart(s(), c, start);
  EXPECT_TRUE(w.created);
  EXPECT_EQ(w.runtimeEventSeq, 1);
  WriteResult w2 = commitContinuationStart(s(), c, start);
  EXPECT_FALSE(w2.created);
  EXPECT_EQ(w2.runtimeEventSeq, 1);
  RuntimeEvent other = buildContinuationStartEvent(c, "start-2", 5001, "runtime_admission", true);
  EXPECT_EQ(codeOrNoError([&] { commitContinuationStart(s(), c, other); }),
            "continuation_start_conflict");
  RuntimeEvent repair = buildContinuationStartEvent(c, "start-1", 5001, "claim_repair", false);
  EXPECT_EQ(codeOrNoError([&] { commitContinuationRepairStart(s(), c, repair); }),
            "continuation_start_conflict");
  auto state = readClaimById(s(), c.claimId);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->startKind, "runtime_admission");
  EXPECT_EQ(state->startEventId, "start-1");
  // After the start, ordinary target events are accepted.
  RunIds t = RunIds{"s1", plan.invocationId, plan.runId, plan.turnId};
  t.ts = 6000;
  EXPECT_EQ(s().append(t.model("continuing")).runtimeEventSeq, 2);
}

TEST_F(Claims, InvalidStartEventsAreContinuationStartInvalid) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  // ts before claimedAt
  EXPECT_EQ(codeOrNoError([&] {
              commitContinuationStart(
                  s(), c, buildContinuationStartEvent(c, "s", 4999, "runtime_admission", true));
            }),
            "continuation_start_invalid");
  // marker on a repair start
  EXPECT_EQ(codeOrNoError([&] {
              commitContinuationRepairStart(
                  s(), c, buildContinuationStartEvent(c, "s", 5000, "claim_repair", true));
            }),
            "continuation_start_invalid");
  // provenance differs from the writer's start kind
  EXPECT_EQ(codeOrNoError([&] {
              commitContinuationStart(
                  s(), c, buildContinuationStartEvent(c, "s", 5000, "claim_repair", false));
            }),
            "continuation_start_invalid");
  // replay digest differs from the claim
  ContinuationClaim forged = c;
  forged.providerReplayDigest = "sha256:" + std::string(64, 'b');
  EXPECT_EQ(codeOrNoError([&] {
              commitContinuationStart(
                  s(), c,
                  buildContinuationStartEvent(forged, "s", 5000, "runtime_admission", true));
            }),
            "continuation_start_invalid");
  // claim that is not the durable one
  EXPECT_EQ(codeOrNoError([&] {
              commitContinuationStart(
                  s(), forged,
                  buildContinuationStartEvent(forged, "s", 5000, "runtime_admission", true));
            }),
            "continuation_claim_row_mismatch");
  EXPECT_EQ(s().readRunEvents("s1", plan.runId).size(), 0u);
}

TEST_F(Claims, ReadingClaimStateCrossChecksStartKind) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  commitContinuationStart(s(), c,
                          buildContinuationStartEvent(c, "st", 5000, "runtime_admission", true));
  execSql(s(), "UPDATE runtime_continuation_claims SET start_kind = 'claim_repair'");
  EXPECT_EQ(codeOrNoError([&] { readClaimById(s(), c.claimId); }),
            "continuation_claim_row_mismatch");
  execSql(s(), "UPDATE runtime_continuation_claims SET start_kind = NULL");
  EXPECT_EQ(codeOrNoError([&] { readClaimById(s(), c.claimId); }),
            "continuation_claim_row_mismatch");
}

// e.5 classification, by name.
TEST_F(Claims, ClaimWithoutTargetHeaderIsContinuationClaimRepairRequired) {
  ASSERT_EQ(claimContinuation(s(), claimFor(plan, 5000)).result, "acquired");
  ContinuationPlan p = planContinuation(s(), "s1", "r1", h.host());
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"continuation_claim_repair_required"});
  EXPECT_EQ(p.diagnostics[0].detail->at("continuationClaimId"), plan.claimId);
  EXPECT_EQ(p.diagnostics[0].detail->at("continuationRunId"), plan.runId);
}

TEST_F(Claims, ClaimWithHeaderButNoStartIsContinuationClaimRepairRequired) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  s().createRun(c.targetRunHeader);
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_claim_repair_required"});
}

TEST_F(Claims, StartWithoutTerminalIsContinuationStartedIndeterminate) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  s().createRun(c.targetRunHeader);
  commitContinuationStart(s(), c,
                          buildContinuationStartEvent(c, "st", 5000, "runtime_admission", true));
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_started_indeterminate"});
}

TEST_F(Claims, TerminalTargetIsContinuationAlreadyExistsButHeaderMismatchIsRepairRequired) {
  ContinuationClaim c = claimFor(plan, 5000);
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  s().createRun(c.targetRunHeader);
  commitContinuationStart(s(), c,
                          buildContinuationStartEvent(c, "st", 5000, "runtime_admission", true));
  RunIds t = RunIds{"s1", plan.invocationId, plan.runId, plan.turnId};
  t.ts = 6000;
  RuntimeEvent term = t.completedTerminal("done");
  s().append(term);
  // valid fact, header not terminal → repair required (7)
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_claim_repair_required"});
  RunHeader done = c.targetRunHeader;
  done.status = "completed";
  done.updatedAt = done.completedAt.emplace(term.ts);
  s().markRunTerminal(done);
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_already_exists"});
  // immutable header field changed → repair required (2)
  RunHeader moved = done;
  moved.cwd = "/elsewhere";
  execSql(s(), "UPDATE agent_runs SET header_json = " + sqlQuote(stableJson(moved.toJson())) +
                   " WHERE run_id = " + sqlQuote(plan.runId));
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_claim_repair_required"});
}
