// store_bench — cost of a tool call's durable boundary on the RuntimeStore.
//
//   BM_ToolCallT1T2       one tool call = T1 (call + dispatch + journal + operation row) and
//                         T2 (response + journal + CAS): two BEGIN IMMEDIATE transactions with
//                         every f.3 check (exact retry, identity, seal, ledger health, scan).
//   BM_TwoBareCommits     the floor: two single-row synchronous=FULL WAL commits of the same
//                         payload sizes (T1's call+dispatch bytes, then T2's response bytes)
//                         into a plain table on a bare sqlite3 connection.
//   BM_SideBySide         both in one loop, alternating per iteration; its `ratio` counter is
//                         the acceptance measure (the separate runs above drift apart when the
//                         disk's speed changes between them). walBatching:1 is the store as
//                         shipped, walBatching:0 the same store on SQLite's own VFS.
// All run in one process on a temp dir of the real file system ($TMPDIR; /dev/shm shows the
// CPU cost alone). `commits_per_s` counts SQLite commits (2 per iteration on each side). Target
// (issue #3): time(T1+T2) <= 1.25 x time(two bare commits). Runs use 16 tool calls per
// invocation (a realistic agent turn); each new run starts with its user event, untimed.
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
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

// The store side: a fresh store; every kCallsPerRun calls a new run starts with its user event
// (outside the timing). next() prepares the next call (untimed); commit() is T1 then T2.
class ToolSide {
 public:
  explicit ToolSide(bool walBatching = true)
      : dir_(freshDir("store")), store_(crashsim::RuntimeStore::open(dir_, options(walBatching))) {}
  ~ToolSide() {
    store_.reset();
    fs::remove_all(dir_);
  }
  static crashsim::StoreOptions options(bool walBatching) {
    crashsim::StoreOptions o;
    o.walBatching = walBatching;
    return o;
  }
  ToolCall next() {
    if (n_ == kCallsPerRun) {
      ++runNo_;
      id_.invocation = "inv-" + std::to_string(runNo_);
      id_.run = "run-" + std::to_string(runNo_);
      id_.turn = "turn-" + std::to_string(runNo_);
      store_->append(userEvent(id_));
      n_ = 0;
    }
    return makeCall(id_, n_++, kContent);
  }
  void commit(const ToolCall& tc) {
    auto r1 = store_->commitToolPrepared(tc.prepared);
    auto r2 = store_->commitToolOutcome(tc.outcome);
    benchmark::DoNotOptimize(r1);
    benchmark::DoNotOptimize(r2);
  }

 private:
  fs::path dir_;
  std::unique_ptr<crashsim::RuntimeStore> store_;
  int runNo_ = 0, n_ = kCallsPerRun;
  Ids id_;
};

// The floor: a bare sqlite3 connection (WAL, synchronous=FULL, SQLite's defaults otherwise),
// one plain table; commit() is two single-row BEGIN IMMEDIATE … COMMIT transactions carrying
// T1's bytes (call + dispatch payloads) and T2's bytes (response payload).
class BareSide {
 public:
  BareSide() : dir_(freshDir("bare")) {
    sqlite3_open((dir_ / "bare.sqlite").c_str(), &db_);
    sqlite3_exec(db_,
                 "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id TEXT "
                 "PRIMARY KEY, payload TEXT NOT NULL);",
                 nullptr, nullptr, nullptr);
    Ids id{"bench-session", "inv", "run", "turn"};
    ToolCall sample = makeCall(id, 0, kContent);
    p1_ = crashsim::encodeRuntimeEvent(sample.prepared.call) +
          crashsim::encodeRuntimeEvent(sample.prepared.dispatch);
    p2_ = crashsim::encodeRuntimeEvent(sample.outcome.response);
    sqlite3_prepare_v2(db_, "INSERT INTO t (id, payload) VALUES (?1, ?2)", -1, &ins_, nullptr);
  }
  ~BareSide() {
    sqlite3_finalize(ins_);
    sqlite3_close(db_);
    fs::remove_all(dir_);
  }
  void commit() {
    commitOne(p1_);
    commitOne(p2_);
  }

 private:
  void commitOne(const std::string& payload) {
    sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    const std::string key = "row-" + std::to_string(k_++);
    sqlite3_bind_text(ins_, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(ins_, 2, payload.data(), static_cast<int>(payload.size()), SQLITE_STATIC);
    sqlite3_step(ins_);
    sqlite3_reset(ins_);
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  }
  fs::path dir_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* ins_ = nullptr;
  std::string p1_, p2_;
  int64_t k_ = 0;
};

void BM_ToolCallT1T2(benchmark::State& state) {
  ToolSide tool;
  for (auto _ : state) {
    state.PauseTiming();
    ToolCall tc = tool.next();
    state.ResumeTiming();
    tool.commit(tc);
  }
  state.counters["commits_per_s"] =
      benchmark::Counter(2, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TwoBareCommits(benchmark::State& state) {
  BareSide bare;
  for (auto _ : state) bare.commit();
  state.counters["commits_per_s"] =
      benchmark::Counter(2, benchmark::Counter::kIsIterationInvariantRate);
}

// The acceptance measure: each iteration times one tool call's T1+T2 and, right after it, two
// bare commits, so both sides see the same disk conditions (a shared virtual disk drifts by
// 2-5x within minutes). Counters: tool_us and bare_us per iteration, ratio = tool / bare
// (target <= 1.25), and each side's commits/s. The iteration time is the sum of both sides.
// Argument: StoreOptions::walBatching (1, the default; 0: SQLite's own VFS), so the WAL batching
// VFS is measured with and without in one binary.
void BM_SideBySide(benchmark::State& state) {
  ToolSide tool(state.range(0) != 0);
  BareSide bare;
  using Clock = std::chrono::steady_clock;
  Clock::duration toolTime{}, bareTime{};
  for (auto _ : state) {
    state.PauseTiming();
    ToolCall tc = tool.next();
    state.ResumeTiming();
    const auto t0 = Clock::now();
    tool.commit(tc);
    const auto t1 = Clock::now();
    bare.commit();
    const auto t2 = Clock::now();
    toolTime += t1 - t0;
    bareTime += t2 - t1;
  }
  const double n = static_cast<double>(state.iterations());
  const double toolUs = std::chrono::duration<double, std::micro>(toolTime).count() / n;
  const double bareUs = std::chrono::duration<double, std::micro>(bareTime).count() / n;
  state.counters["tool_us"] = toolUs;
  state.counters["bare_us"] = bareUs;
  state.counters["ratio"] = toolUs / bareUs;
  state.counters["tool_commits_per_s"] = 2e6 / toolUs;
  state.counters["bare_commits_per_s"] = 2e6 / bareUs;
}

// Fixed iteration counts keep runs short. Wall-clock time (UseRealTime): fsync waits are the
// cost being compared, not CPU time.
BENCHMARK(BM_SideBySide)
    ->ArgName("walBatching")
    ->Arg(1)
    ->Arg(0)
    ->Iterations(600)
    ->Unit(benchmark::kMicrosecond)
    ->Repetitions(3)
    ->UseRealTime();
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
