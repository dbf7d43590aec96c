// decode_primitives.h — the strict RuntimeEvent decoder's primitives (runtime_event.cpp and
// the per-section decoders decode_content.cpp, decode_actions.cpp): the JSON path an error
// names, pass 1's number and UTF-8 normalisation, closed key sets, typed field readers and the
// contract's enumerations. Internal to src/event; every failure throws Error with a stable code
// and the offending value's path.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/json.h"
#include "crashsim/json_limits.h"
#include "crashsim/runtime_event.h"
#include "event/utf8.h"

namespace crashsim::decode {

using Obj = Json::object_t;

// A JSON path as a linked list on the stack; rendered only when an error is thrown.
struct Path {
  const Path* parent = nullptr;
  std::string_view key;
  size_t index = 0;
  bool isIndex = false;

  Path operator/(std::string_view k) const { return Path{this, k, 0, false}; }
  Path operator[](size_t i) const { return Path{this, {}, i, true}; }

  std::string str() const {
    std::string out = parent ? parent->str() : std::string("$");
    if (!parent) return out;
    if (isIndex) {
      out += "[" + std::to_string(index) + "]";
    } else {
      out += ".";
      out += key;
    }
    return out;
  }
};

[[noreturn]] inline void fail(std::string_view code, const Path& path, const std::string& message) {
  const std::string p = path.str();
  throw Error(code, "Invalid RuntimeEvent at " + p + ": " + message, p);
}

inline constexpr double kTwo53 = 9007199254740992.0;
inline constexpr int64_t kMaxSafeInteger = 9007199254740991;  // Number.MAX_SAFE_INTEGER

// Pass 1: numbers become the IEEE double JavaScript sees; integral values within ±2^53 are
// stored as integers, all others as doubles (1.0 → 1, 2^63 → 9.223372036854776e18). -0 stays
// the double -0.0: it is legal content, but stable JSON writes it as 0, so canonicalising an
// event that holds one is refused (not lossless, a.6); only attachment bytes normalise it.
inline void normalizeValue(Json& v, const Path& path, size_t depth = 0) {
  switch (v.type()) {
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) fail(code::non_finite_number, path, "number must be finite");
      if (d == 0 && std::signbit(d)) return;
      if (std::trunc(d) == d && std::fabs(d) <= kTwo53) v = static_cast<int64_t>(d);
      return;
    }
    case Json::value_t::number_integer: {
      const int64_t i = v.get<int64_t>();
      if (i > static_cast<int64_t>(kTwo53) || i < -static_cast<int64_t>(kTwo53)) {
        v = static_cast<double>(i);
      }
      return;
    }
    case Json::value_t::number_unsigned: {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(kTwo53)) v = static_cast<double>(u);
      return;
    }
    case Json::value_t::string:
      if (!detail::isWellFormedWtf8(v.get_ref<const std::string&>())) {
        fail(code::not_strict_json, path, "string is not valid UTF-8");
      }
      return;
    case Json::value_t::array: {
      if (++depth > kMaxJsonDepth) fail(code::json_too_deep, path, "nests too deep");
      size_t i = 0;
      for (auto& e : v) normalizeValue(e, path[i++], depth);
      return;
    }
    case Json::value_t::object:
      if (++depth > kMaxJsonDepth) fail(code::json_too_deep, path, "nests too deep");
      for (auto& [k, e] : v.get_ref<Obj&>()) {
        if (!detail::isWellFormedWtf8(k)) {
          fail(code::not_strict_json, path, "key is not valid UTF-8");
        }
        normalizeValue(e, path / k, depth);
      }
      return;
    case Json::value_t::null:
    case Json::value_t::boolean:
      return;
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  fail(code::not_strict_json, path, "value is not strict JSON");
}

using Keys = std::initializer_list<std::string_view>;

