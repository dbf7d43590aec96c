// verdicts/barrier.h — the oracle for crash states at the unnamed barriers (S#k, F#k).
//
// A barrier kill lands where nobody put a name (just before the k-th store COMMIT, or before the
// k-th durability step of a file tool: crashsim/failpoints.h), so there is no oracle row for it.
// What the harness expects there is only what the contract says must hold at every instant,
// applied to the durable facts the crash left: the ledger as the store holds it, and the effects
// log the tool wrappers write as an implementation starts (the world, not the runtime's claim).
//
// What these checks prove: T1, T2, bundles and terminal facts are atomic and ordered wherever a
// crash lands (a response implies its dispatch, a dispatch its call; no implementation without a
// durable T1; at most one terminal fact, at the tail), and recovery from any such state is the
// contract's (nothing re-runs, an unsettled call the contract cannot settle parks, a settled
// ledger continues to the task's end). What they cannot see: the *exact* state a named window
// leaves (the oracle table does that for P0–P11), and windows inside the runtime's memory that no
// barrier separates.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "crashsim/harness/scenario.h"
#include "crashsim/runtime_event.h"

namespace crashsim::harness::barrier {

// The durable facts of one scenario call right after the kill.
struct CallAtCrash {
  bool call = false, dispatch = false, response = false;
  int executed = 0;  // effects-log lines: implementations started before the kill
  // The call has no response while a later event answers another call: the replay would hold a
  // gap (spec e.3 step 4) unless recovery settles this call.
  bool gapAfter = false;
};

struct CrashFacts {
  bool accepted = false;           // the run's user message is durable (the task was accepted)
  bool finished = false;           // the run's terminal fact is durable (the task ended)
  std::vector<CallAtCrash> calls;  // scenario order
};

// V3 at a barrier over the crashed store's runs (`runs`: each run's events in ledger order) and
// the effects log (callId → lines). Fills `facts`; returns every violation (empty: none):
// at most one run; a run's first event is its user message carrying t1_after_preflight_v1;
// only scenario calls appear, each call at most once, each fact at most once; a dispatch has
// its call before it, a response its dispatch; a refused call is never dispatched; an
// implementation started only after its T1 was durable (effects ⇒ dispatch) and at most once;
// at most one terminal fact, and it is the last event.
std::vector<std::string> crashStateProblems(const Scenario& scenario,
                                            const std::vector<std::vector<RuntimeEvent>>& runs,
                                            const std::map<std::string, int>& effects,
                                            CrashFacts& facts);

// The same over one continuation run killed at a barrier of its recovery process
// (verdicts/recovery_barrier.h): `continuation` is continuationScenario (the calls the
// continuation makes itself), `events` the run's ledger, `effects` the effects log of those calls
// only. The run's first event is its runtime_admission continuation-start carrying the marker
// (`accepted`: it is durable), and no second start follows; the rest as for a first run.
std::vector<std::string> continuationStateProblems(const Scenario& continuation,
                                                   const std::vector<RuntimeEvent>& events,
                                                   const std::map<std::string, int>& effects,
                                                   CrashFacts& facts);

// What recovery must do from these facts (spec e.2, f.6, g):
//   mustPark  a call is dispatched without a response and the contract cannot settle it by
//             re-running: Bash (never_auto_retry), Read (replay_safe: parked, the oracle's
//             documented choice), or any call whose implementation never started (its
//             reconciler observes the prior state and parks);
//             An unanswered call followed by another call's result (a replay gap, e.3 step 4)
//             parks unless recovery can settle the call (the same reconcile case as below).
//   mayPark   only reconcile calls (Write/Edit) whose implementation started are unsettled: the
//             file on disk decides (prior state → park, expected state → completed bundle);
//   neither   every dispatched call has its response: recovery continues to the task's end.
// Without an accepted task (no durable user message), or after the run's terminal fact, there is
// nothing to continue: nothing runs and no continuation starts.
struct RecoveryExpectation {
  bool mustPark = false, mayPark = false;
  std::string why;  // the call that decides, for messages
};
RecoveryExpectation expectRecovery(const Scenario& scenario, const CrashFacts& facts);

// Executions of each scenario call after recovery: when recovery parked (or had no task to
// continue), the
// counts at the crash (nothing re-runs, nothing new starts); when it continued, exactly one per
// dispatched call and none per refused call.
std::vector<int> expectedExecutions(const Scenario& scenario, const CrashFacts& facts, bool parked);

}  // namespace crashsim::harness::barrier
