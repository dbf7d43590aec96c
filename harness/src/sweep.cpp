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
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "crashsim/harness/powerloss_checks.h"
#include "crashsim/harness/supervisor.h"

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

// A harness-side exception (I/O on the temp dir, ...) becomes a failed case, never a crash.
CaseOutcome guardedRunCase(const CaseId& id, const Reference& ref, const RunOptions& ro) {
  try {
    return runCase(id, ref, ro);
  } catch (const std::exception& e) {
    CaseOutcome oc;
    oc.record.id = id.str();
    oc.record.scenario = id.scenario;
    oc.record.failpoint = id.failpointName();
    oc.record.hit = id.hit;
    oc.record.mode = id.mode;
    if (id.recoveryFailpoint) {
      oc.record.recoveryFailpoint = failpointName(*id.recoveryFailpoint);
      oc.record.recoveryHit = id.recoveryHit.value_or(1);
    }
    for (auto n : reports::kCheckNames) oc.record.checks[std::string(n)] = {"n/a", "case aborted"};
    oc.record.checks["V1"] = {"fail", std::string("case aborted: ") + e.what()};
    oc.record.verdict = "fail";
    oc.record.reproduce = reproduceLine(id, ro);
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

reports::Report runSweep(const SweepOptions& opts) {
  auto wallStart = std::chrono::steady_clock::now();
  RunOptions ro;
  ro.agent = locateAgent();
  if (ro.agent.empty() || !fs::exists(ro.agent))
    throw std::runtime_error("crashsim-agent not found (build it, or set CRASHSIM_AGENT)");
  fs::path root = defaultWorkRoot(opts.mode) / fmt::format("crashsim-sweep-{}", ::getpid());
  fs::create_directories(root);
  ro.workRoot = root;
  ro.keepFailures = opts.keepFailures;
  ro.mode = opts.mode;
  ro.synchronous = opts.synchronous;
  ro.reproduceExtra =
      (opts.mode == "powerloss" && opts.synchronous != "FULL" ? " --synchronous " + opts.synchronous
                                                              : std::string()) +
      opts.reproduceExtra;
  ro.keepCrashStates = opts.doubleFaults;

  auto all = loadScenarioDir(opts.scenarioDir);
  for (const auto& want : opts.scenarios) {
    if (std::none_of(all.begin(), all.end(), [&](const Scenario& s) { return s.id == want; }))
      throw std::runtime_error("unknown scenario " + want);
  }
  for (const auto& fp : opts.failpoints)
    if (fp.size() < 2 || fp[0] != 'P' ||
        fp.find_first_not_of("0123456789", 1) != std::string::npos || std::stoi(fp.substr(1)) > 11)
      throw std::runtime_error("unknown failpoint " + fp);

  // Reference runs (parallel across scenarios).
  std::vector<Scenario> chosen;
  for (const auto& s : all)
    if (selected(opts.scenarios, s.id)) chosen.push_back(s);
  std::vector<Reference> refs(chosen.size());
  {
    std::atomic<size_t> next{0};
    std::vector<std::thread> ts;
    int jobs = opts.jobs > 0 ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
    for (int t = 0; t < jobs; ++t)
      ts.emplace_back([&] {
        for (size_t i; (i = next++) < chosen.size();) {
          try {
            refs[i] = buildReference(chosen[i], ro);
          } catch (const std::exception& e) {
            refs[i].scenario = chosen[i];
            refs[i].problem = std::string("reference run: ") + e.what();
          }
        }
      });
    for (auto& t : ts) t.join();
  }
  for (const auto& r : refs)
    if (!r.problem.empty())
      throw std::runtime_error(fmt::format("scenario {}: {}", r.scenario.id, r.problem));

  // Plan primary cases.
  std::vector<std::pair<CaseId, const Reference*>> primary;
  for (const auto& r : refs)
    for (int fp = 0; fp < 12; ++fp) {
      if (!selected(opts.failpoints, failpointName(fp))) continue;
      for (int h = 1; h <= r.hits[fp]; ++h) {
        CaseId id;
        id.scenario = r.scenario.id;
        id.failpoint = fp;
        id.hit = h;
        id.mode = opts.mode;
        if (opts.mode != "powerloss") {
          primary.push_back({id, &r});
          continue;
        }
        for (uint64_t seed : powerlossSeeds(id, opts.seed, opts.states)) {
          id.seed = seed;
          primary.push_back({id, &r});
        }
      }
    }
  std::sort(primary.begin(), primary.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::pair<CaseId, const Reference*>> mine;
  for (size_t i = 0; i < primary.size(); ++i)
    if (static_cast<int>(i % static_cast<size_t>(opts.shardTotal)) == opts.shardIndex)
      mine.push_back(primary[i]);

  // V9 sample: first hit of every (scenario, failpoint).
  auto sampled = [&](const CaseId& id) {
    return opts.verifyDeterminism || (!id.isDoubleFault() && id.hit == 1);
  };

  std::mutex mu;
  std::deque<std::pair<CaseId, const Reference*>> queue(mine.begin(), mine.end());
  std::vector<reports::CaseRecord> done;
  size_t total = queue.size(), failures = 0, inFlight = 0;
  std::condition_variable cv;
  auto lastPrint = std::chrono::steady_clock::now() - std::chrono::seconds(1);

  auto progress = [&](bool force) {
    if (!opts.progressTty) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - lastPrint < std::chrono::milliseconds(200)) return;
    lastPrint = now;
    double secs = std::chrono::duration<double>(now - wallStart).count();
    double rate = secs > 0 ? done.size() / secs : 0;
    double eta = rate > 0 ? (total - done.size()) / rate : 0;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] failures %zu  %.1f cases/s  ETA %.0fs", done.size(),
                 total, failures, rate, eta);
    std::fflush(stderr);
  };

  auto worker = [&] {
    for (;;) {
      std::pair<CaseId, const Reference*> item;
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return !queue.empty() || inFlight == 0; });
        if (queue.empty()) return;
        item = queue.front();
        queue.pop_front();
        ++inFlight;
      }
      CaseOutcome oc = guardedRunCase(item.first, *item.second, ro);
      if (sampled(item.first)) {
        RunOptions again = ro;
        again.keepFailures = false;
        again.keepCrashStates = false;
        CaseOutcome second = guardedRunCase(item.first, *item.second, again);
        auto strip = [](std::map<std::string, reports::Check> m) {
          m.erase("V9");
          return m;
        };
        if (strip(second.record.checks) == strip(oc.record.checks)) {
          oc.record.checks["V9"] = reports::Check{"pass", ""};
        } else {
          std::string which;
          for (auto& [k, v] : strip(oc.record.checks))
            if (!(second.record.checks[k] == v)) which += (which.empty() ? "" : ", ") + k;
          oc.record.checks["V9"] =
              reports::Check{"fail", "a second run gave a different verdict for " + which};
          oc.record.verdict = "fail";
        }
      }
      std::lock_guard lk(mu);
      --inFlight;
      if (opts.doubleFaults && !item.first.isDoubleFault() && oc.haveRecoveryHits) {
        for (int rfp : {8, 9, 10, 11})
          for (int h = 1; h <= oc.recoveryHits[rfp]; ++h) {
            CaseId d = item.first;
            d.recoveryFailpoint = rfp;
            d.recoveryHit = h;
            queue.push_back({d, item.second});
            ++total;
          }
      }
      if (oc.record.verdict == "fail") {
        ++failures;
        std::string why;
        for (auto& [k, v] : oc.record.checks)
          if (v.status == "fail") why += fmt::format(" {}: {};", k, v.reason);
        if (opts.progressTty) std::fprintf(stderr, "\r\033[K");
        std::fprintf(stderr, "FAIL %s —%s\n  reproduce: %s%s\n", oc.record.id.c_str(), why.c_str(),
                     oc.record.reproduce.c_str(),
                     oc.keptAt.empty() ? "" : ("\n  kept: " + oc.keptAt.string()).c_str());
      }
      done.push_back(std::move(oc.record));
      progress(false);
      cv.notify_all();
    }
  };
  int jobs = opts.jobs > 0 ? opts.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> ts;
  for (int t = 0; t < jobs; ++t) ts.emplace_back(worker);
  for (auto& t : ts) t.join();
  progress(true);
  if (opts.progressTty) std::fprintf(stderr, "\n");

  reports::Report rep;
  rep.crashsimVersion = std::string(reports::crashsimVersion());
  rep.platform = describePlatform(root, refs);
  if (opts.mode == "powerloss") rep.platform.synchronous = opts.synchronous;
  rep.selection.scenarios = opts.scenarios;
  rep.selection.failpoints = opts.failpoints;
  rep.selection.mode = opts.mode;
  rep.selection.doubleFaults = opts.doubleFaults;
  rep.selection.seed = opts.seed;
  rep.shards = {{opts.shardIndex, opts.shardTotal}};
  rep.cases = std::move(done);
  reports::sortCases(rep);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
  reports::finalizeSummary(rep, wall);
  std::error_code ec;
  if (!opts.keepFailures || rep.summary.failed == 0) fs::remove_all(root, ec);
  std::fprintf(stderr,
               "crashsim sweep: %d cases, %d passed, %d failed; %.1f cases/s, median %.1f ms, p95 "
               "%.1f ms, wall %.1f s\n",
               rep.summary.total, rep.summary.passed, rep.summary.failed,
               rep.summary.casesPerSecond, rep.summary.medianCaseMs, rep.summary.p95CaseMs,
               rep.summary.wallSeconds);
  if (opts.out) {
    reports::writeAll(rep, *opts.out);
    std::fprintf(stderr, "reports: %s/{report.json,junit.xml,report.md,report.html}\n",
                 opts.out->c_str());
  }
  return rep;
}

}  // namespace crashsim::harness
