// The scripted model server (crashsim/open/model_server.h): the step is a pure function of the
// history; real HTTP requests through Boost.Beast, non-streaming and SSE; an unexplainable
// history is an HTTP error and a finding; every request is logged.
#include "crashsim/open/model_server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "open_test_support.h"

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;
using open_test::scenarioFile;

// The user message and calls of scenarios/write-config-port.json, spelled out: the expected
// values come from the scenario file, not from the server.
const std::string kUser = "Change the port in config.json from 3000 to 4000.";
const json kReadArgs = {{"path", "config.json"}};
const json kWriteArgs = {{"path", "config.json"},
                         {"content", "{\"name\":\"demo\",\"port\":4000}\n"}};

json user() { return {{"role", "user"}, {"content", kUser}}; }
json assistant(const std::string& id, const std::string& name, const json& args) {
  return {
      {"role", "assistant"},
      {"content", nullptr},
      {"tool_calls", json::array({{{"id", id},
                                   {"type", "function"},
                                   {"function", {{"name", name}, {"arguments", args.dump()}}}}})}};
}
json toolResult(const std::string& id) {
  return {{"role", "tool"}, {"tool_call_id", id}, {"content", "{}"}};
}
json historyAfterRead() {
  return json::array({{{"role", "system"}, {"content", "You are helpful."}},
                      user(),
                      assistant("call-1", "Read", kReadArgs),
                      toolResult("call-1")});
}

crashsim::Scenario writeConfigPort() {
  return crashsim::loadScenario(scenarioFile("write-config-port"));
}

std::string explainKind(const json& messages) {
  const auto why = crashsim::open::explainHistory(writeConfigPort(), messages);
  return why.step ? "step " + std::to_string(*why.step) : why.finding;
}

