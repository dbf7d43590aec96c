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

// The command line: every subcommand and option (in the order --help lists them), and the values
// they parse into.
struct CommandLine {
  CLI::App app{"crashsim — crash-consistency harness for the durable agent runtime"};
  bool version = false;
  std::string scenarioDirOpt;
  std::string spawnOpt = "fork-server";
  SweepOptions so;
  std::string shard, out;
  bool listOnly = false;
  int expectCases = -1;
  std::string expectManifest;
  std::string caseText, keep;
  std::string runSync = "FULL";
  std::string storeDir;
  bool json = false;
  ResumeArgs resumeArgs;
  std::string file;
  std::optional<uint64_t> highWater;
  bool jsonl = false;
  std::string tool;
  std::string exportStoreDir;
  std::string planFile;
  StoreExecArgs execArgs;
  std::string salvageStoreDir, salvageOut;
  std::vector<std::string> files;
  DurabilityOptions dopts;
  CLI::App *sweep = nullptr, *run = nullptr, *inspect = nullptr, *resume = nullptr,
           *ledger = nullptr, *resolve = nullptr, *argsHash = nullptr, *prefix = nullptr,
           *exportCmd = nullptr, *planCmd = nullptr, *storeCmd = nullptr, *execCmd = nullptr,
           *salvageCmd = nullptr, *report = nullptr, *merge = nullptr, *durability = nullptr,
           *fps = nullptr, *scs = nullptr;
};

// --version, --scenarios, --spawn.
void addGlobalOptions(CommandLine& c) {
  c.app.add_flag("--version", c.version, "print crashsim's version and the agent it drives");
  c.app.require_subcommand(0, 1);
  // Global options (--scenarios) are accepted after the subcommand too, as reproduce lines
  // print them: `crashsim run CASE --keep DIR --scenarios DIR`.
  c.app.fallthrough();
  c.app.add_option("--scenarios", c.scenarioDirOpt,
                   "scenario directory (default $CRASHSIM_SCENARIOS or the built-in scenarios)");
  c.app
      .add_option("--spawn", c.spawnOpt,
                  "how agent children start: fork-server (default: forked by one `crashsim-agent "
                  "serve` per worker) or exec (a fresh exec per child)")
      ->check(CLI::IsMember({"exec", "fork-server"}));
}

