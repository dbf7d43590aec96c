// The fault-mode registry (crashsim/harness/fault_mode.h): the one place a mode is looked up by
// its name. A new mode is a file beside the others and one line in faultModes().
#include <stdexcept>

#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/oracle.h"
#include "modes/case_run.h"

namespace crashsim::harness {

std::vector<uint64_t> FaultMode::seeds(const CaseId&, uint64_t, int) const { return {}; }

std::vector<std::pair<CrashPoint, int>> FaultMode::primaryPoints(const Scenario& scenario) const {
  std::vector<std::pair<CrashPoint, int>> out;
  if (scenario.spec.legacyStore) return out;  // swept at its import (kill mode)
  const auto hits = predictedHits(scenario);
  for (CrashPoint fp : pointRange(points::P0, points::P9)) out.emplace_back(fp, hits[fp]);
  return out;
}

void FaultMode::planFollowUps(PrimaryPlan&) const {}

std::vector<std::string_view> verdictsWith(std::initializer_list<std::string_view> own) {
  std::vector<std::string_view> v(reports::kCheckNames.begin(), reports::kCheckNames.end());
  v.insert(v.end(), own.begin(), own.end());
  return v;
}

const std::vector<const FaultMode*>& faultModes() {
  static const std::vector<const FaultMode*> modes = {&killMode(), &powerlossMode(), &stopMode(),
                                                      &corruptMode()};
  return modes;
}

const FaultMode* findFaultMode(std::string_view name) {
  for (const FaultMode* m : faultModes())
    if (m->name() == name) return m;
  return nullptr;
}

const FaultMode& faultMode(std::string_view name) {
  if (const FaultMode* m = findFaultMode(name)) return *m;
  throw std::invalid_argument("unknown fault mode " + std::string(name));
}

std::vector<std::string> faultModeNames() {
  std::vector<std::string> names;
  for (const FaultMode* m : faultModes()) names.emplace_back(m->name());
  return names;
}

}  // namespace crashsim::harness
