// The kill and power-loss case (kill and powerloss modes): the armed agent run crashed at the
// point, its crash state checked (V1–V7; D1–D3 after a power cut), then — as the case says — the
// race of two hosts, or the recovery process killed too, and recovery to the end (V8).
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
#include "modes/crash_probes.h"
#include "modes/crash_state.h"
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
#include "verdicts/wh1_user_git.h"
#include "verdicts/wh2_capture_artifacts.h"
#include "verdicts/wh5_git_children.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {
// What the steps of a kill or power-loss case pass on.
struct CrashCase {
  CaseRun& r;
  bool powerloss;     // the crash drops unsynced writes: D1–D3 judge it too
  CaseExpectation x;  // the oracle's (none at a barrier: barrierFacts)
  barrier::CrashFacts barrierFacts;
  PowerlossFindings plFindings;  // D1 and D2 (verdicts/d1_d2_powerloss.h)
  bool afterCrash = false;       // the scenario's afterCrash change applies
  WorkspaceSnapshot atCrash;
  std::optional<recovery_barrier::Judged> rbJudged;
  // A kill inside a checkpoint capture (P18–P22): the id the agent is armed at, while `r.id` is
  // the crash-path point whose ledger state the capture kill leaves (oracle.h predictedCaptures).
  const CaseId* armed = nullptr;
};

// WH1 and WH2 (verdicts/wh1_user_git.h, wh2_capture_artifacts.h) on a capture kill's state.
void checkCapture(const CrashCase& k, std::optional<int> checkpoints, const char* when) {
  CaseRun& cr = k.r;
  if (auto bad = wh1::userGitProblem(cr.ref.templateWorkspace, cr.ws); !bad.empty())
    cr.checks.fail("WH1", when + bad);
  else if (!cr.checks.failed("WH1"))
    cr.checks.pass("WH1");
  if (auto bad = wh2::captureArtifactProblem(cr.store, checkpoints); !bad.empty())
    cr.checks.fail("WH2", when + bad);
  else if (!cr.checks.failed("WH2"))
    cr.checks.pass("WH2");
}

// The armed agent run killed (or its power cut) at the case's point, and V1–V7 (D1–D3) on the
// crash state; or the primary's verified state when the case starts from it. False: no crash
// state (V1 failed).
bool crashAgentRun(CrashCase& k) {
  CaseRun& cr = k.r;
  const CaseId& id = k.armed ? *k.armed : cr.id;
  const RunOptions& opts = cr.opts;
  Checks& c = cr.checks;
  if (restoreCrashState(opts, id, cr.store, cr.ws, cr.say)) {
    // The primary case already killed the agent here and verified V1–V7 on this state.
    for (auto v : {"V3", "V4"}) c.na(v, "crash state verified by the primary case");
    return true;
  }
  copyDir(cr.ref.templateWorkspace, cr.ws);
  SpawnSpec run = runSpec(opts, cr.sc, cr.store, cr.ws);
  run.stderrFile = cr.dir / "run.stderr";
  run.stdoutFile = cr.dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(15000);
  run.watchDescendants = wh5::applies(cr.sc);
  if (k.powerloss) armPowerloss(driverOf(opts), run, id, cr.dir, opts.synchronous);
  auto child = cr.driver.crashAt(run, id.failpoint, id.hit);
  cr.ph.child(child, "run");
  cr.ph.to("verify");
  if (!k.powerloss) wh5::judgeKill(cr.sc, child, "the run: ", c);
  cr.say(fmt::format("agent run armed at {}#{}: control '{}', {}", id.failpointName(), id.hit,
                     child.controlLine, child.describe()));
  std::string v1 = killProblem(child, id.failpointName(), id.hit, run, cr.store);
  if (v1.empty() && k.powerloss) v1 = powerlossCrashProblem(id, cr.dir);
  if (!v1.empty()) {
    c.fail("V1", v1);
    for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"}) c.na(v, "no crash state (V1 failed)");
    return false;
  }
  cr.ph.to("setup");
  if (k.powerloss) keepPowerlossCrashCopy(cr.store, cr.dir);
  keepCrashState(opts, id, cr.dir, cr.store, cr.ws);
  cr.ph.to("verify");
  if (id.isBarrier())
    checkBarrierCrashState(cr.sc, cr.store, cr.dir, opts, k.barrierFacts, c);
  else
    checkNamedCrash(cr.id, k.x, cr.store, cr.dir, opts, c);
  if (k.armed)
    checkCapture(k, expectedCheckpointsAfterCaptureKill(id.failpoint, id.hit), "after the kill: ");
  if (k.powerloss) {
    k.plFindings = checkPowerlossCrash(cr.dir, cr.store, opts.synchronous, c.m);
    durable_replace::check(cr.sc, cr.store, cr.ws, c);  // D3, before any afterCrash change
  }
  return true;
}

