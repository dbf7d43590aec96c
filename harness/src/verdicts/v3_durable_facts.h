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

#include <vector>

#include "crashsim/harness/oracle.h"
#include "crashsim/runtime_event.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// V3 on the crashed run's events against the oracle's expectation `x` (x.ok).
void checkDurableFacts(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                       Checks& c);

}  // namespace crashsim::harness
