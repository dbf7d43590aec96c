// Scenario loader: every shipped scenario loads; malformed files → scenario_invalid with a path.
// Scripted model: next step decided from the replayed history.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/scenario.h"
#include "store_test_util.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kScenarioDir;

Json minimal() {
  return Json::parse(R"({
    "id": "mini", "user": "hi",
    "model": [{"calls": [{"id": "c1", "name": "Bash", "args": {"command": "true"}}]},
              {"text": "done"}],
    "expect": {}
  })");
}

std::pair<std::string, std::string> errorOf(const Json& j) {
  try {
    parseScenario(j, "test.json");
  } catch (const Error& e) {
    return {e.code(), e.path()};
  }
  return {"<no error>", ""};
}

RuntimeEvent ev(const Json& content, const std::string& id, const char* role, const char* author) {
  return decodeRuntimeEvent(Json{{"id", id},
                                 {"invocationId", "i"},
                                 {"sessionId", "s"},
                                 {"runId", "r"},
                                 {"turnId", "t"},
                                 {"ts", 1},
                                 {"partial", false},
                                 {"role", role},
                                 {"author", author},
                                 {"content", content}});
}
RuntimeEvent callEv(const std::string& callId) {
  return ev(
      Json{{"kind", "function_call"}, {"id", callId}, {"name", "Write"}, {"args", Json::object()}},
      callId + "_call", "model", "agent");
}
RuntimeEvent responseEv(const std::string& callId) {
  return ev(Json{{"kind", "function_response"}, {"id", callId}, {"name", "Write"}, {"result", 1}},
            callId + "_response", "tool", "tool");
}

}  // namespace

TEST(ScenarioLoader, AllShippedScenariosLoadWithExpectations) {
  const auto all = loadScenarioDirectory(kScenarioDir);
  std::set<std::string> ids;
  for (const auto& s : all) ids.insert(s.id);
  for (const char* required :
       {"write-config-port", "edit-two-files", "bash-touch-marker", "permission-denied",
        "tool-error", "parallel-calls", "read-then-write", "long-run"}) {
    EXPECT_TRUE(ids.count(required)) << required;
  }
  for (const auto& s : all) {
    EXPECT_TRUE(s.expect.toolCalls.has_value()) << s.id;
    EXPECT_FALSE(s.expect.files.empty()) << s.id;
    EXPECT_EQ(s.source.stem().string(), s.id);
  }
  const auto longRun = loadScenario(kScenarioDir / "long-run.json");
  EXPECT_EQ(longRun.callCount(), 20u);
  const auto parallel = loadScenario(kScenarioDir / "parallel-calls.json");
  EXPECT_EQ(parallel.model.front().calls.size(), 3u);
}

TEST(ScenarioLoader, MinimalScenarioParsesWithDefaultTools) {
  const Scenario s = parseScenario(minimal());
  EXPECT_EQ(s.id, "mini");
  EXPECT_EQ(s.tools, (std::vector<std::string>{"Read", "Write", "Edit", "Bash"}));
  EXPECT_EQ(s.callCount(), 1u);
}

