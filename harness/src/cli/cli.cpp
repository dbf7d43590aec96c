// The `crashsim` command line: CLI11 wiring only; every command lives in its own file.
#include "crashsim/harness/cli.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/ledger_commands.h"
#include "cli/store_commands.h"
#include "cli/store_script.h"
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

namespace {

// Bounds of the numeric options: a worker is a thread and a child process at a time.
constexpr int kMaxJobs = 256;
constexpr int kMaxShards = 100000;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every numeric option is plain decimal digits, checked on the text before CLI11 converts it
// (which would take 0x4 as 4 and +5 as 5); a value past the option's type is CLI11's range error.
const CLI::Validator kDecimal(
    [](const std::string& v) {
      uint64_t value = 0;
      const auto r = std::from_chars(v.data(), v.data() + v.size(), value);
      return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos &&
                     r.ec == std::errc() && r.ptr == v.data() + v.size()
                 ? std::string()
                 : std::string("must be a decimal number from 0 to 2^64-1");
    },
    "UINT", "decimal");

std::pair<int, int> parseShard(const std::string& s) {
  auto number = [&](std::string_view t, int& v) {
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    return !t.empty() && r.ec == std::errc() && r.ptr == t.data() + t.size();
  };
  const auto slash = s.find('/');
  int i = -1, n = 0;
  if (slash == std::string::npos || !number(std::string_view(s).substr(0, slash), i) ||
      !number(std::string_view(s).substr(slash + 1), n) || n < 1 || n > kMaxShards || i < 0 ||
      i >= n)
    throw UsageError(
        fmt::format("--shard must be I/N with 0 <= I < N <= {}, got {}", kMaxShards, s));
  return {i, n};
}

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

// Standard output must be open before any work: a closed fd 1 would be reused by the first
// file the command opens (a store's database), and the command's output would land in it.
bool stdoutIsOpen() { return ::fcntl(STDOUT_FILENO, F_GETFL) >= 0 || errno != EBADF; }

// Everything written to standard output reached it: flushed, no short write (a full disk, a
// closed pipe).
bool stdoutComplete() {
  std::cout.flush();
  return static_cast<bool>(std::cout);
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
  // The case must be one the sweep would plan (the oracle's prediction); otherwise say which are.
  {
    auto reachList = [](const PointCounts& h) {
      std::string list;
      for (CrashPoint fp : CrashPoint::all())
        if (h[fp] > 0)
          list += fmt::format("{}{}#1{}", list.empty() ? "" : ", ", fp.name(),
                              h[fp] > 1 ? fmt::format("-{}", h[fp]) : "");
      return list.empty() ? std::string("no failpoint") : list;
    };
    // The agent run's kill points: a legacy store's import (P16, P17), else P0..P9 (plan.cpp).
    PointCounts hits;
    if (it->spec.legacyStore) {
      hits[points::P16] = hits[points::P17] = predictedImportBatches(*it);
    } else {
      const auto p = predictedHits(*it);
      for (CrashPoint fp : pointRange(points::P0, points::P9)) hits[fp] = p[fp];
    }
    if ((!id.isBarrier() || it->spec.legacyStore) && id.hit > hits[id.failpoint])
      throw UsageError(fmt::format("case {} is never reached: {} reaches {}", id.str(), id.scenario,
                                   reachList(hits)));
    if (id.isStopDoubleFault() && id.failpoint > points::P7)
      throw UsageError(
          fmt::format("case {} is never reached: a Stop at {} reaches no "
                      "termination batch (the run's own terminal stands)",
                      id.str(), id.failpointName()));
    if (id.stopGrace && stop::holdingHit(*it) != id.hit)
      throw UsageError(fmt::format(
          "case {} is never planned: {} has no Bash call honouring $CRASHSIM_TOOL_HOLD at P2#{}{}",
          id.str(), id.scenario, id.hit,
          stop::holdingHit(*it)
              ? fmt::format(" (its watchdog case is P2#{})", *stop::holdingHit(*it))
              : std::string()));
    if (id.isDoubleFault()) {
      const auto rhits = predictedRecoveryHits(*it, id.failpoint, id.hit);
      if (id.recoveryHit.value_or(1) > rhits[*id.recoveryFailpoint])
        throw UsageError(fmt::format("case {} is never reached: the recovery of {} reaches {}",
                                     id.str(), id.str().substr(0, id.str().find('+')),
                                     reachList(rhits)));
    }
  }
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
  return merged.summary.failed == 0 ? 0 : 1;
}

}  // namespace

