// The oracle for crash states at unnamed barriers (verdicts/barrier.h).
#include "verdicts/barrier.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "crashsim/codes.h"
#include "crashsim/harness/oracle.h"

namespace crashsim::harness::barrier {

namespace {

std::vector<const RuntimeEvent*> durableEvents(const std::vector<RuntimeEvent>& events) {
  std::vector<const RuntimeEvent*> durable;
  for (const auto& e : events)
    if (!e.partial) durable.push_back(&e);
  return durable;
}

// The run opens as the contract says: an agent run with its user message, a continuation run with
// its runtime_admission continuation-start (and no second one), either carrying the T1 marker.
// Sets `facts.accepted`.
void openingProblems(const std::vector<const RuntimeEvent*>& durable, bool continuation,
                     CrashFacts& facts, std::vector<std::string>& bad) {
  if (durable.empty()) return;
  const RuntimeEvent& first = *durable.front();
  const bool marked =
      first.runtimeProtocol == std::optional<std::string>(std::string(code::t1_after_preflight_v1));
  const bool opens = continuation
                         ? first.continuationStart.has_value() &&
                               first.continuationStart->provenance == code::runtime_admission
                         : first.role == Role::user && first.contentKind == ContentKind::text;
  if (!opens || !marked)
    bad.push_back(
        fmt::format("the {}'s first event {} is not its {} carrying the {} marker",
                    continuation ? "continuation run" : "run", first.id,
                    continuation ? "runtime_admission continuation-start" : "user message",
                    code::t1_after_preflight_v1));
  else
    facts.accepted = true;
  if (continuation)
    for (size_t k = 1; k < durable.size(); ++k)
      if (durable[k]->continuationStart)
        bad.push_back(fmt::format("the continuation run holds a second continuation-start {}",
                                  durable[k]->id));
}

// Each call's facts in T1/T2 order, each once: call, then dispatch (never for a call preflight
// refuses), then response; at most one terminal fact, the tail. Fills `facts` (calls, finished,
// gapAfter: a call left unanswered while a later response of another call is durable).
void ledgerFactProblems(const Scenario& sc, const std::map<std::string, size_t>& index,
                        const std::vector<const RuntimeEvent*>& durable, CrashFacts& facts,
                        std::vector<std::string>& bad) {
  int terminals = 0;
  std::vector<size_t> callAt(sc.calls.size(), SIZE_MAX), lastResponseOfOthers(sc.calls.size(), 0);
  for (size_t k = 0; k < durable.size(); ++k) {
    const RuntimeEvent& e = *durable[k];
    if (e.isTerminal()) {
      ++terminals;
      facts.finished = true;
      if (k + 1 != durable.size())
        bad.push_back(fmt::format("terminal fact {} is not the ledger tail", e.id));
    }
    const bool call = e.contentKind == ContentKind::function_call;
    const bool response = e.contentKind == ContentKind::function_response;
    if (!call && !response && !e.toolDispatch) continue;
    const std::string& id = e.toolDispatch ? e.toolDispatch->providerToolCallId : e.callId;
    auto it = index.find(id);
    if (it == index.end()) {
      bad.push_back(fmt::format("{} in the ledger is no call of the scenario", id));
      continue;
    }
    CallAtCrash& f = facts.calls[it->second];
    const bool refused = !sc.calls[it->second].dispatched();
    if (call) {
      if (f.call) bad.push_back(fmt::format("{} has two durable function_call events", id));
      f.call = true;
      callAt[it->second] = k;
    }
    if (e.toolDispatch) {
      if (!f.call) bad.push_back(fmt::format("{} was dispatched before its call is durable", id));
      if (f.dispatch) bad.push_back(fmt::format("{} has two durable dispatches", id));
      if (refused)
        bad.push_back(fmt::format("{} was dispatched although preflight refuses it", id));
      f.dispatch = true;
    }
    if (response) {
      if (!f.call) bad.push_back(fmt::format("{} has a response before its call is durable", id));
      if (!refused && !f.dispatch)
        bad.push_back(fmt::format("{} has a response without its dispatch (T1)", id));
      if (f.response) bad.push_back(fmt::format("{} has two durable responses", id));
      f.response = true;
      for (size_t j = 0; j < sc.calls.size(); ++j)
        if (j != it->second) lastResponseOfOthers[j] = k;
    }
  }
  for (size_t j = 0; j < sc.calls.size(); ++j)
    if (facts.calls[j].call && !facts.calls[j].response && callAt[j] != SIZE_MAX &&
        lastResponseOfOthers[j] > callAt[j])
      facts.calls[j].gapAfter = true;
  if (terminals > 1) bad.push_back(fmt::format("{} terminal facts in one run", terminals));
}

// Every execution in the effects log is a scenario call's, once, after its durable T1.
void executionProblems(const Scenario& sc, const std::map<std::string, size_t>& index,
                       const std::map<std::string, int>& effects, CrashFacts& facts,
                       std::vector<std::string>& bad) {
  for (const auto& [id, n] : effects) {
    auto it = index.find(id);
    if (it == index.end()) {
      bad.push_back(fmt::format("{} executed but is no call of the scenario", id));
      continue;
    }
    CallAtCrash& f = facts.calls[it->second];
    f.executed = n;
    if (n > 1) bad.push_back(fmt::format("{} executed {} times before the kill", id, n));
    if (!f.dispatch)
      bad.push_back(fmt::format(
          "{} ({}) executed although its T1 dispatch is not durable (implementation before T1)", id,
          sc.calls[it->second].name));
  }
}

// `continuation`: the runs are one continuation run, whose first event is its runtime_admission
// continuation-start (the calls are the continuation's own, a first run of them).
std::vector<std::string> problems(const Scenario& sc,
                                  const std::vector<std::vector<RuntimeEvent>>& runs,
                                  const std::map<std::string, int>& effects, CrashFacts& facts,
                                  bool continuation) {
  std::vector<std::string> bad;
  facts = CrashFacts{};
  facts.calls.assign(sc.calls.size(), CallAtCrash{});
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < sc.calls.size(); ++i) index[sc.calls[i].id] = i;
  if (runs.size() > 1)
    bad.push_back(fmt::format("{} runs in the crashed store; the {} creates one", runs.size(),
                              continuation ? "continuation" : "agent run"));
  for (const auto& events : runs) {
    const std::vector<const RuntimeEvent*> durable = durableEvents(events);
    openingProblems(durable, continuation, facts, bad);
    ledgerFactProblems(sc, index, durable, facts, bad);
  }
  executionProblems(sc, index, effects, facts, bad);
  return bad;
}

}  // namespace

