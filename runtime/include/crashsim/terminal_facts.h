// crashsim/terminal_facts.h — a run's terminal facts, built and committed in one place
// (spec a.1, f.3, g).
//
// A run ends with two durable facts, in this order:
//   1. its terminal RuntimeEvent — the semantic fact. It SEALS the run: the store refuses every
//      later event of the run (code::run_sealed), recovery bundles included, so whatever must
//      still be settled in the run (file reconciliation) has to commit before it;
//   2. its terminal run header — a projection that follows the fact (markRunTerminal refuses a
//      header without its fact, code::run_terminal_fact_missing).
// A crash between the two ([P9]) is repaired by startup repair from the fact.
//
// Every writer of terminal facts — the run loop (AgentRunner), startup repair, the continuation
// claim saga and cancellation — builds the event with terminalEvent(), derives the header with
// terminalHeader() and maps a fact to a header status with terminalRunStatusOf(); nothing else
// in the runtime does either.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "crashsim/runtime_event.h"
#include "crashsim/store.h"

namespace crashsim {

// completed | failed | cancelled.
bool isTerminalRunStatus(std::string_view status);

// The header status a terminal event stands for: completed → completed, failed → failed,
// aborted | cancelled → cancelled; nullopt for a partial event or another status.
std::optional<std::string> terminalRunStatusOf(const RuntimeEvent& e);

// Terminal fact validity (spec g): the failure class of a failed fact — stateDelta
// failureClass | errorClass | reason | code, then error content reason | code, then the header's
// failureClass; and the abort source of a cancelled one — stateDelta abortSource | source, then
// the header's abortSource. Empty strings do not count. (Spec g also names "refs" as a source;
// a.4's closed set of refs has no abort-source key, so no decodable event carries one there.)
std::optional<std::string> terminalFailureClass(const RuntimeEvent& e, const RunHeader* header);
std::optional<std::string> terminalAbortSource(const RuntimeEvent& e, const RunHeader* header);

// The status `e` establishes as a terminal fact of `header`'s run: terminalRunStatusOf(e) when
// the fact is valid (failed has a failure class, cancelled an abort source), else nullopt.
std::optional<std::string> terminalFactStatus(const RuntimeEvent& e, const RunHeader& header);

// What ends a run. `recovered` marks a fact written by recovery rather than by the run
// itself: stateDelta.recovered = true (with recoveryReason when given), and a cancelled run is
// recorded with event status `aborted` (spec g step 9).
struct TerminalFact {
  std::string eventId;
  double ts = 0;
  std::string status;                       // completed | failed | cancelled
  std::optional<std::string> failureClass;  // failed (required)
  std::optional<std::string> message;       // failed: the error content's message
  std::optional<std::string> abortSource;   // cancelled (required)
  bool recovered = false;
  std::optional<std::string> recoveryReason;
};

// The terminal RuntimeEvent of `run` (role/author system, endInvocation, stateDelta
// {[recovered, recoveryReason,] failureClass | abortSource}; failed → error content
// {code, reason = failureClass, message}). Throws Error(code::terminal_event_required) for a
// status that is not terminal or a failed/cancelled fact without its class/source.
RuntimeEvent terminalEvent(const RunHeader& run, const TerminalFact& fact);

// The terminal header that follows `terminal`: status from the fact, updatedAt = max(updatedAt,
// ts), completedAt = ts, failureClass + failureMessage (error content message) for failed,
// abortSource for cancelled. Throws Error(code::run_terminal_fact_missing) when `terminal` is
// not a valid terminal fact of the run.
RunHeader terminalHeader(const RunHeader& run, const RuntimeEvent& terminal);

// Commits both facts in order: the terminal writer commitTurnFinalize (the batch's closures and
// its terminal in one transaction, [P8] — [P12] for a Stop batch — inside it), [P9] — [P13] for
// a Stop batch —, markRunTerminal(terminalHeader(run, batch.terminal)). Returns the header
// written.
RunHeader commitTerminalFacts(RuntimeStore& store, const RunHeader& run,
                              const TurnFinalizeBatch& batch);
// The same for a terminal RuntimeEvent without closures.
RunHeader commitTerminalFacts(RuntimeStore& store, const RunHeader& run,
                              const RuntimeEvent& terminal);

}  // namespace crashsim