namespace {
int runCommand(int argc, char** argv);
}  // namespace

int runCli(int argc, char** argv) {
  if (!stdoutIsOpen()) {
    std::cerr << "crashsim: " << code::output_unwritable
              << ": standard output is closed; nothing was done\n";
    return 2;
  }
  const int rc = runCommand(argc, argv);
  if (!stdoutComplete()) {
    std::cerr << "crashsim: " << code::output_unwritable
              << ": standard output could not be written completely (" << std::strerror(errno)
              << ")\n";
    return 2;
  }
  return rc;
}

namespace {

int runCommand(int argc, char** argv) {
  // The harness links the instrumented runtime (the code under test, so planted faults in its
  // pure components are visible to V4–V7). Its own process must never be armed: arming is
  // for the children it spawns, which get their environment composed by the supervisor.
  for (const char* v : {"CRASHSIM_ARM", "CRASHSIM_CONTROL_FD", "CRASHSIM_HITS_OUT",
                        "CRASHSIM_FAILPOINT_MODE", "CRASHSIM_POWERLOSS"})
    ::unsetenv(v);
  CLI::App app{"crashsim — crash-consistency harness for the durable agent runtime"};
  bool version = false;
  app.add_flag("--version", version, "print crashsim's version and the agent it drives");
  app.require_subcommand(0, 1);
  // Global options (--scenarios) are accepted after the subcommand too, as reproduce lines
  // print them: `crashsim run CASE --keep DIR --scenarios DIR`.
  app.fallthrough();
  std::string scenarioDirOpt;
  app.add_option("--scenarios", scenarioDirOpt,
                 "scenario directory (default $CRASHSIM_SCENARIOS or the built-in scenarios)");
  std::string spawnOpt = "fork-server";
  app.add_option("--spawn", spawnOpt,
                 "how agent children start: fork-server (default: forked by one `crashsim-agent "
                 "serve` per worker) or exec (a fresh exec per child)")
      ->check(CLI::IsMember({"exec", "fork-server"}));

  // sweep
  auto* sweep =
      app.add_subcommand("sweep", "exhaustive crash sweep over every reachable (failpoint, hit)");
  SweepOptions so;
  std::string shard, out;
  sweep->add_option("--scenario", so.scenarios, "scenario id (repeatable)");
  sweep->add_option("--failpoint", so.failpoints,
                    "failpoint P0..P17, or the barriers S / F (repeatable)");
  sweep
      ->add_option("--mode", so.mode,
                   "fault mode: kill (SIGKILL), powerloss (power cut), stop (a Stop request "
                   "instead of the kill, judged by the termination contract), corrupt (a seeded "
                   "damage to the store files after the kill)")
      ->check(CLI::IsMember(faultModeNames()));
  sweep->add_option("--jobs", so.jobs, "parallel workers (default: cores; at most 256)")
      ->check(kDecimal)
      ->check(CLI::Range(1, kMaxJobs));
  sweep->add_option("--shard", shard,
                    "run shard I of N (I/N); default from GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  sweep
      ->add_option("--seed", so.seed,
                   "seed (recorded; powerloss, corrupt: mixed into the state seeds)")
      ->check(kDecimal);
  sweep
      ->add_option("--states", so.states,
                   "powerloss, corrupt: seeded states per (scenario, failpoint, hit) (default 2)")
      ->check(kDecimal)
      ->check(CLI::Range(1, 1000));
  sweep
      ->add_option("--synchronous", so.synchronous,
                   "powerloss: the agent store's PRAGMA synchronous (FULL, or NORMAL to measure "
                   "which acknowledged commits a power cut loses)")
      ->transform(CLI::IsMember({"FULL", "NORMAL"}, CLI::ignore_case));
  sweep->add_option("--out", out, "write report.json, junit.xml, report.md, report.html here");
  sweep->add_flag("--keep-failures", so.keepFailures, "keep the directories of failed cases");
  sweep->add_flag("--double-faults", so.doubleFaults,
                  "also kill the recovery process at P8/P9/P10/P11/P14/P15 hits (--mode stop: the "
                  "stopping process at P12/P13)");
  sweep->add_flag("!--no-barriers", so.barriers,
                  "skip the unnamed barrier cases S#k (store COMMITs) and F#k (file-tool steps)");
  sweep
      ->add_option("--path-mutations", so.pathMutations,
                   "kill mode: the generated changes of every component of a reconciled Write/Edit "
                   "target's path (file, parents, workspace root) between kill and recovery, at P4 "
                   "(p4, the default), at P2-P5 (all), or none (off)")
      ->check(CLI::IsMember({"off", "p4", "all"}));
  sweep->add_flag("--verify-determinism", so.verifyDeterminism,
                  "V9 for every case (default: a sample)");
  sweep->add_option("--case", so.caseGlobs,
                    "case id glob, e.g. 'write-config-port/P4#*' (repeatable; fnmatch)");
  bool listOnly = false;
  sweep->add_flag("--list", listOnly, "print the planned case ids (this shard) and run nothing");
  int expectCases = -1;
  sweep
      ->add_option("--expect-cases", expectCases,
                   "fail (exit 2) unless the selection plans exactly N cases")
      ->check(kDecimal)
      ->check(CLI::NonNegativeNumber);
  std::string expectManifest;
  sweep->add_option("--expect-manifest", expectManifest,
                    "fail (exit 2) unless the selection plans exactly the case ids in FILE "
                    "(one per line, as --list prints them)");

  auto* run = app.add_subcommand("run", "run one case verbosely and keep its directory");
  std::string caseText, keep;
  run->add_option("CASE", caseText, "case id, e.g. write-config-port/P4#1/kill")->required();
  run->add_option("--keep", keep, "case directory to use and keep");
  std::string runSync = "FULL";
  run->add_option("--synchronous", runSync, "powerloss: the agent store's PRAGMA synchronous")
      ->transform(CLI::IsMember({"FULL", "NORMAL"}, CLI::ignore_case));

  auto* inspect =
      app.add_subcommand("inspect", "repair dry run, resolver decisions, plan, lineage of a store");
  std::string storeDir;
  bool json = false;
  inspect->add_option("STORE", storeDir, "store directory")->required();
  inspect->add_flag("--json", json, "JSON output");

  auto* resume = app.add_subcommand(
      "resume", "host start-up: claim saga, reconcile, repair, plan, continue (crashsim/host.h)");
  ResumeArgs resumeArgs;
  resume->add_option("STORE", resumeArgs.storeDir, "store directory")->required();
  resume->add_option("--workspace", resumeArgs.workspaceDir,
                     "the workspace directory (reconcile and the plan's safety observation)");
  resume->add_option("--scenario", resumeArgs.scenarioFile,
                     "scenario JSON: continue the task with its scripted model");
  resume->add_flag("--dry-run", resumeArgs.dryRun,
                   "run the sequence on a private copy: nothing is written");
  resume->add_flag("--json", resumeArgs.json, "JSON output");

  auto* ledger = app.add_subcommand("ledger", "pure ledger tools");
  ledger->require_subcommand(1);
  std::string file;
  std::optional<uint64_t> highWater;
  auto* resolve =
      ledger->add_subcommand("resolve", "resolver decisions + Phase 0 plan of a RuntimeEvent list");
  resolve->add_option("FILE", file, "JSON array or JSON lines; - or absent = stdin");
  resolve->add_option("--expected-high-water", highWater, "expected runtime event high-water");
  bool jsonl = false;
  resolve->add_flag("--jsonl", jsonl, "batch: one ledger (a JSON array) per line, one result each");
  auto* argsHash = ledger->add_subcommand("args-hash", "canonicalArgsHash of strict JSON args");
  std::string tool;
  argsHash->add_option("--tool", tool, "tool name (with --jsonl: of every line)");
  argsHash->add_option("FILE", file, "args JSON; - or absent = stdin");
  argsHash->add_flag("--jsonl", jsonl,
                     "batch: one input per line, {\"toolName\",\"args\"} (args only with --tool)");
  auto* prefix = ledger->add_subcommand("prefix-digest", "prefix digest of {identity, events}");
  prefix->add_option("FILE", file, "input JSON; - or absent = stdin");
  prefix->add_flag("--jsonl", jsonl, "batch: one {identity, events} per line, one digest each");
  auto* exportCmd =
      ledger->add_subcommand("export", "a store's RuntimeEvents as legacy JSONL on stdout");
  std::string exportStoreDir;
  exportCmd->add_option("STORE", exportStoreDir, "store directory")->required();

  auto* planCmd = ledger->add_subcommand(
      "plan-continuation",
      "Phase 1 plan of a document: store script, host facts → the host planner's plan JSON");
  std::string planFile;
  planCmd->add_option("FILE", planFile, "plan document JSON; - or absent = stdin");

  auto* storeCmd = app.add_subcommand("store", "store tools");
  storeCmd->require_subcommand(1);
  auto* execCmd = storeCmd->add_subcommand(
      "exec", "run a JSON script of store calls; one result or error code per call");
  StoreExecArgs execArgs;
  execCmd->add_option("SCRIPT", execArgs.scriptFile, "script JSON; - = stdin")->required();
  execCmd->add_option("--store", execArgs.storeDir,
                      "store directory (created if missing; default: a fresh private store)");
  execCmd->add_option("--barrier", execArgs.barrier,
                      "wait until this file exists before opening the store (races)");
  execCmd
      ->add_option("--lock-timeout", execArgs.lockTimeoutSeconds,
                   "seconds to wait for another host to release the store's host lock (default "
                   "0: refuse at once with host_already_active)")
      ->check(kDecimal)
      ->check(CLI::Range(0, 60));

  auto* salvageCmd = storeCmd->add_subcommand(
      "salvage-wal",
      "rebuild a store whose database file is empty from its -wal, into a new directory");
  std::string salvageStoreDir, salvageOut;
  salvageCmd->add_option("STORE", salvageStoreDir, "the damaged store directory (only read)")
      ->required();
  salvageCmd->add_option("--out", salvageOut, "the new store directory (must not exist)")
      ->required();

  auto* report = app.add_subcommand("report", "report tools");
  report->require_subcommand(1);
  auto* merge = report->add_subcommand("merge", "merge shard or platform reports into one");
  std::vector<std::string> files;
  merge->add_option("FILE", files, "report.json files, or durability.json files")->required();
  merge->add_option("--out", out, "output directory")->required();

  auto* durability = app.add_subcommand(
      "durability",
      "platform durability report: fsync/commit-rate measurements, bounded kill and power-loss "
      "sweeps (FULL and NORMAL) → durability.json, .md, .html");
  DurabilityOptions dopts;
  durability->add_option("--out", out, "output directory (default: current directory)");
  durability->add_option("--jobs", dopts.jobs, "parallel workers (default: cores; at most 256)")
      ->check(kDecimal)
      ->check(CLI::Range(1, kMaxJobs));
  durability->add_option("--scenario", dopts.scenarios,
                         "scenario id (repeatable; default write-config-port, bash-touch-marker)");
  durability->add_option("--states", dopts.states, "power-loss crash states per case (default 2)")
      ->check(kDecimal)
      ->check(CLI::Range(1, 100));
  durability->add_option("--name", dopts.name,
                         "platform column name (default <os>-<arch>-<file system>)");
  durability->add_option("--store-dir", dopts.storeDir,
                         "directory to measure (default: the power-loss work root)");

  auto* fps = app.add_subcommand("failpoints", "the failpoint catalogue");
  fps->add_flag("--json", json, "JSON output");
  auto* scs = app.add_subcommand("scenarios", "the built-in scenarios");
  scs->add_flag("--json", json, "JSON output");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "crashsim: " << e.what() << " (see crashsim --help)\n";
    return 2;
  }

  if (version) return printVersion();
  if (app.get_subcommands().empty()) {
    std::cerr << "crashsim: a command is required (see crashsim --help)\n";
    return 2;
  }
  fs::path scenarioDir = scenarioDirOpt.empty() ? defaultScenarioDir() : fs::path(scenarioDirOpt);
  std::string extra = scenarioDirOpt.empty() ? "" : " --scenarios " + scenarioDirOpt;
  setSpawnMethod(spawnOpt == "exec" ? SpawnMethod::exec : SpawnMethod::fork_server);
  // `crashsim run` takes --scenarios before the subcommand; put it first in reproduce lines.
  try {
    if (*sweep) {
      if (!shard.empty()) {
        std::tie(so.shardIndex, so.shardTotal) = parseShard(shard);
      } else if (const char* i = std::getenv("GTEST_SHARD_INDEX"),
                 *n = std::getenv("GTEST_TOTAL_SHARDS");
                 i && n) {
        std::tie(so.shardIndex, so.shardTotal) = parseShard(std::string(i) + "/" + n);
      }
      prepareOut(out);
      if (!out.empty()) so.out = fs::path(out);
      so.scenarioDir = scenarioDir;
      so.reproduceExtra = extra;
      so.progressTty = ::isatty(2);
      const char* noColor = std::getenv("NO_COLOR");
      so.color = so.progressTty && (noColor == nullptr || *noColor == '\0');
      if (expectCases >= 0) so.expectCases = expectCases;
      if (!expectManifest.empty()) so.expectManifest = fs::path(expectManifest);
      if (listOnly) {
        // Barrier cases are planned from the reference runs' counts: --list runs those (only).
        auto prepared = prepareSweep(so, true);
        std::error_code ec;
        if (!prepared.ro.workRoot.empty()) fs::remove_all(prepared.ro.workRoot, ec);
        const SweepPlan& plan = prepared.plan;
        for (const auto& pc : plan.cases) std::cout << pc.id.str() << "\n";
        std::cerr << fmt::format(
            "crashsim sweep --list: {} case(s) in this shard, {} in the "
            "selection, manifest {}\n",
            plan.cases.size(), plan.sweepCases, plan.sweepManifestDigest);
        return 0;
      }
      auto rep = runSweep(so);
      return rep.summary.failed == 0 ? 0 : 1;
    }
    if (*run) return cmdRun(caseText, keep, scenarioDir, extra, runSync);
    if (*inspect) return inspectStore(storeDir, json);
    if (*resume) return resumeStore(resumeArgs);
    if (*resolve) {
      auto judge = [&](std::string_view in) { return resolveLedger(in, highWater); };
      return jsonl ? ledgerBatch(file, judge) : printResult(judge(readInput(file)));
    }
    if (*argsHash) {
      if (!jsonl && tool.empty()) throw UsageError("ledger args-hash: --tool is required");
      if (!jsonl || !tool.empty()) {
        auto judge = [&](std::string_view in) { return argsHashOf(tool, in); };
        return jsonl ? ledgerBatch(file, judge) : printResult(judge(readInput(file)));
      }
      return ledgerBatch(file, argsHashOfToolAndArgs);
    }
    if (*prefix) {
      return jsonl ? ledgerBatch(file, prefixDigestOf)
                   : printResult(prefixDigestOf(readInput(file)));
    }
    if (*exportCmd) return exportStore(exportStoreDir);
    if (*planCmd) return planContinuationCommand(planFile);
    if (*execCmd) return storeExec(execArgs);
    if (*salvageCmd) return salvageStore(salvageStoreDir, salvageOut);
    if (*merge) {
      prepareOut(out);
      return cmdMerge(files, out);
    }
    if (*durability) {
      // The directory to measure is the user's (a mount point): it must exist, and neither it
      // nor a missing parent is ever created.
      if (std::error_code ec; !dopts.storeDir.empty() && !fs::is_directory(dopts.storeDir, ec))
        throw UsageError(
            fmt::format("{}: --store-dir {}: not an existing directory (it is never "
                        "created)",
                        code::input_unreadable, dopts.storeDir.string()));
      prepareOut(out);
      dopts.scenarioDir = scenarioDir;
      return cmdDurability(dopts, out);
    }
    if (*fps) {
      std::cout << (json ? failpoints::catalogueJson(2) : failpoints::catalogueText()) << "\n";
      return 0;
    }
    if (*scs) return cmdScenarios(scenarioDir, json);
  } catch (const UsageError& e) {
    std::cerr << "crashsim: " << e.what() << "\n";
    return 2;
  } catch (const SweepError& e) {
    std::cerr << "crashsim sweep: " << e.what() << "\n";
    return 2;
  } catch (const reports::ReportError& e) {
    std::cerr << "crashsim: " << e.what() << "\n";
    return 2;
  } catch (const Error& e) {
    std::cerr << "crashsim: " << e.code() << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "crashsim: " << e.what() << "\n";
    return 2;
  }
  return 2;
}

}  // namespace
}  // namespace crashsim::harness
