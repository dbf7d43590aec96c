// The stop mode (--mode stop): a Stop delivered at the point instead of the kill — the stopped
// run's end, its terminated state, then recovery to the end (termination contract,
// verdicts/stop.h); the watchdog case (+grace) and the Stop path's kills (+K:P12#1, +K:P13#1).
#include "verdicts/stop.h"

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

// Effects-log lines per scripted call: a call re-issued after a Stop closure said it never ran
// (provider id "<id>~<n>", the scripted model's re-issue) counts for its scripted call.
std::map<std::string, int> perScriptedCall(const std::map<std::string, int>& effects) {
  std::map<std::string, int> out;
  for (const auto& [id, n] : effects) out[id.substr(0, id.find('~'))] += n;
  return out;
}
// Both Stop requests got a receipt (the agent's stderr lines {"stopReceipt":…}) that accepted
// them while the run was active; "" when so.
std::string stopReceiptsProblem(const fs::path& stderrFile) {
  int receipts = 0;
  std::istringstream err(readFile(stderrFile));
  for (std::string line; std::getline(err, line);) {
    Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("stopReceipt")) continue;
    ++receipts;
    if (j["stopReceipt"].value("accepted", false) != true ||
        j["stopReceipt"].value("alreadyIdle", true) != false)
      return "Stop receipt " + line + ": expected accepted, not idle (the run was active)";
  }
  if (receipts != 2) return fmt::format("{} Stop receipt(s) for two Stop requests", receipts);
  return "";
}
// V1 of a Stop case: the agent reported the point in stop mode, took both Stops (two receipts,
// the run still active) and then either ended by itself with the contract's exit code and its
// normal-exit marker, or — with a Stop-path kill point — reported that point and died of SIGKILL.
std::string stopProcessProblem(const ChildResult& child, const CaseId& id, bool runCompletes,
                               const SpawnSpec& spec, const fs::path& store) {
  if (!child.error.empty()) return child.error;
  if (child.timedOut)
    return fmt::format("hung after the Stop at {}#{} (timeout {} ms): {}", id.failpointName(),
                       id.hit, spec.timeout.count(), lastLine(spec.stderrFile));
  Json ctl = Json::parse(child.controlLine, nullptr, false);
  if (!ctl.is_object() || ctl.value("failpoint", "") != id.failpointName() ||
      ctl.value("hit", 0) != id.hit || ctl.value("stop", false) != true)
    return fmt::format("reported '{}' instead of a stop at {}#{} ({})", child.controlLine,
                       id.failpointName(), id.hit, child.describe());
  if (std::string p = stopReceiptsProblem(spec.stderrFile); !p.empty()) return p;
  if (id.stopKill) {
    Json k = Json::parse(child.secondControlLine, nullptr, false);
    if (!k.is_object() || k.value("failpoint", "") != id.stopKill->str())
      return fmt::format("reported '{}' instead of {} after the Stop ({})", child.secondControlLine,
                         id.stopKill->str(), child.describe());
    if (!child.killedBySigkill()) return "not killed by SIGKILL: " + child.describe();
    if (fs::exists(store / "agent-exit.json")) return "normal-exit marker after a kill";
    return "";
  }
  if (!child.exited) return "did not exit after the Stop: " + child.describe();
  const int want = runCompletes ? 0 : 1;  // 1: the run ended cancelled
  if (child.exitCode != want)
    return fmt::format("exited {} after the Stop, expected {} ({})", child.exitCode, want,
                       lastLine(spec.stderrFile));
  if (!fs::exists(store / "agent-exit.json")) return "no normal-exit marker after the Stop";
  return "";
}
// V2–V7 of a Stop case's terminated store: integrity; the termination contract's durable state
// (verdicts/stop.h) from plain SQLite; the resolver against the independent model with nothing
// left unknown; then V5–V7 as for a crash.
void checkStoppedState(const Scenario& sc, const stop::StopExpectation& x, bool headerWritten,
                       const fs::path& store, const fs::path& dir, const RunOptions& opts,
                       Checks& c) {
  const observed::ReadScope reads(store);
  try {
    checkIntegrity(store, "", c);
    const auto runs = observed::runs(store);
    const auto events = runs.empty() ? std::vector<observed::EventRow>{}
                                     : observed::runEvents(store, runs[0].runId);
    for (const auto& bad :
         stop::stopStateProblems(sc, x, runs, events, observed::turnFinalizeRows(store),
                                 readEffects(store / "effects.jsonl"), headerWritten))
      c.fail("V3", bad);
    if (!c.failed("V3")) c.pass("V3");
    auto st = RuntimeStore::open(store);
    for (const auto& h : st->listRuns()) {
      const auto ev = eventsOf(*st, h);
      const auto res = resolveRecovery(ev);
      if (res.hasCorruption) c.fail("V4", "resolver reports corruption after a Stop");
      const std::string unknown = x.unknownCall ? sc.calls[*x.unknownCall].id : std::string();
      bool unknownSeen = false;
      for (const auto& d : res.decisions) {
        if (!unknown.empty() && d.toolCallId == unknown) {
          unknownSeen = true;
          if (d.status != code::indeterminate)
            c.fail("V4", fmt::format("{} ran when the watchdog sealed the run: it must stay "
                                     "indeterminate, the resolver says {}/{}",
                                     d.toolCallId, d.status, d.reason));
        } else if (d.status != code::completed) {
          c.fail("V4", fmt::format("{} is {}/{} after a Stop at a named point: nothing may stay "
                                   "open",
                                   d.toolCallId, d.status, d.reason));
        }
      }
      if (!unknown.empty() && !unknownSeen && !runs.empty() && h.runId == runs[0].runId)
        c.fail("V4", "the resolver has no decision for " + unknown + ", the call left running");
      if (auto bad = modelDisagreement(ev, res, "the stopped ledger"); !bad.empty())
        c.fail("V4", bad);
      if (auto bad = runMarkerProblem(ev); !bad.empty()) c.fail("V3", bad);
    }
    if (!c.failed("V4")) c.pass("V4");
    checkPlanRebuildRepair(std::move(st), store, dir, opts, true, c);
  } catch (const std::exception& e) {
    failUndecided(c, e);
  }
}
// V1 of a watchdog case: the tool held, the agent took both Stops (two receipts, the run still
// active), exited 1 by itself with its normal-exit marker, and its summary says the run needs
// recovery because the grace expired (README "Stop": "The summary says recovery_required").
std::string graceProcessProblem(const ChildResult& child, const SpawnSpec& spec,
                                const fs::path& store) {
  if (!child.error.empty()) return child.error;
  if (!child.held)
    return "the Bash tool never announced that it holds ($CRASHSIM_TOOL_HOLD): " + child.describe();
  if (child.timedOut)
    return fmt::format("hung after the Stop (timeout {} ms): {}", spec.timeout.count(),
                       lastLine(spec.stderrFile));
  if (std::string p = stopReceiptsProblem(spec.stderrFile); !p.empty()) return p;
  if (!child.exited || child.exitCode != 1)
    return fmt::format("{} after the watchdog seal, expected exit 1 ({})", child.describe(),
                       lastLine(spec.stderrFile));
  if (!fs::exists(store / "agent-exit.json")) return "no normal-exit marker after the Stop";
  const std::string out = readFile(spec.stdoutFile);
  const Json summary = Json::parse(out.substr(0, out.find('\n')), nullptr, false);
  if (!summary.is_object() || summary.value("status", "") != "recovery_required" ||
      summary.value("errorCode", "") != "cancellation_grace_expired")
    return "run summary " + out.substr(0, 200) +
           ": expected status recovery_required, errorCode cancellation_grace_expired";
  return "";
}
// What the recovery after a Stop must do. A cooperative Stop's run is settled: recovery
// continues the stopped task to its end (a stopped run with only settled operations continues as
// a new run). A watchdog seal leaves the running tool unknown and never_auto_retry: recovery
// parks, continues nothing and leaves the workspace as the seal left it.
struct StopRecoveryExpectation {
  std::vector<int> executions;                // per scenario call, after recovery
  std::optional<WorkspaceSnapshot> parkedAt;  // parks: the workspace at the seal, unchanged
};

