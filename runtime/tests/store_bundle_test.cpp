// Recovery bundle writer (spec f.6): every validation code by name, steps 1–9, exact retry,
// parked is terminal, rollback on failure.
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

struct BundleTest : ::testing::Test {
  TempDir dir;
  std::unique_ptr<RuntimeStore> store = RuntimeStore::open(dir.path);
  Ident id;
  Call call;
  void SetUp() override {
    store->append(userEvent(id));
    store->commitToolPrepared(t1(call));
  }
  // The rollback guarantee: after a failed bundle the operation is still prepared with one
  // journal row and the ledger is unchanged.
  void expectUntouched(const std::string& ledgerBefore) {
    EXPECT_EQ(store->ledgerHash(), ledgerBefore);
    auto ops = store->listToolOperations();
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].currentState, "prepared");
    EXPECT_EQ(ops[0].version, 1);
    EXPECT_EQ(store->listJournal().size(), 1u);
  }
  void expectBundleCode(const RecoveryBundle& b, std::string_view code) {
    const std::string before = store->ledgerHash();
    expectCode([&] { store->commitToolRecoveryBundle(b); }, code);
    expectUntouched(before);
  }
};

TEST_F(BundleTest, CompletedBundleCommitsAllFactsAtVersion4) {
  auto b = completedBundle(call);
  auto r = store->commitToolRecoveryBundle(b);
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.runtimeEventSeq, 6);
  auto op = store->listToolOperations()[0];
  EXPECT_EQ(op.currentState, "recovery_completed");
  EXPECT_EQ(op.version, 4);
  EXPECT_EQ(op.resultEventId, b.outcome->id);
  auto j = store->listJournal();
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[1].state, "reconcile_observed");
  EXPECT_EQ(j[1].journalEventId, b.reconcile.id + "_journal");
  EXPECT_EQ(j[1].metadataJson, stableJson(b.reconcile.json["actions"]["toolRecovery"]));
  EXPECT_EQ(j[1].committedAt, b.reconcile.ts);
  EXPECT_EQ(j[2].state, "outcome_committed");
  EXPECT_EQ(j[2].journalEventId, call.op() + "_outcome");
  EXPECT_EQ(j[3].state, "recovery_completed");
  EXPECT_EQ(j[3].journalEventId, b.decision.id + "_journal");
  // All five events (call, dispatch, reconcile, outcome, decision) after the user event.
  EXPECT_EQ(store->readRunEvents(id.session, id.run).size(), 6u);
}

TEST_F(BundleTest, ParkedBundleIsVersion3AndTerminal) {
  auto b = parkedBundle(call, "diverged");
  EXPECT_TRUE(store->commitToolRecoveryBundle(b).created);
  auto op = store->listToolOperations()[0];
  EXPECT_EQ(op.currentState, "recovery_parked");
  EXPECT_EQ(op.version, 3);
  EXPECT_FALSE(op.resultEventId.has_value());
  // Exact retry converges.
  EXPECT_FALSE(store->commitToolRecoveryBundle(b).created);
  // Parked is terminal: a completed bundle afterwards fails and writes nothing.
  const std::string before = store->ledgerHash();
  expectCode([&] { store->commitToolRecoveryBundle(completedBundle(call)); },
             code::recovery_bundle_already_settled);
  EXPECT_EQ(store->ledgerHash(), before);
}

TEST_F(BundleTest, CompletedExactRetryConverges) {
  auto b = completedBundle(call);
  store->commitToolRecoveryBundle(b);
  const std::string before = store->ledgerHash();
  auto r = store->commitToolRecoveryBundle(b);
  EXPECT_FALSE(r.created);
  EXPECT_EQ(r.runtimeEventSeq, 6);
  EXPECT_EQ(store->ledgerHash(), before);
  EXPECT_EQ(store->listJournal().size(), 4u);
}

