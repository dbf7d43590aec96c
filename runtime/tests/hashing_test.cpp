// hashing_test.cpp — frozen digest vectors of spec a.7 (canonicalArgsHash), a.8 (derived ids)
// and e.7 (prefixDigest, manifestDigest).
#include "crashsim/hashing.h"

#include <gtest/gtest.h>

#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {
namespace {

TEST(Sha256, KnownAnswerForEmptyAndAbc) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Digest("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// a.7 frozen vectors ---------------------------------------------------------------------------

TEST(CanonicalArgsHashMainlineV1, WriteVectorAnyKeyOrder) {
  const char* expected = "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9";
  EXPECT_EQ(canonicalArgsHash("Write", parseJson(R"({"content":"after","path":"notes.txt"})")),
            expected);
  EXPECT_EQ(canonicalArgsHash("Write", parseJson(R"({"path":"notes.txt","content":"after"})")),
            expected);
}

TEST(CanonicalArgsHashMainlineV1, ByteExampleIsTheHashedText) {
  EXPECT_EQ(canonicalArgsHash("Write", parseJson(R"({"content":"after","path":"notes.txt"})")),
            sha256Digest(R"({"args":{"content":"after","path":"notes.txt"},"toolName":"Write"})"));
}

TEST(CanonicalArgsHashMainlineV1, PreparedPathVector) {
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"path":"prepared.txt"})")),
            "sha256:b10a9dfa507aac2940a27bdd3670fd7582d52705de906eb13c1ab37b553031e1");
}

TEST(CanonicalArgsHashMainlineV1, RequiredArrayIsSortedByCollation) {
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"required":["b","a"]})")),
            "sha256:0002fcd132216e3442d4ab7579d9659019019c6b7000456fbef198b7ae53ee43");
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"required":["a","b"]})")),
            canonicalArgsHash("X", parseJson(R"({"required":["b","a"]})")));
}

TEST(CanonicalArgsHashMainlineV1, NestedEnumArrayIsSorted) {
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"nested":{"enum":["z","a"]}})")),
            "sha256:a1545a7c4bb9197d99d49327067d31da23188091e1bf6641e2a1698d9a906eca");
}

TEST(CanonicalArgsHashMainlineV1, ProtoKeyIsDroppedAtAnyDepth) {
  const char* empty = "sha256:ad5ecbd9c66b763ad3505d4ac9ddc7a86cffcecd8fd7f2c0ffb342c34da285e9";
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"__proto__":{"admin":true}})")), empty);
  EXPECT_EQ(canonicalArgsHash("X", Json::object()), empty);
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"nested":{"__proto__":{"admin":true}}})")),
            canonicalArgsHash("X", parseJson(R"({"nested":{}})")));
  // ...but stable JSON keeps __proto__ as ordinary data.
  EXPECT_EQ(stableJson(parseJson(R"({"__proto__":{"admin":true}})")),
            R"({"__proto__":{"admin":true}})");
}

TEST(CanonicalArgsHashMainlineV1, OrdinaryArrayIsNotSorted) {
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"ordinaryArray":["b","a"]})")),
            "sha256:4b6be45e18e1a7c6566dd72a0fa0c01b0f059bb3128ecd7a3265d5221f7b8351");
  EXPECT_NE(canonicalArgsHash("X", parseJson(R"({"ordinaryArray":["b","a"]})")),
            canonicalArgsHash("X", parseJson(R"({"ordinaryArray":["a","b"]})")));
}

TEST(CanonicalArgsHashMainlineV1, ArraysNestedInRequiredArraysAreNotSorted) {
  // The outer "required" array is sorted by each element's JSON text; the inner arrays keep
  // their order.
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"required":[["b","a"],["a"]]})")),
            sha256Digest(R"({"args":{"required":[["a"],["b","a"]]},"toolName":"X"})"));
}

