// host_restore.cpp — host start-up's isolated-restore steps (contract e.5 2a, 6, 6a; f).
#include "agent/host_restore.h"

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/workspace_restore.h"
#include "store/store_internal.h"

namespace crashsim::host_detail {

namespace fs = std::filesystem;

namespace {

// c.2: the binary is resolved once per host process.
const GitRuntime& startupGit() {
  static const GitRuntime git = resolveGitRuntime();
  return git;
}

Json refusal(std::string_view action, const Error& e) {
  Json j{{"action", std::string(action)},
         {"code", std::string(e.code())},
         {"message", std::string(e.what())}};
  if (const auto* ce = dynamic_cast<const CarrierError*>(&e)) j["detail"] = ce->detail();
  return j;
}

}  // namespace

ObservedInstance observedInstance(RuntimeStore& store, const std::string& sessionId,
                                  const std::optional<WorkspaceIdentity>& host) {
  ObservedInstance out{host, std::nullopt};
  if (!host) return out;
  const std::string ws = workspaceIdForSession(sessionId);
  std::optional<WorkspaceEpochRow> current;
  for (auto& e : listWorkspaceEpochs(store))
    if (e.workspaceId == ws) current = std::move(e);
  if (!current || current->instanceOrigin != "restored") return out;
  for (const WorkspaceTransitionRow& t : listWorkspaceTransitions(store))
    if (t.workspaceId == ws && t.toEpoch == current->epoch)
      out.restoredLockReason =
          restoredInstanceName(fs::path(), ws, t.toEpoch, t.sourceCheckpointId.value_or(""))
              .lockReason;
  const fs::path root(current->canonicalRoot);
  try {
    if (auto marked = readWorkspaceIdentity(root)) {
      out.workspace = std::move(marked);
      return out;
    }
  } catch (const Error&) {
    // an unreadable marker: the epoch's identity, the drift check decides
  }
  WorkspaceIdentity gone;
  gone.root = root;
  gone.identity = current->instanceIdentity;
  gone.workspaceId = current->instanceIdentity.substr(current->instanceIdentity.rfind(':') + 1);
  out.workspace = std::move(gone);
  return out;
}

std::optional<Json> quarantineResidueAtStartup(RuntimeStore& store, const fs::path& storeDir) {
  std::error_code ec;
  if (!fs::exists(storeDir / "workspace" / "carrier.json", ec)) return std::nullopt;
  const std::vector<std::string> names = quarantineRestoreResidue(store, storeDir, startupGit());
  if (names.empty()) return std::nullopt;
  return Json{{"quarantined", names}};
}

bool restoreTriggered(const ContinuationPlan& plan, const Scenario* scenario) {
  return scenario && scenario->workspacePolicy.checkpointRequirement != "disabled" &&
         scenario->workspacePolicy.driftAction == "isolated_restore" && !plan.isContinue() &&
         plan.rejectionReasons == std::vector<std::string>{std::string(code::workspace_drifted)};
}

Json runIsolatedRestore(RuntimeStore& store, const fs::path& storeDir, const ContinuationPlan& plan,
                        bool dryRun, bool& restored) {
  restored = false;
  std::string checkpointId;
  for (const PlanDiagnostic& d : plan.diagnostics)
    if (d.code == code::workspace_drifted && d.detail && d.detail->contains("checkpointId"))
      checkpointId = (*d.detail)["checkpointId"].get<std::string>();
  RestoreRequest req{storeDir, plan.sessionId, plan.sourceRunId, checkpointId,
                     store_detail::nowMs()};
  try {
    const GitRuntime& git = startupGit();
    checkRestorePreconditions(store, storeDir, git, req);
    if (dryRun) return Json{{"action", "would_restore"}, {"checkpointId", checkpointId}};
  } catch (const Error& e) {
    return refusal("refused", e);
  }
  try {
    const RestoreResult r = isolatedRestore(store, startupGit(), req);
    restored = true;
    Json j = r.toJson();
    j["action"] = "restored";
    return j;
  } catch (const Error& e) {
    return refusal("failed", e);
  }
}

}  // namespace crashsim::host_detail
