// crashsim/failpoints.h — the failpoint catalogue P0–P11 and the compile-time marker.
//
// CRASHSIM_FAILPOINT(P4) marks a boundary in the runtime. Without the build option
// CRASHSIM_ENABLE_FAILPOINTS it expands to nothing: the production library contains no
// failpoint code or symbols. With it (the instrumented library crashsim_runtime_fp), each
// hit is counted per id; when the armed (id, hit) is reached the child writes one JSON line
// {"failpoint":"P4","hit":1,"pid":N} to the control fd and blocks until it is SIGKILLed.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace crashsim::failpoints {

enum class Id : uint8_t { P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11 };
inline constexpr size_t kCount = 12;

// One row of the stable, machine-readable catalogue (DESIGN.md "Failpoints", spec b).
struct CatalogueEntry {
  Id id;
  std::string_view name;            // "P4"
  std::string_view boundary;        // where in this runtime the marker sits
  std::string_view prefixClass;     // spec b: before_function_call | after_function_call | ...
  std::string_view durableState;    // expected durable state after a kill there
  std::string_view resolverDecision;  // expected resolver decision for that operation
  bool recoveryProcess;             // true for P10, P11 (and repair-time hits of P8/P9)
};

const std::array<CatalogueEntry, kCount>& catalogue();
std::optional<Id> parseId(std::string_view name);
std::string_view name(Id id);

#if defined(CRASHSIM_ENABLE_FAILPOINTS)
// Child-side trigger (instrumented build only). Counts the hit; if armed for this hit,
// reports on the control fd and blocks until killed (or raises SIGKILL itself when
// CRASHSIM_FAILPOINT_MODE=self).
void hit(Id id);
#define CRASHSIM_FAILPOINT(ID) ::crashsim::failpoints::hit(::crashsim::failpoints::Id::ID)
#else
#define CRASHSIM_FAILPOINT(ID) ((void)0)
#endif

}  // namespace crashsim::failpoints
