// ledger_scanner.cpp — the single tool-ledger scanner (spec c.2), the recovery-tail
// interpreter (c.4) and recovery-bundle validation (f.6 step 2).
//
// Performance notes: the scan is one pass over the ledger index's rows (ids interned to
// symbols, recovery/ledger_index.h); operations are found through per-symbol slots, so a scan
// compares integers, allocates per operation (never per event) and reads an event's own
// memory only when it creates an operation or reports an issue.
#include "recovery/ledger_scanner.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>

#include "crashsim/codes.h"
#include "recovery/flat_index.h"
#include "recovery/ledger_index.h"

namespace crashsim::detail {

namespace {

bool optEquals(const std::optional<std::string>& a, std::string_view b) {
  return a.has_value() && *a == b;
}

// The scan reads only the ledger index: rows of interned symbols, compared as integers, and
// the symbols' text for the views it hands out (a new operation's keys, an issue's event id).
class Scanner {
 public:
  Scanner(const LedgerIndex& index, ScanObserver* observer)
      : index_(index), rows_(index.rows()), observer_(observer), slots_(index.symbolCount()) {
    // Reserved, not touched: a ledger has at most one operation per event.
    scan_.operations.reserve(rows_.size() / 2 + 1);
    keys_.reserve(rows_.size() / 2 + 1);
  }

  LedgerScan run() {
    for (size_t i = 0; i < rows_.size(); ++i) step(i);
    return std::move(scan_);
  }

 private:
  static constexpr uint32_t kEmpty = FlatIndex::kEmpty;

  // The operation keys of one scanned operation, as symbols.
  struct OpKeys {
    Sym invocation = kNoSym;
    Sym callId = kNoSym;
    Sym toolName = kNoSym;
    Sym operationId = kNoSym;          // bound by the dispatch
    uint32_t nextSameCallId = kEmpty;  // next operation with this call id (other invocation)
  };
  // Per symbol: the operations keyed by it.
  struct SymSlots {
    uint32_t opByCallId = kEmpty;     // first of the chain of operations with this call id
    uint32_t opByOperation = kEmpty;  // the operation that bound this operationId
  };

  static uint64_t symHash(Sym s) { return mix(s, 0x51ed270b27f4b1a9ULL); }

  using Role = ScanObserver::Role;
  void notify(size_t op, Role role, size_t i) {
    if (observer_ != nullptr) observer_->bound(op, scan_.operations[op], role, i);
  }

  void topIssue(std::string_view code, size_t event) {
    scan_.issues.push_back(ResolverIssue{std::string(code), std::string(text(rows_[event].id))});
  }
  void opIssue(size_t op, std::string_view code, size_t event) {
    topIssue(code, event);
    scan_.operations[op].issueCodes.emplace_back(code);
  }

  uint32_t findOp(Sym invocation, Sym callId) const {
    for (uint32_t v = slots_[callId].opByCallId; v != kEmpty; v = keys_[v].nextSameCallId) {
      if (keys_[v].invocation == invocation) return v;
    }
    return kEmpty;
  }

  std::string_view text(Sym s) const { return index_.text(s); }

  size_t createOp(size_t i, Sym callId, Sym toolName) {
    const size_t index = scan_.operations.size();
    ScannedOperation& op = scan_.operations.emplace_back();
    op.invocationId = text(rows_[i].invocation);
    op.toolCallId = text(callId);
    op.toolName = text(toolName);
    OpKeys& keys = keys_.emplace_back();
    keys.invocation = rows_[i].invocation;
    keys.callId = callId;
    keys.toolName = toolName;
    keys.nextSameCallId = slots_[callId].opByCallId;
    slots_[callId].opByCallId = static_cast<uint32_t>(index);
    return index;
  }

  bool sameExecutionIdentity(const EventRow& a, const EventRow& b) const {
    return a.session == b.session && a.invocation == b.invocation && a.run == b.run &&
           a.turn == b.turn;
  }

