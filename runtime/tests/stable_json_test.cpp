// stable_json_test.cpp — byte vectors of the canonical JSON encoding (spec a.6) and of the
// strict parser.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/json.h"

namespace crashsim {
namespace {

std::string errorCodeOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "<no error>";
}

// Key order ------------------------------------------------------------------------------------

TEST(StableJsonKeyOrder, SortsByUtf16CodeUnitsAndHasNoWhitespace) {
  EXPECT_EQ(stableJson(parseJson(R"({ "b": 1, "a": [ 1, 2 ], "B": null, "": true, "aa": {} })")),
            R"({"":true,"B":null,"a":[1,2],"aa":{},"b":1})");
}

TEST(StableJsonKeyOrder, SupplementaryKeySortsBeforeU_FFxxKeyUnlikeUtf8Order) {
  // U+1F600 is the surrogate pair D83D DE00 in UTF-16 (sorts before U+FF01) but F0 9F 98 80
  // in UTF-8 (sorts after EF BC 81).
  const std::string grin = "\xF0\x9F\x98\x80";
  const std::string fullwidthBang = "\xEF\xBC\x81";
  Json obj = Json::object();
  obj[fullwidthBang] = 2;
  obj[grin] = 1;
  obj["z"] = 0;
  EXPECT_EQ(stableJson(obj), "{\"z\":0,\"" + grin + "\":1,\"" + fullwidthBang + "\":2}");
  EXPECT_TRUE(utf16Less(grin, fullwidthBang));
  EXPECT_FALSE(utf16Less(fullwidthBang, grin));
  EXPECT_LT(fullwidthBang, grin);  // the UTF-8 (std::string) order is the other way round
}

TEST(StableJsonKeyOrder, Utf16LessBasics) {
  EXPECT_TRUE(utf16Less("", "a"));
  EXPECT_FALSE(utf16Less("a", "a"));
  EXPECT_TRUE(utf16Less("B", "a"));
  EXPECT_TRUE(utf16Less("a", "aa"));
  EXPECT_TRUE(utf16Less("\xC3\xA9", "\xE4\xB8\x80"));              // U+00E9 < U+4E00
  EXPECT_TRUE(utf16Less("\xF0\x9F\x98\x80", "\xF0\x9F\x98\x81"));  // same high surrogate
  EXPECT_TRUE(utf16Less("x\xF0\x9F\x98\x80", "x\xEE\x80\x80"));    // U+1F600 < U+E000
  EXPECT_TRUE(utf16Less("\xED\x9F\xBF", "\xF0\x90\x80\x80"));      // U+D7FF < U+10000
}

TEST(StableJsonKeyOrder, ArrayIndexKeysComeFirstInNumericOrderLikeJavaScriptObjects) {
  // The reference inserts sorted keys into a JavaScript object; JSON.stringify then enumerates
  // array-index keys ("0".."4294967294", canonical decimal) first, numerically.
  EXPECT_EQ(stableJson(parseJson(
                R"({"a":3,"10":1,"9":2,"01":4,"4294967295":5,"4294967294":6,"-1":7,"0":8})")),
            R"({"0":8,"9":2,"10":1,"4294967294":6,"-1":7,"01":4,"4294967295":5,"a":3})");
  EXPECT_TRUE(jsPropertyOrderLess("9", "10"));
  EXPECT_TRUE(jsPropertyOrderLess("4294967294", "-1"));
  EXPECT_TRUE(jsPropertyOrderLess("01", "4294967295"));
  EXPECT_FALSE(jsPropertyOrderLess("a", "0"));
  EXPECT_TRUE(utf16Less("10", "9"));  // plain UTF-16 order differs
}

TEST(StableJsonKeyOrder, NestedObjectsAreSortedToo) {
  EXPECT_EQ(stableJson(parseJson(R"([{"y":{"d":1,"c":2}},{"b":[{"z":1,"a":2}]}])")),
            R"([{"y":{"c":2,"d":1}},{"b":[{"a":2,"z":1}]}])");
}

// String escaping --------------------------------------------------------------------------------

TEST(StableJsonEscaping, MatchesJsonStringify) {
  const std::string input = std::string("q\"b\\\b\f\n\r\t") + '\x01' + '\x1f' + '\x7f' +
                            "/\xE2\x80\xA8\xE2\x80\xA9\xC3\xA9\xF0\x9F\x98\x80" + '\0' + "end";
  const std::string expected = std::string("\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0001\\u001f") + '\x7f' +
                               "/\xE2\x80\xA8\xE2\x80\xA9\xC3\xA9\xF0\x9F\x98\x80\\u0000end\"";
  EXPECT_EQ(stableJson(Json(input)), expected);
}

TEST(StableJsonEscaping, ControlCharactersUseLowerCaseHex) {
  EXPECT_EQ(stableJson(Json(std::string("\x0b\x1a"))), R"("\u000b\u001a")");
}

TEST(StableJsonEscaping, KeysAreEscapedLikeStrings) {
  Json obj = Json::object();
  obj["a\"b\n"] = 1;
  EXPECT_EQ(stableJson(obj), R"({"a\"b\n":1})");
}

