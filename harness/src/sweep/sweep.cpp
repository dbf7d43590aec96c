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
      counts.push_back({r.hits[points::S], r.hits[points::F], r.recoveryBarriers});
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

reports::Report runSweep(const SweepOptions& opts) {
  auto wallStart = std::chrono::steady_clock::now();
  PreparedSweep prepared = prepareSweep(opts, false);
  const SweepPlan& plan = prepared.plan;
  const RunOptions& ro = prepared.ro;
  const std::vector<Reference>& refs = prepared.refs;
  const fs::path root = ro.workRoot;
  const int jobs = prepared.jobs;

  // V9 sample: first hit of every (scenario, failpoint).
  auto sampled = [&](const CaseId& id) {
    if (opts.skipDeterminism) return false;
    return opts.verifyDeterminism || (!id.startsFromPrimary() && id.hit == 1);
  };

  // Double faults and path mutations wait for their primary (they start from its crash state);
  // one whose primary is not selected kills the agent run itself.
  std::deque<PlannedCase> queue;
  std::map<CaseId, std::vector<PlannedCase>> waiting;
  {
    std::set<CaseId> primaries;
    for (const auto& pc : plan.cases)
      if (!pc.id.startsFromPrimary()) primaries.insert(pc.id);
    for (const auto& pc : plan.cases) {
      const CaseId primary = pc.id.primary();
      if (pc.id.startsFromPrimary() && primaries.count(primary))
        waiting[primary].push_back(pc);
      else
        queue.push_back(pc);
    }
  }

  std::mutex mu;
  std::vector<reports::CaseRecord> done;
  const size_t total = plan.cases.size();
  size_t failures = 0, inFlight = 0;
  std::condition_variable cv;
  auto lastPrint = std::chrono::steady_clock::now();
  const char* red = opts.color ? "\033[31m" : "";
  const char* off = opts.color ? "\033[0m" : "";

  auto progress = [&](bool force) {
    auto now = std::chrono::steady_clock::now();
    const auto every = opts.progressTty ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
    if (!force && now - lastPrint < every) return;
    lastPrint = now;
    double secs = std::chrono::duration<double>(now - wallStart).count();
    double rate = secs > 0 ? done.size() / secs : 0;
    if (opts.progressTty) {
      double eta = rate > 0 ? (total - done.size()) / rate : 0;
      std::fprintf(stderr, "\r\033[K[%zu/%zu] failures %zu  %.1f cases/s  ETA %.0fs", done.size(),
                   total, failures, rate, eta);
    } else {
      std::fprintf(stderr, "crashsim sweep: %zu/%zu cases, %zu failed, %.1f s\n", done.size(),
                   total, failures, secs);
    }
    std::fflush(stderr);
  };

  auto worker = [&] {
    for (;;) {
      PlannedCase item;
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return !queue.empty() || inFlight == 0; });
        if (queue.empty()) return;
        item = queue.front();
        queue.pop_front();
        ++inFlight;
      }
      const Reference& ref = refs[item.scenario];
      CaseOutcome oc = guardedRunCase(item.id, ref, ro);
      if (sampled(item.id)) {
        RunOptions again = ro;
        again.keepFailures = false;
        again.keepCrashStates = false;
        CaseOutcome second = guardedRunCase(item.id, ref, again);
        oc.record.checks["V9"] = determinismCheck(oc.record.checks, second.record.checks);
        oc.record.phasesMs["determinism"] = second.record.durationMs;
        if (oc.record.checks["V9"].status == "fail") oc.record.verdict = "fail";
      }
      std::lock_guard lk(mu);
      --inFlight;
      if (auto it = waiting.find(item.id); it != waiting.end()) {
        for (auto& d : it->second) queue.push_back(d);
        waiting.erase(it);
      }
      if (oc.record.verdict == "fail") {
        ++failures;
        std::string why;
        for (auto& [k, v] : oc.record.checks)
          if (v.status == "fail") why += fmt::format(" {}: {};", k, v.reason);
        if (opts.progressTty) std::fprintf(stderr, "\r\033[K");
        std::fprintf(stderr, "%sFAIL%s %s —%s\n  reproduce: %s%s\n", red, off, oc.record.id.c_str(),
                     why.c_str(), oc.record.reproduce.c_str(),
                     oc.keptAt.empty() ? "" : ("\n  kept: " + oc.keptAt.string()).c_str());
      }
      done.push_back(std::move(oc.record));
      progress(false);
      cv.notify_all();
    }
  };
  {
    std::vector<std::jthread> ts;  // joined on unwinding too (a failed thread start)
    for (int t = 0; t < jobs; ++t) ts.emplace_back(worker);
  }
  progress(true);
  if (opts.progressTty) std::fprintf(stderr, "\n");

  reports::Report rep;
  rep.crashsimVersion = std::string(reports::crashsimVersion());
  rep.platform = describePlatform(root, refs);
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
  reports::finalizeSummary(rep, wall, jobs);
  std::error_code ec;
  if (!opts.keepFailures || rep.summary.failed == 0) fs::remove_all(root, ec);
  printRecap(rep.cases, opts.color);
  std::fprintf(stderr,
               "crashsim sweep: %d cases, %d passed, %s%d failed%s; %.1f cases/s, median %.1f ms, "
               "p95 %.1f ms, wall %.1f s\n",
               rep.summary.total, rep.summary.passed, rep.summary.failed ? red : "",
               rep.summary.failed, rep.summary.failed ? off : "", rep.summary.casesPerSecond,
               rep.summary.medianCaseMs, rep.summary.p95CaseMs, rep.summary.wallSeconds);
  std::fprintf(stderr, "%s\n", reports::budgetLine(rep).c_str());
  if (opts.out) {
    reports::writeAll(rep, *opts.out);
    std::fprintf(stderr, "reports: %s/{report.json,junit.xml,report.md,report.html}\n",
                 opts.out->c_str());
  }
  for (const auto& row : rep.coverage)
    if (row.skipped() != 0)
      throw SweepError(fmt::format("{} {} {}: {} planned case(s) did not run", row.scenario,
                                   row.process, row.failpoint, row.skipped()));
  return rep;
}

}  // namespace crashsim::harness
