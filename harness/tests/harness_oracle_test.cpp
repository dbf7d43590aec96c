// The oracle table itself: complete, consistent with the failpoint catalogue and issue #5.
#include <gtest/gtest.h>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/scenario.h"

using namespace crashsim::harness;
using namespace crashsim::harness::points;
namespace code = crashsim::code;
namespace fp = crashsim::failpoints;

// The fault modes are registered once, by name, each judged by V1–V9 and its own verdicts. Bugs:
// a mode missing from the registry (its cases unparseable), two modes of one name.
TEST(FaultModes, TheRegistryNamesEveryModeOnce) {
  EXPECT_EQ(faultModeNames(), (std::vector<std::string>{"kill", "powerloss", "stop", "corrupt"}));
  for (const FaultMode* m : faultModes()) {
    EXPECT_EQ(&faultMode(m->name()), m) << m->name();
    const auto v = m->verdicts();
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v.front(), "V1") << m->name();
  }
  EXPECT_EQ(findFaultMode("crash"), nullptr);
  EXPECT_THROW(faultMode("crash"), std::invalid_argument);
  EXPECT_TRUE(faultMode("powerloss").seeded() && faultMode("corrupt").seeded());
  EXPECT_TRUE(faultMode("kill").isProcessKill() && !faultMode("stop").isProcessKill());
}

// The harness's crash points are the runtime's catalogue and barriers, by name and in its order
// (the order case ids sort by). Bugs: a point the agent cannot arm, a point missing from the
// table, two points swapped.
TEST(CrashPointTable, IsTheRuntimesPointsByNameInTheirOrder) {
  const auto all = CrashPoint::all();
  EXPECT_EQ(all.size(), fp::kPointCount);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto id = fp::parsePoint(all[i].name());
    ASSERT_TRUE(id) << all[i];
    EXPECT_EQ(fp::name(*id), all[i].name());
    if (i > 0) EXPECT_LT(*fp::parsePoint(all[i - 1].name()), *id) << all[i];
    EXPECT_EQ(CrashPoint::parse(all[i].name()), all[i]);
  }
  for (auto bad : {"p4", "P04", "P31", " P4", "", "g", "G#1"})
    EXPECT_FALSE(CrashPoint::parse(bad)) << bad;
  EXPECT_TRUE(S.isBarrier() && F.isBarrier() && G.isBarrier() && !P4.isBarrier());
  EXPECT_LT(P29, P30);
  EXPECT_LT(P30, G);  // the git barrier came last: every other point keeps its number
  EXPECT_EQ(pointRange(P0, P3), (std::vector<CrashPoint>{P0, P1, P2, P3}));
  EXPECT_LT(P11, S);
  EXPECT_LT(F, P12);
}

TEST(OracleTable, EveryFailpointTimesRecoveryModeRowIsPresentOnce) {
  for (CrashPoint f : pointRange(P0, P11))
    for (auto mode : kRecoveryModes) {
      int n = 0;
      for (const auto& r : oracleTable()) n += (r.failpoint == f && r.recoveryMode == mode);
      EXPECT_EQ(n, 1) << f << " / " << mode;
    }
  EXPECT_EQ(oracleTable().size(), 12u * kRecoveryModes.size());
}

TEST(OracleTable, RecoveryProcessRowsMatchTheCatalogue) {
  for (const auto& e : fp::catalogue()) {
    const CrashPoint f(e.name);
    for (auto mode : kRecoveryModes)
      EXPECT_EQ(oracleRow(f, mode).reachedByAgentRun, !e.recoveryProcess) << e.name;
  }
}

TEST(OracleTable, DurableFactsFollowTheCatalogueDurableState) {
  for (auto mode : kRecoveryModes) {
    EXPECT_FALSE(oracleRow(P0, mode).call);  // "no call"
    EXPECT_TRUE(oracleRow(P1, mode).call);   // "call only"
    EXPECT_FALSE(oracleRow(P1, mode).dispatch);
    for (CrashPoint f : {P2, P3, P4, P5}) {  // "call + dispatch" / "as P4 (T2 rolled back)"
      EXPECT_TRUE(oracleRow(f, mode).dispatch) << f;
      EXPECT_FALSE(oracleRow(f, mode).response) << f;
    }
    for (CrashPoint f : {P6, P7}) EXPECT_TRUE(oracleRow(f, mode).response) << f;  // "+ response"
    EXPECT_FALSE(oracleRow(P8, mode).terminalEvent);  // "no terminal event"
    EXPECT_TRUE(oracleRow(P9, mode).terminalEvent);   // "terminal event, header stale"
  }
}

TEST(OracleTable, ResolverStatusAgreesWithTheCatalogueDecisionText) {
  for (const auto& e : fp::catalogue()) {
    const CrashPoint f(e.name);
    const auto& r = oracleRow(f, code::reconcile);
    if (r.status.empty()) continue;
    EXPECT_EQ(std::string(e.resolverDecision).rfind(std::string(r.status), 0), 0u)
        << e.name << ": catalogue says '" << e.resolverDecision << "', oracle " << r.status;
  }
}

