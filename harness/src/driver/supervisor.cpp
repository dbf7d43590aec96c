#include "crashsim/harness/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "driver/spawn.h"

// GCC 12 at -O3 reports a false -Wrestrict (a memcpy of 2^63 bytes) inside std::string's
// _M_replace once runStopped's map assignments of literals are inlined; this file does no raw
// memory copying of its own.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace crashsim::harness {

std::string ChildResult::describe() const {
  if (!error.empty()) return error;
  if (timedOut) return "timed out";
  if (signaled) return fmt::format("killed by signal {}", signal);
  if (exited) return fmt::format("exited with code {}", exitCode);
  return "unknown status";
}

// Reads the next control line (without its newline) into `line`, keeping what follows in `buf`.
// Returns false at EOF or the deadline (`timedOut` says which).
bool readControlLine(int fd, std::string& buf, spawning::Clock::time_point deadline,
                     std::string& line, bool& timedOut) {
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, spawning::remainingMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      timedOut = true;
      return false;
    }
    char chunk[512];
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // EOF: the child (and every holder of the fd) is gone
    buf.append(chunk, static_cast<size_t>(got));
  }
}

namespace {
// Spawns `spec` armed at (failpoint, hit) with a control pipe; a spawn failure is r.error.
spawning::Spawned spawnArmed(SpawnSpec& spec, const std::string& failpoint, int hit,
                             ChildResult& r) {
  spec.env["CRASHSIM_ARM"] = fmt::format("{}:{}", failpoint, hit);
  spawning::Spawned s = spawning::spawn(spec, true);
  if (s.pid < 0)
    r.error = s.error;
  else
    r.spawned = true;
  return s;
}

// Spawns `spec` without a control pipe, started at `start`: r.spawned and r.spawnTime, or r.error.
spawning::Spawned spawnUnarmed(const SpawnSpec& spec, spawning::Clock::time_point start,
                               ChildResult& r) {
  spawning::Spawned s = spawning::spawn(spec, false);
  if (s.pid < 0) {
    r.error = s.error;
    return s;
  }
  r.spawned = true;
  r.spawnTime = spawning::sinceUs(start);
  return s;
}
}  // namespace

ChildResult runArmed(SpawnSpec spec, const std::string& failpoint, int hit) {
  ChildResult r;
  auto start = spawning::Clock::now();
  spawning::Spawned s = spawnArmed(spec, failpoint, hit, r);
  if (!r.spawned) return r;
  r.spawnTime = spawning::sinceUs(start);
  auto deadline = start + spec.timeout;
  // Read until the first newline, EOF or the deadline.
  std::string buf;
  if (!readControlLine(s.controlRead, buf, deadline, r.controlLine, r.timedOut) && !r.timedOut)
    r.controlLine = buf;
  // A power-loss child ("powerloss":true) still materialises its crash state after the control
  // line and then raises SIGKILL itself: wait for that death (a hang past the deadline is one).
  if (!r.timedOut && r.controlLine.find("\"powerloss\":true") != std::string::npos)
    r.timedOut = spawning::waitForExit(s.pid, deadline) == spawning::WaitResult::timed_out;
  spawning::killAndReap(s, r, true, spec.watchDescendants);
  r.elapsed = spawning::sinceUs(start);
  return r;
}

ChildResult runStopped(SpawnSpec spec, const std::string& failpoint, int hit,
                       const std::optional<std::string>& killAt) {
  ChildResult r;
  auto start = spawning::Clock::now();
  spec.env["CRASHSIM_FAILPOINT_MODE"] = "stop";
  spec.env["CRASHSIM_STOP_COUNT"] = "2";  // resume only after both Stops were taken
  if (killAt) spec.env["CRASHSIM_ARM_AFTER_STOP"] = fmt::format("{}:1", *killAt);
  spawning::Spawned s = spawnArmed(spec, failpoint, hit, r);
  if (!r.spawned) return r;
  r.spawnTime = spawning::sinceUs(start);
  auto deadline = start + spec.timeout;
  std::string buf;
  if (readControlLine(s.controlRead, buf, deadline, r.controlLine, r.timedOut)) {
    // The Stop, twice: SIGINT, then SIGTERM (the second must be a no-op).
    ::kill(s.pid, SIGINT);
    ::kill(s.pid, SIGTERM);
    if (killAt) {
      // The stopping process reports the Stop-path failpoint and blocks there: kill it.
      if (!readControlLine(s.controlRead, buf, deadline, r.secondControlLine, r.timedOut) &&
          !r.timedOut)
        r.secondControlLine = buf;
      ::kill(s.pid, SIGKILL);
    } else {
      r.timedOut = spawning::waitForExit(s.pid, deadline) == spawning::WaitResult::timed_out;
    }
  } else if (!r.timedOut) {
    r.controlLine = buf;
  }
  spawning::killAndReap(s, r, r.timedOut);
  r.elapsed = spawning::sinceUs(start);
  return r;
}

