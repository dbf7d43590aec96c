// V9: two runs of a case agree (verdicts/v9_determinism.h).
#include "verdicts/v9_determinism.h"

namespace crashsim::harness {

reports::Check determinismCheck(const std::map<std::string, reports::Check>& first,
                                const std::map<std::string, reports::Check>& second) {
  std::string which;
  auto note = [&](const std::string& k) { which += (which.empty() ? "" : ", ") + k; };
  for (const auto& [k, v] : first) {
    if (k == "V9") continue;
    auto it = second.find(k);
    if (it == second.end() || !(it->second == v)) note(k);
  }
  for (const auto& [k, v] : second)
    if (k != "V9" && !first.count(k)) note(k);
  if (which.empty()) return {"pass", ""};
  return {"fail", "a second run gave a different verdict for " + which};
}

}  // namespace crashsim::harness