TEST(OracleTable, Issue5RecoveryOutcomes) {
  using O = Outcome;
  for (auto mode : kRecoveryModes) {
    EXPECT_EQ(oracleRow(P0, mode).outcome, O::call_made_once);
    EXPECT_EQ(oracleRow(P1, mode).status, code::definitely_not_dispatched);
    EXPECT_EQ(oracleRow(P1, mode).reason, code::new_protocol_before_dispatch);
    EXPECT_EQ(oracleRow(P1, mode).outcome, O::reissued_runs_once);
    for (CrashPoint f : {P6, P7}) {
      EXPECT_EQ(oracleRow(f, mode).status, code::completed);
      EXPECT_EQ(oracleRow(f, mode).reason, code::matching_response);
      EXPECT_EQ(oracleRow(f, mode).settlementOrigin, code::normal_t2);
      EXPECT_EQ(oracleRow(f, mode).outcome, O::completed_ran_once);
    }
    for (CrashPoint f : {P8, P9}) EXPECT_EQ(oracleRow(f, mode).outcome, O::run_finished);
    for (CrashPoint f : {P2, P3, P4, P5}) {
      EXPECT_EQ(oracleRow(f, mode).status, code::indeterminate);
      EXPECT_EQ(oracleRow(f, mode).reason, code::dispatch_without_response);
    }
  }
  // reconcile (Write, Edit)
  for (CrashPoint f : {P2, P3}) {
    EXPECT_EQ(oracleRow(f, code::reconcile).outcome, O::parked_by_reconcile);
    EXPECT_EQ(oracleRow(f, code::reconcile).finalStatus, code::parked);
    EXPECT_EQ(oracleRow(f, code::reconcile).finalReason, code::reconcile_matches_prior_state);
  }
  for (CrashPoint f : {P4, P5}) {
    EXPECT_EQ(oracleRow(f, code::reconcile).outcome, O::completed_bundle);
    EXPECT_EQ(oracleRow(f, code::reconcile).finalReason, code::recovery_bundle_completed);
  }
  // never_auto_retry (Bash) and replay_safe (Read, documented choice: park) at P2–P5.
  for (auto mode : {code::never_auto_retry, code::replay_safe})
    for (CrashPoint f : {P2, P3, P4, P5}) {
      EXPECT_EQ(oracleRow(f, mode).outcome, O::parked_unsettled) << mode << " P" << f;
      EXPECT_EQ(oracleRow(f, mode).finalStatus, code::indeterminate);
    }
  // P10 needs a reconciler.
  EXPECT_TRUE(oracleRow(P10, code::reconcile).reachedByMode);
  EXPECT_FALSE(oracleRow(P10, code::never_auto_retry).reachedByMode);
}

TEST(OracleTable, ToolRecoveryModes) {
  EXPECT_EQ(recoveryModeOfTool("Write"), code::reconcile);
  EXPECT_EQ(recoveryModeOfTool("Edit"), code::reconcile);
  EXPECT_EQ(recoveryModeOfTool("Bash"), code::never_auto_retry);
  EXPECT_EQ(recoveryModeOfTool("Read"), code::replay_safe);
  EXPECT_EQ(recoveryModeOfTool("SomethingNew"), code::never_auto_retry);  // fail closed
}

namespace {
// Step 0: Bash (refused by permission). Step 1: Write + Read in parallel. Step 2: final text.
Scenario twoStepScenario() {
  Scenario s;
  s.id = "t";
  s.tools = {"Read", "Write", "Bash"};
  auto add = [&](std::string id, std::string name, size_t step, size_t k) {
    ScenarioCall c;
    c.id = id;
    c.name = name;
    c.step = step;
    c.indexInStep = k;
    c.refused = name == "Bash";
    s.calls.push_back(c);
  };
  add("c1", "Bash", 0, 0);  // refused by permission
  add("c2", "Write", 1, 0);
  add("c3", "Read", 1, 1);
  s.toolSteps = 2;
  return s;
}
}  // namespace

TEST(OracleExpectation, HitsFollowWhereEachFailpointSits) {
  auto h = predictedHits(twoStepScenario());
  EXPECT_EQ(h[P0], 2);  // once per step that issues calls
  EXPECT_EQ(h[P1], 3);  // every call, refused or not
  EXPECT_EQ(h[P2], 2);  // dispatched calls only
  EXPECT_EQ(h[P3], 1);  // only Write/Edit have a temp-file boundary
  for (CrashPoint f : {P4, P5, P6}) EXPECT_EQ(h[f], 2) << f;
  EXPECT_EQ(h[P7], 2);  // once per step, after its results
  EXPECT_EQ(h[P8], 1);
  EXPECT_EQ(h[P9], 1);
  EXPECT_EQ(h[P10], 0);
  EXPECT_EQ(h[P11], 0);
}