  void step(size_t i) {
    const EventRow& r = rows_[i];
    if (r.has(EventRow::kProtocolMarker)) scan_.protocolMarkers.push_back(i);

    // 1. duplicate id → skipped.
    if (r.has(EventRow::kDuplicateId)) {
      topIssue(code::duplicate_event_id, i);
      return;
    }

    // 2. invocation spine: first (session, run, turn) of an invocation; drift is reported
    //    and the event is still processed.
    checkSpine(i, r);

    // 3. lane validation (mandatory envelopes are checked by the decoder) → skipped.
    if (r.lane == Lane::conflict) {
      topIssue(code::semantic_lane_conflict, i);
      return;
    }
    // 4. partial events are skipped.
    if (r.has(EventRow::kPartial)) return;

    switch (r.lane) {
      case Lane::function_call:
        onCall(i, r);
        break;
      case Lane::tool_dispatch:
        onDispatch(i, r);
        break;
      case Lane::function_response:
        onResponse(i, r);
        break;
      case Lane::reconcile_result:
      case Lane::recovery_decision:
        onRecoveryFact(i, r);
        break;
      case Lane::ordinary:
      case Lane::conflict:
        break;
    }
  }

  void checkSpine(size_t i, const EventRow& r) {
    size_t spine;
    if (spineCacheValid_ && rows_[spineCache_].invocation == r.invocation) {
      spine = spineCache_;
    } else {
      const uint64_t h = symHash(r.invocation);
      const uint32_t found =
          spines_.find(h, [&](uint32_t v) { return rows_[v].invocation == r.invocation; });
      spineCache_ = found == kEmpty ? i : found;
      spineCacheValid_ = true;
      if (found == kEmpty) {
        spines_.insert(h, static_cast<uint32_t>(i),
                       [this](uint32_t v) { return symHash(rows_[v].invocation); });
        return;
      }
      spine = found;
    }
    const EventRow& first = rows_[spine];
    if (first.session != r.session || first.run != r.run || first.turn != r.turn) {
      topIssue(code::invocation_identity_conflict, i);
    }
  }

  // 5. function_call.
  void onCall(size_t i, const EventRow& r) {
    const uint32_t found = findOp(r.invocation, r.callId);
    if (found != kEmpty) {
      ScannedOperation& op = scan_.operations[found];
      if (!op.call) {
        op.call = static_cast<uint32_t>(i);
        notify(found, Role::call, i);
        if (keys_[found].toolName != r.toolName) opIssue(found, code::identity_conflict, i);
        return;
      }
      opIssue(found, code::duplicate_call, i);
      return;
    }
    const size_t op = createOp(i, r.callId, r.toolName);
    scan_.operations[op].call = static_cast<uint32_t>(i);
    notify(op, Role::call, i);
  }

  // 6. tool_dispatch.
  void onDispatch(size_t i, const EventRow& r) {
    if (!r.has(EventRow::kToolDispatch)) return;  // the decoder guarantees it for this lane
    const uint32_t found = findOp(r.invocation, r.providerToolCallId);
    size_t opIndex;
    if (found == kEmpty) {
      opIndex = createOp(i, r.providerToolCallId, r.dispatchToolName);
      scan_.operations[opIndex].operationId = text(r.operationId);
      keys_[opIndex].operationId = r.operationId;
      scan_.operations[opIndex].dispatch = static_cast<uint32_t>(i);
      notify(opIndex, Role::dispatch, i);
      opIssue(opIndex, code::event_order_conflict, i);
    } else {
      opIndex = found;
      if (scan_.operations[opIndex].dispatch) {
        opIssue(opIndex, code::duplicate_dispatch, i);  // the first dispatch stays
        return;
      }
    }

    const uint32_t owner = slots_[r.operationId].opByOperation;
    if (owner != kEmpty && owner != opIndex) {
      topIssue(code::duplicate_operation, i);
      scan_.operations[owner].issueCodes.emplace_back(code::duplicate_operation);
      scan_.operations[opIndex].issueCodes.emplace_back(code::duplicate_operation);
      return;
    }

    ScannedOperation& op = scan_.operations[opIndex];
    OpKeys& keys = keys_[opIndex];
    if (found != kEmpty) {
      op.operationId = text(r.operationId);
      keys.operationId = r.operationId;
      op.dispatch = static_cast<uint32_t>(i);
      notify(opIndex, Role::dispatch, i);  // else bound at creation
    }
    if (owner == kEmpty) slots_[r.operationId].opByOperation = static_cast<uint32_t>(opIndex);

    const EventRow* call = op.call ? &rows_[*op.call] : nullptr;
    if (keys.toolName != r.dispatchToolName || r.refOperationId != r.operationId ||
        r.refToolCallId != r.providerToolCallId ||
        (call != nullptr && !sameExecutionIdentity(*call, r))) {
      opIssue(opIndex, code::identity_conflict, i);
    }
    // A call whose args are not strict JSON has no hash (kNoSym) and cannot authenticate T1.
    if (call != nullptr && call->argsHash != r.argsHash) {
      opIssue(opIndex, code::canonical_args_hash_conflict, i);
    }
    if (op.response) {
      const EventRow& response = rows_[*op.response];
      opIssue(opIndex, code::event_order_conflict, i);
      if (response.refOperationId != r.operationId ||
          response.refToolCallId != r.providerToolCallId || !sameExecutionIdentity(r, response)) {
        opIssue(opIndex, code::identity_conflict, *op.response);
      }
    }
  }

