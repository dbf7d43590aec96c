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

// One operation's recovery tail as the one shared tail interpreter reads it (c.4 with the f.6
// bundle rules): reported BESIDE the resolution, never as a resolver issue (c.2: issues hold
// scanner codes only). result is "valid" or the first failing code (a f.6 bundle code such as
// recovery_mode_unsupported or outcome_required, recovery_fact_shape_conflict, or
// event_order_conflict when the tail's physical order breaks call < dispatch < reconcile <
// [outcome] < decision). An operation c.3 steps 1–3 already decided as corruption never reaches
// the tail (step 7): result is then that decision's reason (orphan_dispatch, identity_conflict…).
struct RecoveryTailCheck {
  std::string operationId;
  std::string toolCallId;
  std::string firstRecoveryFactEventId;  // the operation's earliest reconcile/decision fact
  std::string result;                    // "valid" or the failing code

  bool operator==(const RecoveryTailCheck&) const = default;
};

// RuntimeRecoveryResolution (c).
struct RecoveryResolution {
  std::optional<std::string> toolBoundaryProtocol;  // "t1_after_preflight_v1" or absent
  std::vector<ToolDecision> decisions;              // in scanner operation order
  // Marker issues, then the scanner's in detection order (c.1, c.2). An invalid recovery tail
  // adds nothing here: it shows only as its decision, corruption / recovery_fact_corruption.
  std::vector<ResolverIssue> issues;
  bool hasCorruption = false;
  bool requiresReconciliation = false;
  // Not part of the contract's resolution (toJson(RecoveryResolution) omits it): one entry per
  // operation with recovery facts, in decision order.
  std::vector<RecoveryTailCheck> recoveryTails;

  bool operator==(const RecoveryResolution&) const = default;
};

// Resolves one run's events (c.1–c.5). Never throws on ledger content: every anomaly is an
// issue or a corruption decision (fail closed; no unknown combination degrades to a retry).
RecoveryResolution resolveRecovery(std::span<const RuntimeEvent> events);

// JSON shape used by `crashsim ledger resolve` and the reports (DESIGN.md "Command line"):
// absent optional fields are omitted; toolBoundaryProtocol is null when absent.
Json toJson(const RecoveryResolution& resolution);
Json toJson(const ToolDecision& decision);
// `crashsim ledger resolve`'s third member, beside resolution and plan: an array of
// {operationId, toolCallId, firstRecoveryFactEventId, result}.
Json toJson(const std::vector<RecoveryTailCheck>& recoveryTails);

}  // namespace crashsim
