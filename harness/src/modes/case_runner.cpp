// Reference runs and verified cases: runCase is the sequence of steps (kill, crash state, recovery
// kill, recovery to the end); each verdict it applies is its own unit in harness/src/verdicts/.
#include "crashsim/harness/case_runner.h"

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
#include "verdicts/d1_d2_powerloss.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"
#include "verdicts/ancestor_tamper.h"
#include "verdicts/barrier.h"
#include "verdicts/c1_corrupt.h"
#include "verdicts/coverage.h"
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
using reports::Check;
using Json = nlohmann::json;

namespace {

constexpr const char* kMarkerFile = ".maka-workspace.json";

std::string sanitize(std::string_view id) {
  std::string out;
  for (char c : id)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

// V5 on the open crashed store, then V6 and V7 on one copy of it (V6 rebuilds projections and
// leaves the ledger untouched, then V7 repairs). `fresh`: this case made the crash state (a
// double fault that starts from its primary's verified state runs V7 only).
void checkPlanRebuildRepair(std::unique_ptr<RuntimeStore> st, const fs::path& store,
                            const fs::path& dir, const RunOptions& opts, bool fresh, Checks& c) {
  if (fresh) checkV5(*st, store, dir, opts.crashsim, c);
  st.reset();
  copyDir(store, dir / "copy");
  if (fresh) checkV6(dir / "copy", c);
  checkV7(dir / "copy", c);
  fs::remove_all(dir / "copy");
}

// A store or runtime error on a crashed store is a contract violation, not a harness crash: it
// fails every check of V2–V7 not decided yet.
void failUndecided(Checks& c, const std::exception& e) {
  for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7"})
    if (c.m[v].status != "pass" && c.m[v].status != "fail")
      c.fail(v, std::string("error: ") + e.what());
}

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

// V2–V7 on the crash state of an unnamed barrier: integrity, what must hold at any instant
// (verdicts/barrier.h), then V5–V7 as for a named failpoint. Fills `facts` for V8.
void checkBarrierCrashState(const Scenario& sc, const fs::path& store, const fs::path& dir,
                            const RunOptions& opts, barrier::CrashFacts& facts, Checks& c) {
  try {
    checkIntegrity(store, "", c, opts.mode == "powerloss" ? dir / "v2-first-writer" : fs::path());
    auto st = RuntimeStore::open(store);
    checkBarrierCrash(sc, *st, store, facts, c);
    checkPlanRebuildRepair(std::move(st), store, dir, opts, true, c);
  } catch (const std::exception& e) {
    failUndecided(c, e);
  }
}

// V2–V7 on the crash state of a named failpoint, against the oracle's expectation `x`.
void checkNamedCrash(const CaseId& id, const CaseExpectation& x, const fs::path& store,
                     const fs::path& dir, const RunOptions& opts, Checks& c) {
  try {
    checkIntegrity(store, "", c, opts.mode == "powerloss" ? dir / "v2-first-writer" : fs::path());
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

// V2–V7 on the state a killed recovery process left (double faults): integrity, the state that
// recovery failpoint defines (verdicts/recovery_kill_state.h) or, at a barrier of the recovery
// process, what must hold at every instant (verdicts/recovery_barrier.h), fact before header,
// read-only planning, rebuildable projections.
void checkRecoveryKilledState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                              const fs::path& store, const fs::path& dir, const RunOptions& opts,
                              Checks& c, recovery_barrier::Judged* judged = nullptr,
                              const recovery_barrier::Run* atPrimary = nullptr) {
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

}  // namespace

fs::path crashStateDir(const RunOptions& opts, const CaseId& primary) {
  return opts.workRoot / ("crash-" + sanitize(primary.str()));
}

WorkspaceSnapshot snapshotWorkspace(const fs::path& dir) {
  WorkspaceSnapshot snap;
  if (!fs::exists(dir)) return snap;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto rel = fs::relative(e.path(), dir).generic_string();
    if (rel == kMarkerFile) continue;
    snap[rel] = readFile(e.path());
  }
  return snap;
}

std::map<std::string, int> readEffects(const fs::path& file) {
  std::map<std::string, int> counts;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = Json::parse(line);
      counts[j.value("callId", std::string("?"))]++;
    } catch (...) {
      counts["<unparseable effects line>"]++;
    }
  }
  return counts;
}

std::string reproduceLine(const CaseId& id, const RunOptions& opts) {
  auto keep = fs::temp_directory_path() / ("crashsim-" + sanitize(id.str()));
  // What reproduces it as printed: the environment that changes the agent or plants a fault,
  // and this crashsim binary (crashsim-planted for planted faults) by its path.
  std::string env;
  for (const char* v : {"CRASHSIM_PLANT", "CRASHSIM_AGENT"})
    if (const char* val = std::getenv(v); val && *val) env += fmt::format("{}={} ", v, val);
  const fs::path self = locateCrashsim();
  const std::string exe = self.empty() ? std::string("crashsim") : self.string();
  return fmt::format("{}{} run '{}' --keep {}{}", env, exe, id.str(), keep.string(),
                     opts.reproduceExtra);
}

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

// V8 after a watchdog seal: the running tool is unknown and never_auto_retry, so recovery parks
// (nothing is continued, the workspace is left as the seal left it) and no call runs again.
void checkGraceRecovery(const Scenario& sc, const stop::StopExpectation& x, const fs::path& store,
                        const fs::path& ws, const WorkspaceSnapshot& atSeal, const ChildResult& r,
                        const SpawnSpec& recover, Checks& c) {
  try {
    if (!r.exited || r.exitCode != 0)
      c.fail("V8", fmt::format("crashsim-agent recover {}: {}", r.describe(),
                               lastLine(recover.stderrFile)));
    if (auto bad = parkProblem(readFile(recover.stdoutFile), false); !bad.empty())
      c.fail("V8", bad);
    std::vector<int> want;
    for (const auto& call : x.calls) want.push_back(call.executions);
    checkExecutions(sc, want, perScriptedCall(readEffects(store / "effects.jsonl")), c);
    if (auto bad = workspaceChange(atSeal, snapshotWorkspace(ws)); !bad.empty())
      c.fail("V8", "recovery parked but changed the workspace: " + bad);
    auto st = RuntimeStore::open(store);
    const auto runs = st->listRuns();
    if (runs.size() != 1)
      c.fail("V8",
             fmt::format("{} runs after recovery, expected the sealed run alone", runs.size()));
    for (const auto& h : runs) {
      if (!isTerminalStatus(h.status))
        c.fail("V8", fmt::format("run {} is still {} after recovery", h.runId, h.status));
      const auto ev = eventsOf(*st, h);
      if (auto bad = modelDisagreement(ev, resolveRecovery(ev), "recovered run " + h.runId);
          !bad.empty())
        c.fail("V4", bad);
    }
    if (!c.failed("V8")) c.pass("V8");
  } catch (const std::exception& e) {
    c.fail("V8", std::string("error after recovery: ") + e.what());
  }
}

