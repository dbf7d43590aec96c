// modes/case_run.h — one case being run: what every fault mode's run() gets, and the steps the
// modes share (the armed process, the crash state kept for the cases that follow, the checks of a
// named crash state).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/runtime_driver.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/store.h"
#include "verdicts/path_mutations.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// The workspace identity marker (spec h), never part of a workspace snapshot.
inline constexpr const char* kMarkerFile = ".maka-workspace.json";

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

// One case being run (runCase makes it; FaultMode::run fills `checks`).
struct CaseRun {
  const CaseId& id;
  const Reference& ref;
  const RunOptions& opts;
  const FaultMode& mode;
  const RuntimeDriver& driver;
  // The scenario the case is judged against: the reference's, or with a path mutation the one
  // whose afterCrash is the generated change (verdicts/path_mutations.h).
  const Scenario& sc;
  const std::optional<pathmut::Expectation>& pathX;
  std::filesystem::path dir, store, ws;  // the case folder, its store/ and ws/
  Checks& checks;
  reports::CaseRecord& record;
  std::function<void(std::string)> say;  // the verbose narrative (crashsim run)
  Phases& ph;
};

// An id as a file name ("s/P4#1/kill" → "s_P4_1_kill").
std::string sanitize(std::string_view id);

// The spawn line of the program's agent run / recovery on `store` and `ws` (opts' driver).
SpawnSpec runSpec(const RunOptions& opts, const Scenario& sc, const std::filesystem::path& store,
                  const std::filesystem::path& ws);
SpawnSpec recoverSpec(const RunOptions& opts, const Scenario& sc,
                      const std::filesystem::path& store, const std::filesystem::path& ws);
// The recovery run to its end in a case folder: its output in recover.stdout and recover.stderr,
// the crash points it reached in recover-hits.json, the model inputs it sent in
// model-inputs.jsonl; 20 s to finish.
SpawnSpec recoveryToEnd(const RunOptions& opts, const Scenario& sc,
                        const std::filesystem::path& store, const std::filesystem::path& ws,
                        const std::filesystem::path& dir);

// V1 of a process the case stopped, not killed: "" passes V1; otherwise V1 fails with `problem`
// and V2–V8 are n/a. Returns whether V1 passed.
bool passStoppedV1(Checks& c, const std::string& problem);
// With `crashsim run --keep`: the crashed state beside the recovered one (dir/crashed).
void keepCrashedCopy(const RunOptions& opts, const std::filesystem::path& dir,
                     const std::filesystem::path& store, const std::filesystem::path& ws);
// The recovery run to its end (recoveryToEnd, its spawn line into `recover`), timed as the case's
// recovery and told in its narrative.
ChildResult recoverCase(CaseRun& cr, const Scenario& sc, const std::filesystem::path& store,
                        const std::filesystem::path& ws, SpawnSpec& recover);

// A case that starts from its primary's crash state (CaseId::startsFromPrimary) copies the state
// the primary kept into store/ws when there is one, and returns true.
bool restoreCrashState(const RunOptions& opts, const CaseId& id, const std::filesystem::path& store,
                       const std::filesystem::path& ws,
                       const std::function<void(std::string)>& say);
// After the armed run's kill: the crashed state beside the recovered one for `crashsim run
// --keep` (dir/crashed), and a primary's state for its double faults to start from.
void keepCrashState(const RunOptions& opts, const CaseId& id, const std::filesystem::path& dir,
                    const std::filesystem::path& store, const std::filesystem::path& ws);

// V5 on the open crashed store, then V6 and V7 on one copy of it (V6 rebuilds projections and
// leaves the ledger untouched, then V7 repairs). `fresh`: this case made the crash state (a
// double fault that starts from its primary's verified state runs V7 only).
void checkPlanRebuildRepair(std::unique_ptr<RuntimeStore> st, const std::filesystem::path& store,
                            const std::filesystem::path& dir, const RunOptions& opts, bool fresh,
                            Checks& c);
// A store or runtime error on a crashed store is a contract violation, not a harness crash: it
// fails every check of V2–V7 not decided yet.
void failUndecided(Checks& c, const std::exception& e);
// V2 on a crashed store; a mode that drops unsynced writes keeps the first writer's view in
// dir/v2-first-writer.
void checkCrashIntegrity(const std::filesystem::path& store, const std::filesystem::path& dir,
                         const RunOptions& opts, Checks& c);