TEST(ModelHistory, TheStepIsTheNumberOfCompletedTurns) {
  EXPECT_EQ(explainKind(json::array({user()})), "step 0");
  EXPECT_EQ(explainKind(historyAfterRead()), "step 1");
  json afterWrite = historyAfterRead();
  afterWrite.push_back(assistant("call-2", "Write", kWriteArgs));
  afterWrite.push_back(toolResult("call-2"));
  EXPECT_EQ(explainKind(afterWrite), "step 2");
  // The user message as content parts (what some clients send) is the same message.
  EXPECT_EQ(
      explainKind(json::array(
          {{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", kUser}}})}}})),
      "step 0");
}

TEST(ModelHistory, HistoriesTheScenarioCannotExplainAreFindings) {
  EXPECT_EQ(explainKind(json::array()), "no_user_message");
  EXPECT_EQ(explainKind(json::array({user(), user()})), "user_repeated");
  EXPECT_EQ(explainKind(json::array({{{"role", "user"}, {"content", "something else"}}})),
            "user_mismatch");
  // A result for a call the scenario never made.
  EXPECT_EQ(explainKind(json::array(
                {user(), assistant("call-1", "Read", kReadArgs), toolResult("call-9")})),
            "unknown_tool_result");
  // The turn is there, its result is not (a half-finished history).
  EXPECT_EQ(explainKind(json::array({user(), assistant("call-1", "Read", kReadArgs)})),
            "missing_tool_result");
  json missingThenNext = json::array(
      {user(), assistant("call-1", "Read", kReadArgs), assistant("call-2", "Write", kWriteArgs)});
  EXPECT_EQ(explainKind(missingThenNext), "missing_tool_result");
  json twice = historyAfterRead();
  twice.push_back(toolResult("call-1"));
  EXPECT_EQ(explainKind(twice), "duplicate_tool_result");
  // The assistant turn is not the scenario's (other arguments).
  EXPECT_EQ(
      explainKind(json::array({user(), assistant("call-1", "Read", {{"path", "other.json"}})})),
      "assistant_turn_mismatch");
  json done = historyAfterRead();
  done.push_back(assistant("call-2", "Write", kWriteArgs));
  done.push_back(toolResult("call-2"));
  done.push_back({{"role", "assistant"}, {"content", "config.json now uses port 4000."}});
  EXPECT_EQ(explainKind(done), "history_beyond_script");
  EXPECT_EQ(explainKind(json::array({user(), {{"role", "function"}, {"content", "x"}}})),
            "malformed_history");
}

// One HTTP request through Beast (a fresh connection).
http::response<http::string_body> request(uint16_t port, http::verb verb, const std::string& target,
                                          const std::string& body) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  http::write(socket, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(socket, buffer, res);
  return res;
}

json chatRequest(const json& messages, bool stream) {
  return {
      {"model", "gpt-test"}, {"messages", messages}, {"stream", stream}, {"tools", json::array()}};
}

TEST(ModelServer, AnswersTheStepOfTheHistoryOverHttp) {
  open_test::ScratchDir dir;
  crashsim::open::ModelServer server(writeConfigPort(), {dir.path / "model.jsonl", 0, {}});
  const uint16_t port = server.start();
  ASSERT_NE(port, 0);
  EXPECT_EQ(server.baseUrl(), "http://127.0.0.1:" + std::to_string(port) + "/v1");

  auto res = request(port, http::verb::post, "/v1/chat/completions",
                     chatRequest(json::array({user()}), false).dump());
  ASSERT_EQ(res.result_int(), 200) << res.body();
  json body = json::parse(res.body());
  EXPECT_EQ(body["object"], "chat.completion");
  const json firstId = body["id"];
  EXPECT_EQ(body["model"], "gpt-test");
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["content"], "Let me look at the config first.");
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  const json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["id"], "call-1");
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "Read");
  EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), kReadArgs);

  res = request(port, http::verb::post, "/v1/chat/completions",
                chatRequest(historyAfterRead(), false).dump());
  ASSERT_EQ(res.result_int(), 200);
  body = json::parse(res.body());
  // Another step, another completion id (clients that key messages by id must not merge them).
  EXPECT_NE(body["id"], firstId);
  EXPECT_EQ(body["choices"][0]["message"]["tool_calls"][0]["id"], "call-2");
  EXPECT_EQ(json::parse(body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
                            .get<std::string>()),
            kWriteArgs);

  // The same history again (a resume re-sending it) gets the same answer: no server counter.
  res = request(port, http::verb::post, "/v1/chat/completions",
                chatRequest(json::array({user()}), false).dump());
  EXPECT_EQ(json::parse(res.body())["choices"][0]["message"]["tool_calls"][0]["id"], "call-1");
  EXPECT_EQ(json::parse(res.body())["id"], firstId);

  json afterWrite = historyAfterRead();
  afterWrite.push_back(assistant("call-2", "Write", kWriteArgs));
  afterWrite.push_back(toolResult("call-2"));
  res = request(port, http::verb::post, "/v1/chat/completions",
                chatRequest(afterWrite, false).dump());
  body = json::parse(res.body());
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "config.json now uses port 4000.");
  EXPECT_FALSE(body["choices"][0]["message"].contains("tool_calls"));
  EXPECT_TRUE(server.findings().empty());
  server.stop();

  const auto log = open_test::lines(open_test::readFile(dir.path / "model.jsonl"));
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(json::parse(log[0])["step"], 0);
  EXPECT_EQ(json::parse(log[1])["step"], 1);
  EXPECT_EQ(json::parse(log[2])["step"], 0);
  EXPECT_EQ(json::parse(log[3])["step"], 2);
  EXPECT_EQ(json::parse(log[1])["messages"], historyAfterRead());
}

