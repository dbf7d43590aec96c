// crashsim/open/model_server.h — the scripted model server of the open harness (protocol
// section 4): an OpenAI-compatible Chat Completions endpoint on 127.0.0.1 that answers from a
// scenario's `model` steps.
//
// The step answered is a pure function of the request's message history (explainHistory), never
// of a counter in the server: after a crash and a resume, the runtime re-sends its history and
// gets the answer that history deserves. A history the scenario cannot explain is a finding:
// it is logged, kept (findings()) and answered with HTTP 400 and an OpenAI-style error body
// {"error":{"message","type":"invalid_request_error","code":"crashsim_<kind>"}} (400 is never
// retried by the OpenAI clients, so a broken resume stops instead of quietly continuing).
//
// Every request is appended to the model log (JSONL, one line per request, flushed before the
// answer is sent): {"seq","path","stream","status","messages","step"|null,"finding"|null}.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/scenario.h"

namespace crashsim::open {

// What a history means for a scenario: the index of the model step it deserves, or why no step
// explains it. Finding kinds (stable): no_user_message, user_repeated, user_mismatch,
// assistant_turn_mismatch, unknown_tool_result, duplicate_tool_result, missing_tool_result,
// history_beyond_script, malformed_history.
struct HistoryExplanation {
  std::optional<size_t> step;  // set when the history is explained
  std::string finding;         // the kind, when it is not
  std::string detail;          // one line for people
};

// The pure function of the server: reads `messages` (the Chat Completions request's array;
// system and developer messages are ignored) and returns the step that answers it. A history is
// explained when it is the user message (equal to scenario.user) once, then for k = 0.. the
// assistant turn of step k (exactly its tool calls: ids, names and arguments; text is free)
// followed by exactly one tool result per call of that step, and nothing else; the answer is
// step k+1 (step 0 after the user message alone).
HistoryExplanation explainHistory(const Scenario& scenario, const nlohmann::json& messages);

// The answer bodies for a step (also used by tests to state what a client must receive).
// Non-streaming: a chat.completion object. Streaming: the SSE stream as text ("data: {chunk}\n\n"
// per chunk, then "data: [DONE]\n\n"): a role chunk, the text as one content chunk, one chunk per
// tool call (index, id, type, function name and arguments), the finish chunk (finish_reason
// "tool_calls" or "stop"), and a usage chunk when the request asked for it
// (stream_options.include_usage).
// `id` is the completion's id (every chunk's too): completionId().
nlohmann::json completionBody(const ScriptedStep& step, const std::string& model,
                              const std::string& id);
std::string completionSse(const ScriptedStep& step, const std::string& model, const std::string& id,
                          bool includeUsage);
// "chatcmpl-crashsim-<scenario id>-<step>": the same for the same step (a re-sent history gets
// the same answer), different between steps — clients key messages by it (LangGraph's messages
// reducer replaces a message whose id it already holds, so one id for every answer would make
// each answer overwrite the one before).
std::string completionId(const Scenario& scenario, size_t step);

struct ModelServerOptions {
  std::filesystem::path logPath;  // the model log (JSONL); empty = no log
  uint16_t port = 0;              // 0 = an ephemeral port
  // The crash points of the model (protocol section 5), called on the connection's thread:
  // ("MQ", n) when the n-th chat request was received and logged, before its answer is sent;
  // ("MA", n) when the n-th answer with status 200 was fully written. Returning true at MQ
  // drops the connection without an answer (the caller killed the runtime). Counted per
  // server, from 1; unset = no points.
  std::function<bool(std::string_view point, int hit)> onPoint;
};

// The HTTP server: POST /v1/chat/completions (also /chat/completions) on 127.0.0.1. One thread
// accepts, one thread per connection (keep-alive honoured). GET /v1/models lists one model
// ("crashsim-scripted"). Other paths are 404, other methods 405, a body that is not a JSON object
// with a "messages" array 400 (and a malformed_history finding).
class ModelServer {
 public:
  ModelServer(Scenario scenario, ModelServerOptions options);
  ~ModelServer();  // stop()
  ModelServer(const ModelServer&) = delete;
  ModelServer& operator=(const ModelServer&) = delete;

  // Binds and starts serving; returns the port. Throws std::runtime_error when it cannot bind.
  uint16_t start();
  // Stops accepting, closes every connection and joins the threads. Idempotent.
  void stop();
  uint16_t port() const;
  // "http://127.0.0.1:<port>/v1" — the base URL an OpenAI client is given.
  std::string baseUrl() const;
  // The findings so far, one object per unexplained request: {"seq","finding","detail"}.
  std::vector<nlohmann::json> findings() const;
  // Requests answered so far (any status).
  size_t requestCount() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace crashsim::open
