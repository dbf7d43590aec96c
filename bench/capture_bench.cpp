// capture_bench — workspace checkpoint capture (workspace-continuity-contract.md d.2) of a git work
// tree of 5,000 files totalling 100 MiB (#47's acceptance: ≤ 500 ms median warm with 5 changed
// files).
//
// Fixture (built once, outside the timed part, with the git CLI as a user would): a real
// repository with 4,500 committed files (.gitignore and 4,499 data files) and 500 untracked ones
// (the snapshot's L: 5,000 files of 20,972 bytes, 100 MiB in all, in 50 directories) plus 200
// ignored files (*.log, outside L), and the RC h marker. A real store holds an open run whose rows
// are the capture boundaries.
//
// BM_CaptureCold: a fresh store and carrier per iteration, the first capture (every blob hashed
//   into the carrier), timed.
// BM_CaptureWarm: one store whose carrier already holds a capture; per iteration (untimed) 5
//   tracked files are rewritten with new bytes of the same size and the run gets one more row,
//   then the capture of the new boundary is timed.
// Both call captureCheckpoint, the call the agent makes (runtime/src/agent/agent_checkpoints.cpp),
// with the default snapshot limits but captureTimeoutMs; counters median_ms and p90_ms are over the
// iterations.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "crashsim/continuation.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"
#include "crashsim/workspace_carrier.h"

using namespace crashsim;
namespace fs = std::filesystem;

namespace {

constexpr int kTracked = 4499, kUntracked = 500, kIgnored = 200, kDirs = 50;
constexpr size_t kFileBytes = 20972;  // 5,000 × 20,972 B = 100.0 MiB
constexpr int kChanged = 5;
// The policy's deadline is raised from the default 5,000 ms: on the 2-core VM the cold capture of
// 100 MiB (5,000 loose objects, each fsynced under c.2's core.fsync=all) takes longer than that
// (docs/phase4.md, Capture cost). It bounds the capture, it does not change its work.
constexpr int64_t kCaptureTimeoutMs = 120000;

void shell(const std::string& cmd) {
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("fixture command failed: " + cmd);
}

// Incompressible bytes (xorshift), distinct per (file, generation).
std::string contentOf(uint64_t file, uint64_t generation) {
  uint64_t x = 0x9e3779b97f4a7c15ULL ^ (file * 0x100000001b3ULL) ^ (generation << 40);
  std::string s(kFileBytes, '\0');
  for (size_t i = 0; i < s.size(); i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    for (size_t b = 0; b < 8 && i + b < s.size(); ++b) s[i + b] = static_cast<char>(x >> (8 * b));
  }
  return s;
}

void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
}

fs::path fileOf(const fs::path& root, int i) {
  return root / ("d" + std::to_string(i % kDirs)) / ("f" + std::to_string(i) + ".bin");
}

