// The corrupt mode (--mode corrupt): the kill as in kill mode (its kill case verifies V2–V8 of
// this crash state), the seeded damage, then inspect and recovery judged by C1.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
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

// The kill as in kill mode; V1 judges it (its kill case `killCase` verifies V2–V8 of this crash
// state). False when there is no crash state to damage.
bool killForCorruption(CaseRun& cr, const CaseId& killCase, const fs::path& store,
                       const fs::path& ws) {
  const Scenario& sc = cr.ref.scenario;
  copyDir(cr.ref.templateWorkspace, ws);
  SpawnSpec run = runSpec(cr.opts, sc, store, ws);
  run.stderrFile = cr.dir / "run.stderr";
  run.stdoutFile = cr.dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(15000);
  const ChildResult child = driverOf(cr.opts).crashAt(run, cr.id.failpoint, cr.id.hit);
  cr.say(fmt::format("agent run armed at {}#{}: control '{}', {}", cr.id.failpointName(), cr.id.hit,
                     child.controlLine, child.describe()));
  for (auto v : {"V2", "V3", "V5", "V6", "V7", "V8"})
    cr.checks.na(v, "corrupt mode: the undamaged crash state is verified by " + killCase.str() +
                        "; C1 judges the damaged one");
  if (auto v1 = killProblem(child, cr.id.failpointName(), cr.id.hit, run, store); !v1.empty()) {
    cr.checks.fail("V1", v1);
    cr.checks.na("C1", "no crash state (V1 failed)");
    cr.checks.na("V4", "no crash state (V1 failed)");
    return false;
  }
  keepCrashedCopy(cr.opts, cr.dir, store, ws);
  return true;
}

// The case's seeded damage applied to the crash state's store files (recorded in the case);
// nullopt (V1 failed) when it could not be applied.
std::optional<AppliedCorruption> damageStore(CaseRun& cr, const fs::path& store) {
  AppliedCorruption applied;
  try {
    applied = applyCorruption(store, cr.id.seed.value_or(0));
  } catch (const std::exception& e) {
    cr.checks.fail("V1", std::string("applying the damage: ") + e.what());
    cr.checks.na("C1", "no damaged store (V1 failed)");
    cr.checks.na("V4", "no damaged store (V1 failed)");
    return std::nullopt;
  }
  cr.checks.pass("V1");
  cr.record.corruption = applied.record;
  cr.say(fmt::format("damage {}: {} ({})", applied.record.kind, applied.record.detail,
                     applied.record.detectable ? "must be refused"
                     : applied.mayGoUnnoticed  ? "undetectable by design"
                                               : "must be refused or change nothing"));
  if (cr.opts.keepDir)
    std::ofstream(cr.dir / "corruption.json") << Json{{"kind", applied.record.kind},
                                                      {"detail", applied.record.detail},
                                                      {"detectable", applied.record.detectable},
                                                      {"mayGoUnnoticed", applied.mayGoUnnoticed}}
                                                     .dump()
                                              << "\n";
  return applied;
}

// `crashsim inspect` of the damaged store: its fail-closed code and whether it changed the files.
void inspectDamaged(CaseRun& cr, const fs::path& store, CorruptObservation& o) {
  const StoreFiles damaged = storeFiles(store);
  SpawnSpec inspect;
  inspect.exe = cr.opts.crashsim.empty() ? locateCrashsim() : cr.opts.crashsim;
  inspect.forkServer = true;
  inspect.args = {"inspect", store.string(), "--json"};
  inspect.stdoutFile = cr.dir / "inspect.stdout";
  inspect.stderrFile = cr.dir / "inspect.stderr";
  o.inspect = runToEnd(inspect);
  o.inspectCode = failClosedCodeOf(inspect.stdoutFile);
  o.inspectChanged = storeFilesChange(damaged, storeFiles(store));
  cr.say(fmt::format("crashsim inspect: {} {}", o.inspect.describe(), o.inspectCode));
}

// The workspace recovery is handed: the case's own, or for workspace_wrong a copy that is not it
// (C1 then proves that copy unchanged: no marker created in it, no file touched).
fs::path recoveryWorkspace(const AppliedCorruption& applied, const fs::path& ws,
                           const fs::path& dir) {
  const fs::path recoverWs = applied.wrongWorkspace == WrongWorkspace::none ? ws : dir / "wrong-ws";
  if (recoverWs != ws) {
    copyDir(ws, recoverWs);
    const fs::path marker = recoverWs / kMarkerFile;
    fs::remove(marker);
    if (applied.wrongWorkspace == WrongWorkspace::otherMarker)  // spec h's marker bytes
      std::ofstream(marker, std::ios::binary)
          << R"({"schemaVersion":1,"workspaceId":"0badc0de-0000-4000-8000-000000000000"})"
          << "\n";
  }
  return recoverWs;
}