// Another process changes the workspace while the agent is down (the scenario's afterCrash, or
// the case's generated change of the target's path). True when that change is a gate: start-up
// must refuse before it writes anything, and the case is judged on that alone.
bool changeWorkspace(CrashCase& k) {
  CaseRun& cr = k.r;
  const CaseId& id = cr.id;
  cr.ph.to("setup");
  k.afterCrash = workspace::afterCrashApplies(cr.sc.spec, id.failpointName());
  if (cr.pathX) {
    pathmut::apply(cr.ref.scenario, id, cr.ws);
    cr.say("applied the path mutation " + id.pathMutation->component + ":" +
           id.pathMutation->mutation + " (" + cr.pathX->rule + ")");
  } else if (k.afterCrash) {
    workspace::applyAfterCrash(cr.sc.spec, cr.ws);
    cr.say("applied the scenario's afterCrash mutations");
  }
  if (!cr.pathX || cr.pathX->kind != pathmut::Expectation::Kind::gate) return false;
  // The workspace root is gone or a file: start-up must refuse before it writes anything.
  const WorkspaceSnapshot storeBefore = snapshotWorkspace(cr.store);
  SpawnSpec recover = recoveryToEnd(cr.opts, cr.sc, cr.store, cr.ws, cr.dir);
  auto r = cr.driver.runToEnd(recover);
  cr.ph.child(r, "recovery");
  cr.ph.to("v8");
  cr.say(
      fmt::format("recovery to the end (expected refused: {}): {}", cr.pathX->code, r.describe()));
  cr.checks.pass("V1");
  checkGateRefusal(*cr.pathX, storeBefore, cr.store, cr.ws, cr.dir / "recover-hits.json", r,
                   recover, cr.checks);
  return true;
}

// The race of two hosts on the crash state (+H2): H1, then V8 from the racer that recovered.
void raceTwoHosts(CrashCase& k) {
  CaseRun& cr = k.r;
  Checks& c = cr.checks;
  if (!c.failed("V1")) c.pass("V1");
  for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7"})
    if (c.m[v].reason == "not evaluated")
      c.na(v, "crash state verified by the primary case; H1 and V8 judge the race");
  if (!cr.mode.isProcessKill() || cr.id.isBarrier()) {
    c.fail("H1", "the race of two hosts follows a named kill of the agent run");
    return;
  }
  runRaceRecovery(cr, k.x, k.afterCrash, k.atCrash);
}

// A kill at the recovery process's own barrier is judged against the primary's crash state
// (verified by the primary case): read it before the recovery touches it.
std::optional<recovery_barrier::Run> readPrimaryState(CrashCase& k) {
  CaseRun& cr = k.r;
  const CaseId& id = cr.id;
  std::optional<recovery_barrier::Run> atPrimary;
  const auto from = continuationCallsFrom(cr.sc, id.failpoint, id.hit);
  try {
    auto st = RuntimeStore::open(cr.store);
    const auto runs = st->listRuns();
    if (runs.size() == 1 && from) {
      atPrimary = recovery_barrier::Run{runs[0].runId, runs[0].status, eventsOf(*st, runs[0])};
      k.rbJudged.emplace();
      k.rbJudged->firstCall = *from;
      k.rbJudged->effectsAtPrimary = readEffects(cr.store / "effects.jsonl");
    }
  } catch (const std::exception& e) {
    cr.say(std::string("reading the primary's crash state: ") + e.what());
  }
  if (!from)
    cr.checks.fail("V1", "oracle: the recovery of " + id.primary().str() +
                             " does not continue; its barriers are not swept");
  else if (!atPrimary)
    cr.checks.fail("V1", "the primary's crash state does not hold exactly one run");
  return atPrimary;
}

