// The Stop oracle (verdicts/stop.h).
#include "verdicts/stop.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "crashsim/harness/oracle.h"

namespace crashsim::harness::stop {
namespace {

using Json = nlohmann::json;

// The contract's literals, restated here (the harness does not take them from the runtime).
constexpr const char* kBeforeDispatch = "cancelled_before_dispatch";
constexpr const char* kNotStarted = "not_started";
constexpr const char* kUserStop = "user_stop";
constexpr const char* kGraceExpired = "cancellation_grace_expired";
constexpr const char* kToolHold = "CRASHSIM_TOOL_HOLD";  // scenarios/README.md

const Json& at(const Json& j, std::initializer_list<const char*> path) {
  static const Json kNull;
  const Json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return kNull;
    cur = &(*cur)[k];
  }
  return *cur;
}

std::string str(const Json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

bool isTerminal(const Json& e) {
  const std::string s = str(at(e, {"status"}));
  return s == "completed" || s == "failed" || s == "aborted" || s == "cancelled" ||
         at(e, {"actions", "endInvocation"}) == Json(true);
}

std::string_view name(Response r) {
  switch (r) {
    case Response::none:
      return "no response";
    case Response::result:
      return "its real result";
    case Response::before_dispatch:
      return "a cancelled_before_dispatch closure";
    case Response::not_started:
      return "a not_started closure";
  }
  return "?";
}

// How a stored function_response reads, by the contract's rules.
Response classify(const Json& e) {
  const bool bound = at(e, {"refs", "operationId"}).is_string();
  const bool isError = at(e, {"content", "isError"}) == Json(true);
  const std::string code = str(at(e, {"content", "result", "error", "code"}));
  if (isError && !bound && code == kBeforeDispatch) return Response::before_dispatch;
  if (isError && bound && code == kNotStarted) return Response::not_started;
  if (code == kBeforeDispatch || code == kNotStarted) return Response::none;  // malformed closure
  return Response::result;
}

}  // namespace

int StopExpectation::closures() const {
  int n = 0;
  for (const auto& c : calls)
    n += c.response == Response::before_dispatch || c.response == Response::not_started;
  return n;
}

StopExpectation expectStop(const Scenario& sc, CrashPoint fp, int hit) {
  using namespace points;
  StopExpectation out;
  const CaseExpectation x = expectCase(sc, fp, hit);
  if (!x.ok) {
    out.whyNot = x.whyNot;
    return out;
  }
  out.ok = true;
  out.runCompletes = fp == P8 || fp == P9;
  for (size_t i = 0; i < x.ops.size(); ++i) {
    const OpExpectation& op = x.ops[i];
    const ScenarioCall& call = sc.calls[i];
    CallAfterStop c;
    if (out.runCompletes) {  // the run's own end: every call as in a complete run
      c.call = true;
      c.dispatch = call.dispatched();
      c.response = Response::result;
      c.executions = call.dispatched() ? 1 : 0;
      out.calls.push_back(c);
      continue;
    }
    c.call = op.call;
    c.dispatch = op.dispatch;
    c.response = op.response ? Response::result : Response::none;
    c.executions = op.response && call.dispatched() ? 1 : 0;
    if (op.armed && (fp == P3 || fp == P4 || fp == P5)) {
      c.response = Response::result;  // the running implementation finishes; T2 commits
      c.executions = 1;
    } else if (op.armed && fp == P2) {
      c.response = Response::not_started;
    }
    if (fp == P0 && x.armedStep && call.step == *x.armedStep) c.call = true;  // output committed
    if (c.call && !c.dispatch && c.response == Response::none)
      c.response = Response::before_dispatch;
    if (c.dispatch && c.response == Response::none) {
      out.ok = false;
      out.whyNot = "a dispatched call without a response at a named Stop point: " + op.callId;
    }
    out.calls.push_back(c);
  }
  return out;
}

std::optional<size_t> holdingCall(const Scenario& sc) {
  for (size_t i = 0; i < sc.calls.size(); ++i) {
    const ScenarioCall& call = sc.calls[i];
    if (call.name != "Bash" || !call.dispatched()) continue;
    const Json& args = sc.spec.model.at(call.step).calls.at(call.indexInStep).args;
    if (args.is_object() && args.value("command", "").find(kToolHold) != std::string::npos)
      return i;
  }
  return std::nullopt;
}

std::optional<int> holdingHit(const Scenario& sc) {
  const auto held = holdingCall(sc);
  if (!held) return std::nullopt;
  const int n = predictedHits(sc)[points::P2];
  for (int h = 1; h <= n; ++h)
    if (expectCase(sc, points::P2, h).armedCall == held) return h;
  return std::nullopt;
}

StopExpectation expectStopGrace(const Scenario& sc, int hit) {
  StopExpectation out;
  const auto held = holdingCall(sc);
  const CaseExpectation x = expectCase(sc, points::P2, hit);
  if (!x.ok) {
    out.whyNot = x.whyNot;
    return out;
  }
  if (!held || x.armedCall != held) {
    out.whyNot =
        fmt::format("P2#{} of {} is not a Bash call that honours ${}", hit, sc.id, kToolHold);
    return out;
  }
  out.ok = true;
  out.graceExpired = true;
  out.unknownCall = held;
  for (size_t i = 0; i < x.ops.size(); ++i) {
    const OpExpectation& op = x.ops[i];
    CallAfterStop c;
    c.call = op.call;
    c.dispatch = op.dispatch;
    c.response = op.response ? Response::result : Response::none;
    c.executions = op.response && sc.calls[i].dispatched() ? 1 : 0;
    if (i == *held) {
      c.response = Response::none;  // started: left unknown, never "not started"
      c.executions = 1;
    } else if (c.call && !c.dispatch && c.response == Response::none) {
      c.response = Response::before_dispatch;  // its step's later calls: committed, no T1
    } else if (c.dispatch && c.response == Response::none) {
      out.ok = false;
      out.whyNot = "a dispatched call other than the running one is open: " + op.callId;
    }
    out.calls.push_back(c);
  }
  return out;
}

namespace {

// Per scenario call: its call, dispatch and response facts and its executions as `x` says; no
// execution and no call that nobody scripted.
void callProblems(const Scenario& sc, const StopExpectation& x,
                  const std::vector<observed::EventRow>& events,
                  const std::map<std::string, int>& effects, std::vector<std::string>& bad) {
  std::set<std::string> known;
  for (size_t i = 0; i < sc.calls.size(); ++i) {
    const std::string& id = sc.calls[i].id;
    known.insert(id);
    const CallAfterStop& want = x.calls[i];
    int calls = 0, dispatches = 0, responses = 0;
    Response got = Response::none;
    for (const auto& e : events) {
      const std::string kind = str(at(e.payload, {"content", "kind"}));
      if (kind == "function_call" && str(at(e.payload, {"content", "id"})) == id) ++calls;
      if (str(at(e.payload, {"actions", "toolDispatch", "providerToolCallId"})) == id) ++dispatches;
      if (kind == "function_response" && str(at(e.payload, {"content", "id"})) == id) {
        ++responses;
        got = classify(e.payload);
      }
    }
    if (calls != (want.call ? 1 : 0))
      bad.push_back(fmt::format("{}: {} function_call(s), the contract expects {}", id, calls,
                                want.call ? 1 : 0));
    if (dispatches != (want.dispatch ? 1 : 0))
      bad.push_back(fmt::format("{}: {} dispatch fact(s) (T1), expected {}{}", id, dispatches,
                                want.dispatch ? 1 : 0,
                                dispatches > (want.dispatch ? 1 : 0) ? ": T1 after the Stop" : ""));
    if (responses > 1) bad.push_back(fmt::format("{}: answered {} times", id, responses));
    if (got != want.response)
      bad.push_back(
          fmt::format("{}: {}, the contract expects {}", id, name(got), name(want.response)));
    const auto ran = effects.find(id);
    const int n = ran == effects.end() ? 0 : ran->second;
    if (n != want.executions)
      bad.push_back(fmt::format("{}: the implementation ran {} time(s), expected {}{}", id, n,
                                want.executions,
                                n > want.executions ? " (a tool started after the Stop)" : ""));
  }
  for (const auto& [id, n] : effects)
    if (!known.count(id))
      bad.push_back(fmt::format("{} ran {} time(s): not a scenario call", id, n));
  for (const auto& e : events) {
    const std::string id = str(at(e.payload, {"content", "id"}));
    if (!id.empty() && !known.count(id))
      bad.push_back("the run holds a call nobody scripted: " + id);
  }
}

// Exactly one terminal fact, the ledger's tail: its index, or nullopt (reported) when not one.
std::optional<size_t> soleTerminal(const std::vector<observed::EventRow>& events,
                                   std::vector<std::string>& bad) {
  std::vector<size_t> terminals;
  for (size_t i = 0; i < events.size(); ++i)
    if (isTerminal(events[i].payload)) terminals.push_back(i);
  if (terminals.size() != 1) {
    bad.push_back(
        fmt::format("{} terminal RuntimeEvent(s), exactly one expected", terminals.size()));
    return std::nullopt;
  }
  if (terminals[0] + 1 != events.size())
    bad.push_back("the terminal RuntimeEvent is not the ledger's tail");
  return terminals[0];
}

// The terminal's status and stateDelta: completed after the run's end; otherwise cancelled by a
// live user Stop, with the watchdog's recoveryReason and seal time exactly when the grace expired.
void terminalProblems(const StopExpectation& x, const Json& t, std::vector<std::string>& bad) {
  const std::string status = str(at(t, {"status"}));
  const Json& delta = at(t, {"actions", "stateDelta"});
  if (x.runCompletes) {
    if (status != "completed")
      bad.push_back("a Stop after the run's end changed its terminal to " + status);
    return;
  }
  if (status != "cancelled") bad.push_back("terminal status " + status + ", expected cancelled");
  if (str(at(delta, {"abortSource"})) != kUserStop)
    bad.push_back("terminal abortSource '" + str(at(delta, {"abortSource"})) +
                  "', expected user_stop");
  if (at(delta, {"recovered"}) == Json(true))
    bad.push_back("a live Stop's terminal carries recovered:true");
  if (!x.graceExpired && !at(delta, {"recoveryReason"}).is_null())
    bad.push_back("a cooperative Stop's terminal carries recoveryReason " +
                  at(delta, {"recoveryReason"}).dump() +
                  " (the worker ended within the grace: no watchdog seal)");
  if (x.graceExpired && str(at(delta, {"recoveryReason"})) != kGraceExpired)
    bad.push_back("the watchdog's terminal has recoveryReason " +
                  at(delta, {"recoveryReason"}).dump() + ", expected " + kGraceExpired);
  if (x.graceExpired) {
    const Json& ts = at(t, {"ts"});
    if (!ts.is_number() || ts.get<double>() < x.sealNotBeforeMs)
      bad.push_back(
          "the watchdog sealed the run before the cooperative grace after the Stop had passed "
          "(the grace was not counted from the Stop)");
  }
}

// One transaction: the closures and the terminal are the last `batch` events, consecutive, one
// commit time.
void batchProblems(const std::vector<observed::EventRow>& events, size_t batch,
                   std::vector<std::string>& bad) {
  if (events.size() < batch) {
    bad.push_back("fewer events than the termination batch must hold");
    return;
  }
  const size_t first = events.size() - batch;
  for (size_t i = first; i < events.size(); ++i) {
    if (events[i].committedAt != events.back().committedAt)
      bad.push_back(
          fmt::format("{} and the terminal were not committed together", events[i].eventId));
    if (i > first && events[i].seq != events[i - 1].seq + 1)
      bad.push_back("the termination batch's events are not consecutive");
    if (i + 1 < events.size()) {
      const Response r = classify(events[i].payload);
      if (str(at(events[i].payload, {"content", "kind"})) != "function_response" ||
          (r != Response::before_dispatch && r != Response::not_started))
        bad.push_back(events[i].eventId + " sits in the termination batch but is no closure");
    }
  }
}

// The store's only turn-finalize key of the run names this terminal and that many events.
void finalizeKeyProblems(const observed::RunRow& run, const Json& t, size_t batch,
                         const std::vector<observed::FinalizeRow>& keys,
                         std::vector<std::string>& bad) {
  const std::string key = "turn-finalize:" + run.turnId;
  int matching = 0;
  for (const auto& k : keys) {
    if (k.operationId != key) continue;
    ++matching;
    if (k.terminalEventId != str(at(t, {"id"})) || k.eventCount != static_cast<int64_t>(batch))
      bad.push_back(
          fmt::format("{} names terminal {} with {} event(s), the ledger ends with {} "
                      "and {} batch event(s)",
                      key, k.terminalEventId, k.eventCount, str(at(t, {"id"})), batch));
  }
  if (matching != 1)
    bad.push_back(fmt::format("{} key row(s) {}, exactly one expected", matching, key));
}

// The header follows the fact (when the process lived to write it).
void headerProblems(const StopExpectation& x, const observed::RunRow& run, bool headerWritten,
                    std::vector<std::string>& bad) {
  const std::string wantHeader = x.runCompletes ? "completed" : "cancelled";
  if (headerWritten) {
    if (run.status != wantHeader)
      bad.push_back("run header " + run.status + ", expected " + wantHeader);
    if (!x.runCompletes && str(at(run.header, {"abortSource"})) != kUserStop)
      bad.push_back("run header abortSource is not user_stop");
  } else if (run.status == "completed" || run.status == "failed" || run.status == "cancelled") {
    bad.push_back("run header " + run.status + " although the process died before writing it");
  }
}

}  // namespace

std::vector<std::string> stopStateProblems(const Scenario& sc, const StopExpectation& x,
                                           const std::vector<observed::RunRow>& runs,
                                           const std::vector<observed::EventRow>& events,
                                           const std::vector<observed::FinalizeRow>& keys,
                                           const std::map<std::string, int>& effects,
                                           bool headerWritten) {
  std::vector<std::string> bad;
  if (!x.ok) return {"oracle: " + x.whyNot};
  if (runs.size() != 1)
    return {fmt::format("expected one run after the Stop, found {}", runs.size())};
  const observed::RunRow& run = runs[0];
  callProblems(sc, x, events, effects, bad);
  const std::optional<size_t> ti = soleTerminal(events, bad);
  if (!ti) return bad;
  const Json& t = events[*ti].payload;
  terminalProblems(x, t, bad);
  const size_t batch = static_cast<size_t>(x.runCompletes ? 0 : x.closures()) + 1;
  batchProblems(events, batch, bad);
  finalizeKeyProblems(run, t, batch, keys, bad);
  headerProblems(x, run, headerWritten, bad);
  return bad;
}

CaseId killEquivalent(const Scenario& sc, const CaseId& stopCase) {
  using namespace points;
  const CrashPoint fp = stopCase.failpoint;
  if (fp == P8 || fp == P9) throw std::logic_error("a Stop at P8/P9 has no termination batch");
  CaseId k;
  k.scenario = stopCase.scenario;
  k.mode = "kill";
  k.failpoint = fp;
  k.hit = stopCase.hit;
  const CaseExpectation x = expectCase(sc, fp, stopCase.hit);
  auto find = [&](CrashPoint target, auto&& isIt) {
    const int n = predictedHits(sc)[target];
    for (int h = 1; h <= n; ++h)
      if (isIt(expectCase(sc, target, h))) return h;
    throw std::logic_error(
        fmt::format("{}: no {} hit for {}", sc.id, target.name(), stopCase.str()));
  };
  if (fp == P0 && x.armedStep) {
    k.failpoint = P1;
    k.hit = find(P1, [&](const CaseExpectation& y) {
      return y.armedCall && sc.calls[*y.armedCall].step == *x.armedStep &&
             sc.calls[*y.armedCall].indexInStep == 0;
    });
  } else if ((fp == P3 || fp == P4 || fp == P5) && x.armedCall) {
    k.failpoint = P6;
    k.hit = find(P6, [&](const CaseExpectation& y) { return y.armedCall == x.armedCall; });
  }
  return k;
}

}  // namespace crashsim::harness::stop
