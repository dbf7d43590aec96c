// O1 (verdicts/o1_kill.h).
#include "verdicts/o1_kill.h"

#include <fmt/format.h>

namespace crashsim::harness {

namespace {

OpenVerdict killProblem(const OpenProcessResult& r, const OpenArm& arm) {
  const std::string at = fmt::format("{}#{}", arm.point, arm.hit);
  if (!r.child.spawned) return fmt::format("the process did not start: {}", r.child.error);
  if (!r.reached)
    return fmt::format("{} was not reached: the process {} (the plan's reference run reached it)",
                       at, r.child.describe());
  if (!r.child.killedBySigkill())
    return fmt::format("the process {} instead of dying by SIGKILL at {}", r.child.describe(), at);
  if (!r.groupGone)
    return fmt::format("a process of the runtime's group outlived the kill at {}", at);
  if (!r.reporterGone)
    return fmt::format(
        "process {} that reported {} outlived the kill of the runtime's group "
        "(it left the group)",
        r.reporter, at);
  return "";
}

}  // namespace

OpenVerdict judgeO1Kill(const OpenEvidence& ev) {
  if (OpenVerdict why = killProblem(ev.crashed, ev.arm); !why.empty()) return why;
  if (ev.crashedResume) {
    if (OpenVerdict why = killProblem(*ev.crashedResume, ev.resumeArm); !why.empty())
      return "resume: " + why;
  }
  return "";
}

}  // namespace crashsim::harness
