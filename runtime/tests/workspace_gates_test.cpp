// workspace_gates_test — the planner's checkpoint gates (workspace-continuity-contract.md e.1–e.4)
// with real git, real files and a real store: one test per row of the e.3 table, j.2 vectors 4
// and 5, the e.4 binding and its revalidation codes. Each expectation is the contract's; each
// test fails without its rule (the plan would continue, or park with another code).
#include "crashsim/workspace_gates.h"

#include <gtest/gtest.h>

#include "continuation_test_util.h"
#include "crashsim/continuation.h"
#include "workspace_run_fixture.h"

using namespace crashsim;
using namespace crashsim::testutil;
using namespace ctest;

namespace {

struct GateFixture : WorkspaceRunFixture {
  GateFixture() : WorkspaceRunFixture("session-gates") {}

  ContinuationPlan plan(const std::string& requirement) {
    return planContinuation(*store, r.session, r.run, host(requirement));
  }

  static std::vector<std::string> diagnosticCodes(const ContinuationPlan& p) {
    std::vector<std::string> out;
    for (const auto& d : p.diagnostics) out.push_back(d.code);
    return out;
  }

  std::string gitCarrier(const std::string& args) {
    return "git --git-dir=" + shellQuoted(storeDir / "workspace" / "carrier.git") + " " + args;
  }
};

}  // namespace

// Row 9 and e.4: a covering checkpoint whose tree matches → continue, bound to (epoch, C, tree);
// the target header carries {protocol, workspaceId, epoch, checkpointId}. The inspector wrote
// nothing: the user's .git, the carrier and the store are byte-identical.
TEST_F(GateFixture, Row9MatchContinuesBoundToTheCoveringCheckpoint) {
  sourceRun();
  const CaptureResult c = capture(4);
  const auto gitBefore = treeBytes(root / ".git");
  const auto carrierBefore = treeBytes(storeDir / "workspace");
  const std::string ledger = store->ledgerHash();
  const ContinuationPlan p = plan("required");
  ASSERT_TRUE(p.isContinue()) << p.toJson().dump();
  const Json want{{"protocol", "crashsim_workspace_binding_v1"},
                  {"workspaceId", workspaceIdForSession(r.session)},
                  {"epoch", 1},
                  {"checkpointId", c.checkpoint.checkpointId},
                  {"treeOid", c.checkpoint.carrier.treeOid}};
  EXPECT_EQ(p.toJson()["safetySnapshot"]["workspaceBoundary"], want);
  EXPECT_EQ(treeBytes(root / ".git"), gitBefore);
  EXPECT_EQ(treeBytes(storeDir / "workspace"), carrierBefore);
  EXPECT_EQ(store->ledgerHash(), ledger);
  const ContinuationExecution ex = executeContinuation(*store, p, host("required"));
  ASSERT_TRUE(ex.targetHeader.workspaceBoundary);
  Json header = want;
  header.erase("treeOid");
  EXPECT_EQ(*ex.targetHeader.workspaceBoundary, header);
  EXPECT_EQ(store->readRun(r.session, p.runId)->workspaceBoundary, header);
}

// Default policy disabled: no gate, no binding — the plan is byte-identical to a host that knows
// nothing of workspaces, even over a drifted workspace with a lineage.
TEST_F(GateFixture, DisabledPolicyLeavesThePlanUnchanged) {
  sourceRun();
  capture(4);
  writeFile(root / "a.txt", "edited\n");
  ContinuationHost plain = h.host();
  plain.currentCwd = root.string();
  const Json before = planContinuation(*store, r.session, r.run, plain).toJson();
  h.idCounter = 0;
  const ContinuationPlan p = plan("disabled");
  EXPECT_EQ(p.toJson(), before);
  EXPECT_TRUE(p.isContinue());
}

// Row 8 (W8): a tracked file edited after the capture → park workspace_drifted with the path;
// the user's .git and the carrier unchanged by the scratch drift check.
TEST_F(GateFixture, Row8EditedTrackedFileParksDrifted) {
  sourceRun();
  capture(4);
  writeFile(root / "a.txt", "edited by the user\n");
  const auto gitBefore = treeBytes(root / ".git");
  const auto carrierBefore = treeBytes(storeDir / "workspace");
  for (const char* requirement : {"optional_legacy", "required"}) {
    const ContinuationPlan p = plan(requirement);
    EXPECT_EQ(p.rejectionReasons, std::vector<std::string>{"workspace_drifted"}) << requirement;
    ASSERT_FALSE(p.diagnostics.empty());
    EXPECT_EQ(p.diagnostics[0].detail->value("paths", Json()), Json::array({"M a.txt"}))
        << p.diagnostics[0].detail->dump();
  }
  EXPECT_EQ(treeBytes(root / ".git"), gitBefore);
  EXPECT_EQ(treeBytes(storeDir / "workspace"), carrierBefore);
}

