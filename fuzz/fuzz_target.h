// fuzz/fuzz_target.h — what every fuzz target in this folder shares.
//
// A target is one LLVMFuzzerTestOneInput over one of crashsim's readers of untrusted bytes. The
// contract it checks: the reader either accepts the input or refuses it with crashsim::Error
// (or reports::ReportError) — a stable code, never a crash, a hang, another exception type, or
// an accepted value that breaks the reader's own invariant (a round trip, a schema). Anything
// else escapes the target and libFuzzer (or the replay driver) reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace crashsim::fuzz {

inline std::string_view bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// An invariant of an accepted input broke: abort, so the input is kept as a crasher.
[[noreturn]] inline void violated(const std::string& what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what.c_str());
  std::abort();
}

}  // namespace crashsim::fuzz
