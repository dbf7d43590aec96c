// ledger_scanner_test.cpp — the single scanner (spec c.2), recovery-tail interpretation (c.4)
// and recovery-bundle validation codes in their f.6 order.
#include "ledger/ledger_scanner.h"

#include <gtest/gtest.h>

#include "resolver_fixtures.h"

namespace crashsim {
namespace {

using detail::LedgerScan;
using detail::scanLedger;
using testing::kWriteArgs;
using testing::Ledger;

std::vector<std::string> issueCodes(const LedgerScan& scan) {
  std::vector<std::string> out;
  for (const ResolverIssue& i : scan.issues) out.push_back(i.code);
  return out;
}

using Codes = std::vector<std::string>;

TEST(LedgerScanner, CleanT1T2LedgerHasOneOperationAndNoIssues) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1");
  LedgerScan scan = scanLedger(l.events);
  EXPECT_TRUE(scan.issues.empty());
  ASSERT_EQ(scan.operations.size(), 1u);
  const auto& op = scan.operations[0];
  EXPECT_EQ(op.invocationId, "invocation-1");
  EXPECT_EQ(op.toolCallId, "call-1");
  EXPECT_EQ(op.toolName, "Write");
  EXPECT_EQ(op.operationId, "op-1");
  EXPECT_EQ(op.call, 1u);
  EXPECT_EQ(op.dispatch, 2u);
  EXPECT_EQ(op.response, 3u);
  EXPECT_FALSE(scan.hasCorruption());
}

TEST(LedgerScanner, Step1DuplicateEventIdIsTopLevelAndSkipsTheEvent) {
  Ledger l;
  l.user("user-1");
  l.call("same-id", "call-1", "Bash", Json::object());
  l.call("same-id", "call-2", "Bash", Json::object());  // skipped: no second operation
  LedgerScan scan = scanLedger(l.events);
  ASSERT_EQ(scan.issues.size(), 1u);
  EXPECT_EQ(scan.issues[0], (ResolverIssue{"duplicate_event_id", "same-id"}));
  ASSERT_EQ(scan.operations.size(), 1u);
  EXPECT_TRUE(scan.operations[0].issueCodes.empty());
}

TEST(LedgerScanner, Step2InvocationSpineDriftIsReportedAndEventStillProcessed) {
  Ledger l;
  l.user("user-1");
  l.call("call-ev", "call-1", "Bash", Json::object(), [](Json& j) { j["turnId"] = "turn-other"; });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"invocation_identity_conflict"});
  EXPECT_EQ(scan.issues[0].eventId, "call-ev");
  ASSERT_EQ(scan.operations.size(), 1u);  // still processed
  EXPECT_TRUE(scan.operations[0].issueCodes.empty());
}

TEST(LedgerScanner, Step2SpineIsTheFirstOneSeenNotTheLatest) {
  Ledger l;
  l.user("user-1");
  l.text("t2", "x", [](Json& j) { j["runId"] = "run-other"; });
  l.text("t3", "y");  // agrees with the first spine → no issue
  LedgerScan scan = scanLedger(l.events);
  ASSERT_EQ(scan.issues.size(), 1u);
  EXPECT_EQ(scan.issues[0], (ResolverIssue{"invocation_identity_conflict", "t2"}));
}

TEST(LedgerScanner, Step3SemanticLaneConflictSkipsTheEvent) {
  Ledger l;
  l.user("user-1");
  // A function_call with a status is not a valid call lane envelope.
  l.call("bad-call", "call-1", "Bash", Json::object(), [](Json& j) { j["status"] = "completed"; });
  ASSERT_EQ(l.events.back().lane, Lane::conflict);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"semantic_lane_conflict"});
  EXPECT_TRUE(scan.operations.empty());
}

