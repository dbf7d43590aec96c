// crashsim/scenario.h — scenario files (scenarios/*.json, format in scenarios/README.md).
//
// A scenario is data: the first user message, the workspace seed, the available tools and
// permission deny list, the scripted model turns, and the expected final workspace. The
// loader is strict: unknown keys, wrong types, empty ids, duplicate call ids, a non-final step
// without calls or a final step with calls → Error(code::scenario_invalid, "<file>: <reason>",
// JSON path such as "$.model[2].calls[0].id").
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/json.h"

namespace crashsim {

// One scripted tool call. `id` is the provider tool-call id (unique within the scenario).
struct ScriptedCall {
  std::string id;
  std::string name;
  Json args = Json::object();
};

// One scripted provider step: optional assistant text and zero or more calls. Every step but
// the last has at least one call; the last step has none and carries the final answer.
struct ScriptedStep {
  std::optional<std::string> text;
  std::vector<ScriptedCall> calls;
};

struct ScenarioExpectation {
  std::map<std::string, std::string> files;  // relative path → exact content
  std::vector<std::string> absent;           // relative paths that must not exist
  std::optional<size_t> toolCalls;           // number of function calls of a full run
  std::vector<std::string> errorCalls;       // call ids whose response is isError:true
};

struct Scenario {
  std::string id;
  std::string description;
  std::string user;                          // first user message
  std::map<std::string, std::string> files;  // workspace seed: relative path → content
  std::vector<std::string> tools;            // available tool names
  std::vector<std::string> deny;             // permissions.deny
  std::vector<ScriptedStep> model;
  ScenarioExpectation expect;
  std::filesystem::path source;  // file it was loaded from (empty when parsed from JSON)

  // Total number of scripted function calls.
  size_t callCount() const;
};

// Parses and validates a scenario object. `source` names it in error messages.
Scenario parseScenario(const Json& value, const std::string& source = "<scenario>");
// Loads one file (must be strict JSON). I/O failures are scenario_invalid as well.
Scenario loadScenario(const std::filesystem::path& file);
// Loads every *.json file of a directory, sorted by scenario id.
std::vector<Scenario> loadScenarioDirectory(const std::filesystem::path& dir);

// Writes the seed files into `workspace` (creating parent directories). Refuses paths that
// escape the workspace. Existing files are overwritten.
void seedWorkspace(const Scenario& scenario, const std::filesystem::path& workspace);

// Compares the workspace with expect.files / expect.absent; returns one line per mismatch
// (empty = matches).
std::vector<std::string> checkExpectedWorkspace(const Scenario& scenario,
                                                const std::filesystem::path& workspace);

}  // namespace crashsim
