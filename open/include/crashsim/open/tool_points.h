// crashsim/open/tool_points.h — the tool server's crash points (protocol section 5): TC (a
// tools/call received, before its effect), TE (the effect done and logged, before the result is
// returned) and TR (the result returned).
//
// The hits are counted over every tool-server process of one runtime run (a runtime may start
// one per session, per resume or per call) in a counter file, a small JSON object
// {"TC":n,"TE":n,"TR":n,"holdNext":k} read and rewritten under an exclusive flock(2), so a
// process killed between two hits never leaves a lock held. Armed at TC:n or TE:n the process
// reports the hit on the control file as one line in the failpoints' wire format
// ({"failpoint":"TE","hit":n,"pid":P}) and blocks until killed.
//
// TR is different on purpose (reached just before the result is written): once it is written, what
// the runtime does next (persist the result, or not yet) is a race against the harness's kill, and
// a race would make the same case give different outcomes (O5). So armed at TR:n the process
// reports the hit without blocking and records holdNext=n; the runtime's next request to crashsim
// is where it dies: the next tools/call (any tool-server process of the run) reports
// {"failpoint":"TR","hit":n,"next":"TC","pid":P} and blocks before its effect, and the harness's
// model server, which reads the same control file, kills at the next model request. A chat
// runtime always sends one of the two after a tool result.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace crashsim::open {

// The stable code of a bad --arm value.
inline constexpr std::string_view kToolArmInvalid = "tool_arm_invalid";

struct ToolPointsOptions {
  std::string arm;                // "TC:1", "TE:2", "TR:1"; empty = unarmed
  std::filesystem::path control;  // where the report line goes (appended); required when armed
  std::filesystem::path counter;  // the shared counter file; empty = counts in this process only
};

class ToolPoints {
 public:
  // Throws crashsim::Error(kToolArmInvalid) for an arm that is not TC|TE|TR:<n ≥ 1>, or armed
  // without a control file.
  explicit ToolPoints(ToolPointsOptions options);
  // Counts one hit of `point` ("TC", "TE", "TR"); reports it and, for TC and TE (and TC after an
  // armed TR), blocks until the process is killed.
  void reach(std::string_view point);

 private:
  ToolPointsOptions options_;
  std::string armPoint_;
  int armHit_ = 0;
  int local_[3] = {0, 0, 0};
  int localHold_ = 0;
};

}  // namespace crashsim::open
