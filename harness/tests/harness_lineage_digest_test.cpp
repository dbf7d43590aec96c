// The harness's own lineage digests (verdicts/lineage_digest.h) against the contract's vectors
// (spec a.6, a.7, e.7) — every expected value here is the contract's or ECMAScript's, never one
// this code or the runtime printed.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <vector>

#include "verdicts/lineage_digest.h"

using namespace crashsim::harness;
using nlohmann::json;

namespace {

json eventJson(const std::string& originKind) {
  return json::parse(R"({
    "id":"event-legacy","sessionId":"session-1","invocationId":"invocation-run-legacy",
    "runId":"run-legacy","turnId":"turn-run-legacy","ts":1,"partial":false,
    "role":"user","author":"user",
    "content":{"kind":"text","text":"automated prompt",
               "origin":{"kind":")" +
                     originKind + R"(","automationId":"automation-1"}}})");
}

json legacyIdentity() {
  return lineage::prefixIdentity("session-1", "invocation-run-legacy", "run-legacy",
                                 "turn-run-legacy");
}

std::vector<observed::EventRow> rowsOf(std::vector<json> events) {
  std::vector<observed::EventRow> rows;
  for (auto& e : events) {
    observed::EventRow r;
    r.seq = static_cast<int64_t>(rows.size()) + 1;
    r.eventId = e.value("id", "");
    r.payload = std::move(e);
    rows.push_back(std::move(r));
  }
  return rows;
}

constexpr const char* kLegacyPrefixDigest =
    "sha256:d4c8211024788a3fd7554a644f6983f6af088eeb050404f507c76a519080d7ca";

}  // namespace

// a.6: JSON.stringify of the value with keys sorted by UTF-16 code units (a JavaScript object
// enumerates array-index keys first), no whitespace, JSON.stringify's escapes, raw UTF-8.
TEST(HarnessStableJson, KeysStringsAndLiterals) {
  EXPECT_EQ(lineage::stableJson(json::parse(R"({"b":1,"a":[true,false,null],"10":2,"9":3})")),
            R"({"9":3,"10":2,"a":[true,false,null],"b":1})");
  // U+1F600 is D83D DE00 in UTF-16, so it sorts before U+E000 (UTF-8 byte order says the other).
  EXPECT_EQ(lineage::stableJson(json{{"\xee\x80\x80", 1}, {"\xf0\x9f\x98\x80", 2}}),
            "{\"\xf0\x9f\x98\x80\":2,\"\xee\x80\x80\":1}");
  // "01" and "4294967295" are not array indexes: ordinary keys, after the indexes.
  EXPECT_EQ(lineage::stableJson(json{{"01", 1}, {"4294967295", 2}, {"4294967294", 3}, {"0", 4}}),
            R"({"0":4,"4294967294":3,"01":1,"4294967295":2})");
  EXPECT_EQ(lineage::stableJson(json("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f\xc3\xa9")),
            "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xc3\xa9\"");
}

// a.6: numbers in ECMAScript Number::toString form.
TEST(HarnessStableJson, NumbersAsECMAScriptWritesThem) {
  const std::vector<std::pair<double, std::string>> cases = {
      {1, "1"},
      {1.5, "1.5"},
      {-1.5, "-1.5"},
      {-0.0, "0"},
      {1e21, "1e+21"},
      {1.2345678901234568e20, "123456789012345680000"},
      {0.1 + 0.2, "0.30000000000000004"},
      {0.000001, "0.000001"},
      {1e-7, "1e-7"},
      {1.5e-7, "1.5e-7"},
      {9007199254740992.0, "9007199254740992"},
      {5e-324, "5e-324"},
      {1796347477894, "1796347477894"},
  };
  for (const auto& [value, text] : cases) EXPECT_EQ(lineage::stableJson(json(value)), text);
  EXPECT_EQ(lineage::stableJson(json::parse("[1796347477894,-3,18446744073709551615]")),
            "[1796347477894,-3,18446744073709552000]");
  EXPECT_THROW(lineage::stableJson(json(std::nan(""))), std::invalid_argument);
}