// Phase 4 (contract d.1, i.2): git-workspace-checkpoint captures at its baseline (before the first
// provider step: the run's ledger as at P0#1) and after the T2 of its Write (P6#2: the Read,
// effect none, is the first call reaching P6 and takes no capture); each capture reaches P18-P22
// once. Table W: a kill at P18-P21 of capture k leaves k-1 checkpoints, at P22 k. A scenario
// without a workspacePolicy captures nothing.
TEST(OracleExpectation, CapturesFollowTheCheckpointPointsOfTheScenario) {
  const Scenario sc = loadScenario(defaultScenarioDir() / "git-workspace-checkpoint.json");
  const auto captures = predictedCaptures(sc);
  ASSERT_EQ(captures.size(), 2u);
  EXPECT_EQ(captures[0].ledgerPoint, P0);
  EXPECT_EQ(captures[0].ledgerHit, 1);
  EXPECT_FALSE(captures[0].call);
  EXPECT_EQ(captures[1].ledgerPoint, P6);
  EXPECT_EQ(captures[1].ledgerHit, 2);
  EXPECT_EQ(captures[1].call, std::optional<size_t>(1));
  const auto h = predictedHits(sc);
  for (CrashPoint f : pointRange(points::P18, points::P22)) EXPECT_EQ(h[f], 2) << f;
  EXPECT_FALSE(captureAt(sc, 3));
  EXPECT_EQ(expectedCheckpointsAfterCaptureKill(points::P18, 1), 0);
  EXPECT_EQ(expectedCheckpointsAfterCaptureKill(points::P21, 2), 1);
  EXPECT_EQ(expectedCheckpointsAfterCaptureKill(points::P22, 2), 2);
  const Scenario plain = loadScenario(defaultScenarioDir() / "write-config-port.json");
  EXPECT_TRUE(predictedCaptures(plain).empty());
  for (CrashPoint f : pointRange(points::P18, points::P22)) EXPECT_EQ(predictedHits(plain)[f], 0);
}

// Phase 4 c.4 check 8 (j.2 vector 5): a `.gitattributes` leaving filter (or text, eol, ident,
// working-tree-encoding) specified on a path of L refuses the capture (`attribute:<name>`, the
// first path); `-text`/`binary` (text unset), `!filter`, a pattern that matches no path of L and
// a deeper file's `!name` override pass; `-ident` (unset, not text) is refused. Bug: an attributes
// file with `filter=` read as eligible.
TEST(OracleExpectation, ConversionAttributesRefuseTheSnapshotPerCheck8) {
  const std::vector<std::string> paths = {".gitattributes", "a.txt", "x.bin"};
  auto refusal = conversionAttribute({{".gitattributes", "*.bin filter=lfs -text\n"}}, paths);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->attribute, "filter");
  EXPECT_EQ(refusal->path, "x.bin");
  EXPECT_FALSE(conversionAttribute({{".gitattributes", "*.bin -text\n"}}, paths));
  EXPECT_FALSE(conversionAttribute({{".gitattributes", "*.bin binary\n# *.txt eol=lf\n"}}, paths));
  EXPECT_FALSE(conversionAttribute({{".gitattributes", "*.png filter=lfs\n"}}, paths));
  EXPECT_FALSE(
      conversionAttribute({{".gitattributes", "*.bin filter=lfs\n*.bin !filter\n"}}, paths));
  EXPECT_FALSE(conversionAttribute({}, paths));
  refusal = conversionAttribute({{".gitattributes", "*.txt text eol=lf\n"}}, paths);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->attribute, "text");
  EXPECT_EQ(refusal->path, "a.txt");
  refusal = conversionAttribute({{".gitattributes", "/sub/*.c ident\n"}}, {"sub/m.c", "m.c"});
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->attribute, "ident");
  EXPECT_EQ(refusal->path, "sub/m.c");
  EXPECT_FALSE(conversionAttribute(
      {{".gitattributes", "*.c ident\n"}, {"sub/.gitattributes", "*.c !ident\n"}}, {"sub/m.c"}));
  EXPECT_FALSE(conversionAttribute({{"sub/.gitattributes", "*.c ident\n"}}, {"m.c"}));
  // Only text may be unset: `-ident` leaves ident specified (unset), which check 8 refuses.
  refusal = conversionAttribute({{".gitattributes", "*.c -ident\n"}}, {"m.c"});
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->attribute, "ident");
}

// Phase 4 (c.4 check 8, d.3): git-workspace-ineligible's .gitattributes puts filter=lfs on its
// tracked x.bin, so the baseline and the Write's capture are both refused before P18: no capture
// case, P18-P22 unreached, nothing to restore. Bug: a capture predicted for an ineligible snapshot.
TEST(OracleExpectation, AnIneligibleWorkspaceCapturesNothing) {
  const Scenario sc = loadScenario(defaultScenarioDir() / "git-workspace-ineligible.json");
  EXPECT_EQ(sc.spec.workspacePolicy.checkpointRequirement, "optional_legacy");
  EXPECT_TRUE(predictedCaptures(sc).empty());
  EXPECT_FALSE(captureAt(sc, 1));
  for (CrashPoint f : pointRange(points::P18, points::P22)) EXPECT_EQ(predictedHits(sc)[f], 0) << f;
  EXPECT_FALSE(predictedRestore(sc));
}

