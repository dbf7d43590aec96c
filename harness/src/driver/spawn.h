// driver/spawn.h — how the supervisor (crashsim/harness/supervisor.h) starts, waits for and reaps
// one child: posix_spawn, or the worker thread's fork server (`<exe> serve`) when the spec allows
// it and the spawn method is fork-server; the child gets fds 0–3 only and the harness's
// environment minus the variables the harness owns, plus the spec's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "crashsim/harness/supervisor.h"

namespace crashsim::harness::spawning {

using Clock = std::chrono::steady_clock;

class ForkServer;

// A started child: its pid, the read end of its control pipe (-1 without one), the fork server
// that is its parent (nullptr for posix_spawn), or why it did not start (pid -1).
struct Spawned {
  pid_t pid = -1;
  int controlRead = -1;
  ForkServer* server = nullptr;
  std::string error;
};

// Starts `spec`; with `withControl` the child's fd 3 is the write end of a new control pipe.
Spawned spawn(const SpawnSpec& spec, bool withControl);
// Waits for the child and fills r.exited/exitCode or r.signaled/signal (r.error on failure).
void reap(const Spawned& s, ChildResult& r);
// A wait status as r.exited/exitCode or r.signaled/signal.
void recordStatus(int status, ChildResult& r);
// SIGKILLs (when `kill`) and reaps the child, timing both (ChildResult::killReapTime); with
// `watchDescendants` the descendants it had running at the kill and outlived it are
// ChildResult::survivors.
void killAndReap(const Spawned& s, ChildResult& r, bool kill, bool watchDescendants = false);
std::chrono::microseconds sinceUs(Clock::time_point t);
// Milliseconds left until `deadline`, never negative.
int remainingMs(Clock::time_point deadline);

enum class WaitResult { exited, timed_out, no_pidfd };
// Waits (without reaping) until the child has exited or the deadline passes, via a pidfd.
WaitResult waitForExit(pid_t pid, Clock::time_point deadline);

}  // namespace crashsim::harness::spawning
