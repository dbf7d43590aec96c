// file_reconcile.h — the start-up hook for operations the resolver leaves `indeterminate`.
//
// Place-holder hook for the file-recovery work (spec i): reconcilers for indeterminate
// operations that have a dedicated protocol (Write/Edit with durable file evidence) will
// commit one atomic recovery bundle (completed or parked) here. Until that lands this hook
// observes and reports the indeterminate operations and commits NOTHING (it parks nothing):
// the Phase 1 planner then refuses to continue past them (tool_recovery_unsettled).
#pragma once

#include <filesystem>

#include "crashsim/json.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"

namespace crashsim {

// Returns {"operations":[{"operationId","toolName","runId","recoveryMode","action":"none"}]}.
Json reconcileIndeterminateOperations(RuntimeStore& store, const WorkspaceIdentity& workspace);

}  // namespace crashsim
