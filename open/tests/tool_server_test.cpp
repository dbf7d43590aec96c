// The tool server (crashsim/open/tool_server.h) as a real process: the MCP handshake over
// stdio, a Write that leaves the file and an effects-log line, the one-call mode.
#include "crashsim/open/tool_server.h"

#include <gtest/gtest.h>

#include "crashsim/scenario.h"
#include "crashsim/tools.h"
#include "open_test_support.h"

namespace {

using nlohmann::json;
using open_test::Child;
using open_test::scenarioFile;

std::vector<std::string> toolServerArgv(const open_test::ScratchDir& dir,
                                        const std::string& scenario) {
  return {(open_test::binaryDir() / "crashsim-tool-server").string(),
          "--scenario",
          scenarioFile(scenario).string(),
          "--workspace",
          (dir.path / "ws").string(),
          "--effects",
          (dir.path / "effects.jsonl").string()};
}

json rpc(Child& server, const json& message) {
  server.write(message.dump() + "\n");
  const auto line = open_test::readLine(server.out, std::chrono::seconds(30));
  if (!line) throw std::runtime_error("no answer to " + message.dump());
  return json::parse(*line);
}

TEST(ToolServer, SpeaksMcpAndWritesWithAnEffectsLine) {
  open_test::ScratchDir dir;
  std::filesystem::create_directories(dir.path / "ws");
  std::ofstream(dir.path / "ws" / "config.json") << "{\"name\":\"demo\",\"port\":3000}\n";
  Child server(toolServerArgv(dir, "write-config-port"), {}, true);

  const json init = rpc(server, {{"jsonrpc", "2.0"},
                                 {"id", 1},
                                 {"method", "initialize"},
                                 {"params",
                                  {{"protocolVersion", "2025-03-26"},
                                   {"capabilities", json::object()},
                                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
  EXPECT_EQ(init["id"], 1);
  EXPECT_EQ(init["result"]["protocolVersion"], "2025-03-26");  // the client's version, supported
  EXPECT_TRUE(init["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(init["result"]["serverInfo"]["name"], "crashsim-tool-server");

  // A notification has no answer: the next line read is tools/list's.
  server.write(json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}.dump() + "\n");
  const json list = rpc(server, {{"jsonrpc", "2.0"}, {"id", "two"}, {"method", "tools/list"}});
  EXPECT_EQ(list["id"], "two");
  std::vector<std::string> names;
  for (const json& t : list["result"]["tools"]) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"Read", "Write", "Edit", "Bash"}));  // $.tools
  const json& write = list["result"]["tools"][1];
  EXPECT_EQ(write["inputSchema"]["required"], json::array({"path", "content"}));

  const std::string content = "{\"name\":\"demo\",\"port\":4000}\n";
  const json call =
      rpc(server,
          {{"jsonrpc", "2.0"},
           {"id", 3},
           {"method", "tools/call"},
           {"params",
            {{"name", "Write"}, {"arguments", {{"path", "config.json"}, {"content", content}}}}}});
  EXPECT_EQ(call["result"]["isError"], false) << call.dump();
  const json result = json::parse(call["result"]["content"][0]["text"].get<std::string>());
  EXPECT_EQ(result["path"], "config.json");
  EXPECT_EQ(result["bytesWritten"], content.size());
  EXPECT_EQ(open_test::readFile(dir.path / "ws" / "config.json"), content);
  const auto effects = crashsim::EffectsLog::read(dir.path / "effects.jsonl");
  ASSERT_EQ(effects.size(), 1u);
  EXPECT_EQ(effects[0]["callId"], "call-2");  // matched to the scenario's Write
  EXPECT_EQ(effects[0]["operationId"], "call-2");
  EXPECT_EQ(effects[0]["tool"], "Write");
  EXPECT_EQ(effects[0]["attempt"], 1);

  const json unknown = rpc(server, {{"jsonrpc", "2.0"}, {"id", 4}, {"method", "resources/list"}});
  EXPECT_EQ(unknown["error"]["code"], -32601);
  const json noTool = rpc(server, {{"jsonrpc", "2.0"},
                                   {"id", 5},
                                   {"method", "tools/call"},
                                   {"params", {{"name", "Fetch"}, {"arguments", json::object()}}}});
  EXPECT_EQ(noTool["error"]["code"], -32602);
  server.write("not json\n");
  EXPECT_EQ(
      json::parse(*open_test::readLine(server.out, std::chrono::seconds(30)))["error"]["code"],
      -32700);
  server.closeIn();
  const auto status = server.waitFor(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

TEST(ToolServer, OneCallModeRunsTheToolAndLogsIt) {
  open_test::ScratchDir dir;
  std::filesystem::create_directories(dir.path / "ws");
  auto argv = toolServerArgv(dir, "bash-touch-marker");
  // The scenario's own Bash call (call-1): touch marker.
  const auto scenario = crashsim::loadScenario(scenarioFile("bash-touch-marker"));
  argv.push_back("Bash");
  argv.push_back(scenario.model[0].calls[0].args.dump());
  Child first(argv, {}, true);
  const auto line = open_test::readLine(first.out, std::chrono::seconds(30));
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(json::parse(*line)["result"]["exitCode"], 0);
  EXPECT_TRUE(WIFEXITED(first.wait()) && WEXITSTATUS(*first.status) == 0);
  EXPECT_TRUE(std::filesystem::exists(dir.path / "ws" / "marker"));
  // The same call again runs again (Bash is never a no-op): the effects log counts attempt 2.
  Child second(argv, {}, true);
  EXPECT_TRUE(WIFEXITED(second.wait()) && WEXITSTATUS(*second.status) == 0);
  // A call the scenario never makes runs too, under "unscripted".
  argv[argv.size() - 1] = json{{"command", "exit 3"}}.dump();
  Child third(argv, {}, true);
  EXPECT_TRUE(WIFEXITED(third.wait()));
  const auto effects = crashsim::EffectsLog::read(dir.path / "effects.jsonl");
  ASSERT_EQ(effects.size(), 3u);
  EXPECT_EQ(effects[0]["callId"], "call-1");
  EXPECT_EQ(effects[1]["callId"], "call-1");
  EXPECT_EQ(effects[1]["attempt"], 2);
  EXPECT_EQ(effects[2]["callId"], "unscripted");
  EXPECT_EQ(effects[2]["operationId"].get<std::string>().rfind("unscripted:", 0), 0u);
  // Arguments that are not a JSON object: usage error, nothing runs.
  argv[argv.size() - 1] = "[1]";
  Child bad(argv, {}, true);
  EXPECT_TRUE(WIFEXITED(bad.wait()) && WEXITSTATUS(*bad.status) == 2);
  EXPECT_EQ(crashsim::EffectsLog::read(dir.path / "effects.jsonl").size(), 3u);
}

// write-config-port's Write (call-2) sent twice: the first runs (an effects line); the second
// finds its content already there, so the tools' preflight answers without running it — no
// second effects line, one re-sent line (what O2 counts). A Write never run before that finds
// its content in place is not a re-send, and without --resent nothing is kept.
TEST(ToolServer, AFinishedCallSentAgainAndNotRunIsLoggedAsResent) {
  open_test::ScratchDir dir;
  std::filesystem::create_directories(dir.path / "ws");
  const auto scenario = crashsim::loadScenario(scenarioFile("write-config-port"));
  const json& args = scenario.model[1].calls[0].args;
  auto argv = toolServerArgv(dir, "write-config-port");
  const std::string resent = (dir.path / "resent.jsonl").string();
  argv.insert(argv.end(), {"--resent", resent, "Write", args.dump()});
  // The target already holds the content, before any effect: a no-op, but no re-send.
  std::ofstream(dir.path / "ws" / args["path"].get<std::string>())
      << args["content"].get<std::string>();
  Child first(argv, {}, true);
  EXPECT_TRUE(WIFEXITED(first.wait()));
  EXPECT_EQ(crashsim::EffectsLog::read(dir.path / "effects.jsonl").size(), 0u);
  EXPECT_FALSE(std::filesystem::exists(resent));
  std::filesystem::remove(dir.path / "ws" / args["path"].get<std::string>());
  Child second(argv, {}, true);  // runs: the effects line
  EXPECT_TRUE(WIFEXITED(second.wait()) && WEXITSTATUS(*second.status) == 0);
  Child third(argv, {}, true);  // sent again after its effect: answered without running
  EXPECT_TRUE(WIFEXITED(third.wait()) && WEXITSTATUS(*third.status) == 0);
  const auto effects = crashsim::EffectsLog::read(dir.path / "effects.jsonl");
  ASSERT_EQ(effects.size(), 1u);
  EXPECT_EQ(effects[0]["callId"], "call-2");
  const auto lines = open_test::lines(open_test::readFile(resent));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0]), (json{{"callId", "call-2"}, {"name", "Write"}}));
}

// Every result the server gives is in the answers log under the call it was matched to, as the
// runtime received it (the text of MCP's content: here the one-call mode's "result", dumped):
// the run, the no-op re-send and an unscripted call each leave one line, in order.
TEST(ToolServer, EveryResultGivenIsLoggedUnderItsCall) {
  open_test::ScratchDir dir;
  std::filesystem::create_directories(dir.path / "ws");
  const auto scenario = crashsim::loadScenario(scenarioFile("write-config-port"));
  json args = scenario.model[1].calls[0].args;
  const std::string answers = (dir.path / "answers.jsonl").string();
  std::vector<std::string> printed;
  for (int i = 0; i < 3; ++i) {
    if (i == 2) args["content"] = args["content"].get<std::string>() + "\n";  // no scenario call
    auto argv = toolServerArgv(dir, "write-config-port");
    argv.insert(argv.end(), {"--answers", answers, "Write", args.dump()});
    Child call(argv, {}, true);
    const auto line = open_test::readLine(call.out, std::chrono::seconds(30));
    ASSERT_TRUE(line.has_value());
    printed.push_back(json::parse(*line)["result"].dump());
    EXPECT_TRUE(WIFEXITED(call.wait()));
  }
  const auto lines = open_test::lines(open_test::readFile(answers));
  ASSERT_EQ(lines.size(), 3u);
  const char* ids[] = {"call-2", "call-2", "unscripted"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(json::parse(lines[i])["callId"], ids[i]) << i;
    EXPECT_EQ(json::parse(lines[i])["text"], printed[i]) << i;
  }
  EXPECT_EQ(json::parse(printed[0])["path"], args["path"]);  // a Write's result names its file
}

TEST(ToolServer, DescriptorsMatchTheRuntimesArgumentSchemas) {
  open_test::ScratchDir dir;
  crashsim::open::ToolServer server(crashsim::loadScenario(scenarioFile("write-config-port")),
                                    {dir.path, dir.path / "effects.jsonl", "t", {}, {}, {}});
  for (const json& tool : server.toolDescriptors()) {
    json args = json::object();
    for (const json& name : tool["inputSchema"]["required"]) args[name.get<std::string>()] = "x";
    EXPECT_EQ(crashsim::ToolRuntime::argsProblem(tool["name"].get<std::string>(), args),
              std::nullopt)
        << tool.dump();
    args["extra"] = "x";  // the runtime's schema is closed, and so is the descriptor
    EXPECT_NE(crashsim::ToolRuntime::argsProblem(tool["name"].get<std::string>(), args),
              std::nullopt);
    EXPECT_EQ(tool["inputSchema"]["additionalProperties"], false);
  }
}

}  // namespace
