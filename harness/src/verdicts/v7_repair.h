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
#include <vector>

#include "crashsim/store.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// What the crashed ledger of a run shows about why it stopped, judged from the contract's names
// (spec g, run recovery step 8; d.4 for an open user wait).
struct InterruptionFacts {
  bool openUserWait = false;     // a permission or question request no later event answered
  bool unsettledTool = false;    // the independent model leaves some tool call not completed
  bool endsInModelText = false;  // the last event is the model's visible text
};

// The facts of a run's (crashed) ledger.
InterruptionFacts interruptionFacts(const std::vector<RuntimeEvent>& events);

// The recoveryReason of a run startup repair sealed: one of the contract's five, and what its
// name claims holds of the crashed ledger. The contract leaves the precedence between reasons
// open, so where several apply any of them passes; `run_interrupted` and
// `non_terminal_run_recovered` name nothing specific, so they fit only a ledger none of the
// three specific reasons describes. "" when it holds, else why not.
std::string recoveryReasonProblem(const std::string& reason, const InterruptionFacts& f);

// "" when the terminal-fact invariant holds for every run of `store`; else the first violation.
std::string terminalInvariant(const RuntimeStore& store);

// V7 on a copy of a crashed store directory (repair writes).
void checkV7(const std::filesystem::path& copy, Checks& c);

}  // namespace crashsim::harness
