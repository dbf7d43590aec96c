// Internal: the `crashsim ledger` commands (used by cli.cpp).
#pragma once

#include <optional>
#include <string>

namespace crashsim::harness {

// Each returns the process exit code and prints to stdout.
int ledgerResolve(const std::string& input, std::optional<uint64_t> expectedHighWater);
int ledgerArgsHash(const std::string& tool, const std::string& input);
int ledgerPrefixDigest(const std::string& input);

// Reads FILE, or stdin for "-" / empty. Throws std::runtime_error when unreadable.
std::string readInput(const std::string& file);

}  // namespace crashsim::harness