// V8 after a Stop: recovery continues the stopped task to its end (a stopped run with only
// settled operations continues as a new run) — every dispatched scenario call ran exactly once,
// a refused one never, the workspace is the reference's, every run is terminal, the history and
// the model's inputs are the contract's.
void checkStopRecovery(const Scenario& sc, const Reference& ref, const fs::path& store,
                       const fs::path& ws, const ChildResult& r, const SpawnSpec& recover,
                       Checks& c) {
  try {
    if (!r.exited || r.exitCode != 0)
      c.fail("V8", fmt::format("crashsim-agent recover {}: {}", r.describe(),
                               lastLine(recover.stderrFile)));
    std::vector<int> want;
    for (const auto& call : sc.calls) want.push_back(call.dispatched() ? 1 : 0);
    checkExecutions(sc, want, perScriptedCall(readEffects(store / "effects.jsonl")), c);
    auto st = RuntimeStore::open(store);
    for (const auto& h : st->listRuns()) {
      if (!isTerminalStatus(h.status))
        c.fail("V8", fmt::format("run {} is still {} after recovery", h.runId, h.status));
      const auto ev = eventsOf(*st, h);
      if (auto bad = modelDisagreement(ev, resolveRecovery(ev), "recovered run " + h.runId);
          !bad.empty())
        c.fail("V4", bad);
      if (auto bad = runMarkerProblem(ev); !bad.empty()) c.fail("V3", "after recovery: " + bad);
    }
    if (auto it = recover.env.find("CRASHSIM_MODEL_LOG"); it != recover.env.end())
      if (auto bad = replayProblem(readFile(it->second), std::nullopt); !bad.empty())
        c.fail("V8", "replay: " + bad);
    if (auto bad = continuationHistoryProblem(*st, 1); !bad.empty())
      c.fail("V8", "history after recovery: " + bad);
    checkFinishedWorkspace(sc, ref, ws, c);
    if (!c.failed("V8")) c.pass("V8");
  } catch (const std::exception& e) {
    c.fail("V8", std::string("error after recovery: ") + e.what());
  }
}

}  // namespace

namespace {

// A case's crash budget (reports::kPhaseNames): a stopwatch that is always in one phase, so
// every millisecond of the case goes to exactly one phase.
class Phases {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts in phase `first` at `start` (the case's own start, so the phases sum to its duration).
  Phases(std::map<std::string, double>& ms, const char* first, Clock::time_point start)
      : ms_(ms), phase_(first), since_(start) {}
  // Closes the current phase and starts `phase`.
  void to(const char* phase) {
    close();
    phase_ = phase;
  }
  // A child process that ran since the last switch: its spawn, its kill and reaping, and the rest
  // of its life as `phase`; the current phase goes on.
  void child(const ChildResult& r, const char* phase) {
    add("spawn", r.spawnTime);
    add("kill", r.killReapTime);
    add(phase, r.elapsed - r.spawnTime - r.killReapTime);
    since_ += r.elapsed;
  }
  // Adds the time since the last switch to the current phase; returns the time it closed at.
  Clock::time_point close() {
    const auto now = Clock::now();
    add(phase_, now - since_);
    return since_ = now;
  }

 private:
  void add(const char* phase, Clock::duration d) {
    ms_[phase] += std::chrono::duration<double, std::milli>(d).count();
  }
  std::map<std::string, double>& ms_;
  const char* phase_;
  Clock::time_point since_;
};

// The spawn line of `crashsim-agent <command>` on a case's store and workspace.
SpawnSpec agentCommand(const RunOptions& opts, const Scenario& sc, const char* command,
                       const fs::path& store, const fs::path& ws) {
  SpawnSpec s;
  s.exe = opts.agent;
  s.forkServer = true;
  s.args = {command,     "--store",    store.string(),  "--workspace",
            ws.string(), "--scenario", sc.file.string()};
  return s;
}

// `crashsim-agent recover` run to its end in a case folder: its output in recover.stdout and
// recover.stderr, the failpoint hits it reached in recover-hits.json, the model inputs it sent
// in model-inputs.jsonl; 20 s to finish.
SpawnSpec recoveryToEnd(const RunOptions& opts, const Scenario& sc, const fs::path& store,
                        const fs::path& ws, const fs::path& dir) {
  SpawnSpec s = agentCommand(opts, sc, "recover", store, ws);
  s.timeout = std::chrono::milliseconds(20000);
  s.stderrFile = dir / "recover.stderr";
  s.stdoutFile = dir / "recover.stdout";
  s.env["CRASHSIM_HITS_OUT"] = (dir / "recover-hits.json").string();
  s.env["CRASHSIM_MODEL_LOG"] = (dir / "model-inputs.jsonl").string();
  return s;
}

// A watchdog case (--mode stop, "+grace"): a short cooperative grace, a longer SIGTERM→SIGKILL
// grace for Bash, the Stop late (more than the grace after the run's start) while the holding
// Bash ignores it; the sealed state, then recovery (which parks).
constexpr std::chrono::milliseconds kWatchdogGrace{1000};
constexpr std::chrono::milliseconds kWatchdogBashKillGrace{9000};

template <class Say>
void runStopGraceCase(const CaseId& id, const Reference& ref, const RunOptions& opts,
                      const fs::path& dir, Checks& c, Say& say, Phases& ph) {
  const Scenario& sc = ref.scenario;
  const fs::path store = dir / "store", ws = dir / "ws";
  stop::StopExpectation sx = stop::expectStopGrace(sc, id.hit);
  if (!sx.ok) {
    c.fail("V1", "oracle: " + sx.whyNot);
    return;
  }
  copyDir(ref.templateWorkspace, ws);
  SpawnSpec run = agentCommand(opts, sc, "run", store, ws);
  run.args.insert(run.args.end(),
                  {"--cancellation-grace-ms", std::to_string(kWatchdogGrace.count()),
                   "--bash-kill-grace-ms", std::to_string(kWatchdogBashKillGrace.count())});
  run.stderrFile = dir / "run.stderr";
  run.stdoutFile = dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(20000);
  // Late: the Stop comes more than the grace after the tool held, so after the run's start.
  const ChildResult child =
      runStoppedWhileHeld(run, dir / "tool-hold", kWatchdogGrace + std::chrono::milliseconds(200));
  ph.child(child, "run");
  ph.to("verify");
  say(fmt::format("agent run stopped while {} held: Stop at {} ms, {}",
                  sc.calls[*sx.unknownCall].id, child.stopSentAtMs, child.describe()));
  if (auto v1 = graceProcessProblem(child, run, store); !v1.empty()) {
    c.fail("V1", v1);
    for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"}) c.na(v, "V1 failed");
    return;
  }
  c.pass("V1");
  if (opts.keepDir) {
    copyDir(store, dir / "crashed" / "store");
    copyDir(ws, dir / "crashed" / "ws");
  }
  sx.sealNotBeforeMs = child.stopSentAtMs + static_cast<double>(kWatchdogGrace.count());
  checkStoppedState(sc, sx, true, store, dir, opts, c);
  const WorkspaceSnapshot atSeal = snapshotWorkspace(ws);
  SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, dir);
  const ChildResult r = runToEnd(recover);
  ph.child(r, "recovery");
  ph.to("v8");
  say(fmt::format("recovery to the end: {}", r.describe()));
  if (r.exited && (r.exitCode == 0 || r.exitCode == 1))
    checkLineageDigests(store, "after recovery: ", c);
  checkGraceRecovery(sc, sx, store, ws, atSeal, r, recover, c);
}

// A Stop case (--mode stop): the Stop at the point (and with +K: the kill on the Stop path), the
// terminated state, then recovery to the end. A kill inside the termination batch (P12) leaves a
// crash state, judged as the kill case it equals (stop::killEquivalent).
template <class Say>
void runStopCase(const CaseId& id, const Reference& ref, const RunOptions& opts,
                 const fs::path& dir, Checks& c, Say& say, Phases& ph) {
  const Scenario& sc = ref.scenario;
  const fs::path store = dir / "store", ws = dir / "ws";
  const stop::StopExpectation sx = stop::expectStop(sc, id.failpoint, id.hit);
  copyDir(ref.templateWorkspace, ws);
  SpawnSpec run = agentCommand(opts, sc, "run", store, ws);
  run.args.insert(run.args.end(), {"--cancellation-grace-ms", "10000"});
  run.stderrFile = dir / "run.stderr";
  run.stdoutFile = dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(20000);
  std::optional<std::string> killAt;
  if (id.stopKill) killAt = id.stopKill->str();
  const ChildResult child = runStopped(run, id.failpointName(), id.hit, killAt);
  ph.child(child, "run");
  ph.to("verify");
  say(fmt::format("agent run stopped at {}#{}: control '{}' '{}', {}", id.failpointName(), id.hit,
                  child.controlLine, child.secondControlLine, child.describe()));
  if (auto v1 = stopProcessProblem(child, id, sx.runCompletes, run, store); !v1.empty()) {
    c.fail("V1", v1);
    for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"}) c.na(v, "V1 failed");
    return;
  }
  c.pass("V1");
  if (opts.keepDir) {
    copyDir(store, dir / "crashed" / "store");
    copyDir(ws, dir / "crashed" / "ws");
  }
  std::optional<CaseId> equivalent;
  CaseExpectation ex;
  bool afterCrash = false;
  if (id.stopKill == points::P12) {
    equivalent = stop::killEquivalent(sc, id);
    ex = expectCase(sc, equivalent->failpoint, equivalent->hit);
    say("the batch was rolled back: judged as the crash state of " + equivalent->str());
    checkNamedCrash(*equivalent, ex, store, dir, opts, c);
    afterCrash = workspace::afterCrashApplies(sc.spec, equivalent->failpointName());
    if (afterCrash) workspace::applyAfterCrash(sc.spec, ws);
  } else {
    checkStoppedState(sc, sx, id.stopKill != points::P13, store, dir, opts, c);
  }
  const WorkspaceSnapshot atCrash = snapshotWorkspace(ws);
  SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, dir);
  const ChildResult r = runToEnd(recover);
  ph.child(r, "recovery");
  ph.to("v8");
  say(fmt::format("recovery to the end: {}", r.describe()));
  if (r.exited && (r.exitCode == 0 || r.exitCode == 1))
    checkLineageDigests(store, "after recovery: ", c);
  if (!equivalent) {
    checkStopRecovery(sc, ref, store, ws, r, recover, c);
    return;
  }
  checkRecoveryReach(dir / "recover-hits.json",
                     predictedRecoveryHits(sc, equivalent->failpoint, equivalent->hit), c);
  if (!r.exited) {
    c.fail("V8", "crashsim-agent recover " + r.describe());
    return;
  }
  checkRecovery(*equivalent, sc, ex, barrier::CrashFacts{}, afterCrash, ref, store, ws, atCrash,
                r.exitCode, recover, c);
}

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

