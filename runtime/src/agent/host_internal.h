// host_internal.h — start-up steps kept in separate translation units (startup_repair.h and
// continuation.h are included by different files).
#pragma once

#include "crashsim/json.h"
#include "crashsim/store.h"

namespace crashsim::host_detail {

// startupRepair(store, strict) → its report JSON.
Json runStartupRepair(RuntimeStore& store);

}  // namespace crashsim::host_detail