TEST(StableJsonEscaping, InvalidUtf8IsNotStrictJson) {
  // A surrogate pair as two 3-byte sequences (CESU-8) is not WTF-8: it would read back as the
  // pair's code point.
  EXPECT_EQ(errorCodeOf([] { stableJson(Json(std::string("\xED\xA0\x80\xED\xB0\x80"))); }),
            "not_strict_json");
  EXPECT_EQ(errorCodeOf([] { stableJson(Json(std::string("\xC3"))); }), "not_strict_json");
  EXPECT_EQ(errorCodeOf([] { stableJson(Json(std::string("\xC0\xAF"))); }), "not_strict_json");
}

// Numbers ---------------------------------------------------------------------------------------

TEST(StableJsonNumbers, EcmaScriptNumberToString) {
  EXPECT_EQ(formatEcmaNumber(1), "1");
  EXPECT_EQ(formatEcmaNumber(1.5), "1.5");
  EXPECT_EQ(formatEcmaNumber(-1.5), "-1.5");
  EXPECT_EQ(formatEcmaNumber(1e21), "1e+21");
  EXPECT_EQ(formatEcmaNumber(1e20), "100000000000000000000");
  EXPECT_EQ(formatEcmaNumber(0.1), "0.1");
  EXPECT_EQ(formatEcmaNumber(-0.0), "0");
  EXPECT_EQ(formatEcmaNumber(5e-324), "5e-324");
  EXPECT_EQ(formatEcmaNumber(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(formatEcmaNumber(123e-20), "1.23e-18");
  EXPECT_EQ(formatEcmaNumber(1e-7), "1e-7");
  EXPECT_EQ(formatEcmaNumber(1.234e-7), "1.234e-7");
  EXPECT_EQ(formatEcmaNumber(0.000001), "0.000001");
  EXPECT_EQ(formatEcmaNumber(0.000001234), "0.000001234");
  EXPECT_EQ(formatEcmaNumber(123456789012345680000.0), "123456789012345680000");
  EXPECT_EQ(formatEcmaNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(formatEcmaNumber(1.5e300), "1.5e+300");
  EXPECT_EQ(formatEcmaNumber(-1e-7), "-1e-7");
  EXPECT_EQ(formatEcmaNumber(100), "100");
  EXPECT_EQ(formatEcmaNumber(123.456), "123.456");
}

TEST(StableJsonNumbers, ParsedNumbersEncodeAsJavaScriptSeesThem) {
  EXPECT_EQ(stableJson(parseJson("[1.0,1e21,1e20,-0,-0.0,5e-324,123e-20,1E+2,0.5e1]")),
            "[1,1e+21,100000000000000000000,0,0,5e-324,1.23e-18,100,5]");
}

TEST(StableJsonNumbers, IntegersBeyondTwoTo53AreConvertedToDoubleFirst) {
  EXPECT_EQ(stableJson(Json(int64_t{9007199254740993})), "9007199254740992");
  EXPECT_EQ(stableJson(Json(std::numeric_limits<int64_t>::max())), "9223372036854776000");
  EXPECT_EQ(stableJson(Json(std::numeric_limits<int64_t>::min())), "-9223372036854776000");
  EXPECT_EQ(stableJson(Json(std::numeric_limits<uint64_t>::max())), "18446744073709552000");
  EXPECT_EQ(stableJson(parseJson("123456789012345678901234567890")), "1.2345678901234568e+29");
  EXPECT_EQ(stableJson(Json(int64_t{-42})), "-42");
  EXPECT_EQ(stableJson(Json(uint64_t{9007199254740992})), "9007199254740992");
}

TEST(StableJsonNumbers, RejectsNaNAndInfinityAsNotStrictJson) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(errorCodeOf([&] { stableJson(Json(nan)); }), "not_strict_json");
  EXPECT_EQ(errorCodeOf([&] {
              stableJson(Json{{"a", Json::array({1, inf})}});
            }),
            "not_strict_json");
  EXPECT_EQ(errorCodeOf([&] { stableJson(Json(-inf)); }), "not_strict_json");
  EXPECT_EQ(errorCodeOf([&] { formatEcmaNumber(nan); }), "not_strict_json");
  // JSON text overflowing a double (1e400) would be Infinity in JSON.parse; the strict parser
  // refuses it up front.
  EXPECT_EQ(errorCodeOf([] { parseJson("1e400"); }), "invalid_json");
  EXPECT_EQ(errorCodeOf([] { parseJson("[-1e400]"); }), "invalid_json");
}

TEST(StableJsonValues, RejectsDiscardedAndBinaryValues) {
  EXPECT_EQ(errorCodeOf([] { stableJson(Json(Json::value_t::discarded)); }), "not_strict_json");
  EXPECT_EQ(errorCodeOf([] { stableJson(Json::binary({1, 2})); }), "not_strict_json");
}

TEST(StableJsonValues, ScalarsAndEmptyContainers) {
  EXPECT_EQ(stableJson(parseJson(R"({"n":null,"t":true,"f":false,"a":[],"o":{}})")),
            R"({"a":[],"f":false,"n":null,"o":{},"t":true})");
}

TEST(StableJsonRoundTrip, ParseOfEncodingEncodesToTheSameBytes) {
  const char* samples[] = {
      R"({"b":[1,2.5,-0.001,1e-7,{"y":null,"x":"\u00e9\ud83d\ude00"}],"a":"\n"})",
      R"([1e21,1e300,5e-324,-1.7976931348623157e308,0.30000000000000004])",
      R"({"__proto__":{"k":1},"constructor":"x"})",
  };
  for (const char* s : samples) {
    const std::string once = stableJson(parseJson(s));
    EXPECT_EQ(stableJson(parseJson(once)), once) << s;
    EXPECT_EQ(parseJson(once), parseJson(s)) << s;
  }
}

// Strict parser -------------------------------------------------------------------------------

TEST(ParseJson, RejectsMalformedTextAsInvalidJson) {
  for (const char* bad : {"", "{", "{\"a\":1,}", "[1,]", "{\"a\":1} x", "// c\n1", "/* c */ 1",
                          "NaN", "Infinity", "'a'", "{a:1}", "01", "\"\t\"", "[1 2]"}) {
    EXPECT_EQ(errorCodeOf([&] { parseJson(bad); }), "invalid_json") << bad;
  }
}

// a.6: a JavaScript string may hold a lone surrogate, so "\ud800" is data: it decodes (as
// WTF-8, the 3-byte form) and stable JSON writes it back as JSON.stringify does, a lower-case
// escape. Raw surrogate bytes in the TEXT are still invalid UTF-8.
TEST(ParseJson, LoneSurrogateEscapesAreDataAndRoundTripAsLowerCaseEscapes) {
  EXPECT_EQ(parseJson(R"("\ud800")").get<std::string>(), "\xED\xA0\x80");
  EXPECT_EQ(parseJson(R"("\udc00x")").get<std::string>(), "\xED\xB0\x80x");
  EXPECT_EQ(parseJson(R"("\ud800\u0041")").get<std::string>(),
            "\xED\xA0\x80"
            "A");
  EXPECT_EQ(stableJson(parseJson(R"("\uD800")")), R"("\ud800")");
  EXPECT_EQ(stableJson(parseJson(R"(["a\uDBFFb","\udfff\ud800",{"\udc01":"\\ud800"}])")),
            R"(["a\udbffb","\udfff\ud800",{"\udc01":"\\ud800"}])");
  // a low surrogate before a high one is two lone surrogates, not a pair
  EXPECT_EQ(stableJson(parseJson(R"("\udc00\ud800")")), R"("\udc00\ud800")");
  EXPECT_EQ(errorCodeOf([] { parseJson("\"\xff\""); }), "invalid_json");
  EXPECT_EQ(errorCodeOf([] { parseJson("\"\xED\xA0\x80\""); }), "invalid_json");
  EXPECT_EQ(errorCodeOf([] { parseJson(R"("\ud800)"); }), "invalid_json");  // unterminated
}

// parseJson marks lone surrogates with U+FDD0 on the way through nlohmann; a U+FDD0 that is
// data, even followed by hex digits, must come back unchanged.
TEST(ParseJson, NoncharacterFdd0IsDataNextToLoneSurrogates) {
  const Json v = parseJson("[\"\\ufdd0d800\",\"\xEF\xB7\x90\\ud800\",\"\\ud800\",{\"\\ufdd0\":1}]");
  EXPECT_EQ(v[0].get<std::string>(),
            "\xEF\xB7\x90"
            "d800");
  EXPECT_EQ(v[1].get<std::string>(), "\xEF\xB7\x90\xED\xA0\x80");
  EXPECT_EQ(v[2].get<std::string>(), "\xED\xA0\x80");
  EXPECT_TRUE(v[3].contains("\xEF\xB7\x90"));
  EXPECT_EQ(parseJson("\"\xEF\xB7\x90\"").get<std::string>(), "\xEF\xB7\x90");
}

// Keys holding lone surrogates sort by UTF-16 code units: a lone high surrogate before the
// pair that starts with the same unit when the next unit is smaller (or absent).
TEST(StableJsonKeyOrder, LoneSurrogateKeysSortByCodeUnits) {
  EXPECT_EQ(
      stableJson(parseJson(
          R"({"\uffff":5,"\ud83d\ude00":4,"\ud83d\ue000":3,"\ud83dA":2,"\ud83d":1,"\ud800":0})")),
      R"({"\ud800":0,"\ud83d":1,"\ud83dA":2,")"
      "\xF0\x9F\x98\x80"
      R"(":4,"\ud83d)"
      "\xEE\x80\x80"
      R"(":3,")"
      "\xEF\xBF\xBF"
      R"(":5})");
  EXPECT_TRUE(utf16Less("\xED\xA0\xBD", "\xF0\x9F\x98\x80"));  // D83D < D83D DE00
  EXPECT_FALSE(utf16Less("\xF0\x9F\x98\x80", "\xED\xA0\xBD"));
  EXPECT_TRUE(utf16Less("\xF0\x9F\x98\x80", "\xED\xA0\xBD\xEE\x80\x80"));  // DE00 < E000
}

// JSON.parse("-0") is -0: the sign survives parsing (the lossless check needs it), and stable
// JSON writes it as 0.
TEST(ParseJson, MinusZeroKeepsItsSignAndEncodesAsZero) {
  const Json v = parseJson(R"({"a":-0,"b":[-0,-0.0,-0e3,-0.5,0],"s":"run-0 -0","c":[1,-0]})");
  EXPECT_TRUE(v["a"].is_number_float() && std::signbit(v["a"].get<double>()));
  EXPECT_TRUE(std::signbit(v["b"][0].get<double>()));
  EXPECT_EQ(v["s"], "run-0 -0");
  EXPECT_TRUE(containsNegativeZero(v));
  EXPECT_FALSE(containsNegativeZero(parseJson(R"({"s":"-0","n":[0,-0.5,-1]})")));
  EXPECT_EQ(stableJson(v), R"({"a":0,"b":[0,0,0,-0.5,0],"c":[1,0],"s":"run-0 -0"})");
  EXPECT_EQ(errorCodeOf([] { parseJson("-01"); }), "invalid_json");
  EXPECT_EQ(errorCodeOf([] { parseJson("[-0"); }), "invalid_json");
}

TEST(ParseJson, AcceptsSurrogatePairsAndEmitsRawUtf8) {
  EXPECT_EQ(stableJson(parseJson(R"("\ud83d\ude00\u00e9\u2028")")),
            "\"\xF0\x9F\x98\x80\xC3\xA9\xE2\x80\xA8\"");
  EXPECT_EQ(stableJson(parseJson(R"("\/")")), R"("/")");
}

}  // namespace
}  // namespace crashsim

// An error message quoting damaged stored bytes must still fit a JSON error line: every byte
// outside a well-formed UTF-8 sequence prints as \xNN, well-formed text is kept as it is.
TEST(ErrorMessage, DamagedBytesPrintAsEscapesSoTheJsonErrorLineCanBeWritten) {
  const crashsim::Error e("store_corrupt",
                          "a\xff b \xc3\xa9 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf \xe2\x82");
  EXPECT_EQ(std::string(e.what()),
            "a\\xFF b \xc3\xa9 \\xED\\xA0\\x80 \\xF4\\x90\\x80\\x80 \\xC0\\xAF \\xE2\\x82");
  EXPECT_NO_THROW(crashsim::stableJson(crashsim::Json(e.what())));
  EXPECT_EQ(std::string(crashsim::Error("c", "\xf0\x9f\x98\x80 ok").what()), "\xf0\x9f\x98\x80 ok");
}
