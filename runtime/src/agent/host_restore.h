// host_restore.h — host start-up's isolated-restore steps (workspace-continuity-contract.md e.5
// steps 2a, 6 and 6a; f), internal to the agent room: which instance a session is observed at,
// the residue quarantine, and the restore of a plan that parks exactly [workspace_drifted].
#pragma once

#include <filesystem>
#include <optional>

#include "crashsim/continuation.h"
#include "crashsim/json.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"

namespace crashsim::host_detail {

// e.5 step 6: a session with a workspace lineage whose current epoch's instance is `restored` is
// observed at that epoch's canonicalRoot (its marker's identity; when the marker is gone, the
// epoch's identity, so that the drift check — not the identity — decides); else at the host's
// workspace. `restoredLockReason` is the b.3 lock reason of a restored instance (e.2 step 1).
// Read-only.
struct ObservedInstance {
  std::optional<WorkspaceIdentity> workspace;
  std::optional<std::string> restoredLockReason;
};
ObservedInstance observedInstance(RuntimeStore& store, const std::string& sessionId,
                                  const std::optional<WorkspaceIdentity>& host);

// e.5 step 2a (f.3), not in a dry run: the restore residue quarantined. {quarantined:[names]}
// or nullopt when there was none.
std::optional<Json> quarantineResidueAtStartup(RuntimeStore& store,
                                               const std::filesystem::path& storeDir);

// f.1: true when `plan` parks with exactly [workspace_drifted] under driftAction
// isolated_restore.
bool restoreTriggered(const ContinuationPlan& plan, const Scenario* scenario);

// e.5 step 6a: f.1's remaining preconditions, then (not in a dry run) f.2 R0–R4 for the
// checkpoint the plan's workspace_drifted park names. {action:'restored', …RestoreResult} |
// {action:'would_restore', checkpointId} (dry run) | {action:'refused'|'failed', code, detail,
// message}; `restored` is set when the transition is committed (the caller re-plans).
Json runIsolatedRestore(RuntimeStore& store, const std::filesystem::path& storeDir,
                        const ContinuationPlan& plan, bool dryRun, bool& restored);

}  // namespace crashsim::host_detail
