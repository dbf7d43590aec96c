// resume_plan_test.cpp — Phase 0 ResumePlan (spec d) and the spec b harness ledger table for
// every failpoint prefix P0..P11, legacy and with the new-protocol refinement.
#include "crashsim/resume_plan.h"

#include <gtest/gtest.h>

#include <regex>

#include "crashsim/codes.h"
#include "resolver_fixtures.h"

namespace crashsim {
namespace {

using testing::kWriteArgs;
using testing::Ledger;
using Codes = std::vector<std::string>;

Codes diagnosticCodes(const ResumePlan& p) {
  Codes out;
  for (const auto& d : p.diagnostics) out.push_back(d.code);
  return out;
}

Codes replayIds(const ResumePlan& p, const std::vector<RuntimeEvent>& events) {
  Codes out;
  for (size_t i : p.replayEventIndexes) out.push_back(events[i].id);
  return out;
}

// ---- spec b: harness ledger (legacy) -------------------------------------------------------

// session-Px / invocation-run-Px / run-Px / turn-run-Px: user, call, response, terminal.
Ledger harnessLedger(const std::string& px, bool newProtocol = false) {
  Ledger l;
  l.session = "session-" + px;
  l.invocation = "invocation-run-" + px;
  l.run = "run-" + px;
  l.turn = "turn-run-" + px;
  l.user("user", newProtocol);
  l.call("call", "tool-1", "Bash", Json{{"command", "touch marker"}});
  l.response("response", "tool-1", "Bash");
  l.terminal("terminal");
  return l;
}

struct Failpoint {
  const char* id;
  size_t prefixLength;  // before_function_call=1, after_function_call=2, ..=3, ..=4
};
constexpr Failpoint kFailpoints[] = {{"P0", 1}, {"P1", 2}, {"P2", 2},  {"P3", 2},
                                     {"P4", 2}, {"P5", 3}, {"P6", 3},  {"P7", 3},
                                     {"P8", 3}, {"P9", 4}, {"P10", 4}, {"P11", 4}};

class HarnessLegacyPrefix : public ::testing::TestWithParam<Failpoint> {};

TEST_P(HarnessLegacyPrefix, ResolverDecisionPlanAndReplayMatchSpecTableB) {
  const Failpoint fp = GetParam();
  Ledger full = harnessLedger(fp.id);
  std::vector<RuntimeEvent> prefix(full.events.begin(), full.events.begin() + fp.prefixLength);
  const std::vector<RuntimeEvent> before = prefix;

  ResumePlan plan = buildResumePlan(prefix);
  ResumePlan again = buildResumePlan(prefix);
  EXPECT_EQ(plan, again) << "projected twice, both ResumePlans must be identical";
  EXPECT_EQ(toJson(plan, prefix), toJson(again, prefix));
  EXPECT_EQ(prefix, before) << "projection must not mutate the ledger";
  EXPECT_EQ(plan.sourceRuntimeEventHighWater, fp.prefixLength);
  EXPECT_FALSE(plan.resolution.toolBoundaryProtocol.has_value());

  if (fp.prefixLength == 1) {  // before_function_call
    EXPECT_TRUE(plan.resolution.decisions.empty());
    EXPECT_EQ(plan.disposition, "safe_replay");
    EXPECT_TRUE(plan.operations.empty());
    EXPECT_TRUE(plan.rejectionReasons.empty());
    EXPECT_EQ(replayIds(plan, prefix), Codes{"user"});
  } else if (fp.prefixLength == 2) {  // after_function_call
    ASSERT_EQ(plan.resolution.decisions.size(), 1u);
    EXPECT_EQ(plan.resolution.decisions[0].status, "indeterminate");
    EXPECT_EQ(plan.resolution.decisions[0].reason, code::legacy_dispatch_unknown);
    EXPECT_EQ(plan.disposition, "blocked");
    ASSERT_EQ(plan.operations.size(), 1u);
    EXPECT_EQ(plan.operations[0].status, "indeterminate");
    EXPECT_TRUE(plan.requiresVerification);
    ASSERT_TRUE(plan.directive.has_value());
    EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
    EXPECT_EQ(diagnosticCodes(plan), Codes{"pending_tool_result"});
    EXPECT_EQ(replayIds(plan, prefix), Codes{"user"});  // unresolved call excluded
  } else {
    ASSERT_EQ(plan.resolution.decisions.size(), 1u);
    const ToolDecision& d = plan.resolution.decisions[0];
    EXPECT_EQ(d.status, "completed");
    EXPECT_EQ(d.reason, code::matching_response);
    EXPECT_EQ(d.settlementOrigin, "pre_t1_synthetic");
    EXPECT_EQ(plan.disposition, "safe_replay");
    ASSERT_EQ(plan.operations.size(), 1u);
    EXPECT_EQ(plan.operations[0].status, "succeeded");
    EXPECT_EQ(plan.operations[0].args, Json({{"command", "touch marker"}}));
    EXPECT_TRUE(plan.rejectionReasons.empty());
    EXPECT_TRUE(plan.diagnostics.empty());
    EXPECT_FALSE(plan.directive.has_value());
    if (fp.prefixLength == 3) {
      EXPECT_EQ(replayIds(plan, prefix), (Codes{"user", "call", "response"}));
    } else {  // terminal kept as a canonical fact
      EXPECT_EQ(replayIds(plan, prefix), (Codes{"user", "call", "response", "terminal"}));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SpecB, HarnessLegacyPrefix, ::testing::ValuesIn(kFailpoints),
                         [](const auto& info) { return std::string(info.param.id); });

TEST(HarnessLegacyPrefixFailed, ErrorResponseProjectsFailedOperation) {
  Ledger l;
  l.user("user");
  l.call("call", "tool-1", "Bash", Json{{"command", "touch marker"}});
  l.response("response", "tool-1", "Bash", {}, true);
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.disposition, "safe_replay");
  ASSERT_EQ(plan.operations.size(), 1u);
  EXPECT_EQ(plan.operations[0].status, "failed");
  EXPECT_EQ(plan.operations[0].responseIsError, true);
}

// ---- spec b: new-protocol refinement -------------------------------------------------------

TEST(HarnessNewProtocol, P1CallCommittedSeparatelyIsNotDispatchedAndBlocked) {
  Ledger l;
  l.user("user", true);
  l.call("op-1_call", "call-1", "Write", kWriteArgs);
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.resolution.toolBoundaryProtocol, "t1_after_preflight_v1");
  EXPECT_EQ(plan.resolution.decisions[0].status, "definitely_not_dispatched");
  EXPECT_EQ(plan.resolution.decisions[0].reason, code::new_protocol_before_dispatch);
  EXPECT_EQ(plan.disposition, "blocked");
  EXPECT_EQ(plan.operations[0].status, "not_dispatched");
  EXPECT_EQ(diagnosticCodes(plan), Codes{"tool_not_dispatched"});
  EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
  EXPECT_FALSE(plan.requiresVerification);
  EXPECT_FALSE(plan.directive.has_value());
}

TEST(HarnessNewProtocol, P2toP4DispatchWithoutResponseRequiresReconciliation) {
  for (const char* px : {"P2", "P3", "P4"}) {
    Ledger l = testing::newProtocolT1();
    ResumePlan plan = buildResumePlan(l.events);
    EXPECT_EQ(plan.resolution.decisions[0].status, "indeterminate") << px;
    EXPECT_EQ(plan.resolution.decisions[0].reason, code::dispatch_without_response);
    EXPECT_TRUE(plan.resolution.requiresReconciliation);
    EXPECT_EQ(plan.disposition, "blocked");
    EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
    EXPECT_TRUE(plan.requiresVerification);
    EXPECT_EQ(replayIds(plan, l.events), (Codes{"user-1", "op-1_dispatch"}));
  }
}

TEST(HarnessNewProtocol, P5toP8WithDispatchCompletedNormalT2) {
  Ledger l = testing::newProtocolT1();
  l.response("op-1_response", "call-1", "Write", "op-1");
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.resolution.decisions[0].status, "completed");
  EXPECT_EQ(plan.resolution.decisions[0].reason, code::matching_response);
  EXPECT_EQ(plan.resolution.decisions[0].settlementOrigin, "normal_t2");
  EXPECT_EQ(plan.disposition, "safe_replay");
  EXPECT_EQ(plan.operations[0].status, "succeeded");
}

TEST(HarnessNewProtocol, P10BeforeBundleCommitIsAsP2AfterCommitCompletedOrParked) {
  Ledger before = testing::newProtocolT1();
  before.terminal("terminal");
  EXPECT_EQ(buildResumePlan(before.events).resolution.decisions[0].reason,
            code::dispatch_without_response);

  Ledger completed = testing::newProtocolT1();
  completed.terminal("terminal");
  completed.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  completed.response("op-1_response", "call-1", "Write", "op-1");
  completed.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
                     {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  ResumePlan c = buildResumePlan(completed.events);
  EXPECT_EQ(c.resolution.decisions[0].status, "completed");
  EXPECT_EQ(c.resolution.decisions[0].reason, code::recovery_bundle_completed);
  EXPECT_EQ(c.disposition, "safe_replay");
  EXPECT_EQ(c.operations[0].status, "succeeded");

  Ledger parked = testing::newProtocolT1();
  parked.terminal("terminal");
  parked.reconcile("rec", "op-1", "call-1", "matches_prior_state");
  parked.decision("dec", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
                  {"op-1_call", "op-1_dispatch", "rec"});
  ResumePlan p = buildResumePlan(parked.events);
  EXPECT_EQ(p.resolution.decisions[0].status, "parked");
  EXPECT_EQ(p.resolution.decisions[0].reason, "reconcile_matches_prior_state");
  EXPECT_EQ(p.disposition, "blocked");
  EXPECT_EQ(p.operations[0].status, "parked");
  EXPECT_EQ(diagnosticCodes(p), Codes{"tool_recovery_parked"});
  EXPECT_EQ(p.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
  EXPECT_FALSE(p.requiresVerification);
}

TEST(HarnessNewProtocol, ExpectedHighWaterDifferentFromPrefixIsRuntimeOffsetMismatch) {
  Ledger l = harnessLedger("P6", true);
  ResumePlan plan = buildResumePlan(l.events, 3);
  ASSERT_FALSE(plan.diagnostics.empty());
  EXPECT_EQ(plan.diagnostics[0].code, code::runtime_offset_mismatch);
  EXPECT_EQ(plan.diagnostics[0].detail,
            Json({{"expectedRuntimeEventHighWater", 3}, {"actualRuntimeEventHighWater", 4}}));
  EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::runtime_offset_mismatch)});
  EXPECT_EQ(plan.disposition, "blocked");
  EXPECT_TRUE(buildResumePlan(l.events, 4).rejectionReasons.empty());
}

