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

namespace crashsim::store_detail {

// b.5 step 7 (the writer's own check, also g.1 item 2's read before a rebaseline writes
// anything): no non-terminal run header of the session, no claim whose target lacks a terminal
// fact; else Error(workspace_transition_busy).
void requireQuiescent(Connection& c, const std::string& sessionId);

}  // namespace crashsim::store_detail
