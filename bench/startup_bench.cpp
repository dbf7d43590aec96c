// startup_bench — what a host and a user pay to read a store at start-up, end to end, over
// stores of 10^3, 10^4, 10^5 and 10^6 events.
//
//   BM_Inspect      `crashsim inspect STORE --json` in-process (harness::inspectStore): open the
//                   store read-only, integrity check, startup-repair dry run, and per run the
//                   header, the resolver's decisions, the Phase 0 plan and the lineage, printed
//                   (to /dev/null).
//   BM_HostStartup  the host start-up sequence (crashsim/host.h hostStartup with the workspace,
//                   no scenario), as `crashsim-agent recover` runs it on a store that earlier
//                   start-ups already settled: lock, open, quick_check, claim saga, reconcile,
//                   startup repair, Phase 1 planning of every session (each continues its
//                   four-segment lineage), the report as JSON.
//
// Fixture: a real store in $TMPDIR (built once per size, untimed). Sessions of four runs: a
// fresh run (its user message carries the t1 protocol marker) and three continuations of it
// (claim row, run header, continuation start through the dedicated writer). A run holds up to
// 1,000 events; a tenth of them are tool calls with their T1 dispatch and T2 response (Write),
// the rest model text. Each run ends with a recovered `failed` terminal fact and its header.
// The body rows are inserted with plain SQL in the store's exact row format and the
// projections (tool_operations, journal) are rebuilt once through the store, so 10^6 events
// build in about a minute; the timed code reads only what the store's writers would have
// written.
//
// CRASHSIM_STARTUP_BENCH_DIR=DIR keeps each size's store in DIR/startup-<n> (and its workspace in
// DIR/startup-<n>-workspace) and reuses it on later runs, so a 10^6 store is built once and only
// the timed part re-runs (a store is reused only if its `built` marker, written last, exists).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "cli/store_commands.h"
#include "continuation/replay_internal.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/host.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"
#include "store_fixture.h"

using namespace crashsim;
using namespace crashsim::bench;

