// ledger_scanner.cpp — the single tool-ledger scanner (spec c.2), the recovery-tail
// interpreter (c.4) and recovery-bundle validation (f.6 step 2).
//
// Performance notes: the scan is one pass; lookups go through small open-addressing tables
// of (32-bit tag, 32-bit index) slots whose keys are string_views into the scanned events,
// so a scan allocates per operation, never per event.
#include "ledger/ledger_scanner.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>

#include "crashsim/codes.h"
#include "ledger/flat_index.h"

namespace crashsim::detail {

namespace {

bool sameExecutionIdentity(const RuntimeEvent& a, const RuntimeEvent& b) {
  return a.sessionId == b.sessionId && a.invocationId == b.invocationId && a.runId == b.runId &&
         a.turnId == b.turnId;
}

bool optEquals(const std::optional<std::string>& a, std::string_view b) {
  return a.has_value() && *a == b;
}
bool optEquals(const std::optional<std::string_view>& a, std::string_view b) {
  return a.has_value() && *a == b;
}

class Scanner {
 public:
  explicit Scanner(EventRefs events)
      : events_(events),
        seenIds_(events.size()),
        byToolCall_(events.size() / 4),
        byOperation_(events.size() / 4) {
    // Reserved, not touched: a ledger has at most one operation per event.
    scan_.operations.reserve(events.size() / 2 + 1);
  }

  LedgerScan run() {
    for (size_t i = 0; i < events_.size(); ++i) step(i, hashKeys(events_[i]));
    return std::move(scan_);
  }

 private:
  static constexpr uint32_t kEmpty = FlatIndex::kEmpty;

  // The keys of one event, hashed (0 when the event's lane has no such key).
  struct Hashes {
    uint64_t id = 0;
    uint64_t toolCall = 0;   // (invocationId, call id) of a call, dispatch or response
    uint64_t operation = 0;  // payload operationId of a dispatch or recovery fact
  };

  static bool isRecoveryFact(Lane lane) {
    return lane == Lane::reconcile_result || lane == Lane::recovery_decision;
  }
  // Hashes the keys of an event.
  Hashes hashKeys(const RuntimeEvent& e) {
    Hashes h;
    h.id = hashView(e.id);
    visitOperationKeys(
        e, [&](const std::string& callId) { h.toolCall = toolCallHash(e.invocationId, callId); },
        [&](const std::string& operationId) { h.operation = hashView(operationId); });
    return h;
  }

  void topIssue(std::string_view code, const std::string& eventId) {
    scan_.issues.push_back(ResolverIssue{std::string(code), eventId});
  }
  void opIssue(size_t op, std::string_view code, const std::string& eventId) {
    topIssue(code, eventId);
    scan_.operations[op].issueCodes.emplace_back(code);
  }

  uint64_t toolCallHash(std::string_view invocationId, std::string_view toolCallId) {
    // Events of one run share their invocation: hash it once.
    if (!lastInvocationValid_ || invocationId != lastInvocation_) {
      lastInvocation_ = invocationId;
      lastInvocationValid_ = true;
      lastInvocationHash_ = hashView(invocationId);
    }
    return mix(lastInvocationHash_, hashView(toolCallId));
  }

  uint32_t findOp(uint64_t h, std::string_view invocationId, std::string_view toolCallId) const {
    return byToolCall_.find(h, [&](uint32_t v) {
      const ScannedOperation& op = scan_.operations[v];
      return op.toolCallId == toolCallId && op.invocationId == invocationId;
    });
  }

  size_t createOp(uint64_t h, const RuntimeEvent& e, std::string_view toolCallId,
                  std::string_view toolName) {
    const size_t index = scan_.operations.size();
    ScannedOperation& op = scan_.operations.emplace_back();
    op.invocationId = e.invocationId;
    op.toolCallId = toolCallId;
    op.toolName = toolName;
    byToolCall_.insert(h, static_cast<uint32_t>(index), [this](uint32_t v) {
      const ScannedOperation& o = scan_.operations[v];
      return mix(hashView(o.invocationId), hashView(o.toolCallId));
    });
    return index;
  }

  uint32_t findOperationId(std::string_view operationId, uint64_t h) const {
    return byOperation_.find(
        h, [&](uint32_t v) { return optEquals(scan_.operations[v].operationId, operationId); });
  }