TEST_F(BundleTest, ConflictingBundleReusingIdsIsDuplicateEventId) {
  store->commitToolRecoveryBundle(completedBundle(call));
  auto b = completedBundle(call);
  Json r = b.reconcile.json;
  r["ts"] = 4500;  // same id, different bytes
  b.reconcile = decode(r);
  expectLedger([&] { store->commitToolRecoveryBundle(b); }, code::tool_ledger_rejection,
               code::duplicate_event_id);
}

TEST_F(BundleTest, UnknownOperation) {
  Call other = call;
  other.callId = "nope";
  expectBundleCode(parkedBundle(other), code::unknown_tool_operation);
}

TEST_F(BundleTest, RequiresDurableDispatch) {
  // A quarantined legacy projection row without dispatch.
  rawSql(dir.db(), "UPDATE tool_operations SET dispatch_event_id = NULL");
  const std::string before = store->ledgerHash();
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::recovery_bundle_requires_dispatch);
  EXPECT_EQ(store->ledgerHash(), before);
}

// --- validation codes in the order of f.6 step 2 ---

TEST_F(BundleTest, CallIdentityConflict) {
  rawSql(dir.db(), "UPDATE tool_operations SET tool_name = 'Edit'");
  const std::string before = store->ledgerHash();
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::call_identity_conflict);
  EXPECT_EQ(store->ledgerHash(), before);
}

TEST_F(BundleTest, CanonicalArgsHashConflict) {
  rawSql(dir.db(),
         "UPDATE tool_operations SET canonical_args_hash = " + sqlQuote(digestOf("other")));
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::canonical_args_hash_conflict);
}

TEST_F(BundleTest, DispatchIdentityConflict) {
  rawSql(dir.db(), "UPDATE tool_operations SET recovery_mode = 'idempotent'");
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::dispatch_identity_conflict);
}

TEST(BundleModeTest, RecoveryModeUnsupported) {
  TempDir dir;
  auto store = RuntimeStore::open(dir.path);
  Ident id;
  Call call;
  call.tool = "Bash";
  call.args = {{"command", "touch marker"}};
  call.mode = "never_auto_retry";
  store->append(userEvent(id));
  store->commitToolPrepared(t1(call));
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::recovery_mode_unsupported);
  EXPECT_EQ(store->listToolOperations()[0].currentState, "prepared");
}

TEST_F(BundleTest, ReconcileFactInvalid) {
  auto b = parkedBundle(call);
  b.reconcile = b.decision;  // a decision in the reconcile slot
  Json d = b.decision.json;
  d["id"] = "other-decision";
  b.decision = decode(d);
  expectBundleCode(b, code::reconcile_fact_invalid);
}

TEST_F(BundleTest, DecisionFactInvalid) {
  auto b = parkedBundle(call);
  Json r = b.reconcile.json;
  r["id"] = "other-reconcile";
  b.decision = decode(r);  // a reconcile fact in the decision slot
  expectBundleCode(b, code::decision_fact_invalid);
}

TEST_F(BundleTest, RecoveryFactIdentityConflict) {
  auto b = parkedBundle(call);
  Json r = b.reconcile.json;
  r["turnId"] = "turn-other";
  b.reconcile = decode(r);
  expectBundleCode(b, code::recovery_fact_identity_conflict);
  b = parkedBundle(call);
  Json d = b.decision.json;
  d["refs"]["toolCallId"] = "call-other";
  b.decision = decode(d);
  expectBundleCode(b, code::recovery_fact_identity_conflict);
}

TEST_F(BundleTest, OperationIdentityConflict) {
  auto b = parkedBundle(call);
  Json r = b.reconcile.json;
  r["actions"]["toolRecovery"]["payload"]["operationId"] = "toolop_other";
  b.reconcile = decode(r);
  expectBundleCode(b, code::operation_identity_conflict);
}

TEST_F(BundleTest, OutcomeRequired) {
  auto b = completedBundle(call);
  b.outcome.reset();
  expectBundleCode(b, code::outcome_required);
}

