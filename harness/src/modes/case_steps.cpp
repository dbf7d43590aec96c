// The steps the fault modes share (modes/case_run.h).
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

std::string sanitize(std::string_view id) {
  std::string out;
  for (char c : id)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

SpawnSpec runSpec(const RunOptions& opts, const Scenario& sc, const fs::path& store,
                  const fs::path& ws) {
  return driverOf(opts).spawn(RuntimeDriver::Process::run, sc, store, ws);
}

SpawnSpec recoverSpec(const RunOptions& opts, const Scenario& sc, const fs::path& store,
                      const fs::path& ws) {
  return driverOf(opts).spawn(RuntimeDriver::Process::recover, sc, store, ws);
}

SpawnSpec recoveryToEnd(const RunOptions& opts, const Scenario& sc, const fs::path& store,
                        const fs::path& ws, const fs::path& dir) {
  SpawnSpec s = recoverSpec(opts, sc, store, ws);
  s.timeout = std::chrono::milliseconds(20000);
  s.stderrFile = dir / "recover.stderr";
  s.stdoutFile = dir / "recover.stdout";
  driverOf(opts).reportHits(s, dir / "recover-hits.json");
  driverOf(opts).logModelInputs(s, dir / "model-inputs.jsonl");
  return s;
}

bool passStoppedV1(Checks& c, const std::string& problem) {
  if (problem.empty()) {
    c.pass("V1");
    return true;
  }
  c.fail("V1", problem);
  for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"}) c.na(v, "V1 failed");
  return false;
}

void keepCrashedCopy(const RunOptions& opts, const fs::path& dir, const fs::path& store,
                     const fs::path& ws) {
  if (!opts.keepDir) return;
  copyDir(store, dir / "crashed" / "store");
  copyDir(ws, dir / "crashed" / "ws");
}

ChildResult recoverCase(CaseRun& cr, const Scenario& sc, const fs::path& store, const fs::path& ws,
                        SpawnSpec& recover) {
  recover = recoveryToEnd(cr.opts, sc, store, ws, cr.dir);
  const ChildResult r = driverOf(cr.opts).runToEnd(recover);
  cr.ph.child(r, "recovery");
  cr.ph.to("v8");
  cr.say(fmt::format("recovery to the end: {}", r.describe()));
  return r;
}

bool restoreCrashState(const RunOptions& opts, const CaseId& id, const fs::path& store,
                       const fs::path& ws, const std::function<void(std::string)>& say) {
  const CaseId primary = id.primary();
  const fs::path snapshot = crashStateDir(opts, primary);
  if (!id.startsFromPrimary() || !fs::exists(snapshot / "complete")) return false;
  copyDir(snapshot / "store", store);
  copyDir(snapshot / "ws", ws);
  say("started from the crash state of " + primary.str());
  return true;
}

void keepCrashState(const RunOptions& opts, const CaseId& id, const fs::path& dir,
                    const fs::path& store, const fs::path& ws) {
  keepCrashedCopy(opts, dir, store, ws);
  if (opts.keepCrashStates && !id.startsFromPrimary()) {
    const fs::path snap = crashStateDir(opts, id);
    copyDir(store, snap / "store");
    copyDir(ws, snap / "ws");
    std::ofstream(snap / "complete") << id.str() << "\n";
  }
}

void checkPlanRebuildRepair(std::unique_ptr<RuntimeStore> st, const fs::path& store,
                            const fs::path& dir, const RunOptions& opts, bool fresh, Checks& c) {
  if (fresh) checkV5(*st, store, dir, opts.crashsim, c);
  st.reset();
  copyDir(store, dir / "copy");
  if (fresh) checkV6(dir / "copy", c);
  checkV7(dir / "copy", c);
  fs::remove_all(dir / "copy");
}

void failUndecided(Checks& c, const std::exception& e) {
  for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7"})
    if (c.m[v].status != "pass" && c.m[v].status != "fail")
      c.fail(v, std::string("error: ") + e.what());
}

void checkCrashIntegrity(const fs::path& store, const fs::path& dir, const RunOptions& opts,
                         Checks& c) {
  const FaultMode* mode = findFaultMode(opts.mode);
  checkIntegrity(store, "", c,
                 mode && mode->dropsUnsyncedWrites() ? dir / "v2-first-writer" : fs::path());
}

void checkNamedCrash(const CaseId& id, const CaseExpectation& x, const fs::path& store,
                     const fs::path& dir, const RunOptions& opts, Checks& c) {
  const observed::ReadScope reads(store);
  try {
    checkCrashIntegrity(store, dir, opts, c);
    auto st = RuntimeStore::open(store);
    auto runs = st->listRuns();

    // --- V3: durable event kinds vs the oracle ------------------------------------------
    if (!x.ok) c.fail("V3", "oracle: " + x.whyNot);
    std::vector<RuntimeEvent> runEvents;
    if (runs.size() != 1) {
      c.fail("V3",
             fmt::format("expected exactly one run in the crashed store, found {}", runs.size()));
    } else {
      runEvents = eventsOf(*st, runs[0]);
    }
    if (x.ok && runs.size() == 1) {
      checkDurableFacts(x, runEvents, c);
      checkDecisions(x, runEvents, c);
      if (!id.isDoubleFault()) checkPlanAgainstOracle(x, runEvents, c);
    } else {
      c.na("V4", "no oracle placement or run for this case");
    }

    checkPlanRebuildRepair(std::move(st), store, dir, opts, !id.isDoubleFault(), c);
  } catch (const std::exception& e) {
    failUndecided(c, e);
  }
}

}  // namespace crashsim::harness