TEST(ScenarioLoader, MalformedScenariosAreScenarioInvalidWithPath) {
  struct Case {
    const char* name;
    std::function<void(Json&)> mutate;
    const char* path;
  };
  const std::vector<Case> cases = {
      {"unknown top key", [](Json& j) { j["extra"] = 1; }, "$.extra"},
      {"missing user", [](Json& j) { j.erase("user"); }, "$"},
      {"id type", [](Json& j) { j["id"] = 3; }, "$.id"},
      {"id charset", [](Json& j) { j["id"] = "Bad Id"; }, "$.id"},
      {"empty model", [](Json& j) { j["model"] = Json::array(); }, "$.model"},
      {"final has calls",
       [](Json& j) {
         // A fresh call id, so that only the final-step rule is violated.
         j["model"][1]["calls"] =
             Json::array({{{"id", "c2"}, {"name", "Bash"}, {"args", {{"command", "true"}}}}});
       },
       "$.model[1]"},
      {"middle without calls",
       [](Json& j) {
         j["model"].insert(j["model"].begin(), Json{{"text", "x"}});
       },
       "$.model[0]"},
      {"call args not object", [](Json& j) { j["model"][0]["calls"][0]["args"] = "x"; },
       "$.model[0].calls[0].args"},
      {"empty call id", [](Json& j) { j["model"][0]["calls"][0]["id"] = ""; },
       "$.model[0].calls[0].id"},
      {"duplicate call id",
       [](Json& j) { j["model"][0]["calls"].push_back(j["model"][0]["calls"][0]); },
       "$.model[0].calls[1].id"},
      {"seed escapes",
       [](Json& j) {
         j["workspace"] = Json{{"files", Json{{"../x", "y"}}}};
       },
       "$.workspace.files.../x"},
      {"toolCalls mismatch", [](Json& j) { j["expect"]["toolCalls"] = 5; }, "$.expect.toolCalls"},
      {"errorCalls unknown", [](Json& j) { j["expect"]["errorCalls"] = Json::array({"zz"}); },
       "$.expect.errorCalls[0]"},
      {"deny not array",
       [](Json& j) {
         j["permissions"] = Json{{"deny", "Bash"}};
       },
       "$.permissions.deny"},
  };
  for (const auto& c : cases) {
    Json j = minimal();
    c.mutate(j);
    const auto [code, path] = errorOf(j);
    EXPECT_EQ(code, "scenario_invalid") << c.name;
    EXPECT_EQ(path, c.path) << c.name;
  }
}

TEST(ScenarioLoader, NonJsonFileIsScenarioInvalidNamingTheFile) {
  const fs::path p =
      fs::temp_directory_path() / ("crashsim-bad-scenario-" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream out(p);
    out << "{ not json";
  }
  try {
    loadScenario(p);
    FAIL() << "expected scenario_invalid";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "scenario_invalid");
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos);
  }
  fs::remove(p);
  EXPECT_THROW(loadScenario(p), Error);
}

// #22: the loader accepted tools nothing implements, args outside the closed tool schemas, keys
// given twice, files not named <id>.json and JSON deep enough to crash the agent.
TEST(ScenarioLoader, UnknownToolsAndArgsOutsideTheSchemaAreRefused) {
  Json j = minimal();
  j["tools"] = Json::array({"Bash", "Fly"});
  EXPECT_EQ(errorOf(j), std::make_pair(std::string("scenario_invalid"), std::string("$.tools[1]")));
  j = minimal();
  j["tools"] = Json::array({"Bash", "Bash"});
  EXPECT_EQ(errorOf(j).second, "$.tools[1]");
  j = minimal();
  j["model"][0]["calls"][0]["name"] = "Fly";
  EXPECT_EQ(errorOf(j).second, "$.model[0].calls[0].name");
  j = minimal();
  j["model"][0]["calls"][0]["args"] = Json{{"command", "true"}, {"shell", "zsh"}};
  EXPECT_EQ(errorOf(j).second, "$.model[0].calls[0].args");
  j = minimal();
  j["model"][0]["calls"][0]["args"] = Json{{"command", Json::array({"true"})}};
  EXPECT_EQ(errorOf(j).second, "$.model[0].calls[0].args");
}

TEST(ScenarioLoader, FilesWithDuplicateKeysWrongNamesOrDeepJsonAreRefused) {
  const fs::path dir =
      fs::temp_directory_path() / ("crashsim-scenario-dir-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << text;
  };
  auto loadCode = [&](const fs::path& p) {
    try {
      fs::is_directory(p) ? (void)loadScenarioDirectory(p) : (void)loadScenario(p);
    } catch (const Error& e) {
      return e.code();
    }
    return std::string("accepted");
  };
  write("mini.json", minimal().dump());
  EXPECT_EQ(loadCode(dir), "accepted");
  write("other.json", minimal().dump());  // id mini in other.json
  EXPECT_EQ(loadCode(dir), "scenario_invalid");
  fs::remove(dir / "other.json");
  std::string dup = minimal().dump();
  dup.insert(1, R"("user":"first",)");
  write("mini.json", dup);
  EXPECT_EQ(loadCode(dir / "mini.json"), "scenario_invalid");
  Json deep = minimal();
  std::string text = deep.dump();
  text.insert(text.size() - 1,
              ",\"description\":" + std::string(100000, '[') + std::string(100000, ']'));
  write("mini.json", text);
  EXPECT_EQ(loadCode(dir / "mini.json"), "json_too_deep");
  fs::remove_all(dir);
}