// Phase 4 (c.4 check 7, d.3): git-workspace-dirty-submodule's submodule lib has lib.txt edited
// after its commit, so every capture is refused before P18: no capture case. Hand-built from it:
// the same submodule clean (no edits) is captured at the baseline and after the Write (G1: a clean
// gitlink is captured); clean, but a Write or an Edit into lib/ before the second capture dirties
// it from there on; a Write of lib.txt's committed bytes leaves it clean; a new file in it is
// dirty (--untracked-files=all). Bugs: a capture predicted for a dirty submodule, none for a
// clean one, or a file inside the submodule taken for a path of L.
TEST(OracleExpectation, ADirtySubmoduleCapturesNothingACleanOneCaptures) {
  const Scenario dirty = loadScenario(defaultScenarioDir() / "git-workspace-dirty-submodule.json");
  ASSERT_TRUE(dirty.spec.git && dirty.spec.git->submodules.count("lib"));
  EXPECT_TRUE(predictedCaptures(dirty).empty());
  EXPECT_FALSE(captureAt(dirty, 1));
  for (CrashPoint f : pointRange(points::P18, points::P22))
    EXPECT_EQ(predictedHits(dirty)[f], 0) << f;
  EXPECT_FALSE(predictedRestore(dirty));

  Scenario clean = dirty;
  clean.spec.git->submodules.at("lib").edits.clear();
  const auto both = predictedCaptures(clean);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_FALSE(both[0].call);                         // the baseline
  EXPECT_EQ(both[1].call, std::optional<size_t>(1));  // after the Write's T2
  for (CrashPoint f : pointRange(points::P18, points::P22))
    EXPECT_EQ(predictedHits(clean)[f], 2) << f;

  // The Write (call-2) goes into the submodule instead of notes.txt.
  const auto writeInto = [&](const std::string& path, const std::string& content) {
    Scenario s = clean;
    auto& args = s.spec.model[1].calls[0].args;
    args["path"] = path;
    args["content"] = content;
    return s;
  };
  const auto afterWrite = predictedCaptures(writeInto("lib/lib.txt", "v3\n"));
  ASSERT_EQ(afterWrite.size(), 1u);  // the baseline only
  EXPECT_FALSE(afterWrite[0].call);
  EXPECT_EQ(predictedCaptures(writeInto("lib/lib.txt", "v1\n")).size(), 2u);  // committed bytes
  EXPECT_EQ(predictedCaptures(writeInto("lib/new.txt", "n\n")).size(), 1u);   // untracked
  Scenario edit = clean;
  edit.spec.model[1].calls[0].name = "Edit";
  edit.spec.model[1].calls[0].args = {
      {"path", "lib/lib.txt"}, {"old_string", "v1"}, {"new_string", "v9"}};
  edit.calls[1].name = "Edit";
  EXPECT_EQ(predictedCaptures(edit).size(), 1u);
  Scenario untracked = clean;
  untracked.spec.git->submodules.at("lib").edits = {{"extra.txt", "x\n"}};
  EXPECT_TRUE(predictedCaptures(untracked).empty());
}

// Phase 4 f (i.2): the isolated restore of git-workspace-restore — its afterCrash names P23..P26;
// the agent run is killed at the Edit's capture (the second: P22#2), whose ledger is P6#1's, with
// both checkpoints accepted (W6). A scenario that parks on drift, or has no afterCrash, restores
// nothing. Bug: restore cases planned for a scenario that never restores, or armed at a capture
// whose checkpoint does not cover the crash (the baseline).
TEST(OracleExpectation, RestoreFollowsTheScenarioDriftAfterTheLastCapture) {
  const Scenario sc = loadScenario(defaultScenarioDir() / "git-workspace-restore.json");
  const auto r = predictedRestore(sc);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->captureHit, 2);
  EXPECT_EQ(r->ledgerPoint, P6);
  EXPECT_EQ(r->ledgerHit, 1);
  EXPECT_EQ(r->checkpointsBefore, 2);
  EXPECT_EQ(r->failpoints,
            (std::vector<CrashPoint>{points::P23, points::P24, points::P25, points::P26}));
  for (CrashPoint f : pointRange(points::P23, points::P26)) EXPECT_EQ(predictedHits(sc)[f], 0) << f;
  EXPECT_FALSE(predictedRestore(loadScenario(defaultScenarioDir() / "git-workspace-drift.json")));
  EXPECT_FALSE(
      predictedRestore(loadScenario(defaultScenarioDir() / "git-workspace-checkpoint.json")));
  EXPECT_FALSE(predictedRestore(loadScenario(defaultScenarioDir() / "write-config-port.json")));
}

// g, i.2: the rebaseline's placement from git-workspace-rebaseline.json and the contract alone —
// the agent run killed at the Edit's P1 (its first call, every earlier call a Read: none), the
// baseline the only checkpoint, readSet = the afterCrash's tracked a.txt written with new bytes
// (B4 `M`), the Edit gated (no Read of a.txt in the scenario); table B's rows at P27..P29.
// Phase 4 h (i.2 P30): the GC of git-workspace-gc's recovery (orphanGraceMs 0) after the agent run
// killed at the baseline capture's P20 — the baseline is capture #1, its ledger the kill at P0#1
// (d.1 a: before the first provider step). No other scenario runs a GC.
TEST(OracleExpectation, GcFollowsTheBaselineCapturesOrphanRef) {
  const auto g = predictedGc(loadScenario(defaultScenarioDir() / "git-workspace-gc.json"));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->captureHit, 1);
  EXPECT_EQ(g->ledgerPoint, points::P0);
  EXPECT_EQ(g->ledgerHit, 1);
  for (const char* other :
       {"git-workspace-restore.json", "git-workspace-drift.json", "git-workspace-rebaseline.json",
        "git-workspace-checkpoint.json", "write-config-port.json"})
    EXPECT_FALSE(predictedGc(loadScenario(defaultScenarioDir() / other))) << other;
}