// a.7's frozen vectors whose canonical value is its own stable JSON (no __proto__, no
// required/enum arrays): the byte example and its hash.
TEST(HarnessStableJson, CanonicalArgsHashVectorsOfA7) {
  const json write = {{"toolName", "Write"},
                      {"args", {{"path", "notes.txt"}, {"content", "after"}}}};
  EXPECT_EQ(lineage::stableJson(write),
            R"({"args":{"content":"after","path":"notes.txt"},"toolName":"Write"})");
  EXPECT_EQ(lineage::sha256Digest(lineage::stableJson(write)),
            "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9");
  EXPECT_EQ(lineage::sha256Digest(
                lineage::stableJson(json{{"toolName", "X"}, {"args", {{"path", "prepared.txt"}}}})),
            "sha256:b10a9dfa507aac2940a27bdd3670fd7582d52705de906eb13c1ab37b553031e1");
  EXPECT_EQ(lineage::sha256Digest(lineage::stableJson(
                json{{"toolName", "X"}, {"args", {{"ordinaryArray", {"b", "a"}}}}})),
            "sha256:4b6be45e18e1a7c6566dd72a0fa0c01b0f059bb3128ecd7a3265d5221f7b8351");
}

// e.7's prefix vector; the decoded form (origin legacy_automation) digests to the same bytes.
TEST(HarnessLineageDigest, PrefixDigestVectorOfE7) {
  EXPECT_EQ(lineage::prefixDigest(legacyIdentity(), rowsOf({eventJson("automation")})),
            kLegacyPrefixDigest);
  EXPECT_EQ(lineage::prefixDigest(legacyIdentity(), rowsOf({eventJson("legacy_automation")})),
            kLegacyPrefixDigest);
}

// e.7's manifest vector for the single segment of that prefix.
TEST(HarnessLineageDigest, ManifestDigestVectorOfE7) {
  const json seg = lineage::segment(legacyIdentity(), rowsOf({eventJson("automation")}));
  EXPECT_EQ(seg["position"],
            (json{{"lastEventSeq", 1}, {"eventCount", 1}, {"lastEventId", "event-legacy"}}));
  EXPECT_EQ(seg["prefixDigest"], kLegacyPrefixDigest);
  EXPECT_EQ(lineage::manifestDigest(json::array({seg})),
            "sha256:a377b3c182ecddc34f136a1a9c9b321d404d614a36ea6674d371ab2c327b4910");
}

// The prefix digest covers every payload byte, the identity and the order (e.7 "raw immutable
// bytes"); the manifest digest is order-sensitive.
TEST(HarnessLineageDigest, CoversPayloadsIdentityAndOrder) {
  json edited = eventJson("automation");
  edited["content"]["text"] = "automated prompt!";
  EXPECT_NE(lineage::prefixDigest(legacyIdentity(), rowsOf({edited})), kLegacyPrefixDigest);
  json other = legacyIdentity();
  other["turnId"] = "turn-other";
  EXPECT_NE(lineage::prefixDigest(other, rowsOf({eventJson("automation")})), kLegacyPrefixDigest);
  const auto two = rowsOf({eventJson("automation"), edited});
  const auto swapped = rowsOf({edited, eventJson("automation")});
  EXPECT_NE(lineage::prefixDigest(legacyIdentity(), two),
            lineage::prefixDigest(legacyIdentity(), swapped));
  const json a = lineage::segment(legacyIdentity(), rowsOf({eventJson("automation")}));
  const json b = lineage::segment(other, rowsOf({eventJson("automation")}));
  EXPECT_NE(lineage::manifestDigest(json::array({a, b})),
            lineage::manifestDigest(json::array({b, a})));
}