TEST(LedgerScanner, Step3CallCarryingDispatchIsSemanticLaneConflict) {
  Ledger l;
  l.call("bad-call", "call-1", "Bash", Json::object(), [](Json& j) {
    j["actions"] = {{"toolDispatch",
                     {{"protocol", "t1_after_preflight_v1"},
                      {"operationId", "op"},
                      {"providerToolCallId", "call-1"},
                      {"toolName", "Bash"},
                      {"canonicalArgsHash", canonicalArgsHash("Bash", Json::object())},
                      {"recoveryMode", "never_auto_retry"}}}};
  });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"semantic_lane_conflict"});
  EXPECT_TRUE(scan.operations.empty());
}

TEST(LedgerScanner, Step4PartialEventsAreSkipped) {
  Ledger l;
  l.user("user-1");
  l.text("partial-text", "stream", [](Json& j) { j["partial"] = true; });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_TRUE(scan.issues.empty());
  EXPECT_TRUE(scan.operations.empty());
}

TEST(LedgerScanner, KeyIsUnambiguousInvocationAndCallIdPair) {
  Ledger l;
  std::string a = std::string("a") + '\0' + "b";
  std::string b = std::string("b") + '\0' + "c";
  l.call("c1", "c", "Bash", Json::object(), [&](Json& j) { j["invocationId"] = a; });
  l.call("c2", b, "Bash", Json::object(), [&](Json& j) { j["invocationId"] = "a"; });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_TRUE(scan.issues.empty());
  EXPECT_EQ(scan.operations.size(), 2u);
}

TEST(LedgerScanner, SameCallIdInTwoInvocationsIsTwoOperations) {
  Ledger l;
  l.call("c1", "call-1", "Bash", Json::object());
  l.call("c2", "call-1", "Bash", Json::object(), [](Json& j) { j["invocationId"] = "inv-2"; });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_TRUE(scan.issues.empty());
  ASSERT_EQ(scan.operations.size(), 2u);
  EXPECT_EQ(scan.operations[1].invocationId, "inv-2");
}

TEST(LedgerScanner, Step5DuplicateCallRecordedOnOperation) {
  Ledger l;
  l.call("c1", "call-1", "Bash", Json::object());
  l.call("c2", "call-1", "Bash", Json::object());
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"duplicate_call"});
  EXPECT_EQ(scan.issues[0].eventId, "c2");
  ASSERT_EQ(scan.operations.size(), 1u);
  EXPECT_EQ(scan.operations[0].issueCodes, Codes{"duplicate_call"});
  EXPECT_EQ(scan.operations[0].call, 0u);
}

TEST(LedgerScanner, Step6DispatchBeforeCallCreatesOperationWithEventOrderConflict) {
  Ledger l;
  l.user("user-1", true);
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  l.call("c", "call-1", "Write", kWriteArgs);  // attaches to the dispatch-created operation
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"event_order_conflict"});
  ASSERT_EQ(scan.operations.size(), 1u);
  EXPECT_EQ(scan.operations[0].dispatch, 1u);
  EXPECT_EQ(scan.operations[0].call, 2u);
  EXPECT_EQ(scan.operations[0].issueCodes, Codes{"event_order_conflict"});
}

TEST(LedgerScanner, Step5CallAttachingWithOtherToolNameIsIdentityConflict) {
  Ledger l;
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  l.call("c", "call-1", "Edit", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), (Codes{"event_order_conflict", "identity_conflict"}));
  EXPECT_EQ(scan.issues[1].eventId, "c");
}

TEST(LedgerScanner, Step6DuplicateDispatchKeepsTheFirst) {
  Ledger l = testing::newProtocolT1();
  l.dispatch("op-1_dispatch_2", "op-1", "call-1", "Write", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"duplicate_dispatch"});
  EXPECT_EQ(scan.issues[0].eventId, "op-1_dispatch_2");
  EXPECT_EQ(scan.operations[0].dispatch, 2u);
}

