// crashsim/harness/sweep.h — case planning and the parallel sweep.
//
// Planning: one reference run per selected scenario; every (failpoint, hit) the reference
// reached becomes a case (exhaustive) — under --mode powerloss, `states` cases with the seeds
// powerlossSeeds() gives (powerloss_checks.h) — sorted by CaseId. --shard I/N keeps primary cases
// whose position in that order is ≡ I (mod N); a primary case's double faults (derived from the hit
// counts of its own unarmed recovery run: P8, P9, P10, P11 — the recovery-side failpoints)
// always run in the same shard, so shards are disjoint and their union is the full sweep.
//
// V9 (determinism) re-runs a case and compares the verdict record (checks and reasons,
// timings excluded). It runs for every case with verifyDeterminism, otherwise for a
// deterministic sample: the first hit of every (scenario, failpoint) single-fault case.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {

struct SweepOptions {
  std::vector<std::string> scenarios;   // empty = all
  std::vector<std::string> failpoints;  // empty = all ("P4")
  std::string mode = "kill";
  int states = 2;                    // powerloss: seeded crash states per (scenario, fp, hit)
  std::string synchronous = "FULL";  // powerloss: the agent's PRAGMA synchronous (FULL|NORMAL)
  int jobs = 0;                      // 0 = hardware concurrency
  int shardIndex = 0, shardTotal = 1;
  uint64_t seed = 0;
  bool doubleFaults = false;
  bool verifyDeterminism = false;
  bool keepFailures = false;
  std::optional<std::filesystem::path> out;
  std::filesystem::path scenarioDir;
  std::string reproduceExtra;
  bool progressTty = false;  // live progress line on stderr
};

// Runs the sweep, prints progress/failures to stderr, writes reports when opts.out is set.
// Throws std::runtime_error for environment problems (missing agent, bad scenario, ...).
reports::Report runSweep(const SweepOptions& opts);

// Platform facts for the report (OS, kernel, fs type of storeDir, SQLite, compiler, build).
// journalMode / synchronous come from the reference runs' agent connections ("mixed" when they
// disagree, empty without references).
reports::Platform describePlatform(const std::filesystem::path& storeDir,
                                   const std::vector<Reference>& refs = {});

}  // namespace crashsim::harness