// ---- spec d rules --------------------------------------------------------------------------

TEST(ResumePlanOperations, HiddenCallsAreExcludedButStillRequireVerification) {
  Ledger l;
  l.user("user");
  l.call("hidden-call", "nested-1", "Bash", Json::object(),
         [](Json& j) { j["modelVisibility"] = "hidden"; });
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_TRUE(plan.operations.empty());
  EXPECT_TRUE(plan.requiresVerification);
  EXPECT_TRUE(plan.directive.has_value());
  EXPECT_EQ(diagnosticCodes(plan), Codes{"pending_tool_result"});
  EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
  EXPECT_EQ(plan.disposition, "blocked");
  EXPECT_EQ(replayIds(plan, l.events), Codes{"user"});
}

TEST(ResumePlanOperations, StatusMappingAndFields) {
  Ledger l;
  l.user("user", true);
  l.call("c1", "call-1", "Read", Json{{"path", "a"}});
  l.response("r1", "call-1", "Read");
  l.call("c2", "call-2", "Read", Json{{"path", "b"}});
  l.response("r2", "call-2", "Read", {}, true);
  l.call("c3", "call-3", "Bash", Json::object());
  ResumePlan plan = buildResumePlan(l.events);
  ASSERT_EQ(plan.operations.size(), 3u);
  EXPECT_EQ(plan.operations[0],
            (PlanOperation{"call-1", "Read", Json{{"path", "a"}}, "succeeded", "c1", "r1", false}));
  EXPECT_EQ(plan.operations[1],
            (PlanOperation{"call-2", "Read", Json{{"path", "b"}}, "failed", "c2", "r2", true}));
  EXPECT_EQ(plan.operations[2], (PlanOperation{"call-3", "Bash", Json::object(), "not_dispatched",
                                               "c3", std::nullopt, std::nullopt}));
}

