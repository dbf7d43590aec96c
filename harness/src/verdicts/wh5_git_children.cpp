// WH5: no git child outlives the killed agent (wh5_git_children.h).
#include "verdicts/wh5_git_children.h"

#include <fmt/format.h>

#include "crashsim/codes.h"

namespace crashsim::harness::wh5 {

bool applies(const Scenario& sc) {
  return sc.spec.workspacePolicy.checkpointRequirement != "disabled";
}

void judgeKill(const Scenario& sc, const ChildResult& killed, const char* when, Checks& c) {
  if (!applies(sc)) return;
  if (!killed.survivors.empty()) {
    c.fail("WH5", fmt::format("{}{}: {} descendant(s) of the killed agent: {}", when,
                              code::git_child_survived, killed.survivors.size(),
                              killed.survivors.front()));
    return;
  }
  if (!c.failed("WH5")) c.pass("WH5");
}

}  // namespace crashsim::harness::wh5