// V8 (and V3/V4 of the recovered runs) after a Stop, the one judgement of both kinds: the
// recovery exited 0; parked when `want` says so; each scenario call ran `want.executions` times
// (a refused one never); every run is terminal and its ledger agrees with the independent model;
// continued: the runs carry their markers, the model's inputs and the history are the contract's
// and the workspace is the reference's.
void checkStopRecovery(const Scenario& sc, const Reference& ref,
                       const StopRecoveryExpectation& want, const fs::path& store,
                       const fs::path& ws, const ChildResult& r, const SpawnSpec& recover,
                       Checks& c) {
  const bool parks = want.parkedAt.has_value();
  try {
    if (!r.exited || r.exitCode != 0)
      c.fail("V8", fmt::format("crashsim-agent recover {}: {}", r.describe(),
                               lastLine(recover.stderrFile)));
    if (parks)
      if (auto bad = parkProblem(readFile(recover.stdoutFile), false); !bad.empty())
        c.fail("V8", bad);
    checkExecutions(sc, want.executions, perScriptedCall(readEffects(store / "effects.jsonl")), c);
    if (parks)
      if (auto bad = workspaceChange(*want.parkedAt, snapshotWorkspace(ws)); !bad.empty())
        c.fail("V8", "recovery parked but changed the workspace: " + bad);
    auto st = RuntimeStore::open(store);
    const auto runs = st->listRuns();
    if (parks && runs.size() != 1)
      c.fail("V8",
             fmt::format("{} runs after recovery, expected the sealed run alone", runs.size()));
    for (const auto& h : runs) {
      if (!isTerminalStatus(h.status))
        c.fail("V8", fmt::format("run {} is still {} after recovery", h.runId, h.status));
      const auto ev = eventsOf(*st, h);
      if (auto bad = modelDisagreement(ev, resolveRecovery(ev), "recovered run " + h.runId);
          !bad.empty())
        c.fail("V4", bad);
      if (!parks)
        if (auto bad = runMarkerProblem(ev); !bad.empty()) c.fail("V3", "after recovery: " + bad);
    }
    if (!parks) {
      if (!recover.modelInputsFile.empty())
        if (auto bad = replayProblem(readFile(recover.modelInputsFile), std::nullopt); !bad.empty())
          c.fail("V8", "replay: " + bad);
      if (auto bad = continuationHistoryProblem(*st, 1); !bad.empty())
        c.fail("V8", "history after recovery: " + bad);
      checkFinishedWorkspace(sc, ref, ws, c);
    }
    if (!c.failed("V8")) c.pass("V8");
  } catch (const std::exception& e) {
    c.fail("V8", std::string("error after recovery: ") + e.what());
  }
}

