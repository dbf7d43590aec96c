#include "crashsim/harness/sweep.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "crashsim/bounded_input.h"
#include "crashsim/error.h"
#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/supervisor.h"
#include "verdicts/v9_determinism.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

namespace {

std::string fsTypeName(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0x01021994:
      return "tmpfs";
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0x6969:
      return "nfs";
    case 0x65735546:
      return "fuse";
    case 0x01021997:
      return "9p";
    case 0x5346544e:
      return "ntfs";
    case 0x4d44:
      return "vfat";
    default:
      return fmt::format("0x{:x}", static_cast<unsigned long>(type));
  }
}

bool selected(const std::vector<std::string>& filter, const std::string& value) {
  return filter.empty() || std::find(filter.begin(), filter.end(), value) != filter.end();
}

// The coverage table: the plan's predicted reach with the outcome of the cases that ran.
std::vector<reports::CoverageRow> coverageOf(const SweepPlan& plan,
                                             const std::vector<reports::CaseRecord>& cases) {
  std::vector<reports::CoverageRow> rows;
  for (const auto& r : plan.reach) {
    reports::CoverageRow row{r.scenario, r.failpoint, r.process, r.predicted, r.planned};
    for (const auto& c : cases) {
      const bool second = c.recoveryFailpoint.has_value();
      const bool path = c.id.find("~path:") != std::string::npos;  // a path mutation (case_id.h)
      const bool race = c.id.ends_with("+H2");
      const FaultMode* mode = findFaultMode(c.mode);
      const char* process = path                           ? "path"
                            : race                         ? "race"
                            : !second                      ? "agent"
                            : mode && mode->deliversStop() ? "stop"
                                                           : "recovery";
      if (c.scenario != r.scenario || r.process != process ||
          (second ? *c.recoveryFailpoint : c.failpoint) != r.failpoint)
        continue;
      ++row.run;
      ++(c.verdict == "pass" ? row.passed : row.failed);
    }
    rows.push_back(row);
  }
  return rows;
}

// A harness-side exception (I/O on the temp dir, ...) becomes a failed case, never a crash.
CaseOutcome guardedRunCase(const CaseId& id, const Reference& ref, const RunOptions& ro) {
  try {
    return runCase(id, ref, ro);
  } catch (const std::exception& e) {
    CaseOutcome oc;
    oc.record = caseRecordOf(id, ro);
    for (auto n : reports::kCheckNames) oc.record.checks[std::string(n)] = {"n/a", "case aborted"};
    oc.record.checks["V1"] = {"fail", std::string("case aborted: ") + e.what()};
    oc.record.verdict = "fail";
    return oc;
  }
}

}  // namespace

// journalMode / synchronous: what the agent's store connection reported in the reference runs.
reports::Platform describePlatform(const fs::path& storeDir, const std::vector<Reference>& refs) {
  reports::Platform p;
  utsname u{};
  if (::uname(&u) == 0) {
    p.os = u.sysname;
    p.kernel = u.release;
    p.arch = u.machine;
  }
  struct statfs sf {};
  p.fsType =
      ::statfs(storeDir.c_str(), &sf) == 0 ? fsTypeName(static_cast<long>(sf.f_type)) : "unknown";
  p.sqliteVersion = sqlite3_libversion();
  for (int i = 0;; ++i) {
    const char* opt = sqlite3_compileoption_get(i);
    if (!opt) break;
    std::string o = opt;
    for (auto prefix : {"THREADSAFE", "DEFAULT_SYNCHRONOUS", "DEFAULT_WAL_SYNCHRONOUS",
                        "DEFAULT_JOURNAL_SIZE_LIMIT", "DEFAULT_WAL_AUTOCHECKPOINT",
                        "DIRECT_OVERFLOW_READ", "ENABLE_ATOMIC_WRITE", "ENABLE_BATCH_ATOMIC_WRITE",
                        "DEFAULT_PAGE_SIZE", "MAX_MMAP_SIZE", "DEFAULT_MMAP_SIZE", "OMIT_WAL",
                        "ENABLE_PERSIST_WAL", "DEFAULT_LOCKING_MODE", "DEFAULT_CKPTFULLFSYNC",
                        "DISABLE_DIRSYNC", "ENABLE_POWERSAFE_OVERWRITE", "POWERSAFE_OVERWRITE"})
      if (o.rfind(prefix, 0) == 0) p.sqliteCompileOptions.push_back(o);
  }
  // Median of 16 fsyncs of a 4 KiB write in the store directory.
  {
    auto probe = storeDir / "fsync-probe";
    int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
      std::vector<double> us;
      char block[4096] = {};
      for (int i = 0; i < 16; ++i) {
        if (::pwrite(fd, block, sizeof block, 0) != static_cast<ssize_t>(sizeof block)) break;
        auto t0 = std::chrono::steady_clock::now();
        if (::fsync(fd) != 0) break;
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
      }
      ::close(fd);
      std::error_code ec;
      fs::remove(probe, ec);
      if (!us.empty()) {
        std::sort(us.begin(), us.end());
        p.fsyncLatencyUs = std::round(us[us.size() / 2] * 10) / 10;
      }
    }
  }
  // Every reference run reports its connection's settings; disagreement is shown, not hidden.
  for (const auto& r : refs) {
    for (auto [field, value] :
         {std::pair{&p.journalMode, &r.journalMode}, std::pair{&p.synchronous, &r.synchronous}}) {
      if (field->empty())
        *field = *value;
      else if (*field != *value)
        *field = "mixed";
    }
  }
