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
// What these checks cannot see: a Stop that lands between two named boundaries (no failpoint
// there), and a tool's effects outside the workspace and the effects log.
#pragma once

#include <filesystem>
#include <map>
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
  bool runCompletes = false;         // the Stop came at P8/P9: the run's own end stands
  std::vector<CallAfterStop> calls;  // scenario order
  int closures() const;              // responses of the termination batch
};

// From the scenario and the kill oracle's placement of (failpoint, hit) alone.
StopExpectation expectStop(const Scenario& scenario, int failpoint, int hit);

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
