// crashsim-agent: the instrumented child the harness kills and stops (built with failpoints
// P0–P17).
//
//   crashsim-agent seed    --workspace DIR --scenario FILE
//   crashsim-agent run     --store DIR --workspace DIR --scenario FILE [--effects FILE]
//   crashsim-agent recover --store DIR --workspace DIR --scenario FILE [--effects FILE]
//   (run and recover: [--cancellation-grace-ms N] [--bash-kill-grace-ms N] [--control-stdin];
//   recover: [--rebaseline DIGEST], the user's confirmation of a workspace rebaseline, g.1;
//   [--gc-grace-ms N], the carrier GC at the end of start-up, h.5)
//   crashsim-agent gc      --store DIR [--grace-ms N] [--dry-run]
//   (explicit maintenance, workspace-continuity-contract.md h: under the host lock, the orphan
//   refs older than the grace, the prune and old quarantine entries; --dry-run lists
//   `would_delete`, takes no lock and writes nothing; one JSON line on stdout)
//   crashsim-agent serve   (fd 3: the harness's socket; crashsim/fork_server.h)
//
// Stop (crashsim/termination.h): SIGINT or SIGTERM, or a line "stop" on stdin with
// --control-stdin, is a Stop request. A dedicated thread takes it (the signals are blocked in
// every other thread), cancels the run's token and writes the receipt as one JSON line on
// stderr: {"stopReceipt":{"accepted":true,"alreadyIdle":<no run active>}}. The run then ends
// with its termination batch (summary status cancelled, exit 1); a second Stop is a no-op.
//
// `run` runs the scenario from scratch; `recover` is host start-up (crashsim/host.h
// hostStartup: claim saga, reconcile, startup repair, Phase 1 plan, continuation run) — the
// same function `crashsim resume` calls. Both print one JSON line on stdout and, at normal
// exit only, write <storeDir>/agent-exit.json (the harness checks it is absent after a kill).
// Exit codes: 0 success (run completed / recovery pipeline finished), 1 the run ended failed
// or cancelled, 2 usage, environment or damaged-store error: the line on stdout is then
// {"error":{"code","message"}} and stderr says "crashsim-agent: <code>: <message>" (the same
// stable code `crashsim inspect` and `crashsim resume` give for the same store), including a
// malformed CRASHSIM_ARM before any work.
//
// Power loss (crashsim/powerloss.h): with CRASHSIM_POWERLOSS=1 the power-loss VFS becomes
// SQLite's default VFS before the store is opened, and the armed failpoint materialises the
// seeded crash state before the child dies. With CRASHSIM_POWERLOSS_ACKED=DIR the child first
// copies the store's database and WAL files, as the page cache holds them (every commit the
// runtime was acknowledged), into DIR with plain I/O outside the model: the harness's D1 check
// compares that acknowledged ledger with the store reopened after the power cut.
// CRASHSIM_RACE_BARRIER=FIFO (recover only): wait at the race barrier before host start-up
// (crashsim/failpoints.h awaitRaceBarrier), so that two racing hosts start together.
// CRASHSIM_SYNCHRONOUS=FULL|NORMAL sets the store's PRAGMA synchronous for `run` (default FULL);
// CRASHSIM_WAL_BATCHING=0 opens it on SQLite's own VFS (StoreOptions::walBatching off), for the
// differential crash test of the WAL batching VFS.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "crashsim/agent.h"
#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/fork_server.h"
#include "crashsim/hashing.h"
#include "crashsim/host.h"
#include "crashsim/json.h"
#include "crashsim/plant.h"
#include "crashsim/powerloss.h"
#include "crashsim/scenario.h"
#include "crashsim/workspace_gc.h"

namespace fs = std::filesystem;
using crashsim::Json;

