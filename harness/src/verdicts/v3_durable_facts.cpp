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

}  // namespace

void checkDurableFacts(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                       Checks& c) {
  std::map<std::string, CallFacts> facts;
  bool terminal = false;
  for (const auto& e : runEvents) {
    if (e.partial) continue;
    if (e.contentKind == ContentKind::function_call) facts[e.callId].call = true;
    if (e.toolDispatch) facts[e.toolDispatch->providerToolCallId].dispatch = true;
    if (e.contentKind == ContentKind::function_response) facts[e.callId].response = true;
    if (e.isTerminal()) terminal = true;
  }
  if (runEvents.empty() || runEvents[0].role != Role::user ||
      runEvents[0].runtimeProtocol !=
          std::optional<std::string>(std::string(code::t1_after_preflight_v1)))
    c.fail("V3", "first event is not the user event carrying the t1_after_preflight_v1 marker");
  std::set<std::string> known;
  for (const auto& op : x.ops) {
    known.insert(op.callId);
    CallFacts f = facts.count(op.callId) ? facts[op.callId] : CallFacts{};
    if (f.call != op.call || f.dispatch != op.dispatch || f.response != op.response)
      c.fail("V3",
             fmt::format("{}{}: durable call/dispatch/response = {}/{}/{}, oracle expects {}/{}/{}",
                         op.callId, op.armed ? " (armed)" : "", f.call, f.dispatch, f.response,
                         op.call, op.dispatch, op.response));
  }
  for (const auto& [callId, f] : facts)
    if (!known.count(callId)) c.fail("V3", "unexpected tool call " + callId + " in the ledger");
  if (terminal != x.terminalEvent)
    c.fail("V3", fmt::format("terminal RuntimeEvent {} but the oracle expects it {}",
                             terminal ? "committed" : "absent",
                             x.terminalEvent ? "committed" : "absent"));
  if (!c.failed("V3")) c.pass("V3");
}

}  // namespace crashsim::harness