  void bindOperationId(size_t op, uint64_t h) {
    byOperation_.insert(h, static_cast<uint32_t>(op),
                        [this](uint32_t v) { return hashView(*scan_.operations[v].operationId); });
  }

  void step(size_t i, const Hashes& hashes) {
    const RuntimeEvent& e = events_[i];
    if (e.runtimeProtocol) scan_.protocolMarkers.push_back(i);

    // 1. duplicate id → skipped.
    const std::string_view id = e.id;
    if (seenIds_.find(hashes.id, [&](uint32_t v) { return events_[v].id == id; }) != kEmpty) {
      topIssue(code::duplicate_event_id, e.id);
      return;
    }
    seenIds_.insert(hashes.id, static_cast<uint32_t>(i),
                    [this](uint32_t v) { return hashView(events_[v].id); });

    // 2. invocation spine: first (session, run, turn) of an invocation; drift is reported
    //    and the event is still processed.
    checkSpine(i, e);

    // 3. lane validation (mandatory envelopes are checked by the decoder) → skipped.
    if (e.lane == Lane::conflict) {
      topIssue(code::semantic_lane_conflict, e.id);
      return;
    }
    // 4. partial events are skipped.
    if (e.partial) return;

    switch (e.lane) {
      case Lane::function_call:
        onCall(i, e, hashes.toolCall);
        break;
      case Lane::tool_dispatch:
        onDispatch(i, e, hashes);
        break;
      case Lane::function_response:
        onResponse(i, e, hashes.toolCall);
        break;
      case Lane::reconcile_result:
      case Lane::recovery_decision:
        onRecoveryFact(i, e, hashes.operation);
        break;
      case Lane::ordinary:
      case Lane::conflict:
        break;
    }
  }

  void checkSpine(size_t i, const RuntimeEvent& e) {
    size_t spine;
    if (spineCacheValid_ && events_[spineCache_].invocationId == e.invocationId) {
      spine = spineCache_;
    } else {
      const uint64_t h = hashView(e.invocationId);
      const uint32_t found =
          spines_.find(h, [&](uint32_t v) { return events_[v].invocationId == e.invocationId; });
      if (found == kEmpty) {
        spines_.insert(h, static_cast<uint32_t>(i),
                       [this](uint32_t v) { return hashView(events_[v].invocationId); });
        spineCache_ = i;
        spineCacheValid_ = true;
        return;
      }
      spine = found;
      spineCache_ = found;
      spineCacheValid_ = true;
    }
    const RuntimeEvent& first = events_[spine];
    if (first.sessionId != e.sessionId || first.runId != e.runId || first.turnId != e.turnId) {
      topIssue(code::invocation_identity_conflict, e.id);
    }
  }

  // 5. function_call.
  void onCall(size_t i, const RuntimeEvent& e, uint64_t h) {
    const uint32_t found = findOp(h, e.invocationId, e.callId);
    if (found != kEmpty) {
      ScannedOperation& op = scan_.operations[found];
      if (!op.call) {
        op.call = static_cast<uint32_t>(i);
        if (op.toolName != e.toolName) opIssue(found, code::identity_conflict, e.id);
        return;
      }
      opIssue(found, code::duplicate_call, e.id);
      return;
    }
    const size_t op = createOp(h, e, e.callId, e.toolName);
    scan_.operations[op].call = static_cast<uint32_t>(i);
  }

