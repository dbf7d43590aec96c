// "The harness catches bugs": sweeps against the instrumented runtime with a planted fault
// (CRASHSIM_PLANT, crashsim/plant.h — compiled only into the instrumented build) must report
// a failed verdict with the right V-number.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crashsim/build_paths.h"
#include "test_util.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// True when some runtime source consults the plant (planted("<name>")).
bool plantWired(const std::string& name) {
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(CRASHSIM_SOURCE_DIR) / "runtime")) {
    if (!e.is_regular_file()) continue;
    auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".h") continue;
    if (slurp(e.path()).find("planted(\"" + name + "\")") != std::string::npos) return true;
  }
  return false;
}

// Runs a sweep with the plant and returns its report.json (null when it wrote none).
json plantedSweep(const std::string& plant, const std::string& args, int* exitCode) {
  auto d = freshDir("crashsim-plant-" + plant);
  auto r = sh("CRASHSIM_PLANT=" + plant + " " + plantedBinary().string() + " sweep --jobs 2 " +
              args + " --out " + (d / "out").string() + " 2>/dev/null");
  *exitCode = r.exitCode;
  json rep;
  if (fs::exists(d / "out" / "report.json")) rep = json::parse(slurp(d / "out" / "report.json"));
  fs::remove_all(d);
  return rep;
}

// Runs a sweep with the plant and returns the set of failed checks over all cases.
std::set<std::string> failedChecks(const std::string& plant, const std::string& args,
                                   int* exitCode) {
  std::set<std::string> failed;
  const json rep = plantedSweep(plant, args, exitCode);
  if (rep.is_object())
    for (const auto& c : rep["cases"])
      for (auto& [k, v] : c["checks"].items())
        if (v == "fail") failed.insert(k);
  return failed;
}

// The plant makes the scenario's reference run unusable: the sweep refuses to run its cases
// (exit 2) and names `problem` on stderr — a gate, not a verdict (verdicts judge crash cases).
void expectReferenceRefused(const std::string& plant, const std::string& args,
                            const std::string& problem) {
  ASSERT_TRUE(plantWired(plant)) << "plant " << plant << " is not consulted by the runtime";
  auto d = freshDir("crashsim-plant-ref-" + plant);
  auto r = sh("CRASHSIM_PLANT=" + plant + " " + plantedBinary().string() + " sweep --jobs 2 " +
              args + " --out " + (d / "out").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find(problem), std::string::npos) << r.out;
  fs::remove_all(d);
}

// The plant is caught by exactly these checks (and the sweep exits 1).
void expectCaughtExactly(const std::string& plant, const std::string& args,
                         const std::set<std::string>& checks) {
  ASSERT_TRUE(plantWired(plant)) << "plant " << plant << " is not consulted by the runtime";
  int rc = -1;
  auto failed = failedChecks(plant, args, &rc);
  EXPECT_EQ(rc, 1) << "a planted fault must make the sweep exit 1";
  EXPECT_EQ(failed, checks) << plant;
}

void expectCaught(const std::string& plant, const std::string& args, const std::string& check) {
  ASSERT_TRUE(plantWired(plant)) << "plant " << plant << " is not consulted by the runtime";
  int rc = -1;
  auto failed = failedChecks(plant, args, &rc);
  EXPECT_EQ(rc, 1) << "a planted fault must make the sweep exit 1";
  EXPECT_TRUE(failed.count(check)) << plant << " must fail " << check;
}

// The plant is invisible to this selection: every case passes and the sweep exits 0 (`why`).
void expectUnseen(const std::string& plant, const std::string& args, const std::string& why) {
  int rc = -1;
  auto failed = failedChecks(plant, args, &rc);
  EXPECT_EQ(rc, 0) << why;
  EXPECT_TRUE(failed.empty()) << why;
}

}  // namespace

TEST(PlantedFault, ResolverCallingDispatchWithoutResponseCompletedFailsV4) {
  expectCaught("resolver_completed_dispatch", "--scenario write-config-port --failpoint P4", "V4");
}

TEST(PlantedFault, T2SkippingTheOperationUpdateFailsV6) {
  expectCaught("t2_skip_operation_update", "--scenario write-config-port --failpoint P6", "V6");
}

TEST(PlantedFault, RepairWritingTheHeaderBeforeTheFactFailsV7) {
  expectCaught("repair_header_first", "--scenario bash-touch-marker --failpoint P2 --double-faults",
               "V7");
}

// Phase 4 (#47): a kill inside a workspace checkpoint capture (P18..P22 of
// git-workspace-checkpoint). The user's .git/index.lock held by the capture while it reads the
// instance is seen only at a kill inside it (P18): at P18#1 (the baseline) the recovery's capture
// after the Write releases it, so the final workspace equals the reference's and only WH1 (the
// user's .git after the kill) can fail. (At P18#2 no later capture releases it, and V8 sees the
// lingering lock in the final workspace too.) A fact committed before its ref leaves, at P19/P20, a
// checkpoint table W does not allow and whose ref is missing: only WH2 (no run row changes, so
// V1-V9 pass).
TEST(PlantedFault, CaptureHoldingTheUsersIndexLockFailsOnlyWH1) {
  expectCaughtExactly("capture_locks_user_index",
                      "--scenario git-workspace-checkpoint --case "
                      "'git-workspace-checkpoint/P18#1/kill'",
                      {"WH1"});
}

// Since the planner's checkpoint gates (#47 e), the fact without its ref also parks the
// continuation (e.3 row 7, table W7: workspace_ref_missing under every policy), where the oracle,
// which does not predict gate codes yet, expects a continuation: V3 and V8 see that park. WH2
// still names the missing artifact itself.
TEST(PlantedFault, CaptureFactBeforeItsRefFailsWH2AndParksTheContinuation) {
  expectCaughtExactly("capture_fact_before_ref",
                      "--scenario git-workspace-checkpoint --failpoint P19 --failpoint P20",
                      {"V3", "V8", "WH2"});
}

