// The extra runs a kill case makes from its crash state: the ancestor-tamper and T1-exists
// probes, and the race of two hosts. Internal to the kill and power-loss case.
#include "modes/crash_probes.h"

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
#include "verdicts/wh1_user_git.h"
#include "verdicts/wh2_capture_artifacts.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// The ancestor-tamper mutation (verdicts/ancestor_tamper.h) on a copy of the state a killed
// recovery left, then recovery of that copy to its end, judged by V5. Returns the recovery's
// result, or nullopt when the state does not qualify (nothing ran).
std::optional<ChildResult> probeAncestorTamper(const RunOptions& opts, const Scenario& sc,
                                               const fs::path& store, const fs::path& ws,
                                               const fs::path& dir, Checks& c) {
  const fs::path probe = dir / "tamper", pstore = probe / "store", pws = probe / "ws";
  copyDir(store, pstore);
  copyDir(ws, pws);
  std::optional<AncestorTamper> t;
  try {
    t = tamperAncestor(pstore);
  } catch (const std::exception& e) {
    c.fail("V5", std::string("ancestor tamper: ") + e.what());
  }
  if (!t) {
    fs::remove_all(probe);
    return std::nullopt;
  }
  const auto effects = readEffects(pstore / "effects.jsonl");
  const WorkspaceSnapshot before = snapshotWorkspace(pws);
  const SpawnSpec recover = recoveryToEnd(opts, sc, pstore, pws, probe);
  const ChildResult r = driverOf(opts).runToEnd(recover);
  std::string bad = r.exited ? tamperedRecoveryProblem(*t, readFile(recover.stdoutFile),
                                                       observed::claims(pstore).size())
                             : "crashsim-agent recover " + r.describe();
  if (bad.empty() && readEffects(pstore / "effects.jsonl") != effects)
    bad = "a tool ran although the plan must park";
  if (bad.empty() && snapshotWorkspace(pws) != before)
    bad = "recovery changed the workspace although the plan must park";
  if (!bad.empty())
    c.fail("V5", fmt::format("ancestor tamper (event {} of run {} edited before recovery): {}",
                             t->eventId, t->runId, bad));
  if (!opts.keepDir) fs::remove_all(probe);
  return r;
}

// The T1-exists probe (verdicts/t1_exists.h) of a kill-mode P2#1 case: the run request
// delivered twice to a host whose clock the harness drives, the first delivery killed at P2#1,
// then recovery; judged by V8.
void probeT1Exists(const RunOptions& opts, const Scenario& sc, const Reference& ref,
                   const fs::path& dir, Checks& c) {
  const CaseExpectation x = expectCase(sc, points::P2, 1);
  if (!x.ok || !x.armedCall) return;
  const fs::path probe = dir / "t1-exists", pstore = probe / "store", pws = probe / "ws";
  fs::create_directories(pstore);
  copyDir(ref.templateWorkspace, pws);
  auto delivery = [&](const std::string& name) {
    SpawnSpec s = runSpec(opts, sc, pstore, pws);
    driverOf(opts).driveClock(s, std::chrono::milliseconds(1767225600000));
    s.stderrFile = probe / (name + ".stderr");
    s.stdoutFile = probe / (name + ".stdout");
    s.timeout = std::chrono::milliseconds(15000);
    return s;
  };
  SpawnSpec first = delivery("first");
  const ChildResult k = driverOf(opts).crashAt(first, points::P2, 1);
  if (auto bad = killProblem(k, points::P2.str(), 1, first, pstore); !bad.empty()) {
    c.fail("V8", "T1 exists: the first delivery: " + bad);
    return;
  }
  T1ExistsRun r;
  r.callIndex = *x.armedCall;
  r.callId = sc.calls[r.callIndex].id;
  r.effectsAtKill = readEffects(pstore / "effects.jsonl");
  SpawnSpec second = delivery("second");
  driverOf(opts).reportHits(second, probe / "second-hits.json");
  r.second = driverOf(opts).runToEnd(second);
  r.secondHits = driverOf(opts).readHits(probe / "second-hits.json");
  r.effectsAfterSecond = readEffects(pstore / "effects.jsonl");
  r.responseAfterSecond = ledgerHoldsResponse(pstore, r.callId);
  SpawnSpec recover = recoveryToEnd(opts, sc, pstore, pws, probe);
  r.recovery = driverOf(opts).runToEnd(recover);
  r.recoverStdout = readFile(recover.stdoutFile);
  r.effectsAfterRecovery = readEffects(pstore / "effects.jsonl");
  for (const auto& bad : t1ExistsProblems(r)) c.fail("V8", "T1 exists: " + bad);
  if (!opts.keepDir) fs::remove_all(probe);
}

