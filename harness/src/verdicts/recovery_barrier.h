// verdicts/recovery_barrier.h — the oracle for a recovery process killed at its own unnamed
// barriers (double faults "…/P0#1/kill+R:S#9", "…/kill+R:F#2"; issue #44 §3).
//
// The recovery of a primary crash state seals the crashed run, may commit a recovery bundle,
// claims the boundary, creates the target run, commits its continuation-start and then makes the
// continuation's own calls (T1, the implementation, T2) and its terminal fact — each a store
// COMMIT (barrier S) or a file tool's durability step (barrier F). Killed just before one of them,
// the store holds the crashed first run plus a partial continuation. No oracle row names that
// point; what the harness expects is what the contract says must hold at every instant, over the
// two runs (the barrier oracle, barrier.h, generalised):
//   - the crashed run is append-only: its events at the primary crash are a prefix of its events
//     now, and recovery added only recovery facts and responses of the calls the crash left
//     unsettled and at most one terminal fact, at the tail (V4 then judges the added bundle with
//     the resolver and the independent model: a half bundle is corruption);
//   - nothing of the crashed run runs again: its calls' executions are the primary crash's;
//   - at most one claim, and only after the crashed run is sealed (terminal fact and header);
//     at most one more run, and only as that claim's target; events only in a run with a header;
//   - each COMMIT atomic: the claim records a start exactly when its target run holds it as its
//     first event (same id, runtime_admission) — never a start in the run the claim does not
//     name, never a claimed start the run lacks;
//   - the continuation run: its runtime_admission continuation-start first, then only the
//     continuation's calls, each fact once, in T1/T2 order, no implementation before its T1 nor
//     twice, at most one terminal fact, at the tail (barrier::continuationStateProblems).
// The next recovery (V8) must then do what those facts demand: settle the claim as spec g's
// saga says (no start: claim_repair and the abandoned terminal; a runtime_admission start: left
// alone, the target sealed as a crashed run), park when the continuation's facts hold a call the
// contract cannot settle by re-running, and otherwise drive the task to its end with every
// dispatched call run exactly once.
//
// Cannot see: the exact transaction a barrier number falls before (the contract does not fix a
// run's number of transactions), and windows inside memory that no barrier separates.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/oracle.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/runtime_event.h"
#include "verdicts/barrier.h"
#include "verdicts/observed_store.h"

namespace crashsim::harness::recovery_barrier {

// One run as the store holds it: header status (nullopt: no header row) and events.
struct Run {
  std::string runId;
  std::optional<std::string> status;
  std::vector<RuntimeEvent> events;
};

// The store right after the recovery kill: runs in creation order (the crashed first run first),
// the continuation claims in claim order, the effects log (callId → implementations started).
struct StoreAtKill {
  std::vector<Run> runs;
  std::vector<observed::ClaimRow> claims;
  std::map<std::string, int> effects;
};

// What the kill left, for V8.
struct State {
  bool sealed = false;  // the crashed run's terminal fact is durable
  bool claimed = false;
  // How the next recovery must settle the killed claim (spec g's saga): nullopt without a claim.
  std::optional<ClaimSettlement> settle;
  barrier::CrashFacts continuation;  // the continuation's own calls (continuationScenario order)
};

// Everything V8 needs of the kill (filled by the case runner).
struct Judged {
  size_t firstCall = 0;
  std::map<std::string, int> effectsAtPrimary;
  State state;
};

// V3 on the store a recovery barrier kill left. `sc` is the whole scenario, `firstCall` the first
// call the continuation makes itself (oracle.h continuationCallsFrom), `atPrimary` the crashed run
// and `effectsAtPrimary` the effects log of the primary's crash state (verified by the primary
// case). Fills `state`; returns every violation (empty: none).
std::vector<std::string> stateProblems(const Scenario& sc, size_t firstCall, const Run& atPrimary,
                                       const std::map<std::string, int>& effectsAtPrimary,
                                       const StoreAtKill& at, State& state);

// What the next recovery must do (barrier::expectRecovery over the continuation's facts): no
// continuation-start yet or no call of it unsettled → continue to the end; the continuation's
// terminal fact durable → nothing left but the header.
barrier::RecoveryExpectation expectRecovery(const Scenario& sc, size_t firstCall,
                                            const State& state);

// Executions per scenario call after that recovery: the crashed run's calls as at the primary
// crash; the continuation's calls as barrier::expectedExecutions says for a first run of them.
std::vector<int> expectedExecutions(const Scenario& sc, size_t firstCall,
                                    const std::map<std::string, int>& effectsAtPrimary,
                                    const State& state, bool parked);

}  // namespace crashsim::harness::recovery_barrier
