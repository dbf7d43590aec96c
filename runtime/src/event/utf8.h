// utf8.h — internal UTF-8 helpers of the event codec.
#pragma once

#include <cstdint>
#include <string_view>

namespace crashsim::detail {

// Decodes one UTF-8 sequence at s[i]; returns the code point and advances i, or returns -1
// (without advancing) on an invalid sequence: overlong, surrogate, > U+10FFFF, truncated.
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
  if (cp >= 0xD800 && cp <= 0xDFFF) return -1;
  i += static_cast<size_t>(len);
  return cp;
}

// True when s is well-formed UTF-8 (no lone surrogates can be represented).
inline bool isValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    if (decodeUtf8(s, i) < 0) return false;
  }
  return true;
}

}  // namespace crashsim::detail
