// Internal: the `crashsim ledger` commands (used by cli.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace crashsim::harness {

// Each returns the process exit code and prints to stdout.
int ledgerResolve(const std::string& input, std::optional<uint64_t> expectedHighWater);
int ledgerArgsHash(const std::string& tool, const std::string& input);
int ledgerPrefixDigest(const std::string& input);

// The largest input a command reads (a ledger, args, a report): 64 MiB.
inline constexpr size_t kMaxInputBytes = 64u << 20;
// Reads FILE (a regular file), or stdin for "-" / empty. Throws Error(code::input_unreadable)
// for a directory, a missing or unreadable file, Error(code::input_too_large) past
// kMaxInputBytes.
std::string readInput(const std::string& file);

}  // namespace crashsim::harness
