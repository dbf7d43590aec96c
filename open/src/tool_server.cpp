// The tool server (crashsim/open/tool_server.h).
#include "crashsim/open/tool_server.h"

#include <algorithm>
#include <fstream>
#include <istream>
#include <map>
#include <ostream>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/workspace.h"

namespace crashsim::open {

using nlohmann::json;

namespace {

// The closed argument set of each built-in tool (crashsim/tools.h; the test
// ToolServer.DescriptorsMatchTheRuntimesArgumentSchemas holds the two together).
const std::map<std::string, std::vector<std::string>>& argumentNames() {
  static const std::map<std::string, std::vector<std::string>> names = {
      {"Read", {"path"}},
      {"Write", {"path", "content"}},
      {"Edit", {"path", "old_string", "new_string"}},
      {"Bash", {"command"}}};
  return names;
}

const std::map<std::string, std::string>& descriptions() {
  static const std::map<std::string, std::string> d = {
      {"Read", "Read a file of the workspace."},
      {"Write", "Replace a file of the workspace with new content."},
      {"Edit", "Replace the one occurrence of old_string with new_string in a file."},
      {"Bash", "Run a shell command in the workspace."}};
  return d;
}

json rpcError(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

}  // namespace

struct ToolServer::Impl {
  Scenario scenario;
  ToolServerOptions options;
  EffectsLog effects;
  ToolRuntime tools;
  CancellationToken cancel;

  Impl(Scenario s, ToolServerOptions o, const WorkspaceIdentity& workspace)
      : scenario(std::move(s)),
        options(std::move(o)),
        effects(options.effectsLog),
        tools(workspace, ToolPolicy{scenario.tools, scenario.deny}, effects) {}

  // A finished call answered without running: one line in the re-sent log, before the answer.
  void noteResent(const std::string& id, const std::string& name) const {
    append(options.resentLog, json{{"callId", id}, {"name", name}}, "re-sent");
  }

  // A result given: one line in the answers log, before the answer.
  void noteAnswer(const std::string& id, const ToolResult& result) const {
    append(options.answersLog, json{{"callId", id}, {"text", result.result.dump()}}, "answers");
  }

  static void append(const std::filesystem::path& log, const json& line, const char* which) {
    if (log.empty()) return;
    std::ofstream out(log, std::ios::app | std::ios::binary);
    out << line.dump() << "\n";
    out.flush();
    if (!out)
      throw Error(std::string(code::output_unwritable),
                  std::string("cannot append to the ") + which + " log");
  }

