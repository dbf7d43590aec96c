// verdicts/stop.h — the oracle for Stop cases (--mode stop), written from the termination
// contract (spec/termination-contract.md sections 3–6), not from the runtime.
//
// A Stop case delivers a Stop (SIGINT, then a second Stop as SIGTERM) when the agent run reaches
// (failpoint, hit), instead of a kill, and lets the agent terminate by itself. What the durable
// state must then be follows from two independent sources: the kill oracle's placement of that
// instant (oracle.h: which calls are committed, dispatched, answered there) and the contract's
// rules for what may still happen after the Stop was accepted:
//   * model output that is already decided becomes durable (at P0 the step's calls are
//     committed), and an implementation that is already running finishes and its real result
//     commits through T2 (P3–P5);
//   * nothing else starts: no T1 and no implementation after the Stop (the effects log is the
//     witness), no further provider step;
//   * every call still open is closed in the termination batch: committed without T1 → a
//     synthetic unbound response, error.code cancelled_before_dispatch; T1 committed and the
//     implementation never called (P2) → a bound T2-shaped response, error.code not_started;
//   * then exactly one terminal RuntimeEvent: status cancelled (written by the live runtime, so
//     not aborted), stateDelta.abortSource user_stop, no recovery mark — all of it in ONE
//     transaction: the closures and the terminal are the ledger's last events, consecutive, with
//     one commit time, and the store's single turn-finalize:<turnId> key names that terminal and
//     that many events;
//   * the header follows the fact: cancelled, abortSource user_stop.
// A Stop that arrives after the run decided its end (P8, P9) changes nothing: the run completes.
//
// Watchdog cases ("+grace", section 4 "Uncooperative worker"): the Stop arrives while a Bash tool
// that ignores SIGTERM runs, later than the cooperative grace after the run's start, with a short
// grace and a longer SIGTERM→SIGKILL grace for the tool. The worker cannot finish, so:
//   * the run is sealed no earlier than the grace after the Stop (the terminal's ts, wall-clock
//     ms, is at least the Stop's send time plus the grace: a grace counted from anything earlier
//     seals too soon);
//   * the sealed batch comes from accepted state: the running tool has start evidence, so it is
//     left unknown — call and dispatch, no response (never not_started) — and ran once; calls of
//     its step committed without T1 get cancelled_before_dispatch closures; nothing else starts;
//   * the terminal is cancelled / user_stop with recoveryReason cancellation_grace_expired and no
//     recovered mark (the live runtime wrote it); it stays the ledger's tail: the late result of
//     the killed tool is refused, never committed;
//   * recovery never runs the tool again: the unknown never_auto_retry call parks.
// A scenario's Bash call takes part when its command honours $CRASHSIM_TOOL_HOLD (see
// scenarios/README.md): ignores SIGTERM, creates that file, keeps running.
//
// What these checks cannot see: a Stop that lands between two named boundaries (no failpoint
// there), and a tool's effects outside the workspace and the effects log.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/scenario.h"
#include "verdicts/observed_store.h"

namespace crashsim::harness::stop {

// How a call's response must look after the Stop.
enum class Response { none, result, before_dispatch, not_started };

struct CallAfterStop {
  bool call = false, dispatch = false;
  Response response = Response::none;
  int executions = 0;  // effects-log lines
};

struct StopExpectation {
  bool ok = false;
  std::string whyNot;
  bool runCompletes = false;          // the Stop came at P8/P9: the run's own end stands
  bool graceExpired = false;          // a watchdog case: sealed with cancellation_grace_expired
  std::optional<size_t> unknownCall;  // watchdog: the running call, left without a response
  double sealNotBeforeMs = 0;         // watchdog: the terminal's ts is at least this (Stop + grace)
  std::vector<CallAfterStop> calls;   // scenario order
  int closures() const;               // responses of the termination batch
};

// From the scenario and the kill oracle's placement of (failpoint, hit) alone.
StopExpectation expectStop(const Scenario& scenario, CrashPoint failpoint, int hit);

// The scenario call whose Bash command honours $CRASHSIM_TOOL_HOLD (the first dispatched one),
// and its P2 hit; none when the scenario has no such call.
std::optional<size_t> holdingCall(const Scenario& scenario);
std::optional<int> holdingHit(const Scenario& scenario);

// A watchdog case: the Stop while the call armed at P2#hit runs and ignores it. Not ok when that
// call is not the scenario's holding call.
StopExpectation expectStopGrace(const Scenario& scenario, int hit);

// V3 of a Stop case: every way the stored run differs from `x` (empty: none). `events` and
// `runs` are read with plain SQLite (observed_store.h); `effects` counts effects-log lines per
// provider call id. `headerWritten` false: the process was killed at P13 (batch committed,
// header not yet), so the header must still be non-terminal.
std::vector<std::string> stopStateProblems(const Scenario& scenario, const StopExpectation& x,
                                           const std::vector<observed::RunRow>& runs,
                                           const std::vector<observed::EventRow>& events,
                                           const std::vector<observed::FinalizeRow>& keys,
                                           const std::map<std::string, int>& effects,
                                           bool headerWritten);

// The kill case whose crash state a Stop at (failpoint, hit) leaves when the stopping process is
// killed inside its termination batch (P12: the batch rolled back): what the run committed after
// the Stop is durable, the batch is not. P0 → P1 of the step's first call (its calls committed,
// none dispatched), P3/P4/P5 → P6 of that operation (its real result committed), any other point
// → itself. Throws std::logic_error for P8/P9 (no batch).
CaseId killEquivalent(const Scenario& scenario, const CaseId& stopCase);

}  // namespace crashsim::harness::stop
