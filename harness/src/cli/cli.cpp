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

#include "cli/commands.h"
#include "cli/ledger_commands.h"
#include "cli/store_commands.h"
#include "cli/store_script.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/durability.h"
#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/open_driver.h"
#include "crashsim/harness/open_sweep.h"
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

// Standard output must be open before any work: a closed fd 1 would be reused by the first
// file the command opens (a store's database), and the command's output would land in it.
bool stdoutIsOpen() { return ::fcntl(STDOUT_FILENO, F_GETFL) >= 0 || errno != EBADF; }

// Everything written to standard output reached it: flushed, no short write (a full disk, a
// closed pipe).
bool stdoutComplete() {
  std::cout.flush();
  return static_cast<bool>(std::cout);
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
  std::string runtimeFile;   // --runtime: a runtime profile (the open harness)
  std::string baselineFile;  // --baseline (with --runtime)
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
           *fps = nullptr, *scs = nullptr, *gc = nullptr;
  int64_t gcGraceMs = 86400000;  // crashsim gc --grace-ms (h.2 orphanGraceMs)
  bool gcDryRun = false;
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
                      "failpoint P0..P30, or the barriers S / F / G (repeatable)");
  c.sweep
      ->add_option("--mode", c.so.mode,
                   "fault mode: kill (SIGKILL), powerloss (power cut), stop (a Stop request "
                   "instead of the kill, judged by the termination contract), corrupt (a seeded "
                   "damage to the store files after the kill)")
      ->check(CLI::IsMember(faultModeNames()));
  c.sweep
      ->add_option("--jobs", c.so.jobs,
                   "parallel workers (default: cores, 1 with --runtime; at most 256)")
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
  CLI::Option* verifyAll = c.sweep->add_flag("--verify-determinism", c.so.verifyDeterminism,
                                             "V9 for every case (default: a sample)");
  c.sweep
      ->add_flag("--no-determinism", c.so.skipDeterminism,
                 "V9 for no case (a sanitizer sweep: the second run repeats the first one's path)")
      ->excludes(verifyAll);
  c.sweep->add_option("--case", c.so.caseGlobs,
                      "case id glob, e.g. 'write-config-port/P4#*' (repeatable; fnmatch)");
  c.sweep->add_option("--runtime", c.runtimeFile,
                      "sweep the runtime this profile describes (docs/open-harness.md) instead "
                      "of crashsim-agent");
  c.sweep->add_option("--baseline", c.baselineFile,
                      "with --runtime: known findings (case id → verdicts, reason); exit 1 on a "
                      "new failure or a known one that no longer fails");
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
  c.run->add_option("--runtime", c.runtimeFile, "the runtime profile of an open-harness case");
  c.run->add_option("--synchronous", c.runSync, "powerloss: the agent store's PRAGMA synchronous")
      ->transform(CLI::IsMember({"FULL", "NORMAL"}, CLI::ignore_case));

  c.inspect = c.app.add_subcommand("inspect",
                                   "repair dry run, resolver decisions, plan, lineage of a store");
  c.inspect->add_option("STORE", c.storeDir, "store directory")->required();
  c.inspect->add_flag("--json", c.json, "JSON output");

  c.gc = c.app.add_subcommand(
      "gc", "the carrier GC's dry run: the orphan refs and quarantine entries it would delete");
  c.gc->add_option("STORE", c.storeDir, "store directory")->required();
  c.gc->add_flag("--dry-run", c.gcDryRun,
                 "required: crashsim never collects (crashsim-agent gc does)");
  c.gc->add_option("--grace-ms", c.gcGraceMs, "orphanGraceMs (default 86400000, one day)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  c.gc->add_flag("--json", c.json, "JSON output");

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
  c.resume->add_option("--rebaseline", c.resumeArgs.rebaseline,
                       "confirm a workspace rebaseline: the boundaryManifestDigest of the "
                       "session's parked plan (workspace continuity g)");
  c.resume->add_option("--session", c.resumeArgs.rebaselineSession,
                       "the session a --rebaseline confirms (default: the scenario's, or the "
                       "only planned session)");
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

// The open harness's options from the sweep's (crashsim/harness/open_sweep.h); the options it
// cannot honour are refused.
OpenSweepOptions openOptions(const CommandLine& c, const fs::path& scenarioDir) {
  if (c.so.mode != "kill") throw UsageError("--runtime: the open harness's one mode is kill");
  if (!c.shard.empty() || c.expectCases >= 0 || !c.expectManifest.empty())
    throw UsageError("--runtime: --shard, --expect-cases and --expect-manifest are not supported");
  OpenSweepOptions o;
  o.runtime = c.runtimeFile;
  o.scenarioDir = scenarioDir;
  o.scenarios = c.so.scenarios;
  o.points = c.so.failpoints;
  for (const auto& p : o.points)
    if (!isOpenPoint(p) && !isNamedPoint(p))
      throw UsageError(fmt::format(
          "--failpoint {}: the open points are MQ, MA, TC, TE, TR, S and a level-1 runtime's "
          "names (a letter, then letters, digits, _ or -)",
          p));
  o.caseGlobs = c.so.caseGlobs;
  o.doubleFaults = c.so.doubleFaults;
  o.verifyAll = c.so.verifyDeterminism;
  o.noDeterminism = c.so.skipDeterminism;
  o.keepFailures = c.so.keepFailures;
  o.jobs = c.so.jobs > 0 ? c.so.jobs : 1;
  if (!c.out.empty()) o.out = c.out;
  o.baseline = c.baselineFile;
  return o;
}

// Runs the parsed command; its exit code (2 for a usage or environment error, with one line).
int dispatch(CommandLine& c, const fs::path& scenarioDir, const std::string& extra) {
  // `crashsim run` takes --scenarios before the subcommand; put it first in reproduce lines.
  try {
    if (*c.sweep && !c.runtimeFile.empty()) {
      prepareOut(c.out);
      return openSweepCommand(openOptions(c, scenarioDir), c.listOnly);
    }
    if (*c.run && !c.runtimeFile.empty())
      return openRunCommand(c.caseText, openOptions(c, scenarioDir), c.keep);
    if (!c.baselineFile.empty()) throw UsageError("--baseline needs --runtime");
    if (*c.sweep) return sweepCommand(c, scenarioDir, extra);
    if (*c.run) return cmdRun(c.caseText, c.keep, scenarioDir, extra, c.runSync);
    if (*c.inspect) return inspectStore(c.storeDir, c.json);
    if (*c.gc) {
      if (!c.gcDryRun)
        throw UsageError(
            "crashsim gc is read-only: pass --dry-run (the host collects with "
            "crashsim-agent gc --store DIR)");
      return gcDryRun(c.storeDir, c.gcGraceMs, c.json);
    }
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
