// A kill inside an isolated restore (workspace-continuity-contract.md f, table R; oracle.h
// predictedRestore): the agent run killed at the last capture's P22 (C accepted and covering the
// crash), judged by V1–V7 as the crash-path kill whose ledger it leaves; the scenario's afterCrash
// edit drifts the user's directory; the recovery process, which parks exactly
// [workspace_drifted] and restores C, killed at P23–P26#1; then the recovery to the end. Judged
// by WH1 (the user's .git as seeded, and the whole user directory byte-identical from the edit
// on: verdicts/wh1_user_dir.h) and WH7 (table R's row after the kill; the restored epoch and
// the continuation bound to it after recovery: verdicts/wh7_restore.h). V8 is WH7's here: the
// task ends in the restored instance, not in the user's directory.
#include <fmt/format.h>

#include "modes/case_run.h"
#include "verdicts/wh7_restore.h"

namespace crashsim::harness {

void runRestoreCase(CaseRun& cr) {
  Checks& c = cr.checks;
  const auto at = predictedRestore(cr.sc);
  if (!at) {
    c.fail("V1", "oracle: scenario " + cr.sc.id + " makes no isolated restore");
    return;
  }
  // 1. The agent run killed at the last capture's P22; V2–V7 on the ledger it leaves.
  if (!killWorkspaceAgentRun(cr, points::P22, at->captureHit, at->ledgerPoint, at->ledgerHit))
    return;
  // 2. The user edits the workspace (the scenario's afterCrash): the drift.
  const UserDirBytes userAfterEdit = applyUserDrift(cr);
  // 3. The recovery that restores, killed at the case's point.
  SpawnSpec first = recoverSpec(cr.opts, cr.sc, cr.store, cr.ws);
  first.timeout = std::chrono::milliseconds(60000);
  first.stderrFile = cr.dir / "recover1.stderr";
  first.stdoutFile = cr.dir / "recover1.stdout";
  if (!killWorkspaceRecovery(cr, first, "the recovery process",
                             "the restore was not killed at its point (V1 failed)"))
    return;
  judgeUserWorkspace(cr, userAfterEdit, "after the kill: ");
  judgeAt(c, "WH7", wh7::restoreKillProblem(cr.store, cr.id.failpoint, at->checkpointsBefore),
          "after the kill: ");
  // 4. The recovery to the end: residue quarantined, restored (again) or found, continued there.
  recoverToEndKeepingTheUsersWorkspace(cr, recoveryToEnd(cr.opts, cr.sc, cr.store, cr.ws, cr.dir),
                                       "WH7", userAfterEdit);
  judgeAt(c, "WH7", wh7::restoredContinuationProblem(cr.store, cr.sc.spec, at->checkpointsBefore),
          "after recovery: ");
  c.na("V8",
       "a restore case: the task ends in the restored instance (WH7), the user's directory "
       "stays as the user left it (WH1)");
}

}  // namespace crashsim::harness
