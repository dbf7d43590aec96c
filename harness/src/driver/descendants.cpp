// The processes a child left running (driver/descendants.h).
#include "driver/descendants.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace crashsim::harness::spawning {

namespace {

namespace fs = std::filesystem;

// Fields of /proc/<pid>/stat after the command name: state (field 3), flags (field 9) and start
// time (field 22).
struct Stat {
  char state = 0;
  unsigned long flags = 0;
  uint64_t startTime = 0;
};

std::optional<Stat> statOf(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto close = line.rfind(')');  // the name may hold spaces and parentheses
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  Stat s;
  rest >> s.state;
  std::string skip;
  for (int field = 4; field < 9 && rest >> skip; ++field) {
  }
  rest >> s.flags;
  for (int field = 10; field < 22 && rest >> skip; ++field) {
  }
  if (!(rest >> s.startTime)) return std::nullopt;
  return s;
}

// Whether SIGKILL is pending for the process (/proc/<pid>/status SigPnd or ShdPnd, hexadecimal
// masks, bit 8 = signal 9).
bool killPending(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("SigPnd:") && !line.starts_with("ShdPnd:")) continue;
    const unsigned long long mask = std::strtoull(line.c_str() + 7, nullptr, 16);
    if (mask & (1ull << (SIGKILL - 1))) return true;
  }
  return false;
}

std::string commOf(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/comm", pid));
  std::string name;
  std::getline(in, name);
  return name;
}

std::vector<pid_t> childrenOf(pid_t pid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream in(task.path() / "children");
    pid_t child;
    while (in >> child) out.push_back(child);
  }
  return out;
}

constexpr unsigned long kExiting = 0x4;  // PF_EXITING: the process is in its exit

bool gone(const ProcessIdentity& p) {
  const auto s = statOf(p.pid);
  return !s || s->startTime != p.startTime || s->state == 'Z' || s->state == 'X';
}

// Gone, exiting or with a SIGKILL pending (what PR_SET_PDEATHSIG sends as the parent exits,
// before its reaping can return): it runs no more of its own code.
bool dying(const ProcessIdentity& p) {
  const auto s = statOf(p.pid);
  if (!s || s->startTime != p.startTime || s->state == 'Z' || s->state == 'X') return true;
  return (s->flags & kExiting) != 0 || killPending(p.pid);
}

}  // namespace

std::vector<ProcessIdentity> descendantsOf(pid_t root) {
  std::vector<ProcessIdentity> out;
  std::vector<pid_t> todo = childrenOf(root);
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    const auto s = statOf(pid);
    if (!s) continue;
    out.push_back({pid, s->startTime, commOf(pid)});
    for (pid_t c : childrenOf(pid)) todo.push_back(c);
  }
  return out;
}

std::vector<std::string> reapSurvivors(const std::vector<ProcessIdentity>& procs,
                                       std::chrono::milliseconds patience) {
  std::vector<std::string> out;
  if (procs.empty()) return out;
  // At the parent's reaping each descendant is already dying, or it outlived the parent: it
  // would run to its end (a git command finishing its write after the crash) unless killed.
  std::vector<const ProcessIdentity*> waiting;
  auto survived = [&out](const ProcessIdentity& p, const char* how) {
    const pid_t group = ::getpgid(p.pid);
    if (group > 1 && group != ::getpgrp()) ::kill(-group, SIGKILL);
    ::kill(p.pid, SIGKILL);
    out.push_back(fmt::format("pid {} ({}) {}", p.pid, p.comm, how));
  };
  for (const auto& p : procs) {
    if (dying(p))
      waiting.push_back(&p);
    else
      survived(p, "ran on, neither exiting nor signalled, after its parent was killed and reaped");
  }
  const auto deadline = std::chrono::steady_clock::now() + patience;
  for (const ProcessIdentity* p : waiting) {
    while (!gone(*p) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (!gone(*p))
      survived(*p,
               fmt::format("was still there {} ms after its parent was reaped", patience.count())
                   .c_str());
  }
  return out;
}

}  // namespace crashsim::harness::spawning
