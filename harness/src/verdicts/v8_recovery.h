// verdicts/v8_recovery.h — V8: recovery to the end.
//
// Proves: after `crashsim-agent recover` ran to the end, each scenario call ran as often as the
// contract says (expected executions from the scenario and the oracle, never from a run), every
// run is terminal, the session's history is the contract's (one user message, continuation
// runs begin with their continuation-start at the source's full ledger, no call answered twice
// or re-issued after its dispatch), and either the task finished (the workspace meets the
// scenario's `expect` and equals the reference) or recovery parked with the contract's reason
// and left the workspace as the crash left it. Cannot see: side effects outside the workspace
// and the effects log.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/store.h"
#include "verdicts/barrier.h"
#include "verdicts/path_mutations.h"
#include "verdicts/recovery_barrier.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// "" when `after` equals `before` but for tool temp files that disappeared; else the first change.
std::string workspaceChange(const WorkspaceSnapshot& before, const WorkspaceSnapshot& after);

// "" when the recover process's JSON summary parks with the contract's reason (spec e.2 step 4):
// provider_replay_non_suffix_gap for a replay gap, runtime_ledger_unreadable naming
// tool_recovery_unsettled for an unsettled segment; `replayGap` nullopt: either.
std::string parkProblem(const std::string& recoverStdout, std::optional<bool> replayGap);

// "" when the session's history after recovery is the contract's (spec e.9, d.8) with
// `wantUserMessages` user messages (1; 0 when the task was never accepted).
std::string continuationHistoryProblem(const RuntimeStore& st, int wantUserMessages);

// "" when every provider step in `modelLog` (the agent's CRASHSIM_MODEL_LOG: one JSON line per
// step, the model-visible history's roles, kinds and call ids) hands the model a history the
// contract allows (spec d.8, j.2): the user message once and first; every call answered, after
// it; no call or response twice. `firstReplay`: the calls the first step (the continuation's
// replay) must hold exactly — for a named primary case, those the oracle says were answered at
// the crash or completed by recovery's bundle; trimmed or never-committed calls are not in it.
std::string replayProblem(const std::string& modelLog,
                          const std::optional<std::set<std::string>>& firstReplay);

// Executions per scenario call (the effects log) equal `want` (scenario order); no other call ran.
void checkExecutions(const Scenario& sc, const std::vector<int>& want,
                     const std::map<std::string, int>& effects, Checks& c);

// Recovery finished the task: the workspace meets the scenario's `expect` and equals the
// reference run's.
void checkFinishedWorkspace(const Scenario& sc, const Reference& ref,
                            const std::filesystem::path& ws, Checks& c);

// "" when the first continuation claim (the one a recovery kill at P11, P14 or P15 left) was
// settled as spec g's claim saga says (`want`, expectClaimSettlement): its start kind, and its
// target run failed with or without the saga's abandoned terminal.
std::string claimSettlementProblem(const std::filesystem::path& store, const ClaimSettlement& want);

// V8 after `crashsim-agent recover` (spawned by `recover`) exited with `exitCode`: executions,
// terminal runs, history, and the named case's park or finish (oracle `x`) or the barrier case's
// (`barrierFacts`); `afterCrash`: the scenario's external change was applied at the crash. Also
// V4's independent-model check on every recovered run.
void checkRecovery(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                   const barrier::CrashFacts& barrierFacts, bool afterCrash, const Reference& ref,
                   const std::filesystem::path& store, const std::filesystem::path& ws,
                   const WorkspaceSnapshot& atCrash, int exitCode, const SpawnSpec& recover,
                   Checks& c, const recovery_barrier::Judged* recoveryBarrier = nullptr);

// V8 after recovering from a recovery process killed at its own barrier
// (verdicts/recovery_barrier.h): the claim settled as spec g's saga says, the park decision the
// continuation's facts demand, executions (the crashed run's as at the primary crash, the
// continuation's as for a first run of its calls) and the workspace.
void checkRecoveryBarrierRecovery(const Scenario& sc, const recovery_barrier::Judged& judged,
                                  const Reference& ref, const std::map<std::string, int>& effects,
                                  const std::string& recoverStdout,
                                  const WorkspaceSnapshot& atCrash, const std::filesystem::path& ws,
                                  Checks& c);

// V8 after recovering from an unnamed barrier (verdicts/barrier.h): the park decision the crash
// facts demand, the executions that follow from it, and the workspace.
void checkBarrierRecovery(const Scenario& sc, const barrier::CrashFacts& facts,
                          const Reference& ref, const std::map<std::string, int>& effects,
                          const std::string& recoverStdout, const WorkspaceSnapshot& atCrash,
                          const std::filesystem::path& ws, Checks& c);

// V8 of a path mutation that removed the workspace root or put a file in its place
// (path_mutations.h, kind gate): host start-up refuses with the contract's code (`e.code`, spec h)
// — exit 2, {"error":{"code"}} on stdout — before it writes anything: every store file is
// byte-identical to `storeBefore` (the agent's exit marker aside, which is the harness protocol's),
// no failpoint past the gate was reached, nothing ran (the effects log is a store file), and the
// workspace path is as the change left it (still absent: nothing re-created; still that file).
void checkGateRefusal(const pathmut::Expectation& e, const WorkspaceSnapshot& storeBefore,
                      const std::filesystem::path& store, const std::filesystem::path& ws,
                      const std::filesystem::path& hitsFile, const ChildResult& r,
                      const SpawnSpec& recover, Checks& c);

// V8, besides checkRecovery, of a workspace root moved to a copy and linked from its path (kind
// adopted): the path is still that link, and a plan that continues names
// workspace_location_changed (spec e.6 step 6: a diagnostic, never a rejection; recovery otherwise
// goes on as without the move; a plan parked before the boundary gates need not name it).
void checkAdoptedRoot(const pathmut::Expectation& e, const std::filesystem::path& ws,
                      const std::string& recoverStdout, Checks& c);

}  // namespace crashsim::harness