  // 7. function_response.
  void onResponse(size_t i, const EventRow& r) {
    const uint32_t found = findOp(r.invocation, r.callId);
    if (found == kEmpty) {
      const size_t op = createOp(i, r.callId, r.toolName);
      scan_.operations[op].response = static_cast<uint32_t>(i);
      notify(op, Role::response, i);
      opIssue(op, code::orphan_response, i);
      return;
    }
    ScannedOperation& op = scan_.operations[found];
    if (op.response) {
      opIssue(found, code::duplicate_response, i);
      return;
    }
    op.response = static_cast<uint32_t>(i);
    notify(found, Role::response, i);
    const OpKeys& keys = keys_[found];
    const EventRow* call = op.call ? &rows_[*op.call] : nullptr;
    if (keys.toolName != r.toolName || call == nullptr || !sameExecutionIdentity(*call, r) ||
        (keys.operationId != kNoSym &&
         (r.refOperationId != keys.operationId || r.refToolCallId != keys.callId))) {
      opIssue(found, code::identity_conflict, i);
    }
  }

  // 8. reconcile / decision facts, by payload.operationId only.
  void onRecoveryFact(size_t i, const EventRow& r) {
    if (!r.has(EventRow::kToolRecovery)) return;  // the decoder guarantees it for these lanes
    const uint32_t owner = slots_[r.operationId].opByOperation;
    if (owner == kEmpty) {
      topIssue(code::event_order_conflict, i);
      return;
    }
    ScannedOperation& op = scan_.operations[owner];
    if (r.lane == Lane::reconcile_result) {
      op.reconciles.push_back(i);
    } else {
      op.decisions.push_back(i);
    }
  }

  const LedgerIndex& index_;
  std::span<const EventRow> rows_;
  ScanObserver* observer_;
  LedgerScan scan_;
  std::vector<OpKeys> keys_;  // parallel to scan_.operations
  std::vector<SymSlots> slots_;
  FlatIndex spines_{4};
  size_t spineCache_ = 0;
  bool spineCacheValid_ = false;
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

LedgerScan scanLedger(std::span<const RuntimeEvent> events, ScanObserver* observer) {
  auto index = std::make_shared<const LedgerIndex>(LedgerIndex::build(events));
  LedgerScan scan = scanLedger(events, *index, observer);
  scan.ownedIndex = std::move(index);  // the operations' views point into it
  return scan;
}

LedgerScan scanLedger(std::span<const RuntimeEvent> events, const LedgerIndex& index,
                      ScanObserver* observer) {
  if (index.size() != events.size()) {
    throw std::logic_error("scanLedger: the ledger index does not describe the events");
  }
  return Scanner(index, observer).run();
}

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

std::optional<RecoveryTail> interpretRecoveryTail(std::span<const RuntimeEvent> events,
                                                  const ScannedOperation& op) {
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
  identity.toolName = op.toolName;
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
