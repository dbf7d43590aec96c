// Planner (e.1, e.2, e.5, e.6): host gates, candidate selection, boundary gates in order,
// continue plans, read-only planning.
#include <cstdlib>

#include "continuation_test_util.h"

using namespace crashsim;
using namespace ctest;

namespace {

struct Fixture : ::testing::Test {
  TempStore ts{"planner"};
  Host h;
  RuntimeStore& s() { return *ts; }
};

ContinuationPlan planOne(Fixture& f, const RunIds& r, std::optional<int64_t> hw = {}) {
  return planContinuation(f.s(), r.session, r.run, f.h.host(), hw);
}

}  // namespace

TEST_F(Fixture, ResumeIsOnByDefaultAndEnvZeroGivesResumeFeatureDisabled) {
  makeFailedRun(s(), "s1", "r1", 10);
  ContinuationHost host = h.host();
  host.enabled.reset();
  ::unsetenv("CRASHSIM_SAFE_BOUNDARY_RESUME");
  EXPECT_TRUE(safeBoundaryResumeEnabled(host));
  EXPECT_EQ(planLatestContinuation(s(), "s1", host).decision, "continue");
  ::setenv("CRASHSIM_SAFE_BOUNDARY_RESUME", "0", 1);
  ContinuationPlan p = planLatestContinuation(s(), "s1", host);
  ::unsetenv("CRASHSIM_SAFE_BOUNDARY_RESUME");
  EXPECT_EQ(p.decision, "park");
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"resume_feature_disabled"});
  ASSERT_EQ(p.diagnostics.size(), 1u);
  EXPECT_EQ(p.diagnostics[0].code, "resume_feature_disabled");
}

TEST_F(Fixture, NoFailedRunIsResumeCandidateMissing) {
  RunIds r = ids("s1", "r1");
  s().createRun(header(r, 10));
  s().append(r.user("hi"));
  ContinuationPlan p = planLatestContinuation(s(), "s1", h.host());
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"resume_candidate_missing"});
}

TEST_F(Fixture, CandidateIsNewestFailedRunByCreatedAtThenRunIdDesc) {
  makeFailedRun(s(), "s1", "r-a", 10);
  makeFailedRun(s(), "s1", "r-b", 30);
  makeFailedRun(s(), "s1", "r-c", 30);
  makeFailedRun(s(), "s1", "r-d", 20);
  ContinuationPlan p = planLatestContinuation(s(), "s1", h.host());
  EXPECT_EQ(p.sourceRunId, "r-c");
  EXPECT_EQ(p.decision, "continue");
}

TEST_F(Fixture, MissingInspectorOrThrowingInspectorIsSafetyObservationUnavailable) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  ContinuationHost host = h.host();
  host.inspector = nullptr;
  EXPECT_EQ(planContinuation(s(), "s1", "r1", host).rejectionReasons,
            std::vector<std::string>{"safety_observation_unavailable"});
  host.inspector = []() -> SafetyFacts { throw std::runtime_error("no inspector"); };
  EXPECT_EQ(planContinuation(s(), "s1", "r1", host).rejectionReasons,
            std::vector<std::string>{"safety_observation_unavailable"});
  (void)r;
}

TEST_F(Fixture, UnknownSourceIsSourceRunUnreadable) {
  EXPECT_EQ(planContinuation(s(), "s1", "nope", h.host()).rejectionReasons,
            std::vector<std::string>{"source_run_unreadable"});
}

TEST_F(Fixture, HeaderWithoutWorkspaceIdentityIsWorkspaceIdentityMissing) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  hd.workspaceIdentity.reset();
  s().createRun(hd);
  s().append(r.user("x"));
  finishFailed(s(), r, hd);
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"workspace_identity_missing"});
}

