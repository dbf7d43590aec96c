// The steps the Phase 4 recovery cases share (modes/case_run.h): the agent run killed before the
// recovery under test, and a verdict judged at several moments.
#include <fmt/format.h>

#include "modes/case_run.h"
#include "verdicts/v1_kill.h"
#include "verdicts/wh1_user_dir.h"
#include "verdicts/wh1_user_git.h"
#include "verdicts/wh5_git_children.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {

void judgeAt(Checks& c, const char* check, const std::string& problem, const char* when) {
  if (!problem.empty())
    c.fail(check, when + problem);
  else if (!c.failed(check))
    c.pass(check);
}

void judgeSubmoduleGit(CaseRun& cr, const std::filesystem::path& ws, const char* when) {
  const auto& git = cr.sc.spec.git;
  if (!git || git->submodules.empty()) return;
  // A generated change of the workspace root (path_mutations.h) is the harness's own move or
  // removal of the user's directory, .git included: not the run's write.
  if (cr.id.pathMutation && cr.id.pathMutation->component == ".") {
    cr.checks.na("WH1", "the generated change replaced the workspace root, .git included");
    return;
  }
  judgeAt(cr.checks, "WH1", wh1::userGitProblem(cr.ref.templateWorkspace, ws), when);
}

bool killWorkspaceAgentRun(CaseRun& cr, CrashPoint armAt, int armHit, CrashPoint ledgerPoint,
                           int ledgerHit) {
  Checks& c = cr.checks;
  copyDir(cr.ref.templateWorkspace, cr.ws);
  SpawnSpec run = runSpec(cr.opts, cr.sc, cr.store, cr.ws);
  run.stderrFile = cr.dir / "run.stderr";
  run.stdoutFile = cr.dir / "run.stdout";
  // A git repository run with its captures, and recoveries that restore or rebaseline (git
  // children, full verification, fsyncs) then continue: more time than a plain case.
  run.timeout = std::chrono::milliseconds(60000);
  run.watchDescendants = true;
  const auto child = cr.driver.crashAt(run, armAt, armHit);
  cr.ph.child(child, "run");
  cr.ph.to("verify");
  wh5::judgeKill(cr.sc, child, "the run: ", c);
  cr.say(fmt::format("agent run armed at {}#{}: {}", armAt.name(), armHit, child.describe()));
  if (auto bad = killProblem(child, armAt.str(), armHit, run, cr.store); !bad.empty()) {
    c.fail("V1", bad);
    for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"}) c.na(v, "no crash state (V1 failed)");
    return false;
  }
  CaseId ledgerId = cr.id;
  ledgerId.failpoint = ledgerPoint;
  ledgerId.hit = ledgerHit;
  checkNamedCrash(ledgerId, expectCase(cr.sc, ledgerPoint, ledgerHit), cr.store, cr.dir, cr.opts,
                  c);
  return true;
}

bool killWorkspaceRecovery(CaseRun& cr, SpawnSpec spec, const std::string& who,
                           const char* whyNoV8) {
  Checks& c = cr.checks;
  spec.watchDescendants = true;
  const auto r = cr.driver.crashAt(spec, cr.id.failpoint, cr.id.hit);
  cr.ph.child(r, "run");
  cr.ph.to("verify");
  wh5::judgeKill(cr.sc, r, (who + ": ").c_str(), c);
  cr.say(fmt::format("{} armed at {}#{}: {}", who, cr.id.failpointName(), cr.id.hit, r.describe()));
  if (auto bad = killProblem(r, cr.id.failpointName(), cr.id.hit, spec, cr.store); !bad.empty()) {
    c.fail("V1", who + ": " + bad);
    c.na("V8", whyNoV8);
    return false;
  }
  c.pass("V1");
  return true;
}

UserDirBytes applyUserDrift(CaseRun& cr) {
  cr.ph.to("setup");
  workspace::applyAfterCrash(cr.sc.spec, cr.ws);
  cr.say("applied the scenario's afterCrash mutations (the drift)");
  return wh1::userDirBytes(cr.ws);
}

void judgeUserWorkspace(CaseRun& cr, const UserDirBytes& userAfterEdit, const char* when) {
  judgeAt(cr.checks, "WH1", wh1::userGitProblem(cr.ref.templateWorkspace, cr.ws), when);
  judgeAt(cr.checks, "WH1", wh1::userDirProblem(userAfterEdit, cr.ws), when);
}

ChildResult runRecoveryToEnd(CaseRun& cr, SpawnSpec& recover) {
  recover.timeout = std::chrono::milliseconds(60000);
  const ChildResult r = cr.driver.runToEnd(recover);
  cr.ph.child(r, "recovery");
  cr.ph.to("v8");
  cr.say(fmt::format("recovery to the end: {}", r.describe()));
  return r;
}

void recoverToEndKeepingTheUsersWorkspace(CaseRun& cr, SpawnSpec recover, const char* owner,
                                          const UserDirBytes& userAfterEdit) {
  const ChildResult r = runRecoveryToEnd(cr, recover);
  if (!r.exited || r.exitCode != 0)
    cr.checks.fail(owner, "after recovery: crashsim-agent recover " + r.describe() + ": " +
                              lastLine(recover.stderrFile));
  judgeUserWorkspace(cr, userAfterEdit, "after recovery: ");
  for (const auto& line : workspace::afterCrashProblems(cr.sc.spec, cr.ws))
    cr.checks.fail("WH1", "after recovery: " + line);
}

}  // namespace crashsim::harness