TEST(OracleExpectation, RebaselineFollowsTheScenarioDriftBeforeTheFirstWrite) {
  const Scenario sc = loadScenario(defaultScenarioDir() / "git-workspace-rebaseline.json");
  const auto r = predictedRebaseline(sc);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ledgerHit, 1);
  EXPECT_EQ(r->checkpointsBefore, 1);
  EXPECT_EQ(r->failpoints, (std::vector<CrashPoint>{points::P27, points::P28, points::P29}));
  EXPECT_EQ(r->readSet, std::vector<std::string>{"a.txt"});
  EXPECT_EQ(r->gatedCalls, std::vector<std::string>{"call-1"});
  EXPECT_FALSE(predictedRestore(sc));
  for (const char* other : {"git-workspace-restore.json", "git-workspace-drift.json",
                            "git-workspace-checkpoint.json", "write-config-port.json"})
    EXPECT_FALSE(predictedRebaseline(loadScenario(defaultScenarioDir() / other))) << other;
  const auto b4 = expectedRebaselineKill(points::P27);
  EXPECT_EQ(b4.epochs, 1);
  EXPECT_FALSE(b4.transition);
  EXPECT_EQ(b4.runs, 1);
  EXPECT_FALSE(b4.noticeInContinuation);
  EXPECT_TRUE(b4.confirmAgain);
  const auto b5 = expectedRebaselineKill(points::P28);
  EXPECT_EQ(b5.epochs, 2);
  EXPECT_TRUE(b5.transition);
  EXPECT_EQ(b5.runs, 1);
  EXPECT_FALSE(b5.noticeInContinuation);
  EXPECT_FALSE(b5.confirmAgain);
  const auto b6 = expectedRebaselineKill(points::P29);
  EXPECT_EQ(b6.runs, 2);
  EXPECT_TRUE(b6.noticeInContinuation);
  EXPECT_FALSE(b6.confirmAgain);
}

// The recovery of a case that continues reaches the continuation admission once each (claim P11,
// target run P14, start P15); one that parks never does. Bug: a plan that never schedules the
// admission kills, or schedules them where the recovery parks (cases that can never be reached).
TEST(OracleExpectation, OnlyAContinuingRecoveryReachesTheContinuationAdmission) {
  const Scenario s = twoStepScenario();
  const auto cont = predictedRecoveryHits(s, P7, 2);  // the last step answered: continues
  for (CrashPoint f : {P11, P14, P15}) EXPECT_EQ(cont[f], 1) << f;
  EXPECT_EQ(cont[P8], 2);  // the crashed run's recovered terminal, then the continuation's own
  const auto parked = predictedRecoveryHits(s, P3, 1);  // the Write mid-replace: parks
  for (CrashPoint f : {P11, P14, P15}) EXPECT_EQ(parked[f], 0) << f;
}

// The state each continuation admission kill leaves (catalogue durableState) and how the claim
// saga settles it (spec g). Bugs: a target run created before the claim's window (P11 holds it),
// a start written before its target run, a saga that abandons a live runtime_admission start.
TEST(OracleExpectation, ContinuationAdmissionKillsFollowTheCatalogue) {
  const auto p11 = expectRecoveryKill(P11, 1), p14 = expectRecoveryKill(P14, 1),
             p15 = expectRecoveryKill(P15, 1);
  for (const auto* e : {&p11, &p14, &p15}) {
    EXPECT_TRUE(e->claim);
    EXPECT_TRUE(e->terminalFact && e->terminalHeader);  // the crashed run is sealed first
  }
  EXPECT_EQ(p11.runs, 1);  // "claim without start": no target run yet
  EXPECT_FALSE(p11.targetHeader);
  EXPECT_EQ(p14.runs, 2);  // "claim + target run header (created), no start, no target events"
  EXPECT_TRUE(p14.targetHeader);
  EXPECT_EQ(p14.claimStart, "");
  EXPECT_EQ(p14.targetEvents, 0);
  EXPECT_EQ(p15.runs, 2);  // "claim + target run + its runtime_admission start, no terminal"
  EXPECT_EQ(p15.claimStart, code::runtime_admission);
  EXPECT_EQ(p15.targetEvents, 1);
  EXPECT_NE(std::string(fp::entry(fp::Id::P14).durableState).find("no start"), std::string::npos);
  EXPECT_NE(std::string(fp::entry(fp::Id::P15).durableState).find("runtime_admission"),
            std::string::npos);
  CaseId id = parseCaseId("s/P6#1/kill+R:P14#1");
  ASSERT_TRUE(expectClaimSettlement(id));
  EXPECT_EQ(expectClaimSettlement(id)->startKind, code::claim_repair);
  EXPECT_TRUE(expectClaimSettlement(id)->abandoned);
  id.recoveryFailpoint = P15;
  EXPECT_EQ(expectClaimSettlement(id)->startKind, code::runtime_admission);
  EXPECT_FALSE(expectClaimSettlement(id)->abandoned);
  id.recoveryFailpoint = P10;
  EXPECT_FALSE(expectClaimSettlement(id));
}

