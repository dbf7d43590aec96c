// crashsim/open/profile.h — the runtime profile of the open harness (protocol section 3,
// docs/open-harness.md): how crashsim starts a runtime it did not build.
//
// The profile is a JSON file validated against reports/runtime-profile.schema.json (compiled
// in): unknown keys, wrong types and bad values are refused with one crashsim::Error whose code
// is kProfileInvalid and whose message is one line "<file>: <json path>: <reason>". Argv
// elements and env values may hold the placeholders {workspace}, {stateDir}, {scenario},
// {modelUrl}, {toolServer} and {toolServerJson}; any other "{name}" is refused at load time, so a
// typo never reaches a runtime as literal text.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crashsim::open {

// The stable code of every profile error (crashsim::Error::code()).
inline constexpr std::string_view kProfileInvalid = "runtime_profile_invalid";

// One command of the runtime (run, resume, exportLedger): argv with placeholders, the working
// directory (absolute: the profile's directory joined with the profile's "cwd"), extra env.
struct ProfileCommand {
  std::vector<std::string> argv;
  std::filesystem::path cwd;
  std::map<std::string, std::string> env;
};

struct RuntimeProfile {
  std::string name;
  std::string description;
  int level = 0;
  ProfileCommand run, resume;
  std::optional<ProfileCommand> exportLedger;
  std::string modelApi;                 // "openai-chat-completions"
  std::string toolsVia;                 // "mcp-stdio" | "subprocess"
  std::vector<std::string> statePaths;  // relative to the case directory
  int runSeconds = 60, resumeSeconds = 60;
  std::string unknownOutcome = "park";  // "park" | "at-least-once"
  std::vector<int> stopExitCodes;       // resume exit statuses that declare an allowed stop
  std::filesystem::path source;         // the profile file (empty when parsed from JSON)
};

// The published schema (reports/runtime-profile.schema.json), as compiled into the library.
const nlohmann::json& runtimeProfileSchema();

// Validates and decodes a profile object. `baseDir` resolves the commands' cwd; `source` names
// the profile in error messages. Throws Error(kProfileInvalid) on the first problem.
RuntimeProfile parseRuntimeProfile(const nlohmann::json& value,
                                   const std::filesystem::path& baseDir,
                                   const std::string& source = "<profile>");
// Reads a profile file (strict JSON, at most 1 MiB); commands' cwd is relative to its directory.
// Unreadable or malformed files are Error(kProfileInvalid) as well.
RuntimeProfile loadRuntimeProfile(const std::filesystem::path& file);

// The values crashsim substitutes into a command for one case.
struct CaseBindings {
  std::filesystem::path workspace, stateDir, scenario;
  std::string modelUrl;                 // e.g. http://127.0.0.1:40123/v1
  std::vector<std::string> toolServer;  // the tool server's argv
};

// A command with every placeholder replaced: argv, cwd and the extra env (the caller merges it
// over its own environment).
ProfileCommand substitute(const ProfileCommand& command, const CaseBindings& bindings);

// `argv` as one POSIX shell command line (each word single-quoted where needed).
std::string shellJoin(const std::vector<std::string>& argv);

}  // namespace crashsim::open
