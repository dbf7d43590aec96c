// The child-side failpoint trigger (instrumented build only).
//
// Fault model: the harness arms exactly one (failpoint, hit) per child through the
// environment. Every CRASHSIM_FAILPOINT(id) counts a hit; on the armed hit the child writes one
// JSON line {"failpoint":"P4","hit":1,"pid":N} to the control fd, and then blocks in pause()
// until the parent SIGKILLs it (or raises SIGKILL itself in "self" mode). With
// CRASHSIM_POWERLOSS=1 and a registered crash hook the line carries "powerloss":true and the
// hook then materialises the simulated power-loss crash state and raises SIGKILL itself. Nothing
// after the armed hit runs: no destructor, no atexit handler, no normal-exit marker.
//
// Stop mode (CRASHSIM_FAILPOINT_MODE=stop) is the exception: after the control line the trigger
// waits until the process accepted CRASHSIM_STOP_COUNT Stop requests (default 1;
// noteStopAccepted(), called by the agent's signal thread once its cancellation token is
// cancelled) and returns, so the run continues from that
// exact boundary with the token cancelled. A second arming (CRASHSIM_ARM_AFTER_STOP) then kills
// the stopping process at a Stop-path failpoint (double faults).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "crashsim/failpoints.h"

namespace crashsim::failpoints {
namespace {

// Marker text that identifies trigger code in a binary (the production check looks for it).
constexpr const char* kTriggerTag = "crashsim failpoint trigger";

struct TriggerState {
  std::mutex mutex;
  bool initialised = false;
  std::optional<Arming> arming;
  std::optional<Arming> afterStop;  // stop mode: the second arming (blocks like block mode)
  int controlFd = 2;
  bool selfKill = false;
  bool stopMode = false;
  int stopsToWait = 1;               // CRASHSIM_STOP_COUNT: Stop requests to accept before resuming
  std::optional<Arming> faultAfter;  // CRASHSIM_FAULT_AFTER: id, and (as hit) the fault count
  bool powerloss = false;
  std::string hitsOut;
  bool hitsWritten = false;
  bool atexitRegistered = false;
};

TriggerState& state() {
  static TriggerState s;
  return s;
}

std::atomic<int> gStopsAccepted{0};
std::atomic<int64_t> gIoFaults{0};  // WAL writes still to fail (CRASHSIM_FAULT_AFTER)
constexpr auto kStopWait = std::chrono::seconds(10);

std::array<std::atomic<uint64_t>, kPointCount>& counters() {
  static std::array<std::atomic<uint64_t>, kPointCount> c{};
  return c;
}

const char* env(const char* key) {
  const char* value = std::getenv(key);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

void writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // the parent will notice the missing control line (timeout = failure)
    }
    done += static_cast<size_t>(n);
  }
}

void atexitWriteHits() { writeHitCountsIfRequested(); }

// The "<id>:<n>" arming in environment variable `var`, if set. Throws std::invalid_argument
// naming the variable.
std::optional<Arming> armingFromEnv(const char* var) {
  const char* text = env(var);
  if (text == nullptr) return std::nullopt;
  try {
    return parseArming(text);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(kTriggerTag) + ": " + var + ": " + e.what());
  }
}