// Issue #45 (7, 3): a FIFO named like a scenario is refused at once (the loader never waits for
// a writer), and an escaped lone surrogate is scenario_invalid naming the file and the JSON path
// (one parse: no parser exception escapes the loader).
TEST(ScenarioLoader, AFifoOrALoneSurrogateIsScenarioInvalidNamingTheFile) {
  const fs::path dir =
      fs::temp_directory_path() / ("crashsim-scenario-hostile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path pipe = dir / "mini.json";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  for (const fs::path& p : {pipe, dir}) {
    try {
      fs::is_directory(p) ? (void)loadScenarioDirectory(p) : (void)loadScenario(p);
      ADD_FAILURE() << "a FIFO was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), "scenario_invalid");
      EXPECT_NE(std::string(e.what()).find(pipe.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("FIFO"), std::string::npos) << e.what();
    }
  }
  fs::remove(pipe);
  std::string text = minimal().dump();
  text.replace(text.find("\"hi\""), 4, R"("\ud800hi")");
  std::ofstream(dir / "mini.json", std::ios::binary) << text;
  try {
    loadScenario(dir / "mini.json");
    ADD_FAILURE() << "a lone surrogate was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "scenario_invalid");
    EXPECT_EQ(e.path(), "$.user");
    EXPECT_NE(std::string(e.what()).find((dir / "mini.json").string()), std::string::npos);
  }
  fs::remove_all(dir);
}

TEST(ScriptedModel, DecidesNextStepFromHistory) {
  const Scenario s = loadScenario(kScenarioDir / "parallel-calls.json");
  ScriptedModel model(s);
  std::vector<RuntimeEvent> history;
  ModelStep first = model.nextStep(history);
  ASSERT_EQ(first.calls.size(), 3u);
  EXPECT_EQ(first.scriptIndex, 0u);
  EXPECT_TRUE(first.text.has_value());
  // call-1 answered, call-2 committed but unanswered, call-3 trimmed (absent).
  history = {callEv("call-1"), responseEv("call-1"), callEv("call-2")};
  ModelStep partial = model.nextStep(history);
  ASSERT_EQ(partial.calls.size(), 2u);
  EXPECT_EQ(partial.calls[0].callId, "call-2");
  EXPECT_EQ(partial.calls[1].callId, "call-3");
  EXPECT_FALSE(partial.text.has_value()) << "the step's text was already issued";
  history.push_back(responseEv("call-2"));
  history.push_back(callEv("call-3"));
  history.push_back(responseEv("call-3"));
  ModelStep final = model.nextStep(history);
  EXPECT_TRUE(final.isFinal());
  EXPECT_EQ(final.text, s.model.back().text);
}

TEST(ScriptedModel, ReissuesTrimmedCallWithSameProviderId) {
  const Scenario s = loadScenario(kScenarioDir / "write-config-port.json");
  ScriptedModel model(s);
  // After a continuation the undispatched call-2 was trimmed from the replay.
  std::vector<RuntimeEvent> history = {callEv("call-1"), responseEv("call-1")};
  ModelStep step = model.nextStep(history);
  ASSERT_EQ(step.calls.size(), 1u);
  EXPECT_EQ(step.calls[0].callId, "call-2");
  EXPECT_EQ(step.calls[0].toolName, "Write");
}

// Workspace continuity f: an afterCrash may name the isolated restore's points P23..P26 (the
// drift before the recovery that restores), all of its list or none, and then parks
// workspace_drifted; the operation parks keep their three reconcile reasons.
TEST(ScenarioLoader, AfterCrashRestorePointsAreAllOrNoneAndParkDrifted) {
  const auto withAfterCrash = [](Json failpoints, const char* reason) {
    Json j = minimal();
    j["afterCrash"] =
        Json{{"failpoints", std::move(failpoints)},
             {"mutations", Json::array({{{"op", "write"}, {"path", "a.txt"}, {"content", "x\n"}}})},
             {"expect", {{"parkedReason", reason}}}};
    return j;
  };
  EXPECT_EQ(errorOf(withAfterCrash(Json::array({"P23", "P26"}), "workspace_drifted")).first,
            "<no error>");
  EXPECT_EQ(errorOf(withAfterCrash(Json::array({"P3"}), "reconcile_diverged")).first, "<no error>");
  const auto mixed = errorOf(withAfterCrash(Json::array({"P3", "P24"}), "workspace_drifted"));
  EXPECT_EQ(mixed, std::make_pair(std::string("scenario_invalid"),
                                  std::string("$.afterCrash.failpoints")));
  const auto wrongReason = errorOf(withAfterCrash(Json::array({"P25"}), "reconcile_diverged"));
  EXPECT_EQ(wrongReason, std::make_pair(std::string("scenario_invalid"),
                                        std::string("$.afterCrash.expect.parkedReason")));
  const auto driftedOp = errorOf(withAfterCrash(Json::array({"P3"}), "workspace_drifted"));
  EXPECT_EQ(driftedOp, std::make_pair(std::string("scenario_invalid"),
                                      std::string("$.afterCrash.expect.parkedReason")));
  EXPECT_EQ(errorOf(withAfterCrash(Json::array({"P27", "P29"}), "workspace_drifted")).first,
            "<no error>");
  EXPECT_EQ(errorOf(withAfterCrash(Json::array({"P27", "P26"}), "workspace_drifted")).second,
            "$.afterCrash.failpoints");
  EXPECT_EQ(errorOf(withAfterCrash(Json::array({"P28"}), "reconcile_diverged")).second,
            "$.afterCrash.expect.parkedReason");
  EXPECT_EQ(errorOf(withAfterCrash(Json::array({"P30"}), "workspace_drifted")).second,
            "$.afterCrash.failpoints[0]");
}

// Workspace continuity h.5: workspacePolicy.gcOrphanGraceMs (optional) is an integer 0..2^40;
// the recovery of such a scenario ends with the carrier GC.
TEST(ScenarioLoader, WorkspacePolicyGcOrphanGraceIsANonNegativeInteger) {
  const auto withGrace = [](Json grace) {
    Json j = minimal();
    j["workspace"] = {{"files", {{"a.txt", "hello\n"}}}, {"git", {{"tracked", {"a.txt"}}}}};
    j["workspacePolicy"] = {{"checkpointRequirement", "optional_legacy"},
                            {"gcOrphanGraceMs", std::move(grace)}};
    return j;
  };
  EXPECT_EQ(parseScenario(withGrace(0), "t.json").workspacePolicy.gcOrphanGraceMs, 0);
  EXPECT_EQ(parseScenario(withGrace(60000), "t.json").workspacePolicy.gcOrphanGraceMs, 60000);
  EXPECT_FALSE(parseScenario(minimal(), "t.json").workspacePolicy.gcOrphanGraceMs);
  for (Json bad : {Json(-1), Json("0"), Json(1.5), Json(uint64_t{1} << 41)})
    EXPECT_EQ(errorOf(withGrace(bad)),
              std::make_pair(std::string("scenario_invalid"),
                             std::string("$.workspacePolicy.gcOrphanGraceMs")))
        << bad.dump();
}

// Workspace continuity c.4 check 7 in a scenario: workspace.git.submodules.<path> = {files,
// edits?}. Each bad shape is scenario_invalid at its JSON path.
TEST(ScenarioLoader, GitSubmodulesAreValidated) {
  const auto withSubs = [](Json subs) {
    Json j = minimal();
    j["workspace"] = {{"files", {{"a.txt", "hello\n"}, {"dir/b.txt", "b\n"}}},
                      {"git", {{"tracked", {"a.txt"}}, {"submodules", std::move(subs)}}}};
    return j;
  };
  const Json files = {{"files", {{"lib.txt", "v1\n"}}}};
  const Scenario ok = parseScenario(withSubs({{"lib", files}}), "t.json");
  ASSERT_TRUE(ok.git);
  ASSERT_EQ(ok.git->submodules.count("lib"), 1u);
  EXPECT_EQ(ok.git->submodules.at("lib").files.at("lib.txt"), "v1\n");
  EXPECT_FALSE(ok.git->submodules.at("lib").dirty());
  const Json edited = {{"files", {{"lib.txt", "v1\n"}}}, {"edits", {{"lib.txt", "v2\n"}}}};
  EXPECT_TRUE(
      parseScenario(withSubs({{"lib", edited}}), "t.json").git->submodules.at("lib").dirty());
  const Json added = {{"files", {{"lib.txt", "v1\n"}}}, {"edits", {{"new.txt", "n\n"}}}};
  EXPECT_EQ(errorOf(withSubs({{"lib", added}})).first, "<no error>");
  const std::string at = "$.workspace.git.submodules";
  const std::pair<Json, std::string> bad[] = {
      {Json::array({"lib"}), at},                                   // not an object
      {{{"../lib", files}}, at + ".../lib"},                        // escapes
      {{{".git", files}}, at + "..git"},                            // the repository itself
      {{{"lib/.git", files}}, at + ".lib/.git"},                    // a .git component
      {{{"a.txt", files}}, at + ".a.txt"},                          // a seed file
      {{{"dir", files}}, at + ".dir"},                              // a seed file's directory
      {{{"a.txt/x", files}}, at + ".a.txt/x"},                      // below a seed file
      {{{"lib", files}, {"lib/inner", files}}, at + ".lib/inner"},  // inside a submodule
      {{{"lib", {{"edits", {{"x", "y"}}}}}}, at + ".lib"},          // no files
      {{{"lib", {{"files", Json::object()}}}}, at + ".lib.files"},  // empty files
      {{{"lib", {{"files", {{"x", "y"}}}, {"head", "x"}}}}, at + ".lib.head"},  // unknown key
      {{{"lib", {{"files", {{".git/config", "y"}}}}}}, at + ".lib.files..git/config"},
      {{{"lib", {{"files", {{"x", "y"}}}, {"edits", {{"x", "y"}}}}}}, at + ".lib.edits.x"},
      {{{"lib", {{"files", {{"x", "y"}}}, {"edits", {{"x/z", "y"}}}}}}, at + ".lib.edits.x/z"},
      {{{"lib", {{"files", {{"x", 1}}}}}}, at + ".lib.files.x"},  // not a string
  };
  for (const auto& [subs, path] : bad)
    EXPECT_EQ(errorOf(withSubs(subs)), std::make_pair(std::string("scenario_invalid"), path))
        << subs.dump();
  Json unknown = withSubs({{"lib", files}});
  unknown["workspace"]["git"]["modules"] = Json::object();
  EXPECT_EQ(errorOf(unknown).second, "$.workspace.git.modules");
}

// The seed of a submodule, seen with the real git CLI (never the code under test): the gitlink
// (160000) records the submodule's own HEAD; with edits `status --porcelain` in it is not empty,
// without them it is. The seed is the same commit each time (fixed identity and date).
TEST(ScenarioLoader, SeedWritesASubmoduleAsAGitlinkAndItsEdits) {
  const Scenario dirty = loadScenario(kScenarioDir / "git-workspace-dirty-submodule.json");
  ASSERT_TRUE(dirty.git && dirty.git->submodules.count("lib"));
  Scenario clean = dirty;
  clean.git->submodules.at("lib").edits.clear();
  testutil::TempDir box;
  const auto out = [](const std::string& command) {
    std::string text;
    FILE* p = ::popen(command.c_str(), "r");
    if (!p) return text;
    char buf[512];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) text.append(buf, n);
    ::pclose(p);
    return text;
  };
  std::string firstGitlink;
  for (const Scenario* s : {&dirty, static_cast<const Scenario*>(&clean)}) {
    const fs::path ws = box.path / (s == &dirty ? "dirty" : "clean");
    seedWorkspace(*s, ws);
    const std::string q = "'" + ws.string() + "'";
    const std::string head = out("git -C " + q + "/lib rev-parse HEAD");
    ASSERT_EQ(head.size(), 41u) << head;
    const std::string gitlink = out("git -C " + q + " ls-files -s lib");
    EXPECT_EQ(gitlink, "160000 " + head.substr(0, 40) + " 0\tlib\n");
    EXPECT_TRUE(fs::is_directory(ws / "lib" / ".git"));
    EXPECT_EQ(out("git -C " + q + " ls-files"), ".gitmodules\na.txt\nlib\n");
    const std::string status =
        out("git -C " + q + "/lib status --porcelain=v1 --untracked-files=all");
    if (s == &dirty) {
      EXPECT_EQ(status, " M lib.txt\n");
      EXPECT_EQ(testutil::readBytes(ws / "lib" / "lib.txt"), "v2\n");
      firstGitlink = gitlink;
    } else {
      EXPECT_EQ(status, "");
      EXPECT_EQ(gitlink, firstGitlink);  // the same seed commit
    }
  }
}
