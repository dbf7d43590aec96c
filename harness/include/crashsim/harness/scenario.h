// crashsim/harness/scenario.h — scenario files (scenarios/*.json) as the harness reads them.
//
// A scenario is data: the user message, the workspace seed, the tools offered, the denied
// tools, the scripted model steps (each step: text and/or tool calls) and the expectations
// of a complete run. The harness reads only what it needs for case planning and the oracle:
// the ordered list of tool calls and, for each, whether preflight refuses it (tool not offered
// or denied by permission), which needs no code under test.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crashsim::harness {

struct ScenarioCall {
  std::string id;    // provider tool call id (content.id of the function_call)
  std::string name;  // tool name
  nlohmann::json args;
  size_t step = 0;         // index of the model step that issues it
  size_t indexInStep = 0;  // position among that step's calls
  bool refused = false;    // preflight refuses it: tool not offered or denied
};

struct Scenario {
  std::string id;
  std::string description;
  std::filesystem::path file;
  std::vector<std::string> tools;
  std::vector<std::string> deny;
  std::vector<ScenarioCall> calls;  // in model order
  nlohmann::json json;              // the whole file
};

// Loads and checks a scenario file. Throws std::runtime_error with a one-line reason.
Scenario loadScenario(const std::filesystem::path& file);

// Every *.json in dir, sorted by scenario id. Throws std::runtime_error on a bad file.
std::vector<Scenario> loadScenarioDir(const std::filesystem::path& dir);

// $CRASHSIM_SCENARIOS, else <CRASHSIM_SOURCE_DIR>/scenarios.
std::filesystem::path defaultScenarioDir();

}  // namespace crashsim::harness
