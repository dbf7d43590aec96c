// recovery_resolver_test.cpp — RecoveryResolver (spec c): protocol marker (c.1), decision
// evaluation order and priorities (c.3), recovery tail (c.4), every row of the c.5 decision
// table by name with its exact status/reason strings, and the JSON shape of DESIGN.md.
#include "crashsim/recovery_resolver.h"

#include <gtest/gtest.h>

#include "crashsim/codes.h"
#include "resolver_fixtures.h"

namespace crashsim {
namespace {

using testing::kWriteArgs;
using testing::Ledger;

const ToolDecision& only(const RecoveryResolution& r) {
  EXPECT_EQ(r.decisions.size(), 1u);
  return r.decisions.at(0);
}

std::vector<std::string> issueCodes(const RecoveryResolution& r) {
  std::vector<std::string> out;
  for (const auto& i : r.issues) out.push_back(i.code);
  return out;
}

using Codes = std::vector<std::string>;

using testing::completedBundle;

using testing::parkedBundle;

// ---- c.1 protocol marker -----------------------------------------------------------------

TEST(ResolverProtocolMarker, MarkerOnEventZeroEnablesNewProtocol) {
  Ledger l = testing::newProtocolT1();
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(r.toolBoundaryProtocol, "t1_after_preflight_v1");
  EXPECT_TRUE(r.issues.empty());
}

TEST(ResolverProtocolMarker, NoMarkerIsLegacy) {
  Ledger l;
  l.user("user-1");
  l.call("c", "call-1", "Bash", Json::object());
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_FALSE(r.toolBoundaryProtocol.has_value());
  EXPECT_EQ(only(r).status, "indeterminate");
  EXPECT_EQ(only(r).reason, code::legacy_dispatch_unknown);
}

TEST(ResolverProtocolMarker, UnknownMarkerValueOnEventZeroIsProtocolMarkerInvalid) {
  Ledger l;
  l.user("user-1", false, [](Json& j) {
    j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  });
  // The codec accepts only t1_after_preflight_v1; an unknown value cannot be decoded, so the
  // invalid-marker path is exercised through the typed view.
  l.events[0].runtimeProtocol = "t9_future";
  l.call("c", "call-1", "Bash", Json::object());
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_FALSE(r.toolBoundaryProtocol.has_value());
  EXPECT_EQ(r.issues, (std::vector<ResolverIssue>{{"protocol_marker_invalid", "user-1"}}));
  EXPECT_TRUE(r.hasCorruption);
  EXPECT_EQ(only(r).status, "indeterminate");  // decisions stay legacy
  EXPECT_EQ(only(r).reason, code::legacy_dispatch_unknown);
  EXPECT_FALSE(r.requiresReconciliation);
}

TEST(ResolverProtocolMarker, LateMarkerIsProtocolMarkerInvalidAndNeverEnablesProtocol) {
  Ledger l;
  l.user("user-1");
  l.text("late", "hi", [](Json& j) {
    j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  });
  l.call("c", "call-1", "Bash", Json::object());
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_FALSE(r.toolBoundaryProtocol.has_value());
  EXPECT_EQ(r.issues, (std::vector<ResolverIssue>{{"protocol_marker_invalid", "late"}}));
  EXPECT_EQ(only(r).reason, code::legacy_dispatch_unknown);
  EXPECT_TRUE(r.hasCorruption);
}

TEST(ResolverProtocolMarker, MarkerIssuesPrecedeScannerIssues) {
  Ledger l = testing::newProtocolT1();
  l.response("orphan", "call-9", "Bash");
  l.text("late", "hi", [](Json& j) {
    j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  });
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(issueCodes(r), (Codes{"protocol_marker_invalid", "orphan_response"}));
}

// ---- c.5 decision table, one test per row ------------------------------------------------

TEST(ResolverDecisionTable, CallPlusMatchingResponseNoDispatch_CompletedMatchingResponsePreT1) {
  Ledger l;
  l.user("user-1", true);
  l.call("c", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write", {}, true);  // pre-T1 refusal (permission deny)
  const ToolDecision d = only(resolveRecovery(l.events));
  EXPECT_EQ(d.status, "completed");
  EXPECT_EQ(d.reason, code::matching_response);
  EXPECT_EQ(d.settlementOrigin, "pre_t1_synthetic");
  EXPECT_EQ(d.responseIsError, true);
  EXPECT_FALSE(d.operationId.has_value());
}

TEST(ResolverDecisionTable, CallDispatchMatchingResponse_CompletedMatchingResponseNormalT2) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1");
  RecoveryResolution r = resolveRecovery(l.events);
  const ToolDecision& d = only(r);
  EXPECT_EQ(d.status, "completed");
  EXPECT_EQ(d.reason, code::matching_response);
  EXPECT_EQ(d.settlementOrigin, "normal_t2");
  EXPECT_EQ(d.operationId, "op-1");
  EXPECT_EQ(d.callRuntimeEventId, "op-1_call");
  EXPECT_EQ(d.dispatchRuntimeEventId, "op-1_dispatch");
  EXPECT_EQ(d.responseRuntimeEventId, "op-1_response");
  EXPECT_EQ(d.responseIsError, false);
  EXPECT_FALSE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);
}

TEST(ResolverDecisionTable, CallDispatchNoResponse_IndeterminateDispatchWithoutResponse) {
  Ledger l = testing::newProtocolT1();
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(only(r).status, "indeterminate");
  EXPECT_EQ(only(r).reason, code::dispatch_without_response);
  EXPECT_FALSE(only(r).settlementOrigin.has_value());
  EXPECT_FALSE(only(r).responseIsError.has_value());
  EXPECT_EQ(only(r).recoveryMode, "reconcile");
  EXPECT_TRUE(r.requiresReconciliation);
  EXPECT_FALSE(r.hasCorruption);
}

TEST(ResolverDecisionTable, CallOnlyNewProtocol_DefinitelyNotDispatched) {
  Ledger l;
  l.user("user-1", true);
  l.call("c", "call-1", "Write", kWriteArgs);
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(only(r).status, "definitely_not_dispatched");
  EXPECT_EQ(only(r).reason, code::new_protocol_before_dispatch);
  EXPECT_FALSE(r.requiresReconciliation);
}

TEST(ResolverDecisionTable, CallOnlyLegacy_IndeterminateLegacyDispatchUnknown) {
  Ledger l;
  l.user("user-1");
  l.call("c", "call-1", "Bash", Json{{"command", "touch marker"}});
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(only(r).status, "indeterminate");
  EXPECT_EQ(only(r).reason, code::legacy_dispatch_unknown);
  EXPECT_TRUE(r.requiresReconciliation);
}

TEST(ResolverDecisionTable, CompletedRecoveryBundle_CompletedRecoveryBundleCompleted) {
  Ledger l = completedBundle();
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(only(r).status, "completed");
  EXPECT_EQ(only(r).reason, code::recovery_bundle_completed);
  EXPECT_EQ(only(r).settlementOrigin, "recovery_bundle");
  EXPECT_EQ(only(r).responseRuntimeEventId, "op-1_response");
  EXPECT_FALSE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);
}

