// recovery_resolver.cpp — the RecoveryResolver (spec c.1, c.3, c.5): one decision per scanned
// operation, derived only from the shared scanner and recovery-tail interpreter.
#include "crashsim/recovery_resolver.h"

#include <algorithm>
#include <array>

#include "crashsim/codes.h"
#include "crashsim/plant.h"
#include "ledger/ledger_scanner.h"
#include "recovery/resolve_in_place.h"

namespace crashsim {

namespace {

// c.3 step 3: the corruption reason of an operation that carries scanner issues.
constexpr std::array<std::string_view, 8> kIssuePriority = {
    code::duplicate_call,     code::duplicate_operation,  code::duplicate_dispatch,
    code::duplicate_response, code::orphan_response,      code::canonical_args_hash_conflict,
    code::identity_conflict,  code::event_order_conflict,
};

std::string_view priorityIssue(const detail::ScannedOperation& op) {
  if (op.issueCodes.empty()) return {};
  for (std::string_view c : kIssuePriority) {
    // planted bug: a dispatch whose args hash differs from its call is left unflagged
    if (c == code::canonical_args_hash_conflict && planted("resolver_ignores_args_hash")) continue;
    if (op.hasIssue(c)) return c;
  }
  return {};
}

// The decision's key and the fields copied from the operation's bound events (c.3: the event
// ids, the dispatch's recoveryMode and operationId, the response's isError).
void bindOperation(ToolDecision& d, detail::EventRefs events, const detail::ScannedOperation& op) {
  d.toolCallId = op.toolCallId;
  if (!op.toolName.empty()) d.toolName = std::string(op.toolName);
  if (op.call) {
    d.callRuntimeEventId = events[*op.call].id;
    d.callIndex = *op.call;
  }
  if (op.dispatch) {
    const RuntimeEvent& e = events[*op.dispatch];
    d.dispatchRuntimeEventId = e.id;
    if (e.toolDispatch) d.recoveryMode = e.toolDispatch->recoveryMode;
    if (op.operationId) d.operationId = std::string(*op.operationId);
  }
  if (op.response) {
    const RuntimeEvent& e = events[*op.response];
    d.responseRuntimeEventId = e.id;
    d.responseIsError = e.isError;
  }
}

// Decides status, reason and settlement origin of one scanned operation (its event-derived
// fields are already bound) from its scan and its interpreted recovery tail (c.3 step 7).
void decide(ToolDecision& d, const detail::ScannedOperation& op,
            std::optional<detail::RecoveryTail>& tail, bool newProtocol) {
  // The codes are chosen first and the strings built once (no reassignment per rule).
  // planted bug: a legacy call without a dispatch judged "not dispatched"
  if (planted("resolver_legacy_call_not_dispatched")) newProtocol = true;
  std::string_view status = newProtocol ? code::definitely_not_dispatched : code::indeterminate;
  std::string_view reason =
      newProtocol ? code::new_protocol_before_dispatch : code::legacy_dispatch_unknown;
  std::string_view origin;
  std::string parkedReason;  // parked: the decision fact's reasonCode

  if (!op.call && op.dispatch) {  // 1.
    status = code::corruption;
    reason = code::orphan_dispatch;
  } else if (!op.call && op.response) {  // 2.
    status = code::corruption;
    reason = code::orphan_response;
    if (planted("resolver_orphan_response_completed")) {  // planted bug: no call, yet completed
      status = code::completed;
      reason = code::matching_response;
      origin = code::pre_t1_synthetic;
    }
  } else if (std::string_view issue = priorityIssue(op); !issue.empty()) {  // 3.
    status = code::corruption;
    reason = issue;
  } else {
    if (op.response) {  // 4.
      status = code::completed;
      reason = code::matching_response;
      origin = op.dispatch ? code::normal_t2 : code::pre_t1_synthetic;
    } else if (op.dispatch) {  // 5.
      status = code::indeterminate;
      reason = code::dispatch_without_response;
    }
    // 7. recovery tail.
    if (tail) {
      if (!tail->valid) {
        status = code::corruption;
        reason = code::recovery_fact_corruption;
        origin = {};
      } else if (tail->disposition == code::completed) {
        status = code::completed;
        reason = code::recovery_bundle_completed;
        origin = code::recovery_bundle;
      } else {
        status = code::parked;
        parkedReason = std::move(tail->reasonCode);
        origin = code::recovery_bundle;
      }
    }
  }

  d.status = status;
  d.reason = status == code::parked ? std::move(parkedReason) : std::string(reason);
  if (!origin.empty()) d.settlementOrigin = std::string(origin);
}

// The tail check reported beside the resolution (RecoveryTailCheck). An operation c.3 steps 1–3
// already decided (corruption with a scanner reason) never reaches step 7: its tail is not
// consulted, and the check names that decision's reason instead.
RecoveryTailCheck tailCheck(detail::EventRefs events, const detail::ScannedOperation& op,
                            const detail::RecoveryTail& tail, const ToolDecision& d) {
  size_t first = op.reconciles.empty() ? op.decisions.front() : op.reconciles.front();
  if (!op.decisions.empty()) first = std::min(first, op.decisions.front());
  const RuntimeEvent& fact = events[first];
  std::string operationId = op.operationId      ? std::string(*op.operationId)
                            : fact.toolRecovery ? fact.toolRecovery->operationId
                                                : std::string();
  const bool reachedStep7 =
      d.status != code::corruption || d.reason == code::recovery_fact_corruption;
  return {std::move(operationId), std::string(op.toolCallId), fact.id,
          !reachedStep7 ? d.reason
          : tail.valid  ? std::string(code::valid)
                        : tail.code};
}

}  // namespace

RecoveryResolution resolveRecovery(std::span<const RuntimeEvent> events) {
  return detail::resolveRecoveryInPlace(events);
}

RecoveryResolution detail::resolveRecoveryInPlace(EventRefs events) {
  RecoveryResolution resolution;
  detail::LedgerScan scan = detail::scanLedger(events);

  // c.1 protocol marker: only event 0 may carry it; a late marker never enables it. Marker
  // issues come first, then the scanner's issues in detection order.
  std::vector<ResolverIssue>& issues = resolution.issues;
  issues.reserve(scan.protocolMarkers.size() + scan.issues.size());
  for (size_t index : scan.protocolMarkers) {
    if (index == 0 && *events[0].runtimeProtocol == code::t1_after_preflight_v1) {
      resolution.toolBoundaryProtocol = std::string(code::t1_after_preflight_v1);
    } else {
      issues.push_back({std::string(code::protocol_marker_invalid), events[index].id});
    }
  }
  issues.insert(issues.end(), std::make_move_iterator(scan.issues.begin()),
                std::make_move_iterator(scan.issues.end()));

  const bool newProtocol = resolution.toolBoundaryProtocol.has_value();
  bool anyCorruption = false;
  bool anyIndeterminate = false;
  const std::vector<detail::ScannedOperation>& ops = scan.operations;
  std::vector<ToolDecision>& decisions = resolution.decisions;
  decisions.resize(ops.size());
  for (size_t k = 0; k < ops.size(); ++k) {
    ToolDecision& d = decisions[k];
    bindOperation(d, events, ops[k]);
    std::optional<detail::RecoveryTail> tail = detail::interpretRecoveryTail(events, ops[k]);
    decide(d, ops[k], tail, newProtocol);
    if (tail) resolution.recoveryTails.push_back(tailCheck(events, ops[k], *tail, d));
    anyCorruption = anyCorruption || d.status == code::corruption;
    anyIndeterminate = anyIndeterminate || d.status == code::indeterminate;
  }
  if (planted("resolver_completed_dispatch")) {  // planted bug: dispatch alone = completed
    for (ToolDecision& d : resolution.decisions)
      if (d.reason == code::dispatch_without_response) {
        d.status = std::string(code::completed);
        d.reason = std::string(code::matching_response);
      }
    anyIndeterminate = false;
  }
  resolution.hasCorruption = !resolution.issues.empty() || anyCorruption;
  resolution.requiresReconciliation = !resolution.hasCorruption && anyIndeterminate;
  return resolution;
}

Json toJson(const ToolDecision& d) {
  Json j = Json::object();
  j["toolCallId"] = d.toolCallId;
  if (d.toolName) j["toolName"] = *d.toolName;
  if (d.operationId) j["operationId"] = *d.operationId;
  j["status"] = d.status;
  j["reason"] = d.reason;
  if (d.settlementOrigin) j["settlementOrigin"] = *d.settlementOrigin;
  if (d.callRuntimeEventId) j["callRuntimeEventId"] = *d.callRuntimeEventId;
  if (d.dispatchRuntimeEventId) j["dispatchRuntimeEventId"] = *d.dispatchRuntimeEventId;
  if (d.responseRuntimeEventId) j["responseRuntimeEventId"] = *d.responseRuntimeEventId;
  if (d.responseIsError) j["responseIsError"] = *d.responseIsError;
  return j;
}

Json toJson(const RecoveryResolution& r) {
  Json j = Json::object();
  j["toolBoundaryProtocol"] = r.toolBoundaryProtocol ? Json(*r.toolBoundaryProtocol) : Json();
  Json decisions = Json::array();
  for (const ToolDecision& d : r.decisions) decisions.push_back(toJson(d));
  j["decisions"] = std::move(decisions);
  Json issues = Json::array();
  for (const ResolverIssue& issue : r.issues) {
    issues.push_back(Json{{"code", issue.code}, {"eventId", issue.eventId}});
  }
  j["issues"] = std::move(issues);
  j["hasCorruption"] = r.hasCorruption;
  j["requiresReconciliation"] = r.requiresReconciliation;
  return j;
}

Json toJson(const std::vector<RecoveryTailCheck>& recoveryTails) {
  Json out = Json::array();
  for (const RecoveryTailCheck& t : recoveryTails) {
    out.push_back(Json{{"operationId", t.operationId},
                       {"toolCallId", t.toolCallId},
                       {"firstRecoveryFactEventId", t.firstRecoveryFactEventId},
                       {"result", t.result}});
  }
  return out;
}

}  // namespace crashsim
