// The reference run of a scenario (crashsim/harness/case_runner.h buildReference): seeded, run
// unarmed to its end, checked against the oracle's prediction; and the reference recoveries the
// recovery-barrier double faults are planned from.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/harness/corruption_injector.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/powerloss_mode.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"
#include "modes/case_run.h"
#include "verdicts/ancestor_tamper.h"
#include "verdicts/barrier.h"
#include "verdicts/c1_corrupt.h"
#include "verdicts/coverage.h"
#include "verdicts/d1_d2_powerloss.h"
#include "verdicts/durable_replace.h"
#include "verdicts/fail_closed.h"
#include "verdicts/file_steps.h"
#include "verdicts/h1_race.h"
#include "verdicts/legacy_import.h"
#include "verdicts/observed_store.h"
#include "verdicts/recovery_barrier.h"
#include "verdicts/recovery_kill_state.h"
#include "verdicts/stop.h"
#include "verdicts/t1_exists.h"
#include "verdicts/v1_kill.h"
#include "verdicts/v2_integrity.h"
#include "verdicts/v3_durable_facts.h"
#include "verdicts/v4_decisions.h"
#include "verdicts/v5_lineage.h"
#include "verdicts/v5_plan.h"
#include "verdicts/v6_rebuild.h"
#include "verdicts/v7_repair.h"
#include "verdicts/v8_recovery.h"
#include "verdicts/verdict.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// The reference recovery of the primary (fp, hit) (oracle.h sweptRecoveryBarriers): a fresh
// agent run killed there, the scenario's afterCrash change when it names that point, then one
// unarmed `crashsim-agent recover`. It must reach exactly the recovery points the oracle predicts
// and at least the barriers the contract's recovery commits need (every terminal fact, bundle,
// claim, target run, continuation-start, T1 and T2 is a COMMIT; every replace takes fsync, rename
// and fsync-dir); only its S and F counts are taken, as the first run's are from the reference
// run. Returns "" or the problem.
std::string referenceRecovery(const Scenario& sc, const RunOptions& opts, const Reference& ref,
                              const fs::path& dir, CrashPoint fp, int hit,
                              RecoveryBarrierHits& out) {
  const std::string at = fmt::format("reference recovery of {}#{}", fp.name(), hit);
  const fs::path rdir = dir / sanitize(fmt::format("rr-{}-{}", fp.name(), hit));
  fs::remove_all(rdir);
  fs::create_directories(rdir / "store");
  const fs::path store = rdir / "store", ws = rdir / "ws";
  copyDir(ref.templateWorkspace, ws);
  SpawnSpec run = runSpec(opts, sc, store, ws);
  run.stderrFile = rdir / "run.stderr";
  run.stdoutFile = rdir / "run.stdout";
  run.timeout = std::chrono::milliseconds(15000);
  const auto child = driverOf(opts).crashAt(run, fp, hit);
  if (auto bad = killProblem(child, fp.str(), hit, run, store); !bad.empty())
    return at + ": the agent run: " + bad;
  if (workspace::afterCrashApplies(sc.spec, fp.str())) workspace::applyAfterCrash(sc.spec, ws);
  SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, rdir);
  const auto r = driverOf(opts).runToEnd(recover);
  if (!r.exited || r.exitCode != 0)
    return fmt::format("{} {}: {}", at, r.describe(), lastLine(recover.stderrFile));
  const auto hits = driverOf(opts).readHits(rdir / "recover-hits.json");
  if (!hits) return at + " wrote no readable failpoint hit counts";
  const auto want = predictedRecoveryHits(sc, fp, hit);
  if (auto bad = reachDifference(want, *hits, recoveryReachPoints(), at.c_str()); !bad.empty())
    return bad;
  using namespace points;
  const int minS = want[P2] + want[P5] + want[P8] + want[P10] + want[P11] + want[P14] + want[P15];
  const int minF = 3 * want[P3];
  out = {fp, hit, (*hits)[S], (*hits)[F]};
  if (out.s < minS || out.f < minF)
    return fmt::format(
        "{} reached {} store COMMIT barrier(s) S and {} file-step barrier(s) F; its named "
        "commits and file replaces alone need at least {} and {}",
        at, out.s, out.f, minS, minF);
  if (!opts.keepFailures) fs::remove_all(rdir);
  return "";
}