TEST(ResolverDecisionTable, ParkedRecoveryBundle_ParkedWithReconcileReason) {
  const std::pair<const char*, const char*> rows[] = {
      {"matches_prior_state", "reconcile_matches_prior_state"},
      {"diverged", "reconcile_diverged"},
      {"unreadable", "reconcile_unreadable"},
  };
  for (const auto& [observation, reason] : rows) {
    Ledger l = parkedBundle(observation, reason);
    RecoveryResolution r = resolveRecovery(l.events);
    EXPECT_EQ(only(r).status, "parked") << observation;
    EXPECT_EQ(only(r).reason, reason);
    EXPECT_EQ(only(r).settlementOrigin, "recovery_bundle");
    EXPECT_FALSE(r.requiresReconciliation);
    EXPECT_FALSE(r.hasCorruption);
  }
}

TEST(ResolverDecisionTable, MalformedRecoveryFacts_CorruptionRecoveryFactCorruption) {
  // missing half
  {
    Ledger l = testing::newProtocolT1();
    l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
    const ToolDecision d = only(resolveRecovery(l.events));
    EXPECT_EQ(d.status, "corruption");
    EXPECT_EQ(d.reason, "recovery_fact_corruption");
    EXPECT_FALSE(d.settlementOrigin.has_value());
  }
  // wrong order (outcome after decision)
  {
    Ledger l = testing::newProtocolT1();
    l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
    l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
               {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
    l.response("op-1_response", "call-1", "Write", "op-1");
    RecoveryResolution r = resolveRecovery(l.events);
    EXPECT_EQ(only(r).reason, "recovery_fact_corruption");
    EXPECT_FALSE(only(r).settlementOrigin.has_value());  // normal_t2 removed
    EXPECT_TRUE(r.hasCorruption);
  }
  // wrong evidence
  {
    Ledger l = testing::newProtocolT1();
    l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
    l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
               {"op-1_call", "rec"});
    EXPECT_EQ(only(resolveRecovery(l.events)).reason, "recovery_fact_corruption");
  }
  // completed decision whose outcome is an error
  {
    Ledger l = testing::newProtocolT1();
    l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
    l.response("op-1_response", "call-1", "Write", "op-1", true);
    l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
               {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
    EXPECT_EQ(only(resolveRecovery(l.events)).reason, "recovery_fact_corruption");
  }
  // parked after a normal T2 outcome
  {
    Ledger l = testing::newProtocolT1();
    l.response("op-1_response", "call-1", "Write", "op-1");
    l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
    l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
               {"op-1_call", "op-1_dispatch", "rec"});
    EXPECT_EQ(only(resolveRecovery(l.events)).reason, "recovery_fact_corruption");
  }
}

