// stable_match.cpp — the lossless check's parse step without building a second JSON tree from
// text (spec a.6, f.3): a strict matcher walks the stable JSON bytes against a copy of the value
// they were encoded from and turns that copy into exactly what parseJson(text) would return.
//
// Why this is the same check: parseJson(text) yields a tree whose structure, keys and strings
// come from the text's tokens and whose numbers come from its number tokens. The matcher accepts
// only when every token of the text is where the value has the same node — same kind, same key
// set (each key once, in stable order), strings byte-equal after JSON unescaping under the
// parser's rules (no raw control characters, well-formed UTF-8, \u escapes with paired
// surrogates only) — and the text ends with the value. Each number node is then replaced by
// the parser's value for its token: nlohmann's own parse of the token, except for plain integer
// tokens of up to 18 digits, whose type the lexer fixes (unsigned, or signed with a minus) and
// whose value cannot overflow; so number typing and rounding are the parser's, not ours.
// Anything else — including texts parseJson would accept but stableJson never produces
// (whitespace, unsorted or duplicate keys) — is rejected: a refusal, never a weaker check.
#include <cstdint>
#include <cstring>

#include "crashsim/codes.h"
#include "event/utf8.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

namespace {

[[noreturn]] void mismatch(size_t at, const char* what) {
  throw Error(code::not_losslessly_serializable,
              std::string("stable JSON does not parse back to the value at byte ") +
                  std::to_string(at) + ": " + what);
}

class Matcher {
 public:
  explicit Matcher(std::string_view text) : s_(text) {}

  void value(Json& v) {
    if (i_ >= s_.size()) mismatch(i_, "unexpected end of text");
    switch (v.type()) {
      case Json::value_t::null:
        literal("null");
        return;
      case Json::value_t::boolean:
        literal(v.get<bool>() ? "true" : "false");
        return;
      case Json::value_t::string:
        string(v.get_ref<const std::string&>());
        return;
      case Json::value_t::number_integer:
      case Json::value_t::number_unsigned:
      case Json::value_t::number_float:
        number(v);
        return;
      case Json::value_t::array:
        array(v);
        return;
      case Json::value_t::object:
        object(v);
        return;
      case Json::value_t::binary:
      case Json::value_t::discarded:
        break;
    }
    mismatch(i_, "value is not a strict JSON value");
  }

  void end() const {
    if (i_ != s_.size()) mismatch(i_, "trailing text after the value");
  }

 private:
  void expect(char c) {
    if (i_ >= s_.size() || s_[i_] != c) mismatch(i_, "unexpected character");
    ++i_;
  }

  void literal(std::string_view lit) {
    if (s_.substr(i_, lit.size()) != lit) mismatch(i_, "literal differs");
    i_ += lit.size();
  }

