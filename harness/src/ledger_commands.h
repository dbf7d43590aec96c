// Internal: the `crashsim ledger`, `inspect` and `resume` commands (used by cli.cpp).
#pragma once

#include <optional>
#include <string>

namespace crashsim::harness {

// Each returns the process exit code and prints to stdout.
int ledgerResolve(const std::string& input, std::optional<uint64_t> expectedHighWater);
int ledgerArgsHash(const std::string& tool, const std::string& input);
int ledgerPrefixDigest(const std::string& input);
int inspectStore(const std::string& storeDir, bool json);
int resumeStore(const std::string& storeDir);

// Reads FILE, or stdin for "-" / empty. Throws std::runtime_error when unreadable.
std::string readInput(const std::string& file);

}  // namespace crashsim::harness