TEST(OracleExpectation, ArmedOperationIsTheKthCallReachingTheFailpoint) {
  auto s = twoStepScenario();
  auto x = expectCase(s, P4, 1);  // first dispatched call = c2 (Write)
  ASSERT_TRUE(x.ok) << x.whyNot;
  EXPECT_EQ(*x.armedCall, 1u);
  EXPECT_EQ(x.row->outcome, Outcome::completed_bundle);
  EXPECT_EQ(x.outcome, Outcome::parked_replay_gap);              // sibling c3 stays unanswered
  EXPECT_EQ(x.ops[0].settlementOrigin, code::pre_t1_synthetic);  // refused earlier call
  EXPECT_EQ(x.ops[1].status, code::indeterminate);
  EXPECT_TRUE(x.ops[2].call);  // same-step sibling committed with the step
  EXPECT_EQ(x.ops[2].status, code::definitely_not_dispatched);
  auto y = expectCase(s, P4, 2);  // c3 (Read): parked without a reconciler
  ASSERT_TRUE(y.ok);
  EXPECT_EQ(*y.armedCall, 2u);
  EXPECT_EQ(y.outcome, Outcome::parked_unsettled);
  EXPECT_EQ(y.ops[1].status, code::completed);
  EXPECT_FALSE(expectCase(s, P4, 3).ok);
  EXPECT_FALSE(expectCase(s, P10, 1).ok);  // recovery-process only
  auto z = expectCase(s, P3, 1);           // P3: the Write, not the refused Bash or the Read
  ASSERT_TRUE(z.ok);
  EXPECT_EQ(*z.armedCall, 1u);
  EXPECT_FALSE(expectCase(s, P3, 2).ok);
  auto r = expectCase(s, P1, 1);  // P1 of the refused call: committed, never dispatched
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.ops[0].status, code::definitely_not_dispatched);
  EXPECT_EQ(r.outcome, Outcome::reissued_runs_once);
}

TEST(OracleExpectation, P0LeavesTheWholeStepUncommitted) {
  auto x = expectCase(twoStepScenario(), P0, 2);  // step 1: c2 and c3
  ASSERT_TRUE(x.ok) << x.whyNot;
  EXPECT_FALSE(x.armedCall);
  EXPECT_EQ(*x.armedStep, 1u);
  EXPECT_TRUE(x.ops[0].response);
  EXPECT_FALSE(x.ops[1].call);
  EXPECT_FALSE(x.ops[2].call);
  EXPECT_EQ(x.outcome, Outcome::call_made_once);
  EXPECT_FALSE(expectCase(twoStepScenario(), P0, 3).ok);
}

TEST(OracleExpectation, P7FollowsTheWholeStepsResults) {
  auto x = expectCase(twoStepScenario(), P7, 1);  // after step 0: only the refusal is done
  ASSERT_TRUE(x.ok) << x.whyNot;
  EXPECT_EQ(x.ops[0].settlementOrigin, code::pre_t1_synthetic);
  EXPECT_FALSE(x.ops[1].call);
  auto y = expectCase(twoStepScenario(), P7, 2);  // after step 1: every call completed
  ASSERT_TRUE(y.ok);
  for (const auto& op : y.ops) EXPECT_EQ(op.status, code::completed) << op.callId;
  EXPECT_EQ(y.ops[1].settlementOrigin, code::normal_t2);
  EXPECT_EQ(y.outcome, Outcome::completed_ran_once);
}

TEST(OracleExpectation, BuiltInScenarioFlagsComeFromTheFile) {
  auto dir = std::filesystem::path(CRASHSIM_SOURCE_DIR) / "scenarios";
  auto denied = loadScenario(dir / "permission-denied.json");
  EXPECT_TRUE(denied.calls[0].refused);  // Bash on the deny list
  EXPECT_FALSE(denied.calls[1].refused);
  auto err = loadScenario(dir / "tool-error.json");
  EXPECT_TRUE(err.calls[0].expectError);
  EXPECT_FALSE(err.calls[0].refused);  // a failing Read is dispatched; it fails at execution
  EXPECT_EQ(err.toolSteps, 2u);
}

TEST(OracleExpectation, ParallelStepWithAnUnansweredCallBeforeAResultParksOnTheReplayGap) {
  // parallel-calls: one step with Write, Edit, Bash (spec e.3 step 4).
  auto s = loadScenario(std::filesystem::path(CRASHSIM_SOURCE_DIR) / "scenarios" /
                        "parallel-calls.json");
  auto outcome = [&](CrashPoint f, int hit) {
    auto x = expectCase(s, f, hit);
    EXPECT_TRUE(x.ok) << x.whyNot;
    return x.outcome;
  };
  EXPECT_EQ(outcome(P1, 1), Outcome::reissued_runs_once);  // every call unanswered: a suffix
  EXPECT_EQ(outcome(P1, 2), Outcome::parked_replay_gap);   // call-1's result follows call-2
  EXPECT_EQ(outcome(P4, 1), Outcome::parked_replay_gap);   // bundle answers call-1 after call-2
  EXPECT_EQ(outcome(P6, 2), Outcome::parked_replay_gap);   // call-3 unanswered
  EXPECT_EQ(outcome(P6, 3), Outcome::completed_ran_once);  // last call: nothing unanswered
  EXPECT_EQ(outcome(P4, 3), Outcome::parked_unsettled);    // Bash: unsettled wins (step 1)
  auto p1 = expectCase(s, P1, 2);
  EXPECT_EQ(p1.finalStatus, code::definitely_not_dispatched);
  auto p6 = expectCase(s, P6, 1);
  EXPECT_EQ(p6.finalStatus, code::completed);
}