TEST(LedgerScanner, Step6DuplicateOperationRecordedOnBothOperations) {
  Ledger l = testing::newProtocolT1();
  l.call("c2", "call-2", "Write", kWriteArgs);
  l.dispatch("d2", "op-1", "call-2", "Write", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"duplicate_operation"});  // listed once
  EXPECT_EQ(scan.issues[0].eventId, "d2");
  ASSERT_EQ(scan.operations.size(), 2u);
  EXPECT_EQ(scan.operations[0].issueCodes, Codes{"duplicate_operation"});
  EXPECT_EQ(scan.operations[1].issueCodes, Codes{"duplicate_operation"});
  EXPECT_FALSE(scan.operations[1].dispatch.has_value());  // not bound
}

TEST(LedgerScanner, Step6DispatchHashDifferentFromCallIsCanonicalArgsHashConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.dispatch("d", "op-1", "call-1", "Write", Json{{"path", "other.txt"}});
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"canonical_args_hash_conflict"});
  EXPECT_EQ(scan.issues[0].eventId, "d");
}

TEST(LedgerScanner, Step6HashIsKeyOrderIndependent) {
  Ledger l;
  l.call("c", "call-1", "Write", Json{{"content", "after"}, {"path", "notes.txt"}});
  l.dispatch("d", "op-1", "call-1", "Write", Json{{"path", "notes.txt"}, {"content", "after"}});
  EXPECT_TRUE(scanLedger(l.events).issues.empty());
}

TEST(LedgerScanner, Step6NonStrictJsonCallArgsIsCanonicalArgsHashConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  // The decoder leaves callArgsHash empty for args that are not strict JSON; such a call can
  // never authenticate a dispatch.
  l.events[0].callArgsHash.reset();
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"canonical_args_hash_conflict"});
}

TEST(LedgerScanner, Step6DispatchRefsMismatchIsIdentityConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs, "reconcile",
             [](Json& j) { j["refs"]["operationId"] = "op-other"; });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"identity_conflict"});
}

TEST(LedgerScanner, Step6DispatchToolNameMismatchIsIdentityConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.dispatch("d", "op-1", "call-1", "Edit", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  // Name differs and the hash domain includes the tool name.
  EXPECT_EQ(issueCodes(scan), (Codes{"identity_conflict", "canonical_args_hash_conflict"}));
}

TEST(LedgerScanner, Step6DispatchExecutionIdentityMismatchIsIdentityConflict) {
  for (const char* field : {"sessionId", "runId", "turnId"}) {
    Ledger l;
    l.call("c", "call-1", "Write", kWriteArgs);
    l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs, "reconcile",
               [&](Json& j) { j[field] = "other"; });
    LedgerScan scan = scanLedger(l.events);
    // Spine drift is reported too (same invocation, other session/run/turn).
    EXPECT_EQ(issueCodes(scan), (Codes{"invocation_identity_conflict", "identity_conflict"}))
        << field;
  }
}

TEST(LedgerScanner, Step6DispatchAfterResponseIsEventOrderConflictAndResponseIdentityConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write");  // unbound: no refs
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), (Codes{"event_order_conflict", "identity_conflict"}));
  EXPECT_EQ(scan.issues[0].eventId, "d");
  EXPECT_EQ(scan.issues[1].eventId, "r");  // identity conflict on the response event
}

TEST(LedgerScanner, Step6DispatchAfterBoundResponseIsOnlyEventOrderConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write", "op-1");
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"event_order_conflict"});
}

TEST(LedgerScanner, Step7ResponseWithoutCallIsOrphanResponse) {
  Ledger l;
  l.response("r", "call-1", "Bash");
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"orphan_response"});
  ASSERT_EQ(scan.operations.size(), 1u);
  EXPECT_EQ(scan.operations[0].response, 0u);
  EXPECT_EQ(scan.operations[0].issueCodes, Codes{"orphan_response"});
}

