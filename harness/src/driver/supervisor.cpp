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

// GCC 12 at -O3 reports a false -Wrestrict (a memcpy of 2^63 bytes) inside std::string's
// _M_replace once runStopped's map assignments of literals are inlined; this file does no raw
// memory copying of its own.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace crashsim::harness {
namespace {

constexpr int kControlFd = 3;
using Clock = std::chrono::steady_clock;
int remainingMs(Clock::time_point deadline);
enum class WaitResult { exited, timed_out, no_pidfd };
WaitResult waitForExit(pid_t pid, Clock::time_point deadline);
// How long a fork server may take to answer one request, or to exit once its socket is closed:
// every answer is immediate (fork, or reaping a child that is already dead or SIGKILLed), so
// running out of it means the server is stuck, which fails that spawn rather than the sweep.
constexpr std::chrono::seconds kServerPatience{60};

// Variables the harness owns: never inherited from the user's environment.
const char* const kOwnedVars[] = {"CRASHSIM_ARM",
                                  "CRASHSIM_CONTROL_FD",
                                  "CRASHSIM_HITS_OUT",
                                  "CRASHSIM_FS_TRACE",
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
                                  "CRASHSIM_SYNCHRONOUS",
                                  "CRASHSIM_TOOL_HOLD",
                                  "CRASHSIM_CLOCK_START_MS",
                                  "CRASHSIM_RACE_BARRIER"};

class ForkServer;

struct Spawned {
  pid_t pid = -1;
  int controlRead = -1;
  ForkServer* server = nullptr;  // the child's parent when it came from a fork server
  std::string error;
};

// The child's environment: the harness's own minus the variables it owns, plus spec.env.
std::vector<std::string> childEnvironment(const SpawnSpec& spec, bool withControl) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const char* v : kOwnedVars) env.erase(v);
  for (const auto& [k, v] : spec.env) env[k] = v;
  if (withControl) env["CRASHSIM_CONTROL_FD"] = std::to_string(kControlFd);
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(fmt::format("{}={}", k, v));
  return out;
}

// Starts `spec` with posix_spawn; `fd3` (if not -1) becomes the child's fd 3. The child gets
// fds 0–3 and nothing else: a descriptor another harness thread opened without O_CLOEXEC, or
// was still marking close-on-exec, when this spawn happened must not live on in the child (a
// long-lived fork server holding a pipe's write end would keep its reader waiting for EOF
// forever). posix_spawn reports a failed exec as its result, so there is no error pipe either.
Spawned spawnExec(const SpawnSpec& spec, const std::vector<std::string>& envList, int fd3) {
  Spawned s;
  std::vector<std::string> argvList{spec.exe.string()};
  argvList.insert(argvList.end(), spec.args.begin(), spec.args.end());
  std::vector<char*> argv, envp;
  for (const auto& a : argvList) argv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& kv : envList) envp.push_back(const_cast<char*>(kv.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const std::string out = spec.stdoutFile.empty() ? "/dev/null" : spec.stdoutFile.string();
  const std::string err = spec.stderrFile.empty() ? "/dev/null" : spec.stderrFile.string();
  // dup2 onto itself would keep fd 3's close-on-exec flag: place a copy above 3 instead.
  const int lifted = fd3 == kControlFd ? ::fcntl(fd3, F_DUPFD_CLOEXEC, kControlFd + 1) : fd3;
  const int liftError = errno;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int rc = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0)
    rc = posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                          0644);
  if (rc == 0)
    rc = posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                          0644);
  if (rc == 0 && fd3 >= 0)
    rc = lifted < 0 ? liftError : posix_spawn_file_actions_adddup2(&actions, lifted, kControlFd);
  const int keep = fd3 >= 0 ? kControlFd + 1 : kControlFd;
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, keep);
  pid_t pid = -1;
  if (rc == 0) rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (lifted >= 0 && lifted != fd3) ::close(lifted);
  if (rc != 0)
    s.error = fmt::format("spawn {}: {}", spec.exe.string(), std::strerror(rc));
  else
    s.pid = pid;
  return s;
}