TEST(ResolverDecisionTable, DispatchWithoutCall_CorruptionOrphanDispatch) {
  Ledger l;
  l.user("user-1", true);
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(only(r).status, "corruption");
  EXPECT_EQ(only(r).reason, "orphan_dispatch");
  EXPECT_EQ(only(r).dispatchRuntimeEventId, "d");
  EXPECT_FALSE(only(r).callRuntimeEventId.has_value());
  EXPECT_EQ(issueCodes(r), Codes{"event_order_conflict"});
}

TEST(ResolverDecisionTable, ResponseWithoutCall_CorruptionOrphanResponse) {
  Ledger l;
  l.user("user-1");
  l.response("r", "call-1", "Bash");
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(only(r).status, "corruption");
  EXPECT_EQ(only(r).reason, "orphan_response");
  EXPECT_EQ(only(r).responseIsError, false);
  EXPECT_EQ(r.issues, (std::vector<ResolverIssue>{{"orphan_response", "r"}}));
}

TEST(ResolverDecisionTable, SecondCallSameInvocationAndCallId_CorruptionDuplicateCall) {
  Ledger l;
  l.call("c1", "call-1", "Bash", Json::object());
  l.call("c2", "call-1", "Bash", Json::object());
  l.response("r", "call-1", "Bash");
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "duplicate_call");
  EXPECT_EQ(only(resolveRecovery(l.events)).status, "corruption");
}

TEST(ResolverDecisionTable, TwoCallsDispatchesShareOperationId_CorruptionDuplicateOperation) {
  Ledger l = testing::newProtocolT1();
  l.call("c2", "call-2", "Write", kWriteArgs);
  l.dispatch("d2", "op-1", "call-2", "Write", kWriteArgs);
  RecoveryResolution r = resolveRecovery(l.events);
  ASSERT_EQ(r.decisions.size(), 2u);
  for (const ToolDecision& d : r.decisions) {
    EXPECT_EQ(d.status, "corruption");
    EXPECT_EQ(d.reason, "duplicate_operation");
  }
}

TEST(ResolverDecisionTable, SecondDispatchSameCall_CorruptionDuplicateDispatch) {
  Ledger l = testing::newProtocolT1();
  l.dispatch("d2", "op-1", "call-1", "Write", kWriteArgs);
  const ToolDecision d = only(resolveRecovery(l.events));
  EXPECT_EQ(d.status, "corruption");
  EXPECT_EQ(d.reason, "duplicate_dispatch");
  EXPECT_EQ(d.dispatchRuntimeEventId, "op-1_dispatch");
}

TEST(ResolverDecisionTable, SecondResponseSameCall_CorruptionDuplicateResponse) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.response("op-1_response_2", "call-1", "Write", "op-1");
  const ToolDecision d = only(resolveRecovery(l.events));
  EXPECT_EQ(d.status, "corruption");
  EXPECT_EQ(d.reason, "duplicate_response");
  EXPECT_FALSE(d.settlementOrigin.has_value());
}

