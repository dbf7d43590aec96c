// O3 (verdicts/o3_recovery.h).
#include "verdicts/o3_recovery.h"

#include <fmt/format.h>

#include <algorithm>

namespace crashsim::harness {
namespace {

// "" when the task is done, else what is missing.
std::string unfinished(const OpenEvidence& ev) {
  const auto& expect = ev.scenario->spec.expect;
  for (const auto& [path, content] : expect.files) {
    const auto it = ev.workspace.find(path);
    if (it == ev.workspace.end()) return fmt::format("{} is missing", path);
    if (it->second != content) return fmt::format("{} does not hold the expected content", path);
  }
  for (const auto& path : expect.absent)
    if (ev.workspace.count(path)) return fmt::format("{} exists but must not", path);
  for (const ScenarioCall& call : ev.scenario->calls) {
    if (call.name == "Read" || !call.dispatched()) continue;
    if (!ev.effects.count(call.id)) return fmt::format("{} ({}) never ran", call.id, call.name);
  }
  return "";
}

// Whether the model had asked for a Write, Edit or Bash before the resume judged last began: the
// steps of the requests logged before it (the last one's answer counted as sent, though a kill at
// MQ may have stopped it), so a stop is never blamed on a runtime that may have dispatched one.
bool sideEffectAskedFor(const OpenEvidence& ev) {
  long last = -1;
  const auto n = std::min(ev.modelLog.size(), static_cast<size_t>(ev.requestsBeforeFinalResume));
  for (size_t i = 0; i < n; ++i)
    if (const auto& step = ev.modelLog[i].value("step", nlohmann::json()); step.is_number_integer())
      last = std::max(last, step.get<long>());
  return std::any_of(
      ev.scenario->calls.begin(), ev.scenario->calls.end(), [last](const ScenarioCall& c) {
        return c.name != "Read" && c.dispatched() && static_cast<long>(c.step) <= last;
      });
}

}  // namespace

std::string recoveryOutcome(const OpenEvidence& ev) {
  const ChildResult& r = ev.resumed.child;
  if (!r.spawned) return "not-started";
  if (r.timedOut) return "timeout";
  if (r.signaled) return fmt::format("signal:{}", r.signal);
  const auto& stops = ev.profile->stopExitCodes;
  if (std::find(stops.begin(), stops.end(), r.exitCode) != stops.end())
    return fmt::format("stopped:{}", r.exitCode);
  if (r.exitCode == 0) return unfinished(ev).empty() ? "finished" : "exit0-unfinished";
  return fmt::format("exit:{}", r.exitCode);
}

OpenVerdict judgeO3Recovery(const OpenEvidence& ev) {
  const ChildResult& r = ev.resumed.child;
  const std::string outcome = recoveryOutcome(ev);
  if (outcome == "finished") return "";
  if (outcome.starts_with("stopped:"))
    return sideEffectAskedFor(ev)
               ? ""
               : fmt::format(
                     "the resume stopped (exit {}) though the model had asked for no Write, Edit "
                     "or Bash before the crash: no outcome was unknown, the task had to finish",
                     r.exitCode);
  if (outcome == "not-started") return "the resume did not start: " + r.error;
  if (outcome == "timeout")
    return fmt::format("the resume did not end within {} s", ev.profile->resumeSeconds);
  if (outcome == "exit0-unfinished")
    return "the resume exited 0 with the task unfinished: " + unfinished(ev);
  return fmt::format("the resume {} (not a stop the profile declares)", r.describe());
}

}  // namespace crashsim::harness
