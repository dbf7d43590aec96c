// resolver_fixtures.h — builders for RuntimeEvent ledgers used by the scanner, resolver and
// resume-plan tests. Every event goes through decodeRuntimeEvent(), the only producer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"

namespace crashsim::testing {

using Mutate = std::function<void(Json&)>;

inline std::string digestOf(char c) { return "sha256:" + std::string(64, c); }

// One run's ledger with a fixed execution identity (overridable per event via Mutate).
struct Ledger {
  std::string session = "session-1";
  std::string invocation = "invocation-1";
  std::string run = "run-1";
  std::string turn = "turn-1";
  double ts = 1;
  std::vector<RuntimeEvent> events;

  Json envelope(const std::string& id, const char* role, const char* author) {
    return Json{{"id", id},         {"invocationId", invocation},
                {"runId", run},     {"sessionId", session},
                {"turnId", turn},   {"ts", ts++},
                {"partial", false}, {"role", role},
                {"author", author}};
  }

  const RuntimeEvent& push(Json j, const Mutate& mutate = {}) {
    if (mutate) mutate(j);
    events.push_back(decodeRuntimeEvent(j));
    return events.back();
  }

  const RuntimeEvent& user(const std::string& id, bool marker = false, const Mutate& m = {}) {
    Json j = envelope(id, "user", "user");
    j["content"] = {{"kind", "text"}, {"text", "run the tool"}};
    if (marker) j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
    return push(std::move(j), m);
  }

  const RuntimeEvent& text(const std::string& id, const std::string& text, const Mutate& m = {}) {
    Json j = envelope(id, "model", "agent");
    j["content"] = {{"kind", "text"}, {"text", text}};
    return push(std::move(j), m);
  }

  const RuntimeEvent& call(const std::string& id, const std::string& callId,
                           const std::string& name, const Json& args, const Mutate& m = {}) {
    Json j = envelope(id, "model", "agent");
    j["content"] = {{"kind", "function_call"}, {"id", callId}, {"name", name}, {"args", args}};
    return push(std::move(j), m);
  }

  const RuntimeEvent& dispatch(const std::string& id, const std::string& operationId,
                               const std::string& callId, const std::string& name, const Json& args,
                               const std::string& mode = "reconcile", const Mutate& m = {}) {
    Json j = envelope(id, "system", "system");
    j["actions"] = {{"toolDispatch",
                     {{"protocol", "t1_after_preflight_v1"},
                      {"operationId", operationId},
                      {"providerToolCallId", callId},
                      {"toolName", name},
                      {"canonicalArgsHash", canonicalArgsHash(name, args)},
                      {"recoveryMode", mode}}}};
    j["refs"] = {{"operationId", operationId}, {"toolCallId", callId}};
    return push(std::move(j), m);
  }

  // operationId empty → unbound (legacy / pre-T1 synthetic) response without refs.
  const RuntimeEvent& response(const std::string& id, const std::string& callId,
                               const std::string& name, const std::string& operationId = {},
                               bool isError = false, const Mutate& m = {}) {
    Json j = envelope(id, "tool", "tool");
    j["content"] = {{"kind", "function_response"},
                    {"id", callId},
                    {"name", name},
                    {"result", {{"exitCode", 0}}}};
    if (isError) j["content"]["isError"] = true;
    if (!operationId.empty()) j["refs"] = {{"operationId", operationId}, {"toolCallId", callId}};
    return push(std::move(j), m);
  }

  const RuntimeEvent& reconcile(const std::string& id, const std::string& operationId,
                                const std::string& callId, const std::string& observation,
                                const Mutate& m = {}) {
    Json j = envelope(id, "system", "system");
    j["actions"] = {{"toolRecovery",
                     {{"kind", "maka.tool.reconcile_result"},
                      {"version", 1},
                      {"payload",
                       {{"protocol", "tool_reconcile_v1"},
                        {"operationId", operationId},
                        {"observation", observation},
                        {"observationSchema", "state_identity_v1"},
                        {"observationDigest", digestOf('a')}}}}}};
    j["refs"] = {{"operationId", operationId}, {"toolCallId", callId}};
    return push(std::move(j), m);
  }

  const RuntimeEvent& decision(const std::string& id, const std::string& operationId,
                               const std::string& callId, const std::string& disposition,
                               const std::string& reasonCode,
                               const std::vector<std::string>& evidence,
                               const std::string& outcomeEventId = {}, const Mutate& m = {}) {
    Json j = envelope(id, "system", "system");
    Json payload = {{"protocol", "tool_recovery_v1"},
                    {"operationId", operationId},
                    {"disposition", disposition},
                    {"reasonCode", reasonCode},
                    {"evidenceEventIds", evidence}};
    if (!outcomeEventId.empty()) payload["outcomeEventId"] = outcomeEventId;
    j["actions"] = {
        {"toolRecovery",
         {{"kind", "maka.tool.recovery_decision"}, {"version", 1}, {"payload", payload}}}};
    j["refs"] = {{"operationId", operationId}, {"toolCallId", callId}};
    return push(std::move(j), m);
  }

  const RuntimeEvent& terminal(const std::string& id, const Mutate& m = {}) {
    Json j = envelope(id, "system", "system");
    j["status"] = "failed";
    j["actions"] = {{"endInvocation", true}};
    return push(std::move(j), m);
  }

  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    for (const RuntimeEvent& e : events) out.push_back(e.id);
    return out;
  }
};

inline const Json kWriteArgs = Json{{"path", "notes.txt"}, {"content", "after"}};

// Standard new-protocol T1 prefix: marker user, call, dispatch (Write, reconcile mode).
inline Ledger newProtocolT1(const std::string& mode = "reconcile") {
  Ledger l;
  l.user("user-1", true);
  l.call("op-1_call", "call-1", "Write", kWriteArgs);
  l.dispatch("op-1_dispatch", "op-1", "call-1", "Write", kWriteArgs, mode);
  return l;
}

// call, dispatch, reconcile(matches_expected_state), outcome, completed decision.
inline Ledger completedBundle() {
  Ledger l = testing::newProtocolT1();
  l.reconcile("rec", "op-1", "call-1", "matches_expected_state");
  l.response("op-1_response", "call-1", "Write", "op-1");
  l.decision("dec", "op-1", "call-1", "completed", "reconcile_matches_expected_state",
             {"op-1_call", "op-1_dispatch", "rec", "op-1_response"}, "op-1_response");
  return l;
}

inline Ledger parkedBundle(const std::string& observation = "matches_prior_state",
                           const std::string& reason = "reconcile_matches_prior_state") {
  Ledger l = testing::newProtocolT1();
  l.reconcile("rec", "op-1", "call-1", observation);
  l.decision("dec", "op-1", "call-1", "parked", reason, {"op-1_call", "op-1_dispatch", "rec"});
  return l;
}

}  // namespace crashsim::testing