TEST(ResolverDecisionTable, DispatchHashDiffers_CorruptionCanonicalArgsHashConflict) {
  Ledger l;
  l.user("user-1", true);
  l.call("c", "call-1", "Write", kWriteArgs);
  l.dispatch("d", "op-1", "call-1", "Write", Json{{"path", "x"}});
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "canonical_args_hash_conflict");
}

TEST(ResolverDecisionTable, ToolNameRefsOrIdentityMismatch_CorruptionIdentityConflict) {
  {  // tool name (response)
    Ledger l = testing::newProtocolT1();
    l.response("r", "call-1", "Edit", "op-1");
    EXPECT_EQ(only(resolveRecovery(l.events)).reason, "identity_conflict");
  }
  {  // refs (dispatch)
    Ledger l;
    l.call("c", "call-1", "Write", kWriteArgs);
    l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs, "reconcile",
               [](Json& j) { j["refs"]["toolCallId"] = "call-2"; });
    EXPECT_EQ(only(resolveRecovery(l.events)).reason, "identity_conflict");
  }
  {  // execution identity (response run differs)
    Ledger l = testing::newProtocolT1();
    l.response("r", "call-1", "Write", "op-1", false, [](Json& j) { j["runId"] = "run-x"; });
    RecoveryResolution r = resolveRecovery(l.events);
    EXPECT_EQ(only(r).reason, "identity_conflict");
    EXPECT_EQ(issueCodes(r), (Codes{"invocation_identity_conflict", "identity_conflict"}));
  }
}

TEST(ResolverDecisionTable, DispatchAfterResponse_CorruptionEventOrderConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write", "op-1");
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  const ToolDecision d = only(resolveRecovery(l.events));
  EXPECT_EQ(d.status, "corruption");
  EXPECT_EQ(d.reason, "event_order_conflict");
}

TEST(ResolverDecisionTable, DispatchBeforeCall_CorruptionEventOrderConflict) {
  Ledger l;
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  l.call("c", "call-1", "Write", kWriteArgs);
  const ToolDecision d = only(resolveRecovery(l.events));
  EXPECT_EQ(d.status, "corruption");
  EXPECT_EQ(d.reason, "event_order_conflict");
  EXPECT_EQ(d.callRuntimeEventId, "c");
}

TEST(ResolverDecisionTable, LateOrInvalidMarker_IssueProtocolMarkerInvalidOnly) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.text("late", "x", [](Json& j) {
    j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  });
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(r.issues, (std::vector<ResolverIssue>{{"protocol_marker_invalid", "late"}}));
  EXPECT_EQ(only(r).status, "completed");  // decision unaffected
  EXPECT_TRUE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);
}

TEST(ResolverDecisionTable, TopLevelIssues_DuplicateIdLaneConflictSpineDriftUnknownRecoveryFact) {
  Ledger l = testing::newProtocolT1();
  l.text("op-1_call", "dup id");  // duplicate_event_id
  l.call("lane", "call-2", "Bash", Json::object(), [](Json& j) { j["branch"] = "b"; });  // lane
  l.text("drift", "x", [](Json& j) { j["turnId"] = "turn-2"; });  // invocation spine drift
  l.reconcile("rec", "op-unknown", "call-1", "diverged");         // unknown operation
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(r.issues, (std::vector<ResolverIssue>{{"duplicate_event_id", "op-1_call"},
                                                  {"semantic_lane_conflict", "lane"},
                                                  {"invocation_identity_conflict", "drift"},
                                                  {"event_order_conflict", "rec"}}));
  EXPECT_EQ(only(r).status, "indeterminate");  // the operation itself is untouched
  EXPECT_EQ(only(r).reason, code::dispatch_without_response);
  EXPECT_TRUE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);  // corruption suppresses reconciliation
}

// ---- c.3 evaluation order and issue priority ---------------------------------------------

TEST(ResolverEvaluationOrder, OrphanDispatchBeatsIssuePriority) {
  Ledger l;
  l.dispatch("d1", "op-1", "call-1", "Write", kWriteArgs);
  l.dispatch("d2", "op-1", "call-1", "Write", kWriteArgs);  // duplicate_dispatch as well
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "orphan_dispatch");
}