TEST_F(Fixture, ContinuePlanHasFreshIdsInOrderSafetySnapshotAndIsReadOnly) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  h.facts.availableToolNames = {"Write", "Bash", "Write", "Read"};
  const std::string before = s().ledgerHash();
  ContinuationPlan p = planOne(*this, r);
  ContinuationPlan p2 = planOne(*this, r);
  EXPECT_EQ(s().ledgerHash(), before);  // planning is read-only
  ASSERT_EQ(p.decision, "continue") << p.toJson().dump();
  EXPECT_EQ(p.invocationId, "new-1");
  EXPECT_EQ(p.runId, "new-2");
  EXPECT_EQ(p.turnId, "new-3");
  EXPECT_EQ(p.claimId, "new-4");
  EXPECT_EQ(p.sourceInvocationId, r.invocation);
  EXPECT_EQ(p.sourceTurnId, r.turn);
  EXPECT_EQ(p.sourceRuntimeEventHighWater, 4);
  EXPECT_EQ(p.safetySnapshot.availableToolNames,
            (std::vector<std::string>{"Bash", "Read", "Write"}));
  EXPECT_EQ(p.safetySnapshot.workspaceIdentity, kWorkspace);
  EXPECT_TRUE(p.rejectionReasons.empty());
  EXPECT_EQ(p.runtimeContext.size(), 4u);  // user, call, response, terminal
  EXPECT_EQ(p.providerItems.size(), 3u);
  EXPECT_EQ(p.providerReplayDigest, p2.providerReplayDigest);
  EXPECT_EQ(p.boundary->manifestDigest, p2.boundary->manifestDigest);
  EXPECT_TRUE(p.sourceRuntimeContext.empty());  // single segment
}

TEST_F(Fixture, UnsettledSegmentIsRuntimeLedgerUnreadableWithSegmentMessage) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  s().createRun(hd);
  appendAll(s(), {r.user("x"), r.call("c1", "Bash", {{"command", "rm"}})});  // legacy dangling
  finishFailed(s(), r, hd);
  ContinuationPlan p = planOne(*this, r);
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"runtime_ledger_unreadable"});
  ASSERT_TRUE(p.diagnostics[0].detail);
  EXPECT_NE(p.diagnostics[0].detail->dump().find(
                "continuation replay segment 0 is not replayable: tool_recovery_unsettled"),
            std::string::npos);
}

TEST_F(Fixture, NonSuffixGapParksProviderReplayNonSuffixGap) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  s().createRun(hd);
  appendAll(s(), {r.user("x", true), r.call("c1", "Write", {{"path", "a"}}),
                  r.call("c2", "Read", {{"path", "b"}}), r.response("c2", "Read", "text")});
  finishFailed(s(), r, hd);
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"provider_replay_non_suffix_gap"});
}

TEST_F(Fixture, UnansweredPermissionRequestIsPendingPermission) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  s().createRun(hd);
  Json perm = r.base("perm-1", "system", "system");
  perm["actions"] = Json{{"permissionRequest", {{"requestId", "req-1"}, {"toolName", "Bash"}}}};
  appendAll(s(), {r.user("x"), decodeRuntimeEvent(perm)});
  finishFailed(s(), r, hd);
  ContinuationPlan p = planOne(*this, r);
  EXPECT_EQ(p.decision, "park");
  EXPECT_EQ(p.rejectionReasons.front(), "pending_permission");
}

TEST_F(Fixture, ExpectedHighWaterOrCheckpointMismatchIsRuntimeOffsetMismatch) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  ContinuationPlan p = planOne(*this, r, 3);
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"runtime_offset_mismatch"});
  EXPECT_EQ(p.diagnostics[0].detail->at("actualRuntimeEventHighWater"), 4);
  EXPECT_EQ(planOne(*this, r, 4).decision, "continue");
  // The checkpoint's high-water takes precedence over the explicit one.
  h.facts.workspaceCheckpoint = WorkspaceCheckpoint{"ref-1", true, 4};
  EXPECT_EQ(planOne(*this, r, 3).decision, "continue");
}

TEST_F(Fixture, HeaderWithoutMatchingTerminalFactIsTerminalRepairFailed) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  hd.status = "failed";
  hd.failureClass = "app_restarted";
  s().createRun(hd);
  appendAll(s(), {r.user("x")});
  ContinuationPlan p = planOne(*this, r);
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"terminal_repair_failed"});
}

TEST_F(Fixture, CwdChangeIsOnlyDiagnosticWorkspaceLocationChanged) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10, "C:\\Proj\\Repo\\");
  ContinuationHost host = h.host();
  host.currentCwd = "c:/proj/repo";
  EXPECT_EQ(planContinuation(s(), "s1", "r1", host).diagnostics.size(), 0u);  // normalised equal
  host.currentCwd = "/moved/repo";
  ContinuationPlan p = planContinuation(s(), "s1", "r1", host);
  EXPECT_EQ(p.decision, "continue");
  ASSERT_EQ(p.diagnostics.size(), 1u);
  EXPECT_EQ(p.diagnostics[0].code, "workspace_location_changed");
  (void)r;
}