TEST(CaseIdFormat, RoundTripsAndSortsNumerically) {
  auto a = parseCaseId("write-config-port/P4#2/kill");
  EXPECT_EQ(a.scenario, "write-config-port");
  EXPECT_EQ(a.failpoint, P4);
  EXPECT_EQ(a.hit, 2);
  EXPECT_EQ(a.str(), "write-config-port/P4#2/kill");
  auto d = parseCaseId("s/P4#1/kill+R:P10#1");
  EXPECT_EQ(*d.recoveryFailpoint, P10);
  EXPECT_EQ(d.str(), "s/P4#1/kill+R:P10#1");
  EXPECT_LT(parseCaseId("s/P2#1/kill"), parseCaseId("s/P10#1/kill"));
  auto b = parseCaseId("s/S#7/kill");
  EXPECT_TRUE(b.isBarrier());
  EXPECT_EQ(b.failpointName(), "S");
  EXPECT_EQ(b.str(), "s/S#7/kill");
  EXPECT_EQ(parseCaseId("s/F#3/kill").str(), "s/F#3/kill");
  EXPECT_LT(parseCaseId("s/P11#1/kill+R:P10#1"), b);  // barriers sort after the named points
  // The continuation admission points are recovery kills only, and sort after P11.
  auto p14 = parseCaseId("s/P4#1/kill+R:P14#1");
  EXPECT_EQ(*p14.recoveryFailpoint, P14);
  EXPECT_EQ(p14.str(), "s/P4#1/kill+R:P14#1");
  EXPECT_EQ(parseCaseId("s/P4#1/kill+R:P15#1").str(), "s/P4#1/kill+R:P15#1");
  EXPECT_LT(parseCaseId("s/P4#1/kill+R:P11#1"), p14);
  EXPECT_LT(p14, parseCaseId("s/P4#1/kill+R:P15#1"));
  for (auto bad : {"s/P14#1/kill", "s/P15#1/kill", "s/P13#1/kill+R:P14#1", "s/P4#1/kill+R:P16#1",
                   "s/P4#1/kill+R:P12#1", "s/P4#1/kill+R:P014#1", "s/P4#1/stop+R:P14#1"})
    EXPECT_THROW(parseCaseId(bad), std::invalid_argument) << bad;
  // A power cut at a barrier is a case since #44 (a stop or a corrupt case there is not).
  EXPECT_EQ(parseCaseId("s/F#1/powerloss@3").str(), "s/F#1/powerloss@3");
  EXPECT_EQ(parseCaseId("s/S#2/powerloss@0").str(), "s/S#2/powerloss@0");
  // The recovery process killed at its own barriers (#44 §3): after a named kill, kill mode.
  const CaseId rs = parseCaseId("s/P0#1/kill+R:S#9");
  EXPECT_TRUE(rs.isRecoveryBarrier());
  EXPECT_TRUE(rs.isDoubleFault());
  EXPECT_EQ(rs.str(), "s/P0#1/kill+R:S#9");
  EXPECT_EQ(parseCaseId("s/P4#2/kill+R:F#3").recoveryFailpoint, std::optional<CrashPoint>(F));
  EXPECT_FALSE(parseCaseId("s/P4#2/kill+R:P15#1").isRecoveryBarrier());
  for (auto bad :
       {"s/P12#1/kill", "s/P4#0/kill", "s/P4/kill", "P4#1/kill", "s/P4#1/crash", "s/P04#1/kill",
        "s/P4#1/kill+P10#1", "s/S#0/kill", "s/S7/kill", "s/S#1/kill+R:P10#1", "s/S#1/kill+R:S#1",
        "s/P16#1/kill+R:S#1", "s/P4#1/kill+R:S#0", "s/F#1/stop", "s/S#1/corrupt@3", "s/X#1/kill"})
    EXPECT_THROW(parseCaseId(bad), std::invalid_argument) << bad;
}

TEST(ScenarioFiles, BuiltInScenariosLoadAndHaveCalls) {
  auto all = loadScenarioDir(std::filesystem::path(CRASHSIM_SOURCE_DIR) / "scenarios");
  ASSERT_FALSE(all.empty());
  for (const auto& s : all) {
    EXPECT_FALSE(s.calls.empty()) << s.id;
    EXPECT_EQ(s.file.stem().string(), s.id);
  }
}