// A double fault starts from the crash state its primary case (the same case without the
// recovery kill) kept, when there is one: copies it into store/ws and returns true.
template <class Say>
bool restoreCrashState(const RunOptions& opts, const CaseId& id, const fs::path& store,
                       const fs::path& ws, Say& say) {
  const CaseId primary = id.primary();
  const fs::path snapshot = crashStateDir(opts, primary);
  if (!id.startsFromPrimary() || !fs::exists(snapshot / "complete")) return false;
  copyDir(snapshot / "store", store);
  copyDir(snapshot / "ws", ws);
  say("started from the crash state of " + primary.str());
  return true;
}

// After the armed run's kill: the crashed state beside the recovered one for `crashsim run
// --keep` (dir/crashed), and a primary's state for its double faults to start from.
void keepCrashState(const RunOptions& opts, const CaseId& id, const fs::path& dir,
                    const fs::path& store, const fs::path& ws) {
  if (opts.keepDir) {
    copyDir(store, dir / "crashed" / "store");
    copyDir(ws, dir / "crashed" / "ws");
  }
  if (opts.keepCrashStates && !id.startsFromPrimary()) {
    const fs::path snap = crashStateDir(opts, id);
    copyDir(store, snap / "store");
    copyDir(ws, snap / "ws");
    std::ofstream(snap / "complete") << id.str() << "\n";
  }
}

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
  const ChildResult r = runToEnd(recover);
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

