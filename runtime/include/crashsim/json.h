// crashsim/json.h — strict JSON values and the contract's stable JSON encoding (spec a.6).
//
// Json is nlohmann::json. Numbers are compared and encoded as IEEE doubles, the way the
// reference (JavaScript) encoder sees them.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "crashsim/json_limits.h"

namespace crashsim {

using Json = nlohmann::json;

// Parses exactly one strict JSON value (RFC 8259; no comments, no trailing data), as
// JSON.parse does. Strings are WTF-8: an escaped lone surrogate ("\ud800" not part of a pair)
// is legal JSON and decodes to its 3-byte form (spec a.6: JavaScript strings hold them); raw
// bytes in the text must still be valid UTF-8. "-0" keeps its sign (the double -0.0).
// Throws Error(code::invalid_json) on malformed text, invalid UTF-8 and numbers that overflow
// a double (1e400).
// Duplicate keys: the last one wins (as JSON.parse).
// Text nesting deeper than maxDepth (crashsim/json_limits.h) → Error(code::json_too_deep),
// before anything is parsed; a JSON array of stored values reads with kMaxJsonDepth + 1.
Json parseJson(std::string_view text, size_t maxDepth = kMaxJsonDepth);

// parseJson (one parse: the same rules, limits and errors) that also reports the first key given
// twice in one object, for hand-written files that refuse it (scenarios). `value` keeps the last
// one, as parseJson does.
struct ParsedJson {
  Json value;
  std::optional<std::string> duplicateKey;  // WTF-8, as the decoded key
};
ParsedJson parseJsonFindingDuplicateKeys(std::string_view text, size_t maxDepth = kMaxJsonDepth);

// Stable JSON (spec a.6): JSON.stringify of the value with every object's keys inserted in
// ascending UTF-16 code-unit order, exactly as the reference encoder does. Because JavaScript
// objects enumerate array-index keys ("0".."4294967294", canonical decimal) first in numeric
// order, such keys come first: {"10":1,"9":2,"a":3} encodes as {"9":2,"10":1,"a":3}; all
// other keys follow in UTF-16 order (jsPropertyOrderLess). No whitespace, JSON.stringify
// string escaping (raw UTF-8, \" \\ \b \f \n \r \t, lower-case \u00xx for other control
// characters; '/', DEL, U+2028/2029 unescaped) and ECMAScript Number::toString numbers (1,
// 1.5, 1e+21, -0 -> 0); int64/uint64 values are converted to double first. A key named
// "__proto__" is ordinary data.
// A lone surrogate in a string is written as a lower-case \udxxx escape.
// Throws Error(code::not_strict_json) for NaN / +-Infinity, invalid WTF-8, binary or a
// discarded value.
std::string stableJson(const Json& value);

// True when the value holds a -0 number anywhere. Stable JSON writes it as 0, so a value that
// holds one does not survive the lossless round trip of a.6 (JavaScript deep equality tells
// -0 from 0).
bool containsNegativeZero(const Json& value);

// The order stable JSON emits object keys in: array-index keys first (numeric ascending),
// then every other key by utf16Less.
bool jsPropertyOrderLess(std::string_view a, std::string_view b);

// ECMAScript Number::toString for a finite double (shortest round trip). Exposed for tests.
std::string formatEcmaNumber(double value);

// Compares two strings by UTF-16 code units (the order stable JSON sorts keys in).
bool utf16Less(std::string_view a, std::string_view b);

}  // namespace crashsim
