// V1: died at the armed point by SIGKILL (verdicts/v1_kill.h).
#include "verdicts/v1_kill.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "verdicts/verdict.h"

namespace crashsim::harness {

std::string killProblem(const ChildResult& child, const std::string& point, int hit,
                        const SpawnSpec& spec, const std::filesystem::path& store) {
  if (!child.error.empty()) return child.error;
  if (child.timedOut)
    return fmt::format("hung: no control record for {}#{} within {} ms", point, hit,
                       spec.timeout.count());
  if (child.controlLine.empty())
    return fmt::format("{} before reaching {}#{} ({})", child.describe(), point, hit,
                       lastLine(spec.stderrFile));
  nlohmann::json ctl;
  try {
    ctl = nlohmann::json::parse(child.controlLine);
  } catch (...) {
    return "unparseable control record: " + child.controlLine;
  }
  if (!ctl.is_object() || ctl.value("failpoint", "") != point || ctl.value("hit", 0) != hit)
    return fmt::format("reported {} instead of {}#{}", child.controlLine, point, hit);
  if (!child.killedBySigkill()) return "not killed by SIGKILL: " + child.describe();
  if (std::filesystem::exists(store / "agent-exit.json"))
    return "normal-exit marker agent-exit.json exists";
  return "";
}

}  // namespace crashsim::harness
