// crashsim/host.h — what a host does with a store: a fresh run, and start-up.
//
// Ownership (spec k.10): every WRITER of a store — `crashsim-agent run`, `crashsim-agent
// recover`, `crashsim resume` — holds an exclusive flock on <store>/host.lock for its lifetime
// (the kernel drops it when the process dies, SIGKILL included). A store owned by a live host is
// refused with code::host_already_active before anything is opened or written. Holding it is
// what makes start-up repair of a crashed run safe: no other process can still be inside a
// provider step or a tool call of that run. A dry run takes no lock and writes nothing.
//
// Host start-up (hostStartup) is ONE sequence; `crashsim-agent recover` and `crashsim resume`
// both call it and nothing else re-implements a step. In order:
//   1. with a workspace, prove it is the store's (requireStoreWorkspace, on a read-only open,
//      before the writable one writes anything); then open the store and check it
//      (RuntimeStore::checkIntact);
//   2. continuation claim saga (repairContinuationClaims, strict) — first, because run
//      recovery skips the claim targets the saga owns (spec g);
//   3. reconcile (file_reconcile.h) — BEFORE startup repair. The run seal (terminal_facts.h)
//      refuses every event after a run's terminal fact, recovery bundles included, so a
//      reconciler that ran after repair had sealed the crashed run could never commit its
//      bundle and the operation would stay indeterminate for ever. (Spec g lists run recovery
//      inside the saga's start-up pass and leaves the reconcilers to the resolver's callers;
//      this runtime orders them so a bundle lands while its run is still open.) Without a
//      workspace nothing can be reconciled: each operation with a dedicated reconciler is
//      reported `deferred` (code::reconcile_workspace_required) and step 4 leaves its run
//      open (`deferred_reconcile`), so a later start-up with the workspace still settles it;
//   4. startup repair (startup_repair.h, strict): terminal fact, then header, per run;
//   5. Phase 1 planning (continuation.h) of every session of the store, or of the scenario's
//      session when a scenario is given. The safe-boundary feature flag comes from the
//      environment (CRASHSIM_SAFE_BOUNDARY_RESUME=0 → every plan parks resume_feature_disabled).
//      The safety inspector reports the workspace's marker identity and the tool catalogue
//      (the scenario's tools, else this agent's built-in tools); without a workspace there is
//      no observation and plans park safety_observation_unavailable;
//   6. continuation, only with a scenario (the scripted model) and not in a dry run: the
//      continuation authority claims and starts the target run (executeContinuation), then
//      the normal run loop continues the task.
// Lifecycle (spec e.1 observability): each plan is recorded as plan_approved | plan_parked,
// each execution as execution_started, then continuation_claim (the claim's result: acquired |
// existing | conflict), then execution_completed | execution_failed, one JSON
// line each in <store>/lifecycle.jsonl — identities, reason codes and error classes only, never
// prompts, tool arguments or results. A dry run records nothing.
// Dry run: the store is opened read-only (no byte of the store directory changes) and copied
// with SQLite's backup API into a private scratch store; steps 1–5 run on the copy (reconcile
// observes the real workspace but removes no temp file) and the copy is deleted. The report
// is therefore what a real start-up would do, up to the continuation.
// Errors: every failure is a crashsim::Error with a stable code (codes.h): host_already_active,
// store_open_failed, store_corrupt, schema_*, sqlite_error, repair_ambiguous,
// continuation_repair_failed, continuation_* (execution), workspace_* (identity).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/agent.h"
#include "crashsim/continuation.h"
#include "crashsim/json.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/tools.h"
#include "crashsim/workspace.h"
#include "crashsim/workspace_rebaseline.h"

