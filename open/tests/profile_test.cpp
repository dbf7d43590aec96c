// The runtime profile loader (crashsim/open/profile.h): the published schema refuses unknown
// keys and bad values with one line and the stable code; placeholders are substituted.
#include "crashsim/open/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "crashsim/build_paths.h"
#include "crashsim/error.h"

namespace {

namespace fs = std::filesystem;
using crashsim::open::kProfileInvalid;
using nlohmann::json;

json validProfile() {
  return json::parse(R"({
    "profileVersion": 1, "name": "subject-py", "level": 0,
    "commands": {
      "run": {"argv": ["python3", "subject.py", "run", "--state", "{stateDir}/state.json"],
              "cwd": "bin", "env": {"MODEL_URL": "{modelUrl}", "TOOLS": "{toolServerJson}"}},
      "resume": {"argv": ["python3", "subject.py", "resume"]}
    },
    "model": {"api": "openai-chat-completions"},
    "tools": {"via": "mcp-stdio"},
    "state": {"paths": ["state"]},
    "limits": {"runSeconds": 30},
    "semantics": {"unknownOutcome": "park", "stopExitCodes": [3]}
  })");
}

// The error a profile gets, or "" when it loads.
std::string refusal(const json& profile) {
  try {
    crashsim::open::parseRuntimeProfile(profile, "/profiles", "p.json");
  } catch (const crashsim::Error& e) {
    EXPECT_EQ(e.code(), kProfileInvalid);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("p.json: ", 0), 0u) << e.what();
    return e.what();
  }
  return "";
}

TEST(RuntimeProfile, DecodesAValidProfile) {
  const auto p = crashsim::open::parseRuntimeProfile(validProfile(), "/profiles", "p.json");
  EXPECT_EQ(p.name, "subject-py");
  EXPECT_EQ(p.level, 0);
  EXPECT_EQ(p.run.argv.size(), 5u);
  EXPECT_EQ(p.run.cwd, fs::path("/profiles/bin"));
  EXPECT_EQ(p.resume.cwd, fs::path("/profiles"));
  EXPECT_EQ(p.run.env.at("MODEL_URL"), "{modelUrl}");
  EXPECT_EQ(p.toolsVia, "mcp-stdio");
  EXPECT_EQ(p.statePaths, std::vector<std::string>{"state"});
  EXPECT_EQ(p.runSeconds, 30);
  EXPECT_EQ(p.resumeSeconds, 60);  // the default
  EXPECT_EQ(p.stopExitCodes, std::vector<int>{3});
}

TEST(RuntimeProfile, RefusesUnknownKeysAtEveryLevel) {
  json top = validProfile();
  top["retries"] = 3;
  EXPECT_NE(refusal(top).find("retries"), std::string::npos) << refusal(top);
  json nested = validProfile();
  nested["commands"]["run"]["shell"] = true;
  EXPECT_NE(refusal(nested).find("shell"), std::string::npos) << refusal(nested);
  json semantics = validProfile();
  semantics["semantics"]["exactlyOnce"] = true;
  EXPECT_NE(refusal(semantics), "");
}

TEST(RuntimeProfile, RefusesBadValues) {
  json level = validProfile();
  level["level"] = 3;
  EXPECT_NE(refusal(level).find("$.level"), std::string::npos) << refusal(level);
  json via = validProfile();
  via["tools"]["via"] = "http";
  EXPECT_NE(refusal(via).find("$.tools.via"), std::string::npos) << refusal(via);
  json name = validProfile();
  name["name"] = "Has Spaces";
  EXPECT_NE(refusal(name).find("$.name"), std::string::npos) << refusal(name);
  json argv = validProfile();
  argv["commands"]["resume"]["argv"] = json::array();
  EXPECT_NE(refusal(argv).find("$.commands.resume.argv"), std::string::npos) << refusal(argv);
  json version = validProfile();
  version["profileVersion"] = 2;
  EXPECT_NE(refusal(version), "");
  json missing = validProfile();
  missing.erase("model");
  EXPECT_NE(refusal(missing).find("model"), std::string::npos) << refusal(missing);
  json statePath = validProfile();
  statePath["state"]["paths"] = json::array({"../outside"});
  EXPECT_NE(refusal(statePath), "");
  json level2 = validProfile();
  level2["level"] = 2;  // without commands.exportLedger
  EXPECT_NE(refusal(level2).find("exportLedger"), std::string::npos) << refusal(level2);
}

TEST(RuntimeProfile, RefusesAnUnknownPlaceholder) {
  json p = validProfile();
  p["commands"]["run"]["argv"][2] = "{workspaceDir}";
  EXPECT_NE(refusal(p).find("{workspaceDir}"), std::string::npos) << refusal(p);
  json env = validProfile();
  env["commands"]["run"]["env"]["X"] = "{modelURL}";
  EXPECT_NE(refusal(env).find("$.commands.run.env.X"), std::string::npos) << refusal(env);
}

TEST(RuntimeProfile, AFileThatIsNotJsonIsRefusedWithTheSameCode) {
  const fs::path file = fs::temp_directory_path() / "crashsim-open-profile-bad.json";
  std::ofstream(file) << "{\"name\": ";
  try {
    crashsim::open::loadRuntimeProfile(file);
    FAIL() << "loaded a truncated file";
  } catch (const crashsim::Error& e) {
    EXPECT_EQ(e.code(), kProfileInvalid);
  }
  fs::remove(file);
}

TEST(RuntimeProfile, SubstitutesEveryPlaceholderOnce) {
  crashsim::open::ProfileCommand command;
  command.argv = {"run", "--ws={workspace}", "{stateDir}/s.json", "{scenario}", "{toolServer}"};
  command.env = {{"URL", "{modelUrl}/chat"}, {"TOOLS", "{toolServerJson}"}};
  crashsim::open::CaseBindings b;
  b.workspace = "/case/ws";
  b.stateDir = "/case/state {scenario}";  // a value holding a placeholder is not substituted again
  b.scenario = "/s/w.json";
  b.modelUrl = "http://127.0.0.1:5/v1";
  b.toolServer = {"/bin/tool server", "--scenario", "it's"};
  const auto out = crashsim::open::substitute(command, b);
  EXPECT_EQ(out.argv,
            (std::vector<std::string>{"run", "--ws=/case/ws", "/case/state {scenario}/s.json",
                                      "/s/w.json", "'/bin/tool server' --scenario 'it'\\''s'"}));
  EXPECT_EQ(out.env.at("URL"), "http://127.0.0.1:5/v1/chat");
  EXPECT_EQ(out.env.at("TOOLS"), R"(["/bin/tool server","--scenario","it's"])");
}

TEST(RuntimeProfile, TheTestSubjectsProfileLoads) {
  const auto p = crashsim::open::loadRuntimeProfile(fs::path(CRASHSIM_SOURCE_DIR) /
                                                    "open/subject/runtime.json");
  EXPECT_EQ(p.name, "subject-py");
  EXPECT_EQ(p.toolsVia, "mcp-stdio");
}

}  // namespace
