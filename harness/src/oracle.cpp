// Oracle expectations for one case, from the table and the scenario's call list only.
#include "crashsim/harness/oracle.h"

#include <fmt/format.h>

#include "crashsim/codes.h"

namespace crashsim::harness {
namespace {

namespace c = crashsim::code;

bool reaches(const ScenarioCall& call, int fp) {
  if (fp <= 1 || fp == 7) return true;  // P7: a refused call's synthetic result is delivered too
  if (fp <= 6) return !call.refused;
  return false;
}

// A call that finished normally before the kill.
OpExpectation completedOp(const ScenarioCall& call) {
  OpExpectation e;
  e.callId = call.id;
  e.tool = call.name;
  e.call = true;
  e.dispatch = !call.refused;
  e.response = true;
  e.status = c::completed;
  e.reason = c::matching_response;
  e.settlementOrigin = call.refused ? c::pre_t1_synthetic : c::normal_t2;
  return e;
}

OpExpectation absentOp(const ScenarioCall& call) {
  OpExpectation e;
  e.callId = call.id;
  e.tool = call.name;
  return e;
}

OpExpectation committedOnlyOp(const ScenarioCall& call) {
  OpExpectation e = absentOp(call);
  e.call = true;
  e.status = c::definitely_not_dispatched;
  e.reason = c::new_protocol_before_dispatch;
  return e;
}

}  // namespace

std::array<int, 12> predictedHits(const Scenario& s) {
  std::array<int, 12> h{};
  for (const auto& call : s.calls)
    for (int fp = 0; fp <= 7; ++fp) h[fp] += reaches(call, fp);
  h[8] = 1;
  h[9] = 1;
  return h;
}

CaseExpectation expectCase(const Scenario& s, int fp, int hit) {
  CaseExpectation x;
  if (fp < 0 || fp > 11 || hit < 1) {
    x.whyNot = fmt::format("no failpoint P{} hit {}", fp, hit);
    return x;
  }
  if (fp >= 10) {
    x.whyNot = fmt::format("P{} is reached only by a recovery process", fp);
    return x;
  }
  if (fp >= 8) {
    if (hit != 1) {
      x.whyNot = fmt::format("P{} is reached once per run; hit {} is not", fp, hit);
      return x;
    }
    x.row = &oracleRow(fp, c::reconcile);  // run-level rows are identical for every mode
    for (const auto& call : s.calls) x.ops.push_back(completedOp(call));
    x.terminalEvent = x.row->terminalEvent;
    x.outcome = x.row->outcome;
    x.ok = true;
    return x;
  }
  int seen = 0;
  for (size_t i = 0; i < s.calls.size(); ++i) {
    if (!reaches(s.calls[i], fp)) continue;
    if (++seen == hit) {
      x.armedCall = i;
      break;
    }
  }
  if (!x.armedCall) {
    x.whyNot = fmt::format("scenario {} has {} call(s) reaching P{}; hit {} names none", s.id, seen,
                           fp, hit);
    return x;
  }
  const ScenarioCall& armed = s.calls[*x.armedCall];
  x.row = &oracleRow(fp, recoveryModeOfTool(armed.name));
  x.outcome = x.row->outcome;
  if (armed.refused && fp == 1) x.outcome = Outcome::reissued_runs_once;
  for (size_t i = 0; i < s.calls.size(); ++i) {
    const ScenarioCall& call = s.calls[i];
    if (i == *x.armedCall) {
      OpExpectation e = absentOp(call);
      e.armed = true;
      e.call = x.row->call;
      e.dispatch = x.row->dispatch;
      e.response = x.row->response;
      e.status = x.row->status;
      e.reason = x.row->reason;
      e.settlementOrigin = x.row->settlementOrigin;
      if (armed.refused && fp == 7) e = completedOp(armed), e.armed = true;  // pre-T1 synthetic
      x.ops.push_back(e);
    } else if (i < *x.armedCall) {
      // Earlier calls finished — except same-step siblings at P0, whose step is not committed.
      if (fp == 0 && call.step == armed.step)
        x.ops.push_back(absentOp(call));
      else
        x.ops.push_back(completedOp(call));
    } else if (call.step == armed.step && fp >= 1) {
      // The step's calls are committed together; later siblings are committed, not dispatched.
      x.ops.push_back(committedOnlyOp(call));
    } else {
      x.ops.push_back(absentOp(call));
    }
  }
  x.ok = true;
  return x;
}

}  // namespace crashsim::harness