struct Workspace {
  fs::path dir, root;
  WorkspaceIdentity identity;
  uint64_t generation = 0;
  ~Workspace() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Workspace& workspace() {
  static std::unique_ptr<Workspace> w = [] {
    auto w = std::make_unique<Workspace>();
    w->dir = fs::temp_directory_path() / ("crashsim-capture-bench-" + std::to_string(::getpid()));
    w->root = w->dir / "ws";
    fs::remove_all(w->dir);
    for (int d = 0; d < kDirs; ++d) fs::create_directories(w->root / ("d" + std::to_string(d)));
    const std::string q = std::string("'").append(w->root.string()).append("'");
    shell(std::string("git init -q ").append(q));
    writeFile(w->root / ".gitignore", "*.log\n");
    for (int i = 0; i < kTracked; ++i) writeFile(fileOf(w->root, i), contentOf(i, 0));
    shell(std::string("cd ").append(q).append(
        " && git add -A && git -c user.name=b -c user.email=b@b.invalid commit -qm fixture"));
    for (int i = kTracked; i < kTracked + kUntracked; ++i)
      writeFile(fileOf(w->root, i), contentOf(i, 0));
    for (int i = 0; i < kIgnored; ++i)
      writeFile(w->root / ("d" + std::to_string(i % kDirs)) / ("i" + std::to_string(i) + ".log"),
                contentOf(100000 + i, 0));
    w->identity = ensureWorkspaceIdentity(w->root);
    w->root = w->identity.root;
    return w;
  }();
  return *w;
}

// A store with an open run (rows are appended as boundaries are needed).
struct Store {
  fs::path dir;
  std::unique_ptr<RuntimeStore> store;
  PrefixIdentity run{"bench", "inv-bench", "run-bench", "turn-bench"};
  int64_t rows = 0;
  double ts = 1000;
  explicit Store(const std::string& name) {
    dir = workspace().dir / name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    store = RuntimeStore::open(dir);  // the agent's options (synchronous FULL)
    RunHeader h;
    h.sessionId = run.sessionId;
    h.runId = run.runId;
    h.invocationId = run.invocationId;
    h.turnId = run.turnId;
    h.status = "created";
    h.createdAt = h.updatedAt = ts;
    h.workspaceIdentity = workspace().identity.identity;
    h.cwd = workspace().root.string();
    store->createRun(h);
  }
  ~Store() {
    store.reset();
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  int64_t appendRow() {
    ts += 1;
    Json e = {{"id", run.runId + "-u" + std::to_string(rows + 1)},
              {"sessionId", run.sessionId},
              {"invocationId", run.invocationId},
              {"runId", run.runId},
              {"turnId", run.turnId},
              {"ts", ts},
              {"partial", false},
              {"role", "user"},
              {"author", "user"},
              {"content", {{"kind", "text"}, {"text", "step " + std::to_string(rows + 1)}}}};
    store->append(decodeRuntimeEvent(e));
    return ++rows;
  }
  // The agent's capture of the boundary at row p, timed in ms.
  double capture(const GitRuntime& git, int64_t p) {
    CaptureRequest req;
    req.instanceRoot = workspace().root;
    req.instanceIdentity = workspace().identity.identity;
    req.canonicalRoot = workspace().root.string();
    req.run = run;
    req.lastEventSeq = p;
    req.limits.captureTimeoutMs = kCaptureTimeoutMs;
    req.ts = ts;
    const auto t0 = std::chrono::steady_clock::now();
    const CaptureResult r = captureCheckpoint(*store, dir, git, req);
    const auto t1 = std::chrono::steady_clock::now();
    if (!r.created || r.checkpoint.fileCount != kTracked + kUntracked + 1)
      throw std::runtime_error("capture did not create the expected checkpoint");
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  }
};

void report(benchmark::State& state, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const auto at = [&](double q) { return ms[std::min(ms.size() - 1, size_t(q * ms.size()))]; };
  state.counters["median_ms"] =
      ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
  state.counters["p90_ms"] = at(0.9);
  state.counters["max_ms"] = ms.back();
}

void BM_CaptureCold(benchmark::State& state) {
  const GitRuntime git = resolveGitRuntime();
  workspace();
  std::vector<double> ms;
  int n = 0;
  for (auto _ : state) {
    Store s("cold-" + std::to_string(n++));
    const double t = s.capture(git, s.appendRow());
    state.SetIterationTime(t / 1000);
    ms.push_back(t);
  }
  report(state, ms);
}
BENCHMARK(BM_CaptureCold)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

void BM_CaptureWarm(benchmark::State& state) {
  const GitRuntime git = resolveGitRuntime();
  Workspace& w = workspace();
  Store s("warm");
  s.capture(git, s.appendRow());  // the cold capture: the carrier and the capture index exist
  std::vector<double> ms;
  for (auto _ : state) {
    ++w.generation;
    for (int k = 0; k < kChanged; ++k) {
      const int i = static_cast<int>((w.generation * kChanged + k) * 97 % kTracked);
      writeFile(fileOf(w.root, i), contentOf(i, w.generation));
    }
    const double t = s.capture(git, s.appendRow());
    state.SetIterationTime(t / 1000);
    ms.push_back(t);
  }
  report(state, ms);
}
BENCHMARK(BM_CaptureWarm)->UseManualTime()->Iterations(30)->Unit(benchmark::kMillisecond);

}  // namespace