namespace {

void writeExitMarker(const fs::path& storeDir, const std::string& command, const Json& summary) {
  const fs::path marker = storeDir / "agent-exit.json";
  std::ofstream out(marker, std::ios::binary | std::ios::trunc);
  Json j = Json::object();
  j["command"] = command;
  j["pid"] = static_cast<int64_t>(::getpid());
  j["summary"] = summary;
  out << j.dump() << "\n";
}

// Power-loss crash hook state (set once in main, read at the armed failpoint).
fs::path gAckedStoreDir;  // the store whose acknowledged state is copied
fs::path gAckedOut;       // CRASHSIM_POWERLOSS_ACKED

// Copies the store's database and WAL (the page cache: every acknowledged commit) outside the
// power-loss model, then lets the model materialise the crash state and die.
[[noreturn]] void powerlossCrashWithAckedCopy() {
  std::error_code ec;
  fs::create_directories(gAckedOut, ec);
  for (const char* name : {"runtime.sqlite", "runtime.sqlite-wal"}) {
    const fs::path from = gAckedStoreDir / name;
    if (!gAckedStoreDir.empty() && fs::exists(from, ec))
      fs::copy_file(from, gAckedOut / name, fs::copy_options::overwrite_existing, ec);
  }
  crashsim::powerloss::crashNow();
}

// Under power loss the tools' file effects go through the power-loss file model: a crash keeps
// only what was fsynced (contents) and directory-fsynced (names), like the store's VFS.
class PowerlossDurableFs final : public crashsim::DurableFs {
 public:
  bool createFile(const fs::path& path, std::string_view bytes, unsigned mode) override {
    return crashsim::powerloss::writeFile(path, bytes, {mode, /*exclusive=*/true});
  }
  void fsyncFile(const fs::path& path) override { crashsim::powerloss::fsyncFile(path); }
  void rename(const fs::path& from, const fs::path& to) override {
    crashsim::powerloss::rename(from, to);
  }
  void removeFile(const fs::path& path) override { crashsim::powerloss::removeFile(path); }
  void fsyncDir(const fs::path& dir) override { crashsim::powerloss::fsyncDir(dir); }
};
PowerlossDurableFs gPowerlossFs;

// CRASHSIM_FS_TRACE=FILE: every durability step of the file effects, in order, one JSON line
// each ({"op":"create|fsyncFile|rename|remove|fsyncDir","path":…,"to":…}), appended before the
// step runs and flushed, around whichever DurableFs is in use. The harness asks for it in its
// reference runs and checks the order each atomic replace needs (verdicts/file_steps.h): the
// barrier F counts the steps, this names them.
class TracingDurableFs final : public crashsim::DurableFs {
 public:
  TracingDurableFs(crashsim::DurableFs& inner, const char* file)
      : inner_(inner), out_(file, std::ios::app | std::ios::binary) {}
  bool createFile(const fs::path& path, std::string_view bytes, unsigned mode) override {
    note("create", path);
    return inner_.createFile(path, bytes, mode);
  }
  void fsyncFile(const fs::path& path) override {
    note("fsyncFile", path);
    inner_.fsyncFile(path);
  }
  void rename(const fs::path& from, const fs::path& to) override {
    note("rename", from, to);
    inner_.rename(from, to);
  }
  void removeFile(const fs::path& path) override {
    note("remove", path);
    inner_.removeFile(path);
  }
  void fsyncDir(const fs::path& dir) override {
    note("fsyncDir", dir);
    inner_.fsyncDir(dir);
  }

 private:
  void note(const char* op, const fs::path& path, const fs::path& to = {}) {
    crashsim::Json line = {{"op", op}, {"path", path.lexically_normal().string()}};
    if (!to.empty()) line["to"] = to.lexically_normal().string();
    out_ << line.dump() << '\n' << std::flush;
  }
  crashsim::DurableFs& inner_;
  std::ofstream out_;
};
std::optional<TracingDurableFs> gTracingFs;

int usage(const std::string& message) {
  std::cerr << "crashsim-agent: " << message << "\n";
  return 2;
}

// Stop requests: the token, and whether the run already finished (the receipt's alreadyIdle).
crashsim::CancellationToken gCancel;
std::atomic<bool> gRunFinished{false};

void acceptStop() {
  crashsim::StopReceipt receipt;
  receipt.alreadyIdle = gRunFinished.load();
  if (!receipt.alreadyIdle) gCancel.cancel(std::string(crashsim::code::user_stop));
  std::cerr << receipt.toJson().dump() << std::endl;
  crashsim::failpoints::noteStopAccepted();
}

// Blocks SIGINT and SIGTERM in this thread (and so in every thread started later) and takes
// them in one dedicated thread: no work in a signal handler, nothing async-signal-unsafe.
void startStopListener(bool controlStdin) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (;;) {
      int sig = 0;
      if (sigwait(&set, &sig) == 0) acceptStop();
    }
  }).detach();
  if (controlStdin) {
    std::thread([] {
      std::string line;
      while (std::getline(std::cin, line))
        if (line == "stop") acceptStop();
    }).detach();
  }
}

