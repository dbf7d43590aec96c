// crashsim/harness/sweep.h — case planning and the parallel sweep.
//
// Planning comes from the oracle's prediction (plan.h), never from a run of the code under test:
// every (failpoint, hit) the oracle predicts the agent run reaches is a case — under --mode
// powerloss, `states` cases with the seeds powerlossSeeds() gives (powerloss_mode.h) — and with
// --double-faults every recovery kill it predicts for each primary. Then the sweep checks the
// reference runs reached exactly the predicted hits, and each primary's unarmed recovery the
// predicted recovery hits (V3 of that case). Errors (exit 2, a SweepError): a selection that
// plans no case, a reference run that disagrees with the prediction, --expect-cases /
// --expect-manifest that differ from the plan, a planned case that did not run.
//
// V9 (determinism) re-runs a case and compares the verdict record (checks and reasons,
// timings excluded). It runs for every case with verifyDeterminism, for none with
// skipDeterminism (a sanitizer sweep: the second run repeats the first one's code path, and the
// main job judges V9), otherwise for a deterministic sample: the first hit of every (scenario,
// failpoint) single-fault case.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/plan.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {

struct SweepOptions {
  std::vector<std::string> scenarios;   // empty = all
  std::vector<std::string> failpoints;  // empty = all ("P4"); a double fault is selected by
                                        // its agent or its recovery failpoint
  std::vector<std::string> caseGlobs;   // --case GLOB: fnmatch on the case id; empty = all
  std::optional<int> expectCases;       // --expect-cases N: the plan must have N cases
  std::optional<std::filesystem::path> expectManifest;  // --expect-manifest FILE (--list output)
  std::string mode = "kill";
  int states = 2;                    // powerloss: seeded crash states per (scenario, fp, hit)
  std::string synchronous = "FULL";  // powerloss: the agent's PRAGMA synchronous (FULL|NORMAL)
  int jobs = 0;                      // 0 = hardware concurrency
  int shardIndex = 0, shardTotal = 1;
  uint64_t seed = 0;
  bool doubleFaults = false;
  bool barriers = true;  // kill mode: also the unnamed barriers S#k / F#k (--no-barriers)
  std::string pathMutations = "p4";  // kill mode: off | p4 | all (verdicts/path_mutations.h)
  bool verifyDeterminism = false;    // --verify-determinism: V9 for every case
  bool skipDeterminism = false;      // --no-determinism: V9 for none (not with verifyDeterminism)
  bool keepFailures = false;
  std::optional<std::filesystem::path> out;
  std::filesystem::path scenarioDir;
  std::string reproduceExtra;
  bool progressTty = false;  // live progress line on stderr; otherwise a plain line every 5 s
  bool color = false;        // ANSI colour in FAIL lines and the recap (a TTY without NO_COLOR)
};

// An error that makes the sweep's result meaningless (exit 2): the message is one line.
class SweepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The scenarios the options select (all when --scenario is absent). Throws SweepError for an
// empty scenario folder or an unknown scenario id.
std::vector<Scenario> selectScenarios(const SweepOptions& opts);

// The plan for these options (plan.h), checked: throws SweepError when it holds no case or
// differs from --expect-cases / --expect-manifest. `barrierHits`: the reference runs' barrier
// counts, one per scenario (empty: no barrier case). Runs nothing.
SweepPlan planCases(const SweepOptions& opts, const std::vector<Scenario>& scenarios,
                    const std::vector<BarrierHits>& barrierHits = {});

// Whether these options plan barrier cases (which need the reference runs first).
bool plansBarriers(const SweepOptions& opts);

// The checked plan with the reference runs it needs, under a fresh work root (ro.workRoot; the
// caller removes it). Barrier cases are planned from the references' counts, so with barriers
// every selected scenario's reference runs before planning (crashsim sweep --list too);
// otherwise the plan comes first and only the scenarios it uses run (none with `listOnly`: the
// work root is then not created). Throws SweepError.
struct PreparedSweep {
  SweepPlan plan;
  std::vector<Reference> refs;  // one per selected scenario (empty problem = built)
  RunOptions ro;
  int jobs = 1;
};
PreparedSweep prepareSweep(const SweepOptions& opts, bool listOnly);

// Runs the sweep, prints progress/failures and a recap to stderr, writes reports when opts.out
// is set. Throws SweepError (or std::runtime_error for I/O) for environment problems.
reports::Report runSweep(const SweepOptions& opts);

// Platform facts for the report (OS, kernel, fs type of storeDir, SQLite, compiler, build).
// journalMode / synchronous come from the reference runs' agent connections ("mixed" when they
// disagree, empty without references).
reports::Platform describePlatform(const std::filesystem::path& storeDir,
                                   const std::vector<Reference>& refs = {});

}  // namespace crashsim::harness
