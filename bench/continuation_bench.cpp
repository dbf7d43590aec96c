// continuation_bench — planning a continuation whose lineage has 64 segments totalling 1k,
// 10k and 100k events. The planner reads, digests and projects every segment once and checks
// every V2 edge incrementally, so the reported per-event cost should stay flat (linear).
//
// Fixture: a real store. Run headers, continuation-starts (dedicated writer), terminal events
// (generic writer) and headers are written through the store API; the bulk body events of
// each segment and the claim rows are inserted with plain SQL in the exact row format, so the
// fixture for 100k events builds in seconds (the writers' per-append seal checks are not
// what is measured here).
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>

#include "continuation/replay_internal.h"
#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "store_fixture.h"

using namespace crashsim;
using namespace crashsim::bench;

namespace {

constexpr int kSegments = 64;
const std::string kWs = "workspace:v1:2b1c8a9e-3d4f-4a5b-8c6d-7e8f9a0b1c2d";

struct Fixture {
  std::filesystem::path dir;
  std::unique_ptr<RuntimeStore> store;
  std::string lastRun;
  int64_t events = 0;
  ~Fixture() {
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

std::unique_ptr<Fixture> build(int64_t totalEvents) {
  auto f = std::make_unique<Fixture>();
  f->dir =
      std::filesystem::temp_directory_path() /
      ("crashsim-cont-bench-" + std::to_string(::getpid()) + "-" + std::to_string(totalEvents));
  std::filesystem::remove_all(f->dir);
  f->store = RuntimeStore::open(f->dir, StoreOptions{false, "NORMAL", ""});
  RuntimeStore& s = *f->store;
  sqlite3* db = s.handle();
  const int64_t perSeg = std::max<int64_t>(6, totalEvents / kSegments);
  continuation_detail::ReplayDigester digester(kProviderProjectionVersion);
  std::vector<ImmutablePrefix> prefixes;
  prefixes.reserve(kSegments);
  double ts = 1000;
  for (int k = 0; k < kSegments; ++k) {
    const std::string run = "run-" + std::to_string(k);
    RunHeader h;
    h.sessionId = "bench";
    h.runId = run;
    h.invocationId = "inv-" + run;
    h.turnId = "turn-" + run;
    h.status = "created";
    h.createdAt = h.updatedAt = ts;
    h.workspaceIdentity = kWs;
    h.cwd = "/ws";
    int64_t seq = 0;
    if (k == 0) {
      s.createRun(h);
    } else {
      admitContinuation(s, h, prefixes, digester.digest(), ts);
      seq = 1;
    }
    std::vector<std::pair<RuntimeEvent, int64_t>> rows;
    if (k == 0) {
      rows.push_back({ev("bench", run + "-u", run, ++ts, "user", "user",
                         {{"kind", "text"}, {"text", "please read every file"}}),
                      ++seq});
    }
    for (int i = 0; seq + 3 < perSeg; ++i) {
      const std::string cid = run + "-c" + std::to_string(i);
      rows.push_back({ev("bench", cid + "-m", run, ++ts, "model", "agent",
                         {{"kind", "text"}, {"text", "reading file " + std::to_string(i)}}),
                      ++seq});
      rows.push_back({ev("bench", cid + "-call", run, ++ts, "model", "agent",
                         {{"kind", "function_call"},
                          {"id", cid},
                          {"name", "Read"},
                          {"args", {{"path", "f" + std::to_string(i) + ".txt"}}}}),
                      ++seq});
      rows.push_back({ev("bench", cid + "-resp", run, ++ts, "tool", "tool",
                         {{"kind", "function_response"},
                          {"id", cid},
                          {"name", "Read"},
                          {"result", {{"text", "contents of file " + std::to_string(i)}}}}),
                      ++seq});
    }
    insertRows(db, rows);
    sealRecoveredFailed(s, h, ++ts);
    prefixes.push_back(readImmutablePrefix(s, {"bench", h.invocationId, run, h.turnId}));
    SegmentReplay sr = projectSegment(prefixes.back());
    if (!sr.replayable)
      throw std::runtime_error("bench segment not replayable: " + sr.blockedReason);
    for (const auto& item : sr.itemStableJson) digester.addItem(item);
    f->events += prefixes.back().eventCount;
    f->lastRun = run;
    ts += 10;
  }
  return f;
}

Fixture& fixture(int64_t n) {
  static std::map<int64_t, std::unique_ptr<Fixture>> cache;
  auto& slot = cache[n];
  if (!slot) slot = build(n);
  return *slot;
}

void BM_PlanContinuation64Segments(benchmark::State& state) {
  Fixture& f = fixture(state.range(0));
  ContinuationHost host;
  host.enabled = true;
  host.currentCwd = "/ws";
  host.inspector = [] {
    SafetyFacts sf;
    sf.workspaceIdentity = kWs;
    sf.availableToolNames = {"Read"};
    return sf;
  };
  int n = 0;
  host.newId = [&n] { return "bench-new-" + std::to_string(++n); };
  for (auto _ : state) {
    ContinuationPlan p = planContinuation(*f.store, "bench", f.lastRun, host);
    if (p.decision != "continue" || p.lineageDepth != kSegments) {
      state.SkipWithError(("plan did not continue: " + p.toJson().dump()).c_str());
      break;
    }
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations() * f.events);
  state.counters["events"] = static_cast<double>(f.events);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(f.events),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_PlanContinuation64Segments)
    ->Arg(1000)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