  // 6. tool_dispatch.
  void onDispatch(size_t i, const RuntimeEvent& e, const Hashes& hashes) {
    if (!e.toolDispatch) return;  // the decoder guarantees it for this lane
    const ToolDispatch& d = *e.toolDispatch;
    const uint64_t h = hashes.toolCall;
    uint32_t found = findOp(h, e.invocationId, d.providerToolCallId);
    size_t opIndex;
    if (found == kEmpty) {
      opIndex = createOp(h, e, d.providerToolCallId, d.toolName);
      ScannedOperation& op = scan_.operations[opIndex];
      op.operationId = d.operationId;
      op.dispatch = static_cast<uint32_t>(i);
      opIssue(opIndex, code::event_order_conflict, e.id);
    } else {
      opIndex = found;
      if (scan_.operations[opIndex].dispatch) {
        opIssue(opIndex, code::duplicate_dispatch, e.id);  // the first dispatch stays
        return;
      }
    }

    const uint64_t oh = hashes.operation;
    const uint32_t owner = findOperationId(d.operationId, oh);
    if (owner != kEmpty && owner != opIndex) {
      topIssue(code::duplicate_operation, e.id);
      scan_.operations[owner].issueCodes.emplace_back(code::duplicate_operation);
      scan_.operations[opIndex].issueCodes.emplace_back(code::duplicate_operation);
      return;
    }

    ScannedOperation& op = scan_.operations[opIndex];
    op.operationId = d.operationId;
    op.dispatch = static_cast<uint32_t>(i);
    if (owner == kEmpty) bindOperationId(opIndex, oh);

    const RuntimeEvent* call = op.call ? &events_[*op.call] : nullptr;
    if (op.toolName != d.toolName || !optEquals(e.refOperationId, d.operationId) ||
        !optEquals(e.refToolCallId, d.providerToolCallId) ||
        (call != nullptr && !sameExecutionIdentity(*call, e))) {
      opIssue(opIndex, code::identity_conflict, e.id);
    }
    if (call != nullptr) {
      // A call whose args are not strict JSON has no hash and cannot authenticate T1.
      if (!call->callArgsHash || *call->callArgsHash != d.canonicalArgsHash) {
        opIssue(opIndex, code::canonical_args_hash_conflict, e.id);
      }
    }
    if (op.response) {
      const RuntimeEvent& response = events_[*op.response];
      opIssue(opIndex, code::event_order_conflict, e.id);
      if (!optEquals(response.refOperationId, d.operationId) ||
          !optEquals(response.refToolCallId, d.providerToolCallId) ||
          !sameExecutionIdentity(e, response)) {
        opIssue(opIndex, code::identity_conflict, response.id);
      }
    }
  }

  // 7. function_response.
  void onResponse(size_t i, const RuntimeEvent& e, uint64_t h) {
    const uint32_t found = findOp(h, e.invocationId, e.callId);
    if (found == kEmpty) {
      const size_t op = createOp(h, e, e.callId, e.toolName);
      scan_.operations[op].response = static_cast<uint32_t>(i);
      opIssue(op, code::orphan_response, e.id);
      return;
    }
    ScannedOperation& op = scan_.operations[found];
    if (op.response) {
      opIssue(found, code::duplicate_response, e.id);
      return;
    }
    op.response = static_cast<uint32_t>(i);
    const RuntimeEvent* call = op.call ? &events_[*op.call] : nullptr;
    if (op.toolName != e.toolName || call == nullptr || !sameExecutionIdentity(*call, e) ||
        (op.operationId && (!optEquals(e.refOperationId, *op.operationId) ||
                            !optEquals(e.refToolCallId, op.toolCallId)))) {
      opIssue(found, code::identity_conflict, e.id);
    }
  }

  // 8. reconcile / decision facts, by payload.operationId only.
  void onRecoveryFact(size_t i, const RuntimeEvent& e, uint64_t oh) {
    if (!e.toolRecovery) return;  // the decoder guarantees it for these lanes
    const std::string& operationId = e.toolRecovery->operationId;
    const uint32_t owner = findOperationId(operationId, oh);
    if (owner == kEmpty) {
      topIssue(code::event_order_conflict, e.id);
      return;
    }
    ScannedOperation& op = scan_.operations[owner];
    if (e.lane == Lane::reconcile_result) {
      op.reconciles.push_back(i);
    } else {
      op.decisions.push_back(i);
    }
  }