namespace crashsim {

// The host lock (Ownership above): an exclusive flock on <storeDir>/host.lock for the object's
// lifetime; the kernel drops it when the process dies. Creates storeDir and host.lock when
// missing. Another live holder → code::host_already_active once `wait` has passed without it
// letting go (0: at once); an unopenable lock file → code::store_open_failed. Every writer of a
// store (run, recover, resume, `crashsim store exec --store`) holds one.
class HostLock {
 public:
  explicit HostLock(const std::filesystem::path& storeDir,
                    std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  ~HostLock();
  HostLock(const HostLock&) = delete;
  HostLock& operator=(const HostLock&) = delete;

 private:
  int fd_ = -1;
};

// The workspace a host start-up of `store` may reconcile and plan against (spec h): the
// directory must carry a marker (code::workspace_unmarked otherwise: a start-up never creates a
// marker, so a directory the store has never used is never adopted) whose identity, when the
// store's runs recorded any, is one of them (code::workspace_identity_mismatch otherwise: a
// marked directory of another workspace). The marker's own errors as readWorkspaceIdentity's.
// Reads only; called before start-up writes anything.
WorkspaceIdentity requireStoreWorkspace(const RuntimeStore& store,
                                        const std::filesystem::path& workspaceDir);

struct AgentPaths {
  std::filesystem::path storeDir;      // holds runtime.sqlite
  std::filesystem::path workspaceDir;  // the real workspace directory
  std::filesystem::path effectsPath;   // empty = <storeDir>/effects.jsonl
  std::string synchronous = "FULL";    // the store's PRAGMA synchronous (NORMAL: power-loss study)
  bool walBatching = true;             // StoreOptions::walBatching (off: SQLite's own VFS)
  // Stop: the watchdog's cooperative grace (crashsim/agent.h StopOptions) and Bash's SIGTERM →
  // SIGKILL grace (ToolPolicy::bashKillGrace).
  std::chrono::milliseconds cancellationGrace{15000};
  std::chrono::milliseconds bashKillGrace{2000};
};
std::filesystem::path effectsPathOf(const AgentPaths& paths);

// Fresh run of a scenario from scratch (holds the host lock): ensure the workspace identity
// (spec h), open the store, run the loop to its terminal facts.
RunSummary runScenario(const Scenario& scenario, const AgentPaths& paths,
                       CancellationToken& cancel);

struct HostStartupOptions {
  std::filesystem::path storeDir;
  std::optional<std::filesystem::path> workspaceDir;  // reconcile + safety inspector need it
  std::filesystem::path effectsPath;                  // empty = <storeDir>/effects.jsonl
  const Scenario* scenario = nullptr;                 // continuation needs it
  bool dryRun = false;
  std::chrono::milliseconds cancellationGrace{15000};  // the continuation run's Stop watchdog
  std::chrono::milliseconds bashKillGrace{2000};
  // Workspace continuity e.5 step 6b / g.1 item 1: the user's explicit rebaseline confirmation
  // {sessionId, boundaryManifestDigest} of the plan they were shown (an empty sessionId names the
  // scenario's session, or the only planned one). Applied after planning, before the
  // continuation; then the session is planned again. A refusal throws its g.1 code (nothing of
  // the rebaseline written). A dry run only reports `wouldRebaseline`.
  std::optional<RebaselineConfirmation> rebaseline;
  // Workspace continuity h.5 (e.5 step 8): when set, the carrier GC (crashsim/workspace_gc.h)
  // with this orphanGraceMs runs at the end of start-up, under its host lock, after the
  // continuation (never in a dry run). Unset (the default): no GC, so existing sweeps keep
  // their git children and cases.
  std::optional<std::chrono::milliseconds> gcOrphanGrace;
};

struct HostStartupReport {
  bool dryRun = false;
  Json claimRepair, reconcile, startupRepair;
  std::vector<ContinuationPlan> plans;  // one per planned session
  // Per run after steps 2–5: [{sessionId, runId, status, resolution}] (resolveRecovery).
  Json runs = Json::array();
  std::optional<RunSummary> continuation;
  // Set when a plan said continue but no continuation ran: continuation_scenario_required |
  // continuation_dry_run.
  std::optional<std::string> continuationNotRun;
  // g: the rebaseline start-up applied (null when none was confirmed): {sessionId,
  // confirmationId, epoch, epochOpenedEventId, checkpointId, readSet, created}, or
  // {wouldRebaseline: sessionId} in a dry run; `plans` then holds the plans after it.
  Json rebaseline = nullptr;
  // Workspace continuity (contract e.5 2a, 6a; f), present only when something happened: the
  // restore residue quarantined ({quarantined:[names]}), and the isolated restore of a plan that
  // parked exactly [workspace_drifted] under driftAction isolated_restore ({action:'restored',
  // fromEpoch, toEpoch, sourceCheckpointId, restoredCheckpointId, instanceRoot,
  // instanceIdentity, created} | {action:'would_restore', checkpointId} in a dry run |
  // {action:'refused'|'failed', code, detail, message}). After a restore the session's plan in
  // `plans` is the re-plan in the restored instance.
  std::optional<Json> restoreResidue;
  std::optional<Json> workspaceRestore;
  // h.5: the GC's report (WorkspaceGcReport::toJson) when gcOrphanGrace was set.
  std::optional<Json> workspaceGc;

  // True when start-up left something for a human or a later start-up: a run left open for
  // reconciliation, a plan parked for a reason other than "nothing to continue"
  // (resume_candidate_missing, continuation_already_exists), or a continuation that did not
  // complete.
  bool blocked() const;
  // {dryRun, claimRepair, reconcile, startupRepair, runs, plans:[…], plan (the only plan —
  //  the scenario session's when a scenario is given — else null), continuation,
  //  continuationNotRun} + rebaseline when one was confirmed
  Json toJson() const;
};

HostStartupReport hostStartup(const HostStartupOptions& options, CancellationToken& cancel);

}  // namespace crashsim