TEST(LedgerScanner, Step7SecondResponseIsDuplicateResponse) {
  Ledger l;
  l.call("c", "call-1", "Bash", Json::object());
  l.response("r1", "call-1", "Bash");
  l.response("r2", "call-1", "Bash");
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(issueCodes(scan), Codes{"duplicate_response"});
  EXPECT_EQ(scan.operations[0].response, 1u);
}

TEST(LedgerScanner, Step7ResponseToolNameMismatchIsIdentityConflict) {
  Ledger l;
  l.call("c", "call-1", "Bash", Json::object());
  l.response("r", "call-1", "Read");
  EXPECT_EQ(issueCodes(scanLedger(l.events)), Codes{"identity_conflict"});
}

TEST(LedgerScanner, Step7ResponseExecutionIdentityMismatchIsIdentityConflict) {
  Ledger l;
  l.call("c", "call-1", "Bash", Json::object());
  l.response("r", "call-1", "Bash", {}, false, [](Json& j) { j["sessionId"] = "session-x"; });
  EXPECT_EQ(issueCodes(scanLedger(l.events)),
            (Codes{"invocation_identity_conflict", "identity_conflict"}));
}

TEST(LedgerScanner, Step7DispatchedResponseMustCarryMatchingRefs) {
  {
    Ledger l = testing::newProtocolT1();
    l.response("r", "call-1", "Write");  // no refs although dispatched
    EXPECT_EQ(issueCodes(scanLedger(l.events)), Codes{"identity_conflict"});
  }
  {
    Ledger l = testing::newProtocolT1();
    l.response("r", "call-1", "Write", "op-other");
    EXPECT_EQ(issueCodes(scanLedger(l.events)), Codes{"identity_conflict"});
  }
}

TEST(LedgerScanner, Step8RecoveryFactsAttachByPayloadOperationIdOnly) {
  Ledger l = testing::newProtocolT1();
  // refs name another tool call; attachment still follows payload.operationId.
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state",
              [](Json& j) { j["refs"]["toolCallId"] = "call-9"; });
  LedgerScan scan = scanLedger(l.events);
  EXPECT_TRUE(scan.issues.empty());
  EXPECT_EQ(scan.operations[0].reconciles, std::vector<size_t>{3});
}

TEST(LedgerScanner, Step8RecoveryFactForUnknownOperationIsTopLevelEventOrderConflict) {
  Ledger l = testing::newProtocolT1();
  l.reconcile("rec", "op-unknown", "call-1", "matches_prior_state");
  l.decision("dec", "op-unknown", "call-1", "parked", "reconcile_matches_prior_state",
             {"op-1_call", "op-1_dispatch", "rec"});
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(scan.issues, (std::vector<ResolverIssue>{{"event_order_conflict", "rec"},
                                                     {"event_order_conflict", "dec"}}));
  EXPECT_TRUE(scan.operations[0].issueCodes.empty());
  EXPECT_TRUE(scan.operations[0].reconciles.empty());
}

TEST(LedgerScanner, Step8RecoveryFactBeforeDispatchIsUnknownOperation) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(scan.issues, (std::vector<ResolverIssue>{{"event_order_conflict", "rec"}}));
}

// ---- recovery tail (c.4) and bundle validation (f.6) --------------------------------------

using testing::completedBundle;

using testing::parkedBundle;

std::string validateCompleted(const Ledger& l) {
  return detail::validateRecoveryBundle(l.events[1], l.events[2], l.events[3], &l.events[4],
                                        l.events[5]);
}
std::string validateParked(const Ledger& l, const RuntimeEvent* outcome = nullptr) {
  return detail::validateRecoveryBundle(l.events[1], l.events[2], l.events[3], outcome,
                                        l.events[4]);
}

TEST(RecoveryBundleValidation, ValidCompletedAndParkedBundlesPass) {
  EXPECT_EQ(validateCompleted(completedBundle()), "");
  EXPECT_EQ(validateParked(parkedBundle()), "");
  EXPECT_EQ(validateParked(parkedBundle("diverged", "reconcile_diverged")), "");
  EXPECT_EQ(validateParked(parkedBundle("unreadable", "reconcile_unreadable")), "");
}

