// Host entry points (crashsim/host.h): a fresh run, and the one host start-up sequence.
#include "crashsim/host.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "agent/host_restore.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/plant.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/startup_repair.h"
#include "crashsim/workspace_carrier.h"
#include "crashsim/workspace_gc.h"
#include "recovery/file_reconcile.h"
#include "recovery/resolve_in_place.h"
#include "store/store_internal.h"

namespace crashsim {
namespace fs = std::filesystem;

fs::path effectsPathOf(const AgentPaths& paths) {
  return paths.effectsPath.empty() ? paths.storeDir / "effects.jsonl" : paths.effectsPath;
}

namespace {

// A writable open imports a pending legacy JSONL in the scenario's batch size (scenario.h).
StoreOptions storeOptionsOf(const Scenario* scenario) {
  StoreOptions options;
  if (scenario && scenario->legacyStore)
    options.legacyImportBatchEvents = scenario->legacyStore->batchEvents;
  return options;
}

ToolPolicy policyOf(const Scenario& scenario) {
  ToolPolicy policy;
  policy.available = scenario.tools;
  policy.denied = scenario.deny;
  return policy;
}

// A private directory removed with everything in it when the host start-up returns.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string tmpl = (fs::temp_directory_path() / "crashsim-dry-run-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw Error(code::store_open_failed,
                  "cannot create a scratch directory: " + std::string(std::strerror(errno)));
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// <store>/lifecycle.jsonl (crashsim/host.h "Lifecycle"): identities and codes only. An
// observability log, not a fact: appended, never synced, never read back by the runtime.
class LifecycleLog {
 public:
  explicit LifecycleLog(fs::path path) : path_(std::move(path)) {}
  void write(const std::string& event, const ContinuationPlan& plan, Json fields = Json::object()) {
    if (path_.empty()) return;
    fields["event"] = event;
    fields["sessionId"] = plan.sessionId;
    fields["sourceRunId"] = plan.sourceRunId;
    std::ofstream(path_, std::ios::binary | std::ios::app) << stableJson(fields) << "\n";
  }

