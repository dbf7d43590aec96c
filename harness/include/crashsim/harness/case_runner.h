// crashsim/harness/case_runner.h — reference runs and one verified case (V1–V9).
//
// Reference run (per scenario): seed a template workspace with `crashsim-agent seed`, run the
// agent unarmed to completion, record the final workspace, the effects log and the failpoint
// hit counts. A case then: copies the template into a fresh workspace + empty store, runs the
// agent armed, SIGKILLs it at the failpoint, checks the crashed store (V1–V7, oracle from
// oracle.h), drives recovery to the end with `crashsim-agent recover` (V8). V9 (same verdict
// record when the case runs again) is evaluated by the sweep for a deterministic sample.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/plan.h"
#include "crashsim/harness/runtime_driver.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {

using WorkspaceSnapshot = std::map<std::string, std::string>;  // relative path → bytes

struct Reference {
  Scenario scenario;
  std::filesystem::path templateWorkspace;
  WorkspaceSnapshot finalWorkspace;
  std::map<std::string, int> executionsPerCall;  // effects log: callId → executions
  PointCounts hits;                              // reached per crash point, barriers included
  std::string problem;                           // non-empty: the reference run itself failed (why)
  // The agent store's settings as the reference run's connection reported them
  // (agent-exit.json summary.journalMode / summary.synchronous).
  std::string journalMode, synchronous;
  // With RunOptions::recoveryBarriers: the barriers the reference recovery of each primary
  // oracle.h sweptRecoveryBarriers names reached (the +R:S#k / +R:F#k double faults' counts).
  std::vector<RecoveryBarrierHits> recoveryBarriers;
};

struct RunOptions {
  std::filesystem::path agent;
  // The program under test (null: the crashsim-agent driver of `agent`, driverOf).
  std::shared_ptr<const RuntimeDriver> driver;
  // The crashsim binary V5 runs `crashsim ledger resolve` with (a second process; empty = V5
  // compares no second process). locateCrashsim() finds it.
  std::filesystem::path crashsim;
  std::filesystem::path workRoot;                // per-case directories are created under it
  std::optional<std::filesystem::path> keepDir;  // run CASE --keep DIR: use and keep this dir
  bool keepFailures = false;
  bool verbose = false;
  std::string mode = "kill";
  std::string synchronous = "FULL";  // powerloss: the child's PRAGMA synchronous (FULL | NORMAL)
  std::string reproduceExtra;        // appended to reproduce lines (e.g. " --scenarios DIR")
  // Primary cases keep their crashed store + workspace (crashStateDir) so that their
  // double-fault cases start from that exact state instead of killing a new agent run.
  bool keepCrashStates = false;
  // buildReference also runs the reference recoveries of the primaries whose recovery process
  // the double-fault sweep kills at its own barriers (Reference::recoveryBarriers).
  bool recoveryBarriers = false;
};

// The driver of the program under test: opts.driver, else the crashsim-agent driver of opts.agent.
const RuntimeDriver& driverOf(const RunOptions& opts);

struct CaseOutcome {
  reports::CaseRecord record;
  std::filesystem::path keptAt;  // empty when the case dir was removed
  std::vector<std::string> log;  // verbose narrative (crashsim run)
};

// Builds the reference for one scenario under opts.workRoot/ref-<id>. Sets `problem` when the
// run fails, writes no readable hit counts, or reaches other hits than predictedHits().
Reference buildReference(const Scenario& scenario, const RunOptions& opts);

// Runs and verifies one case. Never throws for a contract violation: failures are checks.
CaseOutcome runCase(const CaseId& id, const Reference& ref, const RunOptions& opts);

// Where a primary case keeps its crash state when opts.keepCrashStates is set.
std::filesystem::path crashStateDir(const RunOptions& opts, const CaseId& primary);

// Snapshot of a workspace directory (regular files; the identity marker is excluded).
WorkspaceSnapshot snapshotWorkspace(const std::filesystem::path& dir);

// Per-callId execution counts from an effects log (JSON lines with "callId").
std::map<std::string, int> readEffects(const std::filesystem::path& file);

// The record of a case before any check ran: its identity (a double fault's second point in
// recoveryFailpoint) and its reproduce line.
reports::CaseRecord caseRecordOf(const CaseId& id, const RunOptions& opts);

// The reproduce line printed for every failure.
std::string reproduceLine(const CaseId& id, const RunOptions& opts);

// Root for per-case temp dirs: $TMPDIR-respecting temp dir, or /dev/shm for kill mode.
std::filesystem::path defaultWorkRoot(const std::string& mode);

}  // namespace crashsim::harness
