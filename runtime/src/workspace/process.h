// process.h — run a child process with a bounded time, capturing stdout/stderr (Boost.Process).
// Internal to the runtime (workspace git hygiene, the Bash tool).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace crashsim::detail {

struct ProcessResult {
  bool started = false;    // false: the executable could not be found or spawned
  bool timedOut = false;   // killed after the time bound
  bool cancelled = false;  // ended by a cancellation (SIGTERM to its group, SIGKILL after grace)
  int exitCode = -1;       // valid when started && !timedOut
  std::string out, err;
  std::string spawnError;  // reason when !started
};

// Cooperative cancellation of a running process (the Bash tool's Stop path).
struct ProcessCancel {
  std::function<bool()> requested;            // polled every few ms while the child runs
  std::chrono::milliseconds killGrace{2000};  // SIGTERM to the group, then SIGKILL after this
  std::atomic<int>* activeGroup = nullptr;    // set to the child's process group while it runs
};

// Runs `executable args...` in `cwd` with stdin closed, in its own process group. `executable`
// without a '/' is searched on PATH. Output beyond maxOutputBytes per stream is truncated. The
// time bound kills the whole group (timedOut); a cancellation requested first sends the group
// SIGTERM and, if it has not closed its output after killGrace, SIGKILL (cancelled). Whichever
// of the two comes first decides the result.
ProcessResult runProcess(const std::string& executable, const std::vector<std::string>& args,
                         const std::filesystem::path& cwd, std::chrono::milliseconds timeout,
                         size_t maxOutputBytes = 1u << 20, const ProcessCancel* cancel = nullptr);

// runProcess with the environment and stdin under the caller's control (the hermetic git of
// workspace-continuity-contract.md c.2).
struct ProcessSpec {
  std::string executable;
  std::vector<std::string> args;
  std::filesystem::path cwd;
  std::chrono::milliseconds timeout{30000};
  size_t maxOutputBytes = 1u << 20;
  const ProcessCancel* cancel = nullptr;
  // The child's whole environment (nothing inherited) when set; the parent's otherwise.
  std::optional<std::map<std::string, std::string>> env;
  // Written to the child's stdin, then closed; stdin is closed at once when empty.
  std::string stdinData;
  // Linux: PR_SET_PDEATHSIG(SIGKILL) between fork and exec, and exit at once when the parent is
  // already gone: the child never outlives a killed parent (contract i.3 H5).
  bool dieWithParent = false;
  // Called in the parent once the child has started, before its output is read (the
  // instrumented build's git barrier G, crashsim/failpoints.h, where a kill lands while the child
  // works).
  std::function<void()> afterSpawn;
};
ProcessResult runProcess(const ProcessSpec& spec);

}  // namespace crashsim::detail