 private:
  fs::path path_;
};

ContinuationHost continuationHost(RuntimeStore& store, const std::string& sessionId,
                                  const std::string& idBase,
                                  const std::optional<WorkspaceIdentity>& workspace,
                                  std::vector<std::string> tools, const Scenario* scenario,
                                  const fs::path& storeDir,
                                  std::optional<std::string> restoredLockReason = std::nullopt) {
  ContinuationHost host;  // enabled: from the environment (CRASHSIM_SAFE_BOUNDARY_RESUME)
  std::sort(tools.begin(), tools.end());
  if (scenario) {  // workspace continuity e.3: the scenario's host policy (default disabled)
    host.workspacePolicy.checkpointRequirement = scenario->workspacePolicy.checkpointRequirement;
    host.workspacePolicy.driftAction = scenario->workspacePolicy.driftAction;
  }
  if (workspace) {
    host.currentCwd = workspace->root.string();
    host.inspector = [workspace = *workspace, tools] {
      SafetyFacts facts;
      facts.workspaceIdentity = workspace.identity;
      facts.workspacePath = workspace.root.string();
      facts.backgroundOperationsSettled = true;
      facts.availableToolNames = tools;
      return facts;
    };
    // e.5 step 6: `workspace` is the instance the session is observed at (its restored
    // instance, host_detail::observedInstance, or the host's workspace).
    if (host.workspacePolicy.enabled())
      host.workspaceInspector = [workspace = *workspace, storeDir,
                                 restoredLockReason](const CheckpointFact* covering) {
        return observeWorkspace(WorkspaceObserveRequest{
            storeDir, workspace.root, workspace.identity, covering, restoredLockReason});
      };
  }
  // Deterministic continuation ids: <kind>-<idBase>-<n>, n = runs in the session + 1.
  const size_t ordinal = store.listRuns(sessionId).size() + 1;
  auto counter = std::make_shared<size_t>(0);
  host.newId = [counter, ordinal, idBase] {
    static const char* kinds[] = {"invocation", "run", "turn", "claim"};
    const size_t k = (*counter)++;
    return std::string(kinds[k % 4]) + "-" + idBase + "-" + std::to_string(ordinal + k / 4);
  };
  return host;
}

bool nothingToContinue(const ContinuationPlan& plan) {
  for (const std::string& r : plan.rejectionReasons)
    if (r != code::resume_candidate_missing && r != code::continuation_already_exists) return false;
  return true;
}

// The resolver's decisions per run, as start-up leaves them (what the CLI reports). Fills the
// report in place: the report holds every plan's runtime context (the whole lineage of each
// session), so a copy of it is a copy of the ledger.
void withRuns(HostStartupReport& report, RuntimeStore& store) {
  report.runs = Json::array();
  std::vector<const RuntimeEvent*> events;
  for (const RunHeader& h : store.listRuns()) {
    // The run's events read in place (the decode cache's, pinned while the resolver reads them).
    events.clear();
    std::lock_guard lk(store_detail::mutexOf(store));
    store_detail::Connection& c = store_detail::connectionOf(store);
    store_detail::DecodePin pin(c);
    store_detail::visitRunEvents(
        c, h.sessionId, h.runId,
        [&events](int64_t, const RuntimeEvent& e) { events.push_back(&e); });
    report.runs.push_back(Json{{"sessionId", h.sessionId},
                               {"runId", h.runId},
                               {"status", h.status},
                               {"resolution", toJson(detail::resolveRecoveryInPlace(events))}});
  }
}

// Planted bugs that run a tool again during recovery (V9 / V8 must catch them).
void plantedReruns(const Scenario& scenario, const fs::path& storeDir,
                   const WorkspaceIdentity& workspace, const fs::path& effectsPath,
                   CancellationToken& cancel) {
  // leftover_reruns_tool: state leaks between runs. A marker in the temp directory, keyed by
  // the store's path, survives the case; the next recovery of a store at the same path (the
  // same case run again) finds it and runs the first call again.
  bool leftover = false;
  if (planted("leftover_reruns_tool")) {
    const fs::path marker =
        fs::temp_directory_path() /
        ("crashsim-plant-leftover-" +
         std::to_string(std::hash<std::string>{}(fs::absolute(storeDir).string())));
    leftover = fs::exists(marker);
    if (!leftover) std::ofstream(marker) << storeDir.string() << "\n";
  }
  if (!planted("tool_reruns") && !leftover) return;  // tool_reruns: the first call runs again
  EffectsLog effects(effectsPath);
  ToolRuntime tools(workspace, policyOf(scenario), effects);
  const ScriptedCall& first = scenario.model.at(0).calls.at(0);
  const ToolCallRequest call{first.id, first.name, first.args};
  const PreflightDecision d = tools.preflight(call);
  if (d.kind == PreflightDecision::Kind::dispatch)
    tools.execute(call, d, ToolExecution{"planted-rerun", call.callId, "planted"}, cancel);
}

}  // namespace

HostLock::HostLock(const fs::path& storeDir, std::chrono::milliseconds wait) {
  std::error_code ec;
  fs::create_directories(storeDir, ec);
  if (ec)
    throw Error(code::store_open_failed,
                "cannot create store directory " + storeDir.string() + ": " + ec.message());
  const fs::path file = storeDir / "host.lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0)
    throw Error(code::store_open_failed,
                "cannot open " + file.string() + ": " + std::strerror(errno));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fd_);
      throw Error(code::host_already_active,
                  "another host process owns the store " + storeDir.string());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

HostLock::~HostLock() { ::close(fd_); }

WorkspaceIdentity requireStoreWorkspace(const RuntimeStore& store, const fs::path& workspaceDir) {
  // planted bug: a missing workspace directory is created (mkdir -p) before it is proven
  if (planted("host_creates_missing_workspace")) fs::create_directories(workspaceDir);
  const std::optional<WorkspaceIdentity> marked = readWorkspaceIdentity(workspaceDir);
  std::set<std::string> recorded;
  for (const RunHeader& h : store.listRuns())
    if (h.workspaceIdentity) recorded.insert(*h.workspaceIdentity);
  std::string list;
  for (const std::string& id : recorded) list += (list.empty() ? "" : ", ") + id;
  if (!marked && planted("host_adopts_unmarked_workspace"))
    return ensureWorkspaceIdentity(workspaceDir);  // the old start-up: marks what it is given
  if (!marked)
    throw Error(code::workspace_unmarked,
                "workspace " + workspaceDir.string() + " has no marker (" +
                    std::string(kWorkspaceMarkerName) + "): the store " +
                    (recorded.empty() ? std::string("records no workspace") : "recorded " + list) +
                    "; a start-up never adopts an unmarked directory, nothing was written");
  if (!recorded.empty() && !recorded.count(marked->identity))
    throw Error(code::workspace_identity_mismatch,
                "workspace " + marked->root.string() + " is " + marked->identity +
                    ", but the store's runs recorded " + list + "; nothing was written");
  if (planted("workspace_root_as_given")) {  // planted bug: the path as given, not its realpath
    WorkspaceIdentity given = *marked;
    given.root = fs::absolute(workspaceDir).lexically_normal();
    if (given.root.has_filename() == false) given.root = given.root.parent_path();
    return given;
  }
  return *marked;
}

