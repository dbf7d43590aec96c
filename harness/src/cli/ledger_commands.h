// Internal: the `crashsim ledger` commands (used by cli.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace crashsim::harness {

// One judged input: the output line (no newline) and the exit code a single call returns
// (0, or 2 with an {"error":{code,message,index}} line).
struct LedgerResult {
  std::string line;
  int exitCode = 0;
};

// `ledger resolve`: {"resolution", "plan"} of a RuntimeEvent list (JSON array or JSON lines).
LedgerResult resolveLedger(std::string_view input, std::optional<uint64_t> expectedHighWater);
// `ledger args-hash`: canonicalArgsHash (a.7) of strict JSON args.
LedgerResult argsHashOf(const std::string& tool, std::string_view input);
// `ledger args-hash --jsonl` without --tool: a line {"toolName": string, "args": value}.
LedgerResult argsHashOfToolAndArgs(std::string_view input);
// `ledger prefix-digest`: prefixDigest (e.7) of {identity, events}.
LedgerResult prefixDigestOf(std::string_view input);

// Prints the line; returns its exit code.
int printResult(const LedgerResult& result);

// `--jsonl`: FILE (or stdin) holds one input per line; prints judge(line).line for each line,
// in order, each judged independently (an invalid line prints its error object and the batch
// goes on). A final newline does not start another input. The input is read whole first, under
// readInput's rules (64 MiB, a regular file or stdin): nothing is judged or printed when it is
// refused. Returns 0 once every line is judged; throws readInput's errors.
int ledgerBatch(const std::string& file,
                const std::function<LedgerResult(std::string_view)>& judge);

// The largest input a command reads (a ledger, args, a report): 64 MiB.
inline constexpr size_t kMaxInputBytes = 64u << 20;
// Reads FILE (a regular file, checked before it is read: crashsim/bounded_input.h), or stdin for
// "-" / empty. Throws Error(code::input_unreadable) for a FIFO, a device, a directory, a missing
// or unreadable file, Error(code::input_too_large) past kMaxInputBytes.
std::string readInput(const std::string& file);

}  // namespace crashsim::harness