std::vector<std::string> crashStateProblems(const Scenario& sc,
                                            const std::vector<std::vector<RuntimeEvent>>& runs,
                                            const std::map<std::string, int>& effects,
                                            CrashFacts& facts) {
  return problems(sc, runs, effects, facts, false);
}

std::vector<std::string> continuationStateProblems(const Scenario& continuation,
                                                   const std::vector<RuntimeEvent>& events,
                                                   const std::map<std::string, int>& effects,
                                                   CrashFacts& facts) {
  return problems(continuation, {events}, effects, facts, true);
}

RecoveryExpectation expectRecovery(const Scenario& sc, const CrashFacts& facts) {
  RecoveryExpectation x;
  if (!facts.accepted || facts.finished) return x;
  for (size_t i = 0; i < sc.calls.size(); ++i) {
    const CallAtCrash& f = facts.calls[i];
    if (f.response || (!f.dispatch && !f.gapAfter)) continue;
    const std::string_view recoveryMode = recoveryModeOfTool(sc.calls[i].name);
    if (!f.dispatch) {  // never dispatched, a sibling answered after it: the replay has a gap
      x.mustPark = true;
      x.why = fmt::format("{} ({}) is unanswered before another call's result (a replay gap)",
                          sc.calls[i].id, sc.calls[i].name);
      return x;
    }
    if (recoveryMode != code::reconcile || f.executed == 0) {
      x.mustPark = true;
      x.why = fmt::format(
          "{} ({}, {}) is dispatched without a response and {}", sc.calls[i].id, sc.calls[i].name,
          recoveryMode,
          f.executed == 0 ? "its implementation never started" : "the contract never re-runs it");
      return x;
    }
    x.mayPark = true;
    x.why = fmt::format("{} ({}) is dispatched without a response; the file decides",
                        sc.calls[i].id, sc.calls[i].name);
  }
  return x;
}

std::vector<int> expectedExecutions(const Scenario& sc, const CrashFacts& facts, bool parked) {
  std::vector<int> n(sc.calls.size(), 0);
  for (size_t i = 0; i < sc.calls.size(); ++i) {
    if (!sc.calls[i].dispatched()) continue;
    n[i] = parked ? facts.calls[i].executed : 1;
  }
  return n;
}

}  // namespace crashsim::harness::barrier