RunSummary runScenario(const Scenario& scenario, const AgentPaths& paths,
                       CancellationToken& cancel) {
  const WorkspaceIdentity workspace = ensureWorkspaceIdentity(paths.workspaceDir);
  HostLock lock(paths.storeDir);
  StoreOptions options = storeOptionsOf(&scenario);
  options.synchronous = paths.synchronous;
  options.walBatching = paths.walBatching;
  auto store = RuntimeStore::open(paths.storeDir, options);
  EffectsLog effects(effectsPathOf(paths));
  ToolPolicy policy = policyOf(scenario);
  policy.bashKillGrace = paths.bashKillGrace;
  ToolRuntime tools(workspace, policy, effects);
  StopOptions stop;
  stop.cancellationGrace = paths.cancellationGrace;
  stop.storeDir = paths.storeDir;
  stop.storeOptions = options;
  AgentRunner runner(*store, scenario, tools, cancel, stop);
  runner.enableCheckpoints({scenario.workspacePolicy.checkpointRequirement, paths.storeDir});
  RunSummary summary = runner.runFresh(freshRunIdentity(scenario));
  const auto settings = store->connectionSettings();
  summary.journalMode = settings.journalMode;
  summary.synchronous = settings.synchronous;
  return summary;
}

bool HostStartupReport::blocked() const {
  for (const Json& r : startupRepair.value("runs", Json::array()))
    if (r.value("action", "") == "deferred_reconcile") return true;
  for (const ContinuationPlan& p : plans)
    if (!p.isContinue() && !nothingToContinue(p)) return true;
  return continuation && continuation->status != code::completed;
}

Json HostStartupReport::toJson() const {
  Json j = Json::object();
  j["dryRun"] = dryRun;
  j["claimRepair"] = claimRepair;
  j["reconcile"] = reconcile;
  j["startupRepair"] = startupRepair;
  j["runs"] = runs;
  Json ps = Json::array();
  for (const ContinuationPlan& p : plans) ps.push_back(p.toJson());
  j["plans"] = ps;
  j["plan"] = plans.size() == 1 ? ps[0] : Json(nullptr);
  j["continuation"] = continuation ? continuation->toJson() : Json(nullptr);
  j["continuationNotRun"] = continuationNotRun ? Json(*continuationNotRun) : Json(nullptr);
  if (!rebaseline.is_null()) j["rebaseline"] = rebaseline;
  // Workspace continuity f (only when something happened: existing reports are unchanged).
  if (restoreResidue) j["restoreResidue"] = *restoreResidue;
  if (workspaceRestore) j["workspaceRestore"] = *workspaceRestore;
  if (workspaceGc) j["workspaceGc"] = *workspaceGc;
  return j;
}

