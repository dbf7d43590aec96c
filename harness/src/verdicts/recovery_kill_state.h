// verdicts/recovery_kill_state.h — V3/V4 on the state a killed recovery process left (double
// faults), against expectRecoveryKill (oracle.h: from the catalogue's boundary text alone).
//
// Proves: a recovery killed inside a terminal commit (P8), between fact and header (P9), inside
// the bundle commit (P10), between claim and target run (P11), between target run and start
// (P14) or between start and provider call (P15) leaves exactly what that boundary defines —
// nothing of a transaction that did not commit, everything of one that did. Cannot see: what the
// second recovery makes of it (V8 does).
#pragma once

#include <filesystem>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/store.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

void checkRecoveryKillState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                            const RuntimeStore& st, const std::filesystem::path& store, Checks& c);

}  // namespace crashsim::harness
