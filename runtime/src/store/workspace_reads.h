// workspace_reads.h — the workspace authority stream as the planner reads it (src/ only): the
// stored facts of one workspace through THE scanner (ledger/workspace_scanner.h), each covered
// boundary checked against runtime_events (b.7).
#pragma once

#include <string_view>

#include "ledger/workspace_scanner.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

detail::WorkspaceScan scanWorkspaceAuthority(Connection& c, std::string_view workspaceId);

}  // namespace crashsim::store_detail
