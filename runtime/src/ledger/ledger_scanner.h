// ledger_scanner.h — THE single ledger scanner (spec c.2) and recovery-tail interpreter (c.4).
//
// Shared by the RecoveryResolver, projection rebuild and every store writer's prospective
// transition check. Nothing else may scan tool-ledger lanes. Its room, ledger/, sits below
// both users: store/ and recovery/ include it, it includes neither (only the public event and
// resolver-issue types).
//
// Contract summary:
//  - scanLedger() makes one pass over the events in physical order. Operations are keyed by
//    (invocationId, providerToolCallId) as a pair of strings (unambiguous, equivalent to the
//    JSON array encoding of c.2). Every issue is appended to LedgerScan::issues in detection
//    order; issues that belong to an operation are also recorded (by code) on that operation,
//    a duplicate_operation on both operations that claim the operationId (listed once in
//    LedgerScan::issues).
//  - Indexes and string views in ScannedOperation point into the scanned span; the span must
//    outlive any use of them. The scanner never throws on ledger content and never allocates per
//    event.
//  - interpretRecoveryTail() and validateRecoveryBundle() are the one definition of a valid
//    recovery bundle (c.4, f.6 step 2); the resolver, projection rebuild and the store's
//    bundle writer all call them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/recovery_resolver.h"
#include "crashsim/runtime_event.h"

namespace crashsim::detail {

// The events a pass reads, in physical order: a contiguous span, or pointers to events held
// elsewhere (the store's decode cache), so a pass reads the decoded ledger in place instead of
// copying it first. Implicit from a vector or span, so existing callers pass what they have.
class EventRefs {
 public:
  EventRefs(std::span<const RuntimeEvent> events) : span_(events), size_(events.size()) {}
  EventRefs(const std::vector<RuntimeEvent>& events)
      : EventRefs(std::span<const RuntimeEvent>(events)) {}
  EventRefs(std::span<const RuntimeEvent* const> refs) : refs_(refs.data()), size_(refs.size()) {}
  EventRefs(const std::vector<const RuntimeEvent*>& refs)
      : EventRefs(std::span<const RuntimeEvent* const>(refs)) {}
  const RuntimeEvent& operator[](size_t i) const { return refs_ ? *refs_[i] : span_[i]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::span<const RuntimeEvent> span_;
  const RuntimeEvent* const* refs_ = nullptr;
  size_t size_ = 0;
};

// One operation keyed by (invocationId, providerToolCallId). Indexes and string views point
// into the scanned span (its events' strings), which must outlive the scan.
struct ScannedOperation {
  std::string_view invocationId;
  std::string_view toolCallId;
  std::string_view toolName;                    // from whichever fact created the operation
  std::optional<std::string_view> operationId;  // bound by the dispatch
  std::optional<uint32_t> call;
  std::optional<uint32_t> dispatch;
  std::optional<uint32_t> response;
  std::vector<size_t> reconciles;       // reconcile_result facts, physical order
  std::vector<size_t> decisions;        // recovery_decision facts, physical order
  std::vector<std::string> issueCodes;  // per-operation scanner issues (duplicate_call, ...)

  bool hasIssue(std::string_view code) const;
};

struct LedgerScan {
  std::vector<ScannedOperation> operations;  // creation order
  std::vector<ResolverIssue> issues;         // every issue, in detection order
  // Indexes of every event carrying actions.runtimeProtocol (any lane, duplicates included),
  // recorded in the same pass for the resolver's marker rule (c.1).
  std::vector<size_t> protocolMarkers;

  bool hasCorruption() const { return !issues.empty(); }
};

// The keys the scan links an event to an operation with (c.2): the call id of a
// function_call / function_response (content.id) or of a tool_dispatch (providerToolCallId),
// paired with the event's invocationId; and the operation id of a tool_dispatch or of a
// reconcile_result / recovery_decision fact. Other lanes link to nothing. The one definition,
// used by the scan itself and by the store's focused prospective scan.
template <class OnCallId, class OnOperationId>
inline void visitOperationKeys(const RuntimeEvent& e, OnCallId&& onCallId,
                               OnOperationId&& onOperationId) {
  switch (e.lane) {
    case Lane::function_call:
    case Lane::function_response:
      onCallId(e.callId);
      break;
    case Lane::tool_dispatch:
      if (e.toolDispatch) {
        onCallId(e.toolDispatch->providerToolCallId);
        onOperationId(e.toolDispatch->operationId);
      }
      break;
    case Lane::reconcile_result:
    case Lane::recovery_decision:
      if (e.toolRecovery) onOperationId(e.toolRecovery->operationId);
      break;
    case Lane::ordinary:
    case Lane::conflict:
      break;
  }
}

// Single pass in physical order (c.2 steps 1–8).
LedgerScan scanLedger(EventRefs events);

// Recovery-tail interpretation (c.4). Absent (nullopt) when the operation has no recovery
// facts. Otherwise either a valid completed/parked tail or a corruption code
// (recovery_fact_shape_conflict, a validateRecoveryBundle code, or event_order_conflict when
// call < dispatch < reconcile < [outcome] < decision does not hold by physical position).
struct RecoveryTail {
  bool valid = false;
  std::string code;                 // failing validation code when !valid
  std::string disposition;          // completed | parked when valid
  std::string reasonCode;           // decision reasonCode when valid
  std::optional<size_t> reconcile;  // indexes of the tail facts (set when valid)
  std::optional<size_t> outcome;
  std::optional<size_t> decision;
};
std::optional<RecoveryTail> interpretRecoveryTail(EventRefs events, const ScannedOperation& op);

// The durable identity of one tool operation a recovery bundle must bind to (the store's
// tool_operations row, or the scanned call + dispatch).
struct RecoveryOperationIdentity {
  std::string operationId;
  std::string invocationId;
  std::string runId;
  std::string turnId;
  std::string providerToolCallId;
  std::string toolName;
  std::string canonicalArgsHash;
  std::string recoveryMode;
  std::string callEventId;
  std::string dispatchEventId;
};

// Identity derived from a dispatch event (toolDispatch fields, execution identity of the
// dispatch) and the call event id. Fields stay empty when the dispatch has no toolDispatch.
RecoveryOperationIdentity recoveryIdentityFromDispatch(const RuntimeEvent& call,
                                                       const RuntimeEvent& dispatch);

// Recovery bundle validation (f.6 step 2), first failing code wins; empty string = valid.
// Order: call_identity_conflict → canonical_args_hash_conflict → dispatch_identity_conflict →
// recovery_mode_unsupported → reconcile_fact_invalid → decision_fact_invalid →
// recovery_fact_identity_conflict → operation_identity_conflict → completed:
// outcome_required, outcome_identity_conflict, outcome_not_successful,
// outcome_reference_conflict, reconcile_decision_conflict | parked: outcome_for_parked,
// reconcile_decision_conflict → evidence_order_conflict.
// Self-contained (pure, no I/O): shared by the store's bundle writer and interpretRecoveryTail.
std::string validateRecoveryBundle(const RecoveryOperationIdentity& operation,
                                   const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                   const RuntimeEvent& reconcile, const RuntimeEvent* outcome,
                                   const RuntimeEvent& decision);
// Same, with the operation identity taken from the dispatch (recoveryIdentityFromDispatch).
std::string validateRecoveryBundle(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                   const RuntimeEvent& reconcile, const RuntimeEvent* outcome,
                                   const RuntimeEvent& decision);

}  // namespace crashsim::detail