// A double fault: the first recovery process killed at its point, then the state it left checked
// (V1–V7); a continuation killed inside its own calls takes the scenario's afterCrash there.
void killRecovery(CrashCase& k) {
  CaseRun& cr = k.r;
  const CaseId& id = cr.id;
  const RunOptions& opts = cr.opts;
  Checks& c = cr.checks;
  std::optional<recovery_barrier::Run> atPrimary;
  if (id.isRecoveryBarrier()) atPrimary = readPrimaryState(k);
  SpawnSpec first = recoverSpec(opts, cr.sc, cr.store, cr.ws);
  first.timeout = std::chrono::milliseconds(20000);
  first.stderrFile = cr.dir / "recover1.stderr";
  first.stdoutFile = cr.dir / "recover1.stdout";
  first.watchDescendants = wh5::applies(cr.sc);
  const CrashPoint rfp = *id.recoveryFailpoint;
  const int rhit = id.recoveryHit.value_or(1);
  auto r1 = cr.driver.crashAt(first, rfp, rhit);
  cr.ph.child(r1, "run");
  cr.ph.to("verify");
  wh5::judgeKill(cr.sc, r1, "the recovery process: ", c);
  cr.say(fmt::format("recovery armed at {}#{}: control '{}', {}", rfp.name(), rhit, r1.controlLine,
                     r1.describe()));
  if (auto bad = killProblem(r1, rfp.str(), rhit, first, cr.store); !bad.empty()) {
    c.fail("V1", "the recovery process: " + bad);
  } else {
    if (!c.failed("V1")) c.pass("V1");
    // The ancestor-tamper mutation, at the P11 kills (claim durable, no target run yet): the
    // P14 state settles the same way, so probing it too would only repeat the question.
    if (cr.mode.isProcessKill() && rfp == points::P11) {
      cr.ph.to("setup");
      if (auto probe = probeAncestorTamper(opts, cr.sc, cr.store, cr.ws, cr.dir, c)) {
        cr.ph.child(*probe, "recovery");
        cr.say("ancestor tamper: recovery of the edited copy " + probe->describe());
      }
      cr.ph.to("verify");
    }
  }
  checkRecoveryKilledState(id, cr.sc, k.x, cr.store, cr.dir, opts, c,
                           k.rbJudged ? &*k.rbJudged : nullptr, atPrimary ? &*atPrimary : nullptr);
  if (id.isRecoveryBarrier()) k.atCrash = snapshotWorkspace(cr.ws);
  if (isContinuationKill(id)) {
    // Killed inside its own calls: the task's end follows from that kill, and from the
    // scenario's external change when it names that point.
    k.afterCrash = workspace::afterCrashApplies(cr.sc.spec, rfp.str());
    if (k.afterCrash) workspace::applyAfterCrash(cr.sc.spec, cr.ws);
    k.atCrash = snapshotWorkspace(cr.ws);
  }
}

