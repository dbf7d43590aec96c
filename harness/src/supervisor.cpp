#include "crashsim/harness/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// Boost.Process 1.81 compiles its vfork executor only when the feature macros predate POSIX
// 2008, which glibc's never do, although vfork() is declared (_GNU_SOURCE). The macro only adds
// the vfork member definitions, which no other user of Boost.Process instantiates.
#ifndef BOOST_POSIX_HAS_VFORK
#define BOOST_POSIX_HAS_VFORK 1
#endif
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace crashsim::harness {
namespace bp = boost::process;
namespace {

constexpr int kControlFd = 3;
using Clock = std::chrono::steady_clock;

// Variables the harness owns: never inherited from the user's environment.
const char* const kOwnedVars[] = {"CRASHSIM_ARM",
                                  "CRASHSIM_CONTROL_FD",
                                  "CRASHSIM_HITS_OUT",
                                  "CRASHSIM_FAILPOINT_MODE",
                                  "CRASHSIM_STOP_COUNT",
                                  "CRASHSIM_ARM_AFTER_STOP",
                                  "CRASHSIM_FAULT_AFTER",
                                  "CRASHSIM_POWERLOSS",
                                  "CRASHSIM_POWERLOSS_SEED",
                                  "CRASHSIM_POWERLOSS_DEVICE",
                                  "CRASHSIM_POWERLOSS_LOG",
                                  "CRASHSIM_POWERLOSS_KIND",
                                  "CRASHSIM_POWERLOSS_SECTOR",
                                  "CRASHSIM_POWERLOSS_STRICT_DIRSYNC",
                                  "CRASHSIM_POWERLOSS_ACKED",
                                  "CRASHSIM_SYNCHRONOUS"};

struct Spawned {
  pid_t pid = -1;
  int controlRead = -1;
  std::string error;
};

Spawned spawn(const SpawnSpec& spec, bool withControl) {
  Spawned s;
  int fds[2] = {-1, -1};
  if (withControl && ::pipe2(fds, O_CLOEXEC) != 0) {
    s.error = std::string("pipe2: ") + std::strerror(errno);
    return s;
  }
  bp::environment env = boost::this_process::environment();
  for (const char* v : kOwnedVars)
    if (env.find(v) != env.end()) env.erase(v);
  for (const auto& [k, v] : spec.env) env[k] = v;
  if (withControl) env["CRASHSIM_CONTROL_FD"] = std::to_string(kControlFd);
  const int writeFd = fds[1];
  try {
    auto out = spec.stdoutFile.empty() ? std::filesystem::path("/dev/null") : spec.stdoutFile;
    auto err = spec.stderrFile.empty() ? std::filesystem::path("/dev/null") : spec.stderrFile;
    // Boost.Process opens the redirect targets without O_TRUNC: a reused file would keep the
    // tail of its previous, longer contents after the child's output.
    for (const auto& f : {spec.stdoutFile, spec.stderrFile})
      if (!f.empty()) std::ofstream(f, std::ios::trunc);
    auto launch = [&](auto&&... executor) {
      return bp::child(
          executor..., bp::exe = spec.exe.string(), bp::args = spec.args, env,
          bp::std_in<bp::null, bp::std_out> out.string(), bp::std_err > err.string(),
          bp::extend::on_exec_setup = [writeFd](auto&) {
            if (writeFd < 0) return;
            if (writeFd == kControlFd) {
              ::fcntl(kControlFd, F_SETFD, 0);  // keep it across exec
            } else {
              ::dup2(writeFd, kControlFd);  // the duplicate does not carry O_CLOEXEC
            }
          });
    };
#if defined(__SANITIZE_ADDRESS__)
    bp::child c = launch();  // AddressSanitizer's shadow memory and vfork do not mix: fork
#else
    // vfork: the child borrows the harness's address space until exec instead of copying its
    // page tables, which a fork of the multi-threaded harness paid on every spawn (a third of
    // the sweep's CPU per case). Only async-signal-safe calls run before exec (fcntl, dup2).
    bp::child c = launch(bp::posix::use_vfork);
#endif
    s.pid = c.id();
    c.detach();  // we reap with waitpid to read the native status
  } catch (const std::exception& e) {
    s.error = std::string("spawn ") + spec.exe.string() + ": " + e.what();
  }
  if (withControl) {
    ::close(fds[1]);
    if (s.pid < 0)
      ::close(fds[0]);
    else
      s.controlRead = fds[0];
  }
  return s;
}

void reap(pid_t pid, ChildResult& r) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      r.error = std::string("waitpid: ") + std::strerror(errno);
      return;
    }
  }
  if (WIFEXITED(status)) {
    r.exited = true;
    r.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.signal = WTERMSIG(status);
  }
}