TEST(ResumePlanDiagnostics, OrphanResponseGivesLedgerCorruptionAndUnmatchedToolResult) {
  Ledger l;
  l.user("user");
  l.response("orphan", "call-9", "Bash");
  ResumePlan plan = buildResumePlan(l.events);
  // no tool_recovery_corruption for an orphan_response decision
  EXPECT_EQ(diagnosticCodes(plan), (Codes{"tool_ledger_corruption", "unmatched_tool_result"}));
  EXPECT_EQ(plan.diagnostics[0].detail, Json({{"issueCode", "orphan_response"}}));
  EXPECT_FALSE(plan.diagnostics[1].detail.has_value());
  EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
  EXPECT_EQ(replayIds(plan, l.events), Codes{"user"});
}

TEST(ResumePlanDiagnostics, OrphanDispatchGivesToolRecoveryCorruption) {
  Ledger l;
  l.user("user", true);
  l.dispatch("d", "op-1", "call-1", "Write", kWriteArgs);
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(diagnosticCodes(plan), (Codes{"tool_ledger_corruption", "tool_recovery_corruption"}));
  EXPECT_EQ(plan.diagnostics[0].detail, Json({{"issueCode", "event_order_conflict"}}));
}

TEST(ResumePlanDiagnostics, AnInvalidRecoveryTailGivesToolRecoveryCorruptionAlone) {
  // Issue #44's example (the reference's whole plan): the only operation's completed bundle
  // names a recoveryMode the tool does not support. The diagnostics follow from the decision
  // corruption / recovery_fact_corruption alone; the resolver adds no issue.
  Ledger l = testing::newProtocolT1("never_auto_retry");
  l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.disposition, "blocked");
  ASSERT_EQ(plan.operations.size(), 1u);
  EXPECT_EQ(plan.operations[0].status, "corruption");
  EXPECT_TRUE(plan.resolution.issues.empty());
  EXPECT_EQ(diagnosticCodes(plan), Codes{"tool_recovery_corruption"});
  EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
  EXPECT_FALSE(plan.requiresVerification);
}

