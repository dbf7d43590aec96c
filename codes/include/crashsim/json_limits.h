// crashsim/json_limits.h — the nesting limit every JSON reader and writer of crashsim enforces.
//
// Contract: no JSON text deeper than kMaxJsonDepth (the most arrays and objects open at once:
// a scalar is 0, [] is 1, [{}] is 2) is ever parsed, and no value deeper than it
// is ever encoded, hashed or normalised: each refuses with Error(code::json_too_deep). The
// recursive walkers (stable JSON, the args hash, the RuntimeEvent decoder, nlohmann's dump)
// therefore never recurse past it, whatever a damaged store, a ledger file or a scenario holds.
// The same number on both sides means a store never holds a row its own readers refuse. 256 is
// far beyond any RuntimeEvent the contract describes (a function call's args sit at depth 5)
// and far below the stack the walkers need (about 0.5 KiB a level).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {

inline constexpr size_t kMaxJsonDepth = 256;

// The deepest nesting of `text` read as JSON (brackets outside strings), or limit + 1 as soon
// as it passes `limit`. Malformed text gives some number; the parser then reports it.
inline size_t jsonTextDepth(std::string_view text, size_t limit = kMaxJsonDepth) {
  size_t depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The walkers' guard: throws Error(code::json_too_deep) when a value's depth passes the limit.
inline void requireJsonValueDepth(size_t depth) {
  if (depth > kMaxJsonDepth)
    throw Error(code::json_too_deep,
                "JSON value nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
}

}  // namespace crashsim
