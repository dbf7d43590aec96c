// verdicts/v6_rebuild.h — V6: projections are rebuildable.
//
// Proves: dropping and rebuilding tool_operations and tool_journal_events from the ledger gives
// exactly the online projection (so no writer committed a fact without its projection, or the
// other way round — a T2 split over two transactions is caught at the barrier between them).
// Cannot see: a projection column both the writer and the rebuild compute the same wrong way.
#pragma once

#include <filesystem>

#include "verdicts/verdict.h"

namespace crashsim::harness {

// V6 on a copy of a crashed store directory (the rebuild writes).
void checkV6(const std::filesystem::path& copy, Checks& c);

}  // namespace crashsim::harness