// Phase 4 c.4 check 8: git-workspace-ineligible's .gitattributes puts filter=lfs on x.bin, so the
// oracle plans no capture (P18-P22 unreached). A carrier that skips the attribute check captures
// anyway (the baseline and the Write's: P18 twice): the reference run's reach differs from the
// prediction and the sweep refuses the scenario (a gate: no case's verdict could see a capture the
// plan does not arm). The unplanted reference passes it.
TEST(PlantedFault, CaptureSkippingTheAttributeCheckIsRefusedByTheReachGate) {
  expectReferenceRefused("capture_skips_attribute_check",
                         "--scenario git-workspace-ineligible --failpoint P9",
                         "the reference run reached P18 2 time(s), the oracle predicts 0");
  expectUnseen("capture_fact_before_ref", "--scenario git-workspace-ineligible --failpoint P9",
               "no capture, no fact");
}

// Phase 4 c.4 check 7: git-workspace-dirty-submodule's submodule lib has an edited tracked file,
// so the oracle plans no capture. A carrier that skips the submodule check goes on to P18 with the
// dirty gitlink; d.2 step 5's stability check (`diff-files --quiet` sees the submodule's modified
// content) then fails each of the 3 attempts: P18 three times for the baseline and three for the
// Write's capture, each ending `checkpoint_capture_failed` (`unstable`). The reach gate refuses the
// scenario; the unplanted reference passes it.
TEST(PlantedFault, CaptureSkippingTheSubmoduleCheckIsRefusedByTheReachGate) {
  expectReferenceRefused("capture_skips_submodule_check",
                         "--scenario git-workspace-dirty-submodule --failpoint P9",
                         "the reference run reached P18 6 time(s), the oracle predicts 0");
  expectUnseen("capture_fact_before_ref", "--scenario git-workspace-dirty-submodule --failpoint P9",
               "no capture, no fact");
}

TEST(PlantedFault, UnplantedCaptureKillsPass) {
  expectUnseen("capture_fact_before_ref",
               "--scenario git-workspace-checkpoint --failpoint P18 --failpoint P21 "
               "--failpoint P22",
               "the fact is committed before its ref only once the tree and commit exist: a kill "
               "at P18 precedes it, at P21/P22 the ref exists too");
}

// Phase 4 f: a restore that also checks the checkpoint out over the user's directory (f.2: the
// user's directory is never written). At P26 the restore itself completes and the continuation
// runs in the instance (WH7 passes); only WH1's byte identity of the user's directory sees the
// overwritten edit.
TEST(PlantedFault, RestoreOverTheUsersDirectoryFailsOnlyWH1) {
  expectCaughtExactly("restore_over_user_directory",
                      "--scenario git-workspace-restore --failpoint P26", {"WH1"});
}

// Phase 4 f: the transition committed before R's ref exists (a.3.1). Killed at P24 or P26 the store
// holds a transition whose R has no ref (at P25, inside that early transaction, the marker but no
// ref R): rows table R forbids. The next start-up parks (e.3 row 7: R's ref is missing) instead
// of continuing in the instance: WH7 only (the user's directory is untouched).
// Seen: WH7, and V9 (a case's second run gave another verdict; not yet explained, phase4.md).
TEST(PlantedFault, RestoreFactBeforeItsRefFailsWH7) {
  expectCaught("restore_fact_before_ref",
               "--scenario git-workspace-restore --failpoint P24 --failpoint P25 --failpoint P26",
               "WH7");
}

// A kill at P23 precedes the planted early commit, but the next start-up restores again through
// the same planted code: its transition commits and ref R is never created, which WH7 sees after
// recovery (table R, R5: the restored checkpoint's ref resolves).
TEST(PlantedFault, RestoreFactBeforeItsRefAfterAnEarlierKillFailsWH7) {
  expectCaught("restore_fact_before_ref", "--scenario git-workspace-restore --failpoint P23",
               "WH7");
}

// Phase 4 c.2 / i.3 H5: a hermetic git child started without PR_SET_PDEATHSIG in its own process
// group outlives the agent killed at the git barrier G just after its spawn (it runs on to its
// end, a write after the crash). Only WH5 sees it, where the git command is still running when
// the agent has been reaped: a short one may end inside the agent's teardown (most under ASan,
// whose teardown is slow), so every G case of the scenario is swept — seen: 4 of the first 5 in
// release, 8 of 45 under ASan on a loaded VM. --no-determinism: V9's second run would see WH5
// itself differ with that timing.
TEST(PlantedFault, GitChildOutlivingTheKilledAgentFailsOnlyWH5) {
  expectCaughtExactly("git_child_outlives_agent",
                      "--scenario git-workspace-drift --case '*/G#*/kill' --no-determinism",
                      {"WH5"});
}

// Phase 4 g: a confirmed rebaseline (git-workspace-rebaseline: the agent run killed at the Edit's
// P1, the user edits a.txt, the recovery the user confirms killed at P27..P29). A continuation
// that skips its replay notice leaves epoch 2 without one (after P27 and P28 the one continuation
// of the epoch; P29, the notice's own point, is then never reached, which V1 reports): WH4 only —
// the gate still refuses the Edit (WH8), nothing else changes.
TEST(PlantedFault, RebaselineSkippingItsNoticeFailsOnlyWH4) {
  expectCaughtExactly("rebaseline_skips_notice",
                      "--scenario git-workspace-rebaseline --failpoint P27 --failpoint P28",
                      {"WH4"});
}

// The notice committed by every run of the epoch: after a kill at P29 (the notice durable in the
// killed continuation) the next continuation commits a second one: WH4 only.
TEST(PlantedFault, RebaselineRepeatingItsNoticeFailsOnlyWH4) {
  expectCaughtExactly("rebaseline_repeats_notice",
                      "--scenario git-workspace-rebaseline --failpoint P29", {"WH4"});
}