int agentMain(int argc, char** argv);

// What every forked child would otherwise load itself: OpenSSL's configuration (first digest).
void warmUp() { (void)crashsim::sha256Hex(""); }

}  // namespace

int main(int argc, char** argv) {
  // A write to a pipe without a reader fails with EPIPE instead of killing the host. Boost.Process
  // waits for its children through asio's SIGCHLD handler, which writes to asio's own pipe from
  // whichever thread takes the signal; when the io_context of a finished child is destroyed on
  // another thread, that pipe's read end is closed before its write end, and a handler still
  // running in between raised SIGPIPE: a recovery died of it (signal 13) in 3 of ~15,000 CI
  // kill cases. The children start with SIGPIPE at its default (workspace/process.cpp).
  ::signal(SIGPIPE, SIG_IGN);
  if (argc == 2 && std::string_view(argv[1]) == "serve")
    return crashsim::serveForkRequests("crashsim-agent", &agentMain, &warmUp);
  return agentMain(argc, argv);
}

namespace {

// The fault injection the environment asks for, before any work: arming (unknown id / malformed
// → exit 2), the power-loss VFS (the default before the first SQLite open), the file-step trace
// and the acknowledged copy at a power cut. An exit code when the environment is malformed.
std::optional<int> installFaultInjection() {
  try {
    crashsim::failpoints::initFromEnvironment();
  } catch (const std::exception& e) {
    return usage(e.what());
  }
  bool powerloss = false;
  try {
    powerloss = crashsim::powerloss::installFromEnvironment();
  } catch (const crashsim::Error& e) {
    return usage(e.code() + ": " + e.what());
  }
  if (powerloss) crashsim::setDurableFs(&gPowerlossFs);
  if (const char* trace = std::getenv("CRASHSIM_FS_TRACE"); trace != nullptr && *trace != '\0') {
    gTracingFs.emplace(crashsim::durableFs(), trace);
    crashsim::setDurableFs(&*gTracingFs);
  }
  if (const char* acked = std::getenv("CRASHSIM_POWERLOSS_ACKED");
      powerloss && acked != nullptr && *acked != '\0') {
    gAckedOut = acked;
    crashsim::failpoints::setPowerlossCrashHook(&powerlossCrashWithAckedCopy);
  }
  return std::nullopt;
}

// The command line: seed, run or recover, and their options.
struct AgentCommand {
  CLI::App* seed = nullptr;
  CLI::App* run = nullptr;
  CLI::App* recover = nullptr;
  CLI::App* gc = nullptr;
  int64_t gcGraceMs = -1;  // recover --gc-grace-ms / gc --grace-ms (-1: recover runs no GC)
  bool dryRun = false;     // gc --dry-run
  std::string store, workspace, scenarioFile, effects;
  std::string rebaseline;  // recover: the confirmed boundaryManifestDigest (g.1 item 1)
  int64_t cancellationGraceMs = 15000, bashKillGraceMs = 2000;
  bool controlStdin = false;
};

void defineCommands(CLI::App& app, AgentCommand& cmd) {
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("crashsim-agent ") + CRASHSIM_VERSION +
#if defined(CRASHSIM_ENABLE_FAILPOINTS)
                                        " (failpoints P0-P17 compiled in)"
#else
                                        " (no failpoints)"
#endif
  );
  cmd.seed = app.add_subcommand("seed", "write the scenario's seed files into a workspace");
  cmd.seed->add_option("--workspace", cmd.workspace, "workspace directory (created if missing)")
      ->required();
  cmd.seed->add_option("--scenario", cmd.scenarioFile, "scenario JSON file")->required();

