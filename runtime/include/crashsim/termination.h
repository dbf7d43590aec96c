// crashsim/termination.h — Stop (spec/termination-contract.md, sections 3-6, in this runtime's
// terms): the Stop receipt and the termination plan.
//
// A Stop request (SIGINT / SIGTERM to crashsim-agent, a `stop` line on its control input, or
// requestStop() of the public API) only signals: it cancels the run's CancellationToken and
// returns a receipt. The run loop checks the token before each provider step, before T1 and
// before the implementation is called; a running Bash tool terminates its process group. Then
// the run loop (or, when the worker does not exit within the cooperative grace, the watchdog)
// builds the termination plan and commits it through the terminal writer
// (RuntimeStore::commitTurnFinalize, key turn-finalize:<turnId>) in one transaction; the
// terminal header follows (crashsim/terminal_facts.h).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/store.h"
#include "crashsim/terminal_facts.h"

namespace crashsim {

// What a Stop request was told. It says nothing about exit: `accepted` is always true (a Stop
// is never refused); `alreadyIdle` — no run was active (before the run started, after its
// terminal, or a second Stop of the same run: a no-op).
struct StopReceipt {
  bool accepted = true;
  bool alreadyIdle = false;
  Json toJson() const;  // {"stopReceipt":{"accepted":..,"alreadyIdle":..}}
};

// What only the live process knows and no durable fact holds: the operations whose
// implementation was called (T1 committed) and that have no committed result. Restart recovery
// has no such memory (nullopt below).
struct LiveToolState {
  std::set<std::string> started;  // operation ids
};

// The termination plan of one run (termination contract section 3 step 2 and section 5), a
// pure function of the run's committed events, the live state and the terminal fact. For each
// function_call of the run without a function_response, in ledger order:
//   * no T1 (no dispatch fact) → a synthetic unbound function_response, isError, result
//     {"error":{"code":"cancelled_before_dispatch",...}} — legitimately pre-T1: the batch seals
//     the run, so T1 can never follow;
//   * T1 committed, implementation never called (live state) → a T2-shaped outcome, isError,
//     {"error":{"code":"not_started",...}} (Reasonix runState not_started);
//   * T1 committed and the implementation called without a committed result → nothing: the
//     operation stays indeterminate for the resolver (Reasonix runState unknown).
// The terminal RuntimeEvent terminalEvent(run, fact) comes last. `live` nullopt (restart
// recovery, spec g): no closure at all — without memory "not started" cannot be known, and
// the resolver derives definitely_not_dispatched for a call without T1 itself.
struct TerminationPlan {
  TurnFinalizeBatch batch;
  std::vector<std::string> closedBeforeDispatch;  // call ids
  std::vector<std::string> closedNotStarted;      // call ids
  std::vector<std::string> leftIndeterminate;     // call ids
};
TerminationPlan planTermination(const RunHeader& run, const std::vector<StoredEvent>& committed,
                                const std::optional<LiveToolState>& live, const TerminalFact& fact);

// The terminal fact of a Stop: cancelled, abortSource user_stop; with `graceExpired` (the
// watchdog sealed the run) also stateDelta.recoveryReason cancellation_grace_expired.
TerminalFact stopTerminalFact(const RunHeader& run, double ts, bool graceExpired);

}  // namespace crashsim
