// driver/descendants.h — the processes a child of the harness started, and whether they outlive
// it (workspace-continuity-contract.md i.3 H5: no git child outlives the killed agent).
//
// The harness lists the child's descendants from /proc just before it SIGKILLs the child (the
// armed child is blocked at its failpoint, so the list is exactly what it left running). Once the
// child is reaped, each descendant is dying — gone, a zombie, in its exit (PF_EXITING) or with a
// SIGKILL pending, which is what PR_SET_PDEATHSIG(SIGKILL) delivers before the parent's reaping
// can return — or it outlived the child: a git command left to finish its write after the crash.
// A pid whose start time changed is another process. Linux only (/proc/<pid>/task/*/children).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace crashsim::harness::spawning {

// One process, identified beyond its pid by its start time (clock ticks since boot).
struct ProcessIdentity {
  pid_t pid = -1;
  uint64_t startTime = 0;
  std::string comm;  // its name (/proc/<pid>/comm)
};

// Every descendant of `root` (children of any of its threads, recursively), `root` excluded.
std::vector<ProcessIdentity> descendantsOf(pid_t root);

// After the parent's reaping: each of `procs` that is not dying, and each dying one still there
// after `patience`, is SIGKILLed with its process group; returns one line per such survivor
// ("pid 123 (git) ...").
std::vector<std::string> reapSurvivors(const std::vector<ProcessIdentity>& procs,
                                       std::chrono::milliseconds patience);

}  // namespace crashsim::harness::spawning