#if defined(__clang__)
  p.compiler = fmt::format("Clang {}", __clang_version__);
#elif defined(__GNUC__)
  p.compiler = fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  p.compiler = "unknown";
#endif
  p.buildType = CRASHSIM_BUILD_TYPE;
  return p;
}

std::vector<Scenario> selectScenarios(const SweepOptions& opts) {
  auto all = loadScenarioDir(opts.scenarioDir);
  if (all.empty())
    throw SweepError("scenario folder " + opts.scenarioDir.string() +
                     " holds no scenario (*.json)");
  for (const auto& want : opts.scenarios) {
    if (std::none_of(all.begin(), all.end(), [&](const Scenario& s) { return s.id == want; }))
      throw SweepError("unknown scenario " + want);
  }
  std::vector<Scenario> chosen;
  for (const auto& s : all)
    if (selected(opts.scenarios, s.id)) chosen.push_back(s);
  return chosen;
}

namespace {
PlanSelection selectionOf(const SweepOptions& opts) {
  PlanSelection sel;
  sel.failpoints = opts.failpoints;
  sel.caseGlobs = opts.caseGlobs;
  sel.mode = opts.mode;
  sel.states = opts.states;
  sel.seed = opts.seed;
  sel.doubleFaults = opts.doubleFaults;
  sel.shardIndex = opts.shardIndex;
  sel.shardTotal = opts.shardTotal;
  sel.barriers = opts.barriers;
  sel.pathMutations = opts.pathMutations;
  return sel;
}
}  // namespace

bool plansBarriers(const SweepOptions& opts) { return plansBarriers(selectionOf(opts)); }

SweepPlan planCases(const SweepOptions& opts, const std::vector<Scenario>& scenarios,
                    const std::vector<BarrierHits>& barrierHits) {
  SweepPlan plan;
  try {
    plan = planSweep(scenarios, selectionOf(opts), barrierHits);
  } catch (const std::runtime_error& e) {
    throw SweepError(e.what());
  }
  if (plan.sweepCases == 0)
    throw SweepError("the selection plans no case (check --scenario, --failpoint, --case)");
  if (plan.cases.empty())
    throw SweepError(
        fmt::format("shard {}/{} holds no case (the selection has {} case(s) in "
                    "fewer groups than shards)",
                    opts.shardIndex, opts.shardTotal, plan.sweepCases));
  if (opts.expectCases && static_cast<size_t>(*opts.expectCases) != plan.sweepCases)
    throw SweepError(fmt::format("--expect-cases {}: the selection plans {} case(s)",
                                 *opts.expectCases, plan.sweepCases));
  if (opts.expectManifest) {
    std::string text;
    try {  // a regular file of at most 64 MiB, checked before it is read (a FIFO, /dev/zero)
      text = readBoundedFile(*opts.expectManifest, size_t{64} << 20);
    } catch (const Error& e) {
      throw SweepError("--expect-manifest: " + e.code() + ": " + e.what());
    }
    std::vector<std::string> want;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) want.push_back(line);
    if (reports::manifestDigest(want) != plan.sweepManifestDigest)
      throw SweepError(fmt::format(
          "--expect-manifest {}: the selection plans {} case(s) ({}), the manifest lists {} ({})",
          opts.expectManifest->string(), plan.sweepCases, plan.sweepManifestDigest, want.size(),
          reports::manifestDigest(want)));
  }
  return plan;
}