// #44 §3: the continuation's own tool calls. A recovery that continues makes the calls the crashed
// run left unanswered and reaches P0–P7 for them as a first run of those calls would. Bugs: a
// continuation whose own calls are never placed (every P0–P7 of the recovery zero, so no kill is
// ever planned inside them), a continuation that starts at the wrong call (re-runs a settled one,
// skips an unanswered one).
TEST(OracleExpectation, TheContinuationsOwnCallsAreTheOnesLeftUnanswered) {
  const Scenario s = twoStepScenario();
  EXPECT_EQ(continuationFirstCall(s, P0, 1), std::optional<size_t>(0));  // nothing committed
  EXPECT_EQ(continuationFirstCall(s, P0, 2), std::optional<size_t>(1));  // step 1's calls
  EXPECT_EQ(continuationFirstCall(s, P1, 1), std::optional<size_t>(0));  // c1 re-issued
  EXPECT_EQ(continuationFirstCall(s, P7, 1), std::optional<size_t>(1));  // step 0 answered
  EXPECT_FALSE(continuationFirstCall(s, P7, 2));  // every call answered: the final answer only
  EXPECT_FALSE(continuationFirstCall(s, P3, 1));  // the Write mid-replace parks
  EXPECT_FALSE(continuationFirstCall(s, P6, 1));  // c2 answered, sibling c3 not: a replay gap parks
  const auto whole = predictedRecoveryHits(s, P0, 1);
  const auto first = predictedHits(s);
  for (CrashPoint f : pointRange(P0, P7)) EXPECT_EQ(whole[f], first[f]) << f;
  const auto rest = predictedRecoveryHits(s, P7, 1);  // c2 (Write) and c3 (Read) in one step
  EXPECT_EQ(rest[P0], 1);
  EXPECT_EQ(rest[P1], 2);
  EXPECT_EQ(rest[P2], 2);
  EXPECT_EQ(rest[P3], 1);
  EXPECT_EQ(rest[P6], 2);
  EXPECT_EQ(rest[P7], 1);
  for (CrashPoint f : pointRange(P0, P7)) EXPECT_EQ(predictedRecoveryHits(s, P7, 2)[f], 0) << f;
  for (CrashPoint f : pointRange(P0, P7)) EXPECT_EQ(predictedRecoveryHits(s, P3, 1)[f], 0) << f;
}

// A continuation killed inside its own call: the state is placed among the continuation's calls
// (the crashed run's answered calls are not in that run), the task ends as that kill says, and the
// saga leaves the live runtime_admission start alone. The sweep kills every hit of the
// continuation after P0#1 and the first step's after P7#1 only. Bugs: the kill judged against the
// first run's calls (a settled call expected again), executions counted from the primary kill.
TEST(OracleExpectation, AContinuationKilledInsideItsOwnCallIsPlacedAmongItsCalls) {
  const Scenario s = twoStepScenario();
  const CaseId id = parseCaseId("t/P7#1/kill+R:P2#1");  // the continuation's first T1: c2
  ASSERT_TRUE(isContinuationKill(id));
  CaseExpectation own;
  const CaseExpectation x = expectContinuationKill(s, id, &own);
  ASSERT_TRUE(x.ok) << x.whyNot;
  ASSERT_TRUE(own.ok);
  ASSERT_TRUE(x.armedCall);
  EXPECT_EQ(*x.armedCall, 1u);    // c2, in the scenario's terms
  ASSERT_EQ(own.ops.size(), 2u);  // the continuation run holds c2 and c3 only
  EXPECT_TRUE(own.ops[0].armed && own.ops[0].call && own.ops[0].dispatch && !own.ops[0].response);
  EXPECT_EQ(own.ops[0].status, code::indeterminate);
  EXPECT_TRUE(own.ops[1].call && !own.ops[1].dispatch);  // its sibling: committed, not dispatched
  ASSERT_EQ(x.ops.size(), 3u);
  EXPECT_EQ(x.ops[0].status, code::completed);  // c1 was answered in the crashed run
  EXPECT_EQ(x.outcome, Outcome::parked_by_reconcile);
  EXPECT_EQ(expectedExecutions(s, x, P2), (std::vector<int>{0, 0, 0}));  // refused; not started
  ASSERT_TRUE(expectClaimSettlement(id));
  EXPECT_EQ(expectClaimSettlement(id)->startKind, code::runtime_admission);
  EXPECT_FALSE(expectClaimSettlement(id)->abandoned);
  const auto after = expectContinuationKill(s, parseCaseId("t/P7#1/kill+R:P6#2"));
  ASSERT_TRUE(after.ok);  // c3 answered: the task continues and every dispatched call runs once
  EXPECT_EQ(after.outcome, Outcome::completed_ran_once);
  EXPECT_EQ(expectedExecutions(s, after, P6), (std::vector<int>{0, 1, 1}));
  EXPECT_FALSE(expectContinuationKill(s, parseCaseId("t/P3#1/kill+R:P2#1")).ok);  // parks first
  EXPECT_EQ(sweptContinuationKills(s, P0, 1)[P1], 3);  // every call of the task
  EXPECT_EQ(sweptContinuationKills(s, P7, 1)[P1], 2);  // the continuation's first step
  EXPECT_EQ(sweptContinuationKills(s, P0, 2), PointCounts{});
  EXPECT_EQ(sweptContinuationKills(s, P6, 1), PointCounts{});
}
