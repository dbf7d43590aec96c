// crashsim/error.h — the one error type that crosses the runtime's public API.
//
// Contract: every failure the runtime reports to a caller is a crashsim::Error carrying a
// stable machine code (one of the constants in crashsim/codes.h, spelled once) and a
// human-readable message. Callers branch on code(), never on message text. `path` is the
// JSON path of the offending value for decode errors ("$.content.args"), empty otherwise.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace crashsim {

class Error : public std::runtime_error {
 public:
  Error(std::string_view code, const std::string& message, std::string path = {})
      : std::runtime_error(message), code_(code), path_(std::move(path)) {}

  const std::string& code() const noexcept { return code_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string code_;
  std::string path_;
};

}  // namespace crashsim
