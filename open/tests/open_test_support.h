// Helpers the open room's test files share: spawning real processes with pipes in their own
// process group, reading with a deadline, scratch directories, the real Python interpreter.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "crashsim/build_paths.h"

extern char** environ;

namespace open_test {

namespace fs = std::filesystem;

inline fs::path binaryDir() { return fs::path(CRASHSIM_BINARY_DIR) / "open"; }
inline fs::path sourceDir() { return fs::path(CRASHSIM_SOURCE_DIR); }
inline fs::path scenarioFile(const std::string& id) {
  return sourceDir() / "scenarios" / (id + ".json");
}
inline fs::path interposerLibrary() {
  return binaryDir() / "interposer" / "libcrashsim_barrier_interposer.so";
}

inline std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// A fresh directory under the temp dir, removed by the destructor.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "crashsim-open-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A child in its own process group. stdin/stdout are pipes to us when asked; extraFd is
// inherited as is (the control fd). ASan's link-order check is off in the child's environment:
// a child that preloads the (uninstrumented) interposer must still be able to start.
struct Child {
  pid_t pid = -1;
  int in = -1, out = -1;
  std::optional<int> status;

  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
        bool pipes, const fs::path& cwd = {}) {
    int inPipe[2] = {-1, -1}, outPipe[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (pipes) {
      if (::pipe2(inPipe, O_CLOEXEC) != 0 || ::pipe2(outPipe, O_CLOEXEC) != 0)
        throw std::runtime_error("pipe");
      posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0);
      posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1);
    }
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    std::map<std::string, std::string> merged;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv(*e);
      merged[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
    merged["ASAN_OPTIONS"] = "verify_asan_link_order=0:detect_leaks=0";
    for (const auto& [k, v] : env) merged[k] = v;
    std::vector<std::string> envText;
    for (const auto& [k, v] : merged) envText.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : envText) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argvCopy = argv;
    for (auto& s : argvCopy) args.push_back(s.data());
    args.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("cannot spawn " + argv[0]);
    if (pipes) {
      ::close(inPipe[0]);
      ::close(outPipe[1]);
      in = inPipe[1];
      out = outPipe[0];
    }
  }
  ~Child() {
    if (!status) killGroup();
    closeIn();
    if (out >= 0) ::close(out);
  }
  void closeIn() {
    if (in >= 0) ::close(in);
    in = -1;
  }
  void write(const std::string& text) const {
    if (::write(in, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
      throw std::runtime_error("short write to the child");
  }
  // SIGKILL to the child's whole process group, then reap the child.
  void killGroup() {
    ::kill(-pid, SIGKILL);
    wait();
  }
  int wait() {
    if (!status) {
      int s = 0;
      ::waitpid(pid, &s, 0);
      status = s;
    }
    return *status;
  }
  bool running() {
    if (status) return false;
    int s = 0;
    if (::waitpid(pid, &s, WNOHANG) == pid) {
      status = s;
      return false;
    }
    return true;
  }
  // Waits for exit at most `limit`; SIGKILLs the group and fails the wait when it is exceeded.
  std::optional<int> waitFor(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (running()) {
      if (std::chrono::steady_clock::now() > end) {
        killGroup();
        return std::nullopt;
      }
      ::usleep(10000);
    }
    return status;
  }
};

// One line from `fd` within `limit` (without the newline); nullopt on timeout or end of file.
inline std::optional<std::string> readLine(int fd, std::chrono::milliseconds limit) {
  std::string line;
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char c = 0;
    if (::read(fd, &c, 1) != 1) return std::nullopt;
    if (c == '\n') return line;
    line += c;
  }
}

// The real Python 3 interpreter (not a shim script: a preloaded library would count every
// process of a shim too). Empty when there is none.
inline std::string python() {
  static const std::string path = [] {
    FILE* p = ::popen("python3 -c 'import sys; print(sys.executable)' 2>/dev/null", "r");
    if (p == nullptr) return std::string();
    char buf[4096] = {0};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, p);
    ::pclose(p);
    std::string s(buf, n);
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
  }();
  return path;
}

}  // namespace open_test
