// json.cpp — strict JSON parsing and the contract's stable JSON encoding (spec a.6).
//
// Stable JSON reproduces JavaScript's JSON.stringify byte for byte for strict JSON values:
// object keys sorted by UTF-16 code units, no whitespace, JSON.stringify string escaping and
// ECMAScript Number::toString numbers. All numbers are treated as IEEE doubles (an int64 held
// by nlohmann is first converted to the double JavaScript would see).
//
// Lone surrogates: JavaScript strings may contain them, and JSON.stringify escapes them as
// \udxxx. Strings here are WTF-8 (event/utf8.h): parseJson decodes an escaped lone surrogate
// to its 3-byte form and stable JSON writes it back as the escape. nlohmann itself rejects
// such escapes, so parseJson hands it a rewritten text when one occurs (see below); invalid
// UTF-8 inside a programmatically built Json is rejected here (code::not_strict_json).
//
// -0: JSON.parse("-0") is the number -0, nlohmann parses it as the integer 0. parseJson keeps
// the sign (the double -0.0) so the lossless check (a.6) can see it.
#include "crashsim/json.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/json_limits.h"
#include "event/utf8.h"

namespace crashsim {

namespace {

// The rewrite parseJson applies before nlohmann sees a text that holds an escaped lone
// surrogate or a "-0" number. A lone surrogate \uDxxx becomes the noncharacter U+FDD0
// followed by the four lower-case hex digits, and a U+FDD0 already in a string is doubled, so
// restoreMarked() maps every marked string back without ambiguity. "-0" (an integer token)
// becomes "-0.0". Returns whether any string was marked.
constexpr std::string_view kMark = "\xEF\xB7\x90";  // U+FDD0 in UTF-8

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of the \uXXXX escape at text[i] (text[i] == '\\'), or -1.
int32_t escapeUnit(std::string_view text, size_t i) {
  if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u') return -1;
  int32_t unit = 0;
  for (size_t k = 2; k < 6; ++k) {
    const int h = hexValue(text[i + k]);
    if (h < 0) return -1;
    unit = unit * 16 + h;
  }
  return unit;
}

bool needsRewrite(std::string_view text) {
  // A "-0" number follows a structural character or white space; "run-0" inside a string does
  // not send the text down the slow path (a false positive would only cost time).
  for (size_t i = text.find("-0"); i != std::string_view::npos; i = text.find("-0", i + 2)) {
    if (i == 0 || std::strchr(":[, \t\n\r", text[i - 1]) != nullptr) return true;
  }
  for (size_t i = text.find("\\u"); i != std::string_view::npos; i = text.find("\\u", i + 2)) {
    const int32_t unit = escapeUnit(text, i);
    if (detail::isSurrogate(unit) || unit == 0xFDD0) return true;
  }
  return text.find(kMark) != std::string_view::npos;
}

bool rewriteForNlohmann(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  bool marked = false;
  bool inString = false;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (!inString) {
      if (c == '"') inString = true;
      const bool negZero =
          c == '-' && i + 1 < text.size() && text[i + 1] == '0' &&
          (i + 2 == text.size() || std::strchr("0123456789.eE", text[i + 2]) == nullptr);
      out += negZero ? std::string_view("-0.0") : text.substr(i, 1);
      i += negZero ? 2 : 1;
      continue;
    }
    if (c == '"') {
      inString = false;
    } else if (text.compare(i, kMark.size(), kMark) == 0) {
      out += kMark;
      out += kMark;
      marked = true;
      i += kMark.size();
      continue;
    } else if (c == '\\') {
      const int32_t unit = escapeUnit(text, i);
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        const int32_t low = escapeUnit(text, i + 6);
        if (low >= 0xDC00 && low <= 0xDFFF) {  // a pair: nlohmann decodes it
          out += text.substr(i, 12);
          i += 12;
          continue;
        }
      }
      if (detail::isSurrogate(unit) || unit == 0xFDD0) {
        out += kMark;
        if (unit == 0xFDD0) {
          out += kMark;
        } else {
          for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(unit >> shift) & 0xF]);
        }
        marked = true;
        i += 6;
        continue;
      }
      out += text.substr(i, 2);  // any other escape, including \\ and \"
      i += 2;
      continue;
    }
    out.push_back(c);
    ++i;
  }
  return marked;
}

// Undoes the marking of rewriteForNlohmann in one string: U+FDD0 U+FDD0 -> U+FDD0, U+FDD0
// + four hex digits -> the WTF-8 bytes of that lone surrogate.
std::string restoreMarked(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, kMark.size(), kMark) != 0) {
      out.push_back(s[i++]);
      continue;
    }
    i += kMark.size();
    if (s.compare(i, kMark.size(), kMark) == 0) {
      out += kMark;
      i += kMark.size();
      continue;
    }
    int32_t unit = 0;
    for (size_t k = 0; k < 4 && i + k < s.size(); ++k) unit = unit * 16 + hexValue(s[i + k]);
    i += 4;  // every mark rewriteForNlohmann writes is followed by a mark or four hex digits
    out.push_back(static_cast<char>(0xE0 | (unit >> 12)));
    out.push_back(static_cast<char>(0x80 | ((unit >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (unit & 0x3F)));
  }
  return out;
}

