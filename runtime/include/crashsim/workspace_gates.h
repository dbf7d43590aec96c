// crashsim/workspace_gates.h — the host side of the planner's checkpoint gates
// (workspace-continuity-contract.md e.2, e.3, e.5): the host policy and the host inspector's
// observation of a workspace instance against the checkpoint the planner names.
//
// One authority per decision: the planner (continuation.h) scans the workspace facts
// (detail::scanWorkspaceFacts), names the covering checkpoint C (e.1) and applies the gate
// table (e.3); the inspector only observes — the carrier's availability, C's artifact (c.5
// light verification) and drift (e.2, in scratch) — and writes nothing: not the store, not the
// carrier's objects, not the instance's .git.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/workspace_facts.h"

namespace crashsim {

// e.3 host policy. `disabled` (the default) = no capture, no gate: RC e.6 unchanged.
struct WorkspaceHostPolicy {
  std::string checkpointRequirement = "disabled";  // disabled | optional_legacy | required
  std::string driftAction = "park";                // park | isolated_restore | offer_rebaseline
  SnapshotLimits snapshotLimits;
  bool enabled() const { return checkpointRequirement != "disabled"; }
  Json toJson() const;
};

// e.3 observation: workspace:{instanceIdentity, carrier:{status:'available', gitVersion,
// gitBinarySha256} | {status:'unavailable', code, detail}, checkpoint?:{checkpointId,
// artifact:'verified'|'ref_missing'|'corrupt', drift:'match'|'drifted', currentTreeOid?,
// detail?}}.
struct WorkspaceObservation {
  std::string instanceIdentity;
  bool carrierAvailable = false;
  std::string gitVersion, gitBinarySha256;  // available
  std::string carrierCode, carrierDetail;   // unavailable: a c.4 carrier or structural code
  struct Checkpoint {
    std::string checkpointId;
    std::string artifact;  // verified | ref_missing | corrupt
    std::string drift;     // match | drifted; empty when not computed (artifact not verified,
                           // or a policy version this runtime cannot read)
    std::optional<std::string> currentTreeOid;
    std::string detail;              // capture_ineligible:<code>, or the verification failure
    std::vector<std::string> paths;  // ≤ 20 `diff-tree --name-status` entries when drifted
  };
  std::optional<Checkpoint> checkpoint;
  Json toJson() const;
};

struct WorkspaceObserveRequest {
  std::filesystem::path storeDir;            // the real store (its workspace/ holds the carrier)
  std::filesystem::path instanceRoot;        // the observed instance's canonical root
  std::string instanceIdentity;              // its RC h marker identity
  const CheckpointFact* covering = nullptr;  // the C the planner names (e.1), or none
  // e.2 step 1: set when the observed instance is a restored one (its epoch's origin
  // `restored`): the b.3 lock reason its carrier registration must carry.
  std::optional<std::string> restoredLockReason;
};

// The local host inspector (e.2, e.3): resolves git (git_binary_unavailable,
// git_version_unsupported), opens the carrier read-only (workspace_carrier_damaged; none yet is
// available when no C is named), checks the structure (c.4 4–5, unsupported_workspace_carrier)
// when no C is named; with C: light verification (ref_missing | corrupt | verified), then, for
// a verified artifact of policy version 1, drift in scratch (checkWorkspaceDrift) — for a
// restored instance first its registration (e.2 step 1: drift `instance_missing` when the carrier
// does not register the path, `instance_unlocked` when it is not locked with the reason).
// Read-only.
WorkspaceObservation observeWorkspace(const WorkspaceObserveRequest& request);

}  // namespace crashsim
