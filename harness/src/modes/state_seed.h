// modes/state_seed.h — where the seeded modes' crash states start (powerloss, corrupt).
#pragma once

#include <cstdint>
#include <string_view>

#include "crashsim/harness/case_id.h"

namespace crashsim::harness {

// The FNV-1a hash of "<prefix><scenario>/<point>#<hit>" of the primary, mixed with the sweep seed:
// deterministic in the triple and the sweep seed. <point> is the point's name, except that the
// barriers keep the text their seeds were first derived from — "P12" for S and "P13" for F, the
// numbers they had before issue #46 — so that a published "…/S#3/powerloss@N" names the same
// crash state.
uint64_t stateSeedHash(std::string_view prefix, const CaseId& primary, uint64_t sweepSeed);

}  // namespace crashsim::harness