// The scenario's seeded workspace, the template every case copies. Returns "" or the problem.
std::string seedTemplate(const Scenario& scenario, const RunOptions& opts, const fs::path& dir,
                         const Reference& ref) {
  auto s = driverOf(opts).seed(scenario, ref.templateWorkspace, dir / "seed.stderr");
  if (!s.exited || s.exitCode != 0)
    return fmt::format("crashsim-agent seed {}: {}", s.describe(), lastLine(dir / "seed.stderr"));
  if (!fs::is_directory(ref.templateWorkspace))
    return "crashsim-agent seed exited 0 but wrote no workspace (is CRASHSIM_AGENT " +
           opts.agent.string() + " a crashsim-agent?)";
  return "";
}

// The unarmed run to its end, counting hits and tracing file steps; reads the store settings
// its normal-exit marker reports. Returns "" or the problem.
std::string runReference(const Scenario& scenario, const RunOptions& opts, const fs::path& dir,
                         Reference& ref) {
  const RuntimeDriver& driver = driverOf(opts);
  copyDir(ref.templateWorkspace, dir / "ws");
  writeLegacyJsonl(scenario, dir / "store");  // a legacy store's JSONL (nothing otherwise)
  SpawnSpec run = runSpec(opts, scenario, dir / "store", dir / "ws");
  driver.reportHits(run, dir / "hits.json");
  driver.traceFileSteps(run, dir / "fs-trace.jsonl");
  run.stderrFile = dir / "run.stderr";
  run.stdoutFile = dir / "run.stdout";
  auto r = driver.runToEnd(run);
  if (!r.exited || r.exitCode != 0)
    return fmt::format("reference run {}: {}", r.describe(), lastLine(run.stderrFile));
  if (!fs::exists(dir / "store" / "agent-exit.json"))
    return "reference run exited 0 without its normal-exit marker agent-exit.json";
  try {
    const Json marker = Json::parse(readFile(dir / "store" / "agent-exit.json"));
    ref.journalMode = marker.at("summary").value("journalMode", "");
    ref.synchronous = marker.at("summary").value("synchronous", "");
  } catch (const std::exception& e) {
    return std::string("reference run: unreadable agent-exit.json: ") + e.what();
  }
  return "";
}

// The durability every kill, Stop and corrupt verdict assumes (README "Durability"): the
// store in WAL mode with synchronous FULL or EXTRA, as the connection reports it. A process
// kill cannot lose what a weaker store leaves in the page cache, so no case would see it: the
// setting itself fails every case (V1). Power-loss sweeps may ask for NORMAL to measure it,
// and their D1 judges what a weaker store loses.
std::string storeSettingsProblem(const Reference& ref, const RunOptions& opts) {
  const FaultMode* mode = findFaultMode(opts.mode);
  if (!(mode && mode->dropsUnsyncedWrites()) &&
      (ref.journalMode != "wal" || (ref.synchronous != "FULL" && ref.synchronous != "EXTRA")))
    return fmt::format(
        "the agent's store runs journal_mode={} synchronous={}; the contract's commits need wal "
        "and FULL",
        ref.journalMode, ref.synchronous);
  return "";
}

