// crashsim/json.h — strict JSON values and the contract's stable JSON encoding (spec a.6).
//
// Json is nlohmann::json. Numbers are compared and encoded as IEEE doubles, the way the
// reference (JavaScript) encoder sees them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace crashsim {

using Json = nlohmann::json;

// Parses exactly one strict JSON value (RFC 8259; no comments, no trailing data).
// Throws Error(code::invalid_json) on malformed text, invalid UTF-8, lone surrogate escapes
// ("\ud800" not followed by a low surrogate: a UTF-8 string cannot carry one, so such input is
// rejected rather than altered) and numbers that overflow a double (1e400).
// Duplicate keys: the last one wins (as JSON.parse).
Json parseJson(std::string_view text);

// Stable JSON (spec a.6): JSON.stringify with every object's keys sorted by UTF-16 code
// units, no whitespace, JSON.stringify string escaping (raw UTF-8, \b \f \n \r \t,
// lower-case \u00xx for other control characters) and ECMAScript shortest round-trip
// numbers (1, 1.5, 1e+21, -0 -> 0). A key named "__proto__" is ordinary data.
// Throws Error(code::not_strict_json) for NaN / +-Infinity or a discarded value.
std::string stableJson(const Json& value);

// ECMAScript Number::toString for a finite double (shortest round trip). Exposed for tests.
std::string formatEcmaNumber(double value);

// Compares two strings by UTF-16 code units (the order stable JSON sorts keys in).
bool utf16Less(std::string_view a, std::string_view b);

}  // namespace crashsim
