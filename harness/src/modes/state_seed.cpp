// The seeded modes' state seeds (modes/state_seed.h).
#include "modes/state_seed.h"

#include <fmt/format.h>

namespace crashsim::harness {
namespace {

// The text a point is hashed as (state_seed.h): its name, the barriers their former numbers.
std::string_view seedText(CrashPoint p) {
  if (p == points::S) return "P12";
  if (p == points::F) return "P13";
  return p.name();
}

}  // namespace

uint64_t stateSeedHash(std::string_view prefix, const CaseId& primary, uint64_t sweepSeed) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : fmt::format("{}{}/{}#{}", prefix, primary.scenario, seedText(primary.failpoint),
                             primary.hit))
    h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h ^ (sweepSeed * 0x9E3779B97F4A7C15ull);
}

}  // namespace crashsim::harness
