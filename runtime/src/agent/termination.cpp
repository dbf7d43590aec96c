// termination.cpp — the termination plan and the Stop receipt (crashsim/termination.h).
#include "crashsim/termination.h"

#include <map>

#include "crashsim/agent.h"
#include "crashsim/codes.h"
#include "crashsim/hashing.h"
#include "crashsim/tools.h"

namespace crashsim {

Json StopReceipt::toJson() const {
  return Json{{"stopReceipt", Json{{"accepted", accepted}, {"alreadyIdle", alreadyIdle}}}};
}

TerminalFact stopTerminalFact(const RunHeader& run, double ts, bool graceExpired) {
  TerminalFact fact;
  fact.eventId = run.invocationId + "_terminal";
  fact.ts = ts;
  fact.status = code::cancelled;
  fact.abortSource = std::string(code::user_stop);
  if (graceExpired) fact.recoveryReason = std::string(code::cancellation_grace_expired);
  return fact;
}

TerminationPlan planTermination(const RunHeader& run, const std::vector<StoredEvent>& committed,
                                const std::optional<LiveToolState>& live,
                                const TerminalFact& fact) {
  TerminationPlan plan;
  plan.batch.stop = fact.abortSource && *fact.abortSource == code::user_stop;
  plan.batch.terminal = terminalEvent(run, fact);
  // Open calls in ledger order: a function_call with no function_response (any lane).
  struct Open {
    const RuntimeEvent* call = nullptr;
    std::optional<std::string> dispatchedAs;  // the operation T1 created
  };
  std::vector<Open> open;
  std::map<std::string, size_t> byCall;  // callId → index into `open`
  for (const StoredEvent& s : committed) {
    const RuntimeEvent& e = s.event;
    if (e.contentKind == ContentKind::function_call) {
      byCall[e.callId] = open.size();
      open.push_back(Open{&e, std::nullopt});
    } else if (e.toolDispatch) {
      if (auto it = byCall.find(e.toolDispatch->providerToolCallId); it != byCall.end())
        open[it->second].dispatchedAs = e.toolDispatch->operationId;
    } else if (e.contentKind == ContentKind::function_response) {
      if (auto it = byCall.find(e.callId); it != byCall.end()) open[it->second].call = nullptr;
    }
  }
  if (!live) return plan;  // restart recovery: the resolver judges every open call itself
  const RunIdentity id = identityOf(run);
  for (const Open& o : open) {
    if (o.call == nullptr) continue;  // answered
    const RuntimeEvent& call = *o.call;
    const ToolCallRequest request{call.callId, call.toolName,
                                  call.json.at("content").value("args", Json::object())};
    if (!o.dispatchedAs) {
      plan.batch.syntheticResponses.push_back(agent_events::responseEvent(
          id, deriveOperationId(run.invocationId, call.callId), fact.ts, request,
          toolErrorResult(code::cancelled_before_dispatch,
                          "the turn was stopped before the tool call was dispatched"),
          true, false));
      plan.closedBeforeDispatch.push_back(call.callId);
    } else if (!live->started.count(*o.dispatchedAs)) {
      ToolOutcome outcome;
      outcome.operationId = *o.dispatchedAs;
      outcome.journalEventId = *o.dispatchedAs + "_outcome";
      outcome.response = agent_events::responseEvent(
          id, *o.dispatchedAs, fact.ts, request,
          toolErrorResult(code::not_started, "cancelled before the tool started"), true, true);
      outcome.committedAt = fact.ts;
      plan.batch.outcomes.push_back(std::move(outcome));
      plan.closedNotStarted.push_back(call.callId);
    } else {
      plan.leftIndeterminate.push_back(call.callId);
    }
  }
  return plan;
}

}  // namespace crashsim