TEST(ResolverEvaluationOrder, OrphanResponseBeforeDuplicateResponse) {
  Ledger l;
  l.response("r1", "call-1", "Bash");
  l.response("r2", "call-1", "Bash");
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "orphan_response");
}

TEST(ResolverEvaluationOrder, DuplicateCallOutranksEverythingElse) {
  Ledger l;
  l.call("c1", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write");
  l.dispatch("d", "op-1", "call-1", "Write", Json{{"x", 1}});  // order + hash + identity
  l.call("c2", "call-1", "Write", kWriteArgs);                 // duplicate_call
  RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(issueCodes(r), (Codes{"canonical_args_hash_conflict", "event_order_conflict",
                                  "identity_conflict", "duplicate_call"}));
  EXPECT_EQ(only(r).reason, "duplicate_call");
}

TEST(ResolverEvaluationOrder, DuplicateDispatchOutranksDuplicateResponse) {
  Ledger l = testing::newProtocolT1();
  l.response("r1", "call-1", "Write", "op-1");
  l.response("r2", "call-1", "Write", "op-1");
  l.dispatch("d2", "op-1", "call-1", "Write", kWriteArgs);
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "duplicate_dispatch");
}

TEST(ResolverEvaluationOrder, HashConflictOutranksIdentityAndOrder) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write");
  l.dispatch("d", "op-1", "call-1", "Write", Json{{"x", 1}});
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "canonical_args_hash_conflict");
}

TEST(ResolverEvaluationOrder, IdentityConflictOutranksEventOrderConflict) {
  Ledger l;
  l.call("c", "call-1", "Write", kWriteArgs);
  l.response("r", "call-1", "Write");  // unbound → identity conflict when the dispatch lands
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "identity_conflict");
}

TEST(ResolverEvaluationOrder, ScannerIssueWinsOverValidRecoveryTail) {
  Ledger l = completedBundle();
  l.response("again", "call-1", "Write", "op-1");
  EXPECT_EQ(only(resolveRecovery(l.events)).reason, "duplicate_response");
}

TEST(ResolverEvaluationOrder, DecisionsFollowScannerOperationOrder) {
  Ledger l;
  l.user("user-1", true);
  l.response("orphan", "call-0", "Read");
  l.call("c1", "call-1", "Bash", Json::object());
  l.call("c2", "call-2", "Read", Json::object());
  l.response("r2", "call-2", "Read");
  RecoveryResolution r = resolveRecovery(l.events);
  ASSERT_EQ(r.decisions.size(), 3u);
  EXPECT_EQ(r.decisions[0].toolCallId, "call-0");
  EXPECT_EQ(r.decisions[1].toolCallId, "call-1");
  EXPECT_EQ(r.decisions[1].status, "definitely_not_dispatched");
  EXPECT_EQ(r.decisions[2].status, "completed");
}

TEST(ResolverFlags, HasCorruptionFromDecisionAloneAndRequiresReconciliationOnlyWhenClean) {
  Ledger l = testing::newProtocolT1();  // indeterminate
  l.reconcile("rec2", "op-1", "call-1", "diverged");
  l.call("c2", "call-2", "Write", kWriteArgs);
  l.dispatch("d2", "op-2", "call-2", "Write", kWriteArgs);
  RecoveryResolution r = resolveRecovery(l.events);
  // Half a recovery tail: the decision alone is corruption (c.3 step 7); issues hold scanner
  // codes only (c.2), and why the tail fails is reported beside them.
  EXPECT_TRUE(r.issues.empty());
  EXPECT_EQ(
      r.recoveryTails,
      (std::vector<RecoveryTailCheck>{{"op-1", "call-1", "rec2", "recovery_fact_shape_conflict"}}));
  EXPECT_EQ(r.decisions[0].status, "corruption");
  EXPECT_EQ(r.decisions[0].reason, "recovery_fact_corruption");
  EXPECT_EQ(r.decisions[1].status, "indeterminate");
  EXPECT_TRUE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);
}

// Issue #44's example, as the reference resolves it: the only operation has a completed bundle
// whose dispatch's recoveryMode the tool does not support (f.6: recovery_mode_unsupported).
Ledger unsupportedModeCompletedBundle() {
  Ledger l = testing::newProtocolT1("never_auto_retry");
  l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  return l;
}

