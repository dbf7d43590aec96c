// The commands of `crashsim` beside the sweep and the store and ledger tools: run one case,
// the scenario catalogue, --version, report merge, durability (cli/commands.h).
#include "cli/commands.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/durability.h"
#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/harness/sweep.h"
#include "crashsim/json.h"
#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"
#include "verdicts/stop.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

// --out is prepared before any work starts: the directory is created (with its parents) and a
// probe file is written and removed in it, so an output that cannot be written fails at once,
// not after the work (a read-only file system, /proc, a parent that is a file).
void prepareOut(const std::string& out) {
  if (out.empty()) return;
  auto fail = [&](const std::string& why) {
    throw UsageError(fmt::format("{}: --out {}: {}", code::output_unwritable, out, why));
  };
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) fail(ec.message());
  if (!fs::is_directory(out, ec)) fail("not a directory");
  const fs::path probe = fs::path(out) / fmt::format(".crashsim-probe-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail(std::strerror(errno));
  const bool wrote = ::write(fd, "x", 1) == 1;
  const int err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) fail(std::strerror(err));
}

int cmdScenarios(const fs::path& dir, bool json) {
  auto all = loadScenarioDir(dir);
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : all) {
      nlohmann::json calls = nlohmann::json::array();
      for (const auto& c : s.calls)
        calls.push_back({{"id", c.id}, {"name", c.name}, {"refused", c.refused}});
      out.push_back({{"id", s.id},
                     {"description", s.description},
                     {"file", s.file.filename().string()},
                     {"tools", s.tools},
                     {"calls", calls}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  for (const auto& s : all) {
    std::string calls;
    for (const auto& c : s.calls)
      calls += (calls.empty() ? "" : ", ") + c.name + (c.refused ? " (refused)" : "");
    std::cout << fmt::format("{:<22} {} call(s): {}\n  {}\n", s.id, s.calls.size(), calls,
                             s.description);
  }
  return 0;
}

namespace {

// The points a count reaches, "P0#1-2, P1#1" ("no failpoint" when none).
std::string reachList(const PointCounts& h) {
  std::string list;
  for (CrashPoint fp : CrashPoint::all())
    if (h[fp] > 0)
      list += fmt::format("{}{}#1{}", list.empty() ? "" : ", ", fp.name(),
                          h[fp] > 1 ? fmt::format("-{}", h[fp]) : "");
  return list.empty() ? std::string("no failpoint") : list;
}

// The case must be one the sweep would plan (the oracle's prediction); otherwise UsageError says
// which are.
void requirePlanned(const CaseId& id, const Scenario& sc) {
  // The agent run's kill points: a legacy store's import (P16, P17), else P0..P9 and the
  // checkpoint captures P18..P22 (plan.cpp).
  PointCounts hits;
  if (sc.spec.legacyStore) {
    hits[points::P16] = hits[points::P17] = predictedImportBatches(sc);
  } else {
    const auto p = predictedHits(sc);
    for (CrashPoint fp : pointRange(points::P0, points::P9)) hits[fp] = p[fp];
    for (CrashPoint fp : pointRange(points::P18, points::P22)) hits[fp] = p[fp];  // captures
    if (const auto restore = predictedRestore(sc))  // the isolated restore (P23..P26)
      for (CrashPoint fp : restore->failpoints) hits[fp] = 1;
    if (const auto rebaseline = predictedRebaseline(sc))  // the confirmed rebaseline (P27..P29)
      for (CrashPoint fp : rebaseline->failpoints) hits[fp] = 1;
    if (predictedGc(sc)) hits[points::P30] = 1;  // the recovery's carrier GC (P30)
  }
  if ((!id.isBarrier() || sc.spec.legacyStore) && id.hit > hits[id.failpoint])
    throw UsageError(fmt::format("case {} is never reached: {} reaches {}", id.str(), id.scenario,
                                 reachList(hits)));
  if (id.isStopDoubleFault() && id.failpoint > points::P7)
    throw UsageError(
        fmt::format("case {} is never reached: a Stop at {} reaches no "
                    "termination batch (the run's own terminal stands)",
                    id.str(), id.failpointName()));
  if (id.stopGrace && stop::holdingHit(sc) != id.hit)
    throw UsageError(fmt::format(
        "case {} is never planned: {} has no Bash call honouring $CRASHSIM_TOOL_HOLD at P2#{}{}",
        id.str(), id.scenario, id.hit,
        stop::holdingHit(sc) ? fmt::format(" (its watchdog case is P2#{})", *stop::holdingHit(sc))
                             : std::string()));
  if (id.isDoubleFault()) {
    const auto rhits = predictedRecoveryHits(sc, id.failpoint, id.hit);
    if (id.recoveryHit.value_or(1) > rhits[*id.recoveryFailpoint])
      throw UsageError(fmt::format("case {} is never reached: the recovery of {} reaches {}",
                                   id.str(), id.str().substr(0, id.str().find('+')),
                                   reachList(rhits)));
  }
}

}  // namespace

int cmdRun(const std::string& caseText, const std::string& keep, const fs::path& scenarioDir,
           const std::string& extra, const std::string& synchronous) {
  CaseId id;
  try {
    id = parseCaseId(caseText);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  auto all = loadScenarioDir(scenarioDir);
  auto it =
      std::find_if(all.begin(), all.end(), [&](const Scenario& s) { return s.id == id.scenario; });
  if (it == all.end()) throw UsageError("unknown scenario " + id.scenario);
  requirePlanned(id, *it);
  RunOptions ro;
  ro.agent = locateAgent();
  ro.crashsim = locateCrashsim();
  if (ro.agent.empty() || !fs::exists(ro.agent))
    throw UsageError("crashsim-agent not found (set CRASHSIM_AGENT)");
  ro.workRoot = defaultWorkRoot(id.mode) / fmt::format("crashsim-run-{}", ::getpid());
  fs::create_directories(ro.workRoot);
  // The scratch goes on every way out (a refusal, an exception): only --keep's case stays.
  struct RemoveScratch {
    fs::path dir;
    ~RemoveScratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } scratch{ro.workRoot};
  ro.verbose = true;
  ro.keepDir = keep.empty()
                   ? fs::temp_directory_path() / fmt::format("crashsim-run-{}-case", ::getpid())
                   : fs::path(keep);
  if (fs::exists(*ro.keepDir) && !fs::is_empty(*ro.keepDir) && !fs::exists(*ro.keepDir / "store"))
    throw UsageError("--keep " + ro.keepDir->string() +
                     " exists and is not an earlier case directory");
  ro.mode = id.mode;
  ro.synchronous = synchronous;
  ro.reproduceExtra = (faultMode(id.mode).dropsUnsyncedWrites() && synchronous != "FULL"
                           ? " --synchronous " + synchronous
                           : "") +
                      extra;
  Reference ref = buildReference(*it, ro);
  if (!ref.problem.empty()) {
    std::cerr << "crashsim run: scenario " << it->id << ": " << ref.problem << "\n";
    return 2;
  }
  if (id.isBarrier() && id.hit > ref.hits[id.failpoint]) {
    throw UsageError(
        fmt::format("case {} is never reached: the reference run of {} reaches {}#1-{}", id.str(),
                    id.scenario, id.failpointName(), ref.hits[id.failpoint]));
  }
  const CaseOutcome oc = runCase(id, ref, ro);
  std::cout << "case " << oc.record.id << "\n";
  for (const auto& l : oc.log) std::cout << "  " << l << "\n";
  for (const auto& [k, v] : oc.record.checks)
    std::cout << fmt::format("  {} {}{}\n", k, v.status, v.reason.empty() ? "" : " — " + v.reason);
  std::cout << "verdict: " << oc.record.verdict << " ("
            << fmt::format("{:.1f}", oc.record.durationMs) << " ms)\n";
  std::cout << "case directory: " << oc.keptAt.string() << "\n";
  std::cout << "inspect the store after recovery: crashsim inspect "
            << (oc.keptAt / "store").string() << "\n";
  if (fs::exists(oc.keptAt / "crashed" / "store"))
    std::cout << "inspect the crashed store (what recovery started from): crashsim inspect "
              << (oc.keptAt / "crashed" / "store").string() << "\n";
  if (oc.record.verdict != "pass") std::cout << "reproduce: " << oc.record.reproduce << "\n";
  return oc.record.verdict == "pass" ? 0 : 1;
}

// crashsim --version: this build, and the agent it would drive (its own --version line).
int printVersion() {
  std::cout << "crashsim " << reports::crashsimVersion() << " (" << CRASHSIM_BUILD_TYPE << ")\n";
  fs::path agent = locateAgent();
  if (agent.empty() || !fs::exists(agent)) {
    std::cout << "agent: not found (build crashsim-agent, or set CRASHSIM_AGENT)\n";
    return 0;
  }
  SpawnSpec spec;
  spec.exe = agent;
  spec.args = {"--version"};
  auto tmp = fs::temp_directory_path() / fmt::format("crashsim-version-{}", ::getpid());
  spec.stdoutFile = tmp;
  spec.timeout = std::chrono::milliseconds(5000);
  auto r = runToEnd(spec);
  std::ifstream in(tmp);
  std::string line;
  std::getline(in, line);
  std::error_code ec;
  fs::remove(tmp, ec);
  std::cout << "agent: " << (r.exited && r.exitCode == 0 && !line.empty() ? line : r.describe())
            << " (" << agent.string() << ")\n";
  return 0;
}

int cmdDurability(DurabilityOptions opts, const std::string& out) {
  auto t0 = std::chrono::steady_clock::now();
  auto doc = runDurability(opts);
  fs::path dir = out.empty() ? fs::path(".") : fs::path(out);
  writeDurability(doc, dir);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << fmt::format(
      "crashsim durability: wall {:.1f} s → {}/{{durability.json,durability.md,durability.html}}\n",
      wall, dir.string());
  return durabilityExitCode(doc);
}

namespace {

// A report `report merge` reads or writes must follow its schema (report.schema.json or
// durability.schema.json): a usage error naming the first violation otherwise.
void requireSchema(bool durability, const nlohmann::json& doc, const std::string& what) {
  const auto violations = reports::validateSchema(
      durability ? reports::durabilitySchema() : reports::reportSchema(), doc);
  if (violations.empty()) return;
  throw UsageError(fmt::format("{}: report_schema_violation: {} {} (and {} more)", what,
                               violations.front().path, violations.front().message,
                               violations.size() - 1));
}

}  // namespace

// `crashsim report merge`: sweep shard/platform reports, or durability reports; never both.
int cmdMerge(const std::vector<std::string>& files, const std::string& out) {
  std::vector<nlohmann::json> docs;
  size_t durability = 0;
  for (const auto& f : files) {
    nlohmann::json j;
    try {
      j = parseJson(readInput(f));
    } catch (const Error& e) {
      throw UsageError(f + ": " + e.code() + ": " + e.what());
    }
    const bool isDurability = isDurabilityJson(j);
    requireSchema(isDurability, j, f);
    durability += isDurability ? 1 : 0;
    docs.push_back(std::move(j));
  }
  if (durability > 0 && durability < docs.size())
    throw UsageError(
        "cannot merge a sweep report (report.json) with a durability report (durability.json); "
        "merge each kind separately");
  if (durability > 0) {
    nlohmann::json merged;
    try {
      merged = mergeDurability(docs);
    } catch (const std::runtime_error& e) {
      throw UsageError(fmt::format("report merge: {}: {}", code::report_merge_refused, e.what()));
    }
    requireSchema(true, merged, "the merged durability report");
    writeDurability(merged, out);
    std::cerr << fmt::format("merged {} durability report(s): {} platform(s) → {}\n", docs.size(),
                             merged["platforms"].size(), out);
    return durabilityExitCode(merged);
  }
  std::vector<reports::Report> rs;
  for (const auto& f : files) {
    try {
      rs.push_back(reports::readReportFile(f));
    } catch (const reports::ReportError& e) {
      throw UsageError(fmt::format("{}: {}", code::report_invalid, e.what()));
    }
  }
  reports::Report merged;
  try {
    merged = reports::mergeReports(rs);
  } catch (const reports::ReportError& e) {
    throw UsageError(fmt::format("report merge: {}: {}", code::report_merge_refused, e.what()));
  }
  requireSchema(false, reports::toJson(merged), "the merged report");
  reports::writeAll(merged, out);
  std::cerr << fmt::format("merged {} report(s): {} cases, {} failed → {}\n", rs.size(),
                           merged.summary.total, merged.summary.failed, out);
  // The gate: a failed case, unless an open sweep's baseline lists it as failing just so.
  return std::none_of(merged.cases.begin(), merged.cases.end(), reports::failsGate) ? 0 : 1;
}

}  // namespace crashsim::harness
