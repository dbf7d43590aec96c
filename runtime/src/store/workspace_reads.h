// workspace_reads.h — the workspace authority stream as the planner reads it (src/ only): the
// stored facts of one workspace through THE scanner (ledger/workspace_scanner.h), each covered
// boundary checked against runtime_events (b.7).
#pragma once

#include <string_view>

#include "ledger/workspace_scanner.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

detail::WorkspaceScan scanWorkspaceAuthority(Connection& c, std::string_view workspaceId);

// b.5 check 7 read-only (the writer's own rule, f.1's quiescence precondition): empty when the
// session is quiescent, else why not (a non-terminal run header, or a claim whose target has no
// terminal fact).
std::string workspaceTransitionBusy(Connection& c, const std::string& sessionId);

}  // namespace crashsim::store_detail