// A watchdog case (--mode stop, "+grace"): a short cooperative grace, a longer SIGTERM→SIGKILL
// grace for Bash, the Stop late (more than the grace after the run's start) while the holding
// Bash ignores it; the sealed state, then recovery (which parks).
constexpr std::chrono::milliseconds kWatchdogGrace{1000};
constexpr std::chrono::milliseconds kWatchdogBashKillGrace{9000};

void runStopGraceCase(CaseRun& cr) {
  const Scenario& sc = cr.ref.scenario;
  const fs::path store = cr.dir / "store", ws = cr.dir / "ws";
  stop::StopExpectation sx = stop::expectStopGrace(sc, cr.id.hit);
  if (!sx.ok) {
    cr.checks.fail("V1", "oracle: " + sx.whyNot);
    return;
  }
  copyDir(cr.ref.templateWorkspace, ws);
  SpawnSpec run = runSpec(cr.opts, sc, store, ws);
  run.args.insert(run.args.end(),
                  {"--cancellation-grace-ms", std::to_string(kWatchdogGrace.count()),
                   "--bash-kill-grace-ms", std::to_string(kWatchdogBashKillGrace.count())});
  run.stderrFile = cr.dir / "run.stderr";
  run.stdoutFile = cr.dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(20000);
  // Late: the Stop comes more than the grace after the tool held, so after the run's start.
  const ChildResult child = driverOf(cr.opts).stopWhileHeld(
      run, cr.dir / "tool-hold", kWatchdogGrace + std::chrono::milliseconds(200));
  cr.ph.child(child, "run");
  cr.ph.to("verify");
  cr.say(fmt::format("agent run stopped while {} held: Stop at {} ms, {}",
                     sc.calls[*sx.unknownCall].id, child.stopSentAtMs, child.describe()));
  if (!passStoppedV1(cr.checks, graceProcessProblem(child, run, store))) return;
  keepCrashedCopy(cr.opts, cr.dir, store, ws);
  sx.sealNotBeforeMs = child.stopSentAtMs + static_cast<double>(kWatchdogGrace.count());
  checkStoppedState(sc, sx, true, store, cr.dir, cr.opts, cr.checks);
  const WorkspaceSnapshot atSeal = snapshotWorkspace(ws);
  SpawnSpec recover;
  const ChildResult r = recoverCase(cr, sc, store, ws, recover);
  judgeSubmoduleGit(cr, ws, "after recovery: ");
  if (r.exited && (r.exitCode == 0 || r.exitCode == 1))
    checkLineageDigests(store, "after recovery: ", cr.checks);
  StopRecoveryExpectation want{{}, atSeal};
  for (const auto& call : sx.calls) want.executions.push_back(call.executions);
  checkStopRecovery(sc, cr.ref, want, store, ws, r, recover, cr.checks);
}

