// crashsim/open/tool_server.h — the tool server of the open harness (protocol section 4): the
// scenario's tools (Read, Write, Edit, Bash) on a case workspace, over MCP on stdio or one call
// per process.
//
// The tools are crashsim-agent's own (crashsim/tools.h: ToolRuntime preflight + execute, the
// same implementations and the same effects log): every execution appends one fsynced line to
// the effects log before its effect, and so before the result is returned. A call is matched to
// the scenario call with the same tool and arguments; its effects line carries that call's id as
// callId and operationId (so "attempt" counts how often that scenario call's effect ran, O2).
// When two scenario calls have the same tool and arguments, the first one the effects log has
// not seen yet is chosen (the first one when all were seen). A call the scenario never makes is
// still executed (the runtime decides, crashsim observes) under callId "unscripted" and
// operationId "unscripted:<16 hex of sha256(tool, args)>".
//
// A call matched to a scenario call whose effect the log already holds, and answered without
// running (preflight: the effect is already there, or the call is refused), leaves no effects
// line; it is a finished call sent again all the same, so it appends {"callId":…,"name":…} to
// the re-sent log (ToolServerOptions::resentLog) before the answer. O2 counts both logs: a tool
// that is idempotent here must not hide a runtime that runs a finished call twice.
//
// Every result the server gives (executed or not, matched or not) is appended as
// {"callId":…,"text":…} to the answers log (ToolServerOptions::answersLog) before it is returned:
// O4 compares the tool results a runtime presents with what each call was really answered.
#pragma once

#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "crashsim/scenario.h"
#include "crashsim/tools.h"

namespace crashsim::open {

struct ToolServerOptions {
  std::filesystem::path workspace;   // the case workspace (a marker is created when missing)
  std::filesystem::path effectsLog;  // the effects log (JSONL, crashsim/tools.h EffectsLog)
  std::string invocationId = "open-harness";  // the effects lines' invocationId
  // Finished calls sent again and answered without running (JSONL, appended; empty = not kept).
  std::filesystem::path resentLog;
  // Every result given: {"callId","text"} (JSONL, appended; empty = not kept). `text` is the
  // result as MCP's text content carries it (the result object, dumped).
  std::filesystem::path answersLog;
  // The crash points (crashsim/open/tool_points.h), for every tools/call that names a scenario
  // tool: "TC" before call(), "TE" after it, "TR" just before serve() writes the answer. Unset =
  // none.
  std::function<void(std::string_view point)> onPoint;
};

struct ToolCallOutcome {
  ToolResult result;      // the tool's result object and isError
  std::string callId;     // the scenario call it was matched to, or "unscripted"
  bool executed = false;  // false: refused or a no-op by preflight (no effects line)
};

class ToolServer {
 public:
  // Throws crashsim::Error when the workspace cannot be opened.
  ToolServer(Scenario scenario, ToolServerOptions options);
  ~ToolServer();

  // The MCP tool descriptors of the scenario's tools (name, description, inputSchema: an object
  // whose string properties are the tool's closed argument set, all required).
  nlohmann::json toolDescriptors() const;
  // Runs one call through preflight and, when dispatched, the implementation.
  ToolCallOutcome call(const std::string& name, const nlohmann::json& args);
  // One JSON-RPC 2.0 message in, its response out; nullopt for a notification (no "id") and
  // for a response sent to us. Methods: initialize, ping, tools/list, tools/call; others are
  // error -32601. tools/call answers {"content":[{"type":"text","text":<result JSON>}],
  // "isError":bool}; an unknown tool or non-object arguments is error -32602.
  std::optional<nlohmann::json> handle(const nlohmann::json& message);
  // MCP stdio transport: newline-delimited JSON-RPC messages from `in`, answers to `out`
  // (flushed per message), until end of input. A line that is not JSON gets error -32700.
  void serve(std::istream& in, std::ostream& out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crashsim::open
