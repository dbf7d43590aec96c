// resolver_model_types.h — what the independent resolver model decides (resolver_model.h):
// per operation a decision, the scanner's issues, the recovery-tail checks and the resolution
// flags, in the contract's terms (spec c.3–c.5), field for field the runtime's RecoveryResolution.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace crashsim::model {

struct Decision {
  std::string toolCallId;
  std::optional<std::string> toolName, operationId;
  std::string status, reason;
  std::optional<std::string> settlementOrigin;
  std::optional<std::string> callId, dispatchId, responseId;
  std::optional<bool> responseIsError;
};

struct Issue {
  std::string code, eventId;
  bool operator<(const Issue& o) const {
    return std::tie(code, eventId) < std::tie(o.code, o.eventId);
  }
  bool operator==(const Issue& o) const = default;
};

// One operation's recovery-tail check (RecoveryTailCheck): "valid" or the failing code.
struct TailCheck {
  std::string operationId, toolCallId, firstFactId, result;
  bool operator==(const TailCheck& o) const = default;
};

struct Resolution {
  bool newProtocol = false;
  std::vector<Decision> decisions;
  std::vector<Issue> issues;     // scanner codes only (c.2); a tail failure is never one
  std::vector<TailCheck> tails;  // per operation with recovery facts, in decision order
  bool hasCorruption = false;
  bool requiresReconciliation = false;
};

}  // namespace crashsim::model
