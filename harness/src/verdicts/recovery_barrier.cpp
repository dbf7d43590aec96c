// The oracle for a recovery process killed at its own barriers (verdicts/recovery_barrier.h).
#include "verdicts/recovery_barrier.h"

#include <fmt/format.h>

#include <set>

#include "crashsim/codes.h"
#include "verdicts/verdict.h"

namespace crashsim::harness::recovery_barrier {

namespace {

bool isTerminalHeader(const std::optional<std::string>& status) {
  return status && isTerminalStatus(*status);
}

std::vector<const RuntimeEvent*> durableOf(const std::vector<RuntimeEvent>& events) {
  std::vector<const RuntimeEvent*> out;
  for (const auto& e : events)
    if (!e.partial) out.push_back(&e);
  return out;
}

// The calls and operations the crash left dispatched without a response: only they may get a
// recovery bundle.
std::set<std::string> unsettledAt(const std::vector<const RuntimeEvent*>& before) {
  std::set<std::string> unsettled, answered;
  for (const RuntimeEvent* e : before)
    if (e->contentKind == ContentKind::function_response) answered.insert(e->callId);
  for (const RuntimeEvent* e : before)
    if (e->toolDispatch && !answered.count(e->toolDispatch->providerToolCallId)) {
      unsettled.insert(e->toolDispatch->providerToolCallId);
      unsettled.insert(e->toolDispatch->operationId);
    }
  return unsettled;
}

// The crashed run is append-only: its events at the primary crash are a prefix of its events
// now, and recovery added only recovery facts of the calls the crash left unsettled and at most
// one terminal fact, at the tail. Sets `state.sealed`.
void crashedRunProblems(const Run& atPrimary, const Run& crashed, State& state,
                        std::vector<std::string>& bad) {
  if (crashed.runId != atPrimary.runId)
    bad.push_back(
        fmt::format("the first run is {}, the crashed run was {}", crashed.runId, atPrimary.runId));
  const auto before = durableOf(atPrimary.events), now = durableOf(crashed.events);
  size_t common = 0;
  while (common < before.size() && common < now.size() &&
         encodeRuntimeEvent(*before[common]) == encodeRuntimeEvent(*now[common]))
    ++common;
  if (common < before.size())
    bad.push_back(fmt::format(
        "the crashed run's event {} (#{} at the primary crash) is {} after the recovery kill: a "
        "ledger is append-only",
        before[common]->id, common + 1, common < now.size() ? "changed" : "gone"));
  const std::set<std::string> unsettled = unsettledAt(before);
  auto names = [&](const std::optional<std::string>& s) { return s && unsettled.count(*s); };
  int terminals = 0;
  for (const RuntimeEvent* e : before) terminals += e->isTerminal();
  for (size_t k = common; k < now.size(); ++k) {
    const RuntimeEvent& e = *now[k];
    if (e.isTerminal()) {
      ++terminals;
      state.sealed = true;
      if (k + 1 != now.size())
        bad.push_back(
            fmt::format("the crashed run's terminal fact {} is not its ledger tail", e.id));
      continue;
    }
    const bool bundle =
        (e.toolRecovery && unsettled.count(e.toolRecovery->operationId)) ||
        (e.contentKind == ContentKind::function_response && unsettled.count(e.callId)) ||
        names(e.refOperationId) || names(e.refToolCallId);
    if (!bundle || state.sealed)
      bad.push_back(fmt::format(
          "recovery appended {} to the crashed run{}", e.id,
          state.sealed ? " after its terminal fact"
                       : ", which is no recovery fact of a call the crash left unsettled"));
  }
  if (terminals > 1)
    bad.push_back(fmt::format("the crashed run holds {} terminal facts", terminals));
  state.sealed = state.sealed || terminals == 1;
}

// Nothing of the crashed run runs again (recovery reconciles, it never re-executes).
void reexecutionProblems(const Scenario& sc, size_t firstCall,
                         const std::map<std::string, int>& effectsAtPrimary, const StoreAtKill& at,
                         std::vector<std::string>& bad) {
  for (size_t i = 0; i < firstCall && i < sc.calls.size(); ++i) {
    const std::string& id = sc.calls[i].id;
    const int was = effectsAtPrimary.count(id) ? effectsAtPrimary.at(id) : 0;
    const int is = at.effects.count(id) ? at.effects.at(id) : 0;
    if (is != was)
      bad.push_back(
          fmt::format("{} of the crashed run executed {} time(s) at the primary crash, "
                      "{} after the recovery kill",
                      id, was, is));
  }
}

// At most one claim, and only after the crashed run is sealed; how the next recovery must settle
// it (spec g's saga). Sets `state.claimed` and `state.settle`; returns the claim or nullptr.
const observed::ClaimRow* claimProblems(const Run& crashed, const StoreAtKill& at, State& state,
                                        std::vector<std::string>& bad) {
  if (at.claims.size() > 1)
    bad.push_back(fmt::format("{} continuation claims; one recovery claims its boundary once",
                              at.claims.size()));
  const observed::ClaimRow* claim = at.claims.empty() ? nullptr : &at.claims.front();
  state.claimed = claim != nullptr;
  if (!claim) return nullptr;
  if (!state.sealed || !isTerminalHeader(crashed.status))
    bad.push_back(fmt::format(
        "claim {} exists while the crashed run {} is not sealed (terminal fact {}, header {}): "
        "a continuation starts from its source's full ledger",
        claim->claimId, crashed.runId, state.sealed ? "durable" : "absent",
        crashed.status.value_or("absent")));
  if (claim->sourceRunId != crashed.runId)
    bad.push_back(fmt::format("claim {} names source {}, not the crashed run {}", claim->claimId,
                              claim->sourceRunId, crashed.runId));
  if (claim->startKind && *claim->startKind == code::runtime_admission)
    state.settle = ClaimSettlement{std::string(code::runtime_admission), false};
  else if (!claim->startKind)
    state.settle = ClaimSettlement{std::string(code::claim_repair), true};
  else
    bad.push_back(fmt::format("claim {} has start kind {}; a first recovery commits {}",
                              claim->claimId, *claim->startKind, code::runtime_admission));
  return claim;
}

// At most one more run, and only as the claim's target; events only in a run with a header.
// Returns the target run or nullptr.
const Run* targetRunOf(const observed::ClaimRow* claim, const StoreAtKill& at,
                       std::vector<std::string>& bad) {
  const Run* target = nullptr;
  for (size_t r = 1; r < at.runs.size(); ++r) {
    const Run& run = at.runs[r];
    if (!run.status)
      bad.push_back(
          fmt::format("run {} has {} event(s) but no header", run.runId, run.events.size()));
    if (!claim || run.runId != claim->targetRunId) {
      bad.push_back(fmt::format("run {} exists but no claim names it as its target", run.runId));
      continue;
    }
    target = &run;
  }
  if (claim && target && isTerminalHeader(target->status) && durableOf(target->events).empty())
    bad.push_back(fmt::format("the claimed target {} is {} before any event", target->runId,
                              *target->status));
  return target;
}

// Each COMMIT atomic: the claim records the start exactly when the target run holds it first.
void startAtomicityProblems(const observed::ClaimRow* claim,
                            const std::vector<const RuntimeEvent*>& targetEvents,
                            std::vector<std::string>& bad) {
  if (!claim) return;
  const RuntimeEvent* first = targetEvents.empty() ? nullptr : targetEvents.front();
  if (claim->startEventId && (!first || first->id != *claim->startEventId))
    bad.push_back(fmt::format(
        "claim {} records the start {}, but its target run {} {}", claim->claimId,
        *claim->startEventId, claim->targetRunId,
        first ? fmt::format("begins with {}", first->id) : std::string("holds no event")));
  if (!claim->startEventId && first)
    bad.push_back(fmt::format(
        "the target run {} holds its continuation-start {} but claim {} records no start: the "
        "start and the claim's record of it are one transaction",
        claim->targetRunId, first->id, claim->claimId));
}

// The continuation run (barrier::continuationStateProblems over the continuation's own calls);
// without a continuation-start none of the continuation's calls may have run.
void continuationProblems(const Scenario& sc, size_t firstCall,
                          const std::map<std::string, int>& effectsAtPrimary, const StoreAtKill& at,
                          const Run* target, const std::vector<const RuntimeEvent*>& targetEvents,
                          State& state, std::vector<std::string>& bad) {
  if (target && !targetEvents.empty()) {
    const Scenario cont = continuationScenario(sc, firstCall);
    std::map<std::string, int> own;
    for (const auto& call : cont.calls)
      if (at.effects.count(call.id)) own[call.id] = at.effects.at(call.id);
    for (const auto& b :
         barrier::continuationStateProblems(cont, target->events, own, state.continuation))
      bad.push_back("continuation run " + target->runId + ": " + b);
    // The continuation's terminal fact is durable: the task ended, and the next recovery only
    // writes the target's (completed) header; the saga has nothing to settle.
    if (state.continuation.finished) state.settle.reset();
    return;
  }
  for (size_t i = firstCall; i < sc.calls.size(); ++i)
    if (at.effects.count(sc.calls[i].id) && !effectsAtPrimary.count(sc.calls[i].id))
      bad.push_back(
          fmt::format("{} executed although no continuation-start is durable", sc.calls[i].id));
}

}  // namespace

std::vector<std::string> stateProblems(const Scenario& sc, size_t firstCall, const Run& atPrimary,
                                       const std::map<std::string, int>& effectsAtPrimary,
                                       const StoreAtKill& at, State& state) {
  std::vector<std::string> bad;
  state = State{};
  if (at.runs.empty()) {
    bad.push_back("the crashed run is gone after the recovery kill");
    return bad;
  }
  const Run& crashed = at.runs.front();
  crashedRunProblems(atPrimary, crashed, state, bad);
  reexecutionProblems(sc, firstCall, effectsAtPrimary, at, bad);
  const observed::ClaimRow* claim = claimProblems(crashed, at, state, bad);
  const Run* target = targetRunOf(claim, at, bad);
  const auto targetEvents = target ? durableOf(target->events) : std::vector<const RuntimeEvent*>{};
  startAtomicityProblems(claim, targetEvents, bad);
  continuationProblems(sc, firstCall, effectsAtPrimary, at, target, targetEvents, state, bad);
  return bad;
}

barrier::RecoveryExpectation expectRecovery(const Scenario& sc, size_t firstCall,
                                            const State& state) {
  if (!state.continuation.accepted) return {};  // the whole continuation is still to come
  return barrier::expectRecovery(continuationScenario(sc, firstCall), state.continuation);
}

std::vector<int> expectedExecutions(const Scenario& sc, size_t firstCall,
                                    const std::map<std::string, int>& effectsAtPrimary,
                                    const State& state, bool parked) {
  std::vector<int> n(sc.calls.size(), 0);
  for (size_t i = 0; i < sc.calls.size() && i < firstCall; ++i)
    n[i] = effectsAtPrimary.count(sc.calls[i].id) ? effectsAtPrimary.at(sc.calls[i].id) : 0;
  if (firstCall >= sc.calls.size()) return n;
  const Scenario cont = continuationScenario(sc, firstCall);
  barrier::CrashFacts facts = state.continuation;
  facts.calls.resize(cont.calls.size());
  const auto own = barrier::expectedExecutions(cont, facts, parked && facts.accepted);
  for (size_t j = 0; j < own.size(); ++j) n[firstCall + j] = own[j];
  return n;
}

}  // namespace crashsim::harness::recovery_barrier
