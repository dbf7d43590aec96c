// V3: durable facts against the oracle row (verdicts/v3_durable_facts.h).
#include "verdicts/v3_durable_facts.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "crashsim/codes.h"

namespace crashsim::harness {
namespace {

// Per-call durable facts of one run.
struct CallFacts {
  bool call = false, dispatch = false, response = false;
};

const RuntimeEvent* firstDurable(const std::vector<RuntimeEvent>& run) {
  for (const auto& e : run)
    if (!e.partial) return &e;
  return nullptr;
}

// The two runs the agent's host opens without the marker (and without any tool call): the
// saga's repaired target, started by a claim_repair continuation-start (spec g), and a run whose
// task was never accepted, whose first durable event is the terminal fact startup repair wrote
// (the crash came before its user message committed).
bool unmarkedByContract(const RuntimeEvent& first) {
  return (first.continuationStart && first.continuationStart->provenance == code::claim_repair) ||
         first.isTerminal();
}

}  // namespace

std::string runMarkerProblem(const std::vector<RuntimeEvent>& run) {
  const RuntimeEvent* first = firstDurable(run);
  if (!first) return "";
  const bool marked = first->runtimeProtocol == std::string(code::t1_after_preflight_v1);
  if (unmarkedByContract(*first)) {
    if (marked)
      return fmt::format(
          "run {}: its first event {} (a claim-repair start or a repair's "
          "terminal fact) carries the {} marker",
          first->runId, first->id, code::t1_after_preflight_v1);
    for (const auto& e : run)
      if (e.contentKind == ContentKind::function_call)
        return fmt::format("run {} without the marker (its first event {}) holds the call {}",
                           first->runId, first->id, e.callId);
    return "";
  }
  const bool userMessage = first->role == Role::user && first->contentKind == ContentKind::text;
  const bool admission =
      first->continuationStart && first->continuationStart->provenance == code::runtime_admission;
  if ((userMessage || admission) && marked) return "";
  return fmt::format(
      "run {}: its first event {} is not its user message or runtime_admission continuation-start "
      "carrying the {} marker",
      first->runId, first->id, code::t1_after_preflight_v1);
}

bool agentWroteUnderT1(const std::vector<RuntimeEvent>& run) {
  const RuntimeEvent* first = firstDurable(run);
  return first && !unmarkedByContract(*first);  // an empty run declares nothing
}

std::vector<std::string> callFactProblems(const CaseExpectation& x,
                                          const std::vector<RuntimeEvent>& runEvents) {
  std::vector<std::string> out;
  std::map<std::string, CallFacts> facts;
  bool terminal = false;
  for (const auto& e : runEvents) {
    if (e.partial) continue;
    if (e.contentKind == ContentKind::function_call) facts[e.callId].call = true;
    if (e.toolDispatch) facts[e.toolDispatch->providerToolCallId].dispatch = true;
    if (e.contentKind == ContentKind::function_response) facts[e.callId].response = true;
    if (e.isTerminal()) terminal = true;
  }
  std::set<std::string> known;
  for (const auto& op : x.ops) {
    known.insert(op.callId);
    CallFacts f = facts.count(op.callId) ? facts[op.callId] : CallFacts{};
    if (f.call != op.call || f.dispatch != op.dispatch || f.response != op.response)
      out.push_back(
          fmt::format("{}{}: durable call/dispatch/response = {}/{}/{}, oracle expects {}/{}/{}",
                      op.callId, op.armed ? " (armed)" : "", f.call, f.dispatch, f.response,
                      op.call, op.dispatch, op.response));
  }
  for (const auto& [callId, f] : facts)
    if (!known.count(callId)) out.push_back("unexpected tool call " + callId + " in the ledger");
  if (terminal != x.terminalEvent)
    out.push_back(fmt::format("terminal RuntimeEvent {} but the oracle expects it {}",
                              terminal ? "committed" : "absent",
                              x.terminalEvent ? "committed" : "absent"));
  return out;
}

void checkDurableFacts(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                       Checks& c) {
  if (runEvents.empty() || runEvents[0].role != Role::user ||
      runEvents[0].runtimeProtocol !=
          std::optional<std::string>(std::string(code::t1_after_preflight_v1)))
    c.fail("V3", "first event is not the user event carrying the t1_after_preflight_v1 marker");
  for (const auto& bad : callFactProblems(x, runEvents)) c.fail("V3", bad);
  if (!c.failed("V3")) c.pass("V3");
}

}  // namespace crashsim::harness
