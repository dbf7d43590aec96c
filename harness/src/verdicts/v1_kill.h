// verdicts/v1_kill.h — V1: the child died where it was armed, by SIGKILL, and nothing after.
//
// Proves: the armed process (the agent run, or the recovery process of a double fault) reported
// exactly the armed point and hit on its control fd, was killed by SIGKILL (judged from the
// native wait status), did not hang, and left no normal-exit marker (agent-exit.json): the crash
// state the other verdicts judge is the one the case names. Cannot see: a process that reports
// the right point but has already done more than the boundary allows (V3 sees the facts).
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/harness/supervisor.h"

namespace crashsim::harness {

// "" when `child`, spawned by `spec` and armed at (point, hit), died as V1 requires; else why.
// `store`: the store directory whose normal-exit marker must not exist.
std::string killProblem(const ChildResult& child, const std::string& point, int hit,
                        const SpawnSpec& spec, const std::filesystem::path& store);

}  // namespace crashsim::harness
