// The scripted model server (crashsim/open/model_server.h).
#include "crashsim/open/model_server.h"

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fstream>
#include <map>
#include <set>
#include <thread>

namespace crashsim::open {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

namespace {

constexpr const char* kModelName = "crashsim-scripted";

HistoryExplanation unexplained(std::string kind, std::string detail) {
  return HistoryExplanation{std::nullopt, std::move(kind), std::move(detail)};
}

// A message's text: a string, or the concatenated "text" parts of a content array.
std::optional<std::string> contentText(const json& message) {
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) return std::nullopt;
  std::string text;
  for (const json& part : *it) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
        !part["text"].is_string())
      return std::nullopt;
    text += part["text"].get<std::string>();
  }
  return text;
}

// Why an assistant turn is not exactly `step`'s calls (empty when it is).
std::string turnMismatch(const ScriptedStep& step, const json& message) {
  const json calls = message.value("tool_calls", json::array());
  if (!calls.is_array()) return "tool_calls is not an array";
  if (calls.size() != step.calls.size())
    return "has " + std::to_string(calls.size()) + " tool calls, the step has " +
           std::to_string(step.calls.size());
  for (const ScriptedCall& expected : step.calls) {
    const json* found = nullptr;
    for (const json& call : calls)
      if (call.is_object() && call.value("id", "") == expected.id) found = &call;
    if (found == nullptr) return "no tool call with id " + expected.id;
    const json function = found->value("function", json::object());
    if (!function.is_object() || function.value("name", "") != expected.name)
      return "tool call " + expected.id + " is not " + expected.name;
    const json args = function.value("arguments", json());
    if (!args.is_string()) return "tool call " + expected.id + " has no arguments string";
    const json parsed = json::parse(args.get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || parsed != expected.args)
      return "tool call " + expected.id + " has other arguments than the scenario's";
  }
  return {};
}

}  // namespace

HistoryExplanation explainHistory(const Scenario& scenario, const json& messages) {
  if (!messages.is_array()) return unexplained("malformed_history", "messages is not an array");
  const auto& steps = scenario.model;
  size_t users = 0, done = 0;  // user messages seen; steps whose turn and results are complete
  std::set<std::string> pending, answered, issued;
  bool inStep = false;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return unexplained("malformed_history", at + " has no role");
    const std::string role = m["role"].get<std::string>();
    if (role == "system" || role == "developer") continue;
    if (role == "user") {
      if (++users > 1) return unexplained("user_repeated", at + " is a second user message");
      const auto text = contentText(m);
      if (!text || *text != scenario.user)
        return unexplained("user_mismatch", at + " is not the scenario's user message");
      continue;
    }
    if (users == 0) return unexplained("no_user_message", at + " comes before any user message");
    if (role == "assistant") {
      if (inStep)
        return unexplained("missing_tool_result",
                           at + ": an assistant turn while a tool call of step " +
                               std::to_string(done) + " has no result (" + *pending.begin() + ")");
      if (done >= steps.size())
        return unexplained("history_beyond_script",
                           at + " is an assistant turn after the last step");
      const ScriptedStep& step = steps[done];
      if (const std::string why = turnMismatch(step, m); !why.empty())
        return unexplained("assistant_turn_mismatch",
                           at + " is not step " + std::to_string(done) + ": " + why);
      if (step.calls.empty()) {
        ++done;  // the final answer
        continue;
      }
      for (const ScriptedCall& call : step.calls) {
        pending.insert(call.id);
        issued.insert(call.id);
      }
      inStep = true;
      continue;
    }
    if (role == "tool") {
      const std::string id = m.value("tool_call_id", "");
      if (answered.count(id))
        return unexplained("duplicate_tool_result", at + " answers " + id + " a second time");
      if (!pending.count(id))
        return unexplained("unknown_tool_result",
                           at + " answers '" + id + "', a call the scenario has not made here");
      pending.erase(id);
      answered.insert(id);
      if (pending.empty()) {
        inStep = false;
        ++done;
      }
      continue;
    }
    return unexplained("malformed_history", at + " has role '" + role + "'");
  }
  if (users == 0) return unexplained("no_user_message", "the history holds no user message");
  if (inStep)
    return unexplained("missing_tool_result",
                       "the history ends with tool call " + *pending.begin() + " unanswered");
  if (done >= steps.size())
    return unexplained("history_beyond_script", "the history already holds the final answer");
  return HistoryExplanation{done, {}, {}};
}

namespace {

json toolCallsOf(const ScriptedStep& step, bool withIndex) {
  json calls = json::array();
  for (size_t i = 0; i < step.calls.size(); ++i) {
    json call = {
        {"id", step.calls[i].id},
        {"type", "function"},
        {"function", {{"name", step.calls[i].name}, {"arguments", step.calls[i].args.dump()}}}};
    if (withIndex) call["index"] = i;
    calls.push_back(std::move(call));
  }
  return calls;
}

json usage() { return {{"prompt_tokens", 1}, {"completion_tokens", 1}, {"total_tokens", 2}}; }

}  // namespace

