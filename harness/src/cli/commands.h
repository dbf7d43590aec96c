// cli/commands.h — the commands of `crashsim` beside the sweep and the store and ledger tools
// (cli.cpp wires them to the command line). Each returns the process's exit code: 0 all holds, 1
// a contract violation, 2 a usage or environment error.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "crashsim/harness/durability.h"

namespace crashsim::harness {

// A usage error: exit 2 with its one-line message.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Creates --out (with its parents) and proves it writable, before any work starts; UsageError
// (output_unwritable) otherwise. Nothing for an empty `out`.
void prepareOut(const std::string& out);

// crashsim scenarios [--json]: the scenarios of `dir`.
int cmdScenarios(const std::filesystem::path& dir, bool json);
// crashsim run CASE [--keep DIR] [--synchronous S]: one case, verbose; `extra` is appended to its
// reproduce line (--scenarios).
int cmdRun(const std::string& caseText, const std::string& keep,
           const std::filesystem::path& scenarioDir, const std::string& extra,
           const std::string& synchronous);
// crashsim --version: crashsim's version and the agent it drives.
int printVersion();
// crashsim durability: the platform durability report into `out`.
int cmdDurability(DurabilityOptions opts, const std::string& out);
// crashsim report merge FILE… --out DIR: shard or platform reports into one.
int cmdMerge(const std::vector<std::string>& files, const std::string& out);

}  // namespace crashsim::harness