namespace {

// Failures grouped by failing check, each with its reproduce line (the end of a sweep).
void printRecap(const std::vector<reports::CaseRecord>& cases, bool color) {
  std::map<std::string, std::vector<const reports::CaseRecord*>> byCheck;
  for (const auto& c : cases)
    for (const auto& [k, v] : c.checks)
      if (v.status == "fail") byCheck[k].push_back(&c);
  if (byCheck.empty()) return;
  const char* red = color ? "\033[31m" : "";
  const char* off = color ? "\033[0m" : "";
  std::fprintf(stderr, "%sfailures by verdict%s:\n", red, off);
  for (const auto& [check, list] : byCheck) {
    std::fprintf(stderr, "  %s%s%s — %zu case(s)\n", red, check.c_str(), off, list.size());
    for (const auto* c : list)
      std::fprintf(stderr, "    %s: %s\n      reproduce: %s\n", c->id.c_str(),
                   c->checks.at(check).reason.c_str(), c->reproduce.c_str());
  }
}

}  // namespace

PreparedSweep prepareSweep(const SweepOptions& opts, bool listOnly) {
  PreparedSweep p;
  const std::vector<Scenario> chosen = selectScenarios(opts);
  const bool barriers = plansBarriers(opts);
  // Without barrier cases the plan needs no run, and a malformed selection fails before any.
  if (!barriers) {
    p.plan = planCases(opts, chosen);
    if (listOnly) return p;
  }
  RunOptions& ro = p.ro;
  ro.agent = locateAgent();
  ro.crashsim = locateCrashsim();
  if (ro.agent.empty() || !fs::exists(ro.agent))
    throw SweepError("crashsim-agent not found (build it, or set CRASHSIM_AGENT)");
  fs::path root = defaultWorkRoot(opts.mode) / fmt::format("crashsim-sweep-{}", ::getpid());
  fs::create_directories(root);
  ro.workRoot = root;
  ro.keepFailures = opts.keepFailures;
  ro.mode = opts.mode;
  ro.synchronous = opts.synchronous;
  ro.reproduceExtra = (faultMode(opts.mode).dropsUnsyncedWrites() && opts.synchronous != "FULL"
                           ? " --synchronous " + opts.synchronous
                           : std::string()) +
                      opts.reproduceExtra;
  // Double faults and path mutations start from their primary's crash state.
  ro.keepCrashStates = opts.doubleFaults || opts.pathMutations != "off";
  // The recovery process's own barriers (+R:S#k, +R:F#k) are planned from reference recoveries.
  ro.recoveryBarriers = barriers && opts.doubleFaults && faultMode(opts.mode).isProcessKill();
  p.jobs = opts.jobs > 0 ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
  const int jobs = p.jobs;

  // Reference runs (parallel) of the scenarios the plan uses (all of them when barrier cases
  // are planned from their counts); each must reach exactly the predicted hits, or the plan
  // (made from the prediction) is not the sweep the runtime needs.
  std::vector<bool> used(chosen.size(), barriers);
  for (const auto& pc : p.plan.cases) used[pc.scenario] = true;
  std::vector<Reference>& refs = p.refs;
  refs.resize(chosen.size());
  {
    std::atomic<size_t> next{0};
    std::vector<std::jthread> ts;  // joined on unwinding too (a failed thread start)
    for (int t = 0; t < jobs; ++t)
      ts.emplace_back([&] {
        for (size_t i; (i = next++) < chosen.size();) {
          refs[i].scenario = chosen[i];
          if (!used[i]) continue;
          try {
            refs[i] = buildReference(chosen[i], ro);
          } catch (const std::exception& e) {
            refs[i].problem = std::string("reference run: ") + e.what();
          }
        }
      });
    for (auto& t : ts) t.join();
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!used[i]) continue;
    if (!refs[i].problem.empty()) {
      std::error_code ec;
      fs::remove_all(root, ec);
      throw SweepError(fmt::format("scenario {}: {}", refs[i].scenario.id, refs[i].problem));
    }
  }
  if (barriers) {
    std::vector<BarrierHits> counts;
    for (const auto& r : refs)
      counts.push_back(
          {r.hits[points::S], r.hits[points::F], r.hits[points::G], r.recoveryBarriers});
    try {
      p.plan = planCases(opts, chosen, counts);
    } catch (...) {
      std::error_code ec;
      fs::remove_all(root, ec);
      throw;
    }
  }
  return p;
}