TEST(ResumePlanDiagnostics, ToolNameMismatchWithDetail) {
  Ledger l;
  l.user("user");
  l.call("c", "call-1", "Bash", Json::object());
  l.response("r", "call-1", "Read");
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(diagnosticCodes(plan),
            (Codes{"tool_recovery_corruption", "tool_ledger_corruption", "tool_name_mismatch"}));
  EXPECT_EQ(plan.diagnostics[2].detail,
            Json({{"callToolName", "Bash"}, {"responseToolName", "Read"}}));
  EXPECT_EQ(replayIds(plan, l.events), Codes{"user"});  // names differ → not paired
}

TEST(ResumePlanDiagnostics, IssueCodesMapToTheirOwnDiagnostics) {
  Ledger l;
  l.user("user");
  l.text("user", "dup");
  l.call("lane", "call-1", "Bash", Json::object(), [](Json& j) { j["status"] = "failed"; });
  l.text("late", "x", [](Json& j) {
    j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  });
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(diagnosticCodes(plan),
            (Codes{"protocol_marker_invalid", "duplicate_event_id", "semantic_lane_conflict"}));
  EXPECT_EQ(plan.rejectionReasons, Codes{std::string(code::dangling_tool_state)});
  EXPECT_EQ(plan.disposition, "blocked");
}

