// verdicts/v7_repair.h — V7: startup repair and the terminal-fact invariant.
//
// Proves: every terminal header has exactly one terminal RuntimeEvent, at the ledger tail, whose
// status maps to the header's (fact before header), on the crashed store and after repair;
// repair classifies every interrupted run as spec g says (failed / app_restarted, a recovered
// terminal fact, the header mirroring it) with a recoveryReason of the contract's five whose
// name holds of the crashed ledger (tool_interrupted: a call the independent model leaves
// unsettled; run_interrupted or non_terminal_run_recovered only when no specific reason
// applies), never rewrites an existing terminal fact, a dry run changes no table, and a second
// repair changes nothing. Cannot see: which of several applicable reasons repair picks (the
// contract leaves that order open), or a repair that is wrong in a way the terminal fact and
// header agree on (V8 sees what recovery makes of it).
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/store.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// "" when the terminal-fact invariant holds for every run of `store`; else the first violation.
std::string terminalInvariant(const RuntimeStore& store);

// V7 on a copy of a crashed store directory (repair writes).
void checkV7(const std::filesystem::path& copy, Checks& c);

}  // namespace crashsim::harness