// V8: recovery to the end (and V3's recovery reach, D2's recovery half, the T1-exists probe).
void recoverToEnd(CrashCase& k) {
  CaseRun& cr = k.r;
  const CaseId& id = cr.id;
  const Scenario& sc = cr.sc;
  Checks& c = cr.checks;
  SpawnSpec recover;
  const ChildResult r = recoverCase(cr, sc, cr.store, cr.ws, recover);
  if (k.powerloss) checkPowerlossRecovery(k.plFindings, cr.store, r, recover.stdoutFile, c.m);
  if (!id.isDoubleFault() && !id.isBarrier() && !k.powerloss && !c.failed("V1"))
    checkRecoveryReach(cr.dir / "recover-hits.json",
                       predictedRecoveryHits(sc, id.failpoint, id.hit), c);
  // After a kill inside the continuation's own calls, the next recovery recovers that run as a
  // first run of the calls it was making.
  const auto first = isContinuationKill(id) ? continuationFirstCall(sc, id.failpoint, id.hit)
                                            : std::optional<size_t>{};
  if (first && !c.failed("V1"))
    checkRecoveryReach(cr.dir / "recover-hits.json",
                       predictedRecoveryHits(continuationScenario(sc, *first),
                                             *id.recoveryFailpoint, id.recoveryHit.value_or(1)),
                       c);
  if (!r.exited) {
    c.fail("V8", "crashsim-agent recover " + r.describe());
    return;
  }
  checkRecovery(id, sc, first ? expectContinuationKill(sc, id) : k.x, k.barrierFacts, k.afterCrash,
                cr.ref, cr.store, cr.ws, k.atCrash, r.exitCode, recover, c,
                k.rbJudged ? &*k.rbJudged : nullptr);
  if (cr.pathX && cr.pathX->kind == pathmut::Expectation::Kind::adopted)
    checkAdoptedRoot(*cr.pathX, cr.ws, readFile(recover.stdoutFile), c);
  if (cr.mode.isProcessKill() && !id.isDoubleFault() && !id.isBarrier() &&
      id.failpoint == points::P2 && id.hit == 1)
    probeT1Exists(cr.opts, sc, cr.ref, cr.dir, c);
  if (r.exitCode == 0 || r.exitCode == 1) checkLineageDigests(cr.store, "after recovery: ", c);
}

}  // namespace

// A kill inside the k-th checkpoint capture: armed at P18–P22#k, judged by V1–V8 as the kill at
// the crash-path point whose ledger state it leaves (the capture writes no row of the run), and
// by WH1 and WH2 after the kill and after recovery.
static void runCaptureCase(CaseRun& cr) {
  const auto at = captureAt(cr.sc, cr.id.hit);
  if (!at) {
    cr.checks.fail(
        "V1", "oracle: scenario " + cr.sc.id + " makes no capture #" + std::to_string(cr.id.hit));
    return;
  }
  CaseId ledgerId = cr.id;
  ledgerId.failpoint = at->ledgerPoint;
  ledgerId.hit = at->ledgerHit;
  CaseRun lr{ledgerId, cr.ref,   cr.opts, cr.mode,   cr.driver, cr.sc,  cr.pathX,
             cr.dir,   cr.store, cr.ws,   cr.checks, cr.record, cr.say, cr.ph};
  CrashCase k{lr, false, {}, {}, {}, false, {}, {}, &cr.id};
  k.x = expectCase(cr.sc, ledgerId.failpoint, ledgerId.hit);
  if (!crashAgentRun(k) || changeWorkspace(k)) return;
  k.atCrash = snapshotWorkspace(cr.ws);
  cr.checks.pass("V1");
  recoverToEnd(k);
  checkCapture(k, std::nullopt, "after recovery: ");
}

void runCrashCase(CaseRun& cr) {
  if (cr.id.isCapture()) return runCaptureCase(cr);
  if (cr.id.isRestore()) return runRestoreCase(cr);
  if (cr.id.isRebaseline()) return runRebaselineCase(cr);
  if (cr.id.isGc()) return runGcCase(cr);
  CrashCase k{cr, cr.mode.dropsUnsyncedWrites(), {}, {}, {}, false, {}, {}};
  if (k.powerloss)
    cr.checks.m["D1"] = cr.checks.m["D2"] = cr.checks.m["D3"] =
        reports::Check{"n/a", "no power-loss crash state was checked"};
  // A barrier has no oracle row: its expectation follows from the crash state (barrierFacts).
  if (!cr.id.isBarrier()) k.x = expectCase(cr.sc, cr.id.failpoint, cr.id.hit);
  if (!crashAgentRun(k) || changeWorkspace(k)) return;
  k.atCrash = snapshotWorkspace(cr.ws);
  if (cr.id.isRace()) return raceTwoHosts(k);
  if (cr.id.isDoubleFault())
    killRecovery(k);
  else
    cr.checks.pass("V1");
  recoverToEnd(k);
  judgeSubmoduleGit(cr, cr.ws, "after recovery: ");
}

}  // namespace crashsim::harness