// crashsim sweep.
void addSweep(CommandLine& c) {
  // sweep
  c.sweep =
      c.app.add_subcommand("sweep", "exhaustive crash sweep over every reachable (failpoint, hit)");
  c.sweep->add_option("--scenario", c.so.scenarios, "scenario id (repeatable)");
  c.sweep->add_option("--failpoint", c.so.failpoints,
                      "failpoint P0..P17, or the barriers S / F (repeatable)");
  c.sweep
      ->add_option("--mode", c.so.mode,
                   "fault mode: kill (SIGKILL), powerloss (power cut), stop (a Stop request "
                   "instead of the kill, judged by the termination contract), corrupt (a seeded "
                   "damage to the store files after the kill)")
      ->check(CLI::IsMember(faultModeNames()));
  c.sweep->add_option("--jobs", c.so.jobs, "parallel workers (default: cores; at most 256)")
      ->check(kDecimal)
      ->check(CLI::Range(1, kMaxJobs));
  c.sweep->add_option("--shard", c.shard,
                      "run shard I of N (I/N); default from GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  c.sweep
      ->add_option("--seed", c.so.seed,
                   "seed (recorded; powerloss, corrupt: mixed into the state seeds)")
      ->check(kDecimal);
  c.sweep
      ->add_option("--states", c.so.states,
                   "powerloss, corrupt: seeded states per (scenario, failpoint, hit) (default 2)")
      ->check(kDecimal)
      ->check(CLI::Range(1, 1000));
  c.sweep
      ->add_option("--synchronous", c.so.synchronous,
                   "powerloss: the agent store's PRAGMA synchronous (FULL, or NORMAL to measure "
                   "which acknowledged commits a power cut loses)")
      ->transform(CLI::IsMember({"FULL", "NORMAL"}, CLI::ignore_case));
  c.sweep->add_option("--out", c.out, "write report.json, junit.xml, report.md, report.html here");
  c.sweep->add_flag("--keep-failures", c.so.keepFailures, "keep the directories of failed cases");
  c.sweep->add_flag(
      "--double-faults", c.so.doubleFaults,
      "also kill the recovery process at P8/P9/P10/P11/P14/P15 hits (--mode stop: the "
      "stopping process at P12/P13)");
  c.sweep->add_flag("!--no-barriers", c.so.barriers,
                    "skip the unnamed barrier cases S#k (store COMMITs) and F#k (file-tool steps)");
  c.sweep
      ->add_option("--path-mutations", c.so.pathMutations,
                   "kill mode: the generated changes of every component of a reconciled Write/Edit "
                   "target's path (file, parents, workspace root) between kill and recovery, at P4 "
                   "(p4, the default), at P2-P5 (all), or none (off)")
      ->check(CLI::IsMember({"off", "p4", "all"}));
  c.sweep->add_flag("--verify-determinism", c.so.verifyDeterminism,
                    "V9 for every case (default: a sample)");
  c.sweep->add_option("--case", c.so.caseGlobs,
                      "case id glob, e.g. 'write-config-port/P4#*' (repeatable; fnmatch)");
  c.sweep->add_flag("--list", c.listOnly,
                    "print the planned case ids (this shard) and run nothing");
  c.sweep
      ->add_option("--expect-cases", c.expectCases,
                   "fail (exit 2) unless the selection plans exactly N cases")
      ->check(kDecimal)
      ->check(CLI::NonNegativeNumber);
  c.sweep->add_option("--expect-manifest", c.expectManifest,
                      "fail (exit 2) unless the selection plans exactly the case ids in FILE "
                      "(one per line, as --list prints them)");
}

// crashsim run, inspect, resume.
void addCaseAndStoreReaders(CommandLine& c) {
  c.run = c.app.add_subcommand("run", "run one case verbosely and keep its directory");
  c.run->add_option("CASE", c.caseText, "case id, e.g. write-config-port/P4#1/kill")->required();
  c.run->add_option("--keep", c.keep, "case directory to use and keep");
  c.run->add_option("--synchronous", c.runSync, "powerloss: the agent store's PRAGMA synchronous")
      ->transform(CLI::IsMember({"FULL", "NORMAL"}, CLI::ignore_case));

  c.inspect = c.app.add_subcommand("inspect",
                                   "repair dry run, resolver decisions, plan, lineage of a store");
  c.inspect->add_option("STORE", c.storeDir, "store directory")->required();
  c.inspect->add_flag("--json", c.json, "JSON output");

  c.resume = c.app.add_subcommand(
      "resume", "host start-up: claim saga, reconcile, repair, plan, continue (crashsim/host.h)");
  c.resume->add_option("STORE", c.resumeArgs.storeDir, "store directory")->required();
  c.resume->add_option("--workspace", c.resumeArgs.workspaceDir,
                       "the workspace directory (reconcile and the plan's safety observation)");
  c.resume->add_option("--scenario", c.resumeArgs.scenarioFile,
                       "scenario JSON: continue the task with its scripted model");
  c.resume->add_flag("--dry-run", c.resumeArgs.dryRun,
                     "run the sequence on a private copy: nothing is written");
  c.resume->add_flag("--json", c.resumeArgs.json, "JSON output");
}

// crashsim ledger resolve | args-hash | prefix-digest | export | plan-continuation.
void addLedger(CommandLine& c) {
  c.ledger = c.app.add_subcommand("ledger", "pure ledger tools");
  c.ledger->require_subcommand(1);
  c.resolve = c.ledger->add_subcommand("resolve",
                                       "resolver decisions + Phase 0 plan of a RuntimeEvent list");
  c.resolve->add_option("FILE", c.file, "JSON array or JSON lines; - or absent = stdin");
  c.resolve->add_option("--expected-high-water", c.highWater, "expected runtime event high-water");
  c.resolve->add_flag("--jsonl", c.jsonl,
                      "batch: one ledger (a JSON array) per line, one result each");
  c.argsHash = c.ledger->add_subcommand("args-hash", "canonicalArgsHash of strict JSON args");
  c.argsHash->add_option("--tool", c.tool, "tool name (with --jsonl: of every line)");
  c.argsHash->add_option("FILE", c.file, "args JSON; - or absent = stdin");
  c.argsHash->add_flag(
      "--jsonl", c.jsonl,
      "batch: one input per line, {\"toolName\",\"args\"} (args only with --tool)");
  c.prefix = c.ledger->add_subcommand("prefix-digest", "prefix digest of {identity, events}");
  c.prefix->add_option("FILE", c.file, "input JSON; - or absent = stdin");
  c.prefix->add_flag("--jsonl", c.jsonl, "batch: one {identity, events} per line, one digest each");
  c.exportCmd =
      c.ledger->add_subcommand("export", "a store's RuntimeEvents as legacy JSONL on stdout");
  c.exportCmd->add_option("STORE", c.exportStoreDir, "store directory")->required();

  c.planCmd = c.ledger->add_subcommand(
      "plan-continuation",
      "Phase 1 plan of a document: store script, host facts → the host planner's plan JSON");
  c.planCmd->add_option("FILE", c.planFile, "plan document JSON; - or absent = stdin");
}

// crashsim store exec | salvage-wal.
void addStore(CommandLine& c) {
  c.storeCmd = c.app.add_subcommand("store", "store tools");
  c.storeCmd->require_subcommand(1);
  c.execCmd = c.storeCmd->add_subcommand(
      "exec", "run a JSON script of store calls; one result or error code per call");
  c.execCmd->add_option("SCRIPT", c.execArgs.scriptFile, "script JSON; - = stdin")->required();
  c.execCmd->add_option("--store", c.execArgs.storeDir,
                        "store directory (created if missing; default: a fresh private store)");
  c.execCmd->add_option("--barrier", c.execArgs.barrier,
                        "wait until this file exists before opening the store (races)");
  c.execCmd
      ->add_option("--lock-timeout", c.execArgs.lockTimeoutSeconds,
                   "seconds to wait for another host to release the store's host lock (default "
                   "0: refuse at once with host_already_active)")
      ->check(kDecimal)
      ->check(CLI::Range(0, 60));

  c.salvageCmd = c.storeCmd->add_subcommand(
      "salvage-wal",
      "rebuild a store whose database file is empty from its -wal, into a new directory");
  c.salvageCmd->add_option("STORE", c.salvageStoreDir, "the damaged store directory (only read)")
      ->required();
  c.salvageCmd->add_option("--out", c.salvageOut, "the new store directory (must not exist)")
      ->required();
}

// crashsim report merge, durability, failpoints, scenarios.
void addReportsAndCatalogues(CommandLine& c) {
  c.report = c.app.add_subcommand("report", "report tools");
  c.report->require_subcommand(1);
  c.merge = c.report->add_subcommand("merge", "merge shard or platform reports into one");
  c.merge->add_option("FILE", c.files, "report.json files, or durability.json files")->required();
  c.merge->add_option("--out", c.out, "output directory")->required();

  c.durability = c.app.add_subcommand(
      "durability",
      "platform durability report: fsync/commit-rate measurements, bounded kill and power-loss "
      "sweeps (FULL and NORMAL) → durability.json, .md, .html");
  c.durability->add_option("--out", c.out, "output directory (default: current directory)");
  c.durability->add_option("--jobs", c.dopts.jobs, "parallel workers (default: cores; at most 256)")
      ->check(kDecimal)
      ->check(CLI::Range(1, kMaxJobs));
  c.durability->add_option(
      "--scenario", c.dopts.scenarios,
      "scenario id (repeatable; default write-config-port, bash-touch-marker)");
  c.durability
      ->add_option("--states", c.dopts.states, "power-loss crash states per case (default 2)")
      ->check(kDecimal)
      ->check(CLI::Range(1, 100));
  c.durability->add_option("--name", c.dopts.name,
                           "platform column name (default <os>-<arch>-<file system>)");
  c.durability->add_option("--store-dir", c.dopts.storeDir,
                           "directory to measure (default: the power-loss work root)");

  c.fps = c.app.add_subcommand("failpoints", "the failpoint catalogue");
  c.fps->add_flag("--json", c.json, "JSON output");
  c.scs = c.app.add_subcommand("scenarios", "the built-in scenarios");
  c.scs->add_flag("--json", c.json, "JSON output");
}

// crashsim sweep (--list: the plan only).
int sweepCommand(CommandLine& c, const fs::path& scenarioDir, const std::string& extra) {
  if (!c.shard.empty()) {
    std::tie(c.so.shardIndex, c.so.shardTotal) = parseShard(c.shard);
  } else if (const char* i = std::getenv("GTEST_SHARD_INDEX"),
             *n = std::getenv("GTEST_TOTAL_SHARDS");
             i && n) {
    std::tie(c.so.shardIndex, c.so.shardTotal) = parseShard(std::string(i) + "/" + n);
  }
  prepareOut(c.out);
  if (!c.out.empty()) c.so.out = fs::path(c.out);
  c.so.scenarioDir = scenarioDir;
  c.so.reproduceExtra = extra;
  c.so.progressTty = ::isatty(2);
  const char* noColor = std::getenv("NO_COLOR");
  c.so.color = c.so.progressTty && (noColor == nullptr || *noColor == '\0');
  if (c.expectCases >= 0) c.so.expectCases = c.expectCases;
  if (!c.expectManifest.empty()) c.so.expectManifest = fs::path(c.expectManifest);
  if (c.listOnly) {
    // Barrier cases are planned from the reference runs' counts: --list runs those (only).
    auto prepared = prepareSweep(c.so, true);
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
  auto rep = runSweep(c.so);
  return rep.summary.failed == 0 ? 0 : 1;
}

// Runs the parsed command; its exit code (2 for a usage or environment error, with one line).
int dispatch(CommandLine& c, const fs::path& scenarioDir, const std::string& extra) {
  // `crashsim run` takes --scenarios before the subcommand; put it first in reproduce lines.
  try {
    if (*c.sweep) return sweepCommand(c, scenarioDir, extra);
    if (*c.run) return cmdRun(c.caseText, c.keep, scenarioDir, extra, c.runSync);
    if (*c.inspect) return inspectStore(c.storeDir, c.json);
    if (*c.resume) return resumeStore(c.resumeArgs);
    if (*c.resolve) {
      auto judge = [&](std::string_view in) { return resolveLedger(in, c.highWater); };
      return c.jsonl ? ledgerBatch(c.file, judge) : printResult(judge(readInput(c.file)));
    }
    if (*c.argsHash) {
      if (!c.jsonl && c.tool.empty()) throw UsageError("ledger args-hash: --tool is required");
      if (!c.jsonl || !c.tool.empty()) {
        auto judge = [&](std::string_view in) { return argsHashOf(c.tool, in); };
        return c.jsonl ? ledgerBatch(c.file, judge) : printResult(judge(readInput(c.file)));
      }
      return ledgerBatch(c.file, argsHashOfToolAndArgs);
    }
    if (*c.prefix) {
      return c.jsonl ? ledgerBatch(c.file, prefixDigestOf)
                     : printResult(prefixDigestOf(readInput(c.file)));
    }
    if (*c.exportCmd) return exportStore(c.exportStoreDir);
    if (*c.planCmd) return planContinuationCommand(c.planFile);
    if (*c.execCmd) return storeExec(c.execArgs);
    if (*c.salvageCmd) return salvageStore(c.salvageStoreDir, c.salvageOut);
    if (*c.merge) {
      prepareOut(c.out);
      return cmdMerge(c.files, c.out);
    }
    if (*c.durability) {
      // The directory to measure is the user's (a mount point): it must exist, and neither it
      // nor a missing parent is ever created.
      if (std::error_code ec; !c.dopts.storeDir.empty() && !fs::is_directory(c.dopts.storeDir, ec))
        throw UsageError(
            fmt::format("{}: --store-dir {}: not an existing directory (it is never "
                        "created)",
                        code::input_unreadable, c.dopts.storeDir.string()));
      prepareOut(c.out);
      c.dopts.scenarioDir = scenarioDir;
      return cmdDurability(c.dopts, c.out);
    }
    if (*c.fps) {
      std::cout << (c.json ? failpoints::catalogueJson(2) : failpoints::catalogueText()) << "\n";
      return 0;
    }
    if (*c.scs) return cmdScenarios(scenarioDir, c.json);
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

int runCommand(int argc, char** argv) {
  // The harness links the instrumented runtime (the code under test, so planted faults in its
  // pure components are visible to V4–V7). Its own process must never be armed: arming is
  // for the children it spawns, which get their environment composed by the supervisor.
  for (const char* v : {"CRASHSIM_ARM", "CRASHSIM_CONTROL_FD", "CRASHSIM_HITS_OUT",
                        "CRASHSIM_FAILPOINT_MODE", "CRASHSIM_POWERLOSS"})
    ::unsetenv(v);
  CommandLine c;
  addGlobalOptions(c);
  addSweep(c);
  addCaseAndStoreReaders(c);
  addLedger(c);
  addStore(c);
  addReportsAndCatalogues(c);
  try {
    c.app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return c.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return c.app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "crashsim: " << e.what() << " (see crashsim --help)\n";
    return 2;
  }

  if (c.version) return printVersion();
  if (c.app.get_subcommands().empty()) {
    std::cerr << "crashsim: a command is required (see crashsim --help)\n";
    return 2;
  }
  fs::path scenarioDir =
      c.scenarioDirOpt.empty() ? defaultScenarioDir() : fs::path(c.scenarioDirOpt);
  std::string extra = c.scenarioDirOpt.empty() ? "" : " --scenarios " + c.scenarioDirOpt;
  setSpawnMethod(c.spawnOpt == "exec" ? SpawnMethod::exec : SpawnMethod::fork_server);
  return dispatch(c, scenarioDir, extra);
}

}  // namespace
}  // namespace crashsim::harness