  // The scenario call a call of `name` with `args` is: the first match whose effect the log does
  // not hold yet (the first match when all ran; "" when none matches). `finished`: its effect ran.
  std::string matchCall(const std::string& name, const json& args, bool& finished) const {
    std::vector<std::string> matches;
    for (const ScriptedStep& step : scenario.model)
      for (const ScriptedCall& c : step.calls)
        if (c.name == name && c.args == args) matches.push_back(c.id);
    finished = false;
    if (matches.empty()) return {};
    std::set<std::string> ran;
    for (const Json& line : EffectsLog::read(options.effectsLog))
      ran.insert(line.value("callId", ""));
    for (const std::string& id : matches)
      if (!ran.count(id)) return id;
    finished = true;
    return matches.front();
  }
};

ToolServer::ToolServer(Scenario scenario, ToolServerOptions options) {
  const WorkspaceIdentity workspace = ensureWorkspaceIdentity(options.workspace);
  impl_ = std::make_unique<Impl>(std::move(scenario), std::move(options), workspace);
}

ToolServer::~ToolServer() = default;

json ToolServer::toolDescriptors() const {
  json out = json::array();
  for (const std::string& name : impl_->scenario.tools) {
    const auto args = argumentNames().find(name);
    if (args == argumentNames().end()) continue;
    json properties = json::object();
    for (const std::string& arg : args->second) properties[arg] = {{"type", "string"}};
    out.push_back({{"name", name},
                   {"description", descriptions().at(name)},
                   {"inputSchema",
                    {{"type", "object"},
                     {"properties", properties},
                     {"required", args->second},
                     {"additionalProperties", false}}}});
  }
  return out;
}

ToolCallOutcome ToolServer::call(const std::string& name, const json& args) {
  Impl& s = *impl_;
  ToolCallOutcome out;
  bool finished = false;
  std::string callId = s.matchCall(name, args, finished);
  std::string operationId = callId;
  if (callId.empty()) {
    callId = "unscripted";
    operationId = "unscripted:" + sha256Hex(name + "\n" + args.dump()).substr(0, 16);
  }
  out.callId = callId;
  const ToolCallRequest request{callId, name, args};
  const PreflightDecision decision = s.tools.preflight(request);
  if (decision.kind != PreflightDecision::Kind::dispatch) {
    if (finished) s.noteResent(callId, name);
    out.result = ToolResult{decision.syntheticResult, decision.syntheticIsError};
  } else {
    out.executed = true;
    out.result = s.tools.execute(
        request, decision, ToolExecution{operationId, callId, s.options.invocationId}, s.cancel);
  }
  s.noteAnswer(callId, out.result);
  return out;
}

std::optional<json> ToolServer::handle(const json& message) {
  if (!message.is_object() || message.value("jsonrpc", "") != "2.0")
    return rpcError(nullptr, -32600, "not a JSON-RPC 2.0 message");
  if (!message.contains("id")) return std::nullopt;  // a notification (initialized, cancelled …)
  const json id = message["id"];
  if (!message.contains("method")) return std::nullopt;  // a response to us: we send no requests
  const json& methodValue = message["method"];
  if (!methodValue.is_string()) return rpcError(id, -32600, "method is not a string");
  const std::string method = methodValue.get<std::string>();
  const json params = message.value("params", json::object());
  auto reply = [&id](json result) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
  };
  if (method == "initialize") {
    static const std::vector<std::string> versions = {"2024-11-05", "2025-03-26", "2025-06-18"};
    std::string version = versions.back();
    if (params.is_object() && params.contains("protocolVersion") &&
        params["protocolVersion"].is_string() &&
        std::count(versions.begin(), versions.end(), params["protocolVersion"].get<std::string>()))
      version = params["protocolVersion"].get<std::string>();
    return reply({{"protocolVersion", version},
                  {"capabilities", {{"tools", {{"listChanged", false}}}}},
                  {"serverInfo", {{"name", "crashsim-tool-server"}, {"version", "1"}}}});
  }
  if (method == "ping") return reply(json::object());
  if (method == "tools/list") return reply({{"tools", toolDescriptors()}});
  if (method == "tools/call") {
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
      return rpcError(id, -32602, "tools/call needs params.name");
    const std::string name = params["name"].get<std::string>();
    const json args = params.value("arguments", json::object());
    if (!args.is_object()) return rpcError(id, -32602, "arguments must be an object");
    const auto& tools = impl_->scenario.tools;
    if (std::find(tools.begin(), tools.end(), name) == tools.end())
      return rpcError(id, -32602, "unknown tool: " + name);
    if (impl_->options.onPoint) impl_->options.onPoint("TC");
    const ToolCallOutcome outcome = call(name, args);
    if (impl_->options.onPoint) impl_->options.onPoint("TE");
    return reply(
        {{"content", json::array({{{"type", "text"}, {"text", outcome.result.result.dump()}}})},
         {"isError", outcome.result.isError}});
  }
  return rpcError(id, -32601, "method not found: " + method);
}

void ToolServer::serve(std::istream& in, std::ostream& out) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json message = json::parse(line, nullptr, false);
    const std::optional<json> answer =
        message.is_discarded() ? rpcError(nullptr, -32700, "parse error") : handle(message);
    // TR is recorded just before the answer goes out: the harness kills at the runtime's next
    // request, which the answer makes possible, so the record must already be there.
    if (answer && impl_->options.onPoint && answer->contains("result") &&
        message.value("method", json()) == "tools/call")
      impl_->options.onPoint("TR");
    if (answer) out << answer->dump() << '\n' << std::flush;
  }
}

}  // namespace crashsim::open