inline bool contains(Keys keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

inline const Obj& asObject(const Json& v, const Path& path) {
  if (!v.is_object()) fail(code::wrong_type, path, "must be an object");
  return v.get_ref<const Obj&>();
}

// Closed key set: every key must be required or optional; every required key present.
inline void checkKeys(const Obj& o, const Path& path, Keys required, Keys optional) {
  for (const auto& [k, _] : o) {
    if (!contains(required, k) && !contains(optional, k)) {
      fail(code::unknown_key, path / k, "unknown key \"" + k + "\"");
    }
  }
  for (std::string_view k : required) {
    if (o.find(k) == o.end()) fail(code::missing_field, path / k, "missing required field");
  }
}

inline const Json* field(const Obj& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->second;
}

inline const std::string& asString(const Json& v, const Path& path, bool nonEmpty) {
  if (!v.is_string()) fail(code::wrong_type, path, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  if (nonEmpty && s.empty()) fail(code::empty_id, path, "must be a non-empty string");
  return s;
}

inline const std::string& reqString(const Obj& o, std::string_view key, const Path& path,
                                    bool nonEmpty = false) {
  const Json* v = field(o, key);
  if (!v) fail(code::missing_field, path / key, "missing required field");
  return asString(*v, path / key, nonEmpty);
}

inline const std::string* optString(const Obj& o, std::string_view key, const Path& path,
                                    bool nonEmpty = false) {
  const Json* v = field(o, key);
  if (!v) return nullptr;
  return &asString(*v, path / key, nonEmpty);
}

inline std::optional<bool> optBool(const Obj& o, std::string_view key, const Path& path) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(code::wrong_type, path / key, "must be a boolean");
  return v->get<bool>();
}

inline void optObject(const Obj& o, std::string_view key, const Path& path) {
  const Json* v = field(o, key);
  if (v && !v->is_object()) fail(code::wrong_type, path / key, "must be an object");
}

template <size_t N>
inline size_t enumIndex(const Json& v, const Path& path,
                        const std::array<std::string_view, N>& values) {
  if (!v.is_string()) fail(code::wrong_type, path, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  for (size_t i = 0; i < N; ++i) {
    if (s == values[i]) return i;
  }
  fail(code::invalid_enum, path, "invalid value \"" + s + "\"");
}

inline void expectLiteral(const Obj& o, std::string_view key, const Path& path,
                          std::string_view lit) {
  const std::string& s = reqString(o, key, path);
  if (s != lit) {
    fail(code::invalid_enum, path / key, "must be \"" + std::string(lit) + "\", got \"" + s + "\"");
  }
}

inline bool isSha256Digest(std::string_view s) {
  if (s.size() != 71 || s.substr(0, 7) != "sha256:") return false;
  for (char c : s.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

inline const std::string& reqDigest(const Obj& o, std::string_view key, const Path& path) {
  const std::string& s = reqString(o, key, path);
  if (!isSha256Digest(s)) {
    fail(code::invalid_digest, path / key, "must be sha256: followed by 64 lower-case hex digits");
  }
  return s;
}

// Safe integer (Number.isSafeInteger) after normalisation, or nullopt.
inline std::optional<int64_t> safeInteger(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(kMaxSafeInteger)) return static_cast<int64_t>(u);
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i <= kMaxSafeInteger && i >= -kMaxSafeInteger) return i;
  }
  if (v.is_number_float() && v.get<double>() == 0) return 0;  // -0 (Number.isSafeInteger(-0))
  return std::nullopt;
}

inline int64_t reqSafeInteger(const Json& v, const Path& path, int64_t min) {
  if (!v.is_number()) fail(code::wrong_type, path, "must be a number");
  auto i = safeInteger(v);
  if (!i || *i < min) {
    fail(code::invalid_integer, path, "must be a safe integer >= " + std::to_string(min));
  }
  return *i;
}

inline double reqFiniteNumber(const Json& v, const Path& path) {
  if (!v.is_number()) fail(code::wrong_type, path, "must be a number");
  return v.get<double>();  // finiteness already enforced by normalizeValue
}

inline constexpr std::array<std::string_view, 4> kRoles{"user", "model", "tool", "system"};
inline constexpr std::array<std::string_view, 5> kAuthors{"user", "host", "agent", "tool",
                                                          "system"};
inline constexpr std::array<std::string_view, 5> kStatuses{"streaming", "completed", "failed",
                                                           "aborted", "cancelled"};
inline constexpr std::array<std::string_view, 2> kOrigins{"provider", "code_mode"};
inline constexpr std::array<std::string_view, 2> kVisibilities{"visible", "hidden"};
inline constexpr std::array<std::string_view, 5> kContentKinds{"text", "thinking", "function_call",
                                                               "function_response", "error"};
inline constexpr std::array<std::string_view, 6> kRecoveryModes{
    code::replay_safe, code::idempotent,      code::reconcile,
    code::reattach,    code::outcome_unknown, code::never_auto_retry};
inline constexpr std::array<std::string_view, 2> kRecoveryKinds{"maka.tool.reconcile_result",
                                                                "maka.tool.recovery_decision"};
inline constexpr std::array<std::string_view, 4> kObservations{
    code::matches_expected_state, code::matches_prior_state, code::diverged, code::unreadable};
inline constexpr std::array<std::string_view, 2> kDispositions{code::completed, code::parked};
inline constexpr std::array<std::string_view, 3> kParkedReasons{
    code::reconcile_matches_prior_state, code::reconcile_diverged, code::reconcile_unreadable};
inline constexpr std::array<std::string_view, 2> kProvenances{code::runtime_admission,
                                                              code::claim_repair};

// A canonical workspace-relative path: non-empty, '/'-separated, no drive, no '.', '..' or empty
// segment, no NUL or backslash (used by inlineReferences and file evidence).
inline bool isCanonicalRelativePath(std::string_view p) {
  if (p.empty() || p.find('\0') != std::string_view::npos ||
      p.find('\\') != std::string_view::npos || p.front() == '/') {
    return false;
  }
  if (p.size() >= 2 && std::isalpha(static_cast<unsigned char>(p[0])) && p[1] == ':') return false;
  size_t start = 0;
  while (true) {
    const size_t slash = p.find('/', start);
    const std::string_view seg =
        p.substr(start, slash == std::string_view::npos ? p.npos : slash - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

// The decoder's sections, one file each: content (a.2, decode_content.cpp), actions (a.3,
// decode_actions.cpp); refs (a.4) and the lane (a.5) are runtime_event.cpp's.
void decodeContent(Json& content, const Path& path, RuntimeEvent& ev);
void decodeActions(const Json& actions, const Path& path, RuntimeEvent& ev);

}  // namespace crashsim::decode