// A legacy import case (P16/P17, kill mode): the agent run killed inside its store's legacy
// import, optionally the first recovery killed there too, then recovery to the end. The
// scenario's run never started: recovery completes the import and runs nothing (V8).
template <class Say>
void runImportCase(const CaseId& id, const Reference& ref, const RunOptions& opts,
                   const fs::path& dir, Checks& c, Say& say, Phases& ph) {
  const Scenario& sc = ref.scenario;
  const fs::path store = dir / "store", ws = dir / "ws";
  for (auto v : {"V6", "V7"})
    c.na(v, "legacy import case: no run of the scenario exists, only imported legacy runs");
  CaseId primary = id;
  primary.recoveryFailpoint.reset();
  primary.recoveryHit.reset();
  if (!restoreCrashState(opts, id, store, ws, say)) {
    copyDir(ref.templateWorkspace, ws);
    writeLegacyJsonl(sc, store);
    SpawnSpec run = agentCommand(opts, sc, "run", store, ws);
    run.stderrFile = dir / "run.stderr";
    run.stdoutFile = dir / "run.stdout";
    run.timeout = std::chrono::milliseconds(15000);
    const ChildResult child = runArmed(run, id.failpointName(), id.hit);
    ph.child(child, "run");
    ph.to("verify");
    say(fmt::format("agent run armed at {}#{}: control '{}', {}", id.failpointName(), id.hit,
                    child.controlLine, child.describe()));
    if (auto v1 = killProblem(child, id.failpointName(), id.hit, run, store); !v1.empty()) {
      c.fail("V1", v1);
      for (auto v : {"V2", "V3", "V4", "V5", "V8"}) c.na(v, "no crash state (V1 failed)");
      return;
    }
    keepCrashState(opts, id, dir, store, ws);
    checkImportKillState(primary, sc, store, dir, opts, false, c);
  }
  if (id.isDoubleFault()) {
    SpawnSpec first = agentCommand(opts, sc, "recover", store, ws);
    first.timeout = std::chrono::milliseconds(20000);
    first.stderrFile = dir / "recover1.stderr";
    first.stdoutFile = dir / "recover1.stdout";
    const auto rfp = id.recoveryFailpoint->str();
    const int rhit = id.recoveryHit.value_or(1);
    const ChildResult r1 = runArmed(first, rfp, rhit);
    ph.child(r1, "run");
    ph.to("verify");
    say(fmt::format("recovery armed at {}#{}: control '{}', {}", rfp, rhit, r1.controlLine,
                    r1.describe()));
    if (auto bad = killProblem(r1, rfp, rhit, first, store); !bad.empty()) {
      c.fail("V1", "the recovery process: " + bad);
      for (auto v : {"V4", "V8"})
        c.na(v, "the recovery process was not killed where planned (V1 failed)");
      return;
    }
    checkImportKillState(id, sc, store, dir, opts, true, c);
  }
  if (!c.failed("V1")) c.pass("V1");

  const WorkspaceSnapshot atCrash = snapshotWorkspace(ws);
  SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, dir);
  const ChildResult r = runToEnd(recover);
  ph.child(r, "recovery");
  ph.to("v8");
  say(fmt::format("recovery to the end: {}", r.describe()));
  if (!id.isDoubleFault())
    checkRecoveryReach(dir / "recover-hits.json", predictedRecoveryHits(sc, id.failpoint, id.hit),
                       c);
  if (!r.exited || r.exitCode != 0) {
    c.fail("V8", fmt::format("crashsim-agent recover {}: {}", r.describe(),
                             lastLine(recover.stderrFile)));
    c.na("V4", "the import never ended (V8 failed)");
    return;
  }
  try {
    for (const auto& bad : importStateProblems(sc, store, importedLegacyEvents(sc).size(), true))
      c.fail("V8", "after recovery: " + bad);
    // Nothing of the scenario ran: no tool executed, the workspace is as the kill left it.
    for (const auto& [call, n] : readEffects(store / "effects.jsonl"))
      c.fail("V8",
             fmt::format("{} executed {} time(s), but the scenario's run never started", call, n));
    if (snapshotWorkspace(ws) != atCrash)
      c.fail("V8", "recovery changed the workspace although no run of the scenario existed");
  } catch (const std::exception& e) {
    c.fail("V8", std::string("error after recovery: ") + e.what());
  }
  checkImportedDecisions(sc, store, c);
  if (!c.failed("V8")) c.pass("V8");
}

// A corrupt case (--mode corrupt): the kill as in kill mode (its kill case verifies V2–V8 of
// this crash state), the seeded damage, then inspect and recovery judged by C1
// (verdicts/c1_corrupt.h).
template <class Say>
void runCorruptCase(const CaseId& id, const Reference& ref, const RunOptions& opts,
                    const fs::path& dir, Checks& c, reports::CaseRecord& rec, Say& say) {
  const Scenario& sc = ref.scenario;
  const fs::path store = dir / "store", ws = dir / "ws";
  copyDir(ref.templateWorkspace, ws);
  SpawnSpec run = agentCommand(opts, sc, "run", store, ws);
  run.stderrFile = dir / "run.stderr";
  run.stdoutFile = dir / "run.stdout";
  run.timeout = std::chrono::milliseconds(15000);
  const ChildResult child = runArmed(run, id.failpointName(), id.hit);
  say(fmt::format("agent run armed at {}#{}: control '{}', {}", id.failpointName(), id.hit,
                  child.controlLine, child.describe()));
  CaseId killCase = id;
  killCase.mode = "kill";
  killCase.seed.reset();
  for (auto v : {"V2", "V3", "V5", "V6", "V7", "V8"})
    c.na(v, "corrupt mode: the undamaged crash state is verified by " + killCase.str() +
                "; C1 judges the damaged one");
  if (auto v1 = killProblem(child, id.failpointName(), id.hit, run, store); !v1.empty()) {
    c.fail("V1", v1);
    c.na("C1", "no crash state (V1 failed)");
    c.na("V4", "no crash state (V1 failed)");
    return;
  }
  if (opts.keepDir) {
    copyDir(store, dir / "crashed" / "store");
    copyDir(ws, dir / "crashed" / "ws");
  }
  AppliedCorruption applied;
  try {
    applied = applyCorruption(store, id.seed.value_or(0));
  } catch (const std::exception& e) {
    c.fail("V1", std::string("applying the damage: ") + e.what());
    c.na("C1", "no damaged store (V1 failed)");
    c.na("V4", "no damaged store (V1 failed)");
    return;
  }
  c.pass("V1");
  rec.corruption = applied.record;
  say(fmt::format("damage {}: {} ({})", applied.record.kind, applied.record.detail,
                  applied.record.detectable ? "must be refused"
                  : applied.mayGoUnnoticed  ? "undetectable by design"
                                            : "must be refused or change nothing"));
  if (opts.keepDir)
    std::ofstream(dir / "corruption.json") << Json{{"kind", applied.record.kind},
                                                   {"detail", applied.record.detail},
                                                   {"detectable", applied.record.detectable},
                                                   {"mayGoUnnoticed", applied.mayGoUnnoticed}}
                                                  .dump()
                                           << "\n";

  // V4 reads a copy: even a read-only SQLite open may change a damaged store's files.
  copyDir(store, dir / "damaged-view");
  checkDamagedLedgerDecisions(dir / "damaged-view", applied.expectedDecisions, c);
  fs::remove_all(dir / "damaged-view");

  CorruptObservation o;
  const StoreFiles damaged = storeFiles(store);
  SpawnSpec inspect;
  inspect.exe = opts.crashsim.empty() ? locateCrashsim() : opts.crashsim;
  inspect.forkServer = true;
  inspect.args = {"inspect", store.string(), "--json"};
  inspect.stdoutFile = dir / "inspect.stdout";
  inspect.stderrFile = dir / "inspect.stderr";
  o.inspect = runToEnd(inspect);
  o.inspectCode = failClosedCodeOf(inspect.stdoutFile);
  o.inspectChanged = storeFilesChange(damaged, storeFiles(store));
  say(fmt::format("crashsim inspect: {} {}", o.inspect.describe(), o.inspectCode));

  const bool afterCrash = workspace::afterCrashApplies(sc.spec, id.failpointName());
  if (afterCrash) workspace::applyAfterCrash(sc.spec, ws);
  // workspace_wrong: recovery is handed a copy of the workspace that is not it (C1 then
  // proves that copy unchanged: no marker created in it, no file touched).
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
  const WorkspaceSnapshot atCrash = snapshotWorkspace(recoverWs);
  auto markerOf = [&] {
    return fs::exists(recoverWs / kMarkerFile) ? readFile(recoverWs / kMarkerFile) : "(none)";
  };
  const std::string markerAtCrash = markerOf();
  const auto effectsAtCrash = readEffects(store / "effects.jsonl");
  const StoreFiles beforeRecover = storeFiles(store);
  SpawnSpec recover = recoveryToEnd(opts, sc, store, recoverWs, dir);
  o.recover = runToEnd(recover);
  o.recoverCode = failClosedCodeOf(recover.stdoutFile);
  say(fmt::format("recovery to the end: {} {}", o.recover.describe(), o.recoverCode));
  if (o.recover.exited && o.recover.exitCode == 2) {
    o.recoverChanged = storeFilesChange(beforeRecover, storeFiles(store));
    o.toolRan = readEffects(store / "effects.jsonl") != effectsAtCrash;
    o.workspaceChanged = snapshotWorkspace(recoverWs) != atCrash || markerOf() != markerAtCrash;
  } else if (o.recover.exited) {
    Checks outcome;
    const CaseExpectation x = expectCase(sc, id.failpoint, id.hit);
    checkRecovery(killCase, sc, x, barrier::CrashFacts{}, afterCrash, ref, store, ws, atCrash,
                  o.recover.exitCode, recover, outcome);
    o.contractOutcome = outcome;
    try {
      o.completedWithoutResponse = completedWithoutResponse(*RuntimeStore::open(store));
    } catch (const std::exception& e) {
      o.completedWithoutResponse = std::string("the recovered store does not open: ") + e.what();
    }
  }
  judgeCorruption(applied, o, *rec.corruption, c);
}