TEST(ResumePlanDiagnostics, FullOrderAndRejectionReasonsFirstAppearance) {
  Ledger l;
  l.user("user");
  l.call("c-hidden", "h-1", "Bash", Json::object(),
         [](Json& j) { j["modelVisibility"] = "hidden"; });       // hidden indeterminate
  l.call("c1", "call-1", "Bash", Json::object());                 // visible indeterminate
  l.dispatch("d-orphan", "op-9", "call-9", "Write", kWriteArgs);  // orphan dispatch
  l.response("r-orphan", "call-8", "Read");                       // orphan response
  ResumePlan plan = buildResumePlan(l.events, 99);
  EXPECT_EQ(diagnosticCodes(plan),
            (Codes{"runtime_offset_mismatch", "pending_tool_result", "tool_ledger_corruption",
                   "tool_ledger_corruption", "tool_recovery_corruption", "pending_tool_result",
                   "unmatched_tool_result"}));
  EXPECT_EQ(plan.rejectionReasons, (Codes{std::string(code::runtime_offset_mismatch),
                                          std::string(code::dangling_tool_state)}));
  EXPECT_TRUE(plan.requiresVerification);
}

TEST(ResumePlanDirective, FixedTextSaysDoNotRetryAndReadOnly) {
  const std::string directive(kResumeDirective);
  EXPECT_TRUE(std::regex_search(directive, std::regex("Do not retry", std::regex::icase)));
  EXPECT_TRUE(std::regex_search(directive, std::regex("read-only", std::regex::icase)));
}

TEST(ResumePlanHighWater, CountsEveryElementIncludingPartials) {
  Ledger l;
  l.user("user");
  l.text("p", "streaming", [](Json& j) { j["partial"] = true; });
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.sourceRuntimeEventHighWater, 2u);
  EXPECT_EQ(plan.disposition, "safe_replay");
  EXPECT_EQ(replayIds(plan, l.events), Codes{"user"});  // partial dropped
}

TEST(ResumePlanReplay, PairingNeedsLaterNonPartialResponseWithSameIdAndName) {
  Ledger l;
  l.user("user");
  l.response("r-early", "call-1", "Bash", {}, false,
             [](Json& j) { j["invocationId"] = "inv-other"; });  // before any call
  l.call("c1", "call-1", "Bash", Json::object());
  l.text("hidden-text", "h", [](Json& j) { j["modelVisibility"] = "hidden"; });
  l.text("model-text", "visible");
  l.call("c2", "call-2", "Bash", Json::object());
  l.response("r2", "call-2", "Bash");
  l.terminal("terminal");
  ResumePlan plan = buildResumePlan(l.events);
  // call-1 has no later response: neither r-early nor c1 are replayed.
  EXPECT_EQ(replayIds(plan, l.events), (Codes{"user", "model-text", "c2", "r2", "terminal"}));
}

// d.8: an id is paired when a response names the tool of the LATEST earlier call of that id.
// A reused call id whose second call names another tool leaves the id unpaired (the latest call
// before the response is a Read), and an id none of whose calls names the response's tool too:
// nothing of either id is replayed.
TEST(ResumePlanReplay, AnIdIsPairedOnlyByAResponseNamingTheToolOfItsLatestCall) {
  Ledger l;
  l.user("user");
  l.call("c-write", "call-1", "Write", Json::object());
  l.call("c-read", "call-1", "Read", Json::object());  // reused call id, other tool
  l.response("r-write", "call-1", "Write");            // latest call of call-1 is a Read
  l.call("c3", "call-3", "Read", Json::object());
  l.call("c3-again", "call-3", "Write", Json::object());
  l.response("r3", "call-3", "Bash");  // no call of that name: nothing of call-3 is paired
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_TRUE(plan.resolution.hasCorruption);  // duplicate_call
  EXPECT_EQ(plan.disposition, "blocked");
  EXPECT_EQ(replayIds(plan, l.events), (Codes{"user"}));
}

// d.8: pairing is per call id, not per event. Once the id is paired (the latest call before
// r-write is a Write), every visible call and response of the id is replayed, the earlier Read
// call included; the plan is blocked (duplicate call), so j.2 does not bind its replay.
TEST(ResumePlanReplay, APairedIdReplaysEveryCallAndResponseOfTheId) {
  Ledger l;
  l.user("user");
  l.call("c-read", "call-1", "Read", Json::object());
  l.call("c-write", "call-1", "Write", Json::object());
  l.response("r-write", "call-1", "Write");
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.disposition, "blocked");
  EXPECT_EQ(replayIds(plan, l.events), (Codes{"user", "c-read", "c-write", "r-write"}));
}

