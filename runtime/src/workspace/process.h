// process.h — run a child process with a bounded time, capturing stdout/stderr (Boost.Process).
// Internal to the runtime (workspace git hygiene, the Bash tool).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace crashsim::detail {

struct ProcessResult {
  bool started = false;   // false: the executable could not be found or spawned
  bool timedOut = false;  // killed after the time bound
  int exitCode = -1;      // valid when started && !timedOut
  std::string out, err;
  std::string spawnError;  // reason when !started
};

// Runs `executable args...` in `cwd` with stdin closed. `executable` without a '/' is searched
// on PATH. Output beyond maxOutputBytes per stream is truncated.
ProcessResult runProcess(const std::string& executable, const std::vector<std::string>& args,
                         const std::filesystem::path& cwd, std::chrono::milliseconds timeout,
                         size_t maxOutputBytes = 1u << 20);

}  // namespace crashsim::detail
