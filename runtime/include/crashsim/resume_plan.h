// crashsim/resume_plan.h — the Phase 0 ResumePlan (spec d).
//
// buildResumePlan() is pure: it runs the RecoveryResolver, projects the visible tool
// operations, computes diagnostics (in the contract's order), rejection reasons,
// requiresVerification, the fixed directive and the provider replay events. It never
// mutates its input; two computations over the same events are equal.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crashsim/recovery_resolver.h"
#include "crashsim/runtime_event.h"

namespace crashsim {

// ToolOperation of the plan (d.2). status: succeeded | failed | not_dispatched |
// indeterminate | parked | corruption.
struct PlanOperation {
  std::string toolCallId;
  std::string toolName;
  Json args;  // the call event's content.args (null when absent)
  std::string status;
  std::string callRuntimeEventId;
  std::optional<std::string> responseRuntimeEventId;
  std::optional<bool> responseIsError;
  bool operator==(const PlanOperation&) const = default;
};

struct PlanDiagnostic {
  std::string code;
  std::optional<Json> detail;
  bool operator==(const PlanDiagnostic&) const = default;
};

struct ResumePlan {
  std::string disposition;  // safe_replay | blocked
  std::vector<PlanOperation> operations;
  std::vector<PlanDiagnostic> diagnostics;
  std::vector<std::string> rejectionReasons;  // set, first-appearance order
  bool requiresVerification = false;
  std::optional<std::string> directive;  // present iff requiresVerification
  uint64_t sourceRuntimeEventHighWater = 0;
  std::vector<size_t> replayEventIndexes;  // indexes into the input span, in order
  RecoveryResolution resolution;
  bool operator==(const ResumePlan&) const = default;
};

// The fixed directive text (d.6): says the tool was interrupted, side effects may or may not
// have happened, do not retry immediately, inspect read-only first.
extern const std::string_view kResumeDirective;

ResumePlan buildResumePlan(std::span<const RuntimeEvent> events,
                           std::optional<uint64_t> expectedRuntimeEventHighWater = std::nullopt);

// The "plan" object of `crashsim ledger resolve` (DESIGN.md): replayRuntimeEventIds are the
// ids of the replay events.
Json toJson(const ResumePlan& plan, std::span<const RuntimeEvent> events);

}  // namespace crashsim
