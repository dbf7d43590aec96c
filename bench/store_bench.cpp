// store_bench — cost of a tool call's durable boundary on the RuntimeStore.
//
//   BM_ToolCallT1T2       one tool call = T1 (call + dispatch + journal + operation row) and
//                         T2 (response + journal + CAS): two BEGIN IMMEDIATE transactions with
//                         every f.3 check (exact retry, identity, seal, ledger health, scan).
//   BM_TwoBareCommits     the floor: two single-row synchronous=FULL WAL commits of the same
//                         payload sizes (T1's call+dispatch bytes, then T2's response bytes)
//                         into a plain table on a bare sqlite3 connection.
// Both run side by side in one process on a temp dir of the real file system. The counter
// `commits_per_s` counts SQLite commits (2 per iteration in both). Target (issue #3):
// time(T1+T2) <= 1.25 x time(two bare commits). Runs use 16 tool calls per invocation
// (a realistic agent turn); each new run starts with its user event, outside the timing.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>

#include "crashsim/hashing.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"

namespace {

namespace fs = std::filesystem;
using crashsim::Json;
using crashsim::RuntimeEvent;

constexpr int kCallsPerRun = 16;

fs::path freshDir(const char* tag) {
  std::random_device rd;
  fs::path p =
      fs::temp_directory_path() / (std::string("crashsim-bench-") + tag + "-" +
                                   std::to_string(::getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(p);
  return p;
}

struct Ids {
  std::string session = "bench-session", invocation, run, turn;
};

Json envelope(const Ids& id, const std::string& eventId, double ts, const char* role,
              const char* author) {
  return Json{{"id", eventId},     {"invocationId", id.invocation},
              {"runId", id.run},   {"sessionId", id.session},
              {"turnId", id.turn}, {"ts", ts},
              {"partial", false},  {"role", role},
              {"author", author}};
}

struct ToolCall {
  crashsim::ToolPrepared prepared;
  crashsim::ToolOutcome outcome;
};

ToolCall makeCall(const Ids& id, int n, const std::string& content) {
  const std::string callId = "call-" + std::to_string(n);
  Json args = {{"path", "file-" + std::to_string(n) + ".txt"}, {"content", content}};
  const std::string op = crashsim::deriveOperationId(id.invocation, callId);
  const std::string hash = crashsim::canonicalArgsHash("Write", args);
  Json call = envelope(id, op + "_call", 2000 + n, "model", "agent");
  call["content"] = {{"kind", "function_call"}, {"id", callId}, {"name", "Write"}, {"args", args}};
  Json dispatch = envelope(id, op + "_dispatch", 2000 + n, "system", "system");
  dispatch["actions"] = {{"toolDispatch",
                          {{"protocol", "t1_after_preflight_v1"},
                           {"operationId", op},
                           {"providerToolCallId", callId},
                           {"toolName", "Write"},
                           {"canonicalArgsHash", hash},
                           {"recoveryMode", "reconcile"}}}};
  dispatch["refs"] = {{"operationId", op}, {"toolCallId", callId}};
  Json response = envelope(id, op + "_response", 3000 + n, "tool", "tool");
  response["content"] = {{"kind", "function_response"},
                         {"id", callId},
                         {"name", "Write"},
                         {"result", {{"bytesWritten", content.size()}, {"path", args["path"]}}}};
  response["refs"] = {{"operationId", op}, {"toolCallId", callId}};
  ToolCall tc;
  tc.prepared.operationId = op;
  tc.prepared.journalEventId = op + "_prepared";
  tc.prepared.call = crashsim::decodeRuntimeEvent(call);
  tc.prepared.dispatch = crashsim::decodeRuntimeEvent(dispatch);
  tc.prepared.providerToolCallId = callId;
  tc.prepared.toolName = "Write";
  tc.prepared.canonicalArgsHash = hash;
  tc.prepared.recoveryMode = "reconcile";
  tc.prepared.committedAt = 2000 + n;
  tc.outcome.operationId = op;
  tc.outcome.journalEventId = op + "_outcome";
  tc.outcome.response = crashsim::decodeRuntimeEvent(response);
  tc.outcome.committedAt = 3000 + n;
  return tc;
}

RuntimeEvent userEvent(const Ids& id) {
  Json j = envelope(id, id.run + "-user", 1000, "user", "user");
  j["content"] = {{"kind", "text"}, {"text", "write the files"}};
  j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  return crashsim::decodeRuntimeEvent(j);
}

const std::string kContent(256, 'x');

void BM_ToolCallT1T2(benchmark::State& state) {
  fs::path dir = freshDir("store");
  auto store = crashsim::RuntimeStore::open(dir);
  int runNo = 0, n = kCallsPerRun;
  Ids id;
  for (auto _ : state) {
    if (n == kCallsPerRun) {
      state.PauseTiming();
      ++runNo;
      id.invocation = "inv-" + std::to_string(runNo);
      id.run = "run-" + std::to_string(runNo);
      id.turn = "turn-" + std::to_string(runNo);
      store->append(userEvent(id));
      n = 0;
      state.ResumeTiming();
    }
    state.PauseTiming();
    ToolCall tc = makeCall(id, n++, kContent);
    state.ResumeTiming();
    auto r1 = store->commitToolPrepared(tc.prepared);
    auto r2 = store->commitToolOutcome(tc.outcome);
    benchmark::DoNotOptimize(r1);
    benchmark::DoNotOptimize(r2);
  }
  state.counters["commits_per_s"] =
      benchmark::Counter(2, benchmark::Counter::kIsIterationInvariantRate);
  store.reset();
  fs::remove_all(dir);
}

void BM_TwoBareCommits(benchmark::State& state) {
  fs::path dir = freshDir("bare");
  sqlite3* db = nullptr;
  sqlite3_open((dir / "bare.sqlite").c_str(), &db);
  sqlite3_exec(db,
               "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id TEXT "
               "PRIMARY KEY, payload TEXT NOT NULL);",
               nullptr, nullptr, nullptr);
  Ids id{"bench-session", "inv", "run", "turn"};
  ToolCall sample = makeCall(id, 0, kContent);
  const std::string p1 = crashsim::encodeRuntimeEvent(sample.prepared.call) +
                         crashsim::encodeRuntimeEvent(sample.prepared.dispatch);
  const std::string p2 = crashsim::encodeRuntimeEvent(sample.outcome.response);
  sqlite3_stmt* ins = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO t (id, payload) VALUES (?1, ?2)", -1, &ins, nullptr);
  int64_t k = 0;
  auto commitOne = [&](const std::string& payload) {
    sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    const std::string key = "row-" + std::to_string(k++);
    sqlite3_bind_text(ins, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, 2, payload.data(), static_cast<int>(payload.size()), SQLITE_STATIC);
    sqlite3_step(ins);
    sqlite3_reset(ins);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  };
  for (auto _ : state) {
    commitOne(p1);
    commitOne(p2);
  }
  state.counters["commits_per_s"] =
      benchmark::Counter(2, benchmark::Counter::kIsIterationInvariantRate);
  sqlite3_finalize(ins);
  sqlite3_close(db);
  fs::remove_all(dir);
}

// Alternate the two so disk conditions are shared; fixed iteration counts keep runs short.
// Wall-clock time (UseRealTime): fsync waits are the cost being compared, not CPU time.
BENCHMARK(BM_TwoBareCommits)
    ->Iterations(400)
    ->Unit(benchmark::kMicrosecond)
    ->Repetitions(3)
    ->UseRealTime();
BENCHMARK(BM_ToolCallT1T2)
    ->Iterations(400)
    ->Unit(benchmark::kMicrosecond)
    ->Repetitions(3)
    ->UseRealTime();

}  // namespace