TEST(PlantedFault, UnplantedRebaselineKillsPass) {
  expectUnseen("rebaseline_repeats_notice",
               "--scenario git-workspace-rebaseline --failpoint P27 --failpoint P28",
               "after P27/P28 epoch 2 has one continuation: there is nothing to repeat");
}

// The read-before-write gate left open: the continuation's re-issued Edit of a.txt reaches
// preflight, which refuses it on the user's bytes (its old_string is gone) — not dispatched, no
// byte written (WH1 passes), but not g.4's answer: WH8 only.
TEST(PlantedFault, RebaselineGateLeftOpenFailsOnlyWH8) {
  expectCaughtExactly("rebaseline_gate_open", "--scenario git-workspace-rebaseline --failpoint P28",
                      {"WH8"});
}

TEST(PlantedFault, ToolRunningAgainAfterRecoveryFailsV8) {
  expectCaught("tool_reruns", "--scenario write-config-port --failpoint P6", "V8");
}

// #44 §3: barriers were counted, not named. Every reference run now traces its file steps
// (CRASHSIM_FS_TRACE) and the order each atomic replace needs is checked (verdicts/file_steps.h):
// a rename no directory fsync made durable (once caught only by --mode powerloss's V8) and a
// temp file synced only after the rename published it (caught by no mode before) fail every case
// of the scenario in every mode: the sweep refuses the reference run (exit 2, the step named).
TEST(PlantedFault, ARenameNeverMadeDurableFailsTheFileStepOrderInEveryMode) {
  expectReferenceRefused("tool_skips_dir_fsync", "--scenario write-config-port --failpoint P6",
                         "is never made durable");
  expectReferenceRefused("tool_skips_dir_fsync",
                         "--scenario write-config-port --failpoint P6 --mode powerloss",
                         "is never made durable");
}

TEST(PlantedFault, ATempFileSyncedAfterItsRenameFailsTheFileStepOrder) {
  expectReferenceRefused("tool_syncs_after_rename", "--scenario write-config-port --failpoint P6",
                         "before the temp file's bytes were fsynced");
}

// #44 §3: a replace that unlinks its target before renaming the synced temp file onto it (a
// "portable" replace) keeps every step the file-step trace checks in order, and a process kill
// keeps both name changes or neither. Under power loss the model may persist the unlink and undo
// the rename before the directory fsync (keep_prefix: a prefix of the pending name changes;
// keep_subset: the unlink's own coin), and only D3 sees the target gone — at the F barrier before
// the directory fsync (F#4 of write-config-port's one Write), which the power-loss sweep reaches
// only since it runs the barriers too. Four states (one per crash kind) keep the test a few
// seconds long.
TEST(PlantedFault, AReplaceThatUnlinksItsTargetFirstFailsOnlyD3AtAPowerCutBarrier) {
  const std::string selection = "--scenario write-config-port --case 'write-config-port/F#4/*'";
  expectCaughtExactly("replace_unlinks_target_first", selection + " --mode powerloss --states 4",
                      {"D3"});
  expectUnseen("replace_unlinks_target_first", selection,
               "a process kill at the barriers keeps the unlink and the rename together");
  expectUnseen("replace_unlinks_target_first",
               "--scenario write-config-port --failpoint P3 --failpoint P4 --mode powerloss "
               "--states 4",
               "the named failpoints fall before the unlink and after the directory fsync");
  expectUnseen("none", selection + " --mode powerloss --states 4",
               "a replace that renames over its target keeps the old or the new file");
}

TEST(PlantedFault, UnplantedSweepOfTheSameCasesPasses) {
  expectUnseen("none", "--scenario write-config-port --failpoint P4 --failpoint P6",
               "no plant, no failure");
}

// V1: a killed agent must leave no normal-exit marker; an agent that writes it before the run
// makes every crash look like a clean exit.
TEST(PlantedFault, ExitMarkerWrittenBeforeTheRunFailsV1Only) {
  expectCaughtExactly("exit_marker_first", "--scenario bash-touch-marker --failpoint P4", {"V1"});
}

// V5: the Phase 1 planner is read-only (spec e.2); one that refreshes a stale header writes.
TEST(PlantedFault, PlannerThatWritesAHeaderFailsV5Only) {
  expectCaughtExactly("planner_touches_header", "--scenario bash-touch-marker --failpoint P2",
                      {"V5"});
}

// V8 executions come from the scenario: a Read that runs without an effects line was invisible
// while the expected executions were taken from the (equally broken) reference run.
TEST(PlantedFault, ExecutionNotRecordedFailsV8Only) {
  expectCaughtExactly("read_not_recorded", "--scenario write-config-port --failpoint P6", {"V8"});
}

// #44 §3: file reconcile saw only the swaps the scenarios named — a reconciler that follows a
// symlinked *parent* of the target passed. parent-symlink-swap replaces the target's outer
// directory by a symlink to a directory whose copy holds the expected-after bytes: the contract
// parks reconcile_unreadable; the planted walk follows it and completes the Write (V8), and the
// recovery then reaches the next step's failpoints, which a park does not (V3's reach).
TEST(PlantedFault, AReconcilerThatFollowsASymlinkedParentFailsV8) {
  expectCaughtExactly("reconcile_follows_parent_symlink",
                      "--scenario parent-symlink-swap --failpoint P4", {"V3", "V8"});
}

// The other components of the target's path: a directory in the target's place is not a regular
// file (unreadable, never "absent"); a deleted parent makes the target observably absent
// (diverged, never "unreadable"). Each planted mix-up parks with the wrong reason: V8.
TEST(PlantedFault, AReconcilerThatCallsADirectoryAbsentFailsV8) {
  expectCaught("reconcile_directory_is_absent",
               "--scenario target-becomes-directory --failpoint P4", "V8");
}

