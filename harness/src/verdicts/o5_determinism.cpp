// O5 (verdicts/o5_determinism.h).
#include "verdicts/o5_determinism.h"

#include <fmt/format.h>

#include "verdicts/o3_recovery.h"

namespace crashsim::harness {

nlohmann::json openVerdictRecord(const OpenEvidence& ev,
                                 const std::map<std::string, std::string>& verdicts) {
  nlohmann::json record = {{"recovery", recoveryOutcome(ev)}, {"effects", ev.effects}};
  for (const auto& [name, reason] : verdicts)
    record["verdicts"][name] = reason.empty() ? "pass" : "fail";
  return record;
}

OpenVerdict judgeO5Determinism(const nlohmann::json& first, const nlohmann::json& second) {
  if (first == second) return "";
  for (const auto& [key, value] : first.items())
    if (!second.contains(key) || second[key] != value)
      return fmt::format("the second run differs in {}: {} then {}", key, value.dump(),
                         second.contains(key) ? second[key].dump() : "nothing");
  return "the second run's record differs: " + second.dump();
}

}  // namespace crashsim::harness
