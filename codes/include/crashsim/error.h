// crashsim/error.h — the one error type that crosses the runtime's public API.
//
// Contract: every failure the runtime reports to a caller is a crashsim::Error carrying a
// stable machine code (one of the constants in crashsim/codes.h, spelled once) and a
// human-readable message. Callers branch on code(), never on message text. `path` is the
// JSON path of the offending value for decode errors ("$.content.args"), empty otherwise.
// The message is always well-formed UTF-8 (every printer puts it in a JSON error line): a
// message that quotes damaged bytes (a flipped bit in a stored value) shows them as \xNN.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crashsim {

// `text` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF) written as the four characters \xNN.
inline std::string printableUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    size_t len = b < 0x80                 ? 1
                 : b >= 0xC2 && b <= 0xDF ? 2
                 : b >= 0xE0 && b <= 0xEF ? 3
                 : b >= 0xF0 && b <= 0xF4 ? 4
                                          : 0;
    if (len > 1) {
      if (i + len > text.size()) len = 0;
      for (size_t k = 1; len != 0 && k < len; ++k)
        if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) len = 0;
      if (len != 0) {
        const auto b1 = static_cast<unsigned char>(text[i + 1]);
        if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 > 0x9F) || (b == 0xF0 && b1 < 0x90) ||
            (b == 0xF4 && b1 > 0x8F))
          len = 0;
      }
    }
    if (len == 0) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", b);
      out += hex;
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

class Error : public std::runtime_error {
 public:
  Error(std::string_view code, const std::string& message, std::string path = {})
      : std::runtime_error(printableUtf8(message)), code_(code), path_(std::move(path)) {}

  const std::string& code() const noexcept { return code_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string code_;
  std::string path_;
};

}  // namespace crashsim