// The race of two hosts (+H2, verdicts/h1_race.h): two `crashsim-agent recover` released
// together on the crash state; H1 judges the race, then V8 (and V3's recovery reach) the task's
// end from the racer that recovered, as for the primary's single recovery.
template <class Say>
void runRaceRecovery(const CaseId& id, const CaseExpectation& x, bool afterCrash,
                     const Reference& ref, const RunOptions& opts, const fs::path& dir,
                     const WorkspaceSnapshot& atCrash, Checks& c, Say& say, Phases& ph) {
  const Scenario& sc = ref.scenario;
  const fs::path store = dir / "store", ws = dir / "ws";
  const auto predicted = predictedRecoveryHits(sc, id.failpoint, id.hit);
  race::Facts before;
  try {
    before = race::observe(store);
  } catch (const std::exception& e) {
    c.fail("H1", std::string("reading the crash state: ") + e.what());
    return;
  }
  std::vector<SpawnSpec> specs;
  for (const char* name : {"a", "b"}) {
    SpawnSpec s = agentCommand(opts, sc, "recover", store, ws);
    s.timeout = std::chrono::milliseconds(20000);
    s.stdoutFile = dir / fmt::format("recover-{}.stdout", name);
    s.stderrFile = dir / fmt::format("recover-{}.stderr", name);
    s.env["CRASHSIM_HITS_OUT"] = (dir / fmt::format("recover-{}-hits.json", name)).string();
    s.env["CRASHSIM_MODEL_LOG"] = (dir / fmt::format("model-inputs-{}.jsonl", name)).string();
    specs.push_back(std::move(s));
  }
  const RaceResult rr = runRace(specs, dir / "race.fifo");
  ph.child(rr.wall, "recovery");
  ph.to("v8");
  std::vector<race::Host> hosts;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ChildResult& r = rr.children[i];
    say(fmt::format("racer {}: {}: {}", i == 0 ? "a" : "b", r.describe(),
                    lastLine(specs[i].stdoutFile)));
    race::Host h;
    h.name = i == 0 ? "a" : "b";
    h.atBarrier = rr.atBarrier[i];
    h.exited = r.exited;
    h.exitCode = r.exitCode;
    h.describe = r.describe();
    h.stdoutText = readFile(specs[i].stdoutFile);
    h.modelLog = readFile(specs[i].env.at("CRASHSIM_MODEL_LOG"));
    h.hits = readHits(specs[i].env.at("CRASHSIM_HITS_OUT"));
    hosts.push_back(std::move(h));
  }
  race::Judgement j;
  try {
    j = race::judge(race::Expectation{predicted[11] > 0}, before, race::observe(store), hosts);
  } catch (const std::exception& e) {
    j.problems.push_back(std::string("reading the store after the race: ") + e.what());
  }
  std::string why;
  for (const auto& p : j.problems) why += (why.empty() ? "" : "; ") + p;
  if (why.empty())
    c.pass("H1");
  else
    c.fail("H1", why);
  if (!j.recovered) {
    c.fail("V8", "no racer recovered the crash state (H1)");
    return;
  }
  const size_t w = *j.recovered;
  say(fmt::format("racer {} recovered the crash state", hosts[w].name));
  if (!c.failed("V1")) checkRecoveryReach(specs[w].env.at("CRASHSIM_HITS_OUT"), predicted, c);
  checkRecovery(id, sc, x, barrier::CrashFacts{}, afterCrash, ref, store, ws, atCrash,
                hosts[w].exitCode, specs[w], c);
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
    SpawnSpec s = agentCommand(opts, sc, "run", pstore, pws);
    s.env["CRASHSIM_CLOCK_START_MS"] = "1767225600000";
    s.stderrFile = probe / (name + ".stderr");
    s.stdoutFile = probe / (name + ".stdout");
    s.timeout = std::chrono::milliseconds(15000);
    return s;
  };
  SpawnSpec first = delivery("first");
  const ChildResult k = runArmed(first, "P2", 1);
  if (auto bad = killProblem(k, "P2", 1, first, pstore); !bad.empty()) {
    c.fail("V8", "T1 exists: the first delivery: " + bad);
    return;
  }
  T1ExistsRun r;
  r.callIndex = *x.armedCall;
  r.callId = sc.calls[r.callIndex].id;
  r.effectsAtKill = readEffects(pstore / "effects.jsonl");
  SpawnSpec second = delivery("second");
  second.env["CRASHSIM_HITS_OUT"] = (probe / "second-hits.json").string();
  r.second = runToEnd(second);
  r.secondHits = readHits(probe / "second-hits.json");
  r.effectsAfterSecond = readEffects(pstore / "effects.jsonl");
  r.responseAfterSecond = ledgerHoldsResponse(pstore, r.callId);
  SpawnSpec recover = recoveryToEnd(opts, sc, pstore, pws, probe);
  r.recovery = runToEnd(recover);
  r.recoverStdout = readFile(recover.stdoutFile);
  r.effectsAfterRecovery = readEffects(pstore / "effects.jsonl");
  for (const auto& bad : t1ExistsProblems(r)) c.fail("V8", "T1 exists: " + bad);
  if (!opts.keepDir) fs::remove_all(probe);
}

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
  SpawnSpec run = agentCommand(opts, sc, "run", store, ws);
  run.stderrFile = rdir / "run.stderr";
  run.stdoutFile = rdir / "run.stdout";
  run.timeout = std::chrono::milliseconds(15000);
  const auto child = runArmed(run, fp.str(), hit);
  if (auto bad = killProblem(child, fp.str(), hit, run, store); !bad.empty())
    return at + ": the agent run: " + bad;
  if (workspace::afterCrashApplies(sc.spec, fp.str())) workspace::applyAfterCrash(sc.spec, ws);
  SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, rdir);
  const auto r = runToEnd(recover);
  if (!r.exited || r.exitCode != 0)
    return fmt::format("{} {}: {}", at, r.describe(), lastLine(recover.stderrFile));
  const auto hits = readHits(rdir / "recover-hits.json");
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

}  // namespace

