// O2 (verdicts/o2_at_most_once.h).
#include "verdicts/o2_at_most_once.h"

#include <fmt/format.h>

namespace crashsim::harness {

OpenVerdict judgeO2AtMostOnce(const OpenEvidence& ev) {
  for (const ScenarioCall& call : ev.scenario->calls) {
    if (call.name == "Read") continue;
    const auto it = ev.effects.find(call.id);
    const int n = it == ev.effects.end() ? 0 : it->second;
    if (n > 1)
      return fmt::format(
          "{} ({}) ran {} times ({} before the crash); a {} runs at most once", call.id, call.name,
          n, ev.effectsBeforeResume.count(call.id) ? ev.effectsBeforeResume.at(call.id) : 0,
          call.name);
  }
  return "";
}

}  // namespace crashsim::harness
