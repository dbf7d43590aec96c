// utf8.h — internal UTF-8 helpers of the event codec.
#pragma once

#include <cstdint>
#include <string_view>

namespace crashsim::detail {

// Strings hold WTF-8: UTF-8, plus the 3-byte encoding of a LONE UTF-16 surrogate
// (U+D800..U+DFFF). JavaScript strings, and so RuntimeEvent strings (spec a.6), may hold lone
// surrogates; parseJson decodes an escaped one ("\ud800") to these three bytes, and stable JSON
// writes them back as the lower-case escape. A surrogate PAIR is always the 4-byte UTF-8 of its
// code point, never two 3-byte sequences (isWellFormedWtf8 rejects that).

inline bool isSurrogate(int32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Decodes one WTF-8 sequence at s[i]; returns the code point (a lone surrogate decodes to
// itself) and advances i, or returns -1 (without advancing) on an invalid sequence: overlong,
// > U+10FFFF, truncated.
inline int32_t decodeUtf8(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  int len;
  int32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return -1;
  }
  if (i + len > s.size()) return -1;
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b & 0x3F);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return -1;
  i += static_cast<size_t>(len);
  return cp;
}

// True when s is well-formed WTF-8: valid UTF-8 except that lone surrogates may appear, and
// a high surrogate is never directly followed by a low one (that pair has its own 4-byte
// encoding, so the 6-byte form would not survive a round trip through JSON text).
inline bool isWellFormedWtf8(std::string_view s) {
  size_t i = 0;
  bool afterHigh = false;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      afterHigh = false;
      continue;
    }
    const int32_t cp = decodeUtf8(s, i);
    if (cp < 0 || (afterHigh && cp >= 0xDC00 && cp <= 0xDFFF)) return false;
    afterHigh = cp >= 0xD800 && cp <= 0xDBFF;
  }
  return true;
}

}  // namespace crashsim::detail
