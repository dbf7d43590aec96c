// The contract's lineage digests, computed by the harness (verdicts/lineage_digest.h).
#include "verdicts/lineage_digest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace crashsim::harness::lineage {
using Json = nlohmann::json;

namespace {

// ---- a.6 stable JSON ------------------------------------------------------------------

// The UTF-16 code units of a UTF-8 string (nlohmann/json only holds valid UTF-8).
std::u16string utf16(std::string_view s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; k < len && i + static_cast<size_t>(k) < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) & 0x3F);
    i += static_cast<size_t>(len);
    if (cp >= 0x10000) {
      out.push_back(static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
  }
  return out;
}

// A JavaScript array index: "0", or a decimal without a leading zero up to 2^32 - 2.
bool isArrayIndex(std::string_view k) {
  if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0')) return false;
  uint64_t v = 0;
  for (char ch : k) {
    if (ch < '0' || ch > '9') return false;
    v = v * 10 + static_cast<uint64_t>(ch - '0');
  }
  return v <= 4294967294ULL;
}

bool ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return (ch & 0x80) == 0; });
}

// The order JSON.stringify emits an object's keys in once they were inserted sorted. ASCII keys
// (nearly all) compare as bytes, which is their UTF-16 order.
bool keyBefore(const std::string& a, const std::string& b) {
  const bool ia = isArrayIndex(a), ib = isArrayIndex(b);
  if (ia != ib) return ia;
  if (ia) return a.size() != b.size() ? a.size() < b.size() : a < b;
  if (ascii(a) && ascii(b)) return a < b;
  return utf16(a) < utf16(b);
}

void appendString(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
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
        if (u < 0x20) {
          out += "\\u00";
          out.push_back(kHex[u >> 4]);
          out.push_back(kHex[u & 0xF]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

// ECMAScript Number::toString(x) for a finite double: the shortest digits s (k of them) with
// x = s × 10^(n-k), laid out by the standard's four cases.
void appendNumber(std::string& out, double x) {
  if (!std::isfinite(x)) throw std::invalid_argument("stable JSON: a number is not finite");
  if (x == 0) {
    out.push_back('0');  // 0 and -0
    return;
  }
  if (x < 0) {
    out.push_back('-');
    x = -x;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));  // d[.ddd]e±xx
  const size_t e = sci.find('e');
  std::string digits;
  for (char ch : sci.substr(0, e))
    if (ch != '.') digits.push_back(ch);
  int exp10 = 0;
  std::from_chars(sci.data() + e + (sci[e + 1] == '+' ? 2 : 1), sci.data() + sci.size(), exp10);
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<size_t>(n));
    out.push_back('.');
    out.append(digits, static_cast<size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1);
    }
    out += n - 1 >= 0 ? "e+" : "e-";
    out += std::to_string(std::abs(n - 1));
  }
}

void append(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::string:
      appendString(out, v.get_ref<const std::string&>());
      return;
    case Json::value_t::number_integer:
      appendNumber(out, static_cast<double>(v.get<int64_t>()));
      return;
    case Json::value_t::number_unsigned:
      appendNumber(out, static_cast<double>(v.get<uint64_t>()));
      return;
    case Json::value_t::number_float:
      appendNumber(out, v.get<double>());
      return;
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const Json& e : v) {
        if (!first) out.push_back(',');
        first = false;
        append(out, e);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::object: {
      std::vector<const std::string*> keys;
      for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(&it.key());
      std::sort(keys.begin(), keys.end(),
                [](const std::string* a, const std::string* b) { return keyBefore(*a, *b); });
      out.push_back('{');
      bool first = true;
      for (const std::string* k : keys) {
        if (!first) out.push_back(',');
        first = false;
        appendString(out, *k);
        out.push_back(':');
        append(out, v.at(*k));
      }
      out.push_back('}');
      return;
    }
    default:
      throw std::invalid_argument("stable JSON: not a JSON value");
  }
}

// ---- e.7 byte rules ---------------------------------------------------------------------

void appendU64be(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
}

// LP(b) = u64be(byte length of b) || b.
void appendLp(std::string& out, std::string_view bytes) {
  appendU64be(out, bytes.size());
  out.append(bytes);
}

// The canonical event as e.7 digests it: a legacy_automation text origin reads as automation.
const Json& digestedEvent(const Json& event, Json& scratch) {
  const auto content = event.find("content");
  if (content == event.end() || !content->is_object() || content->value("kind", "") != "text")
    return event;
  const auto origin = content->find("origin");
  if (origin == content->end() || !origin->is_object() ||
      origin->value("kind", "") != "legacy_automation")
    return event;
  scratch = event;
  scratch["content"]["origin"]["kind"] = "automation";
  return scratch;
}

}  // namespace

std::string stableJson(const Json& value) {
  std::string out;
  append(out, value);
  return out;
}

std::string sha256Digest(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL SHA-256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 0xF]);
  }
  return out;
}

Json prefixIdentity(const std::string& sessionId, const std::string& invocationId,
                    const std::string& runId, const std::string& turnId) {
  return Json{{"sessionId", sessionId},
              {"invocationId", invocationId},
              {"runId", runId},
              {"turnId", turnId}};
}

std::string prefixDigest(const Json& identity, std::span<const observed::EventRow> rows) {
  std::string bytes;
  appendLp(bytes, "maka.runtime-prefix.v1");
  appendLp(bytes, stableJson(identity));
  for (const observed::EventRow& row : rows) {
    Json scratch;
    appendU64be(bytes, static_cast<uint64_t>(row.seq));
    appendLp(bytes, stableJson(digestedEvent(row.payload, scratch)));
  }
  return sha256Digest(bytes);
}

std::string manifestDigest(const Json& segments) {
  std::string bytes;
  appendLp(bytes, "maka.runtime-boundary-manifest.v1");
  appendLp(bytes,
           stableJson(Json{{"protocol", "runtime_boundary_cursor_v1"}, {"segments", segments}}));
  return sha256Digest(bytes);
}

Json segment(const Json& identity, std::span<const observed::EventRow> rows) {
  const int64_t last = rows.empty() ? 0 : rows.back().seq;
  return Json{{"protocol", "runtime_prefix_segment_v1"},
              {"identity", identity},
              {"position",
               {{"lastEventSeq", last},
                {"eventCount", static_cast<int64_t>(rows.size())},
                {"lastEventId", rows.empty() ? std::string() : rows.back().eventId}}},
              {"prefixDigest", prefixDigest(identity, rows)}};
}

}  // namespace crashsim::harness::lineage