  cmd.run = app.add_subcommand("run", "run a scenario from scratch");
  cmd.recover = app.add_subcommand("recover", "host start-up: repair, reconcile, continue");
  for (auto* sub : {cmd.run, cmd.recover}) {
    sub->add_option("--store", cmd.store, "store directory (runtime.sqlite)")->required();
    sub->add_option("--workspace", cmd.workspace, "workspace directory")->required();
    sub->add_option("--scenario", cmd.scenarioFile, "scenario JSON file")->required();
    sub->add_option("--effects", cmd.effects, "effects log (default <store>/effects.jsonl)");
    sub->add_option("--cancellation-grace-ms", cmd.cancellationGraceMs,
                    "Stop: the watchdog seals the run when it has not ended this long after a "
                    "Stop (default 15000)")
        ->check(CLI::Range(int64_t{1}, int64_t{3600000}));
    sub->add_option("--bash-kill-grace-ms", cmd.bashKillGraceMs,
                    "Stop: SIGKILL a running Bash process group this long after its SIGTERM "
                    "(default 2000)")
        ->check(CLI::Range(int64_t{0}, int64_t{3600000}));
    sub->add_flag("--control-stdin", cmd.controlStdin, "a line \"stop\" on stdin requests a Stop");
  }
  cmd.recover->add_option("--rebaseline", cmd.rebaseline,
                          "the user's confirmation of a workspace rebaseline: the "
                          "boundaryManifestDigest of the scenario session's parked plan");
  cmd.recover
      ->add_option("--gc-grace-ms", cmd.gcGraceMs,
                   "run the carrier GC at the end of start-up with this orphanGraceMs (h.5)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd.gc = app.add_subcommand("gc", "carrier retention and GC (explicit maintenance, h)");
  cmd.gc->add_option("--store", cmd.store, "store directory (runtime.sqlite)")->required();
  cmd.gc->add_option("--grace-ms", cmd.gcGraceMs, "orphanGraceMs (default 86400000, one day)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd.gc->add_flag("--dry-run", cmd.dryRun, "list would_delete; write nothing");
}

// `gc`: explicit maintenance (h.5). The real GC holds the host lock and opens the store
// writable (it writes no row); the dry run takes no lock and opens the store read-only.
int runGc(const AgentCommand& cmd) {
  if (!fs::exists(fs::path(cmd.store) / "runtime.sqlite"))
    throw crashsim::Error(crashsim::code::store_open_failed,
                          "no store at " + cmd.store + " (runtime.sqlite missing)");
  crashsim::WorkspaceGcOptions options;
  options.storeDir = cmd.store;
  if (cmd.gcGraceMs >= 0) options.orphanGrace = std::chrono::milliseconds(cmd.gcGraceMs);
  options.dryRun = cmd.dryRun;
  std::optional<crashsim::HostLock> lock;
  if (!cmd.dryRun) lock.emplace(cmd.store);
  crashsim::StoreOptions so;
  so.readOnly = cmd.dryRun;
  auto store = crashsim::RuntimeStore::open(cmd.store, so);
  const crashsim::WorkspaceGcReport r =
      crashsim::collectWorkspaceGarbage(*store, crashsim::resolveGitRuntime(), options);
  std::cout << Json{{"gc", r.toJson()}}.dump() << std::endl;
  crashsim::failpoints::writeHitCountsIfRequested();
  return 0;
}

// The run's paths and settings from the command line and the environment (the power-loss study
// runs the agent with a weaker sync setting; recovery keeps FULL).
crashsim::AgentPaths agentPaths(const AgentCommand& cmd) {
  crashsim::AgentPaths paths{cmd.store, cmd.workspace, cmd.effects};
  paths.cancellationGrace = std::chrono::milliseconds(cmd.cancellationGraceMs);
  paths.bashKillGrace = std::chrono::milliseconds(cmd.bashKillGraceMs);
  if (const char* sync = std::getenv("CRASHSIM_SYNCHRONOUS"); sync != nullptr && *sync != '\0')
    paths.synchronous = sync;
  if (const char* batching = std::getenv("CRASHSIM_WAL_BATCHING"))
    paths.walBatching = std::string_view(batching) != "0";
  return paths;
}

// `recover`: the host start-up sequence. Exit 1 when the continuation did not complete.
int recoverHost(const crashsim::Scenario& scenario, const crashsim::AgentPaths& paths,
                const std::string& rebaseline, int64_t gcGraceMs,
                crashsim::CancellationToken& cancel, Json& summary) {
  // The race of two hosts (CRASHSIM_RACE_BARRIER): released together with the other racer,
  // before start-up takes the host lock.
  crashsim::failpoints::awaitRaceBarrier();
  crashsim::HostStartupOptions startup;
  startup.storeDir = paths.storeDir;
  startup.workspaceDir = paths.workspaceDir;
  startup.effectsPath = paths.effectsPath;
  startup.scenario = &scenario;
  startup.cancellationGrace = paths.cancellationGrace;
  startup.bashKillGrace = paths.bashKillGrace;
  if (!rebaseline.empty())
    startup.rebaseline =
        crashsim::RebaselineConfirmation{crashsim::scenarioSessionId(scenario), rebaseline};
  if (gcGraceMs >= 0)
    startup.gcOrphanGrace = std::chrono::milliseconds(gcGraceMs);
  else if (scenario.workspacePolicy.gcOrphanGraceMs)  // h.5: the scenario's host runs GC
    startup.gcOrphanGrace = std::chrono::milliseconds(*scenario.workspacePolicy.gcOrphanGraceMs);
  const crashsim::HostStartupReport r = crashsim::hostStartup(startup, cancel);
  summary = r.toJson();
  return (r.continuation && r.continuation->status != crashsim::code::completed) ? 1 : 0;
}

// `run` or `recover` to its end: the summary on stdout, the hit counts, the normal-exit marker.
int runOrRecover(const AgentCommand& cmd, const crashsim::Scenario& scenario) {
  startStopListener(cmd.controlStdin);
  const crashsim::AgentPaths paths = agentPaths(cmd);
  gAckedStoreDir = paths.storeDir;
  const bool run = cmd.run->parsed();
  if (run) fs::create_directories(paths.storeDir);  // recover needs a store
  // Planted bug: the normal-exit marker is written before the run (V1: a kill must leave none).
  if (crashsim::planted("exit_marker_first"))
    writeExitMarker(paths.storeDir, "run", Json::object());
  crashsim::CancellationToken& cancel = gCancel;
  int rc = 0;
  Json summary;
  if (run) {
    crashsim::RunSummary s = crashsim::runScenario(scenario, paths, cancel);
    summary = s.toJson();
    rc = s.status == crashsim::code::completed ? 0 : 1;
  } else {
    rc = recoverHost(scenario, paths, cmd.rebaseline, cmd.gcGraceMs, cancel, summary);
  }
  gRunFinished.store(true);
  std::cout << summary.dump() << std::endl;
  crashsim::failpoints::writeHitCountsIfRequested();
  writeExitMarker(paths.storeDir, run ? "run" : "recover", summary);
  return rc;
}

int agentMain(int argc, char** argv) {
  if (auto rc = installFaultInjection()) return *rc;
  CLI::App app{"crashsim-agent: the durable agent runtime child process"};
  AgentCommand cmd;
  defineCommands(app, cmd);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage(std::string(crashsim::code::agent_usage) + ": " + e.what() +
                 " (see crashsim-agent --help)");
  }
  if (cmd.gc->parsed()) {  // maintenance: no scenario
    try {
      return runGc(cmd);
    } catch (const crashsim::Error& e) {
      std::cout << Json{{"error", Json{{"code", e.code()}, {"message", e.what()}}}}.dump()
                << std::endl;
      return usage(e.code() + ": " + e.what());
    }
  }
  crashsim::Scenario scenario;
  try {
    scenario = crashsim::loadScenario(cmd.scenarioFile);
  } catch (const crashsim::Error& e) {
    return usage(e.code() + ": " + e.what());
  }
  try {
    if (cmd.seed->parsed()) {
      fs::create_directories(cmd.workspace);
      crashsim::seedWorkspace(scenario, cmd.workspace);
      std::cout << Json{{"seeded", scenario.files.size()}, {"workspace", cmd.workspace}}.dump()
                << "\n";
      return 0;
    }
    return runOrRecover(cmd, scenario);
  } catch (const crashsim::Error& e) {
    const Json error{{"error", Json{{"code", e.code()}, {"message", e.what()}}}};
    std::cout << error.dump() << std::endl;
    if (!cmd.store.empty() && fs::is_directory(cmd.store))
      writeExitMarker(cmd.store, "error", error);
    return usage(e.code() + ": " + e.what());
  } catch (const std::exception& e) {
    const Json error{
        {"error", Json{{"code", crashsim::code::internal_error}, {"message", e.what()}}}};
    std::cout << error.dump() << std::endl;
    return usage(std::string(crashsim::code::internal_error) + ": " + e.what());
  }
}

}  // namespace