int remainingMs(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

enum class WaitResult { exited, timed_out, no_pidfd };

// Waits (without reaping) until the child has exited or the deadline passes, via a pidfd.
WaitResult waitForExit(pid_t pid, Clock::time_point deadline) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return WaitResult::no_pidfd;
  WaitResult result = WaitResult::exited;
  for (;;) {
    pollfd p{pidfd, POLLIN, 0};
    const int n = ::poll(&p, 1, remainingMs(deadline));
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) result = WaitResult::timed_out;
    break;
  }
  ::close(pidfd);
  return result;
}

}  // namespace

std::string ChildResult::describe() const {
  if (!error.empty()) return error;
  if (timedOut) return "timed out";
  if (signaled) return fmt::format("killed by signal {}", signal);
  if (exited) return fmt::format("exited with code {}", exitCode);
  return "unknown status";
}

// Reads the next control line (without its newline) into `line`, keeping what follows in `buf`.
// Returns false at EOF or the deadline (`timedOut` says which).
bool readControlLine(int fd, std::string& buf, Clock::time_point deadline, std::string& line,
                     bool& timedOut) {
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return true;
    }
    pollfd p{fd, POLLIN, 0};
    int n = ::poll(&p, 1, remainingMs(deadline));
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
Spawned spawnArmed(SpawnSpec& spec, const std::string& failpoint, int hit, ChildResult& r) {
  spec.env["CRASHSIM_ARM"] = fmt::format("{}:{}", failpoint, hit);
  Spawned s = spawn(spec, true);
  if (s.pid < 0)
    r.error = s.error;
  else
    r.spawned = true;
  return s;
}
}  // namespace

ChildResult runArmed(SpawnSpec spec, const std::string& failpoint, int hit) {
  ChildResult r;
  auto start = Clock::now();
  Spawned s = spawnArmed(spec, failpoint, hit, r);
  if (!r.spawned) return r;
  auto deadline = start + spec.timeout;
  // Read until the first newline, EOF or the deadline.
  std::string buf;
  if (!readControlLine(s.controlRead, buf, deadline, r.controlLine, r.timedOut) && !r.timedOut)
    r.controlLine = buf;
  // A power-loss child ("powerloss":true) still materialises its crash state after the control
  // line and then raises SIGKILL itself: wait for that death (a hang past the deadline is one).
  if (!r.timedOut && r.controlLine.find("\"powerloss\":true") != std::string::npos)
    r.timedOut = waitForExit(s.pid, deadline) == WaitResult::timed_out;
  ::kill(s.pid, SIGKILL);
  ::close(s.controlRead);
  reap(s.pid, r);
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return r;
}

ChildResult runStopped(SpawnSpec spec, const std::string& failpoint, int hit,
                       const std::optional<std::string>& killAt) {
  ChildResult r;
  auto start = Clock::now();
  spec.env["CRASHSIM_FAILPOINT_MODE"] = "stop";
  spec.env["CRASHSIM_STOP_COUNT"] = "2";  // resume only after both Stops were taken
  if (killAt) spec.env["CRASHSIM_ARM_AFTER_STOP"] = *killAt + ":1";
  Spawned s = spawnArmed(spec, failpoint, hit, r);
  if (!r.spawned) return r;
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
      r.timedOut = waitForExit(s.pid, deadline) == WaitResult::timed_out;
    }
  } else if (!r.timedOut) {
    r.controlLine = buf;
  }
  if (r.timedOut) ::kill(s.pid, SIGKILL);
  ::close(s.controlRead);
  reap(s.pid, r);
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return r;
}

ChildResult runToEnd(SpawnSpec spec) {
  ChildResult r;
  auto start = Clock::now();
  Spawned s = spawn(spec, false);
  if (s.pid < 0) {
    r.error = s.error;
    return r;
  }
  r.spawned = true;
  auto deadline = start + spec.timeout;
  if (const WaitResult w = waitForExit(s.pid, deadline); w != WaitResult::no_pidfd) {
    r.timedOut = w == WaitResult::timed_out;
  } else {
    // No pidfd: poll the wait status.
    for (;;) {
      int status = 0;
      pid_t w = ::waitpid(s.pid, &status, WNOHANG);
      if (w == s.pid) {
        if (WIFEXITED(status)) r.exited = true, r.exitCode = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) r.signaled = true, r.signal = WTERMSIG(status);
        r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
        return r;
      }
      if (Clock::now() > deadline) {
        r.timedOut = true;
        break;
      }
      ::usleep(1000);
    }
  }
  if (r.timedOut) ::kill(s.pid, SIGKILL);
  reap(s.pid, r);
  r.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return r;
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