TEST(CanonicalArgsHashMainlineV1, CollationIsNotCodeUnitOrder) {
  // ICU root collation orders "a" < "B" < "c" (case-insensitive at the primary level), where
  // code-unit order would give "B" < "a" < "c".
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"enum":["c","B","a"]})")),
            sha256Digest(R"({"args":{"enum":["a","B","c"]},"toolName":"X"})"));
}

TEST(CanonicalArgsHashMainlineV1, IntegerLikeKeysFollowJavaScriptPropertyOrder) {
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"b":1,"10":2,"9":3})")),
            sha256Digest(R"({"args":{"9":3,"10":2,"b":1},"toolName":"X"})"));
}

TEST(CanonicalArgsHashMainlineV1, NumbersHashAsJavaScriptPrintsThem) {
  EXPECT_EQ(canonicalArgsHash("X", parseJson(R"({"n":[1.0,1e21,-0,0.1]})")),
            sha256Digest(R"({"args":{"n":[1,1e+21,0,0.1]},"toolName":"X"})"));
}

TEST(CanonicalArgsHashMainlineV1, RejectsEmptyToolNameAndNonStrictJson) {
  try {
    canonicalArgsHash("", Json::object());
    FAIL() << "empty tool name accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code::empty_id);
  }
  try {
    canonicalArgsHash("X", Json{{"n", std::numeric_limits<double>::quiet_NaN()}});
    FAIL() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "not_strict_json");
  }
  try {
    canonicalArgsHash("X", Json{{"n", std::numeric_limits<double>::infinity()}});
    FAIL() << "Infinity accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "not_strict_json");
  }
}

// a.8 derived identifiers -----------------------------------------------------------------------

TEST(DerivedOperationId, InvocationAndProviderCallVector) {
  EXPECT_EQ(deriveOperationId("invocation-1", "provider-call-1"),
            "toolop_fe9a5c5f885cdf2c401efb50d880f118");
}

TEST(DerivedOperationId, HashesTheJsonArraySoConcatenationIsUnambiguous) {
  EXPECT_EQ(deriveOperationId("invocation-1", "provider-call-1"),
            "toolop_" + sha256Hex(R"(["invocation-1","provider-call-1"])").substr(0, 32));
  EXPECT_NE(deriveOperationId("a", "bc"), deriveOperationId("ab", "c"));
}

TEST(DerivedContinuationRepairId, UsesDomainNulClaimId) {
  std::string input = "maka.continuation-repair.start.v1";
  input.push_back('\0');
  input += "claim-1";
  EXPECT_EQ(deriveContinuationRepairId("start", "claim-1"),
            "continuation-repair-start-" + sha256Hex(input).substr(0, 32));
  EXPECT_NE(deriveContinuationRepairId("terminal", "claim-1"),
            deriveContinuationRepairId("run-terminal", "claim-1"));
  EXPECT_TRUE(deriveContinuationRepairId("run-terminal", "claim-1")
                  .starts_with("continuation-repair-run-terminal-"));
  EXPECT_THROW(deriveContinuationRepairId("bogus", "claim-1"), Error);
}

// e.7 digests ----------------------------------------------------------------------------------

PrefixIdentity legacyIdentity() {
  return PrefixIdentity{"session-1", "invocation-run-legacy", "run-legacy", "turn-run-legacy"};
}

RuntimeEvent legacyEvent() {
  return decodeRuntimeEvent(parseJson(R"({
    "id":"event-legacy","sessionId":"session-1","invocationId":"invocation-run-legacy",
    "runId":"run-legacy","turnId":"turn-run-legacy","ts":1,"partial":false,
    "role":"user","author":"user",
    "content":{"kind":"text","text":"automated prompt",
               "origin":{"kind":"automation","automationId":"automation-1"}}})"));
}

