// json.cpp — strict JSON parsing and the contract's stable JSON encoding (spec a.6).
//
// Stable JSON reproduces JavaScript's JSON.stringify byte for byte for strict JSON values:
// object keys sorted by UTF-16 code units, no whitespace, JSON.stringify string escaping and
// ECMAScript Number::toString numbers. All numbers are treated as IEEE doubles (an int64 held
// by nlohmann is first converted to the double JavaScript would see).
//
// Lone surrogates: JavaScript strings may contain them (and JSON.stringify escapes them as
// \udxxx). A UTF-8 std::string cannot carry one, and nlohmann rejects "\ud800" escapes that
// are not part of a pair, so such input is rejected at parse time (code::invalid_json) and
// invalid UTF-8 inside a programmatically built Json is rejected here (code::not_strict_json).
#include "crashsim/json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/json_limits.h"
#include "event/utf8.h"

namespace crashsim {

Json parseJson(std::string_view text, size_t maxDepth) {
  if (jsonTextDepth(text, maxDepth) > maxDepth)
    throw Error(code::json_too_deep,
                "JSON text nests deeper than " + std::to_string(maxDepth) + " levels");
  // nlohmann ends its input at a NUL byte, so "{}\0garbage" would parse as {}; a raw NUL is
  // never JSON (RFC 8259: control characters are escaped even inside strings).
  if (text.find('\0') != std::string_view::npos)
    throw Error(code::invalid_json, "invalid JSON: a NUL byte in the text");
  try {
    return Json::parse(text.data(), text.data() + text.size(), nullptr, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const Json::exception& e) {
    throw Error(code::invalid_json, std::string("invalid JSON: ") + e.what());
  }
}

namespace {

using detail::decodeUtf8;

// First UTF-16 code unit of a code point, widened so that a supplementary code point sorts
// by its high surrogate (0xD800–0xDBFF), i.e. before U+E000–U+FFFF.
inline uint32_t firstUnit(int32_t cp) {
  return cp >= 0x10000 ? 0xD800u + ((static_cast<uint32_t>(cp) - 0x10000u) >> 10)
                       : static_cast<uint32_t>(cp);
}

void appendEscapedString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t i = 0;
  size_t runStart = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (decodeUtf8(s, i) < 0) {
        throw Error(code::not_strict_json, "string is not valid UTF-8 (lone surrogate?)");
      }
      continue;  // raw UTF-8 is copied with the run
    }
    if (c >= 0x20 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    out.append(s.data() + runStart, i - runStart);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
    }
    ++i;
    runStart = i;
  }
  out.append(s.data() + runStart, s.size() - runStart);
  out.push_back('"');
}

constexpr int64_t kMaxSafe = 9007199254740992;  // 2^53: every |int| <= this is an exact double

void appendNumber(std::string& out, const Json& v) {
  char buf[32];
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const int64_t i = v.get<int64_t>();
    if (i >= -kMaxSafe && i <= kMaxSafe) {
      auto r = std::to_chars(buf, buf + sizeof buf, i);
      out.append(buf, r.ptr);
      return;
    }
    out += formatEcmaNumber(static_cast<double>(i));
    return;
  }
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(kMaxSafe)) {
      auto r = std::to_chars(buf, buf + sizeof buf, u);
      out.append(buf, r.ptr);
      return;
    }
    out += formatEcmaNumber(static_cast<double>(u));
    return;
  }
  const double d = v.get<double>();
  if (!std::isfinite(d)) {
    throw Error(code::not_strict_json, "NaN and Infinity are not strict JSON values");
  }
  out += formatEcmaNumber(d);
}

// JavaScript array index: canonical decimal string of an integer in [0, 2^32 - 2].
bool isArrayIndexKey(std::string_view key, uint32_t* value = nullptr) {
  if (key.empty() || key.size() > 10) return false;
  if (key.size() > 1 && key[0] == '0') return false;
  uint64_t v = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 4294967294ull) return false;
  if (value) *value = static_cast<uint32_t>(v);
  return true;
}

