// agent_process.h — the one way the runtime's failpoint tests start a real crashsim-agent.
//
// AgentProcess fork()s and exec()s the agent (no SQLite connection crosses the fork: the
// parent opens none before the call) with stdout and stderr sent to a log file and a control
// pipe on CRASHSIM_CONTROL_FD, so an armed failpoint reports itself there
// ({"failpoint":…,"hit":…}) and blocks until it is killed. CRASHSIM_ARM, CRASHSIM_FAILPOINT_MODE,
// the Stop-mode variables and CRASHSIM_PLANT are cleared first, then `env` is applied. Death is
// judged from the native wait status (WIFSIGNALED / WTERMSIG), never from an exit code. A process
// still running when the object goes away is SIGKILLed and reaped.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "../store_test_util.h"
#include "crashsim/build_paths.h"
#include "crashsim/json.h"

namespace crashsim::testutil {

struct AgentExit {
  bool exited = false, signaled = false;
  int exitCode = -1, signal = 0;
};

class AgentProcess {
 public:
  AgentProcess(const std::filesystem::path& agent, const std::vector<std::string>& args,
               const std::vector<std::pair<std::string, std::string>>& env,
               const std::filesystem::path& log, bool truncateLog = false) {
    int pipefd[2];
    if (::pipe(pipefd) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::close(pipefd[0]);
      const int fd =
          ::open(log.c_str(), O_WRONLY | O_CREAT | (truncateLog ? O_TRUNC : O_APPEND), 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      for (const char* v : {"CRASHSIM_ARM", "CRASHSIM_FAILPOINT_MODE", "CRASHSIM_STOP_COUNT",
                            "CRASHSIM_ARM_AFTER_STOP", "CRASHSIM_PLANT", "CRASHSIM_FAULT_AFTER"})
        ::unsetenv(v);
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      ::setenv("CRASHSIM_CONTROL_FD", std::to_string(pipefd[1]).c_str(), 1);
      std::string exe = agent.string();
      std::vector<std::string> copy = args;
      std::vector<char*> argv{exe.data()};
      for (auto& a : copy) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(pipefd[1]);
    control_ = pipefd[0];
  }
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;
  ~AgentProcess() {
    if (!reaped_) {
      kill();
      reap();
    }
    if (control_ >= 0) ::close(control_);
  }

  // The control line, or nullopt when the agent exits (EOF) or the time runs out first.
  std::optional<Json> waitForControlLine(std::chrono::seconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (line.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{control_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[256];
      const ssize_t n = ::read(control_, buf, sizeof buf);
      if (n <= 0) break;  // EOF: exited (or died) without a control line
      line.append(buf, static_cast<size_t>(n));
    }
    if (line.find('\n') == std::string::npos) return std::nullopt;
    return Json::parse(line.substr(0, line.find('\n')));
  }

  void kill() const { ::kill(pid_, SIGKILL); }
  void signal(int sig) const { ::kill(pid_, sig); }

  // Waits for the agent to end (once).
  AgentExit reap() {
    if (control_ >= 0) {
      ::close(control_);
      control_ = -1;
    }
    if (!reaped_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      reaped_ = true;
      exit_.exited = WIFEXITED(status);
      if (exit_.exited) exit_.exitCode = WEXITSTATUS(status);
      exit_.signaled = WIFSIGNALED(status);
      if (exit_.signaled) exit_.signal = WTERMSIG(status);
    }
    return exit_;
  }

 private:
  pid_t pid_ = -1;
  int control_ = -1;
  bool reaped_ = false;
  AgentExit exit_;
};

// A fresh directory with a workspace (ws/) and a store directory (store/) for one agent run,
// removed afterwards unless `keep` is set or the test failed (then it is kept for a look).
struct AgentSandbox {
  AgentSandbox() {
    std::random_device rd;
    base = std::filesystem::temp_directory_path() /
           ("crashsim-fp-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(ws());
    std::filesystem::create_directories(store());
  }
  AgentSandbox(const AgentSandbox&) = delete;
  AgentSandbox& operator=(const AgentSandbox&) = delete;
  ~AgentSandbox() {
    std::error_code ec;
    if (!keep && !::testing::Test::HasFailure()) std::filesystem::remove_all(base, ec);
  }
  std::filesystem::path store() const { return base / "store"; }
  std::filesystem::path ws() const { return base / "ws"; }
  std::filesystem::path base;
  bool keep = false;
};

// The agent binary and a whole-file read, shared by the crash tests (kScenarioDir is in
// store_test_util.h).
inline const std::filesystem::path kAgent =
    std::filesystem::path(CRASHSIM_BINARY_DIR) / "runtime" / "crashsim-agent";

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// One crashsim-agent command over a sandbox and a scenario file: `command` seed | run | recover
// (every command but seed gets --store), armed at `arm` ("P7:1", self-kill mode) when not empty,
// with CRASHSIM_PLANT=`plant` when not empty and `extraArgs` appended; its log in
// <base>/<logName>.log. `report` is the log's last JSON line after a normal exit.
struct AgentStep : AgentExit {
  Json report;
};

inline AgentStep runAgentStep(const AgentSandbox& box, const std::filesystem::path& scenario,
                              const std::string& command, const std::string& arm,
                              const std::string& logName,
                              const std::vector<std::string>& extraArgs = {},
                              const std::string& plant = {}) {
  const std::filesystem::path log = box.base / (logName + ".log");
  std::vector<std::pair<std::string, std::string>> env;
  if (!plant.empty()) env.emplace_back("CRASHSIM_PLANT", plant);
  if (!arm.empty()) {
    env.emplace_back("CRASHSIM_ARM", arm);
    env.emplace_back("CRASHSIM_FAILPOINT_MODE", "self");
  }
  std::vector<std::string> args{command};
  if (command != "seed") args.insert(args.end(), {"--store", box.store().string()});
  args.insert(args.end(), {"--workspace", box.ws().string(), "--scenario", scenario.string()});
  args.insert(args.end(), extraArgs.begin(), extraArgs.end());
  AgentProcess child(kAgent, args, env, log, /*truncateLog=*/true);
  if (!arm.empty()) child.waitForControlLine(std::chrono::seconds(60));
  AgentStep s;
  static_cast<AgentExit&>(s) = child.reap();
  std::istringstream out(readFile(log));
  std::string line, last;
  while (std::getline(out, line))
    if (!line.empty() && line.front() == '{') last = line;
  if (!last.empty() && s.exited) s.report = Json::parse(last);
  return s;
}

}  // namespace crashsim::testutil