json completionBody(const ScriptedStep& step, const std::string& model, const std::string& id) {
  json message = {{"role", "assistant"}, {"content", step.text ? json(*step.text) : json()}};
  if (!step.calls.empty()) message["tool_calls"] = toolCallsOf(step, false);
  return {
      {"id", id},
      {"object", "chat.completion"},
      {"created", 0},
      {"model", model},
      {"choices", json::array({{{"index", 0},
                                {"message", message},
                                {"logprobs", nullptr},
                                {"finish_reason", step.calls.empty() ? "stop" : "tool_calls"}}})},
      {"usage", usage()}};
}

std::string completionSse(const ScriptedStep& step, const std::string& model, const std::string& id,
                          bool includeUsage) {
  std::string out;
  auto chunk = [&out, &model, &id](json delta, json finish, bool withUsage) {
    json c = {{"id", id},
              {"object", "chat.completion.chunk"},
              {"created", 0},
              {"model", model},
              {"choices", json::array()}};
    if (!delta.is_null())
      c["choices"].push_back({{"index", 0}, {"delta", delta}, {"finish_reason", finish}});
    if (withUsage) c["usage"] = usage();
    out += "data: " + c.dump() + "\n\n";
  };
  chunk({{"role", "assistant"}, {"content", ""}}, nullptr, false);
  if (step.text) chunk({{"content", *step.text}}, nullptr, false);
  const json calls = toolCallsOf(step, true);
  for (const json& call : calls) chunk({{"tool_calls", json::array({call})}}, nullptr, false);
  chunk(json::object(), step.calls.empty() ? "stop" : "tool_calls", false);
  if (includeUsage) chunk(nullptr, nullptr, true);
  out += "data: [DONE]\n\n";
  return out;
}

std::string completionId(const Scenario& scenario, size_t step) {
  return "chatcmpl-crashsim-" + scenario.id + "-" + std::to_string(step);
}

// --- the server ---

struct ModelServer::Impl {
  Scenario scenario;
  ModelServerOptions options;
  asio::io_context io;
  std::optional<tcp::acceptor> acceptor;
  uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::thread acceptThread;
  mutable std::mutex mutex;  // guards everything below
  std::vector<std::thread> connections;
  std::vector<std::shared_ptr<tcp::socket>> sockets;
  std::vector<json> findings;
  size_t seq = 0;
  int requests = 0, answers = 0;  // the MQ and MA hits so far
  std::ofstream log;

  http::response<http::string_body> handle(const http::request<http::string_body>& req);
  void serve(std::shared_ptr<tcp::socket> socket);
  void acceptLoop();
};

http::response<http::string_body> ModelServer::Impl::handle(
    const http::request<http::string_body>& req) {
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.keep_alive(req.keep_alive());
  res.set(http::field::content_type, "application/json");
  auto error = [&res](http::status status, const std::string& message, const std::string& code) {
    res.result(status);
    res.body() = json{{"error",
                       {{"message", message},
                        {"type", "invalid_request_error"},
                        {"param", nullptr},
                        {"code", code}}}}
                     .dump();
  };
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  if (path == "/v1/models" || path == "/models") {
    if (req.method() != http::verb::get) {
      error(http::status::method_not_allowed, "use GET", "crashsim_method_not_allowed");
    } else {
      res.body() = json{{"object", "list"},
                        {"data", json::array({{{"id", kModelName},
                                               {"object", "model"},
                                               {"created", 0},
                                               {"owned_by", "crashsim"}}})}}
                       .dump();
    }
    res.prepare_payload();
    return res;
  }
  if (path != "/v1/chat/completions" && path != "/chat/completions") {
    error(http::status::not_found, "no such endpoint: " + path, "crashsim_not_found");
    res.prepare_payload();
    return res;
  }
  if (req.method() != http::verb::post) {
    error(http::status::method_not_allowed, "use POST", "crashsim_method_not_allowed");
    res.prepare_payload();
    return res;
  }
  const json body = json::parse(req.body(), nullptr, false);
  const bool valid = body.is_object() && body.contains("messages");
  const bool stream = valid && body.value("stream", false) == true;
  const HistoryExplanation why =
      valid ? explainHistory(scenario, body["messages"])
            : unexplained("malformed_history", "the body is not a JSON object with messages");
  std::lock_guard lock(mutex);
  const size_t n = ++seq;
  json line = {
      {"seq", n},
      {"path", path},
      {"stream", stream},
      {"messages", valid ? body["messages"] : json(req.body())},
      {"step", why.step ? json(*why.step) : json()},
      {"finding", why.step ? json() : json{{"kind", why.finding}, {"detail", why.detail}}}};
  if (!why.step) {
    findings.push_back({{"seq", n}, {"finding", why.finding}, {"detail", why.detail}});
    error(http::status::bad_request,
          "crashsim: the scenario cannot explain this history: " + why.detail,
          "crashsim_" + why.finding);
  } else {
    const ScriptedStep& step = scenario.model.at(*why.step);
    const std::string model = valid ? body.value("model", std::string(kModelName)) : kModelName;
    if (stream) {
      const bool includeUsage = body.contains("stream_options") &&
                                body["stream_options"].is_object() &&
                                body["stream_options"].value("include_usage", false) == true;
      res.set(http::field::content_type, "text/event-stream");
      res.set(http::field::cache_control, "no-cache");
      res.body() = completionSse(step, model, completionId(scenario, *why.step), includeUsage);
      res.chunked(true);
    } else {
      res.body() = completionBody(step, model, completionId(scenario, *why.step)).dump();
    }
  }
  line["status"] = res.result_int();
  if (log.is_open()) log << line.dump() << '\n' << std::flush;
  if (!res.chunked()) res.prepare_payload();
  return res;
}