fs::path defaultWorkRoot(const std::string& mode) {
  if ((mode == "kill" || mode == "stop") && fs::is_directory("/dev/shm") &&
      ::access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return fs::temp_directory_path();
}

Reference buildReference(const Scenario& scenario, const RunOptions& opts) {
  Reference ref;
  ref.scenario = scenario;
  fs::path dir = opts.workRoot / ("ref-" + sanitize(scenario.id));
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  ref.templateWorkspace = dir / "template";
  SpawnSpec seed;
  seed.exe = opts.agent;
  seed.forkServer = true;
  seed.args = {"seed", "--workspace", ref.templateWorkspace.string(), "--scenario",
               scenario.file.string()};
  seed.stderrFile = dir / "seed.stderr";
  auto s = runToEnd(seed);
  if (!s.exited || s.exitCode != 0) {
    ref.problem =
        fmt::format("crashsim-agent seed {}: {}", s.describe(), lastLine(seed.stderrFile));
    return ref;
  }
  if (!fs::is_directory(ref.templateWorkspace)) {
    ref.problem = "crashsim-agent seed exited 0 but wrote no workspace (is CRASHSIM_AGENT " +
                  opts.agent.string() + " a crashsim-agent?)";
    return ref;
  }
  copyDir(ref.templateWorkspace, dir / "ws");
  writeLegacyJsonl(scenario, dir / "store");  // a legacy store's JSONL (nothing otherwise)
  SpawnSpec run = agentCommand(opts, scenario, "run", dir / "store", dir / "ws");
  run.env["CRASHSIM_HITS_OUT"] = (dir / "hits.json").string();
  run.env["CRASHSIM_FS_TRACE"] = (dir / "fs-trace.jsonl").string();
  run.stderrFile = dir / "run.stderr";
  run.stdoutFile = dir / "run.stdout";
  auto r = runToEnd(run);
  if (!r.exited || r.exitCode != 0) {
    ref.problem = fmt::format("reference run {}: {}", r.describe(), lastLine(run.stderrFile));
    return ref;
  }
  if (!fs::exists(dir / "store" / "agent-exit.json")) {
    ref.problem = "reference run exited 0 without its normal-exit marker agent-exit.json";
    return ref;
  }
  try {
    const Json marker = Json::parse(readFile(dir / "store" / "agent-exit.json"));
    ref.journalMode = marker.at("summary").value("journalMode", "");
    ref.synchronous = marker.at("summary").value("synchronous", "");
  } catch (const std::exception& e) {
    ref.problem = std::string("reference run: unreadable agent-exit.json: ") + e.what();
    return ref;
  }
  // The durability every kill, Stop and corrupt verdict assumes (README "Durability"): the
  // store in WAL mode with synchronous FULL or EXTRA, as the connection reports it. A process
  // kill cannot lose what a weaker store leaves in the page cache, so no case would see it: the
  // setting itself fails every case (V1). Power-loss sweeps may ask for NORMAL to measure it,
  // and their D1 judges what a weaker store loses.
  if (opts.mode != "powerloss" &&
      (ref.journalMode != "wal" || (ref.synchronous != "FULL" && ref.synchronous != "EXTRA"))) {
    ref.problem = fmt::format(
        "the agent's store runs journal_mode={} synchronous={}; the contract's commits need wal "
        "and FULL",
        ref.journalMode, ref.synchronous);
    return ref;
  }
  ref.finalWorkspace = snapshotWorkspace(dir / "ws");
  ref.executionsPerCall = readEffects(dir / "store" / "effects.jsonl");
  if (auto hits = readHits(dir / "hits.json")) {
    ref.hits = *hits;
  } else {
    ref.problem = "the reference run wrote no readable failpoint hit counts (" +
                  (dir / "hits.json").string() +
                  "): is CRASHSIM_AGENT an instrumented crashsim-agent?";
    return ref;
  }
  // The plan comes from the oracle's prediction; a reference run that reaches other hits means
  // the plan is not the runtime's set of crash windows (an error, never a smaller sweep).
  if (auto bad = reachDifference(predictedHits(scenario), ref.hits,
                                 pointRange(points::P0, points::P11), "the reference run");
      !bad.empty()) {
    ref.problem = bad;
    return ref;
  }
  for (CrashPoint fp : {points::P16, points::P17})
    if (ref.hits[fp] != predictedImportBatches(scenario)) {
      ref.problem = fmt::format("the reference run reached {} {} time(s), the oracle predicts {}",
                                fp.name(), ref.hits[fp], predictedImportBatches(scenario));
      return ref;
    }
  // The barriers have no prediction (the contract does not fix a run's number of transactions
  // or file steps), only a lower bound.
  if (auto bad = barrierBoundProblem(predictedHits(scenario), ref.hits); !bad.empty()) {
    ref.problem = bad;
    return ref;
  }
  // ... and the file steps are named: each replace's fsync, rename and directory fsync in the
  // order a power cut allows (verdicts/file_steps.h).
  if (auto bad = fileReplaceOrderProblem(dir / "fs-trace.jsonl"); !bad.empty()) {
    ref.problem = "reference run: " + bad;
    return ref;
  }
  // Sanity: the reference must meet the scenario's own expectations.
  if (auto bad = workspace::expectedProblems(scenario.spec, dir / "ws"); !bad.empty())
    ref.problem = "reference run: " + bad.front();
  for (const auto& [call, n] : ref.executionsPerCall)
    if (n != 1) ref.problem = fmt::format("reference run executed {} {} times", call, n);
  if (!opts.keepFailures) fs::remove_all(dir / "store"), fs::remove_all(dir / "ws");
  // The reference recoveries the +R:S#k / +R:F#k double faults are planned from.
  if (ref.problem.empty() && opts.recoveryBarriers && !scenario.spec.legacyStore) {
    const auto hits = predictedHits(scenario);
    for (CrashPoint fp : pointRange(points::P0, points::P9))
      for (int h = 1; h <= hits[fp] && ref.problem.empty(); ++h) {
        if (!sweptRecoveryBarriers(scenario, fp, h)) continue;
        RecoveryBarrierHits rb;
        ref.problem = referenceRecovery(scenario, opts, ref, dir, fp, h, rb);
        if (ref.problem.empty()) ref.recoveryBarriers.push_back(rb);
      }
  }
  return ref;
}

reports::CaseRecord caseRecordOf(const CaseId& id, const RunOptions& opts) {
  reports::CaseRecord rec;
  rec.id = id.str();
  rec.scenario = id.scenario;
  rec.failpoint = id.failpointName();
  rec.hit = id.hit;
  rec.mode = id.mode;
  if (id.recoveryFailpoint) {
    rec.recoveryFailpoint = id.recoveryFailpoint->str();
    rec.recoveryHit = id.recoveryHit.value_or(1);
  }
  if (id.stopKill) {  // the second point of a Stop double fault (reports: K:P12 / K:P13)
    rec.recoveryFailpoint = id.stopKill->str();
    rec.recoveryHit = 1;
  }
  rec.reproduce = reproduceLine(id, opts);
  return rec;
}

CaseOutcome runCase(const CaseId& id, const Reference& ref, const RunOptions& opts) {
  auto started = std::chrono::steady_clock::now();
  CaseOutcome out;
  Checks c;
  auto& rec = out.record;
  rec = caseRecordOf(id, opts);
  auto say = [&](std::string s) {
    if (opts.verbose) out.log.push_back(std::move(s));
  };
  Phases ph(rec.phasesMs, "setup", started);

  fs::path dir = opts.keepDir
                     ? *opts.keepDir
                     : opts.workRoot / fmt::format("case-{}-{}", ::getpid(), sanitize(id.str()));
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  fs::path store = dir / "store", ws = dir / "ws";
  // A path-mutation case is judged against the scenario with the generated change as its
  // afterCrash (verdicts/path_mutations.h); the agent still plays the scenario file.
  std::optional<pathmut::Expectation> pathX;
  std::optional<Scenario> judged;
  std::string pathOracleProblem;
  if (id.isPathMutation()) {
    try {
      pathX = pathmut::expect(ref.scenario, id);
      judged = pathmut::judgedScenario(ref.scenario, id, *pathX);
    } catch (const std::exception& e) {
      pathOracleProblem = e.what();
    }
  }
  const Scenario& sc = judged ? *judged : ref.scenario;

  auto finish = [&]() -> CaseOutcome {
    ph.to("report");
    {
      if (c.m["V9"].reason == "not evaluated") c.na("V9", "not sampled (see --verify-determinism)");
      rec.checks = c.m;
      bool anyFail = false;
      for (const auto& [k, v] : rec.checks) anyFail = anyFail || v.status == "fail";
      rec.verdict = anyFail ? "fail" : "pass";
      if (opts.keepDir || (anyFail && opts.keepFailures)) {
        out.keptAt = dir;
      } else {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    }
    rec.durationMs = std::chrono::duration<double, std::milli>(ph.close() - started).count();
    return out;
  };

  if (!ref.problem.empty()) {
    c.fail("V1", "reference run failed: " + ref.problem);
    return finish();
  }
  if (!pathOracleProblem.empty()) {
    c.fail("V1", "oracle: " + pathOracleProblem);
    return finish();
  }
  // A scenario with a legacy store is swept at its import; its own run is the same as without
  // one (plan.cpp), and its cases at other points would start from a store without the JSONL.
  if (id.isImport() != sc.spec.legacyStore.has_value()) {
    c.fail("V1", sc.spec.legacyStore
                     ? "scenario " + sc.id + " starts from a legacy store: its cases are P16/P17"
                     : "P16/P17 are cases of a scenario with a legacy store (legacyStore)");
    return finish();
  }
  if (id.isImport()) {
    runImportCase(id, ref, opts, dir, c, say, ph);
    return finish();
  }
  if (id.mode == "stop" && id.stopGrace) {
    runStopGraceCase(id, ref, opts, dir, c, say, ph);
    return finish();
  }
  if (id.mode == "stop") {
    runStopCase(id, ref, opts, dir, c, say, ph);
    return finish();
  }
  if (id.mode == "corrupt") {
    runCorruptCase(id, ref, opts, dir, c, rec, say);
    return finish();
  }

  if (id.mode != "kill" && id.mode != "powerloss") {
    c.fail("V1", "fault mode " + id.mode + " is not available in this build");
    return finish();
  }
  const bool powerloss = id.mode == "powerloss";
  PowerlossFindings plFindings;  // D1 and D2 (verdicts/d1_d2_powerloss.h)
  if (powerloss)
    c.m["D1"] = c.m["D2"] = c.m["D3"] = Check{"n/a", "no power-loss crash state was checked"};
  // A barrier has no oracle row: its expectation follows from the crash state (barrierFacts).
  const CaseExpectation x =
      id.isBarrier() ? CaseExpectation{} : expectCase(sc, id.failpoint, id.hit);
  barrier::CrashFacts barrierFacts;
  if (restoreCrashState(opts, id, store, ws, say)) {
    // The primary case already killed the agent here and verified V1–V7 on this state.
    for (auto v : {"V3", "V4"}) c.na(v, "crash state verified by the primary case");
  } else {
    copyDir(ref.templateWorkspace, ws);

    // --- the armed agent run -------------------------------------------------------------
    SpawnSpec run = agentCommand(opts, sc, "run", store, ws);
    run.stderrFile = dir / "run.stderr";
    run.stdoutFile = dir / "run.stdout";
    run.timeout = std::chrono::milliseconds(15000);
    if (powerloss) armPowerloss(run, id, dir, opts.synchronous);
    auto child = runArmed(run, id.failpointName(), id.hit);
    ph.child(child, "run");
    ph.to("verify");
    say(fmt::format("agent run armed at {}#{}: control '{}', {}", id.failpointName(), id.hit,
                    child.controlLine, child.describe()));
    std::string v1 = killProblem(child, id.failpointName(), id.hit, run, store);
    if (v1.empty() && powerloss) v1 = powerlossCrashProblem(id, dir);
    if (!v1.empty()) {
      c.fail("V1", v1);
      for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"})
        c.na(v, "no crash state (V1 failed)");
      return finish();
    }
    ph.to("setup");
    if (powerloss) keepPowerlossCrashCopy(store, dir);
    keepCrashState(opts, id, dir, store, ws);
    ph.to("verify");
    if (id.isBarrier())
      checkBarrierCrashState(sc, store, dir, opts, barrierFacts, c);
    else
      checkNamedCrash(id, x, store, dir, opts, c);
    if (powerloss) {
      plFindings = checkPowerlossCrash(dir, store, opts.synchronous, c.m);
      durable_replace::check(sc, store, ws, c);  // D3, before any afterCrash change
    }
  }

  // Another process changes the workspace while the agent is down (scenario afterCrash, or the
  // case's generated change of the target's path).
  ph.to("setup");
  bool afterCrash = workspace::afterCrashApplies(sc.spec, id.failpointName());
  if (pathX) {
    pathmut::apply(ref.scenario, id, ws);
    say("applied the path mutation " + id.pathMutation->component + ":" +
        id.pathMutation->mutation + " (" + pathX->rule + ")");
  } else if (afterCrash) {
    workspace::applyAfterCrash(sc.spec, ws);
    say("applied the scenario's afterCrash mutations");
  }
  if (pathX && pathX->kind == pathmut::Expectation::Kind::gate) {
    // The workspace root is gone or a file: start-up must refuse before it writes anything.
    const WorkspaceSnapshot storeBefore = snapshotWorkspace(store);
    SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, dir);
    auto r = runToEnd(recover);
    ph.child(r, "recovery");
    ph.to("v8");
    say(fmt::format("recovery to the end (expected refused: {}): {}", pathX->code, r.describe()));
    c.pass("V1");
    checkGateRefusal(*pathX, storeBefore, store, ws, dir / "recover-hits.json", r, recover, c);
    return finish();
  }
  WorkspaceSnapshot atCrash = snapshotWorkspace(ws);

  // --- the race of two hosts ------------------------------------------------------------
  if (id.isRace()) {
    if (!c.failed("V1")) c.pass("V1");
    for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7"})
      if (c.m[v].reason == "not evaluated")
        c.na(v, "crash state verified by the primary case; H1 and V8 judge the race");
    if (id.mode != "kill" || id.isBarrier()) {
      c.fail("H1", "the race of two hosts follows a named kill of the agent run");
      return finish();
    }
    runRaceRecovery(id, x, afterCrash, ref, opts, dir, atCrash, c, say, ph);
    return finish();
  }

  // --- double fault: kill the recovery process, then check the intermediate state --------
  std::optional<recovery_barrier::Judged> rbJudged;
  if (id.isDoubleFault()) {
    // A kill at the recovery process's own barrier is judged against the primary's crash state
    // (verified by the primary case): read it before the recovery touches it.
    std::optional<recovery_barrier::Run> atPrimary;
    if (id.isRecoveryBarrier()) {
      const auto from = continuationCallsFrom(sc, id.failpoint, id.hit);
      try {
        auto st = RuntimeStore::open(store);
        const auto runs = st->listRuns();
        if (runs.size() == 1 && from) {
          atPrimary = recovery_barrier::Run{runs[0].runId, runs[0].status, eventsOf(*st, runs[0])};
          rbJudged.emplace();
          rbJudged->firstCall = *from;
          rbJudged->effectsAtPrimary = readEffects(store / "effects.jsonl");
        }
      } catch (const std::exception& e) {
        say(std::string("reading the primary's crash state: ") + e.what());
      }
      if (!from)
        c.fail("V1", "oracle: the recovery of " + id.primary().str() +
                         " does not continue; its barriers are not swept");
      else if (!atPrimary)
        c.fail("V1", "the primary's crash state does not hold exactly one run");
    }
    SpawnSpec first = agentCommand(opts, sc, "recover", store, ws);
    first.timeout = std::chrono::milliseconds(20000);
    first.stderrFile = dir / "recover1.stderr";
    first.stdoutFile = dir / "recover1.stdout";
    auto rfp = id.recoveryFailpoint->str();
    int rhit = id.recoveryHit.value_or(1);
    auto r1 = runArmed(first, rfp, rhit);
    ph.child(r1, "run");
    ph.to("verify");
    say(fmt::format("recovery armed at {}#{}: control '{}', {}", rfp, rhit, r1.controlLine,
                    r1.describe()));
    if (auto bad = killProblem(r1, rfp, rhit, first, store); !bad.empty()) {
      c.fail("V1", "the recovery process: " + bad);
    } else {
      if (!c.failed("V1")) c.pass("V1");
      // The ancestor-tamper mutation, at the P11 kills (claim durable, no target run yet): the
      // P14 state settles the same way, so probing it too would only repeat the question.
      if (id.mode == "kill" && id.recoveryFailpoint == points::P11) {
        ph.to("setup");
        if (auto probe = probeAncestorTamper(opts, sc, store, ws, dir, c)) {
          ph.child(*probe, "recovery");
          say("ancestor tamper: recovery of the edited copy " + probe->describe());
        }
        ph.to("verify");
      }
    }
    checkRecoveryKilledState(id, sc, x, store, dir, opts, c, rbJudged ? &*rbJudged : nullptr,
                             atPrimary ? &*atPrimary : nullptr);
    if (id.isRecoveryBarrier()) atCrash = snapshotWorkspace(ws);
    if (isContinuationKill(id)) {
      // Killed inside its own calls: the task's end follows from that kill, and from the
      // scenario's external change when it names that point.
      afterCrash = workspace::afterCrashApplies(sc.spec, id.recoveryFailpoint->str());
      if (afterCrash) workspace::applyAfterCrash(sc.spec, ws);
      atCrash = snapshotWorkspace(ws);
    }
  } else {
    c.pass("V1");
  }

  // --- V8: recovery to the end ----------------------------------------------------------
  SpawnSpec recover = recoveryToEnd(opts, sc, store, ws, dir);
  auto r = runToEnd(recover);
  ph.child(r, "recovery");
  ph.to("v8");
  say(fmt::format("recovery to the end: {}", r.describe()));
  if (powerloss) checkPowerlossRecovery(plFindings, store, r, recover.stdoutFile, c.m);
  if (!id.isDoubleFault() && !id.isBarrier() && !powerloss && !c.failed("V1"))
    checkRecoveryReach(dir / "recover-hits.json", predictedRecoveryHits(sc, id.failpoint, id.hit),
                       c);
  // After a kill inside the continuation's own calls, the next recovery recovers that run as a
  // first run of the calls it was making.
  const auto first = isContinuationKill(id) ? continuationFirstCall(sc, id.failpoint, id.hit)
                                            : std::optional<size_t>{};
  if (first && !c.failed("V1"))
    checkRecoveryReach(dir / "recover-hits.json",
                       predictedRecoveryHits(continuationScenario(sc, *first),
                                             *id.recoveryFailpoint, id.recoveryHit.value_or(1)),
                       c);
  if (!r.exited) {
    c.fail("V8", "crashsim-agent recover " + r.describe());
    return finish();
  }
  checkRecovery(id, sc, first ? expectContinuationKill(sc, id) : x, barrierFacts, afterCrash, ref,
                store, ws, atCrash, r.exitCode, recover, c, rbJudged ? &*rbJudged : nullptr);
  if (pathX && pathX->kind == pathmut::Expectation::Kind::adopted)
    checkAdoptedRoot(*pathX, ws, readFile(recover.stdoutFile), c);
  if (id.mode == "kill" && !id.isDoubleFault() && !id.isBarrier() && id.failpoint == points::P2 &&
      id.hit == 1)
    probeT1Exists(opts, sc, ref, dir, c);
  if (r.exitCode == 0 || r.exitCode == 1) checkLineageDigests(store, "after recovery: ", c);
  return finish();
}

}  // namespace crashsim::harness
