// codec_property_test.cpp — codec properties (issue #8 item 7): decode(encode(x)) = x for
// generated RuntimeEvents; stable JSON (a.6) is invariant to input key order, emits keys in
// the JSON.stringify order of a UTF-16-sorted object (array-index keys first, numerically;
// then UTF-16 code-unit order) and round-trips; canonicalArgsHash (a.7) is invariant to key
// order and to "__proto__" keys at any depth, while stable JSON keeps "__proto__" as data.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>

#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "ledger_gen.h"

namespace crashsim {
namespace {

// Serialises `v` as JSON text with every object's keys in a shuffled order (seeded), so the
// parser sees an order different from the sorted one. Strings/numbers use nlohmann's dump.
void dumpShuffled(const Json& v, std::mt19937& rng, std::string& out) {
  if (v.is_object()) {
    std::vector<std::string> keys;
    for (auto it = v.begin(); it != v.end(); ++it) keys.push_back(it.key());
    std::shuffle(keys.begin(), keys.end(), rng);
    out += '{';
    for (size_t i = 0; i < keys.size(); ++i) {
      if (i) out += ',';
      out += Json(keys[i]).dump();
      out += ':';
      dumpShuffled(v.at(keys[i]), rng, out);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) out += ',';
      dumpShuffled(v[i], rng, out);
    }
    out += ']';
  } else {
    out += v.dump();
  }
}
std::string shuffledText(const Json& v, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s;
  dumpShuffled(v, rng, s);
  return s;
}

// UTF-8 → UTF-16 code units (independent of the runtime's utf16Less).
std::u16string utf16(const std::string& s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    size_t len;
    if (c < 0x80)
      cp = c, len = 1;
    else if (c < 0xE0)
      cp = c & 0x1F, len = 2;
    else if (c < 0xF0)
      cp = c & 0x0F, len = 3;
    else
      cp = c & 0x07, len = 4;
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
  }
  return out;
}

// JavaScript array index (ECMA-262 6.1.7): the canonical decimal form of an integer in
// [0, 2^32 - 2]. Written independently of the runtime's helper.
std::optional<uint64_t> arrayIndexOf(const std::string& k) {
  if (k.empty() || k.size() > 10 || (k.size() > 1 && k[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : k) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 4294967294ull) return std::nullopt;
  return v;
}

// The key order of a.6: the object is built with its keys inserted in ascending UTF-16
// code-unit order and then passed to JSON.stringify, which enumerates own properties in
// OrdinaryOwnPropertyKeys order — array-index keys first in ascending numeric order, then
// the other string keys in insertion (= UTF-16) order. (Upstream stableJsonStringify is
// JSON.stringify of such an object; the spec's header makes the code normative.)
bool jsEnumerationLess(const std::string& a, const std::string& b) {
  const auto ia = arrayIndexOf(a), ib = arrayIndexOf(b);
  if (ia.has_value() != ib.has_value()) return ia.has_value();
  if (ia) return *ia < *ib;
  return utf16(a) < utf16(b);
}

// Every object in the encoded text lists its keys in strictly increasing a.6 order.
void assertKeysInStableOrder(const nlohmann::ordered_json& v) {
  if (v.is_object()) {
    std::string prev;
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) RC_ASSERT(jsEnumerationLess(prev, it.key()));
      prev = it.key();
      first = false;
      assertKeysInStableOrder(it.value());
    }
  } else if (v.is_array()) {
    for (const auto& e : v) assertKeysInStableOrder(e);
  }
}

// Inserts "__proto__" keys into objects at the positions the selectors pick.
Json withProtoKeys(const Json& v, const std::vector<int>& sel, size_t& k, bool& inserted) {
  if (v.is_object()) {
    Json o = Json::object();
    for (auto it = v.begin(); it != v.end(); ++it)
      o[it.key()] = withProtoKeys(it.value(), sel, k, inserted);
    if (k < sel.size() && sel[k++] % 2 == 0 && !o.contains("__proto__")) {
      o["__proto__"] = Json{{"admin", true}, {"n", sel[k - 1]}};
      inserted = true;
    }
    return o;
  }
  if (v.is_array()) {
    Json a = Json::array();
    for (const auto& e : v) a.push_back(withProtoKeys(e, sel, k, inserted));
    return a;
  }
  return v;
}