// Row 8: an untracked file added, and an edited .gitignore (debug.log enters L), drift too.
TEST_F(GateFixture, Row8AddedFileAndEditedGitignoreDrift) {
  sourceRun();
  capture(4);
  writeFile(root / "new.txt", "x\n");
  EXPECT_EQ(plan("optional_legacy").rejectionReasons,
            std::vector<std::string>{"workspace_drifted"});
  fs::remove(root / "new.txt");
  EXPECT_TRUE(plan("optional_legacy").isContinue());
  writeFile(root / ".gitignore", "");
  EXPECT_EQ(plan("optional_legacy").rejectionReasons,
            std::vector<std::string>{"workspace_drifted"});
}

// Row 7 (W7, j.2 vector 5): the ref deleted → workspace_ref_missing under both requirements,
// never no_checkpoint; an emptied object → checkpoint_artifact_corrupt.
TEST_F(GateFixture, Row7MissingRefAndCorruptObjectPark) {
  sourceRun();
  const CaptureResult c = capture(4);
  fixtureShell(gitCarrier("update-ref -d " + c.checkpoint.carrier.refName));
  for (const char* requirement : {"optional_legacy", "required"})
    EXPECT_EQ(plan(requirement).rejectionReasons, std::vector<std::string>{"workspace_ref_missing"})
        << requirement;
  fixtureShell(gitCarrier("update-ref " + c.checkpoint.carrier.refName + " " +
                          c.checkpoint.carrier.commitOid));
  EXPECT_TRUE(plan("required").isContinue());
  // Empty the blob of a.txt ("hello\n").
  const fs::path blob = storeDir / "workspace" / "carrier.git" / "objects" / "ce" /
                        "013625030ba8dba906f756967f9e9ca394464a";
  ASSERT_TRUE(fs::exists(blob));
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  writeFile(blob, "");
  EXPECT_EQ(plan("optional_legacy").rejectionReasons,
            std::vector<std::string>{"checkpoint_artifact_corrupt"});
}

// Row 6 (j.2 vector 5): C's policy version 2 on a v1 reader → checkpoint_policy_mismatch.
TEST_F(GateFixture, Row6UnknownPolicyVersionParks) {
  sourceRun();
  const CaptureResult c = capture(4);
  rawSql(dir.path / "store" / "runtime.sqlite",
         "UPDATE runtime_events SET payload_json = replace(payload_json, "
         "'\"maxTotalBytes\":268435456},\"version\":1}', "
         "'\"maxTotalBytes\":268435456},\"version\":2}') WHERE event_id = " +
             sqlQuote(c.checkpoint.checkpointId + ":accepted"));
  EXPECT_EQ(plan("optional_legacy").rejectionReasons,
            std::vector<std::string>{"checkpoint_policy_mismatch"});
}

// Row 5: C exists but the carrier is damaged → park workspace_carrier_damaged (both).
TEST_F(GateFixture, Row5CarrierUnavailableWithACheckpointParks) {
  sourceRun();
  capture(4);
  fs::remove(storeDir / "workspace" / "carrier.json");
  for (const char* requirement : {"optional_legacy", "required"})
    EXPECT_EQ(plan(requirement).rejectionReasons,
              std::vector<std::string>{"workspace_carrier_damaged"})
        << requirement;
}