// A Stop case (--mode stop): the Stop at the point (and with +K: the kill on the Stop path), the
// terminated state, then recovery to the end. A kill inside the termination batch (P12) leaves a
// crash state, judged as the kill case it equals (stop::killEquivalent).
void runStopCase(CaseRun& cr) {
  const Scenario& sc = cr.ref.scenario;
  const fs::path store = cr.dir / "store", ws = cr.dir / "ws";
  const stop::StopExpectation sx = stop::expectStop(sc, cr.id.failpoint, cr.id.hit);
  copyDir(cr.ref.templateWorkspace, ws);
  SpawnSpec run = runSpec(cr.opts, sc, store, ws);
  run.args.insert(run.args.end(), {"--cancellation-grace-ms", "10000"});
  run.stderrFile = cr.dir / "run.stderr";
  run.stdoutFile = cr.dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(20000);
  const ChildResult child =
      driverOf(cr.opts).stopAt(run, cr.id.failpoint, cr.id.hit, cr.id.stopKill);
  cr.ph.child(child, "run");
  cr.ph.to("verify");
  cr.say(fmt::format("agent run stopped at {}#{}: control '{}' '{}', {}", cr.id.failpointName(),
                     cr.id.hit, child.controlLine, child.secondControlLine, child.describe()));
  if (!passStoppedV1(cr.checks, stopProcessProblem(child, cr.id, sx.runCompletes, run, store)))
    return;
  keepCrashedCopy(cr.opts, cr.dir, store, ws);
  std::optional<CaseId> equivalent;
  CaseExpectation ex;
  bool afterCrash = false;
  if (cr.id.stopKill == points::P12) {
    equivalent = stop::killEquivalent(sc, cr.id);
    ex = expectCase(sc, equivalent->failpoint, equivalent->hit);
    cr.say("the batch was rolled back: judged as the crash state of " + equivalent->str());
    checkNamedCrash(*equivalent, ex, store, cr.dir, cr.opts, cr.checks);
    afterCrash = workspace::afterCrashApplies(sc.spec, equivalent->failpointName());
    if (afterCrash) workspace::applyAfterCrash(sc.spec, ws);
  } else {
    checkStoppedState(sc, sx, cr.id.stopKill != points::P13, store, cr.dir, cr.opts, cr.checks);
  }
  const WorkspaceSnapshot atCrash = snapshotWorkspace(ws);
  SpawnSpec recover;
  const ChildResult r = recoverCase(cr, sc, store, ws, recover);
  judgeSubmoduleGit(cr, ws, "after recovery: ");
  if (r.exited && (r.exitCode == 0 || r.exitCode == 1))
    checkLineageDigests(store, "after recovery: ", cr.checks);
  if (!equivalent) {
    StopRecoveryExpectation want;
    for (const auto& call : sc.calls) want.executions.push_back(call.dispatched() ? 1 : 0);
    checkStopRecovery(sc, cr.ref, want, store, ws, r, recover, cr.checks);
    return;
  }
  checkRecoveryReach(cr.dir / "recover-hits.json",
                     predictedRecoveryHits(sc, equivalent->failpoint, equivalent->hit), cr.checks);
  if (!r.exited) {
    cr.checks.fail("V8", "crashsim-agent recover " + r.describe());
    return;
  }
  checkRecovery(*equivalent, sc, ex, barrier::CrashFacts{}, afterCrash, cr.ref, store, ws, atCrash,
                r.exitCode, recover, cr.checks);
}

// A Stop delivered at the point instead of the kill, judged by the termination contract
// (verdicts/stop.h); with double faults the stopping process killed on the Stop path.
class StopMode final : public FaultMode {
 public:
  std::string_view name() const override { return "stop"; }
  bool deliversStop() const override { return true; }
  bool storeOnTmpfs() const override { return true; }

  // With double faults each primary whose Stop reaches a termination batch (P0–P7) is also
  // killed inside it (+K:P12#1) and after it (+K:P13#1); the watchdog case (+grace) of the
  // scenario's Bash call that ignores cancellation.
  void planFollowUps(PrimaryPlan& plan) const override {
    const CaseId& pid = plan.primary();
    if (plan.selection().doubleFaults && pid.failpoint <= points::P7)
      for (CrashPoint k : {points::P12, points::P13}) {
        plan.predict(k, "stop", 1);
        CaseId d = pid;
        d.stopKill = k;
        plan.follow(d, k);
      }
    if (pid.failpoint == points::P2 && stop::holdingHit(plan.scenario()) == pid.hit) {
      plan.predict(pid.failpoint, "agent", 1);
      CaseId d = pid;
      d.stopGrace = true;
      plan.follow(d);
    }
  }

  void run(CaseRun& r) const override {
    if (r.id.stopGrace)
      runStopGraceCase(r);
    else
      runStopCase(r);
  }

  std::vector<std::string_view> verdicts() const override { return verdictsWith({}); }
};

}  // namespace

const FaultMode& stopMode() {
  static const StopMode mode;
  return mode;
}

}  // namespace crashsim::harness
