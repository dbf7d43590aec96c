// crashsim/startup_repair.h — startup repair of run headers from the ledger (spec g).
//
// Invariant: the terminal RuntimeEvent commits BEFORE the terminal run header; a header never
// claims an end without its semantic fact (both built by crashsim/terminal_facts.h). Host
// start-up (crashsim/host.h) runs the claim saga, then the reconcilers, then this repair — the
// terminal fact it writes seals the run, so nothing can be reconciled after it — and only then
// plans. Repair restores the invariant for every run header of the store:
//   * header terminal, no terminal fact  → append a terminal RuntimeEvent matching the header;
//   * terminal fact, header not terminal → rewrite the header from the fact;
//   * neither → classify from the run's events (failureClass app_restarted, recoveryReason one
//     of tool_interrupted | stale_user_wait | model_stream_completed_without_runtime_terminal |
//     run_interrupted | non_terminal_run_recovered), commit a recovered terminal RuntimeEvent
//     (role/author system, status failed, error content, actions {endInvocation:true,
//     stateDelta:{recovered:true, recoveryReason, failureClass}}), THEN the failed header;
//   * ambiguous (more than one terminal event, a terminal event that cannot form a terminal
//     fact, a stored terminal that is not the ledger tail) or unreadable ledger → strict mode
//     throws (code::repair_ambiguous / the read error), best-effort mode skips the run.
// A continuation claim target without a terminal is left to the continuation claim saga
// (repairContinuationClaims, which must run first) while the saga owns it: no durable start
// yet, or a `claim_repair` start. A target with a live `runtime_admission` start is an ordinary
// run once started and is repaired here like any other crashed run.
// A run named in `leaveOpen` (sessionId, runId) that has no terminal fact is left alone with
// action `deferred_reconcile`: the host could not reconcile one of its operations yet.
// Repair is idempotent: a second run reports only `none` actions and writes nothing. dryRun
// computes the same report without writing. Errors: repair_ambiguous, the store's read and
// write errors (store_corrupt, sqlite_error, run_terminal_fact_missing, …).
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/store.h"

namespace crashsim {

enum class RepairMode { strict, bestEffort };

// What repair did (or, in a dry run, would do) for one run header.
struct RunRepairAction {
  std::string sessionId, runId;
  // none | append_terminal_fact | repair_header | recover_terminal | deferred_reconcile |
  // skipped_ambiguous | skipped_unreadable | skipped_claim_target
  std::string action;
  std::optional<std::string> status;          // resulting header status
  std::optional<std::string> recoveryReason;  // recover_terminal only
  std::optional<std::string> failureClass;
  std::optional<std::string> terminalEventId;  // the terminal fact the header follows
  std::string detail;                          // human-readable reason for skips
  bool operator==(const RunRepairAction&) const = default;
};

struct RepairReport {
  bool dryRun = false;
  std::vector<RunRepairAction> runs;  // one per run header, in listRuns() order
  // True when any action other than none / skipped_* was taken (or would be).
  bool changed() const;
  Json toJson() const;
};

// Deterministic id of the recovered terminal RuntimeEvent of (sessionId, runId):
// "runtime-recovered-terminal-" + first 32 hex of
// SHA-256("crashsim.runtime-recovered-terminal.v1" NUL sessionId NUL runId).
std::string recoveredTerminalEventId(const std::string& sessionId, const std::string& runId);

using RunKeys = std::set<std::pair<std::string, std::string>>;  // (sessionId, runId)

RepairReport startupRepair(RuntimeStore& store, RepairMode mode, bool dryRun = false,
                           const RunKeys& leaveOpen = {});

}  // namespace crashsim