// This worker thread's `<exe> serve` for one exe (supervisor.h, crashsim/fork_server.h):
// started on first use, restarted after it died.
class ForkServer {
 public:
  ForkServer() = default;
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;
  ~ForkServer() { stop(); }

  // Asks the server for a child running `spec` (argv[0] is the exe, as exec gives it). An exe
  // that is no fork server of its own (a wrapper script around the agent, another runtime's
  // binary) is exec'd instead, every time: a forked child would skip what the wrapper does.
  Spawned spawn(const SpawnSpec& spec, const std::vector<std::string>& env, int controlWrite) {
    Spawned s;
    if (!start(spec.exe, s.error)) return s;
    if (execOnly_) return spawnExec(spec, env, controlWrite);
    std::string msg("S", 2);
    for (const auto& a : argvOf(spec)) msg.append(a).push_back('\0');
    msg.push_back('\0');
    for (const auto& kv : env) msg.append(kv).push_back('\0');
    std::vector<int> fds;
    for (const auto& f : {spec.stdoutFile, spec.stderrFile}) {
      const std::string path = f.empty() ? std::string("/dev/null") : f.string();
      fds.push_back(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
      if (fds.back() < 0) s.error = fmt::format("open {}: {}", path, std::strerror(errno));
    }
    if (controlWrite >= 0) fds.push_back(controlWrite);
    std::string answer;
    if (s.error.empty()) answer = request(msg, fds, s.error);
    for (size_t i = 0; i < 2; ++i)
      if (fds[i] >= 0) ::close(fds[i]);
    if (!s.error.empty()) return s;
    if (answer.rfind("pid ", 0) == 0)
      s.pid = static_cast<pid_t>(std::atoi(answer.c_str() + 4)), s.server = this;
    else
      s.error = fmt::format("fork server: {}", answer);
    return s;
  }

  // Reaps a child this server forked: its native wait status, or false with `error`.
  bool reap(pid_t pid, int& status, std::string& error) {
    const std::string answer = request(fmt::format("W{}", pid), {}, error);
    if (!error.empty()) return false;
    if (answer.rfind("status ", 0) != 0) {
      error = fmt::format("fork server: {}", answer);
      return false;
    }
    status = std::atoi(answer.c_str() + 7);
    return true;
  }

 private:
  static std::vector<std::string> argvOf(const SpawnSpec& spec) {
    std::vector<std::string> a{spec.exe.string()};
    a.insert(a.end(), spec.args.begin(), spec.args.end());
    return a;
  }

  bool start(const std::filesystem::path& exe, std::string& error) {
    if (sock_ >= 0 || execOnly_) return true;
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      error = std::string("socketpair: ") + std::strerror(errno);
      return false;
    }
    SpawnSpec serve;
    serve.exe = exe;
    serve.args = {"serve"};
    Spawned s = spawnExec(serve, childEnvironment(serve, false), sv[1]);
    ::close(sv[1]);
    if (s.pid < 0) {
      ::close(sv[0]);
      error = s.error;
      return false;
    }
    pid_ = s.pid, sock_ = sv[0], exe_ = exe;
    // The server says "ready" once warmed up; it must be the exe itself (not a program a wrapper
    // exec'd), or its children would not be what exec'ing the exe gives.
    std::string answer = request("", {}, error);
    std::error_code ec;
    const auto self = std::filesystem::read_symlink(fmt::format("/proc/{}/exe", pid_), ec);
    if (answer != "ready" || ec || self != std::filesystem::canonical(exe, ec)) {
      error.clear();
      stop();
      execOnly_ = true;
    }
    return true;
  }

  // Closes the socket, at which the server exits; one that is stuck (`stuck`, or still there
  // after kServerPatience) is SIGKILLed. Then reaps it.
  void stop(bool stuck = false) {
    if (sock_ < 0) return;
    ::close(sock_);
    sock_ = -1;
    if (stuck || waitForExit(pid_, Clock::now() + kServerPatience) != WaitResult::exited)
      ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }

  // One request (none when `msg` is empty) and its answer; a dead server, or one silent for
  // kServerPatience, is an error (and is restarted).
  std::string request(const std::string& msg, const std::vector<int>& fds, std::string& error) {
    iovec io{const_cast<char*>(msg.data()), msg.size()};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 3)];
    if (!fds.empty()) {
      m.msg_control = control;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = 0;
    if (!msg.empty())
      while ((n = ::sendmsg(sock_, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
      }
    char answer[512];
    bool silent = false;
    if (n >= 0) {
      const auto deadline = Clock::now() + kServerPatience;
      pollfd p{sock_, POLLIN, 0};
      while ((n = ::poll(&p, 1, remainingMs(deadline))) < 0 && errno == EINTR) {
      }
      silent = n == 0;
    }
    if (n >= 0 && !silent)
      while ((n = ::recv(sock_, answer, sizeof answer - 1, 0)) < 0 && errno == EINTR) {
      }
    if (n <= 0) {
      error = fmt::format("fork server {} ({}): {}", exe_.string(), pid_,
                          silent   ? "no answer"
                          : n == 0 ? "it exited"
                                   : std::strerror(errno));
      stop(silent);
      return "";
    }
    return std::string(answer, static_cast<size_t>(n));
  }

  std::filesystem::path exe_;
  pid_t pid_ = -1;
  int sock_ = -1;
  bool execOnly_ = false;  // the exe is no fork server of its own
};

std::atomic<SpawnMethod> gSpawnMethod{SpawnMethod::fork_server};

Spawned spawn(const SpawnSpec& spec, bool withControl) {
  Spawned s;
  int fds[2] = {-1, -1};
  if (withControl && ::pipe2(fds, O_CLOEXEC) != 0) {
    s.error = std::string("pipe2: ") + std::strerror(errno);
    return s;
  }
  const auto env = childEnvironment(spec, withControl);
  if (spec.forkServer && gSpawnMethod.load() == SpawnMethod::fork_server) {
    thread_local std::map<std::filesystem::path, ForkServer> servers;
    s = servers[spec.exe].spawn(spec, env, fds[1]);
  } else {
    s = spawnExec(spec, env, fds[1]);
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

void reap(const Spawned& s, ChildResult& r) {
  int status = 0;
  if (s.server != nullptr) {
    if (!s.server->reap(s.pid, status, r.error)) return;
  } else {
    while (::waitpid(s.pid, &status, 0) < 0) {
      if (errno != EINTR) {
        r.error = std::string("waitpid: ") + std::strerror(errno);
        return;
      }
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

std::chrono::microseconds sinceUs(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t);
}

// SIGKILLs (when `kill`) and reaps the child, timing both (ChildResult::killReapTime).
void killAndReap(const Spawned& s, ChildResult& r, bool kill) {
  const auto t = Clock::now();
  if (kill) ::kill(s.pid, SIGKILL);
  if (s.controlRead >= 0) ::close(s.controlRead);
  reap(s, r);
  r.killReapTime = sinceUs(t);
}

int remainingMs(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

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

void setSpawnMethod(SpawnMethod m) { gSpawnMethod.store(m); }
SpawnMethod spawnMethod() { return gSpawnMethod.load(); }

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
  r.spawnTime = sinceUs(start);
  auto deadline = start + spec.timeout;
  // Read until the first newline, EOF or the deadline.
  std::string buf;
  if (!readControlLine(s.controlRead, buf, deadline, r.controlLine, r.timedOut) && !r.timedOut)
    r.controlLine = buf;
  // A power-loss child ("powerloss":true) still materialises its crash state after the control
  // line and then raises SIGKILL itself: wait for that death (a hang past the deadline is one).
  if (!r.timedOut && r.controlLine.find("\"powerloss\":true") != std::string::npos)
    r.timedOut = waitForExit(s.pid, deadline) == WaitResult::timed_out;
  killAndReap(s, r, true);
  r.elapsed = sinceUs(start);
  return r;
}

ChildResult runStopped(SpawnSpec spec, const std::string& failpoint, int hit,
                       const std::optional<std::string>& killAt) {
  ChildResult r;
  auto start = Clock::now();
  spec.env["CRASHSIM_FAILPOINT_MODE"] = "stop";
  spec.env["CRASHSIM_STOP_COUNT"] = "2";  // resume only after both Stops were taken
  if (killAt) spec.env["CRASHSIM_ARM_AFTER_STOP"] = fmt::format("{}:1", *killAt);
  Spawned s = spawnArmed(spec, failpoint, hit, r);
  if (!r.spawned) return r;
  r.spawnTime = sinceUs(start);
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
  killAndReap(s, r, r.timedOut);
  r.elapsed = sinceUs(start);
  return r;
}

ChildResult runStoppedWhileHeld(SpawnSpec spec, const std::filesystem::path& holdFile,
                                std::chrono::milliseconds lateBy) {
  ChildResult r;
  auto start = Clock::now();
  spec.env["CRASHSIM_TOOL_HOLD"] = holdFile.string();
  Spawned s = spawn(spec, false);
  if (s.pid < 0) {
    r.error = s.error;
    return r;
  }
  r.spawned = true;
  r.spawnTime = sinceUs(start);
  const auto deadline = start + spec.timeout;
  constexpr auto kPoll = std::chrono::milliseconds(2);
  bool exited = false;
  while (!exited && !(r.held = std::filesystem::exists(holdFile))) {
    if (Clock::now() >= deadline) {
      r.timedOut = true;
      break;
    }
    const WaitResult w = waitForExit(s.pid, std::min(deadline, Clock::now() + kPoll));
    if (w == WaitResult::no_pidfd)
      std::this_thread::sleep_for(kPoll);
    else
      exited = w == WaitResult::exited;
  }
  if (r.held) {
    std::this_thread::sleep_for(lateBy);  // the Stop comes late: the run is older than the grace
    r.stopSentAtMs = std::floor(std::chrono::duration<double, std::milli>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
    ::kill(s.pid, SIGINT);
    ::kill(s.pid, SIGTERM);
    r.timedOut = waitForExit(s.pid, deadline) == WaitResult::timed_out;
  }
  killAndReap(s, r, r.timedOut || (!r.held && !exited));
  r.elapsed = sinceUs(start);
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
  r.spawnTime = sinceUs(start);
  auto deadline = start + spec.timeout;
  if (const WaitResult w = waitForExit(s.pid, deadline); w != WaitResult::no_pidfd) {
    r.timedOut = w == WaitResult::timed_out;
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
        r.elapsed = sinceUs(start);
        return r;
      }
      if (Clock::now() > deadline) {
        r.timedOut = true;
        break;
      }
      ::usleep(1000);
    }
  }
  killAndReap(s, r, r.timedOut);
  r.elapsed = sinceUs(start);
  return r;
}

RaceResult runRace(std::vector<SpawnSpec> specs, const std::filesystem::path& fifo) {
  RaceResult race;
  const auto start = Clock::now();
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
  std::vector<Spawned> spawned(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto t = Clock::now();
    specs[i].env["CRASHSIM_RACE_BARRIER"] = fifo.string();
    spawned[i] = spawn(specs[i], true);
    ChildResult& r = race.children[i];
    r.spawnTime = sinceUs(t);
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
  const auto released = Clock::now();
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
    const WaitResult wr = waitForExit(spawned[i].pid, released + specs[i].timeout);
    r.timedOut = wr == WaitResult::timed_out;
    killAndReap(spawned[i], r, r.timedOut);
    r.elapsed = sinceUs(start);
    race.wall.spawnTime += r.spawnTime;
    race.wall.killReapTime += r.killReapTime;
  }
  std::filesystem::remove(fifo, ec);
  race.wall.spawned = true;
  race.wall.exited = true;
  race.wall.exitCode = 0;
  race.wall.elapsed = sinceUs(start);
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
