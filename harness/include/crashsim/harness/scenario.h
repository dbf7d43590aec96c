// crashsim/harness/scenario.h — the harness's view of a scenario file (scenarios/*.json).
//
// The file format and its strict loader belong to the runtime (crashsim/scenario.h); the
// harness reuses that parser and derives, from the data alone, what its oracle needs: the
// ordered list of tool calls and, for each, which failpoints its path through the runtime
// passes. Nothing here runs code under test: "refused" and "dispatched" follow from the
// scenario's tool list, deny list and expected error calls (scenarios/README.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "crashsim/scenario.h"

namespace crashsim::harness {

struct ScenarioCall {
  std::string id;          // provider tool call id (content.id of the function_call)
  std::string name;        // tool name
  size_t step = 0;         // index of the model step that issues it
  size_t indexInStep = 0;  // position among that step's calls
  // Preflight refuses it before T1 (tool not offered or denied by permission), or it is a
  // Write/Edit the scenario expects to fail (its file precondition fails in preflight).
  bool refused = false;
  bool expectError = false;  // listed in expect.errorCalls
  // Passes preflight: T1, implementation (P2–P6). Write/Edit also reach P3 (temp file written,
  // not yet renamed); Read and Bash have no partial-effect boundary.
  bool dispatched() const { return !refused; }
  bool writesFile() const { return dispatched() && (name == "Write" || name == "Edit"); }
};

struct Scenario {
  std::string id;
  std::string description;
  std::filesystem::path file;
  std::vector<std::string> tools;
  std::vector<ScenarioCall> calls;  // in model order
  size_t toolSteps = 0;             // model steps that issue calls (all but the final one)
  crashsim::Scenario spec;          // the parsed file (runtime loader, strict)
};

// Loads and checks a scenario file. Throws std::runtime_error with a one-line reason.
Scenario loadScenario(const std::filesystem::path& file);

// Every *.json in dir, sorted by scenario id. Throws std::runtime_error on a bad file.
std::vector<Scenario> loadScenarioDir(const std::filesystem::path& dir);

// $CRASHSIM_SCENARIOS, else <CRASHSIM_SOURCE_DIR>/scenarios.
std::filesystem::path defaultScenarioDir();

}  // namespace crashsim::harness
