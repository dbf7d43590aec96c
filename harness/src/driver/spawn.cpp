// Starting, waiting for and reaping the children of the harness (driver/spawn.h): posix_spawn
// or a fork server per worker thread, the child's environment and fds, pidfd waits.
#include "driver/spawn.h"

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

#include "driver/descendants.h"

namespace crashsim::harness::spawning {
namespace {

constexpr int kControlFd = 3;
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

}  // namespace

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
  recordStatus(status, r);
}

void recordStatus(int status, ChildResult& r) {
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

// SIGKILLs (when `kill`) and reaps the child, timing both (ChildResult::killReapTime), and the
// descendants it had running when it was killed that outlived it (driver/descendants.h).
void killAndReap(const Spawned& s, ChildResult& r, bool kill, bool watchDescendants) {
  const auto t = Clock::now();
  std::vector<ProcessIdentity> left;
  if (kill) {
    if (watchDescendants) left = descendantsOf(s.pid);  // what the child has running as it dies
    ::kill(s.pid, SIGKILL);
  }
  if (s.controlRead >= 0) ::close(s.controlRead);
  reap(s, r);
  r.survivors = reapSurvivors(left, std::chrono::milliseconds(2000));
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

void setSpawnMethodImpl(SpawnMethod m) { gSpawnMethod.store(m); }
SpawnMethod spawnMethodImpl() { return gSpawnMethod.load(); }

}  // namespace crashsim::harness::spawning

namespace crashsim::harness {
void setSpawnMethod(SpawnMethod m) { spawning::setSpawnMethodImpl(m); }
SpawnMethod spawnMethod() { return spawning::spawnMethodImpl(); }
}  // namespace crashsim::harness