TEST(ModelServer, StreamsServerSentEventsAClientCanReassemble) {
  crashsim::open::ModelServer server(writeConfigPort(), {});
  const uint16_t port = server.start();
  json req = chatRequest(historyAfterRead(), true);
  req["stream_options"] = {{"include_usage", true}};
  const auto res = request(port, http::verb::post, "/v1/chat/completions", req.dump());
  ASSERT_EQ(res.result_int(), 200);
  EXPECT_EQ(res[http::field::content_type], "text/event-stream");
  EXPECT_TRUE(res.chunked());  // streamed: chunked transfer encoding, no Content-Length
  // SSE framing: events separated by a blank line, each one "data: " line; the last is [DONE].
  const std::string& text = res.body();
  ASSERT_GE(text.size(), 2u);
  EXPECT_EQ(text.substr(text.size() - 2), "\n\n");
  std::vector<std::string> events;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find("\n\n", start);
    ASSERT_NE(end, std::string::npos);
    events.push_back(text.substr(start, end - start));
    start = end + 2;
  }
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "data: [DONE]");
  std::string role, content, finish, id, name, arguments;
  bool usage = false;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    ASSERT_EQ(events[i].rfind("data: ", 0), 0u) << events[i];
    ASSERT_EQ(events[i].find('\n'), std::string::npos) << events[i];
    const json chunk = json::parse(events[i].substr(6));
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    usage = usage || chunk.contains("usage");
    for (const json& c : chunk["choices"]) {
      const json& delta = c["delta"];
      role += delta.value("role", "");
      if (delta.contains("content") && delta["content"].is_string()) content += delta["content"];
      if (c["finish_reason"].is_string()) finish = c["finish_reason"];
      for (const json& tc : delta.value("tool_calls", json::array())) {
        EXPECT_EQ(tc["index"], 0);
        id += tc.value("id", "");
        name += tc["function"].value("name", "");
        arguments += tc["function"].value("arguments", "");
      }
    }
  }
  EXPECT_EQ(role, "assistant");
  EXPECT_EQ(content, "");  // step 1 of write-config-port has no text
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(id, "call-2");
  EXPECT_EQ(name, "Write");
  EXPECT_EQ(json::parse(arguments), kWriteArgs);
  EXPECT_TRUE(usage);
}

TEST(ModelServer, AnUnexplainableHistoryIsAnHttpErrorAndAFinding) {
  open_test::ScratchDir dir;
  crashsim::open::ModelServer server(writeConfigPort(), {dir.path / "model.jsonl", 0, {}});
  const uint16_t port = server.start();
  const json bad =
      json::array({user(), assistant("call-1", "Read", kReadArgs), toolResult("call-7")});
  for (bool stream : {false, true}) {
    const auto res =
        request(port, http::verb::post, "/v1/chat/completions", chatRequest(bad, stream).dump());
    EXPECT_EQ(res.result_int(), 400);
    const json body = json::parse(res.body());
    EXPECT_EQ(body["error"]["code"], "crashsim_unknown_tool_result");
    EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  }
  const auto findings = server.findings();
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0]["finding"], "unknown_tool_result");
  EXPECT_EQ(findings[0]["seq"], 1);
  // Not JSON at all: a finding too; other paths and methods are plain HTTP errors.
  EXPECT_EQ(request(port, http::verb::post, "/v1/chat/completions", "{nope").result_int(), 400);
  EXPECT_EQ(server.findings().size(), 3u);
  EXPECT_EQ(request(port, http::verb::post, "/v1/completions", "{}").result_int(), 404);
  EXPECT_EQ(request(port, http::verb::get, "/v1/chat/completions", "").result_int(), 405);
  server.stop();
  const auto log = open_test::lines(open_test::readFile(dir.path / "model.jsonl"));
  ASSERT_EQ(log.size(), 3u);  // the chat requests; 404 and 405 never reach the scenario
  EXPECT_EQ(json::parse(log[0])["finding"]["kind"], "unknown_tool_result");
  EXPECT_EQ(json::parse(log[0])["status"], 400);
}

TEST(ModelServer, TheExecutableServesOnTheFilesPortUntilSigterm) {
  open_test::ScratchDir dir;
  open_test::Child server(
      {(open_test::binaryDir() / "crashsim-model-server").string(), "--scenario",
       scenarioFile("write-config-port").string(), "--port-file", (dir.path / "port").string(),
       "--log", (dir.path / "model.jsonl").string()},
      {}, true);
  ASSERT_TRUE(open_test::readLine(server.out, std::chrono::seconds(30)).has_value());
  const int port = std::stoi(open_test::readFile(dir.path / "port"));
  const auto res = request(static_cast<uint16_t>(port), http::verb::post, "/chat/completions",
                           chatRequest(json::array({user()}), false).dump());
  EXPECT_EQ(res.result_int(), 200);
  ::kill(server.pid, SIGTERM);
  const auto status = server.waitFor(std::chrono::seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  EXPECT_EQ(open_test::lines(open_test::readFile(dir.path / "model.jsonl")).size(), 1u);
}

}  // namespace
