// verdicts/v3_durable_facts.h — V3: the durable facts a kill at a named failpoint left.
//
// Proves: the crashed run's ledger holds, per scenario call, exactly the call / dispatch /
// response facts the oracle row of that failpoint says (so a transaction is all-or-nothing at
// the boundary), the run starts with its user message carrying t1_after_preflight_v1, no call
// outside the scenario appears, and the terminal fact is there exactly when the oracle says.
// Cannot see: what the resolver makes of the facts (V4), or a window no named failpoint separates
// (the barrier oracle, verdicts/barrier.h). The recovery-kill state (double faults) is
// verdicts/recovery_kill_state.h; the recovery's reach is verdicts/coverage.h.
#pragma once

#include <string>
#include <vector>

#include "crashsim/harness/oracle.h"
#include "crashsim/runtime_event.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// The T1 marker rule for a run the agent or its host wrote (c.1, j.4, g), read from outside the
// resolver: the run's first durable event is its user message or a runtime_admission
// continuation-start, carrying t1_after_preflight_v1; only two runs carry none, and hold no
// tool call: the saga's repaired target (a claim_repair continuation-start, spec g) and a run
// whose task was never accepted (its first event is the terminal fact startup repair wrote).
// "" when it holds (or the run is empty), else the problem.
std::string runMarkerProblem(const std::vector<RuntimeEvent>& run);

// The protocol the agent wrote a run under, as the oracle knows it (the model's input, never the
// marker the resolver reads): T1, except the two unmarked runs above (no call in either) and an
// empty run (it declares nothing).
bool agentWroteUnderT1(const std::vector<RuntimeEvent>& run);

// The per-call durable facts (call, dispatch, response) of `runEvents` against `x.ops`, no
// other tool call, and the terminal RuntimeEvent as `x` expects; one line per difference.
std::vector<std::string> callFactProblems(const CaseExpectation& x,
                                          const std::vector<RuntimeEvent>& runEvents);

// V3 on the crashed run's events against the oracle's expectation `x` (x.ok).
void checkDurableFacts(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                       Checks& c);

}  // namespace crashsim::harness
