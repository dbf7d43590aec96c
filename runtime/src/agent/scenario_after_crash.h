// scenario_after_crash.h — parser of the optional scenario key "afterCrash" (internal).
#pragma once

#include <string>

#include "crashsim/json.h"
#include "crashsim/scenario.h"

namespace crashsim::detail {

// Strict: closed key sets, failpoints P0..P11 (non-empty, distinct), at least one mutation,
// op-specific keys (write: content; symlink: target; delete: neither), relative paths without
// "..", never the workspace marker; expect.parkedReason one of the three reconcile_* park
// reasons. Failure → Error(code::scenario_invalid, "<source>: <path>: <why>", path).
AfterCrash parseAfterCrash(const Json& value, const std::string& source);

}  // namespace crashsim::detail
