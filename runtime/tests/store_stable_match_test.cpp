// The lossless check's parse step (store/stable_match.cpp): matching stable JSON bytes against
// a copy of their value must give exactly parseJson(bytes), and refuse any text that does not
// parse back to the value's structure, keys and strings.
#include <cstdint>
#include <cstring>
#include <limits>

#include "store/store_internal.h"
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

// Equality that also compares number representations (nlohmann's == compares numbers by value
// across integer/unsigned/float).
bool strictEqual(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Json::value_t::number_integer:
      return a.get<int64_t>() == b.get<int64_t>();
    case Json::value_t::number_unsigned:
      return a.get<uint64_t>() == b.get<uint64_t>();
    case Json::value_t::number_float: {
      const double x = a.get<double>(), y = b.get<double>();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case Json::value_t::array: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i) {
        if (!strictEqual(a[i], b[i])) return false;
      }
      return true;
    }
    case Json::value_t::object: {
      if (a.size() != b.size()) return false;
      for (auto it = a.begin(); it != a.end(); ++it) {
        auto jt = b.find(it.key());
        if (jt == b.end() || !strictEqual(*it, *jt)) return false;
      }
      return true;
    }
    default:
      return a == b;
  }
}

// Matches `text` against a copy of `value`; returns the copy (throws like the matcher).
Json matched(std::string_view text, const Json& value) {
  Json copy = value;
  store_detail::matchStableJson(text, copy);
  return copy;
}

void expectRefused(std::string_view text, const Json& value) {
  expectCode([&] { matched(text, value); }, code::not_losslessly_serializable);
}

TEST(StableMatch, MatchingStableJsonGivesExactlyTheParse) {
  const std::vector<Json> values = {
      Json(nullptr),
      Json(true),
      Json(false),
      Json(""),
      Json("plain"),
      Json("quote \" backslash \\ slash / tab \t nl \n cr \r bs \b ff \f nul " +
           std::string(1, '\0') + " ctl \x01\x1f del \x7f"),
      Json("utf8 \xc3\xa9 \xe2\x80\xa8 \xef\xbf\xbf \xf0\x9f\x98\x80"),
      Json(0),
      Json(-1),
      Json(42u),
      Json(int64_t{9007199254740992}),
      Json(int64_t{9007199254740993}),  // not a double: prints as 2^53
      Json(std::numeric_limits<uint64_t>::max()),
      Json(std::numeric_limits<int64_t>::min()),
      Json(1.5),
      Json(-0.0),
      Json(3.0),
      Json(1e21),
      Json(1e-7),
      Json(123456789012345680000.0),
      Json(0.1),
      Json::array(),
      Json::object(),
      Json::array({1, "a", Json::array({Json::object()}), nullptr, 2.5}),
      Json{{"b", 1}, {"a", Json{{"10", 1}, {"9", 2}, {"x", Json::array()}}}, {"", "empty"}},
      Json{{"\xef\xbf\xbf", 1}, {"\xf0\x9f\x98\x80", 2}, {"k\"ey", 3}, {"\n", 4}},
      Json{{"\n", 1}, {"a\nb", 2}, {"\nab", 3}, {"ab\n", 4}, {"\"q", 5}, {"\\", 6}, {"\t\t", 7}},
  };
  for (const Json& v : values) {
    const std::string text = stableJson(v);
    const Json expect = parseJson(text);
    const Json got = matched(text, v);
    EXPECT_TRUE(strictEqual(got, expect)) << text;
  }
}

TEST(StableMatch, NumbersBecomeTheParsersValues) {
  // 2^53 + 1 has no double: the bytes say 2^53 and the parse is an unsigned 2^53, which is
  // not the value the bytes were made from.
  Json v = Json::object({{"n", int64_t{9007199254740993}}});
  Json got = matched(stableJson(v), v);
  ASSERT_TRUE(got["n"].is_number_unsigned());
  EXPECT_EQ(got["n"].get<uint64_t>(), 9007199254740992u);
  // A float that is an integer parses as an integer.
  Json f = Json::object({{"n", 3.0}});
  Json gotF = matched(stableJson(f), f);
  EXPECT_TRUE(gotF["n"].is_number_unsigned());
}