TEST_F(Fixture, MarkerIdentityDifferenceIsWorkspaceIdentityMismatch) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  h.facts.workspaceIdentity = kOtherWorkspace;
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"workspace_identity_mismatch"});
}

TEST_F(Fixture, PendingBackgroundOperationIsBackgroundOperationPending) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  h.facts.backgroundOperationsSettled = false;
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"background_operation_pending"});
}

TEST_F(Fixture, CheckpointWithoutRefOrNotRestored) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  h.facts.workspaceCheckpoint = WorkspaceCheckpoint{std::nullopt, true, 4};
  EXPECT_EQ(planOne(*this, r).rejectionReasons, std::vector<std::string>{"workspace_ref_missing"});
  h.facts.workspaceCheckpoint = WorkspaceCheckpoint{"ref", false, 4};
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"checkpoint_restore_failed"});
}

TEST_F(Fixture, MissingToolIsToolCatalogMismatchWithSortedUniqueDetail) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  h.facts.availableToolNames = {"Read"};
  ContinuationPlan p = planOne(*this, r);
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"tool_catalog_mismatch"});
  EXPECT_EQ(p.diagnostics[0].detail->at("unavailableToolNames"), Json::array({"Write"}));
}

TEST_F(Fixture, ModelFirstIsProviderResumeHeadUnsupported) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  s().createRun(hd);
  appendAll(s(), {r.model("I start"), r.user("then you")});
  finishFailed(s(), r, hd);
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"provider_resume_head_unsupported"});
}

TEST_F(Fixture, NoProviderItemsIsHeadThenBoundaryUnsupported) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  s().createRun(hd);
  appendAll(s(), {r.systemText("only system")});
  finishFailed(s(), r, hd);
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            (std::vector<std::string>{"provider_resume_head_unsupported",
                                      "provider_resume_boundary_unsupported"}));
}

TEST_F(Fixture, ReusedIdIsContinuationIdentityReused) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  ContinuationHost host = h.host();
  host.newId = [] { return std::string("r1"); };
  EXPECT_EQ(planContinuation(s(), "s1", "r1", host).rejectionReasons,
            std::vector<std::string>{"continuation_identity_reused"});
  (void)r;
}

TEST_F(Fixture, GateOrderingWhenSeveralApply) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  hd.status = "failed";
  hd.failureClass = "app_restarted";
  s().createRun(hd);
  Json perm = r.base("perm-1", "system", "system");
  perm["actions"] = Json{{"permissionRequest", {{"requestId", "req-1"}}}};
  appendAll(s(), {r.model("first"), r.user("x"), r.call("c", "Write", {}),
                  r.response("c", "Write", 1), decodeRuntimeEvent(perm)});
  h.facts.workspaceIdentity = kOtherWorkspace;
  h.facts.backgroundOperationsSettled = false;
  h.facts.availableToolNames = {};
  h.facts.workspaceCheckpoint = WorkspaceCheckpoint{std::nullopt, false, 9};
  ContinuationPlan p = planOne(*this, r);
  EXPECT_EQ(p.rejectionReasons, (std::vector<std::string>{
                                    "pending_permission", "runtime_offset_mismatch",
                                    "terminal_repair_failed", "workspace_identity_mismatch",
                                    "background_operation_pending", "workspace_ref_missing",
                                    "tool_catalog_mismatch", "provider_resume_head_unsupported"}));
}

TEST_F(Fixture, EarlyParkWinsOverBoundaryGates) {
  // A lineage/ledger error parks before any boundary gate is evaluated.
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  s().createRun(hd);
  appendAll(s(), {r.user("x"), r.call("c1", "Bash", {})});
  finishFailed(s(), r, hd);
  h.facts.workspaceIdentity = kOtherWorkspace;
  EXPECT_EQ(planOne(*this, r).rejectionReasons,
            std::vector<std::string>{"runtime_ledger_unreadable"});
}

TEST_F(Fixture, LegacyContinuationSourceIsContinuationAlreadyExists) {
  RunIds r = makeFailedRun(s(), "s1", "r1", 10);
  RunIds c = ids("s1", "r2");
  RunHeader ch = header(c, 20);
  ch.parentRunId = "r1";
  ch.continuationSource = Json{{"sourceRunId", "r1"}, {"sourceRuntimeEventHighWater", 4}};
  s().createRun(ch);
  ContinuationPlan p = planOne(*this, r);
  EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"continuation_already_exists"});
  EXPECT_EQ(p.diagnostics[0].detail->at("continuationRunId"), "r2");
}
