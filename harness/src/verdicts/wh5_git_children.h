// verdicts/wh5_git_children.h — WH5 (workspace-continuity-contract.md i.3 H5, c.2 hygiene): no git
// child outlives the agent that started it.
//
// Expected, from the contract alone: every hermetic git child runs in its own process group with
// PR_SET_PDEATHSIG(SIGKILL), so when the agent is SIGKILLed (at any point, and at the barrier G
// just after a git child was spawned, where one is certain to be running) its children die with
// it. The supervisor lists the agent's descendants just before the kill and waits 2 s after the
// reaping for each to be gone (driver/descendants.h); a survivor fails the case with
// `git_child_survived` and is killed before the store is reopened.
//
// Judged on every kill of a Phase 4 scenario (its workspacePolicy captures): the crashed run and,
// in a double fault or a restore case, the killed recovery process. Cannot see: a child that
// is not a descendant any more when the kill comes (one the agent double-forked away); a child
// without PR_SET_PDEATHSIG whose command ends by itself before the agent is reaped (the agent's
// exit tears its memory down first — long under ASan — and only then signals its children, so a
// short git command ends unseen; being the orphans' subreaper and reading their exit status, or
// stopping them by ptrace before the kill, would see it: not built).
#pragma once

#include <string>

#include "crashsim/harness/scenario.h"
#include "crashsim/harness/supervisor.h"
#include "verdicts/verdict.h"

namespace crashsim::harness::wh5 {

// Whether WH5 judges the scenario's kills (its workspacePolicy is not `disabled`).
bool applies(const Scenario& sc);

// WH5 on one SIGKILLed agent process (`killed`, the supervisor's result), `when` naming which
// ("the run: ", "the recovery process: "): fail with git_child_survived and the survivors, or
// pass unless an earlier kill of the case failed it. Nothing when the scenario is no Phase 4 one.
void judgeKill(const Scenario& sc, const ChildResult& killed, const char* when, Checks& c);

}  // namespace crashsim::harness::wh5