// Parses the environment into `s` (caller holds the mutex). Throws std::invalid_argument.
void initLocked(TriggerState& s) {
  if (s.initialised) return;
  const std::optional<Arming> arming = armingFromEnv("CRASHSIM_ARM");
  int controlFd = 2;
  if (const char* fdText = env("CRASHSIM_CONTROL_FD")) {
    const std::string_view v(fdText);
    int fd = -1;
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), fd);
    if (ec != std::errc() || ptr != v.data() + v.size() || fd < 0) {
      throw std::invalid_argument(std::string(kTriggerTag) + ": CRASHSIM_CONTROL_FD '" + fdText +
                                  "' is not a file descriptor number");
    }
    if (::fcntl(fd, F_GETFD) < 0) {
      throw std::invalid_argument(std::string(kTriggerTag) + ": CRASHSIM_CONTROL_FD " + fdText +
                                  " is not an open file descriptor");
    }
    controlFd = fd;
  }
  bool selfKill = false, stopMode = false;
  if (const char* mode = env("CRASHSIM_FAILPOINT_MODE")) {
    const std::string_view m(mode);
    if (m == "self") {
      selfKill = true;
    } else if (m == "stop") {
      stopMode = true;
    } else if (m != "block") {
      throw std::invalid_argument(std::string(kTriggerTag) + ": CRASHSIM_FAILPOINT_MODE '" + mode +
                                  "' is not one of block, self, stop");
    }
  }
  int stopsToWait = 1;
  if (const char* n = env("CRASHSIM_STOP_COUNT")) {
    const std::string_view v(n);
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), stopsToWait);
    if (ec != std::errc() || ptr != v.data() + v.size() || stopsToWait < 1 || stopsToWait > 9)
      throw std::invalid_argument(std::string(kTriggerTag) + ": CRASHSIM_STOP_COUNT '" + n +
                                  "' must be 1..9");
  }
  const std::optional<Arming> faultAfter = armingFromEnv("CRASHSIM_FAULT_AFTER");
  const std::optional<Arming> afterStop = armingFromEnv("CRASHSIM_ARM_AFTER_STOP");
  if (afterStop && !stopMode)
    throw std::invalid_argument(std::string(kTriggerTag) +
                                ": CRASHSIM_ARM_AFTER_STOP needs CRASHSIM_FAILPOINT_MODE=stop");
  bool powerloss = false;
  if (const char* pl = env("CRASHSIM_POWERLOSS")) {
    const std::string_view p(pl);
    if (p == "1") {
      powerloss = true;
    } else if (p != "0") {
      throw std::invalid_argument(std::string(kTriggerTag) + ": CRASHSIM_POWERLOSS '" + pl +
                                  "' must be 0 or 1");
    }
  }
  s.arming = arming;
  s.afterStop = afterStop;
  s.controlFd = controlFd;
  s.selfKill = selfKill;
  s.stopMode = stopMode;
  s.stopsToWait = stopsToWait;
  s.faultAfter = faultAfter;
  s.powerloss = powerloss;
  s.hitsOut = env("CRASHSIM_HITS_OUT") ? env("CRASHSIM_HITS_OUT") : "";
  s.hitsWritten = false;
  if (!s.hitsOut.empty() && !s.atexitRegistered) {
    std::atexit(atexitWriteHits);
    s.atexitRegistered = true;
  }
  s.initialised = true;
}

nlohmann::json controlLine(Id id, uint64_t n) {
  return {
      {"failpoint", std::string(name(id))}, {"hit", n}, {"pid", static_cast<int64_t>(::getpid())}};
}

// Stop mode: report the boundary ("stop":true), wait for the Stop to be accepted, return.
void stopHere(const TriggerState& s, Id id, uint64_t n) {
  nlohmann::json line = controlLine(id, n);
  line["stop"] = true;
  ::signal(SIGPIPE, SIG_IGN);
  writeAll(s.controlFd, line.dump() + "\n");
  const auto deadline = std::chrono::steady_clock::now() + kStopWait;
  while (gStopsAccepted.load() < s.stopsToWait) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "%s: no Stop accepted within 10 s of %s#%llu\n", kTriggerTag,
                   std::string(name(id)).c_str(), static_cast<unsigned long long>(n));
      std::_Exit(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

[[noreturn]] void die(const TriggerState& s, Id id, uint64_t n) {
  const PowerlossCrashHook hook = s.powerloss ? powerlossCrashHook() : nullptr;
  nlohmann::json line = controlLine(id, n);
  if (hook != nullptr) line["powerloss"] = true;
  // The control line is best effort: when nobody reads the control fd any more (a parent that
  // closed its end, e.g. in self mode), the write must fail with EPIPE instead of killing the
  // child with SIGPIPE. The child dies of SIGKILL and nothing else; it never returns from here,
  // so the disposition is not restored.
  ::signal(SIGPIPE, SIG_IGN);
  writeAll(s.controlFd, line.dump() + "\n");
  // Power loss: the control line ("powerloss":true) goes first, then the hook materialises the
  // crash state and raises SIGKILL itself; the harness waits for that death instead of killing.
  if (hook != nullptr) hook();
  if (s.selfKill) ::raise(SIGKILL);
  for (;;) ::pause();  // blocked until the parent's SIGKILL
}

}  // namespace