ChildResult runStoppedWhileHeld(SpawnSpec spec, const std::filesystem::path& holdFile,
                                std::chrono::milliseconds lateBy) {
  ChildResult r;
  auto start = spawning::Clock::now();
  spec.env["CRASHSIM_TOOL_HOLD"] = holdFile.string();
  const spawning::Spawned s = spawnUnarmed(spec, start, r);
  if (s.pid < 0) return r;
  const auto deadline = start + spec.timeout;
  constexpr auto kPoll = std::chrono::milliseconds(2);
  bool exited = false;
  while (!exited && !(r.held = std::filesystem::exists(holdFile))) {
    if (spawning::Clock::now() >= deadline) {
      r.timedOut = true;
      break;
    }
    const spawning::WaitResult w =
        spawning::waitForExit(s.pid, std::min(deadline, spawning::Clock::now() + kPoll));
    if (w == spawning::WaitResult::no_pidfd)
      std::this_thread::sleep_for(kPoll);
    else
      exited = w == spawning::WaitResult::exited;
  }
  if (r.held) {
    std::this_thread::sleep_for(lateBy);  // the Stop comes late: the run is older than the grace
    r.stopSentAtMs = std::floor(std::chrono::duration<double, std::milli>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
    ::kill(s.pid, SIGINT);
    ::kill(s.pid, SIGTERM);
    r.timedOut = spawning::waitForExit(s.pid, deadline) == spawning::WaitResult::timed_out;
  }
  spawning::killAndReap(s, r, r.timedOut || (!r.held && !exited));
  r.elapsed = spawning::sinceUs(start);
  return r;
}

ChildResult runToEnd(SpawnSpec spec) {
  ChildResult r;
  auto start = spawning::Clock::now();
  const spawning::Spawned s = spawnUnarmed(spec, start, r);
  if (s.pid < 0) return r;
  auto deadline = start + spec.timeout;
  if (const spawning::WaitResult w = spawning::waitForExit(s.pid, deadline);
      w != spawning::WaitResult::no_pidfd) {
    r.timedOut = w == spawning::WaitResult::timed_out;
  } else if (s.server != nullptr) {
    r.error =
        "pidfd_open is not available: a fork-server child cannot be waited for with a "
        "deadline (use --spawn exec)";
    r.timedOut = true;
  } else {
    // No pidfd: poll the wait status.
    for (;;) {
      int status = 0;
      pid_t w = ::waitpid(s.pid, &status, WNOHANG);
      if (w == s.pid) {
        if (WIFEXITED(status)) r.exited = true, r.exitCode = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) r.signaled = true, r.signal = WTERMSIG(status);
        r.elapsed = spawning::sinceUs(start);
        return r;
      }
      if (spawning::Clock::now() > deadline) {
        r.timedOut = true;
        break;
      }
      ::usleep(1000);
    }
  }
  spawning::killAndReap(s, r, r.timedOut);
  r.elapsed = spawning::sinceUs(start);
  return r;
}

RaceResult runRace(std::vector<SpawnSpec> specs, const std::filesystem::path& fifo) {
  RaceResult race;
  const auto start = spawning::Clock::now();
  race.children.resize(specs.size());
  race.atBarrier.assign(specs.size(), false);
  std::error_code ec;
  std::filesystem::remove(fifo, ec);
  if (::mkfifo(fifo.c_str(), 0600) != 0) {
    const std::string why = fmt::format("mkfifo {}: {}", fifo.string(), std::strerror(errno));
    for (auto& r : race.children) r.error = why;
    race.wall.error = why;
    return race;
  }
  std::vector<spawning::Spawned> spawned(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto t = spawning::Clock::now();
    specs[i].env["CRASHSIM_RACE_BARRIER"] = fifo.string();
    spawned[i] = spawning::spawn(specs[i], true);
    ChildResult& r = race.children[i];
    r.spawnTime = spawning::sinceUs(t);
    if (spawned[i].pid < 0)
      r.error = spawned[i].error;
    else
      r.spawned = true;
  }
  // Every racer at the barrier (or gone, or silent until its timeout), then one release.
  std::vector<std::string> bufs(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!race.children[i].spawned) continue;
    std::string line;
    bool timedOut = false;
    if (readControlLine(spawned[i].controlRead, bufs[i], start + specs[i].timeout, line, timedOut))
      race.atBarrier[i] = line.find("\"barrier\":\"race\"") != std::string::npos;
    race.children[i].controlLine = line;
  }
  const auto released = spawning::Clock::now();
  const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (w >= 0) {
    const char go = 'g';
    while (::write(w, &go, 1) < 0 && errno == EINTR) {
    }
    ::close(w);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    ChildResult& r = race.children[i];
    if (!r.spawned) continue;
    const spawning::WaitResult wr =
        spawning::waitForExit(spawned[i].pid, released + specs[i].timeout);
    r.timedOut = wr == spawning::WaitResult::timed_out;
    spawning::killAndReap(spawned[i], r, r.timedOut);
    r.elapsed = spawning::sinceUs(start);
    race.wall.spawnTime += r.spawnTime;
    race.wall.killReapTime += r.killReapTime;
  }
  std::filesystem::remove(fifo, ec);
  race.wall.spawned = true;
  race.wall.exited = true;
  race.wall.exitCode = 0;
  race.wall.elapsed = spawning::sinceUs(start);
  return race;
}

std::filesystem::path locateAgent() {
  if (const char* env = std::getenv("CRASHSIM_AGENT"); env && *env) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto dir = self.parent_path();
    for (auto candidate : {dir.parent_path() / "runtime" / "crashsim-agent", dir / "crashsim-agent",
                           dir.parent_path().parent_path() / "runtime" / "crashsim-agent"}) {
      if (std::filesystem::exists(candidate)) return candidate;
    }
  }
  return {};
}

std::filesystem::path locateCrashsim() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && (self.filename() == "crashsim" || self.filename() == "crashsim-planted")) return self;
  auto agent = locateAgent();
  if (agent.empty()) return {};
  auto candidate = agent.parent_path().parent_path() / "harness" / "crashsim";
  return std::filesystem::exists(candidate) ? candidate : std::filesystem::path();
}

}  // namespace crashsim::harness
