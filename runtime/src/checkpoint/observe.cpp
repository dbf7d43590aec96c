// observe.cpp — the host inspector's observation of a workspace instance (contract e.2, e.3).
// Read-only: the carrier is opened without being created, drift is computed in scratch.
#include "crashsim/codes.h"
#include "crashsim/workspace_carrier.h"
#include "crashsim/workspace_gates.h"
#include "crashsim/workspace_restore.h"

namespace crashsim {

Json WorkspaceHostPolicy::toJson() const {
  return Json{{"checkpointRequirement", checkpointRequirement},
              {"driftAction", driftAction},
              {"snapshotLimits",
               {{"maxFiles", snapshotLimits.maxFiles},
                {"maxFileBytes", snapshotLimits.maxFileBytes},
                {"maxTotalBytes", snapshotLimits.maxTotalBytes},
                {"captureTimeoutMs", snapshotLimits.captureTimeoutMs}}}};
}

Json WorkspaceObservation::toJson() const {
  Json carrier =
      carrierAvailable
          ? Json{{"status", "available"},
                 {"gitVersion", gitVersion},
                 {"gitBinarySha256", gitBinarySha256}}
          : Json{{"status", "unavailable"}, {"code", carrierCode}, {"detail", carrierDetail}};
  Json j{{"instanceIdentity", instanceIdentity}, {"carrier", carrier}};
  if (checkpoint) {
    Json c{{"checkpointId", checkpoint->checkpointId}, {"artifact", checkpoint->artifact}};
    if (!checkpoint->drift.empty()) c["drift"] = checkpoint->drift;
    if (checkpoint->currentTreeOid) c["currentTreeOid"] = *checkpoint->currentTreeOid;
    if (!checkpoint->detail.empty()) c["detail"] = checkpoint->detail;
    if (!checkpoint->paths.empty()) c["paths"] = checkpoint->paths;
    j["checkpoint"] = c;
  }
  return j;
}

namespace {

// c.2: the binary is resolved once per host process.
const GitRuntime& hostGit() {
  static const GitRuntime git = resolveGitRuntime();
  return git;
}

}  // namespace

WorkspaceObservation observeWorkspace(const WorkspaceObserveRequest& req) {
  WorkspaceObservation obs;
  obs.instanceIdentity = req.instanceIdentity;
  const auto unavailable = [&](const CarrierError& e) {
    obs.carrierAvailable = false;
    obs.carrierCode = std::string(e.code());
    obs.carrierDetail = e.detail();
    return obs;
  };
  std::optional<WorkspaceCarrier> carrier;
  try {
    const GitRuntime& git = hostGit();
    carrier = WorkspaceCarrier::openExisting(req.storeDir, git);
    if (!carrier && req.covering)
      throw CarrierError(code::workspace_carrier_damaged, "",
                         "checkpoint " + req.covering->checkpointId + " names a carrier, but " +
                             (req.storeDir / "workspace").string() + " holds none");
    if (!req.covering)
      checkWorkspaceStructure(git, carrier ? carrier->gitHome() : std::filesystem::path(),
                              req.instanceRoot);
    obs.carrierAvailable = true;
    obs.gitVersion = git.version;
    obs.gitBinarySha256 = git.binarySha256;
  } catch (const CarrierError& e) {
    return unavailable(e);
  }
  if (!req.covering) return obs;
  const CheckpointFact& c = *req.covering;
  WorkspaceObservation::Checkpoint cp;
  cp.checkpointId = c.checkpointId;
  try {
    lightVerifyCheckpoint(*carrier, c);
    cp.artifact = "verified";
  } catch (const CarrierError& e) {
    cp.artifact = e.code() == code::workspace_ref_missing ? "ref_missing" : "corrupt";
    cp.detail = e.what();
  }
  std::string registration;
  if (cp.artifact == "verified" && req.restoredLockReason)
    registration = checkRestoredRegistration(*carrier, req.instanceRoot, *req.restoredLockReason);
  if (!registration.empty()) {
    cp.drift = "drifted";
    cp.detail = registration;
  } else if (cp.artifact == "verified" && c.policyVersion == 1) {
    const DriftCheck d = checkWorkspaceDrift(*carrier, req.instanceRoot, req.instanceIdentity, c);
    cp.drift = d.match ? "match" : "drifted";
    if (!d.currentTreeOid.empty()) cp.currentTreeOid = d.currentTreeOid;
    cp.detail = d.detail;
    cp.paths = d.paths;
  }
  obs.checkpoint = std::move(cp);
  return obs;
}

}  // namespace crashsim