void initFromEnvironment() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  initLocked(s);
}

void hit(Id id) {
  auto& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (!s.initialised) {
      try {
        initLocked(s);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        std::_Exit(2);
      }
    }
  }
  const uint64_t n = counters()[static_cast<size_t>(id)].fetch_add(1) + 1;
  if (s.faultAfter && s.faultAfter->id == id && n == 1)
    gIoFaults.store(static_cast<int64_t>(s.faultAfter->hit));
  if (s.arming && s.arming->id == id && s.arming->hit == n) {
    if (!s.stopMode) die(s, id, n);
    stopHere(s, id, n);
    return;
  }
  if (s.afterStop && s.afterStop->id == id && s.afterStop->hit == n) die(s, id, n);
}

void noteStopAccepted() { gStopsAccepted.fetch_add(1); }

void awaitRaceBarrier() {
  const char* fifo = env("CRASHSIM_RACE_BARRIER");
  if (fifo == nullptr) return;
  auto& s = state();
  {
    std::lock_guard lock(s.mutex);
    initLocked(s);
  }
  // Non-blocking open: a FIFO's read end opens without a writer, and poll() then waits for the
  // harness's byte (no POLLHUP before a writer ever came). Nothing reads the byte, so every racer
  // sees it.
  const int fd = ::open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "%s: CRASHSIM_RACE_BARRIER %s: %s\n", kTriggerTag, fifo,
                 std::strerror(errno));
    std::_Exit(2);
  }
  ::signal(SIGPIPE, SIG_IGN);
  writeAll(
      s.controlFd,
      nlohmann::json{{"barrier", "race"}, {"pid", static_cast<int64_t>(::getpid())}}.dump() + "\n");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0)));
    if (n < 0 && errno == EINTR) continue;
    if (n > 0 && (p.revents & (POLLIN | POLLHUP)) != 0) break;
    if (n == 0 || left <= 0) {
      std::fprintf(stderr, "%s: no release at the race barrier within 30 s\n", kTriggerTag);
      std::_Exit(3);
    }
  }
  ::close(fd);
}

bool consumeIoFault() {
  int64_t left = gIoFaults.load();
  while (left > 0)
    if (gIoFaults.compare_exchange_weak(left, left - 1)) return true;
  return false;
}

std::array<uint64_t, kPointCount> hitCounts() {
  std::array<uint64_t, kPointCount> out{};
  for (size_t i = 0; i < kPointCount; ++i) out[i] = counters()[i].load();
  return out;
}

std::string hitCountsJson() {
  nlohmann::json out = nlohmann::json::object();
  const auto counts = hitCounts();
  for (size_t i = 0; i < kPointCount; ++i) out[std::string(name(static_cast<Id>(i)))] = counts[i];
  return out.dump();
}

void writeHitCountsIfRequested() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.hitsOut.empty() || s.hitsWritten) return;
  std::ofstream out(s.hitsOut, std::ios::binary | std::ios::trunc);
  out << hitCountsJson() << "\n";
  s.hitsWritten = true;
}

void resetForTesting() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  for (auto& c : counters()) c.store(0);
  s.initialised = false;
  s.arming.reset();
  s.afterStop.reset();
  gStopsAccepted.store(0);
  gIoFaults.store(0);
  s.hitsWritten = false;
}

}  // namespace crashsim::failpoints
