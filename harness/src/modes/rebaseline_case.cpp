// A kill inside a confirmed durable rebaseline (workspace-continuity-contract.md g, table B;
// oracle.h predictedRebaseline): the agent run killed at the first Write/Edit's P1 (its call
// committed, not dispatched; the baseline covers the crash), judged by V1–V7 as that crash-path
// kill; the scenario's afterCrash edit drifts the user's directory; a recovery parks exactly
// [workspace_drifted] and names the boundary (plan.boundaryManifestDigest) the user confirms; the
// recovery given that confirmation (`--rebaseline <digest>`) killed at P27–P29#1; then the
// recovery to the end, confirming again only where table B says the plan parks as before (B4,
// after P27). Judged by WH1 (the user's .git as seeded, and the whole user directory
// byte-identical from the edit on), WH4 (table B's row after the kill, one notice after recovery)
// and WH8 (the gated Edit refused pre-T1). V8 is n/a: the task ends with the user's files, which
// the rebaseline accepted (WH1 and afterCrash.expect judge them).
#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "modes/case_run.h"
#include "verdicts/wh4_rebaseline_notice.h"
#include "verdicts/wh8_rebaseline_gate.h"

namespace crashsim::harness {

namespace {

// The last line of a process's stdout as JSON (crashsim-agent's summary), or null.
Json summaryOf(const std::filesystem::path& stdoutFile) {
  std::ifstream in(stdoutFile);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  try {
    return Json::parse(last);
  } catch (const std::exception&) {
    return Json();
  }
}

}  // namespace

void runRebaselineCase(CaseRun& cr) {
  Checks& c = cr.checks;
  const auto at = predictedRebaseline(cr.sc);
  if (!at) {
    c.fail("V1", "oracle: scenario " + cr.sc.id + " confirms no rebaseline");
    return;
  }
  // 1. The agent run killed at the armed call's P1; V2–V7 on the ledger it leaves.
  if (!killWorkspaceAgentRun(cr, points::P1, at->ledgerHit, points::P1, at->ledgerHit)) return;
  const auto timeout = std::chrono::milliseconds(60000);
  // 2. The user edits the workspace (the scenario's afterCrash): the drift.
  const UserDirBytes userAfterEdit = applyUserDrift(cr);
  // 3. A recovery parks and prints the boundary the user confirms (g.1 item 1).
  SpawnSpec park = recoverSpec(cr.opts, cr.sc, cr.store, cr.ws);
  park.timeout = timeout;
  park.stderrFile = cr.dir / "park.stderr";
  park.stdoutFile = cr.dir / "park.stdout";
  const ChildResult p = cr.driver.runToEnd(park);
  cr.ph.child(p, "recovery");
  const Json plan = summaryOf(park.stdoutFile).value("plan", Json::object());
  const std::string digest = plan.value("boundaryManifestDigest", "");
  cr.say(fmt::format("the parking recovery: {}; digest {}", p.describe(), digest));
  // e.3: under driftAction offer_rebaseline, with g.1 2–6 holding (the case confirms), the park
  // names the rebaseline the user may confirm.
  const Json offered{
      {"code", "rebaseline_available"},
      {"detail", {{"sessionId", plan.value("sessionId", "")}, {"boundaryManifestDigest", digest}}}};
  const Json diagnostics = plan.value("diagnostics", Json::array());
  if (!p.exited || p.exitCode != 0 ||
      plan.value("rejectionReasons", Json()) !=
          Json::array({cr.sc.spec.afterCrash->parkedReason}) ||
      digest.empty() ||
      std::find(diagnostics.begin(), diagnostics.end(), offered) == diagnostics.end()) {
    c.fail("WH4", fmt::format("before the confirmation: the recovery {} planned {}, want a park "
                              "[{}] naming boundaryManifestDigest and rebaseline_available",
                              p.describe(), plan.dump(), cr.sc.spec.afterCrash->parkedReason));
    c.na("V8", "no rebaseline was confirmed");
    return;
  }
  // The parking recovery exited normally and left its normal-exit marker; the confirmed
  // recovery's kill must leave none of its own (V1), so the parking one's goes first.
  std::filesystem::remove(cr.store / "agent-exit.json");
  // 4. The recovery the user confirms, killed at the case's point.
  SpawnSpec confirmed = recoverSpec(cr.opts, cr.sc, cr.store, cr.ws);
  confirmed.args.insert(confirmed.args.end(), {"--rebaseline", digest});
  confirmed.timeout = timeout;
  confirmed.stderrFile = cr.dir / "recover1.stderr";
  confirmed.stdoutFile = cr.dir / "recover1.stdout";
  if (!killWorkspaceRecovery(cr, confirmed, "the confirmed recovery",
                             "the rebaseline was not killed at its point (V1 failed)"))
    return;
  judgeUserWorkspace(cr, userAfterEdit, "after the kill: ");
  judgeAt(c, "WH4", wh4::rebaselineKillProblem(cr.store, cr.sc.spec, cr.id.failpoint, *at),
          "after the kill: ");
  // 5. The recovery to the end (table B: the confirmation again only after P27).
  SpawnSpec recover = recoveryToEnd(cr.opts, cr.sc, cr.store, cr.ws, cr.dir);
  if (expectedRebaselineKill(cr.id.failpoint).confirmAgain)
    recover.args.insert(recover.args.end(), {"--rebaseline", digest});
  recoverToEndKeepingTheUsersWorkspace(cr, recover, "WH4", userAfterEdit);
  judgeAt(c, "WH4", wh4::noticeProblem(cr.store, cr.sc.spec, *at), "after recovery: ");
  judgeAt(c, "WH8", wh8::gateProblem(cr.store, cr.sc.spec, *at), "after recovery: ");
  c.na("V8",
       "a rebaseline case: the task ends with the files the user edited and the rebaseline "
       "accepted (WH1), the notice and the gate are WH4's and WH8's");
}

}  // namespace crashsim::harness
