// ledger_scanner.h — THE single ledger scanner (spec c.2) and recovery-tail interpreter (c.4).
//
// Shared by the RecoveryResolver, projection rebuild and every store writer's prospective
// transition check. Nothing else may scan tool-ledger lanes.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crashsim/recovery_resolver.h"
#include "crashsim/runtime_event.h"

namespace crashsim::detail {

// One operation keyed by (invocationId, providerToolCallId). Indexes point into the scanned span.
struct ScannedOperation {
  std::string invocationId;
  std::string toolCallId;
  std::optional<std::string> toolName;
  std::optional<std::string> operationId;  // bound by the dispatch
  std::optional<size_t> call;
  std::optional<size_t> dispatch;
  std::optional<size_t> response;
  std::vector<size_t> reconciles;  // reconcile_result facts, physical order
  std::vector<size_t> decisions;   // recovery_decision facts, physical order
  std::vector<std::string> issueCodes;  // per-operation scanner issues (duplicate_call, ...)
};

struct LedgerScan {
  std::vector<ScannedOperation> operations;  // creation order
  std::vector<ResolverIssue> issues;         // every issue, in detection order
};

// Single pass in physical order (c.2 steps 1–8).
LedgerScan scanLedger(std::span<const RuntimeEvent> events);

// Recovery-tail interpretation (c.4). Absent (nullopt) when the operation has no recovery
// facts. Otherwise either a valid completed/parked tail or a corruption code.
struct RecoveryTail {
  bool valid = false;
  std::string code;         // failing validation code when !valid
  std::string disposition;  // completed | parked when valid
  std::string reasonCode;   // decision reasonCode when valid
};
std::optional<RecoveryTail> interpretRecoveryTail(std::span<const RuntimeEvent> events,
                                                  const ScannedOperation& op);

// Recovery bundle validation (f.6 step 2), first failing code wins; empty string = valid.
// Shared by the store's bundle writer and interpretRecoveryTail.
std::string validateRecoveryBundle(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                   const RuntimeEvent& reconcile, const RuntimeEvent* outcome,
                                   const RuntimeEvent& decision);

}  // namespace crashsim::detail