TEST_F(BundleTest, OutcomeIdentityConflict) {
  auto b = completedBundle(call);
  Json o = b.outcome->json;
  o["content"]["name"] = "Edit";
  b.outcome = decode(o);
  expectBundleCode(b, code::outcome_identity_conflict);
}

TEST_F(BundleTest, OutcomeNotSuccessful) {
  auto b = completedBundle(call);
  Json o = b.outcome->json;
  o["content"]["isError"] = true;
  b.outcome = decode(o);
  expectBundleCode(b, code::outcome_not_successful);
}

TEST_F(BundleTest, OutcomeReferenceConflict) {
  auto b = completedBundle(call);
  Json d = b.decision.json;
  d["actions"]["toolRecovery"]["payload"]["outcomeEventId"] = "some-other-outcome";
  b.decision = decode(d);
  expectBundleCode(b, code::outcome_reference_conflict);
}

TEST_F(BundleTest, ReconcileDecisionConflictCompletedRequiresExpectedState) {
  auto b = completedBundle(call);
  b.reconcile = decode(reconcileJson(call, b.reconcile.id, "diverged"));
  expectBundleCode(b, code::reconcile_decision_conflict);
}

TEST_F(BundleTest, ReconcileDecisionConflictParkedReasonMustMapObservation) {
  auto b = parkedBundle(call, "diverged");
  Json d = b.decision.json;
  d["actions"]["toolRecovery"]["payload"]["reasonCode"] = "reconcile_unreadable";
  b.decision = decode(d);
  expectBundleCode(b, code::reconcile_decision_conflict);
  b = parkedBundle(call, "diverged");
  b.reconcile = decode(reconcileJson(call, b.reconcile.id, "matches_expected_state"));
  expectBundleCode(b, code::reconcile_decision_conflict);
}

TEST_F(BundleTest, OutcomeForParked) {
  auto b = parkedBundle(call);
  b.outcome = responseEvent(call, 4001, false, true, "parked-outcome");
  expectBundleCode(b, code::outcome_for_parked);
}

TEST_F(BundleTest, EvidenceOrderConflict) {
  auto b = parkedBundle(call);
  Json d = b.decision.json;
  d["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] =
      Json::array({call.dispatchEvent(), call.callEvent(), b.reconcile.id});
  b.decision = decode(d);
  expectBundleCode(b, code::evidence_order_conflict);
}

TEST_F(BundleTest, CompletedAfterNormalT2IsAlreadySettled) {
  store->commitToolOutcome(t2(call));
  auto b = completedBundle(call);
  const std::string before = store->ledgerHash();
  // The bundle's outcome is a second response for the call: rejected by the transition check.
  expectLedger([&] { store->commitToolRecoveryBundle(b); }, code::tool_ledger_rejection,
               code::duplicate_response);
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::recovery_bundle_already_settled);
  EXPECT_EQ(store->ledgerHash(), before);
}

TEST_F(BundleTest, RunSealRefusesABundleAfterTheTerminalFactAndWritesNothing) {
  // f.3 / j.6: no event after a run's terminal fact, recovery bundles included (host start-up
  // reconciles before it recovers the terminal).
  store->commitTerminalEvent(terminalEvent(id, "terminal-1", 3500, "failed"));
  const std::string before = store->ledgerHash();
  expectCode([&] { store->commitToolOutcome(t2(call)); }, code::run_sealed);
  expectCode([&] { store->commitToolRecoveryBundle(completedBundle(call)); }, code::run_sealed);
  EXPECT_EQ(store->ledgerHash(), before);
  EXPECT_EQ(store->listToolOperations()[0].currentState, "prepared");
}

TEST_F(BundleTest, CompletedVersusParkedInOneProcessExactlyOneWins) {
  EXPECT_TRUE(store->commitToolRecoveryBundle(completedBundle(call)).created);
  expectCode([&] { store->commitToolRecoveryBundle(parkedBundle(call)); },
             code::recovery_bundle_already_settled);
  EXPECT_EQ(store->listToolOperations()[0].currentState, "recovery_completed");
}

}  // namespace