namespace {

// The cases in run order: double faults and path mutations wait for their primary (they start
// from its crash state); one whose primary is not selected kills the agent run itself.
struct CaseQueue {
  std::deque<PlannedCase> ready;
  std::map<CaseId, std::vector<PlannedCase>> waiting;  // primary → the cases it releases

  explicit CaseQueue(const SweepPlan& plan) {
    std::set<CaseId> primaries;
    for (const auto& pc : plan.cases)
      if (!pc.id.startsFromPrimary()) primaries.insert(pc.id);
    for (const auto& pc : plan.cases) {
      const CaseId primary = pc.id.primary();
      if (pc.id.startsFromPrimary() && primaries.count(primary))
        waiting[primary].push_back(pc);
      else
        ready.push_back(pc);
    }
  }
  // `id` ran: the cases that start from its crash state may run now.
  void release(const CaseId& id) {
    if (auto it = waiting.find(id); it != waiting.end()) {
      for (auto& d : it->second) ready.push_back(d);
      waiting.erase(it);
    }
  }
};

// One case and, when sampled for V9, its second run compared with the first.
CaseOutcome runCaseChecked(const PlannedCase& item, const Reference& ref, const RunOptions& ro,
                           bool sampled) {
  CaseOutcome oc = guardedRunCase(item.id, ref, ro);
  if (!sampled) return oc;
  RunOptions again = ro;
  again.keepFailures = false;
  again.keepCrashStates = false;
  CaseOutcome second = guardedRunCase(item.id, ref, again);
  oc.record.checks["V9"] = determinismCheck(oc.record.checks, second.record.checks);
  oc.record.phasesMs["determinism"] = second.record.durationMs;
  if (oc.record.checks["V9"].status == "fail") oc.record.verdict = "fail";
  return oc;
}

// The case workers: `jobs` threads take cases from the queue until none is ready and none runs;
// progress on stderr, each failure as it happens.
class CaseWorkers {
 public:
  CaseWorkers(const SweepOptions& opts, const PreparedSweep& prepared,
              std::chrono::steady_clock::time_point wallStart)
      : opts_(opts),
        prepared_(prepared),
        queue_(prepared.plan),
        total_(prepared.plan.cases.size()),
        wallStart_(wallStart),
        lastPrint_(std::chrono::steady_clock::now()) {}

  std::vector<reports::CaseRecord> run() {
    {
      std::vector<std::jthread> ts;  // joined on unwinding too (a failed thread start)
      for (int t = 0; t < prepared_.jobs; ++t) ts.emplace_back([this] { work(); });
    }
    progress(true);
    if (opts_.progressTty) std::fprintf(stderr, "\n");
    return std::move(done_);
  }

 private:
  // V9 sample: first hit of every (scenario, failpoint).
  bool sampled(const CaseId& id) const {
    if (opts_.skipDeterminism) return false;
    return opts_.verifyDeterminism || (!id.startsFromPrimary() && id.hit == 1);
  }

  void work() {
    for (;;) {
      PlannedCase item;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [&] { return !queue_.ready.empty() || inFlight_ == 0; });
        if (queue_.ready.empty()) return;
        item = queue_.ready.front();
        queue_.ready.pop_front();
        ++inFlight_;
      }
      CaseOutcome oc =
          runCaseChecked(item, prepared_.refs[item.scenario], prepared_.ro, sampled(item.id));
      std::lock_guard lk(mu_);
      --inFlight_;
      queue_.release(item.id);
      if (oc.record.verdict == "fail") printFailure(oc);
      done_.push_back(std::move(oc.record));
      progress(false);
      cv_.notify_all();
    }
  }

  void printFailure(const CaseOutcome& oc) {
    ++failures_;
    const char* red = opts_.color ? "\033[31m" : "";
    const char* off = opts_.color ? "\033[0m" : "";
    std::string why;
    for (auto& [k, v] : oc.record.checks)
      if (v.status == "fail") why += fmt::format(" {}: {};", k, v.reason);
    if (opts_.progressTty) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "%sFAIL%s %s —%s\n  reproduce: %s%s\n", red, off, oc.record.id.c_str(),
                 why.c_str(), oc.record.reproduce.c_str(),
                 oc.keptAt.empty() ? "" : ("\n  kept: " + oc.keptAt.string()).c_str());
  }

  void progress(bool force) {
    auto now = std::chrono::steady_clock::now();
    const auto every = opts_.progressTty ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
    if (!force && now - lastPrint_ < every) return;
    lastPrint_ = now;
    double secs = std::chrono::duration<double>(now - wallStart_).count();
    double rate = secs > 0 ? done_.size() / secs : 0;
    if (opts_.progressTty) {
      double eta = rate > 0 ? (total_ - done_.size()) / rate : 0;
      std::fprintf(stderr, "\r\033[K[%zu/%zu] failures %zu  %.1f cases/s  ETA %.0fs", done_.size(),
                   total_, failures_, rate, eta);
    } else {
      std::fprintf(stderr, "crashsim sweep: %zu/%zu cases, %zu failed, %.1f s\n", done_.size(),
                   total_, failures_, secs);
    }
    std::fflush(stderr);
  }

  const SweepOptions& opts_;
  const PreparedSweep& prepared_;
  std::mutex mu_;
  std::condition_variable cv_;
  CaseQueue queue_;
  std::vector<reports::CaseRecord> done_;
  const size_t total_;
  size_t failures_ = 0, inFlight_ = 0;
  const std::chrono::steady_clock::time_point wallStart_;
  std::chrono::steady_clock::time_point lastPrint_;
};