void restoreMarkedStrings(Json& v) {
  if (v.is_string()) {
    std::string& s = v.get_ref<std::string&>();
    if (s.find(kMark) != std::string::npos) s = restoreMarked(s);
  } else if (v.is_array()) {
    for (Json& e : v) restoreMarkedStrings(e);
  } else if (v.is_object()) {
    Json::object_t& o = v.get_ref<Json::object_t&>();
    Json::object_t restored;
    bool keyChanged = false;
    for (auto& [k, e] : o) {
      restoreMarkedStrings(e);
      keyChanged = keyChanged || k.find(kMark) != std::string::npos;
    }
    if (!keyChanged) return;
    for (auto& [k, e] : o) restored.emplace(restoreMarked(k), std::move(e));
    o = std::move(restored);
  }
}

}  // namespace

namespace {

// parseJson, with an optional nlohmann parser callback that sees the text as nlohmann parses it
// (escaped lone surrogates marked, see rewriteForNlohmann); sets *marked when it was.
Json parseJsonText(std::string_view text, size_t maxDepth, const Json::parser_callback_t& callback,
                   bool* marked) {
  if (jsonTextDepth(text, maxDepth) > maxDepth)
    throw Error(code::json_too_deep,
                "JSON text nests deeper than " + std::to_string(maxDepth) + " levels");
  // nlohmann ends its input at a NUL byte, so "{}\0garbage" would parse as {}; a raw NUL is
  // never JSON (RFC 8259: control characters are escaped even inside strings).
  if (text.find('\0') != std::string_view::npos)
    throw Error(code::invalid_json, "invalid JSON: a NUL byte in the text");
  std::string rewritten;
  *marked = false;
  if (needsRewrite(text)) {
    *marked = rewriteForNlohmann(text, rewritten);
    text = rewritten;
  }
  try {
    Json value = Json::parse(text.data(), text.data() + text.size(), callback,
                             /*allow_exceptions=*/true, /*ignore_comments=*/false);
    if (*marked) restoreMarkedStrings(value);
    return value;
  } catch (const Json::exception& e) {
    throw Error(code::invalid_json, std::string("invalid JSON: ") + e.what());
  }
}

}  // namespace

Json parseJson(std::string_view text, size_t maxDepth) {
  bool marked = false;
  return parseJsonText(text, maxDepth, nullptr, &marked);
}

ParsedJson parseJsonFindingDuplicateKeys(std::string_view text, size_t maxDepth) {
  ParsedJson out;
  std::vector<std::set<std::string>> open;
  Json::parser_callback_t keys = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) open.emplace_back();
    if (event == Json::parse_event_t::object_end) open.pop_back();
    if (event == Json::parse_event_t::key &&
        !open.back().insert(parsed.get<std::string>()).second && !out.duplicateKey)
      out.duplicateKey = parsed.get<std::string>();
    return true;
  };
  bool marked = false;
  out.value = parseJsonText(text, maxDepth, keys, &marked);
  if (marked && out.duplicateKey) *out.duplicateKey = restoreMarked(*out.duplicateKey);
  return out;
}

bool containsNegativeZero(const Json& v) {
  switch (v.type()) {
    case Json::value_t::number_float:
      return v.get<double>() == 0 && std::signbit(v.get<double>());
    case Json::value_t::array:
    case Json::value_t::object:
      for (const Json& e : v) {
        if (containsNegativeZero(e)) return true;
      }
      return false;
    default:
      return false;
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
      const size_t at = i;
      const int32_t cp = decodeUtf8(s, i);
      if (cp < 0) throw Error(code::not_strict_json, "string is not valid UTF-8");
      if (!detail::isSurrogate(cp)) continue;  // raw UTF-8 is copied with the run
      // A lone surrogate (WTF-8) is written as JSON.stringify does: a lower-case escape. A
      // high surrogate directly followed by a low one is not WTF-8 (it would read back as the
      // pair's code point).
      size_t next = i;
      if (cp <= 0xDBFF && next < s.size()) {
        const int32_t after = decodeUtf8(s, next);
        if (after >= 0xDC00 && after <= 0xDFFF)
          throw Error(code::not_strict_json, "string holds a surrogate pair as two sequences");
      }
      out.append(s.data() + runStart, at - runStart);
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(cp >> shift) & 0xF]);
      runStart = i;
      continue;
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
  if (ca >= 0x10000 && cb >= 0x10000) return ca < cb;  // same high surrogate: low units decide
  // One side is a lone high surrogate (WTF-8), the other a pair with the same high unit: the
  // pair's low surrogate is compared with the unit after the lone one (none: shorter first).
  auto nextUnit = [](std::string_view s, size_t at) -> int64_t {
    if (at >= s.size()) return -1;
    const int32_t cp = decodeUtf8(s, at);
    return cp < 0 ? static_cast<unsigned char>(s[at]) : firstUnit(cp);
  };
  const int64_t la = ca >= 0x10000 ? 0xDC00 + ((ca - 0x10000) & 0x3FF) : nextUnit(a, ia);
  const int64_t lb = cb >= 0x10000 ? 0xDC00 + ((cb - 0x10000) & 0x3FF) : nextUnit(b, ib);
  return la < lb;
}

}  // namespace crashsim