// A call of the id after its response is still a call of a paired id: it is replayed too
// (blocked plan; spec d.8 says a blocked plan's replay may hold it).
TEST(ResumePlanReplay, ACallAfterItsIdsResponseIsReplayedWithThePairedId) {
  Ledger l;
  l.user("user");
  l.call("c1", "call-1", "Write", Json::object());
  l.response("r1", "call-1", "Write");
  l.call("c1-again", "call-1", "Write", Json::object());
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.disposition, "blocked");
  EXPECT_EQ(replayIds(plan, l.events), (Codes{"user", "c1", "r1", "c1-again"}));
}

// Issue #44: one call id used by two invocations, each Read call answered in its own
// invocation. The plan is safe_replay, and the replay holds both calls and both responses;
// pairing by event (a response with the latest call of its id only) dropped e1 and handed the
// provider e3 without its call, the half pair j.2 forbids in a safe_replay plan.
TEST(ResumePlanReplay, ASafeReplayOfAnIdReusedAcrossInvocationsKeepsEveryPair) {
  Ledger l;
  l.user("u");
  const auto in = [](const char* invocation) {
    return [invocation](Json& j) { j["invocationId"] = invocation; };
  };
  l.call("e1", "c", "Read", Json::object(), in("i"));
  l.call("e2", "c", "Read", Json::object(), in("i2"));
  l.response("e3", "c", "Read", {}, false, in("i"));
  l.response("e4", "c", "Read", {}, false, in("i2"));
  ResumePlan plan = buildResumePlan(l.events);
  EXPECT_EQ(plan.disposition, "safe_replay");
  EXPECT_EQ(replayIds(plan, l.events), (Codes{"u", "e1", "e2", "e3", "e4"}));
}

TEST(ResumePlanDisposition, SafeReplayOnlyWithoutReasonsVerificationOrCorruption) {
  Ledger clean = harnessLedger("P7");
  EXPECT_EQ(buildResumePlan(clean.events).disposition, "safe_replay");
  Ledger corrupt = harnessLedger("P7");
  corrupt.reconcile("rec", "op-unknown", "tool-1", "diverged");  // top-level issue only
  ResumePlan plan = buildResumePlan(corrupt.events);
  EXPECT_TRUE(plan.resolution.hasCorruption);
  EXPECT_EQ(plan.disposition, "blocked");
}

TEST(ResumePlanJson, ShapeMatchesDesignCommandLine) {
  Ledger l = harnessLedger("P2");
  std::vector<RuntimeEvent> prefix(l.events.begin(), l.events.begin() + 2);
  ResumePlan plan = buildResumePlan(prefix, 5);
  Json j = toJson(plan, prefix);
  Json expected = Json::parse(R"({
    "disposition":"blocked",
    "operations":[{"toolCallId":"tool-1","toolName":"Bash","status":"indeterminate",
                   "callRuntimeEventId":"call"}],
    "diagnostics":[{"code":"runtime_offset_mismatch",
                    "detail":{"expectedRuntimeEventHighWater":5,"actualRuntimeEventHighWater":2}},
                   {"code":"pending_tool_result"}],
    "rejectionReasons":["runtime_offset_mismatch","dangling_tool_state"],
    "requiresVerification":true,
    "sourceRuntimeEventHighWater":2,
    "replayRuntimeEventIds":["user"]})");
  expected["directive"] = std::string(kResumeDirective);
  EXPECT_EQ(j, expected);

  Ledger done = harnessLedger("P9");
  Json d = toJson(buildResumePlan(done.events), done.events);
  EXPECT_TRUE(d["directive"].is_null());
  EXPECT_EQ(d["operations"][0],
            Json::parse(R"({"toolCallId":"tool-1","toolName":"Bash","status":"succeeded",
                 "callRuntimeEventId":"call","responseRuntimeEventId":"response",
                 "responseIsError":false})"));
}

}  // namespace
}  // namespace crashsim