TEST(PlantedFault, AReconcilerThatCallsAFileInAParentsPlaceAbsentFailsV8) {
  expectCaught("reconcile_file_parent_is_absent", "--scenario parent-becomes-file --failpoint P4",
               "V8");
}

TEST(PlantedFault, AReconcilerThatCallsAMissingParentUnreadableFailsV8) {
  expectCaught("reconcile_missing_parent_unreadable", "--scenario parent-deleted --failpoint P4",
               "V8");
}

// #44 §3, the generated path mutations (verdicts/path_mutations.h): every component of a
// reconciled target's path × symlink / dir / file / remove, each with spec i's (or h's) outcome.
// Each plant below passes every hand-written case of its scenario (afterCrash included) and is
// caught only by a generated one.
//
// A walk that follows a symlink below the first directory: parent-symlink-swap swaps `src`, which
// the walk still refuses; the generated `src/app` swap (a link to app.decoy holding the expected
// bytes) is followed, the Write completes instead of parking reconcile_unreadable (V8) and the
// continuation reaches failpoints a park does not (V3's reach).
TEST(PlantedFault, AWalkThatFollowsASymlinkBelowTheFirstDirectoryFailsOnlyTheGeneratedSwap) {
  expectUnseen("reconcile_follows_inner_parent_symlink",
               "--scenario parent-symlink-swap --failpoint P4 --path-mutations off",
               "the hand-written scenario swaps the first directory only");
  expectCaughtExactly("reconcile_follows_inner_parent_symlink",
                      "--scenario parent-symlink-swap --case '*~path:src/app:symlink'",
                      {"V3", "V8"});
}

// A host that re-creates a missing workspace root (mkdir -p) before proving it: start-up then
// refuses with workspace_unmarked instead of the contract's workspace_not_found, and has written
// the directory (V8's gate expectation). No hand-written scenario removes the root.
TEST(PlantedFault, AHostThatRecreatesAMissingWorkspaceFailsTheGeneratedRootRemoval) {
  expectUnseen("host_creates_missing_workspace",
               "--scenario write-config-port --failpoint P4 --path-mutations off",
               "no hand-written case removes the workspace root");
  expectCaughtExactly("host_creates_missing_workspace",
                      "--scenario write-config-port --case '*~path:.:remove'", {"V8"});
}

// A host that keeps the workspace path as given instead of its realpath: a root moved behind a
// symlink (spec h: the same workspace, e.6 step 6: workspace_location_changed) is walked through
// the link, which the reconciler refuses to follow, so the Write parks instead of completing and
// the plan never names the move (V8; V3: no continuation reach).
TEST(PlantedFault, AHostThatKeepsTheGivenWorkspacePathFailsTheGeneratedRootSymlink) {
  expectUnseen("workspace_root_as_given",
               "--scenario write-config-port --failpoint P4 --path-mutations off",
               "no hand-written case moves the workspace root");
  expectCaughtExactly("workspace_root_as_given",
                      "--scenario write-config-port --case '*~path:.:symlink'", {"V3", "V8"});
}

// V8 parked branch: a park must leave the workspace as the crash left it.
TEST(PlantedFault, ParkThatRewritesTheTargetFailsV8Only) {
  expectCaughtExactly("park_rewrites_target", "--scenario write-config-port --failpoint P2",
                      {"V8"});
}

// Double-fault state: a bundle committed before its P10 window is durable after the recovery
// kill — only the check of the state the recovery kill left sees it (recovery ends the same).
TEST(PlantedFault, BundleDurableBeforeItsBoundaryFailsTheDoubleFaultStateCheck) {
  expectCaughtExactly("bundle_commits_early",
                      "--scenario write-config-port --failpoint P10 --double-faults", {"V3", "V4"});
}

// Coverage: a runtime that crosses a boundary once more than the scenario implies would leave a
// crash window unplanned; the sweep refuses to run (exit 2) instead of passing a smaller sweep.
TEST(PlantedFault, BoundaryCrossedTwiceIsACoverageErrorExitTwo) {
  ASSERT_TRUE(plantWired("boundary_crossed_twice"));
  auto r = sh("CRASHSIM_PLANT=boundary_crossed_twice " + plantedBinary().string() +
              " sweep --scenario write-config-port 2>&1 >/dev/null");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("reached P6 4 time(s), the oracle predicts 2"), std::string::npos) << r.out;
}

// V8 history: a resume that sends the user's prompt again hands the model a history it never
// had (spec e.9: replay without a duplicate user message); the workspace still ends right.
TEST(PlantedFault, ResumeRepeatingTheUserMessageFailsV8Only) {
  expectCaughtExactly("resume_repeats_user_message", "--scenario write-config-port --failpoint P6",
                      {"V8"});
}

// V7 classification: an interrupted run whose model had finished (P8) must still be sealed
// failed / app_restarted (spec g step 8); sealing it `completed` passed the old header/fact
// agreement check, and the workspace ends right. The continuation that the contract then runs
// never comes, which the recovery reach (V3) sees.
TEST(PlantedFault, RepairSealingAnInterruptedRunCompletedFailsV7AndTheRecoveryReach) {
  expectCaughtExactly("repair_seals_finished_run_completed",
                      "--scenario write-config-port --failpoint P8", {"V3", "V7"});
}

// Startup repair counts only a corrupt tool call as interrupted, so a run killed around a
// dispatched call is sealed run_interrupted: status, failure class and terminal fact are all
// right, only the recovery reason says nothing of the open call. V7 judges the reason by what
// its name claims of the crashed ledger (an unsettled call, by the independent model).
TEST(PlantedFault, RepairReportingAnOpenToolCallAsRunInterruptedFailsV7) {
  expectCaughtExactly("repair_overlooks_interrupted_tool",
                      "--scenario write-config-port --failpoint P2", {"V7"});
}