// V2–V7 on the crash state of a named failpoint, against the oracle's expectation `x`.
void checkNamedCrash(const CaseId& id, const CaseExpectation& x, const std::filesystem::path& store,
                     const std::filesystem::path& dir, const RunOptions& opts, Checks& c);

// The steps the Phase 4 recovery cases (isolated restore, rebaseline) share
// (modes/workspace_case.cpp). judgeAt: one verdict judged at one moment of a case — `problem`
// empty passes it unless an earlier moment failed it, else fails it with `when` + problem.
void judgeAt(Checks& c, const char* check, const std::string& problem, const char* when);
// WH1 (verdicts/wh1_user_git.h) on `ws` at `when`, for every case of a scenario whose git seed has
// a submodule: each capture attempt, refused or not, runs c.4 check 7's `status` in it (c.5: read
// only), so its .git is judged in every case, not only after a kill inside a capture. Other
// scenarios: nothing (their cases' reports are unchanged).
void judgeSubmoduleGit(CaseRun& cr, const std::filesystem::path& ws, const char* when);
// The agent run from the template workspace, killed at (armAt, armHit) with its descendants
// watched (WH5), then V1 and V2–V7 on the ledger it leaves, judged as the crash-path kill at
// (ledgerPoint, ledgerHit). False when there is no crash state (V1 failed; V2–V8 n/a).
bool killWorkspaceAgentRun(CaseRun& cr, CrashPoint armAt, int armHit, CrashPoint ledgerPoint,
                           int ledgerHit);
// The recovery process `spec` (`who`: "the recovery process") killed at the case's point with
// its descendants watched (WH5), then V1 on it. False when V1 failed (V8 n/a: `whyNoV8`).
bool killWorkspaceRecovery(CaseRun& cr, SpawnSpec spec, const std::string& who,
                           const char* whyNoV8);

// The user's directory as the user leaves it (path → bytes, verdicts/wh1_user_dir.h).
using UserDirBytes = std::map<std::string, std::string>;
// The user edits the workspace after the crash (the scenario's afterCrash: the drift); returns
// the user's directory from then on, which WH1 holds every later moment to.
UserDirBytes applyUserDrift(CaseRun& cr);
// WH1 at one moment (`when`): the user's .git as seeded and the user's directory as
// `userAfterEdit`.
void judgeUserWorkspace(CaseRun& cr, const UserDirBytes& userAfterEdit, const char* when);
// The recovery process `recover` run to its end (60 s), with its phases and narrative line.
ChildResult runRecoveryToEnd(CaseRun& cr, SpawnSpec& recover);
// The recovery to the end (`recover`, 60 s): `owner` (the case's own verdict) fails when it does
// not exit 0; then WH1 after recovery, the scenario's afterCrash expectations included.
void recoverToEndKeepingTheUsersWorkspace(CaseRun& cr, SpawnSpec recover, const char* owner,
                                          const UserDirBytes& userAfterEdit);

// V1–V9 (reports::kCheckNames), then a mode's own verdicts.
std::vector<std::string_view> verdictsWith(std::initializer_list<std::string_view> own);

// The modes' runs (one file each) and the kill and power-loss flow they share.
void runImportCase(CaseRun& r);      // modes/legacy_import.cpp
void runCrashCase(CaseRun& r);       // modes/crash_case.cpp: kill and powerloss
void runRestoreCase(CaseRun& r);     // modes/restore_case.cpp: a kill inside an isolated restore
void runRebaselineCase(CaseRun& r);  // modes/rebaseline_case.cpp: a kill inside a rebaseline
void runGcCase(CaseRun& r);          // modes/gc_case.cpp: a kill inside the carrier GC (P30)
const FaultMode& killMode();         // modes/kill.cpp
const FaultMode& powerlossMode();    // modes/powerloss.cpp
const FaultMode& stopMode();         // modes/stop.cpp
const FaultMode& corruptMode();      // modes/corrupt.cpp

}  // namespace crashsim::harness
