// A kill inside the carrier GC (workspace-continuity-contract.md h.5, i.1 P30, j.2 vector 8;
// oracle.h predictedGc): the agent run killed at the first capture's P20 (table W4: an orphan
// ref, no fact), judged by V1–V7 as the crash-path kill whose ledger state it leaves; the
// recovery (its continuation, then the GC of the scenario's gcOrphanGraceMs 0) killed at P30#1,
// the first orphan ref deleted; then the recovery to the end, whose GC finishes. Judged by WH1
// (the user's .git as seeded, the work tree the scenario's expect), WH3 (every accepted fact's
// ref and commit kept after the kill and after recovery; no orphan left after the GC that ran to
// its end) and WH3's "a kill at P30 changes no plan": the dry-run start-up plans after the kill
// equal those after the GC finished. V8 is n/a: the continuation ran in the killed recovery,
// before its GC (V8 judges the same crash in the scenario's P0#1 case).
#include <fmt/format.h>

#include <set>

#include "crashsim/host.h"
#include "modes/case_run.h"
#include "verdicts/wh1_user_git.h"
#include "verdicts/wh3_gc_retention.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {

namespace {

// The plans a dry-run host start-up makes on the store (a private copy: nothing written).
Json dryRunPlans(CaseRun& cr) {
  HostStartupOptions o;
  o.storeDir = cr.store;
  o.workspaceDir = cr.ws;
  o.scenario = &cr.sc.spec;
  o.dryRun = true;
  CancellationToken cancel;
  try {
    return hostStartup(o, cancel).toJson().value("plans", Json());
  } catch (const std::exception& e) {
    return Json{{"error", e.what()}};
  }
}

// WH3's problems over the case's moments. The GC deletes in refName order, and the refNames
// derive from the runs' boundaries (their timestamps), so which moment first sees a deleted ref
// differs between two runs of the case: the verdict's reason names the kinds of problem only
// (stable for V9); each problem with its moment goes to the case's narrative.
class Wh3 {
 public:
  explicit Wh3(CaseRun& cr) : cr_(cr) {}
  void judge(const std::string& problem, const char* when) {
    if (problem.empty()) return;
    cr_.say(std::string("WH3 ") + when + problem);
    const std::string kind = problem.substr(0, problem.find(':'));
    if (kind == "h.1")
      kinds_.insert("h.1: the GC deleted a ref or commit an accepted checkpoint names");
    else if (kind == "h.2")
      kinds_.insert("h.2: an orphan ref survived the GC that ran to its end (orphanGraceMs 0)");
    else
      kinds_.insert(problem);
  }
  // `unjudged`: why WH3 is n/a when nothing was seen (the case ended early).
  void report(const char* unjudged = nullptr) {
    if (kinds_.empty() && unjudged) return cr_.checks.na("WH3", unjudged);
    if (kinds_.empty()) return cr_.checks.pass("WH3");
    std::string reason;
    for (const auto& k : kinds_) reason += (reason.empty() ? "" : "; ") + k;
    cr_.checks.fail("WH3", reason + " (each moment: crashsim run --keep)");
  }

 private:
  CaseRun& cr_;
  std::set<std::string> kinds_;
};

}  // namespace

void runGcCase(CaseRun& cr) {
  Checks& c = cr.checks;
  const auto at = predictedGc(cr.sc);
  if (!at) {
    c.fail("V1", "oracle: scenario " + cr.sc.id + " runs no GC after an orphan ref");
    return;
  }
  // 1. The agent run killed at the first capture's P20; V2–V7 on the ledger it leaves.
  if (!killWorkspaceAgentRun(cr, points::P20, at->captureHit, at->ledgerPoint, at->ledgerHit))
    return;
  Wh3 retention(cr);
  retention.judge(wh3::gcRetentionProblem(cr.store, false), "after the run's kill: ");
  // 2. The recovery: its continuation, then the GC, killed at P30#1.
  SpawnSpec gc = recoverSpec(cr.opts, cr.sc, cr.store, cr.ws);
  gc.timeout = std::chrono::milliseconds(60000);
  gc.stderrFile = cr.dir / "recover1.stderr";
  gc.stdoutFile = cr.dir / "recover1.stdout";
  if (!killWorkspaceRecovery(cr, gc, "the recovery", "the GC was not killed at P30 (V1 failed)"))
    return retention.report("the GC was not killed at P30 (V1 failed)");
  judgeAt(c, "WH1", wh1::userGitProblem(cr.ref.templateWorkspace, cr.ws), "after the kill: ");
  retention.judge(wh3::gcRetentionProblem(cr.store, false), "after the kill: ");
  const Json plansAfterKill = dryRunPlans(cr);
  // 3. The recovery to the end: its GC finishes (h.5: each step idempotent).
  SpawnSpec recover = recoveryToEnd(cr.opts, cr.sc, cr.store, cr.ws, cr.dir);
  const ChildResult r = runRecoveryToEnd(cr, recover);
  if (!r.exited || r.exitCode != 0)
    retention.judge("the recovery to the end failed: crashsim-agent recover " + r.describe(),
                    "after recovery: ");
  judgeAt(c, "WH1", wh1::userGitProblem(cr.ref.templateWorkspace, cr.ws), "after recovery: ");
  for (const auto& line : workspace::expectedProblems(cr.sc.spec, cr.ws))
    c.fail("WH1", "after recovery: " + line);
  retention.judge(wh3::gcRetentionProblem(cr.store, true), "after recovery: ");
  const Json plansAfterGc = dryRunPlans(cr);
  if (plansAfterGc != plansAfterKill) {
    cr.say("WH3 plans after the kill " + plansAfterKill.dump() + ", after the GC finished " +
           plansAfterGc.dump());
    retention.judge("a kill at P30 changed the plan the next start-up makes", "after recovery: ");
  }
  retention.report();
  c.na("V8",
       "a GC case: the continuation ran in the killed recovery before its GC (V8 judges that "
       "crash in the scenario's P0#1 case); the files are WH1's");
}

}  // namespace crashsim::harness
