// crashsim/recovery_resolver.h — the RecoveryResolver: the single decision authority (spec c).
//
// resolveRecovery() is a pure function over ONE run's ordered immutable events (durable
// order). It shares its scanner (ledger_scanner) with every writer and with projection
// rebuild. The planner, the CLI, the reconcilers and the reports consume its decisions and
// never re-derive tool state.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crashsim/runtime_event.h"

namespace crashsim {

// One operation's decision (c.3). status ∈ {completed, indeterminate,
// definitely_not_dispatched, parked, corruption}; reason is a code from codes.h.
struct ToolDecision {
  std::string toolCallId;
  std::optional<std::string> toolName;
  std::optional<std::string> operationId;
  std::string status;
  std::string reason;
  std::optional<std::string> settlementOrigin;  // normal_t2 | pre_t1_synthetic | recovery_bundle
  std::optional<std::string> callRuntimeEventId;
  std::optional<std::string> dispatchRuntimeEventId;
  std::optional<std::string> responseRuntimeEventId;
  std::optional<bool> responseIsError;  // present whenever a response exists
  // Index of the call event in the resolved span (internal convenience; not serialised).
  std::optional<size_t> callIndex;
  std::optional<std::string> recoveryMode;  // from the dispatch, when present

  bool operator==(const ToolDecision&) const = default;
};

struct ResolverIssue {
  std::string code;
  std::string eventId;
  bool operator==(const ResolverIssue&) const = default;
};

// RuntimeRecoveryResolution (c).
struct RecoveryResolution {
  std::optional<std::string> toolBoundaryProtocol;  // "t1_after_preflight_v1" or absent
  std::vector<ToolDecision> decisions;              // in scanner operation order
  // Marker issues, then the scanner's in detection order, then one per operation whose
  // recovery tail is invalid (c.4): its failing code (a f.6 bundle code such as
  // outcome_required, or recovery_fact_shape_conflict / event_order_conflict) on the
  // operation's first recovery fact; that decision's reason stays recovery_fact_corruption.
  std::vector<ResolverIssue> issues;
  bool hasCorruption = false;
  bool requiresReconciliation = false;

  bool operator==(const RecoveryResolution&) const = default;
};

// Resolves one run's events (c.1–c.5). Never throws on ledger content: every anomaly is an
// issue or a corruption decision (fail closed; no unknown combination degrades to a retry).
RecoveryResolution resolveRecovery(std::span<const RuntimeEvent> events);

// JSON shape used by `crashsim ledger resolve` and the reports (DESIGN.md "Command line"):
// absent optional fields are omitted; toolBoundaryProtocol is null when absent.
Json toJson(const RecoveryResolution& resolution);
Json toJson(const ToolDecision& decision);

}  // namespace crashsim