// Events of generated ledgers (valid, prefixes and corruptions that still decode).
RC_GTEST_PROP(CodecProperties, DecodeOfEncodeIsIdentityForGeneratedRuntimeEvents, ()) {
  const auto c = *propgen::genLedgerCase(true);
  for (const Json& j : propgen::caseEvents(c)) {
    std::optional<RuntimeEvent> e;
    try {
      e = decodeRuntimeEvent(j);
    } catch (const Error&) {
      continue;  // corrupted beyond the decoder: not an event
    }
    const std::string bytes = encodeRuntimeEvent(*e);
    const RuntimeEvent again = decodeRuntimeEvent(parseJson(bytes));
    RC_ASSERT(again == *e);
    RC_ASSERT(encodeRuntimeEvent(again) == bytes);
    RC_ASSERT(again.lane == e->lane);
    RC_ASSERT(again.id == e->id);
    RC_ASSERT(again.callArgsHash == e->callArgsHash);
    // the decoder is insensitive to the key order of its input text
    const RuntimeEvent shuffled = decodeRuntimeEvent(parseJson(shuffledText(j, 7)));
    RC_ASSERT(encodeRuntimeEvent(shuffled) == bytes);
  }
}

RC_GTEST_PROP(CodecProperties, StableJsonIsInvariantToKeyOrderEmitsJsPropertyOrderAndRoundTrips,
              ()) {
  const Json v = *propgen::genJson(4);
  const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
  const std::string s = stableJson(v);
  RC_ASSERT(stableJson(parseJson(shuffledText(v, seed))) == s);
  const Json back = parseJson(s);
  RC_ASSERT(back == v);
  RC_ASSERT(stableJson(back) == s);  // idempotent
  assertKeysInStableOrder(nlohmann::ordered_json::parse(s));
  // no whitespace outside strings
  bool inString = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (inString) {
      if (s[i] == '\\')
        ++i;
      else if (s[i] == '"')
        inString = false;
    } else {
      RC_ASSERT(s[i] != ' ' && s[i] != '\n' && s[i] != '\t' && s[i] != '\r');
      if (s[i] == '"') inString = true;
    }
  }
}

RC_GTEST_PROP(CodecProperties, EcmaNumberFormatRoundTripsAndPrintsSafeIntegersPlainly, ()) {
  const double d = *propgen::genNumber();
  const std::string s = formatEcmaNumber(d);
  RC_ASSERT(std::strtod(s.c_str(), nullptr) == d);
  if (d == std::trunc(d) && std::abs(d) <= 9007199254740992.0) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", d == 0 ? 0.0 : d);
    RC_ASSERT(s == std::string(buf));
  }
  RC_ASSERT(stableJson(Json(d)) == s);
}

RC_GTEST_PROP(CodecProperties, CanonicalArgsHashIgnoresKeyOrderAndProtoKeysButStableJsonKeepsThem,
              ()) {
  const Json args = *propgen::genArgs();
  const std::string tool = *rc::gen::elementOf(propgen::toolNames());
  const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
  const std::string h = canonicalArgsHash(tool, args);
  RC_ASSERT(h.size() == 71u);
  RC_ASSERT(h.rfind("sha256:", 0) == 0u);
  RC_ASSERT(canonicalArgsHash(tool, parseJson(shuffledText(args, seed))) == h);

  const auto sel = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 100));
  size_t k = 0;
  bool inserted = false;
  const Json withProto = withProtoKeys(args, sel, k, inserted);
  RC_ASSERT(canonicalArgsHash(tool, withProto) == h);
  if (inserted) RC_ASSERT(stableJson(withProto) != stableJson(args));
  // the hash domain includes the tool name
  RC_ASSERT(canonicalArgsHash(tool + "2", args) != h);
}

}  // namespace
}  // namespace crashsim