// Row 4 and j.2 vector 4: only the baseline (p = 1) exists and the Write's dispatch follows it →
// nothing covers: required parks no_checkpoint; optional_legacy continues with no_checkpoint and
// checkpoint_suffix_not_neutral (the dispatch), bound with null checkpoint and tree.
TEST_F(GateFixture, Row4UncoveredBoundaryParksOrContinuesAsTheRequirementSays) {
  sourceRun();
  capture(1);
  const ContinuationPlan req = plan("required");
  EXPECT_EQ(req.rejectionReasons, std::vector<std::string>{"no_checkpoint"});
  const ContinuationPlan opt = plan("optional_legacy");
  ASSERT_TRUE(opt.isContinue()) << opt.toJson().dump();
  EXPECT_EQ(diagnosticCodes(opt),
            (std::vector<std::string>{"no_checkpoint", "checkpoint_suffix_not_neutral"}));
  EXPECT_EQ(opt.diagnostics[1].detail->value("eventId", ""), call.dispatchEvent());
  const Json b = opt.toJson()["safetySnapshot"]["workspaceBoundary"];
  EXPECT_TRUE(b["checkpointId"].is_null());
  EXPECT_TRUE(b["treeOid"].is_null());
  EXPECT_EQ(b["epoch"], 1);
}

// j.2 vector 4, with Read: the baseline covers (a Read is workspace-neutral).
TEST_F(GateFixture, Row9ReadSuffixIsNeutral) {
  sourceRun("Read");
  const CaptureResult c = capture(1);
  const ContinuationPlan p = plan("required");
  ASSERT_TRUE(p.isContinue()) << p.toJson().dump();
  EXPECT_EQ(p.toJson()["safetySnapshot"]["workspaceBoundary"]["checkpointId"],
            c.checkpoint.checkpointId);
}

// Row 3 (j.2 vector 5): a non-git workspace without a lineage: required parks
// unsupported_workspace_carrier; optional_legacy continues with it as a diagnostic.
TEST_F(GateFixture, Row3NonGitWorkspaceDegrades) {
  fs::remove_all(root / ".git");
  sourceRun();
  EXPECT_EQ(plan("required").rejectionReasons,
            std::vector<std::string>{"unsupported_workspace_carrier"});
  const ContinuationPlan opt = plan("optional_legacy");
  ASSERT_TRUE(opt.isContinue());
  EXPECT_EQ(diagnosticCodes(opt), std::vector<std::string>{"unsupported_workspace_carrier"});
  EXPECT_FALSE(opt.safetySnapshot.workspaceBoundary);  // no lineage, no binding
}

// Row 2: a lineage exists and the observed instance is not the epoch's (or the source header's
// instance is no epoch's) → workspace_identity_mismatch.
TEST_F(GateFixture, Row2ObservedInstanceIsNotTheEpochs) {
  sourceRun();
  capture(4);
  h.facts.workspaceIdentity = kOtherWorkspace;
  EXPECT_EQ(plan("optional_legacy").rejectionReasons,
            std::vector<std::string>{"workspace_identity_mismatch"});
}

// Row 1: a damaged authority stream → workspace_fact_corruption under both requirements.
TEST_F(GateFixture, Row1CorruptLineageParks) {
  sourceRun();
  const CaptureResult c = capture(4);
  rawSql(dir.path / "store" / "runtime.sqlite",
         "UPDATE runtime_events SET event_seq = 5 WHERE event_id = " +
             sqlQuote(c.checkpoint.checkpointId + ":accepted"));
  for (const char* requirement : {"optional_legacy", "required"})
    EXPECT_EQ(plan(requirement).rejectionReasons,
              std::vector<std::string>{"workspace_fact_corruption"})
        << requirement;
}

// e.4 revalidation: a drift between planning and execution → target_workspace_changed; a ref
// deleted → checkpoint_artifact_changed; a newer covering checkpoint →
// workspace_checkpoint_changed. Nothing is claimed.
TEST_F(GateFixture, RevalidationSeesTheWorkspaceChangeSincePlanning) {
  sourceRun();
  const CaptureResult c = capture(4);
  const ContinuationPlan p = plan("required");
  ASSERT_TRUE(p.isContinue());
  writeFile(root / "a.txt", "edited\n");
  expectCode([&] { executeContinuation(*store, p, host("required")); }, "target_workspace_changed");
  writeFile(root / "a.txt", "hello\n");
  fixtureShell(gitCarrier("update-ref -d " + c.checkpoint.carrier.refName));
  expectCode([&] { executeContinuation(*store, p, host("required")); },
             "checkpoint_artifact_changed");
  fixtureShell(gitCarrier("update-ref " + c.checkpoint.carrier.refName + " " +
                          c.checkpoint.carrier.commitOid));
  capture(5);
  expectCode([&] { executeContinuation(*store, p, host("required")); },
             "workspace_checkpoint_changed");
  EXPECT_TRUE(listClaims(*store).empty());
}