// The Phase-0 plan passes the resolver's definitely_not_dispatched through instead of mapping it
// to not_dispatched: both V5 processes compute the same wrong plan, so only the comparison with
// the contract's mapping of the oracle's decisions sees it.
TEST(PlantedFault, PlanSkippingTheStatusMappingFailsV5) {
  expectCaughtExactly("plan_skips_status_mapping", "--scenario write-config-port --failpoint P1",
                      {"V5"});
}

// Unnamed crash points: T2 split into two transactions (the response, then journal + CAS) opens
// a window no named failpoint sees (P5 is inside the first, P6 after the second). The store
// COMMIT barrier between them does: the online projection lags the ledger (V6), and host
// start-up's self-check refuses that store (store_projection_mismatch), so recovery fails
// closed instead of finishing the run (V8).
TEST(PlantedFault, T2SplitInTwoTransactionsFailsV6AtABarrierOnly) {
  expectCaughtExactly("t2_split_commit", "--scenario write-config-port --failpoint S",
                      {"V6", "V8"});
  expectUnseen("t2_split_commit", "--scenario write-config-port --no-barriers",
               "no named failpoint falls between the two commits");
}

// Double-fault state at P11: the claim must be durable alone (no target run yet). A target run
// created before the claim's window passes every end-state check; only the check of the state
// the recovery kill left (V3) sees the extra run.
TEST(PlantedFault, TargetRunBeforeTheClaimWindowFailsTheP11StateCheckOnly) {
  expectCaughtExactly("target_run_before_claim_window",
                      "--scenario write-config-port --failpoint P11 --double-faults", {"V3"});
}

// The continuation admission (P14, P15): each window's own bug is caught only by the double
// faults at that window. A saga that refuses a target header without a start never finishes a
// recovery killed at P14 (it passes at P11, where no header exists yet).
TEST(PlantedFault, ClaimRepairRefusingAnExistingTargetFailsV8AtP14Only) {
  expectCaughtExactly("claim_repair_requires_absent_target",
                      "--scenario write-config-port --failpoint P14 --double-faults", {"V8"});
  expectUnseen("claim_repair_requires_absent_target",
               "--scenario write-config-port --failpoint P11 --double-faults",
               "at P11 the target header does not exist yet");
}

// Spec g: the claim saga leaves a runtime_admission start alone. One that abandons it like its
// own claim_repair start still lets recovery finish the task; only the check of how the killed
// continuation's claim was settled sees the abandoned terminal.
TEST(PlantedFault, ClaimSagaAbandoningALiveStartFailsV8AtP15Only) {
  expectCaughtExactly("claim_saga_abandons_live_start",
                      "--scenario write-config-port --failpoint P15 --double-faults", {"V8"});
}

// The live start and its claim's start fields are one transaction: a start the claim never
// records is seen in the state the P15 kill left (V3), and the next recovery fails closed (V8).
TEST(PlantedFault, AdmissionStartTheClaimNeverRecordsFailsV3AtP15) {
  expectCaughtExactly("admission_start_skips_claim_update",
                      "--scenario write-config-port --failpoint P15 --double-faults", {"V3", "V8"});
}

// D1: a store that acknowledges commits without syncing them (synchronous OFF while the store
// was asked for FULL) loses acknowledged facts in a power cut. A process kill keeps the page
// cache, so no kill verdict sees the loss; but the setting is read back from the connection and
// the sweep gates on it (#44 §3: reported below FULL and failing nothing was a blind spot): the
// kill sweep refuses the reference run (exit 2, the setting named).
TEST(PlantedFault, CommitsAcknowledgedWithoutASyncFailD1UnderPowerLoss) {
  expectCaught("store_acknowledges_unsynced",
               "--scenario write-config-port --failpoint P6 --mode powerloss --states 2", "D1");
  expectReferenceRefused("store_acknowledges_unsynced",
                         "--scenario write-config-port --failpoint P6 --no-barriers",
                         "synchronous=OFF");
}

// V8 replay: the continuation keeps a trimmed, unanswered call in the history it hands the model
// (spec j.2 forbids it). The ledger is unchanged and the scripted model simply re-issues the call,
// so only the check of what the provider was handed sees it.
TEST(PlantedFault, ReplayKeepingAnUnansweredCallFailsV8Only) {
  expectCaughtExactly("replay_keeps_unanswered_call", "--scenario write-config-port --failpoint P1",
                      {"V8"});
}

// V9: state that leaks between runs (a marker in the temp directory keyed by the store's path)
// makes the same case behave differently when run again. The sampled second run of P6#1 re-runs
// a tool; the case's own record is the first run's, so only V9 is red.
TEST(PlantedFault, StateLeakingBetweenRunsFailsV9Only) {
  expectCaughtExactly("leftover_reruns_tool", "--scenario write-config-port --failpoint P6",
                      {"V9"});
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path()))
    if (e.path().filename().string().rfind("crashsim-plant-leftover-", 0) == 0)
      fs::remove(e.path());
}

