// recovery_resolver.cpp — the RecoveryResolver (spec c.1, c.3, c.5): one decision per scanned
// operation, derived only from the shared scanner and recovery-tail interpreter.
#include "crashsim/recovery_resolver.h"

#include <array>

#include "crashsim/codes.h"
#include "crashsim/plant.h"
#include "crashsim/runtime_ledger.h"
#include "recovery/ledger_index.h"
#include "recovery/ledger_scanner.h"

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
    if (op.hasIssue(c)) return c;
  }
  return {};
}

// The decision fields copied from one bound event, read from its index row (c.3: the event
// ids, the dispatch's recoveryMode and operationId, the response's isError). The copies come
// from the index's symbol text, which lies in first-appearance order, never from the events'
// scattered strings.
void bindEvent(ToolDecision& d, const detail::LedgerIndex& index,
               const detail::ScannedOperation& op, detail::ScanObserver::Role role,
               size_t eventIndex) {
  using Role = detail::ScanObserver::Role;
  const detail::EventRow& r = index.row(eventIndex);
  switch (role) {
    case Role::call:
      d.callRuntimeEventId = index.text(r.id);
      d.callIndex = eventIndex;
      break;
    case Role::dispatch:
      d.dispatchRuntimeEventId = index.text(r.id);
      if (r.has(detail::EventRow::kToolDispatch)) d.recoveryMode = index.text(r.recoveryMode);
      if (op.operationId) d.operationId = index.text(r.operationId);  // bound with it
      break;
    case Role::response:
      d.responseRuntimeEventId = index.text(r.id);
      d.responseIsError = r.has(detail::EventRow::kIsError);
      break;
  }
}

// The operation's key fields: its call id, and its tool name when not empty.
void bindKey(ToolDecision& d, std::string_view toolCallId, std::string_view toolName) {
  d.toolCallId = toolCallId;
  if (!toolName.empty()) d.toolName = std::string(toolName);
}

// Builds the event-derived fields of every decision during the scan, in operation order: on
// large ledgers the rows have left the caches long before a second pass over the operations
// could read them again.
class DecisionBuilder final : public detail::ScanObserver {
 public:
  DecisionBuilder(const detail::LedgerIndex& index, std::vector<ToolDecision>& decisions)
      : index_(index), decisions_(decisions) {}

  void bound(size_t opIndex, const detail::ScannedOperation& op, Role role,
             size_t eventIndex) override {
    if (opIndex == decisions_.size()) {
      bindKey(decisions_.emplace_back(), op.toolCallId, op.toolName);  // views of symbol text
    } else if (opIndex > decisions_.size()) {
      consistent_ = false;  // not the scanner's contract; resolveRecovery rebuilds
      return;
    }
    bindEvent(decisions_[opIndex], index_, op, role, eventIndex);
  }

  bool consistent() const { return consistent_; }

 private:
  const detail::LedgerIndex& index_;
  std::vector<ToolDecision>& decisions_;
  bool consistent_ = true;
};

// The same fields from the scan's final operations (fallback; equal by the observer contract).
void bindAfterScan(ToolDecision& d, const detail::LedgerIndex& index,
                   const detail::ScannedOperation& op) {
  using Role = detail::ScanObserver::Role;
  bindKey(d, op.toolCallId, op.toolName);
  if (op.call) bindEvent(d, index, op, Role::call, *op.call);
  if (op.dispatch) bindEvent(d, index, op, Role::dispatch, *op.dispatch);
  if (op.response) bindEvent(d, index, op, Role::response, *op.response);
}

// Decides status, reason and settlement origin of one scanned operation (its event-derived
// fields are already bound).
void decide(ToolDecision& d, std::span<const RuntimeEvent> events,
            const detail::ScannedOperation& op, bool newProtocol) {
  // The codes are chosen first and the strings built once (no reassignment per rule).
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
    if (std::optional<detail::RecoveryTail> tail = detail::interpretRecoveryTail(events, op)) {
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

}  // namespace

RecoveryResolution resolveRecovery(std::span<const RuntimeEvent> events) {
  return detail::resolveRecovery(events, detail::LedgerIndex::build(events));
}

RecoveryResolution resolveRecovery(const RuntimeLedger& ledger) {
  return detail::resolveRecovery(ledger.events(), ledger.index());
}

RecoveryResolution detail::resolveRecovery(std::span<const RuntimeEvent> events,
                                           const detail::LedgerIndex& index,
                                           detail::DecisionSink* sink) {
  RecoveryResolution resolution;
  // One decision per operation, created during the scan (at most one operation per event; the
  // same reservation as the scanner's operations: reserved, not touched).
  resolution.decisions.reserve(events.size() / 2 + 1);
  DecisionBuilder builder(index, resolution.decisions);
  detail::LedgerScan scan = detail::scanLedger(events, index, &builder);

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
  if (!builder.consistent() || decisions.size() != ops.size()) {
    decisions.clear();
    for (const detail::ScannedOperation& op : ops)
      bindAfterScan(decisions.emplace_back(), index, op);
  }
  const bool plantCompletedDispatch = planted("resolver_completed_dispatch");
  for (size_t k = 0; k < ops.size(); ++k) {
    ToolDecision& d = decisions[k];
    decide(d, events, ops[k], newProtocol);
    if (plantCompletedDispatch && d.reason == code::dispatch_without_response) {
      d.status = std::string(code::completed);  // planted bug: dispatch alone = completed
      d.reason = std::string(code::matching_response);
    }
    anyCorruption = anyCorruption || d.status == code::corruption;
    anyIndeterminate = anyIndeterminate || d.status == code::indeterminate;
    if (sink != nullptr) sink->decided(d);
  }
  if (plantCompletedDispatch) anyIndeterminate = false;
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

}  // namespace crashsim
