// Event builders of the agent run loop: every event is built as JSON and decoded strictly.
#include <chrono>

#include "crashsim/agent.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {

namespace {

Json envelope(const RunIdentity& id, const std::string& eventId, double ts, const char* role,
              const char* author) {
  Json e = Json::object();
  e["id"] = eventId;
  e["invocationId"] = id.invocationId;
  e["sessionId"] = id.sessionId;
  e["runId"] = id.runId;
  e["turnId"] = id.turnId;
  e["ts"] = ts;
  e["partial"] = false;
  e["role"] = role;
  e["author"] = author;
  return e;
}

}  // namespace

RunIdentity identityOf(const RunHeader& header) {
  return RunIdentity{header.sessionId, header.invocationId, header.runId, header.turnId};
}

double RunClock::now() {
  if (driven_) return last_ += 1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  double t = static_cast<double>(ms);
  if (t <= last_) t = last_ + 1;
  last_ = t;
  return t;
}

namespace agent_events {

RuntimeEvent userEvent(const RunIdentity& id, double ts, const std::string& text,
                       bool protocolMarker) {
  Json e = envelope(id, id.invocationId + "_user", ts, "user", "user");
  e["content"] = Json{{"kind", "text"}, {"text", text}};
  if (protocolMarker) {
    e["actions"] =
        Json{{"runtimeProtocol", Json{{"toolBoundary", std::string(code::t1_after_preflight_v1)}}}};
  }
  return decodeRuntimeEvent(e);
}

RuntimeEvent textEvent(const RunIdentity& id, const std::string& eventId, double ts,
                       const std::string& text) {
  Json e = envelope(id, eventId, ts, "model", "agent");
  e["content"] = Json{{"kind", "text"}, {"text", text}};
  return decodeRuntimeEvent(e);
}

RuntimeEvent callEvent(const RunIdentity& id, const std::string& operationId, double ts,
                       const ToolCallRequest& call) {
  Json e = envelope(id, operationId + "_call", ts, "model", "agent");
  e["content"] = Json{
      {"kind", "function_call"}, {"id", call.callId}, {"name", call.toolName}, {"args", call.args}};
  return decodeRuntimeEvent(e);
}

RuntimeEvent dispatchEvent(const RunIdentity& id, const std::string& operationId, double ts,
                           const ToolCallRequest& call, const std::string& argsHash,
                           const std::string& recoveryMode,
                           const std::optional<Json>& fileEvidence) {
  Json e = envelope(id, operationId + "_dispatch", ts, "system", "system");
  Json dispatch = Json{{"protocol", std::string(code::t1_after_preflight_v1)},
                       {"operationId", operationId},
                       {"providerToolCallId", call.callId},
                       {"toolName", call.toolName},
                       {"canonicalArgsHash", argsHash},
                       {"recoveryMode", recoveryMode}};
  if (fileEvidence) dispatch["fileEvidence"] = *fileEvidence;
  e["actions"] = Json{{"toolDispatch", dispatch}};
  e["refs"] = Json{{"operationId", operationId}, {"toolCallId", call.callId}};
  return decodeRuntimeEvent(e);
}

RuntimeEvent responseEvent(const RunIdentity& id, const std::string& operationId, double ts,
                           const ToolCallRequest& call, const Json& result, bool isError,
                           bool bound) {
  Json e = envelope(id, operationId + "_response", ts, "tool", "tool");
  Json content = Json{{"kind", "function_response"},
                      {"id", call.callId},
                      {"name", call.toolName},
                      {"result", result}};
  if (isError) content["isError"] = true;
  e["content"] = content;
  if (bound) e["refs"] = Json{{"operationId", operationId}, {"toolCallId", call.callId}};
  return decodeRuntimeEvent(e);
}

}  // namespace agent_events
}  // namespace crashsim