namespace {

// The store start-up works on: the real one under the host lock, or (dry run) a private copy.
struct StartupStore {
  std::optional<ScratchDir> scratch;
  std::unique_ptr<RuntimeStore> store;
  std::optional<WorkspaceIdentity> workspace;
};

// 1. Open (and check) the store, and prove the workspace is the store's.
void openForStartup(const HostStartupOptions& options, std::optional<HostLock>& lock,
                    StartupStore& out) {
  const fs::path& storeDir = options.storeDir;
  StoreOptions ro;
  ro.readOnly = true;
  if (options.dryRun) {
    auto source = RuntimeStore::open(storeDir, ro);
    if (options.workspaceDir) out.workspace = requireStoreWorkspace(*source, *options.workspaceDir);
    source->checkIntact();
    out.scratch.emplace();
    source->backupTo(out.scratch->path);
    source.reset();
    out.store = RuntimeStore::open(out.scratch->path);
    return;
  }
  // Planted bug (host_lock_after_claim): the lock is taken only for the continuation run it
  // starts, so start-up's repair, planning and claim run beside any other host.
  if (!planted("host_lock_after_claim")) lock.emplace(storeDir);
  // The workspace is proven on a read-only open, before the writable one writes anything (a
  // manifest, a checkpoint when it closes on an error) — unless a legacy import is pending:
  // a read-only open would run the whole import once more in a scratch copy (its failpoints
  // included), and the writable open imports before anything else anyway.
  const bool importPending = legacyImportPending(storeDir);
  if (options.workspaceDir && !importPending)
    out.workspace = requireStoreWorkspace(*RuntimeStore::open(storeDir, ro), *options.workspaceDir);
  out.store = RuntimeStore::open(storeDir, storeOptionsOf(options.scenario));
  if (options.workspaceDir && importPending)
    out.workspace = requireStoreWorkspace(*out.store, *options.workspaceDir);
  // planted bug: start-up recovers a store its self-checks would refuse (corrupt mode, C1)
  if (!planted("host_ignores_integrity_check")) out.store->checkIntact();
}

// 2.–4. The claim saga, the reconcilers while the crashed runs are still open (the run seal),
// then startup repair (the terminal fact, then the header) of the runs not deferred.
void repairBeforePlanning(RuntimeStore& store, const std::optional<WorkspaceIdentity>& workspace,
                          bool dryRun, HostStartupReport& report) {
  report.claimRepair = repairContinuationClaims(store, RepairMode::strict, false).toJson();
  report.reconcile = reconcileIndeterminateOperations(
      store, ReconcileOptions{workspace ? &*workspace : nullptr, !dryRun});
  RunKeys deferred;
  for (const Json& op : report.reconcile.value("operations", Json::array()))
    if (op.value("action", "") == "deferred")
      deferred.insert({op.value("sessionId", ""), op.value("runId", "")});
  report.startupRepair = startupRepair(store, RepairMode::strict, false, deferred).toJson();
}

// The approved plan start-up continues: its index in report.plans, its host, and the instance
// the session was observed at (where its tools run: a restored instance, e.5 step 6).
struct Approved {
  size_t index = 0;
  ContinuationHost host;
  std::optional<WorkspaceIdentity> instance;
};

// e.3 diagnostic `rebaseline_available`: a plan parked on reasons a rebaseline clears (rows 4,
// 6–8) under driftAction offer_rebaseline, when g.1 items 2–6 hold for the observed instance
// (checked read only); its detail names what the user confirms. A continuing plan (row 4 under
// optional_legacy) offers nothing: there is nothing to unblock.
void offerRebaseline(RuntimeStore& store, const fs::path& storeDir, const Scenario* scenario,
                     const std::optional<WorkspaceIdentity>& instance, ContinuationPlan& plan) {
  if (!scenario || scenario->workspacePolicy.checkpointRequirement == "disabled" ||
      scenario->workspacePolicy.driftAction != "offer_rebaseline" || plan.isContinue() ||
      !plan.boundary || !instance)
    return;
  RebaselineRequest req;
  req.storeDir = storeDir;
  req.instanceRoot = instance->root;
  req.instanceIdentity = instance->identity;
  try {
    checkRebaselinePreconditions(store, resolveGitRuntime(), plan, req);
  } catch (const Error&) {
    return;  // not available: `--rebaseline` would refuse with that code
  }
  plan.diagnostics.push_back(
      PlanDiagnostic{std::string(code::rebaseline_available),
                     Json{{"sessionId", plan.sessionId},
                          {"boundaryManifestDigest", plan.boundary->manifestDigest}}});
}

// 5. Phase 1 planning of every session (the scenario's, or every stored one): each plan in the
// report and the lifecycle log; the first approved one is returned. The plan is not copied: it
// holds its whole lineage's events. Workspace continuity e.5 step 6a: a plan that parks exactly
// [workspace_drifted] under driftAction isolated_restore is restored (f) and the session
// re-planned in the restored instance, at most once per start-up (a dry run reports
// would_restore).
std::optional<Approved> planSessions(RuntimeStore& store, const fs::path& storeDir,
                                     const Scenario* scenario,
                                     const std::optional<WorkspaceIdentity>& workspace, bool dryRun,
                                     LifecycleLog& lifecycle, HostStartupReport& report) {
  std::vector<std::string> sessions;
  if (scenario) {
    sessions.push_back(scenarioSessionId(*scenario));
  } else {
    for (const RunHeader& h : store.listRuns())
      if (std::find(sessions.begin(), sessions.end(), h.sessionId) == sessions.end())
        sessions.push_back(h.sessionId);
  }
  const std::vector<std::string> tools = scenario ? scenario->tools : ToolRuntime::builtinTools();
  std::optional<Approved> toRun;
  for (const std::string& sessionId : sessions) {
    host_detail::ObservedInstance observed{workspace, std::nullopt};
    if (scenario && scenario->workspacePolicy.checkpointRequirement != "disabled")
      observed = host_detail::observedInstance(store, sessionId, workspace);
    ContinuationHost host =
        continuationHost(store, sessionId, scenario ? scenario->id : sessionId, observed.workspace,
                         tools, scenario, storeDir, observed.restoredLockReason);
    ContinuationPlan plan = planLatestContinuation(store, sessionId, host);
    if (host_detail::restoreTriggered(plan, scenario) && !report.workspaceRestore) {
      lifecycle.write("plan_parked", plan, Json{{"reasonCodes", plan.rejectionReasons}});
      bool restored = false;
      report.workspaceRestore =
          host_detail::runIsolatedRestore(store, storeDir, plan, dryRun, restored);
      lifecycle.write("workspace_restore", plan,
                      Json{{"action", (*report.workspaceRestore)["action"]}});
      if ((*report.workspaceRestore)["action"] == "would_restore")  // e.3: f.1 holds
        plan.diagnostics.push_back(
            PlanDiagnostic{std::string(code::isolated_restore_available),
                           Json{{"checkpointId", (*report.workspaceRestore)["checkpointId"]}}});
      if (restored) {
        observed = host_detail::observedInstance(store, sessionId, workspace);
        host = continuationHost(store, sessionId, scenario ? scenario->id : sessionId,
                                observed.workspace, tools, scenario, storeDir,
                                observed.restoredLockReason);
        plan = planLatestContinuation(store, sessionId, host);
      }
    }
    offerRebaseline(store, storeDir, scenario, observed.workspace, plan);
    lifecycle.write(plan.isContinue() ? "plan_approved" : "plan_parked", plan,
                    Json{{"reasonCodes", plan.rejectionReasons}});
    if (plan.isContinue() && !toRun)
      toRun = Approved{report.plans.size(), std::move(host), observed.workspace};
    report.plans.push_back(std::move(plan));
  }
  return toRun;
}

// 6. The continuation: claim + start by the continuation authority, then the normal loop; its
// end in the lifecycle log.
void runApprovedContinuation(const HostStartupOptions& options, RuntimeStore& store,
                             const WorkspaceIdentity& workspace, const ContinuationPlan& plan,
                             const ContinuationHost& host, const fs::path& effectsPath,
                             std::optional<HostLock>& lock, LifecycleLog& lifecycle,
                             CancellationToken& cancel, HostStartupReport& report) {
  const Scenario& scenario = *options.scenario;
  const Json ids{{"targetRunId", plan.runId}, {"claimId", plan.claimId}};
  lifecycle.write("execution_started", plan, ids);
  try {
    ContinuationHost claiming = host;
    claiming.onClaim = [&lifecycle, &p = plan](const ClaimResult& cr) {
      lifecycle.write("continuation_claim", p, Json{{"claimId", p.claimId}, {"result", cr.result}});
    };
    ContinuationExecution ex = executeContinuation(store, plan, claiming);
    if (planted("host_lock_after_claim")) lock.emplace(options.storeDir);
    EffectsLog effects(effectsPath);
    ToolPolicy policy = policyOf(scenario);
    policy.bashKillGrace = options.bashKillGrace;
    ToolRuntime toolRuntime(workspace, policy, effects);
    StopOptions stop;
    stop.cancellationGrace = options.cancellationGrace;
    stop.storeDir = options.storeDir;
    AgentRunner runner(store, scenario, toolRuntime, cancel, stop);
    runner.enableCheckpoints({scenario.workspacePolicy.checkpointRequirement, options.storeDir});
    report.continuation = runner.runContinuation(ex.targetHeader, ex.replayHistory);
  } catch (const Error& e) {
    Json f = ids;
    f["errorClass"] = e.code();
    lifecycle.write("execution_failed", plan, f);
    throw;
  }
  Json done = ids;
  done["status"] = report.continuation->status;
  if (report.continuation->status == code::completed) {
    lifecycle.write("execution_completed", plan, done);
  } else {
    done["errorClass"] = report.continuation->errorCode.value_or(report.continuation->status);
    lifecycle.write("execution_failed", plan, done);
  }
}

// e.5 step 6b / g: the confirmed session's plan, the rebaseline (g.1 refusals throw their code),
// the result in the report. The caller plans again.
void applyRebaseline(const HostStartupOptions& options, RuntimeStore& store,
                     const std::optional<WorkspaceIdentity>& workspace, HostStartupReport& report) {
  RebaselineConfirmation confirm = *options.rebaseline;
  if (confirm.sessionId.empty() && options.scenario)
    confirm.sessionId = scenarioSessionId(*options.scenario);
  if (confirm.sessionId.empty() && report.plans.size() == 1)
    confirm.sessionId = report.plans.front().sessionId;
  const ContinuationPlan* plan = nullptr;
  for (const ContinuationPlan& p : report.plans)
    if (p.sessionId == confirm.sessionId) plan = &p;
  if (!plan)
    throw Error(code::rebaseline_confirmation_required, "rebaseline refused: no plan of session " +
                                                            confirm.sessionId +
                                                            " to confirm; nothing was written");
  if (options.dryRun) {
    report.rebaseline = Json{{"wouldRebaseline", confirm.sessionId}};
    return;
  }
  if (!workspace)
    throw Error(code::rebaseline_confirmation_required,
                "rebaseline refused: no workspace was given to observe; nothing was written");
  RebaselineRequest req;
  req.storeDir = options.storeDir;
  req.instanceRoot = workspace->root;
  req.instanceIdentity = workspace->identity;
  req.canonicalRoot = workspace->root.string();
  req.confirmation = confirm;
  req.ts = RunClock().now();
  const RebaselineResult r = rebaselineWorkspace(store, resolveGitRuntime(), *plan, req);
  report.rebaseline = Json{{"sessionId", confirm.sessionId},
                           {"confirmationId", r.confirmationId},
                           {"epoch", r.epoch},
                           {"epochOpenedEventId", r.epochOpenedEventId},
                           {"checkpointId", r.checkpoint.checkpointId},
                           {"readSet", r.readSet},
                           {"created", r.created}};
}

}  // namespace

