// The legacy import's cases (P16, P17, kill mode): the agent run killed inside its store's legacy
// JSONL import, optionally the first recovery killed there too, then recovery to the end
// (verdicts/legacy_import.h).
#include "verdicts/legacy_import.h"

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

// The state a kill inside the legacy import left (the agent run's, or with `recovery` the killed
// recovery's): V2 integrity, V3 the import's durable state (verdicts/legacy_import.h), V5 a
// read-only `crashsim inspect` of the pending directory succeeds and changes no byte of it.
void checkImportKillState(const CaseId& id, const Scenario& sc, const fs::path& store,
                          const fs::path& dir, const RunOptions& opts, bool recovery, Checks& c) {
  const std::string when = recovery ? "after the recovery kill: " : "";
  try {
    checkIntegrity(store, when, c);
    for (const auto& bad : importStateProblems(sc, store, expectImportStoredEvents(sc, id), false))
      c.fail("V3", when + bad);
    if (!c.failed("V3")) c.pass("V3");
  } catch (const std::exception& e) {
    c.fail("V3", when + "error: " + e.what());
  }
  SpawnSpec inspect;
  inspect.exe = opts.crashsim.empty() ? locateCrashsim() : opts.crashsim;
  inspect.forkServer = true;
  inspect.args = {"inspect", store.string(), "--json"};
  inspect.stdoutFile = dir / "inspect.stdout";
  inspect.stderrFile = dir / "inspect.stderr";
  const StoreFiles before = storeFiles(store);
  const ChildResult r = runToEnd(inspect);
  // inspect exits 1 when a run's plan is blocked: here exactly when the JSONL leaves a legacy
  // run interrupted (its unsettled call blocks it).
  const int wantExit = interruptedLegacyRuns(sc) > 0 ? 1 : 0;
  if (!r.exited || r.exitCode != wantExit)
    c.fail("V5", fmt::format("{}crashsim inspect of the half-imported store: {} (expected exit "
                             "{}): {}",
                             when, r.describe(), wantExit, lastLine(inspect.stderrFile)));
  else if (auto changed = storeFilesChange(before, storeFiles(store)); !changed.empty())
    c.fail("V5", when + "crashsim inspect (read-only) changed the store directory: " + changed);
  else if (!c.failed("V5"))
    c.pass("V5");
}

}  // namespace

// A legacy import case (P16/P17, kill mode): the agent run killed inside its store's legacy
// import, optionally the first recovery killed there too, then recovery to the end. The
// scenario's run never started: recovery completes the import and runs nothing (V8).
void runImportCase(CaseRun& cr) {
  const Scenario& sc = cr.ref.scenario;
  const fs::path store = cr.dir / "store", ws = cr.dir / "ws";
  for (auto v : {"V6", "V7"})
    cr.checks.na(v, "legacy import case: no run of the scenario exists, only imported legacy runs");
  CaseId primary = cr.id;
  primary.recoveryFailpoint.reset();
  primary.recoveryHit.reset();
  if (!restoreCrashState(cr.opts, cr.id, store, ws, cr.say)) {
    copyDir(cr.ref.templateWorkspace, ws);
    writeLegacyJsonl(sc, store);
    SpawnSpec run = runSpec(cr.opts, sc, store, ws);
    run.stderrFile = cr.dir / "run.stderr";
    run.stdoutFile = cr.dir / "run.stdout";
    run.timeout = std::chrono::milliseconds(15000);
    const ChildResult child = driverOf(cr.opts).crashAt(run, cr.id.failpoint, cr.id.hit);
    cr.ph.child(child, "run");
    cr.ph.to("verify");
    cr.say(fmt::format("agent run armed at {}#{}: control '{}', {}", cr.id.failpointName(),
                       cr.id.hit, child.controlLine, child.describe()));
    if (auto v1 = killProblem(child, cr.id.failpointName(), cr.id.hit, run, store); !v1.empty()) {
      cr.checks.fail("V1", v1);
      for (auto v : {"V2", "V3", "V4", "V5", "V8"}) cr.checks.na(v, "no crash state (V1 failed)");
      return;
    }
    keepCrashState(cr.opts, cr.id, cr.dir, store, ws);
    checkImportKillState(primary, sc, store, cr.dir, cr.opts, false, cr.checks);
  }
  if (cr.id.isDoubleFault()) {
    SpawnSpec first = recoverSpec(cr.opts, sc, store, ws);
    first.timeout = std::chrono::milliseconds(20000);
    first.stderrFile = cr.dir / "recover1.stderr";
    first.stdoutFile = cr.dir / "recover1.stdout";
    const CrashPoint rfp = *cr.id.recoveryFailpoint;
    const int rhit = cr.id.recoveryHit.value_or(1);
    const ChildResult r1 = driverOf(cr.opts).crashAt(first, rfp, rhit);
    cr.ph.child(r1, "run");
    cr.ph.to("verify");
    cr.say(fmt::format("recovery armed at {}#{}: control '{}', {}", rfp.name(), rhit,
                       r1.controlLine, r1.describe()));
    if (auto bad = killProblem(r1, rfp.str(), rhit, first, store); !bad.empty()) {
      cr.checks.fail("V1", "the recovery process: " + bad);
      for (auto v : {"V4", "V8"})
        cr.checks.na(v, "the recovery process was not killed where planned (V1 failed)");
      return;
    }
    checkImportKillState(cr.id, sc, store, cr.dir, cr.opts, true, cr.checks);
  }
  if (!cr.checks.failed("V1")) cr.checks.pass("V1");

  const WorkspaceSnapshot atCrash = snapshotWorkspace(ws);
  SpawnSpec recover;
  const ChildResult r = recoverCase(cr, sc, store, ws, recover);
  if (!cr.id.isDoubleFault())
    checkRecoveryReach(cr.dir / "recover-hits.json",
                       predictedRecoveryHits(sc, cr.id.failpoint, cr.id.hit), cr.checks);
  if (!r.exited || r.exitCode != 0) {
    cr.checks.fail("V8", fmt::format("crashsim-agent recover {}: {}", r.describe(),
                                     lastLine(recover.stderrFile)));
    cr.checks.na("V4", "the import never ended (V8 failed)");
    return;
  }
  try {
    for (const auto& bad : importStateProblems(sc, store, importedLegacyEvents(sc).size(), true))
      cr.checks.fail("V8", "after recovery: " + bad);
    // Nothing of the scenario ran: no tool executed, the workspace is as the kill left it.
    for (const auto& [call, n] : readEffects(store / "effects.jsonl"))
      cr.checks.fail(
          "V8",
          fmt::format("{} executed {} time(s), but the scenario's run never started", call, n));
    if (snapshotWorkspace(ws) != atCrash)
      cr.checks.fail("V8",
                     "recovery changed the workspace although no run of the scenario existed");
  } catch (const std::exception& e) {
    cr.checks.fail("V8", std::string("error after recovery: ") + e.what());
  }
  checkImportedDecisions(sc, store, cr.checks);
  if (!cr.checks.failed("V8")) cr.checks.pass("V8");
}

}  // namespace crashsim::harness