TEST(StableMatch, RefusesTextsThatDoNotParseBackToTheValue) {
  const Json obj = Json{{"a", "x"}, {"b", 1}};
  expectRefused(R"({"a":"y","b":1})", obj);         // string differs
  expectRefused(R"({"a":"xx","b":1})", obj);        // string longer
  expectRefused(R"({"a":"","b":1})", obj);          // string shorter
  expectRefused(R"({"a":"x"})", obj);               // key missing
  expectRefused(R"({"a":"x","b":1,"c":2})", obj);   // extra key
  expectRefused(R"({"a":"x","c":1})", obj);         // other key
  expectRefused(R"({"b":1,"a":"x"})", obj);         // not in stable order
  expectRefused(R"({"a":"x","a":"x"})", obj);       // duplicate key
  expectRefused(R"({"\u0061":"x","a":"x"})", obj);  // duplicate key, escaped
  EXPECT_EQ(matched(R"({"\u0061":"x","b":1})", obj), obj);
  expectRefused(R"({"a": "x","b":1})", obj);          // whitespace
  expectRefused(R"({"a":"x","b":1} )", obj);          // trailing whitespace
  expectRefused(R"({"a":"x","b":1}x)", obj);          // trailing text
  expectRefused(R"({"a":"x","b":1)", obj);            // truncated
  expectRefused(R"({"a":"x","b":true})", obj);        // kind differs
  expectRefused(R"({"a":"x","b":"1"})", obj);         // kind differs
  expectRefused(R"({"a":"x","b":01})", obj);          // invalid number
  expectRefused(R"({"a":"x","b":1.})", obj);          // invalid number
  expectRefused(R"({"a":"x","b":1-1})", obj);         // not one number
  expectRefused(R"({"a":"\x","b":1})", obj);          // invalid escape
  expectRefused(R"([1,2])", Json::array({1, 2, 3}));  // array shorter
  expectRefused(R"([1,2,3,4])", Json::array({1, 2, 3}));
  expectRefused("null", Json(false));
  expectRefused("{}", Json::array());
  expectRefused("", Json(nullptr));
  // Escapes the parser refuses, even when they spell the value's bytes.
  expectRefused(R"("\ud800")", Json("\xed\xa0\x80"));
  expectRefused(R"("\udc00")", Json("\xed\xb0\x80"));
  expectRefused(R"("\ud83d")", Json("\xf0\x9f"));
  // Raw control characters and invalid UTF-8 in the text, equal to the value's bytes.
  expectRefused("\"a\x01\"", Json("a\x01"));
  expectRefused("\"a\n\"", Json("a\n"));
  expectRefused("\"\xed\xa0\x80\"", Json("\xed\xa0\x80"));
  expectRefused("\"\xc3\"", Json("\xc3"));
  // Escapes the parser accepts decode to the value's bytes.
  EXPECT_EQ(matched(R"("\ud83d\ude00\u00e9\/")", Json("\xf0\x9f\x98\x80\xc3\xa9/")),
            Json("\xf0\x9f\x98\x80\xc3\xa9/"));
}

TEST(StableMatch, EveryByteOfALongStringIsChecked) {
  // Long strings are scanned eight bytes at a time: put each kind of byte at every offset.
  const std::vector<std::string> specials = {
      "\"", "\\", "\n", std::string(1, '\0'), "\x1f", "\x7f", "\xc3\xa9", "\xf0\x9f\x98\x80", "a"};
  for (size_t pos = 0; pos < 20; ++pos) {
    for (const std::string& special : specials) {
      std::string str(24, 'x');
      str.replace(pos, 1, special);
      const std::string text = stableJson(Json(str));
      EXPECT_TRUE(strictEqual(matched(text, Json(str)), parseJson(text))) << text;
      std::string other = str;
      other[pos] = other[pos] == 'y' ? 'z' : 'y';
      expectRefused(text, Json(other));
    }
    // Bytes the parser refuses inside a string, at every offset of the raw text.
    for (const std::string& bad : {std::string(1, '\x01'), std::string("\x1f"), std::string("\xff"),
                                   std::string("\xed\xa0\x80"), std::string("\xc3")}) {
      std::string str(24, 'x');
      str.replace(pos, 1, bad);
      expectRefused("\"" + str + "\"", Json(str));
    }
  }
}

TEST(StableMatch, WriterRefusesANumberThatDoesNotRoundTrip) {
  TempDir dir;
  auto store = RuntimeStore::open(dir.path);
  Ident id;
  store->append(userEvent(id));
  const std::string before = store->ledgerHash();
  RuntimeEvent e = textEvent(id, "text-big-ts", 1300);
  e.json["ts"] = int64_t{9007199254740993};  // the bytes can only say 2^53
  expectCode([&] { store->append(e); }, code::not_losslessly_serializable);
  EXPECT_EQ(store->ledgerHash(), before);
}

}  // namespace