HostStartupReport hostStartup(const HostStartupOptions& options, CancellationToken& cancel) {
  HostStartupReport report;
  report.dryRun = options.dryRun;
  const fs::path& storeDir = options.storeDir;
  requireRuntimeStore(storeDir);
  std::optional<HostLock> lock;
  StartupStore opened;
  openForStartup(options, lock, opened);
  RuntimeStore& store = *opened.store;
  const std::optional<WorkspaceIdentity>& workspace = opened.workspace;
  // Workspace continuity e.5 step 2 (the store and the b.7 scan were checked by checkIntact):
  // under the host lock, the carrier's stale locks; step 2a the restore residue (f.3). Steps 6b
  // (rebaseline) and 8 (GC, when options.gcOrphanGrace is set) follow planning.
  if (!options.dryRun) removeStaleCarrierLocks(storeDir);
  if (!options.dryRun)
    report.restoreResidue = host_detail::quarantineResidueAtStartup(store, storeDir);
  repairBeforePlanning(store, workspace, options.dryRun, report);
  const Scenario* scenario = options.scenario;
  const fs::path effectsPath =
      options.effectsPath.empty() ? storeDir / "effects.jsonl" : options.effectsPath;
  if (scenario && workspace && !options.dryRun)
    plantedReruns(*scenario, storeDir, *workspace, effectsPath, cancel);
  LifecycleLog lifecycle(options.dryRun ? fs::path() : storeDir / "lifecycle.jsonl");
  auto toRun =
      planSessions(store, storeDir, scenario, workspace, options.dryRun, lifecycle, report);
  if (options.rebaseline) {  // e.5 step 6b: on the user's explicit confirmation only
    applyRebaseline(options, store, workspace, report);
    if (!options.dryRun) {
      report.plans.clear();
      toRun = planSessions(store, storeDir, scenario, workspace, false, lifecycle, report);
    }
  }
  if (toRun && options.dryRun) {
    report.continuationNotRun = std::string(code::continuation_dry_run);
  } else if (toRun && (!scenario || !workspace)) {
    // (an approved plan implies the workspace was observed)
    report.continuationNotRun = std::string(code::continuation_scenario_required);
  } else if (toRun) {
    runApprovedContinuation(options, store, toRun->instance ? *toRun->instance : *workspace,
                            report.plans[toRun->index], toRun->host, effectsPath, lock, lifecycle,
                            cancel, report);
  }
  // e.5 step 8 / h.5: the carrier GC at the end of start-up, still under the host lock.
  if (options.gcOrphanGrace && !options.dryRun)
    report.workspaceGc =
        collectWorkspaceGarbage(store, resolveGitRuntime(),
                                WorkspaceGcOptions{storeDir, *options.gcOrphanGrace, false})
            .toJson();
  withRuns(report, store);
  return report;
}

}  // namespace crashsim