// --no-determinism (the sanitizer sweep's choice) runs no second run: the same plant is then
// unseen, every case's V9 is n/a, no case spends time in the determinism phase; and the flag
// cannot be combined with --verify-determinism (exit 2).
TEST(PlantedFault, NoDeterminismRunsNoSecondRunSoTheLeakIsUnseen) {
  // Its own TMPDIR: the plant's markers must not meet StateLeakingBetweenRunsFailsV9Only's.
  auto d = freshDir("crashsim-plant-no-determinism");
  fs::create_directories(d / "tmp");
  auto r =
      sh("TMPDIR=" + (d / "tmp").string() + " CRASHSIM_PLANT=leftover_reruns_tool " +
         plantedBinary().string() +
         " sweep --jobs 2 --scenario write-config-port --failpoint P6 --no-determinism --out " +
         (d / "out").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  ASSERT_TRUE(fs::exists(d / "out" / "report.json")) << r.out;
  const json rep = json::parse(slurp(d / "out" / "report.json"));
  ASSERT_FALSE(rep["cases"].empty());
  for (const auto& c : rep["cases"]) {
    EXPECT_EQ(c["checks"]["V9"], "n/a") << c["id"];
    EXPECT_EQ(c["phasesMs"].value("determinism", 0.0), 0.0) << c["id"];
  }
  fs::remove_all(d);
  r = sh(crashsimBinary().string() +
         " sweep --scenario write-config-port --no-determinism --verify-determinism --list 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
}

// Stop (--mode stop): each realistic Stop bug turns the stop oracle's V3 red.
TEST(PlantedFault, AToolStartedAfterTheStopFailsV3UnderStopMode) {
  expectCaught("stop_ignores_token", "--mode stop --scenario write-config-port --failpoint P2",
               "V3");
}

TEST(PlantedFault, ASecondTerminalOnADoubleStopFailsV3UnderStopMode) {
  expectCaught("double_stop_second_terminal",
               "--mode stop --scenario write-config-port --failpoint P4", "V3");
}

TEST(PlantedFault, AStopHeaderBeforeItsBatchFailsV3OfTheP13DoubleFault) {
  expectCaught("stop_header_before_fact",
               "--mode stop --double-faults --scenario write-config-port --failpoint P13", "V3");
}

// Stop with a tool that ignores cancellation (the watchdog cases, "+grace"): a grace counted from
// the run's start seals too early; a late T2 accepted after the seal and a seal that reports the
// running tool "not started" both break the sealed state and the park after it.
TEST(PlantedFault, AWatchdogGraceCountedFromTheRunsStartFailsV3OfTheWatchdogCase) {
  expectCaught("watchdog_grace_from_run_start",
               "--mode stop --scenario bash-touch-marker --case '*+grace'", "V3");
}

TEST(PlantedFault, ALateResultAcceptedAfterTheWatchdogSealFailsV3OfTheWatchdogCase) {
  expectCaught("late_result_after_seal",
               "--mode stop --scenario bash-touch-marker --case '*+grace'", "V3");
}

TEST(PlantedFault, AWatchdogThatReportsTheRunningToolNotStartedFailsV3OfTheWatchdogCase) {
  expectCaught("watchdog_forgets_started_tool",
               "--mode stop --scenario bash-touch-marker --case '*+grace'", "V3");
}

// The legacy import in the sweep: a manifest written before the batches ends the import at the
// first kill (the P16#1 state already holds it); a re-run that skips runs with a header leaves the
// run a kill cut half imported (after recovery, and in a killed recovery's state).
TEST(PlantedFault, AManifestBeforeTheImportBatchesFailsV3OfTheImportCases) {
  expectCaught("legacy_manifest_first", "--scenario legacy-import", "V3");
}

TEST(PlantedFault, AnImportReRunSkippingStartedRunsFailsV8OfTheImportCases) {
  expectCaught("legacy_import_skips_started_runs", "--scenario legacy-import", "V8");
  expectCaught("legacy_import_skips_started_runs",
               "--scenario legacy-import --double-faults --failpoint P17", "V3");
}

// #44 §3: the marker is not taken on trust. A continuation run whose continuation-start lacks
// t1_after_preflight_v1 (its calls still go through T1) passed every mode while V3 checked only
// the first run and V4's model read the marker from the ledger it judges. Now V3 checks the first
// event of every run, continuation runs included, and the model decides under the protocol the
// agent wrote (T1), so the resolver's legacy reading of that run disagrees with it.
TEST(PlantedFault, AContinuationStartWithoutTheMarkerFailsV3AndV4) {
  const std::string plant = "continuation_start_without_marker";
  ASSERT_TRUE(plantWired(plant));
  int rc = -1;
  auto failed = failedChecks(plant, "--scenario write-config-port --failpoint P6", &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(failed.count("V3")) << "V3 must check every run's marker";
  EXPECT_TRUE(failed.count("V4")) << "V4's model must not read the marker from the ledger";
}

// #44 §3: the resolver is judged on ledgers the runtime cannot write. `--mode corrupt`'s ledger
// edits (a call, dispatch or response deleted, a call's args changed, the marker removed) hand
// the resolver exactly those shapes, and V4 judges the edited ledger decision by decision against
// the independent model and the contract's decision for the edited operation. Three resolver
// bugs that passed every mode before: each fails V4 of the corrupt sweep.
TEST(PlantedFault, AnOrphanResponseJudgedCompletedFailsV4UnderCorruptMode) {
  // permission-denied: the refused call's synthetic response has no dispatch, so deleting its
  // call leaves an orphan response (spec c.5).
  int rc = -1;
  ASSERT_TRUE(plantWired("resolver_orphan_response_completed"));
  // At P3 (the refused call answered, the next call's T1 pending) and P6 the call_delete damage
  // leaves the orphan; the whole scenario (247 cases, 50 s under ASan) finds it at 8 points.
  auto failed = failedChecks("resolver_orphan_response_completed",
                             "--mode corrupt --scenario permission-denied --states 19 "
                             "--failpoint P3 --failpoint P6",
                             &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(failed.count("V4"));
}

TEST(PlantedFault, ADispatchWhoseArgsHashDiffersUnflaggedFailsV4UnderCorruptMode) {
  int rc = -1;
  ASSERT_TRUE(plantWired("resolver_ignores_args_hash"));
  auto failed = failedChecks("resolver_ignores_args_hash",
                             "--mode corrupt --scenario write-config-port --states 19 "
                             "--failpoint P6",
                             &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(failed.count("V4"));
}

// Two capabilities reach a legacy call: the corrupt sweep's marker_delete (the agent's own run
// made legacy) and the legacy-import scenario's run cut mid-call (V4 of the import cases judges
// every imported run against the model of the scenario's events).
TEST(PlantedFault, ALegacyCallWithoutDispatchJudgedNotDispatchedFailsV4UnderCorruptMode) {
  int rc = -1;
  ASSERT_TRUE(plantWired("resolver_legacy_call_not_dispatched"));
  auto failed = failedChecks("resolver_legacy_call_not_dispatched",
                             "--mode corrupt --scenario write-config-port --states 19 "
                             "--failpoint P1",
                             &rc);
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(failed.count("V4"));
}

TEST(PlantedFault, ALegacyCallWithoutDispatchJudgedNotDispatchedFailsV4OfTheImportCases) {
  expectCaughtExactly("resolver_legacy_call_not_dispatched", "--scenario legacy-import", {"V4"});
}

// V5's lineage digests (spec e.7): a prefix digest over the events' ids and positions only is
// self-consistent — planning, the claim, execution revalidation and the lineage traversal all
// compute it alike — so it passed every mode. V5 now computes every recorded digest again from the
// contract's byte rules (the continuation a primary kill case's recovery runs), and the
// ancestor-tamper probe of the double faults edits an ancestor's terminal before recovery: the
// planted runtime continues on the edited history where the contract parks with
// source_prefix_digest_mismatch. Each capability alone turns the sweep red.
TEST(PlantedFault, PrefixDigestIgnoringThePayloadsFailsV5) {
  expectCaughtExactly("prefix_digest_ignores_payloads",
                      "--scenario write-config-port --failpoint P6", {"V5"});
  int rc = -1;
  const json rep =
      plantedSweep("prefix_digest_ignores_payloads",
                   "--scenario write-config-port --failpoint P11 --double-faults", &rc);
  EXPECT_EQ(rc, 1);
  size_t tampered = 0, cases = 0;
  for (const auto& c : rep.value("cases", json::array())) {
    ++cases;
    const std::string reason = c["reasons"].value("V5", "");
    if (reason.rfind("ancestor tamper", 0) == 0) ++tampered;
  }
  EXPECT_GT(cases, 0u);
  EXPECT_EQ(tampered, cases) << rep.dump().substr(0, 2000);
}

// The same continuation states without a plant: the recomputed digests agree with the runtime's
// and the tampered ancestor parks the plan.
TEST(PlantedFault, UnplantedContinuationDoubleFaultsPass) {
  expectUnseen("none",
               "--scenario write-config-port --failpoint P11 --failpoint P14 --double-faults",
               "no plant, no failure");
}

// #44 §3: a continuation is killed inside its own tool calls. A continuation run whose own call
// runs its implementation before its T1 commits passed every mode: no case killed a continuation
// between its call and its result, and run to its end it leaves the ledger and workspace a correct
// one leaves. The double faults +R:P0..P7 (the continuation of P0#1 and P7#1 killed at each of its
// own boundaries) see the side effect no T1 covers; every other case of the same sweep passes.
TEST(PlantedFault, AContinuationRunningItsToolBeforeT1FailsOnlyTheContinuationKills) {
  const std::string plant = "continuation_runs_tool_before_t1";
  ASSERT_TRUE(plantWired(plant));
  int rc = -1;
  const json rep =
      plantedSweep(plant, "--scenario write-config-port --double-faults --no-barriers", &rc);
  EXPECT_EQ(rc, 1);
  std::set<std::string> failed;
  size_t continuationKills = 0, red = 0;
  for (const auto& c : rep.value("cases", json::array())) {
    const std::string id = c.value("id", "");
    const bool own = id.find("+R:P") != std::string::npos && id.size() > id.find("+R:P") + 4 &&
                     id[id.find("+R:P") + 5] == '#' && id[id.find("+R:P") + 4] <= '7';
    continuationKills += own;
    if (c.value("verdict", "") != "fail") continue;
    ++red;
    EXPECT_TRUE(own) << id << " failed: only a continuation killed inside its own calls may see it";
    for (auto& [k, v] : c["checks"].items())
      if (v == "fail") failed.insert(k);
  }
  EXPECT_GT(continuationKills, 0u);
  EXPECT_GT(red, 0u);
  EXPECT_EQ(failed, (std::set<std::string>{"V3", "V4", "V8"}));
}

// The same continuation kills without a plant pass.
TEST(PlantedFault, UnplantedContinuationKillsPass) {
  expectUnseen("none",
               "--scenario write-config-port --scenario continuation-chain --double-faults --case "
               "'*+R:P[0-7]#*'",
               "no plant, no failure");
}

// #44 §3: T1 says the operation already exists (spec f.4). No case reached the agent's refusal:
// recovery never re-prepares an operation. The T1-exists probe of every kill-mode P2#1 case
// delivers the run request twice to a host whose clock the harness drives, so T1 of the first
// dispatched call returns created:false; an agent that runs the implementation anyway fails V8 of
// exactly those cases (the effects log, the hits past T1), and nothing else.
TEST(PlantedFault, AToolRunDespiteCreatedFalseFailsV8OfTheT1ExistsProbe) {
  const std::string plant = "t1_exists_runs_tool";
  ASSERT_TRUE(plantWired(plant));
  int rc = -1;
  const json rep = plantedSweep(
      plant, "--scenario write-config-port --scenario bash-touch-marker --no-barriers", &rc);
  EXPECT_EQ(rc, 1);
  std::set<std::string> red;
  for (const auto& c : rep.value("cases", json::array())) {
    if (c.value("verdict", "") != "fail") continue;
    red.insert(c.value("id", ""));
    for (auto& [k, v] : c["checks"].items())
      if (v == "fail") {
        EXPECT_EQ(k, "V8") << c.value("id", "");
        EXPECT_EQ(c["reasons"].value(k, "").rfind("T1 exists: ", 0), 0u) << c["reasons"].dump();
      }
  }
  EXPECT_EQ(red,
            (std::set<std::string>{"bash-touch-marker/P2#1/kill", "write-config-port/P2#1/kill"}));
  expectUnseen("none", "--scenario write-config-port --scenario bash-touch-marker --failpoint P2",
               "no plant: T1's created:false stops the implementation");
}

// #44 §3: no case raced two hosts. The "+H2" cases release two `crashsim-agent recover` together
// on a primary's crash state (verdicts/h1_race.h): every writer holds the host lock, so one
// recovers and the other is refused (host_already_active) or finds nothing left. Which of the
// interleavings a broken host meets depends on the scheduler, so each plant runs the race at the
// first hit of P0, P1, P6 and P7 of two scenarios (all continue the task) and must turn H1 red in
// some of them; the unplanted races all pass.
namespace {
const char* const kRaces =
    "--double-faults --scenario write-config-port --scenario read-then-write --case "
    "'*/P[0167]#1/kill+H2'";
}  // namespace

// A host that takes its lock only for the continuation run it starts: start-up's repair, reconcile,
// planning and claim run beside the other racer, which then fails its claim (existing), parks
// continuation_started_indeterminate or refuses only after it committed. One recovery at a time
// (no race) never notices.
TEST(PlantedFault, AHostLockTakenOnlyForTheContinuationFailsH1OfTheRaces) {
  expectCaught("host_lock_after_claim", kRaces, "H1");
  expectUnseen("host_lock_after_claim", "--scenario write-config-port --failpoint P6",
               "one recovery at a time: when the lock is taken changes nothing");
}

// The claim read and written in two transactions (the writer trusts the planner's lookup and
// upserts, spec e.8's TOCTOU): the host lock hides it — the second racer is refused or plans after
// the first claimed — and it shows once the lock lets both plan: both racers log `acquired`.
TEST(PlantedFault, AClaimReadAndWrittenApartIsCaughtByH1WhenTheLockLetsBothIn) {
  ASSERT_TRUE(plantWired("claim_insert_trusts_plan"));
  expectUnseen("claim_insert_trusts_plan", kRaces,
               "the host lock serialises the racers: the second never claims");
  int rc = -1;
  const json rep = plantedSweep("host_lock_after_claim,claim_insert_trusts_plan", kRaces, &rc);
  EXPECT_EQ(rc, 1);
  int twoAcquired = 0;
  for (const auto& c : rep.value("cases", json::array()))
    if (c["reasons"].value("H1", "").find("2 racers acquired the continuation claim") !=
        std::string::npos)
      ++twoAcquired;
  EXPECT_GT(twoAcquired, 0) << rep.dump().substr(0, 2000);
}

TEST(PlantedFault, UnplantedRacesPass) {
  expectUnseen("none", kRaces, "no plant: one racer recovers, the other is refused");
}

// #44 §3: a continuation is never killed at its own barriers. The continuation-start and the
// claim's record of it are one transaction (spec g); a recovery that commits them in two leaves,
// if it dies between the two COMMITs, a target run that begins with a start its claim does not
// record — and the next recovery's claim saga then takes the live start for a target without one.
// No named failpoint falls between the two commits (P14 is before both, P15 after), so only the
// recovery process's own S barrier kills (+R:S#k, verdicts/recovery_barrier.h) see it: V3 on the
// killed state, V8 on what the next recovery leaves. Every other case of the scenario's
// double-fault sweep, first-run barriers included, passes.
TEST(PlantedFault, AStartSplitFromItsClaimRecordFailsOnlyTheRecoveryBarrierKills) {
  const std::string plant = "admission_start_split_commit";
  ASSERT_TRUE(plantWired(plant));
  int rc = -1;
  const json rep = plantedSweep(plant, "--scenario write-config-port --double-faults", &rc);
  EXPECT_EQ(rc, 1);
  std::set<std::string> failed;
  size_t recoveryBarrierKills = 0, red = 0;
  for (const auto& c : rep.value("cases", json::array())) {
    const std::string id = c.value("id", "");
    const bool own = id.find("+R:S#") != std::string::npos || id.find("+R:F#") != std::string::npos;
    recoveryBarrierKills += own;
    if (c.value("verdict", "") != "fail") continue;
    ++red;
    EXPECT_TRUE(own) << id << " failed: only a recovery killed at its own barrier may see it";
    for (auto& [k, v] : c["checks"].items())
      if (v == "fail") failed.insert(k);
  }
  EXPECT_GT(recoveryBarrierKills, 0u);
  EXPECT_GT(red, 0u);
  EXPECT_EQ(failed, (std::set<std::string>{"V3", "V8"}));
}

// The same recovery barrier kills without a plant pass (two scenarios: a bundle primary and a
// continuation that itself continues a chain).
TEST(PlantedFault, UnplantedRecoveryBarrierKillsPass) {
  expectUnseen("none",
               "--scenario write-config-port --scenario continuation-chain --double-faults --case "
               "'*+R:[SF]#*'",
               "no plant, no failure");
}

// Phase 4 h.1: a carrier GC that ignores the facts deletes the accepted checkpoints' refs
// (git-workspace-gc: the agent run killed at the baseline capture's P20, the recovery's GC with
// orphanGraceMs 0 killed at P30, the recovery to the end). No other verdict looks at the refs
// after a GC: WH3 only.
TEST(PlantedFault, GcDeletingAReferencedRefFailsOnlyWH3) {
  expectCaughtExactly("gc_deletes_referenced_ref", "--scenario git-workspace-gc --failpoint P30",
                      {"WH3"});
}

TEST(PlantedFault, UnplantedGcKillPasses) {
  expectUnseen("rebaseline_repeats_notice", "--scenario git-workspace-gc --failpoint P30",
               "the GC case confirms no rebaseline");
}
