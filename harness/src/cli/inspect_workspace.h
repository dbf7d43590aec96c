// inspect_workspace.h — the workspace continuity lineage in `crashsim inspect` (contract b.6
// projections: epochs, checkpoints, transitions; issue #47 "CLI"), read-only.
#pragma once

#include <optional>

#include "crashsim/json.h"
#include "crashsim/store.h"

namespace crashsim::cli {

// {epochs:[{workspaceId, epoch, instanceIdentity, canonicalRoot, origin, openedReason,
// sealed}], checkpoints:[{checkpointId, epoch, kind, coveredRunId, coveredEventSeq, treeOid,
// refName, derivedFrom}], transitions:[{workspaceId, fromEpoch, toEpoch, reason, fromInstance,
// toInstance, sourceCheckpointId}], scan:"clean"|<first issue>}; nullopt when the store has no
// workspace fact (so a store without Phase 4 inspects as before).
std::optional<Json> workspaceLineageJson(const RuntimeStore& store);
// The text form: one line per epoch (its instance and how it opened), checkpoint and transition.
void printWorkspaceLineage(const Json& lineage);

}  // namespace crashsim::cli