  EventRefs events_;
  LedgerScan scan_;
  FlatIndex seenIds_;
  FlatIndex spines_{4};
  FlatIndex byToolCall_;
  FlatIndex byOperation_;
  size_t spineCache_ = 0;
  bool spineCacheValid_ = false;
  std::string_view lastInvocation_;
  bool lastInvocationValid_ = false;
  uint64_t lastInvocationHash_ = 0;
};

bool hasExecutionIdentity(const RuntimeEvent& e, const RecoveryOperationIdentity& op) {
  return !e.partial && e.invocationId == op.invocationId && e.runId == op.runId &&
         e.turnId == op.turnId;
}

std::string_view parkedReasonFor(std::string_view observation) {
  if (observation == code::matches_prior_state) return code::reconcile_matches_prior_state;
  if (observation == code::diverged) return code::reconcile_diverged;
  if (observation == code::unreadable) return code::reconcile_unreadable;
  return {};
}

bool knownObservation(std::string_view o) {
  return o == code::matches_expected_state || o == code::matches_prior_state ||
         o == code::diverged || o == code::unreadable;
}

}  // namespace

bool ScannedOperation::hasIssue(std::string_view c) const {
  return std::find(issueCodes.begin(), issueCodes.end(), c) != issueCodes.end();
}

LedgerScan scanLedger(EventRefs events) { return Scanner(events).run(); }

RecoveryOperationIdentity recoveryIdentityFromDispatch(const RuntimeEvent& call,
                                                       const RuntimeEvent& dispatch) {
  RecoveryOperationIdentity id;
  id.invocationId = dispatch.invocationId;
  id.runId = dispatch.runId;
  id.turnId = dispatch.turnId;
  id.callEventId = call.id;
  id.dispatchEventId = dispatch.id;
  if (dispatch.toolDispatch) {
    const ToolDispatch& d = *dispatch.toolDispatch;
    id.operationId = d.operationId;
    id.providerToolCallId = d.providerToolCallId;
    id.toolName = d.toolName;
    id.canonicalArgsHash = d.canonicalArgsHash;
    id.recoveryMode = d.recoveryMode;
  }
  return id;
}

std::string validateRecoveryBundle(const RecoveryOperationIdentity& op, const RuntimeEvent& call,
                                   const RuntimeEvent& dispatch, const RuntimeEvent& reconcile,
                                   const RuntimeEvent* outcome, const RuntimeEvent& decision) {
  // call_identity_conflict: call id/name/event id/lane/execution identity.
  if (call.id != op.callEventId || call.contentKind != ContentKind::function_call ||
      call.callId != op.providerToolCallId || call.toolName != op.toolName ||
      call.lane != Lane::function_call || !hasExecutionIdentity(call, op)) {
    return std::string(code::call_identity_conflict);
  }
  // canonical_args_hash_conflict: recomputed from the call (cached by the decoder).
  if (!call.callArgsHash || *call.callArgsHash != op.canonicalArgsHash) {
    return std::string(code::canonical_args_hash_conflict);
  }
  // dispatch_identity_conflict.
  const ToolDispatch* d = dispatch.toolDispatch ? &*dispatch.toolDispatch : nullptr;
  if (dispatch.id != op.dispatchEventId || d == nullptr || d->operationId != op.operationId ||
      d->providerToolCallId != op.providerToolCallId || d->toolName != op.toolName ||
      d->canonicalArgsHash != op.canonicalArgsHash || d->recoveryMode != op.recoveryMode ||
      dispatch.lane != Lane::tool_dispatch || !hasExecutionIdentity(dispatch, op) ||
      dispatch.sessionId != call.sessionId || !optEquals(dispatch.refOperationId, op.operationId) ||
      !optEquals(dispatch.refToolCallId, op.providerToolCallId)) {
    return std::string(code::dispatch_identity_conflict);
  }
  if (op.recoveryMode != code::reconcile) return std::string(code::recovery_mode_unsupported);

  const ToolRecovery* r = reconcile.toolRecovery ? &*reconcile.toolRecovery : nullptr;
  if (r == nullptr || r->kind != ToolRecovery::Kind::reconcile_result ||
      !knownObservation(r->observation)) {
    return std::string(code::reconcile_fact_invalid);
  }
  const ToolRecovery* f = decision.toolRecovery ? &*decision.toolRecovery : nullptr;
  if (f == nullptr || f->kind != ToolRecovery::Kind::recovery_decision ||
      (f->disposition != code::completed && f->disposition != code::parked)) {
    return std::string(code::decision_fact_invalid);
  }

  if (reconcile.lane != Lane::reconcile_result || decision.lane != Lane::recovery_decision ||
      !hasExecutionIdentity(reconcile, op) || !hasExecutionIdentity(decision, op) ||
      reconcile.sessionId != call.sessionId || decision.sessionId != call.sessionId ||
      !optEquals(reconcile.refOperationId, op.operationId) ||
      !optEquals(reconcile.refToolCallId, op.providerToolCallId) ||
      !optEquals(decision.refOperationId, op.operationId) ||
      !optEquals(decision.refToolCallId, op.providerToolCallId)) {
    return std::string(code::recovery_fact_identity_conflict);
  }
  if (r->operationId != op.operationId || f->operationId != op.operationId) {
    return std::string(code::operation_identity_conflict);
  }

  const bool completed = f->disposition == code::completed;
  if (completed) {
    if (outcome == nullptr) return std::string(code::outcome_required);
    if (outcome->sessionId != call.sessionId || outcome->lane != Lane::function_response ||
        !hasExecutionIdentity(*outcome, op) ||
        outcome->contentKind != ContentKind::function_response ||
        outcome->callId != op.providerToolCallId || outcome->toolName != op.toolName ||
        !optEquals(outcome->refOperationId, op.operationId) ||
        !optEquals(outcome->refToolCallId, op.providerToolCallId)) {
      return std::string(code::outcome_identity_conflict);
    }
    if (outcome->isError) return std::string(code::outcome_not_successful);
    if (f->outcomeEventId != outcome->id) return std::string(code::outcome_reference_conflict);
    if (r->observation != code::matches_expected_state) {
      return std::string(code::reconcile_decision_conflict);
    }
  } else {
    if (outcome != nullptr) return std::string(code::outcome_for_parked);
    if (r->observation == code::matches_expected_state ||
        f->reasonCode != parkedReasonFor(r->observation)) {
      return std::string(code::reconcile_decision_conflict);
    }
  }

  const size_t expected = completed ? 4 : 3;
  const std::vector<std::string>& ev = f->evidenceEventIds;
  if (ev.size() != expected || ev[0] != op.callEventId || ev[1] != op.dispatchEventId ||
      ev[2] != reconcile.id || (completed && ev[3] != outcome->id)) {
    return std::string(code::evidence_order_conflict);
  }
  return {};
}

std::string validateRecoveryBundle(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                   const RuntimeEvent& reconcile, const RuntimeEvent* outcome,
                                   const RuntimeEvent& decision) {
  return validateRecoveryBundle(recoveryIdentityFromDispatch(call, dispatch), call, dispatch,
                                reconcile, outcome, decision);
}

std::optional<RecoveryTail> interpretRecoveryTail(EventRefs events, const ScannedOperation& op) {
  if (op.reconciles.empty() && op.decisions.empty()) return std::nullopt;
  RecoveryTail tail;
  if (op.reconciles.size() != 1 || op.decisions.size() != 1 || !op.call || !op.dispatch ||
      !op.operationId || !events[*op.dispatch].toolDispatch) {
    tail.code = std::string(code::recovery_fact_shape_conflict);
    return tail;
  }
  const RuntimeEvent& call = events[*op.call];
  const RuntimeEvent& dispatch = events[*op.dispatch];
  const RuntimeEvent& reconcile = events[op.reconciles[0]];
  const RuntimeEvent& decision = events[op.decisions[0]];
  const RuntimeEvent* outcome = op.response ? &events[*op.response] : nullptr;

  const ToolDispatch& d = *dispatch.toolDispatch;
  RecoveryOperationIdentity identity;
  identity.operationId = *op.operationId;
  identity.invocationId = dispatch.invocationId;
  identity.runId = dispatch.runId;
  identity.turnId = dispatch.turnId;
  identity.providerToolCallId = op.toolCallId;
  identity.toolName = d.toolName;  // the T1 row's name (recoveryIdentityFromDispatch)
  identity.canonicalArgsHash = d.canonicalArgsHash;
  identity.recoveryMode = d.recoveryMode;
  identity.callEventId = call.id;
  identity.dispatchEventId = dispatch.id;

  std::string failure =
      validateRecoveryBundle(identity, call, dispatch, reconcile, outcome, decision);
  if (!failure.empty()) {
    tail.code = std::move(failure);
    return tail;
  }
  // Causal order by physical position: call < dispatch < reconcile < [outcome] < decision.
  size_t order[5];
  size_t count = 0;
  order[count++] = *op.call;
  order[count++] = *op.dispatch;
  order[count++] = op.reconciles[0];
  if (op.response) order[count++] = *op.response;
  order[count++] = op.decisions[0];
  for (size_t k = 1; k < count; ++k) {
    if (order[k] <= order[k - 1]) {
      tail.code = std::string(code::event_order_conflict);
      return tail;
    }
  }
  tail.valid = true;
  tail.disposition = decision.toolRecovery->disposition;
  tail.reasonCode = decision.toolRecovery->reasonCode;
  tail.reconcile = op.reconciles[0];
  tail.outcome = op.response;
  tail.decision = op.decisions[0];
  return tail;
}

}  // namespace crashsim::detail