// The race of two hosts (+H2, verdicts/h1_race.h): two `crashsim-agent recover` released
// together on the crash state; H1 judges the race, then V8 (and V3's recovery reach) the task's
// end from the racer that recovered, as for the primary's single recovery.
void runRaceRecovery(CaseRun& cr, const CaseExpectation& x, bool afterCrash,
                     const WorkspaceSnapshot& atCrash) {
  const Scenario& sc = cr.ref.scenario;
  const fs::path store = cr.dir / "store", ws = cr.dir / "ws";
  const auto predicted = predictedRecoveryHits(sc, cr.id.failpoint, cr.id.hit);
  race::Facts before;
  try {
    before = race::observe(store);
  } catch (const std::exception& e) {
    cr.checks.fail("H1", std::string("reading the crash state: ") + e.what());
    return;
  }
  std::vector<SpawnSpec> specs;
  auto hitsOf = [&](size_t i) {
    return cr.dir / fmt::format("recover-{}-hits.json", i == 0 ? "a" : "b");
  };
  auto modelLogOf = [&](size_t i) {
    return cr.dir / fmt::format("model-inputs-{}.jsonl", i == 0 ? "a" : "b");
  };
  for (const char* name : {"a", "b"}) {
    SpawnSpec s = recoverSpec(cr.opts, sc, store, ws);
    s.timeout = std::chrono::milliseconds(20000);
    s.stdoutFile = cr.dir / fmt::format("recover-{}.stdout", name);
    s.stderrFile = cr.dir / fmt::format("recover-{}.stderr", name);
    driverOf(cr.opts).reportHits(s, hitsOf(specs.size()));
    driverOf(cr.opts).logModelInputs(s, modelLogOf(specs.size()));
    specs.push_back(std::move(s));
  }
  const RaceResult rr = driverOf(cr.opts).race(specs, cr.dir / "race.fifo");
  cr.ph.child(rr.wall, "recovery");
  cr.ph.to("v8");
  std::vector<race::Host> hosts;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ChildResult& r = rr.children[i];
    cr.say(fmt::format("racer {}: {}: {}", i == 0 ? "a" : "b", r.describe(),
                       lastLine(specs[i].stdoutFile)));
    race::Host h;
    h.name = i == 0 ? "a" : "b";
    h.atBarrier = rr.atBarrier[i];
    h.exited = r.exited;
    h.exitCode = r.exitCode;
    h.describe = r.describe();
    h.stdoutText = readFile(specs[i].stdoutFile);
    h.modelLog = readFile(modelLogOf(i));
    h.hits = driverOf(cr.opts).readHits(hitsOf(i));
    hosts.push_back(std::move(h));
  }
  race::Judgement j;
  try {
    j = race::judge(race::Expectation{predicted[points::P11] > 0}, before, race::observe(store),
                    hosts);
  } catch (const std::exception& e) {
    j.problems.push_back(std::string("reading the store after the race: ") + e.what());
  }
  std::string why;
  for (const auto& p : j.problems) why += (why.empty() ? "" : "; ") + p;
  if (why.empty())
    cr.checks.pass("H1");
  else
    cr.checks.fail("H1", why);
  if (!j.recovered) {
    cr.checks.fail("V8", "no racer recovered the crash state (H1)");
    return;
  }
  const size_t w = *j.recovered;
  cr.say(fmt::format("racer {} recovered the crash state", hosts[w].name));
  if (!cr.checks.failed("V1")) checkRecoveryReach(hitsOf(w), predicted, cr.checks);
  checkRecovery(cr.id, sc, x, barrier::CrashFacts{}, afterCrash, cr.ref, store, ws, atCrash,
                hosts[w].exitCode, specs[w], cr.checks);
}

}  // namespace crashsim::harness