TEST(ResolverRecoveryTails, AnInvalidTailIsADecisionNotAnIssue) {
  const RecoveryResolution r = resolveRecovery(unsupportedModeCompletedBundle().events);
  EXPECT_EQ(only(r).status, "corruption");
  EXPECT_EQ(only(r).reason, "recovery_fact_corruption");
  EXPECT_TRUE(r.issues.empty());
  EXPECT_TRUE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);
  EXPECT_EQ(
      r.recoveryTails,
      (std::vector<RecoveryTailCheck>{{"op-1", "call-1", "rec", "recovery_mode_unsupported"}}));
  // The contract's resolution JSON has no such member; the tail list serialises on its own.
  EXPECT_FALSE(toJson(r).contains("recoveryTails"));
  EXPECT_EQ(toJson(r.recoveryTails), Json::parse(R"([{"operationId":"op-1","toolCallId":"call-1",
      "firstRecoveryFactEventId":"rec","result":"recovery_mode_unsupported"}])"));
}

TEST(ResolverRecoveryTails, OneEntryPerOperationWithRecoveryFactsValidOrNot) {
  Ledger l = testing::newProtocolT1();
  l.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  l.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
             {"op-1_call", "op-1_dispatch", "rec"});
  l.call("c2", "call-2", "Write", kWriteArgs);  // no recovery facts: no entry
  l.dispatch("d2", "op-2", "call-2", "Write", kWriteArgs);
  const RecoveryResolution r = resolveRecovery(l.events);
  EXPECT_EQ(r.recoveryTails, (std::vector<RecoveryTailCheck>{{"op-1", "call-1", "rec", "valid"}}));
  EXPECT_EQ(r.decisions[0].status, "parked");
  EXPECT_TRUE(r.issues.empty());
}

TEST(ResolverPurity, ResolvingTwiceIsEqualAndInputUnchanged) {
  Ledger l = completedBundle();
  std::vector<RuntimeEvent> before = l.events;
  EXPECT_EQ(resolveRecovery(l.events), resolveRecovery(l.events));
  EXPECT_EQ(l.events, before);
}

TEST(ResolverPurity, EmptyLedger) {
  RecoveryResolution r = resolveRecovery({});
  EXPECT_TRUE(r.decisions.empty());
  EXPECT_FALSE(r.hasCorruption);
  EXPECT_FALSE(r.requiresReconciliation);
  EXPECT_FALSE(r.toolBoundaryProtocol.has_value());
}

// ---- JSON shape (DESIGN.md "Command line") ---------------------------------------------

TEST(ResolverJson, ShapeOmitsAbsentOptionalsAndNullsProtocol) {
  Ledger l;
  l.user("user-1");
  l.call("c", "call-1", "Bash", Json::object());
  Json j = toJson(resolveRecovery(l.events));
  EXPECT_EQ(j, Json::parse(R"({"toolBoundaryProtocol":null,
      "decisions":[{"toolCallId":"call-1","toolName":"Bash","status":"indeterminate",
                    "reason":"legacy_dispatch_unknown","callRuntimeEventId":"c"}],
      "issues":[],"hasCorruption":false,"requiresReconciliation":true})"));
}

TEST(ResolverJson, FullDecision) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1", true);
  l.response("dup", "call-1", "Write", "op-1");
  Json j = toJson(resolveRecovery(l.events));
  EXPECT_EQ(j, Json::parse(R"({"toolBoundaryProtocol":"t1_after_preflight_v1",
      "decisions":[{"toolCallId":"call-1","toolName":"Write","operationId":"op-1",
                    "status":"corruption","reason":"duplicate_response",
                    "callRuntimeEventId":"op-1_call","dispatchRuntimeEventId":"op-1_dispatch",
                    "responseRuntimeEventId":"op-1_response","responseIsError":true}],
      "issues":[{"code":"duplicate_response","eventId":"dup"}],
      "hasCorruption":true,"requiresReconciliation":false})"));
  Ledger ok = completedBundle();
  EXPECT_EQ(toJson(resolveRecovery(ok.events))["decisions"][0]["settlementOrigin"],
            "recovery_bundle");
}

}  // namespace
}  // namespace crashsim