// The report of the cases that ran: platform, selection, coverage, manifest, summary.
reports::Report assembleReport(const SweepOptions& opts, const PreparedSweep& prepared,
                               std::vector<reports::CaseRecord> done,
                               std::chrono::steady_clock::time_point wallStart) {
  const SweepPlan& plan = prepared.plan;
  reports::Report rep;
  rep.crashsimVersion = std::string(reports::crashsimVersion());
  rep.platform = describePlatform(prepared.ro.workRoot, prepared.refs);
  if (faultMode(opts.mode).dropsUnsyncedWrites()) rep.platform.synchronous = opts.synchronous;
  rep.selection.scenarios = opts.scenarios;
  rep.selection.failpoints = opts.failpoints;
  rep.selection.caseGlobs = opts.caseGlobs;
  rep.selection.mode = opts.mode;
  rep.selection.doubleFaults = opts.doubleFaults;
  rep.selection.seed = opts.seed;
  rep.shards = {{opts.shardIndex, opts.shardTotal}};
  rep.cases = std::move(done);
  rep.coverage = coverageOf(plan, rep.cases);
  rep.manifest = reports::Manifest{static_cast<int>(plan.cases.size()), plan.manifestDigest,
                                   static_cast<int>(plan.sweepCases), plan.sweepManifestDigest};
  reports::sortCases(rep);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
  reports::finalizeSummary(rep, wall, prepared.jobs);
  return rep;
}

// The end of a sweep on stderr: the failures by verdict, the summary and the budget line.
void printSweepEnd(const reports::Report& rep, bool color) {
  const char* red = color ? "\033[31m" : "";
  const char* off = color ? "\033[0m" : "";
  printRecap(rep.cases, color);
  std::fprintf(stderr,
               "crashsim sweep: %d cases, %d passed, %s%d failed%s; %.1f cases/s, median %.1f ms, "
               "p95 %.1f ms, wall %.1f s\n",
               rep.summary.total, rep.summary.passed, rep.summary.failed ? red : "",
               rep.summary.failed, rep.summary.failed ? off : "", rep.summary.casesPerSecond,
               rep.summary.medianCaseMs, rep.summary.p95CaseMs, rep.summary.wallSeconds);
  std::fprintf(stderr, "%s\n", reports::budgetLine(rep).c_str());
}

// Every planned case ran (a case the plan made and the sweep lost is an error, not a pass).
void requireNothingSkipped(const reports::Report& rep) {
  for (const auto& row : rep.coverage)
    if (row.skipped() != 0)
      throw SweepError(fmt::format("{} {} {}: {} planned case(s) did not run", row.scenario,
                                   row.process, row.failpoint, row.skipped()));
}

}  // namespace

reports::Report runSweep(const SweepOptions& opts) {
  auto wallStart = std::chrono::steady_clock::now();
  PreparedSweep prepared = prepareSweep(opts, false);
  std::vector<reports::CaseRecord> done = CaseWorkers(opts, prepared, wallStart).run();
  reports::Report rep = assembleReport(opts, prepared, std::move(done), wallStart);
  std::error_code ec;
  if (!opts.keepFailures || rep.summary.failed == 0) fs::remove_all(prepared.ro.workRoot, ec);
  printSweepEnd(rep, opts.color);
  if (opts.out) {
    reports::writeAll(rep, *opts.out);
    std::fprintf(stderr, "reports: %s/{report.json,junit.xml,report.md,report.html}\n",
                 opts.out->c_str());
  }
  requireNothingSkipped(rep);
  return rep;
}

}  // namespace crashsim::harness