namespace {

constexpr int kRunsPerSession = 4;
constexpr int64_t kMaxEventsPerRun = 1000;

struct StartupStore {
  std::filesystem::path dir, workspace;
  int64_t events = 0;
  int runs = 0;
  bool keep = false;  // under CRASHSIM_STARTUP_BENCH_DIR: left on disk for later runs
  ~StartupStore() {
    if (keep) return;
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    std::filesystem::remove_all(workspace, ec);
  }
};

RunHeader headerOf(const WorkspaceIdentity& ws, const std::string& session, const std::string& run,
                   double ts) {
  RunHeader h;
  h.sessionId = session;
  h.runId = run;
  h.invocationId = "inv-" + run;
  h.turnId = "turn-" + run;
  h.status = "created";
  h.createdAt = h.updatedAt = ts;
  h.workspaceIdentity = ws.identity;
  h.cwd = ws.root.string();
  return h;
}

// One Write call: function_call, its T1 dispatch, its T2 response (a tenth of the run's events).
void appendToolCall(std::vector<std::pair<RuntimeEvent, int64_t>>& rows, const RunHeader& h, int i,
                    double& ts, int64_t& seq) {
  const std::string callId = h.runId + "-c" + std::to_string(i);
  const Json args = {{"path", "f" + std::to_string(i) + ".txt"}, {"content", "line " + callId}};
  const std::string op = deriveOperationId(h.invocationId, callId);
  rows.push_back(
      {ev(h.sessionId, op + "_call", h.runId, ++ts, "model", "agent",
          {{"kind", "function_call"}, {"id", callId}, {"name", "Write"}, {"args", args}}),
       ++seq});
  Json dispatch = envelope(h.sessionId, op + "_dispatch", h.runId, ++ts, "system", "system");
  dispatch["actions"] = {{"toolDispatch",
                          {{"protocol", std::string(code::t1_after_preflight_v1)},
                           {"operationId", op},
                           {"providerToolCallId", callId},
                           {"toolName", "Write"},
                           {"canonicalArgsHash", canonicalArgsHash("Write", args)},
                           {"recoveryMode", std::string(code::reconcile)}}}};
  dispatch["refs"] = {{"operationId", op}, {"toolCallId", callId}};
  rows.push_back({decodeRuntimeEvent(dispatch), ++seq});
  Json response = envelope(h.sessionId, op + "_response", h.runId, ++ts, "tool", "tool");
  response["content"] = {{"kind", "function_response"},
                         {"id", callId},
                         {"name", "Write"},
                         {"result", {{"bytesWritten", 12}, {"path", args["path"]}}}};
  response["refs"] = {{"operationId", op}, {"toolCallId", callId}};
  rows.push_back({decodeRuntimeEvent(response), ++seq});
}

std::unique_ptr<StartupStore> build(int64_t totalEvents) {
  auto f = std::make_unique<StartupStore>();
  const char* keepDir = std::getenv("CRASHSIM_STARTUP_BENCH_DIR");
  if (keepDir && *keepDir) {
    f->keep = true;
    f->dir = std::filesystem::path(keepDir) / ("startup-" + std::to_string(totalEvents));
    f->workspace = f->dir.string() + "-workspace";
    std::ifstream marker(f->dir.string() + "-built");
    if (marker >> f->events >> f->runs) return f;
  } else {
    f->dir = std::filesystem::temp_directory_path() /
             ("crashsim-startup-bench-" + std::to_string(::getpid()) + "-" +
              std::to_string(totalEvents));
    f->workspace = f->dir.string() + "-workspace";
  }
  std::filesystem::remove_all(f->dir);
  std::filesystem::remove_all(f->workspace);
  std::filesystem::create_directories(f->workspace);
  const WorkspaceIdentity ws = ensureWorkspaceIdentity(f->workspace);
  auto store = RuntimeStore::open(f->dir, StoreOptions{false, "NORMAL", ""});
  RuntimeStore& s = *store;
  sqlite3* db = s.handle();
  const int64_t perRun = std::min(kMaxEventsPerRun, totalEvents / kRunsPerSession);
  const int64_t runs = totalEvents / perRun;
  double ts = 1000;
  std::vector<ImmutablePrefix> prefixes;
  std::optional<continuation_detail::ReplayDigester> digester;
  for (int64_t r = 0; r < runs; ++r) {
    const int k = static_cast<int>(r % kRunsPerSession);
    const std::string session = "s" + std::to_string(r / kRunsPerSession);
    const std::string run = session + "-r" + std::to_string(k);
    RunHeader h = headerOf(ws, session, run, ts);
    std::vector<std::pair<RuntimeEvent, int64_t>> rows;
    int64_t seq = 0;
    if (k == 0) {
      prefixes.clear();
      digester.emplace(kProviderProjectionVersion);
      s.createRun(h);
      Json user = envelope(session, run + "-u", run, ++ts, "user", "user");
      user["content"] = {{"kind", "text"}, {"text", "please write every file"}};
      user["actions"] = {
          {"runtimeProtocol", {{"toolBoundary", std::string(code::t1_after_preflight_v1)}}}};
      rows.push_back({decodeRuntimeEvent(std::move(user)), ++seq});
    } else {
      admitContinuation(s, h, prefixes, digester->digest(), ts);
      seq = 1;
    }
    for (int i = 0; seq + 10 < perRun; ++i) {
      for (int t = 0; t < 7; ++t) {
        rows.push_back({ev(session, run + "-m" + std::to_string(i) + "-" + std::to_string(t), run,
                           ++ts, "model", "agent",
                           {{"kind", "text"}, {"text", "writing file " + std::to_string(i)}}),
                        ++seq});
      }
      appendToolCall(rows, h, i, ts, seq);
    }
    insertRows(db, rows);
    sealRecoveredFailed(s, h, ++ts);
    prefixes.push_back(readImmutablePrefix(s, {session, h.invocationId, run, h.turnId}));
    const SegmentReplay replay = projectSegment(prefixes.back());
    if (!replay.replayable)
      throw std::runtime_error("segment not replayable: " + replay.blockedReason);
    for (const auto& item : replay.itemStableJson) digester->addItem(item);
    f->events += prefixes.back().eventCount;
    ++f->runs;
    ts += 10;
  }
  s.rebuildProjections();
  if (f->keep) {
    store.reset();
    std::ofstream(f->dir.string() + "-built") << f->events << ' ' << f->runs << '\n';
  }
  return f;
}

StartupStore& fixture(int64_t n) {
  static std::map<int64_t, std::unique_ptr<StartupStore>> cache;
  auto& slot = cache[n];
  if (!slot) slot = build(n);
  return *slot;
}

// Runs fn with stdout sent to /dev/null (the printed report is part of what is timed).
template <class Fn>
auto toDevNull(Fn&& fn) {
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int null = ::open("/dev/null", O_WRONLY);
  ::dup2(null, STDOUT_FILENO);
  ::close(null);
  auto result = fn();
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  return result;
}

void perEvent(benchmark::State& state, const StartupStore& f) {
  state.SetItemsProcessed(state.iterations() * f.events);
  state.counters["events"] = static_cast<double>(f.events);
  state.counters["runs"] = f.runs;
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(f.events),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_Inspect(benchmark::State& state) {
  StartupStore& f = fixture(state.range(0));
  for (auto _ : state) {
    const int rc = toDevNull([&] { return harness::inspectStore(f.dir.string(), true); });
    if (rc != 0) {
      state.SkipWithError(("inspect exited " + std::to_string(rc)).c_str());
      break;
    }
  }
  perEvent(state, f);
}

void BM_HostStartup(benchmark::State& state) {
  StartupStore& f = fixture(state.range(0));
  HostStartupOptions options;
  options.storeDir = f.dir;
  options.workspaceDir = f.workspace;
  CancellationToken cancel;
  // The first start-up may repair; later ones find it settled. Every session's plan must
  // continue from its latest run (lineage of four segments), or the bench measures an early exit.
  const HostStartupReport first = hostStartup(options, cancel);
  const size_t sessions = (static_cast<size_t>(f.runs) + kRunsPerSession - 1) / kRunsPerSession;
  bool allContinue = first.plans.size() == sessions;
  for (const ContinuationPlan& p : first.plans)
    allContinue = allContinue && p.decision == "continue";
  if (!allContinue) {
    state.SkipWithError(
        ("start-up did not plan every session: " + first.toJson().dump()).substr(0, 2000).c_str());
    return;
  }
  for (auto _ : state) {
    const std::string out = toDevNull([&] {
      const std::string json = hostStartup(options, cancel).toJson().dump();
      std::fputs(json.c_str(), stdout);
      return json;
    });
    benchmark::DoNotOptimize(out);
  }
  perEvent(state, f);
}

}  // namespace

BENCHMARK(BM_Inspect)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_HostStartup)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
