// O2 (verdicts/o2_at_most_once.h).
#include "verdicts/o2_at_most_once.h"

#include <fmt/format.h>

namespace crashsim::harness {

OpenVerdict judgeO2AtMostOnce(const OpenEvidence& ev) {
  for (const ScenarioCall& call : ev.scenario->calls) {
    if (call.name == "Read") continue;
    const auto count = [&call](const std::map<std::string, int>& m) {
      const auto it = m.find(call.id);
      return it == m.end() ? 0 : it->second;
    };
    const int ran = count(ev.effects), again = count(ev.resent);
    if (ran > 1)
      return fmt::format("{} ({}) ran {} times ({} before the crash); a {} runs at most once",
                         call.id, call.name, ran, count(ev.effectsBeforeResume), call.name);
    if (ran + again > 1)
      return fmt::format(
          "{} ({}) was sent again {} time(s) after its effect ran (the tool server answered "
          "without running it again); a {} runs at most once",
          call.id, call.name, again, call.name);
  }
  for (const auto& [tool, ran] : ev.unscripted)
    if (tool != "Read")
      return fmt::format(
          "a {} the model never asked for ran {} time(s): the tool server matched its arguments "
          "to no call of the scenario (a call sent again with other arguments?)",
          tool, ran);
  return "";
}

}  // namespace crashsim::harness