void ModelServer::Impl::serve(std::shared_ptr<tcp::socket> socket) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    beast::error_code ec;
    http::read(*socket, buffer, parser, ec);
    if (ec) break;
    const auto req = parser.release();
    auto res = handle(req);
    const std::string target(req.target());
    const std::string path = target.substr(0, target.find('?'));
    const bool chat = req.method() == http::verb::post &&
                      (path == "/v1/chat/completions" || path == "/chat/completions");
    if (chat && options.onPoint) {
      int hit = 0;
      {
        std::lock_guard lock(mutex);
        hit = ++requests;
      }
      if (options.onPoint("MQ", hit)) break;
    }
    http::write(*socket, res, ec);
    if (!ec && chat && options.onPoint && res.result() == http::status::ok) {
      int hit = 0;
      {
        std::lock_guard lock(mutex);
        hit = ++answers;
      }
      options.onPoint("MA", hit);
    }
    if (ec || !res.keep_alive()) break;
  }
  beast::error_code ignored;
  socket->shutdown(tcp::socket::shutdown_both, ignored);
}

void ModelServer::Impl::acceptLoop() {
  for (;;) {
    auto socket = std::make_shared<tcp::socket>(io);
    beast::error_code ec;
    acceptor->accept(*socket, ec);
    if (stopping) break;
    if (ec) continue;
    std::lock_guard lock(mutex);
    sockets.push_back(socket);
    connections.emplace_back([this, socket] { serve(socket); });
  }
}

ModelServer::ModelServer(Scenario scenario, ModelServerOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->scenario = std::move(scenario);
  impl_->options = std::move(options);
}

ModelServer::~ModelServer() { stop(); }

uint16_t ModelServer::start() {
  Impl& s = *impl_;
  if (!s.options.logPath.empty()) {
    s.log.open(s.options.logPath, std::ios::app);
    if (!s.log) throw std::runtime_error("cannot open the model log " + s.options.logPath.string());
  }
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), s.options.port);
  s.acceptor.emplace(s.io);
  s.acceptor->open(endpoint.protocol());
  s.acceptor->set_option(asio::socket_base::reuse_address(true));
  beast::error_code ec;
  s.acceptor->bind(endpoint, ec);
  if (ec)
    throw std::runtime_error("cannot bind 127.0.0.1:" + std::to_string(s.options.port) + ": " +
                             ec.message());
  s.acceptor->listen(asio::socket_base::max_listen_connections);
  s.port = s.acceptor->local_endpoint().port();
  s.acceptThread = std::thread([&s] { s.acceptLoop(); });
  return s.port;
}

void ModelServer::stop() {
  Impl& s = *impl_;
  if (!s.acceptThread.joinable() || s.stopping.exchange(true)) return;
  {
    // Wake the blocking accept() with one connection of our own.
    beast::error_code ec;
    tcp::socket wake(s.io);
    wake.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), s.port), ec);
  }
  s.acceptThread.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(s.mutex);
    for (auto& socket : s.sockets) {
      beast::error_code ec;
      socket->shutdown(tcp::socket::shutdown_both, ec);
    }
    threads.swap(s.connections);
  }
  for (auto& t : threads) t.join();
  beast::error_code ec;
  s.acceptor->close(ec);
}

uint16_t ModelServer::port() const { return impl_->port; }

std::string ModelServer::baseUrl() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port) + "/v1";
}

std::vector<json> ModelServer::findings() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->findings;
}

size_t ModelServer::requestCount() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->seq;
}

}  // namespace crashsim::open