bool keyNeedsReorder(const std::string& key) {
  // UTF-8 byte order (std::map order) equals code point order; it differs from UTF-16 order
  // only between supplementary code points (lead byte F0–F4) and U+E000–U+FFFF (lead byte
  // EE/EF). Array-index keys are enumerated first by JavaScript.
  if (!key.empty() && key[0] >= '0' && key[0] <= '9' && isArrayIndexKey(key)) return true;
  for (unsigned char c : key) {
    if (c >= 0xEE) return true;
  }
  return false;
}

void appendStable(std::string& out, const Json& v, size_t depth) {
  switch (v.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::string:
      appendEscapedString(out, v.get_ref<const std::string&>());
      return;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      appendNumber(out, v);
      return;
    case Json::value_t::array: {
      requireJsonValueDepth(++depth);
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out.push_back(',');
        first = false;
        appendStable(out, e, depth);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::object: {
      requireJsonValueDepth(++depth);
      const auto& obj = v.get_ref<const Json::object_t&>();
      out.push_back('{');
      bool reorder = false;
      for (const auto& [k, _] : obj) {
        if (keyNeedsReorder(k)) {
          reorder = true;
          break;
        }
      }
      auto emit = [&](const std::string& k, const Json& val, bool first) {
        if (!first) out.push_back(',');
        appendEscapedString(out, k);
        out.push_back(':');
        appendStable(out, val, depth);
      };
      if (!reorder) {
        bool first = true;
        for (const auto& [k, val] : obj) {
          emit(k, val, first);
          first = false;
        }
      } else {
        std::vector<const Json::object_t::value_type*> items;
        items.reserve(obj.size());
        for (const auto& kv : obj) items.push_back(&kv);
        std::sort(items.begin(), items.end(),
                  [](auto* a, auto* b) { return jsPropertyOrderLess(a->first, b->first); });
        bool first = true;
        for (auto* kv : items) {
          emit(kv->first, kv->second, first);
          first = false;
        }
      }
      out.push_back('}');
      return;
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  throw Error(code::not_strict_json, "value is not a strict JSON value");
}

}  // namespace

std::string stableJson(const Json& value) {
  std::string out;
  appendStable(out, value, 0);
  return out;
}

std::string formatEcmaNumber(double value) {
  if (!std::isfinite(value)) {
    throw Error(code::not_strict_json, "NaN and Infinity are not strict JSON values");
  }
  if (value == 0) return "0";  // covers -0
  std::string out;
  if (value < 0) {
    out.push_back('-');
    value = -value;
  }
  // Shortest round-trip digits in scientific form: d[.ddd]e±XX.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  const size_t ePos = sci.find('e');
  std::string digits;
  digits.reserve(20);
  for (char c : sci.substr(0, ePos)) {
    if (c != '.') digits.push_back(c);
  }
  int exp10 = 0;
  std::from_chars(sci.data() + ePos + 1 + (sci[ePos + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exp10);
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // value = 0.digits × 10^n
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<size_t>(n));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(n), std::string::npos);
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    out.push_back('e');
    const int e = n - 1;
    out.push_back(e < 0 ? '-' : '+');
    out += std::to_string(e < 0 ? -e : e);
  }
  return out;
}

bool jsPropertyOrderLess(std::string_view a, std::string_view b) {
  uint32_t ia = 0, ib = 0;
  const bool aIndex = isArrayIndexKey(a, &ia);
  const bool bIndex = isArrayIndexKey(b, &ib);
  if (aIndex != bIndex) return aIndex;
  if (aIndex) return ia < ib;
  return utf16Less(a, b);
}

bool utf16Less(std::string_view a, std::string_view b) {
  const size_t common = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < common && a[i] == b[i]) ++i;
  if (i == common) return a.size() < b.size();
  // Back up to the start of the code point that contains the first difference.
  while (i > 0 && (static_cast<unsigned char>(a[i]) & 0xC0) == 0x80) --i;
  size_t ia = i, ib = i;
  const int32_t ca = decodeUtf8(a, ia);
  const int32_t cb = decodeUtf8(b, ib);
  if (ca < 0 || cb < 0) {  // invalid UTF-8: fall back to byte order
    return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  const uint32_t ua = firstUnit(ca), ub = firstUnit(cb);
  if (ua != ub) return ua < ub;
  return ca < cb;  // same high surrogate: low surrogate order == code point order
}

}  // namespace crashsim