// Recovery to the end on the damaged store: refused (exit 2) → what it changed; otherwise the
// contract's outcome as for the kill case, and whether a completed call lacks its response.
void recoverDamaged(CaseRun& cr, const CaseId& killCase, const fs::path& store, const fs::path& ws,
                    const fs::path& recoverWs, bool afterCrash, CorruptObservation& o) {
  const Scenario& sc = cr.ref.scenario;
  const WorkspaceSnapshot atCrash = snapshotWorkspace(recoverWs);
  auto markerOf = [&] {
    return fs::exists(recoverWs / kMarkerFile) ? readFile(recoverWs / kMarkerFile) : "(none)";
  };
  const std::string markerAtCrash = markerOf();
  const auto effectsAtCrash = readEffects(store / "effects.jsonl");
  const StoreFiles beforeRecover = storeFiles(store);
  SpawnSpec recover = recoveryToEnd(cr.opts, sc, store, recoverWs, cr.dir);
  o.recover = driverOf(cr.opts).runToEnd(recover);
  o.recoverCode = failClosedCodeOf(recover.stdoutFile);
  cr.say(fmt::format("recovery to the end: {} {}", o.recover.describe(), o.recoverCode));
  if (o.recover.exited && o.recover.exitCode == 2) {
    o.recoverChanged = storeFilesChange(beforeRecover, storeFiles(store));
    o.toolRan = readEffects(store / "effects.jsonl") != effectsAtCrash;
    o.workspaceChanged = snapshotWorkspace(recoverWs) != atCrash || markerOf() != markerAtCrash;
  } else if (o.recover.exited) {
    Checks outcome;
    const CaseExpectation x = expectCase(sc, cr.id.failpoint, cr.id.hit);
    checkRecovery(killCase, sc, x, barrier::CrashFacts{}, afterCrash, cr.ref, store, ws, atCrash,
                  o.recover.exitCode, recover, outcome);
    o.contractOutcome = outcome;
    try {
      o.completedWithoutResponse = completedWithoutResponse(*RuntimeStore::open(store));
    } catch (const std::exception& e) {
      o.completedWithoutResponse = std::string("the recovered store does not open: ") + e.what();
    }
  }
}

// A corrupt case (--mode corrupt): the kill as in kill mode (its kill case verifies V2–V8 of
// this crash state), the seeded damage, then inspect and recovery judged by C1
// (verdicts/c1_corrupt.h).
void runCorruptCase(CaseRun& cr) {
  const Scenario& sc = cr.ref.scenario;
  const fs::path store = cr.dir / "store", ws = cr.dir / "ws";
  CaseId killCase = cr.id;
  killCase.mode = std::string(killMode().name());
  killCase.seed.reset();
  if (!killForCorruption(cr, killCase, store, ws)) return;
  const std::optional<AppliedCorruption> applied = damageStore(cr, store);
  if (!applied) return;
  // V4 reads a copy: even a read-only SQLite open may change a damaged store's files.
  copyDir(store, cr.dir / "damaged-view");
  checkDamagedLedgerDecisions(cr.dir / "damaged-view", applied->expectedDecisions, cr.checks);
  fs::remove_all(cr.dir / "damaged-view");
  CorruptObservation o;
  inspectDamaged(cr, store, o);
  const bool afterCrash = workspace::afterCrashApplies(sc.spec, cr.id.failpointName());
  if (afterCrash) workspace::applyAfterCrash(sc.spec, ws);
  const fs::path recoverWs = recoveryWorkspace(*applied, ws, cr.dir);
  recoverDamaged(cr, killCase, store, ws, recoverWs, afterCrash, o);
  judgeCorruption(*applied, o, *cr.record.corruption, cr.checks);
}

// Seeded damage to the store files of a kill's crash state (crashsim/harness/
// corruption_injector.h), judged by C1 (verdicts/c1_corrupt.h).
class CorruptMode final : public FaultMode {
 public:
  std::string_view name() const override { return "corrupt"; }
  bool seeded() const override { return true; }
  std::string doubleFaultRefusal() const override {
    return "--double-faults is kill mode only: a corrupt case damages the crash state of one kill";
  }
  std::vector<uint64_t> seeds(const CaseId& id, uint64_t sweepSeed, int states) const override {
    return corruptSeeds(id, sweepSeed, states);
  }
  void run(CaseRun& r) const override { runCorruptCase(r); }
  std::vector<std::string_view> verdicts() const override { return verdictsWith({"C1"}); }
};

}  // namespace

const FaultMode& corruptMode() {
  static const CorruptMode mode;
  return mode;
}

}  // namespace crashsim::harness