TEST(RecoveryBundleValidation, CallIdentityConflict) {
  Ledger l = completedBundle();
  l.events[1] = decodeRuntimeEvent([&] {
    Json j = l.events[1].json;
    j["turnId"] = "turn-x";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "call_identity_conflict");
  // Explicit identity (store form): call event id differs from the operation row.
  Ledger ok = completedBundle();
  auto id = detail::recoveryIdentityFromDispatch(ok.events[1], ok.events[2]);
  id.callEventId = "other_call";
  EXPECT_EQ(detail::validateRecoveryBundle(id, ok.events[1], ok.events[2], ok.events[3],
                                           &ok.events[4], ok.events[5]),
            "call_identity_conflict");
}

TEST(RecoveryBundleValidation, CanonicalArgsHashConflict) {
  Ledger l = completedBundle();
  l.events[1] = decodeRuntimeEvent([&] {
    Json j = l.events[1].json;
    j["content"]["args"]["path"] = "elsewhere.txt";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "canonical_args_hash_conflict");
}

TEST(RecoveryBundleValidation, DispatchIdentityConflict) {
  Ledger l = completedBundle();
  auto id = detail::recoveryIdentityFromDispatch(l.events[1], l.events[2]);
  id.dispatchEventId = "another_dispatch";
  EXPECT_EQ(detail::validateRecoveryBundle(id, l.events[1], l.events[2], l.events[3], &l.events[4],
                                           l.events[5]),
            "dispatch_identity_conflict");
  l.events[2] = decodeRuntimeEvent([&] {
    Json j = l.events[2].json;
    j["refs"]["operationId"] = "op-x";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "dispatch_identity_conflict");
}

TEST(RecoveryBundleValidation, RecoveryModeUnsupported) {
  Ledger l = testing::newProtocolT1("never_auto_retry");
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
             {"op-1_call", "op-1_dispatch", "rec"});
  EXPECT_EQ(validateParked(l), "recovery_mode_unsupported");
}

TEST(RecoveryBundleValidation, ReconcileFactInvalidWhenNotAReconcileResult) {
  Ledger l = completedBundle();
  // The decision passed as the reconcile fact.
  EXPECT_EQ(detail::validateRecoveryBundle(l.events[1], l.events[2], l.events[5], &l.events[4],
                                           l.events[5]),
            "reconcile_fact_invalid");
}

TEST(RecoveryBundleValidation, DecisionFactInvalidWhenNotARecoveryDecision) {
  Ledger l = completedBundle();
  EXPECT_EQ(detail::validateRecoveryBundle(l.events[1], l.events[2], l.events[3], &l.events[4],
                                           l.events[3]),
            "decision_fact_invalid");
}

TEST(RecoveryBundleValidation, RecoveryFactIdentityConflict) {
  Ledger l = completedBundle();
  l.events[3] = decodeRuntimeEvent([&] {
    Json j = l.events[3].json;
    j["refs"]["toolCallId"] = "call-x";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "recovery_fact_identity_conflict");
  Ledger m = completedBundle();
  m.events[5] = decodeRuntimeEvent([&] {
    Json j = m.events[5].json;
    j["runId"] = "run-x";
    return j;
  }());
  EXPECT_EQ(validateCompleted(m), "recovery_fact_identity_conflict");
}

TEST(RecoveryBundleValidation, OperationIdentityConflict) {
  Ledger l = completedBundle();
  l.events[5] = decodeRuntimeEvent([&] {
    Json j = l.events[5].json;
    j["actions"]["toolRecovery"]["payload"]["operationId"] = "op-x";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "operation_identity_conflict");
}

TEST(RecoveryBundleValidation, CompletedOutcomeRequired) {
  Ledger l = completedBundle();
  EXPECT_EQ(
      detail::validateRecoveryBundle(l.events[1], l.events[2], l.events[3], nullptr, l.events[5]),
      "outcome_required");
}

TEST(RecoveryBundleValidation, CompletedOutcomeIdentityConflict) {
  Ledger l = completedBundle();
  l.events[4] = decodeRuntimeEvent([&] {
    Json j = l.events[4].json;
    j["refs"]["operationId"] = "op-x";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "outcome_identity_conflict");
}

TEST(RecoveryBundleValidation, CompletedOutcomeNotSuccessful) {
  Ledger l = completedBundle();
  l.events[4] = decodeRuntimeEvent([&] {
    Json j = l.events[4].json;
    j["content"]["isError"] = true;
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "outcome_not_successful");
}

TEST(RecoveryBundleValidation, CompletedOutcomeReferenceConflict) {
  Ledger l = completedBundle();
  l.events[5] = decodeRuntimeEvent([&] {
    Json j = l.events[5].json;
    j["actions"]["toolRecovery"]["payload"]["outcomeEventId"] = "other";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "outcome_reference_conflict");
}

TEST(RecoveryBundleValidation, CompletedRequiresMatchesExpectedState) {
  Ledger l = completedBundle();
  l.events[3] = decodeRuntimeEvent([&] {
    Json j = l.events[3].json;
    j["actions"]["toolRecovery"]["payload"]["observation"] = "diverged";
    return j;
  }());
  EXPECT_EQ(validateCompleted(l), "reconcile_decision_conflict");
}

TEST(RecoveryBundleValidation, ParkedWithOutcomeIsOutcomeForParked) {
  Ledger l = parkedBundle();
  Ledger withOutcome = completedBundle();
  EXPECT_EQ(validateParked(l, &withOutcome.events[4]), "outcome_for_parked");
}

TEST(RecoveryBundleValidation, ParkedReasonMustMapTheObservation) {
  EXPECT_EQ(validateParked(parkedBundle("diverged", "reconcile_unreadable")),
            "reconcile_decision_conflict");
  EXPECT_EQ(validateParked(parkedBundle("matches_expected_state", "reconcile_matches_prior_state")),
            "reconcile_decision_conflict");
}

TEST(RecoveryBundleValidation, EvidenceOrderConflict) {
  Ledger l = testing::newProtocolT1();
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
             {"op-1_dispatch", "op-1_call", "rec"});
  EXPECT_EQ(validateParked(l), "evidence_order_conflict");
  Ledger c = testing::newProtocolT1();
  c.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  c.response("op-1_response", "call-1", "Write", "op-1");
  c.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec"}, "op-1_response");  // outcome missing
  EXPECT_EQ(validateCompleted(c), "evidence_order_conflict");
}

TEST(RecoveryBundleValidation, FirstFailingCodeWins) {
  // Wrong evidence AND wrong payload operation id AND unsupported mode: the earliest wins.
  Ledger l = testing::newProtocolT1("idempotent");
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  l.decision("dec", "op-x", "call-1", "parked", "reconcile_matches_prior_state", {"zzz"});
  EXPECT_EQ(validateParked(l), "recovery_mode_unsupported");
}

TEST(RecoveryTail, AbsentWithoutRecoveryFacts) {
  Ledger l = testing::newProtocolT1();
  LedgerScan scan = scanLedger(l.events);
  EXPECT_FALSE(detail::interpretRecoveryTail(l.events, scan.operations[0]).has_value());
}

TEST(RecoveryTail, ValidCompletedAndParked) {
  Ledger c = completedBundle();
  auto tail = detail::interpretRecoveryTail(c.events, scanLedger(c.events).operations[0]);
  ASSERT_TRUE(tail && tail->valid);
  EXPECT_EQ(tail->disposition, "completed");
  EXPECT_EQ(tail->reasonCode, "reconcile_matches_expected_state");
  EXPECT_EQ(tail->outcome, 4u);
  Ledger p = parkedBundle("unreadable", "reconcile_unreadable");
  tail = detail::interpretRecoveryTail(p.events, scanLedger(p.events).operations[0]);
  ASSERT_TRUE(tail && tail->valid);
  EXPECT_EQ(tail->disposition, "parked");
  EXPECT_EQ(tail->reasonCode, "reconcile_unreadable");
}

TEST(RecoveryTail, DecisionWithoutReconcileIsRecoveryFactShapeConflict) {
  Ledger l = testing::newProtocolT1();
  l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
             {"op-1_call", "op-1_dispatch", "rec"});
  auto tail = detail::interpretRecoveryTail(l.events, scanLedger(l.events).operations[0]);
  ASSERT_TRUE(tail);
  EXPECT_FALSE(tail->valid);
  EXPECT_EQ(tail->code, "recovery_fact_shape_conflict");
}

TEST(RecoveryTail, TwoReconcilesIsRecoveryFactShapeConflict) {
  Ledger l = parkedBundle();
  l.reconcile("rec2", "op-1", "call-1", "matches_prior_state");
  auto tail = detail::interpretRecoveryTail(l.events, scanLedger(l.events).operations[0]);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->code, "recovery_fact_shape_conflict");
}

TEST(RecoveryTail, OrphanDispatchOperationWithFactsIsRecoveryFactShapeConflict) {
  Ledger l;
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state", {"c", "d", "rec"});
  auto tail = detail::interpretRecoveryTail(l.events, scanLedger(l.events).operations[0]);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->code, "recovery_fact_shape_conflict");
}

TEST(RecoveryTail, OutcomeAfterDecisionIsEventOrderConflict) {
  Ledger l = testing::newProtocolT1();
  l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  l.response("op-1_response", "call-1", "Write", "op-1");
  auto tail = detail::interpretRecoveryTail(l.events, scanLedger(l.events).operations[0]);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->code, "event_order_conflict");
}

TEST(RecoveryTail, OutcomeBeforeReconcileIsEventOrderConflict) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  auto tail = detail::interpretRecoveryTail(l.events, scanLedger(l.events).operations[0]);
  ASSERT_TRUE(tail);
  EXPECT_EQ(tail->code, "event_order_conflict");
}

TEST(LedgerScanner, ScanningTwiceIsDeterministic) {
  Ledger l = completedBundle();
  l.call("c2", "call-2", "Bash", Json::object());
  l.response("r-orphan", "call-9", "Bash");
  LedgerScan a = scanLedger(l.events);
  LedgerScan b = scanLedger(l.events);
  EXPECT_EQ(a.issues, b.issues);
  ASSERT_EQ(a.operations.size(), b.operations.size());
  for (size_t i = 0; i < a.operations.size(); ++i) {
    EXPECT_EQ(a.operations[i].toolCallId, b.operations[i].toolCallId);
    EXPECT_EQ(a.operations[i].issueCodes, b.operations[i].issueCodes);
  }
}

TEST(LedgerScanner, LargeLedgerGrowsIndexesWithoutLosingOperations) {
  Ledger l;
  l.user("user-1", true);
  for (int i = 0; i < 3000; ++i) {
    std::string c = "call-" + std::to_string(i);
    Json args = {{"n", i}};
    l.call(c + "_call", c, "Bash", args);
    l.dispatch(c + "_dispatch", "op-" + std::to_string(i), c, "Bash", args, "never_auto_retry");
    l.response(c + "_response", c, "Bash", "op-" + std::to_string(i));
  }
  l.call("call-0_call", "dup", "Bash", Json::object());  // duplicate id at the end
  LedgerScan scan = scanLedger(l.events);
  EXPECT_EQ(scan.issues, (std::vector<ResolverIssue>{{"duplicate_event_id", "call-0_call"}}));
  ASSERT_EQ(scan.operations.size(), 3000u);
  for (const auto& op : scan.operations) {
    ASSERT_TRUE(op.call && op.dispatch && op.response);
  }
}

}  // namespace
}  // namespace crashsim
