// The checks of a crash state a kill case's step leaves (V2–V7): an unnamed barrier's, and a
// killed recovery process's (double faults). Internal to the kill and power-loss case.
#include "modes/crash_state.h"

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

namespace {

// V3–V4 on the crash state of an unnamed barrier (verdicts/barrier.h): what must hold at any
// instant, and the resolver against the independent model (no oracle row here).
void checkBarrierCrash(const Scenario& sc, RuntimeStore& st, const fs::path& store,
                       barrier::CrashFacts& facts, Checks& c) {
  std::vector<std::vector<RuntimeEvent>> runs;
  for (const auto& h : st.listRuns()) runs.push_back(eventsOf(st, h));
  for (const auto& bad :
       barrier::crashStateProblems(sc, runs, readEffects(store / "effects.jsonl"), facts))
    c.fail("V3", bad);
  if (!c.failed("V3")) c.pass("V3");
  for (const auto& events : runs) {
    const auto res = resolveRecovery(events);
    if (res.hasCorruption) c.fail("V4", "resolver reports corruption on a crash-only ledger");
    if (auto bad = modelDisagreement(events, res, "the crashed ledger"); !bad.empty())
      c.fail("V4", bad);
  }
  if (!c.failed("V4")) c.pass("V4");
}

}  // namespace

// V2–V7 on the crash state of an unnamed barrier: integrity, what must hold at any instant
// (verdicts/barrier.h), then V5–V7 as for a named failpoint. Fills `facts` for V8.
void checkBarrierCrashState(const Scenario& sc, const fs::path& store, const fs::path& dir,
                            const RunOptions& opts, barrier::CrashFacts& facts, Checks& c) {
  const observed::ReadScope reads(store);
  try {
    checkCrashIntegrity(store, dir, opts, c);
    auto st = RuntimeStore::open(store);
    checkBarrierCrash(sc, *st, store, facts, c);
    checkPlanRebuildRepair(std::move(st), store, dir, opts, true, c);
  } catch (const std::exception& e) {
    failUndecided(c, e);
  }
}

namespace {

// The store's runs for the recovery barrier oracle: headers in creation order, then any run that
// holds events without a header (read with plain SQLite).
recovery_barrier::StoreAtKill storeAtKill(const RuntimeStore& st, const fs::path& store) {
  recovery_barrier::StoreAtKill at;
  auto headers = st.listRuns();
  std::stable_sort(headers.begin(), headers.end(), [](const RunHeader& a, const RunHeader& b) {
    return a.createdAt < b.createdAt;
  });
  std::set<std::string> seen;
  for (const auto& h : headers) {
    at.runs.push_back({h.runId, h.status, eventsOf(st, h)});
    seen.insert(h.runId);
  }
  for (const auto& runId : observed::eventRunIds(store)) {
    if (seen.count(runId)) continue;
    recovery_barrier::Run r{runId, std::nullopt, {}};
    for (const auto& row : observed::runEvents(store, runId)) {
      try {
        r.events.push_back(decodeRuntimeEvent(row.payload));
      } catch (const std::exception&) {
      }
    }
    at.runs.push_back(std::move(r));
  }
  at.claims = observed::claims(store);
  at.effects = readEffects(store / "effects.jsonl");
  return at;
}

// V3/V4 on the state a recovery process killed at its own barrier left
// (verdicts/recovery_barrier.h): what must hold at every instant over the crashed run and the
// partial continuation; every run's resolver decisions the independent model's, no corruption.
void checkRecoveryBarrierState(const Scenario& sc, recovery_barrier::Judged& judged,
                               const recovery_barrier::Run& atPrimary, const RuntimeStore& st,
                               const fs::path& store, Checks& c) {
  const auto at = storeAtKill(st, store);
  for (const auto& bad : recovery_barrier::stateProblems(sc, judged.firstCall, atPrimary,
                                                         judged.effectsAtPrimary, at, judged.state))
    c.fail("V3", "after the recovery barrier kill: " + bad);
  for (const auto& run : at.runs)
    if (auto bad = runMarkerProblem(run.events); !bad.empty())
      c.fail("V3", "after the recovery barrier kill: " + bad);
  if (!c.failed("V3")) c.pass("V3");
  for (const auto& run : at.runs) {
    const auto res = resolveRecovery(run.events);
    if (res.hasCorruption)
      c.fail("V4", "after the recovery barrier kill: the resolver reports corruption on run " +
                       run.runId + " (half a transaction?)");
    if (auto bad = modelDisagreement(run.events, res,
                                     "run " + run.runId +
                                         " after the recovery "
                                         "barrier kill");
        !bad.empty())
      c.fail("V4", bad);
  }
  if (!c.failed("V4")) c.pass("V4");
}

}  // namespace

// V2–V7 on the state a killed recovery process left (double faults): integrity, the state that
// recovery failpoint defines (verdicts/recovery_kill_state.h) or, at a barrier of the recovery
// process, what must hold at every instant (verdicts/recovery_barrier.h), fact before header,
// read-only planning, rebuildable projections.
void checkRecoveryKilledState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                              const fs::path& store, const fs::path& dir, const RunOptions& opts,
                              Checks& c, recovery_barrier::Judged* judged,
                              const recovery_barrier::Run* atPrimary) {
  const observed::ReadScope reads(store);
  try {
    checkIntegrity(store, "after the recovery kill: ", c);
    auto st = RuntimeStore::open(store);
    if (id.isRecoveryBarrier()) {
      if (judged && atPrimary)
        checkRecoveryBarrierState(sc, *judged, *atPrimary, *st, store, c);
      else
        c.fail("V3", "the primary's crash state was not read before the recovery barrier kill");
    } else {
      checkRecoveryKillState(id, sc, x, *st, store, c);
    }
    if (auto bad = terminalInvariant(*st); !bad.empty())
      c.fail("V7", "after the recovery kill: " + bad);
    else if (!c.failed("V7"))
      c.pass("V7");
    checkV5(*st, store, dir, opts.crashsim, c);
    st.reset();
    copyDir(store, dir / "v6");
    checkV6(dir / "v6", c);
    fs::remove_all(dir / "v6");
  } catch (const std::exception& e) {
    c.fail("V2", std::string("after the recovery kill: ") + e.what());
  }
}

}  // namespace crashsim::harness