TEST(PrefixDigest, LegacyAutomationVector) {
  const RuntimeEvent ev = legacyEvent();
  // The decoder normalises the origin to legacy_automation ...
  EXPECT_EQ(ev.json["content"]["origin"]["kind"], "legacy_automation");
  // ... and the prefix digest encodes it back as automation (frozen bytes).
  std::vector<RuntimeEvent> events{ev};
  EXPECT_EQ(prefixDigest(legacyIdentity(), events),
            "sha256:d4c8211024788a3fd7554a644f6983f6af088eeb050404f507c76a519080d7ca");
}

TEST(PrefixDigest, RejectsPartialEventsAndForeignIdentity) {
  RuntimeEvent ev = legacyEvent();
  ev.partial = true;
  std::vector<RuntimeEvent> partial{ev};
  try {
    prefixDigest(legacyIdentity(), partial);
    FAIL() << "partial accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "partial_in_prefix");
  }
  std::vector<RuntimeEvent> events{legacyEvent()};
  PrefixIdentity other = legacyIdentity();
  other.runId = "run-other";
  EXPECT_THROW(prefixDigest(other, events), Error);
}

// e.7 canonicalises each event first (a.6): an event holding -0 is not lossless (its stable
// JSON reads back as 0), so it has no digest; a lone surrogate is data and digests as its
// lower-case escape.
TEST(PrefixDigest, RefusesMinusZeroAndDigestsLoneSurrogates) {
  Json j = legacyEvent().json;
  j["ts"] = parseJson("-0");
  std::vector<RuntimeEvent> negative{decodeRuntimeEvent(j)};
  try {
    prefixDigest(legacyIdentity(), negative);
    FAIL() << "-0 digested";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "not_losslessly_serializable");
  }
  j["ts"] = 0;
  std::vector<RuntimeEvent> zero{decodeRuntimeEvent(j)};
  EXPECT_NO_THROW(prefixDigest(legacyIdentity(), zero));
  j["content"]["text"] = parseJson(R"("a\ud800")");
  std::vector<RuntimeEvent> lone{decodeRuntimeEvent(j)};
  j["content"]["text"] = parseJson(R"("a\ud801")");
  std::vector<RuntimeEvent> other{decodeRuntimeEvent(j)};
  EXPECT_NE(prefixDigest(legacyIdentity(), lone), prefixDigest(legacyIdentity(), other));
  EXPECT_NE(encodeRuntimeEvent(lone[0]).find(R"("text":"a\ud800")"), std::string::npos);
}

TEST(PrefixDigest, DependsOnEveryEventAndItsPosition) {
  std::vector<RuntimeEvent> one{legacyEvent()};
  std::vector<RuntimeEvent> two{legacyEvent(), legacyEvent()};
  EXPECT_NE(prefixDigest(legacyIdentity(), one), prefixDigest(legacyIdentity(), two));
}

TEST(ManifestDigest, SingleLegacySegmentVector) {
  const Json identity = {{"sessionId", "session-1"},
                         {"invocationId", "invocation-run-legacy"},
                         {"runId", "run-legacy"},
                         {"turnId", "turn-run-legacy"}};
  const Json segment = {
      {"protocol", "runtime_prefix_segment_v1"},
      {"identity", identity},
      {"position", {{"lastEventSeq", 1}, {"eventCount", 1}, {"lastEventId", "event-legacy"}}},
      {"prefixDigest", "sha256:d4c8211024788a3fd7554a644f6983f6af088eeb050404f507c76a519080d7ca"}};
  EXPECT_EQ(manifestDigest(Json::array({segment})),
            "sha256:a377b3c182ecddc34f136a1a9c9b321d404d614a36ea6674d371ab2c327b4910");
}

TEST(ManifestDigest, IsOrderSensitive) {
  const Json a = {{"protocol", "runtime_prefix_segment_v1"}, {"n", 1}};
  const Json b = {{"protocol", "runtime_prefix_segment_v1"}, {"n", 2}};
  EXPECT_NE(manifestDigest(Json::array({a, b})), manifestDigest(Json::array({b, a})));
}

}  // namespace
}  // namespace crashsim