  // A number token is the maximal run of number characters; the full parser accepts the text
  // here only if that whole run is one valid number (anything after a number must be a
  // delimiter), so parsing the run alone gives the parser's value.
  void number(Json& v) {
    const size_t start = i_;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
        ++i_;
      } else {
        break;
      }
    }
    if (i_ == start) mismatch(start, "expected a number");
    if (smallInteger(s_.substr(start, i_ - start), v)) return;
    Json parsed = Json::parse(s_.data() + start, s_.data() + i_, nullptr,
                              /*allow_exceptions=*/false, /*ignore_comments=*/false);
    if (!parsed.is_number()) mismatch(start, "invalid number");
    v = std::move(parsed);
  }

  uint64_t load8(size_t at) const {
    uint64_t x;
    std::memcpy(&x, s_.data() + at, sizeof x);
    return x;
  }

  // True when any byte of x is '"', '\\', below 0x20 or at least 0x80 (exact for "none").
  static bool needsCheck(uint64_t x) {
    constexpr uint64_t kOnes = 0x0101010101010101ull;
    constexpr uint64_t kHigh = 0x8080808080808080ull;
    auto hasZero = [](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    return ((x & kHigh) | ((x - kOnes * 0x20) & ~x & kHigh) | hasZero(x ^ (kOnes * '"')) |
            hasZero(x ^ (kOnes * '\\'))) != 0;
  }

  // The parser's value for a canonical integer token of at most 18 digits (no leading zero):
  // number_unsigned, or number_integer with a minus sign, as nlohmann's lexer gives them (they
  // cannot overflow). Other tokens are left to the parser itself.
  static bool smallInteger(std::string_view tok, Json& v) {
    const bool negative = !tok.empty() && tok[0] == '-';
    const std::string_view digits = negative ? tok.substr(1) : tok;
    if (digits.empty() || digits.size() > 18 || (digits.size() > 1 && digits[0] == '0')) {
      return false;
    }
    uint64_t u = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      u = u * 10 + static_cast<uint64_t>(c - '0');
    }
    if (negative) {
      v = -static_cast<int64_t>(u);
    } else {
      v = u;
    }
    return true;
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  uint32_t hex4() {
    if (i_ + 4 > s_.size()) mismatch(i_, "truncated \\u escape");
    uint32_t u = 0;
    for (int k = 0; k < 4; ++k) {
      const int d = hexDigit(s_[i_ + static_cast<size_t>(k)]);
      if (d < 0) mismatch(i_, "invalid \\u escape");
      u = (u << 4) | static_cast<uint32_t>(d);
    }
    i_ += 4;
    return u;
  }

  static size_t appendUtf8(char* out, uint32_t cp) {
    if (cp < 0x80) {
      out[0] = static_cast<char>(cp);
      return 1;
    }
    if (cp < 0x800) {
      out[0] = static_cast<char>(0xC0 | (cp >> 6));
      out[1] = static_cast<char>(0x80 | (cp & 0x3F));
      return 2;
    }
    if (cp < 0x10000) {
      out[0] = static_cast<char>(0xE0 | (cp >> 12));
      out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out[2] = static_cast<char>(0x80 | (cp & 0x3F));
      return 3;
    }
    out[0] = static_cast<char>(0xF0 | (cp >> 18));
    out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<char>(0x80 | (cp & 0x3F));
    return 4;
  }

  // One escape sequence after the backslash, decoded into out; returns its byte length.
  size_t escape(char* out) {
    if (i_ >= s_.size()) mismatch(i_, "truncated escape");
    const char c = s_[i_++];
    switch (c) {
      case '"':
      case '\\':
      case '/':
        out[0] = c;
        return 1;
      case 'b':
        out[0] = '\b';
        return 1;
      case 'f':
        out[0] = '\f';
        return 1;
      case 'n':
        out[0] = '\n';
        return 1;
      case 'r':
        out[0] = '\r';
        return 1;
      case 't':
        out[0] = '\t';
        return 1;
      case 'u': {
        uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) mismatch(i_, "lone low surrogate escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') {
            mismatch(i_, "high surrogate escape without its low surrogate");
          }
          i_ += 2;
          const uint32_t lo = hex4();
          if (lo < 0xDC00 || lo > 0xDFFF) mismatch(i_, "high surrogate escape without its low");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        return appendUtf8(out, cp);
      }
      default:
        mismatch(i_ - 1, "invalid escape");
    }
  }

  // Decodes the string token at i_ and calls sink(bytes, escape) for each decoded piece, in
  // order: a run of the text itself (escape false) or one decoded escape (escape true, bytes
  // valid only during the call).
  template <class Sink>
  void stringToken(Sink&& sink) {
    expect('"');
    for (;;) {
      const size_t runStart = i_;
      for (;;) {
        // Eight plain ASCII bytes at a time; any quote, backslash, control or non-ASCII byte
        // (or a false positive) goes through the byte-wise checks below.
        while (i_ + 8 <= s_.size() && !needsCheck(load8(i_))) i_ += 8;
        if (i_ >= s_.size()) break;
        const auto c = static_cast<unsigned char>(s_[i_]);
        if (c >= 0x80) {
          if (detail::decodeUtf8(s_, i_) < 0) mismatch(i_, "string is not valid UTF-8");
          continue;
        }
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++i_;
      }
      if (i_ > runStart) sink(s_.substr(runStart, i_ - runStart), false);
      if (i_ >= s_.size()) mismatch(i_, "unterminated string");
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return;
      }
      if (c != '\\') mismatch(i_, "raw control character in string");
      ++i_;
      char buf[4];
      const size_t n = escape(buf);
      sink(std::string_view(buf, n), true);
    }
  }

  void string(const std::string& expected) {
    size_t at = 0;
    stringToken([&](std::string_view piece, bool) {
      if (expected.size() - at < piece.size() ||
          std::memcmp(expected.data() + at, piece.data(), piece.size()) != 0) {
        mismatch(i_, "string differs");
      }
      at += piece.size();
    });
    if (at != expected.size()) mismatch(i_, "string differs");
  }

  void array(Json& v) {
    expect('[');
    auto& arr = v.get_ref<Json::array_t&>();
    for (size_t k = 0; k < arr.size(); ++k) {
      if (k > 0) expect(',');
      value(arr[k]);
    }
    expect(']');
  }

  void object(Json& v) {
    expect('{');
    auto& obj = v.get_ref<Json::object_t&>();
    // A key is a view of the text when it has no escape, else of one of two buffers used in
    // turn (so the previous key stays valid for the order check).
    std::string buffers[2];
    std::string_view previous;
    for (size_t k = 0; k < obj.size(); ++k) {
      if (k > 0) expect(',');
      const size_t keyAt = i_;
      std::string& buf = buffers[k % 2];
      buf.clear();
      size_t pieces = 0;
      std::string_view first;
      bool copied = false;
      stringToken([&](std::string_view piece, bool escape) {
        if (pieces++ == 0 && !escape) {
          first = piece;  // a view of the text
          return;
        }
        if (!copied) buf.assign(first);  // escapes are decoded into a local of stringToken
        copied = true;
        buf.append(piece);
      });
      const std::string_view key = copied ? std::string_view(buf) : first;
      // Keys in strictly increasing stable order: each key once (a duplicate would make the
      // parser keep only the last one).
      if (k > 0 && !jsPropertyOrderLess(previous, key)) {
        mismatch(keyAt, "object keys are not in strictly increasing stable order");
      }
      auto it = obj.find(key);
      if (it == obj.end()) mismatch(keyAt, "object key differs");
      expect(':');
      value(it->second);
      previous = key;
    }
    expect('}');
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

void matchStableJson(std::string_view text, Json& value) {
  Matcher m(text);
  m.value(value);
  m.end();
}

}  // namespace crashsim::store_detail