// The hits the reference run reached against the oracle's prediction, the barriers' lower bound
// and the file steps' order. Returns "" or the problem.
std::string referenceReachProblem(const Scenario& scenario, const Reference& ref,
                                  const fs::path& dir) {
  // The plan comes from the oracle's prediction; a reference run that reaches other hits means
  // the plan is not the runtime's set of crash windows (an error, never a smaller sweep).
  if (auto bad = reachDifference(predictedHits(scenario), ref.hits,
                                 pointRange(points::P0, points::P11), "the reference run");
      !bad.empty())
    return bad;
  // ... and its checkpoint captures (P18–P22 once per capture that c.4 lets through: a capture
  // refused before P18, e.g. by a conversion attribute, is no crash window of the plan).
  if (auto bad = reachDifference(predictedHits(scenario), ref.hits,
                                 pointRange(points::P18, points::P22), "the reference run");
      !bad.empty())
    return bad;
  for (CrashPoint fp : {points::P16, points::P17})
    if (ref.hits[fp] != predictedImportBatches(scenario))
      return fmt::format("the reference run reached {} {} time(s), the oracle predicts {}",
                         fp.name(), ref.hits[fp], predictedImportBatches(scenario));
  // The barriers have no prediction (the contract does not fix a run's number of transactions
  // or file steps), only a lower bound.
  if (auto bad = barrierBoundProblem(predictedHits(scenario), ref.hits); !bad.empty()) return bad;
  // ... and the file steps are named: each replace's fsync, rename and directory fsync in the
  // order a power cut allows (verdicts/file_steps.h).
  if (auto bad = fileReplaceOrderProblem(dir / "fs-trace.jsonl"); !bad.empty())
    return "reference run: " + bad;
  return "";
}

// Sanity: the reference must meet the scenario's own expectations, each call run once. Returns
// "" or the (last) problem.
std::string referenceExpectationProblem(const Scenario& scenario, const Reference& ref,
                                        const fs::path& dir) {
  std::string problem;
  if (auto bad = workspace::expectedProblems(scenario.spec, dir / "ws"); !bad.empty())
    problem = "reference run: " + bad.front();
  for (const auto& [call, n] : ref.executionsPerCall)
    if (n != 1) problem = fmt::format("reference run executed {} {} times", call, n);
  return problem;
}

// The reference recoveries the +R:S#k / +R:F#k double faults are planned from. Returns "" or the
// first problem.
std::string referenceRecoveries(const Scenario& scenario, const RunOptions& opts,
                                const fs::path& dir, Reference& ref) {
  const auto hits = predictedHits(scenario);
  for (CrashPoint fp : pointRange(points::P0, points::P9))
    for (int h = 1; h <= hits[fp]; ++h) {
      if (!sweptRecoveryBarriers(scenario, fp, h)) continue;
      RecoveryBarrierHits rb;
      if (auto bad = referenceRecovery(scenario, opts, ref, dir, fp, h, rb); !bad.empty())
        return bad;
      ref.recoveryBarriers.push_back(rb);
    }
  return "";
}

}  // namespace

Reference buildReference(const Scenario& scenario, const RunOptions& opts) {
  Reference ref;
  ref.scenario = scenario;
  fs::path dir = opts.workRoot / ("ref-" + sanitize(scenario.id));
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  ref.templateWorkspace = dir / "template";
  if (!(ref.problem = seedTemplate(scenario, opts, dir, ref)).empty()) return ref;
  if (!(ref.problem = runReference(scenario, opts, dir, ref)).empty()) return ref;
  if (!(ref.problem = storeSettingsProblem(ref, opts)).empty()) return ref;
  ref.finalWorkspace = snapshotWorkspace(dir / "ws");
  ref.executionsPerCall = readEffects(dir / "store" / "effects.jsonl");
  if (auto hits = driverOf(opts).readHits(dir / "hits.json")) {
    ref.hits = *hits;
  } else {
    ref.problem = "the reference run wrote no readable failpoint hit counts (" +
                  (dir / "hits.json").string() +
                  "): is CRASHSIM_AGENT an instrumented crashsim-agent?";
    return ref;
  }
  if (!(ref.problem = referenceReachProblem(scenario, ref, dir)).empty()) return ref;
  ref.problem = referenceExpectationProblem(scenario, ref, dir);
  if (!opts.keepFailures) fs::remove_all(dir / "store"), fs::remove_all(dir / "ws");
  if (ref.problem.empty() && opts.recoveryBarriers && !scenario.spec.legacyStore)
    ref.problem = referenceRecoveries(scenario, opts, dir, ref);
  return ref;
}

}  // namespace crashsim::harness
