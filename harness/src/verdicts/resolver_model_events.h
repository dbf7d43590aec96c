// resolver_model_events.h — how the resolver model reads one event (resolver_model.h): plain
// field access on its canonical JSON, its lane by field presence and mandatory envelope (spec
// a.5), its execution identity, and the operation the scanner binds events into.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crashsim/json.h"

namespace crashsim::model::impl {

inline const Json* field(const Json& o, const char* k) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}
inline std::string str(const Json& o, const char* k) {
  const Json* v = field(o, k);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}
inline bool keysExactly(const Json& o, std::set<std::string> keys) {
  if (!o.is_object() || o.size() != keys.size()) return false;
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!keys.count(it.key())) return false;
  return true;
}

enum class L { ordinary, call, dispatch, response, reconcile, decision, conflict };

// a.5: lanes by field presence, then each lane's mandatory envelope.
inline L laneOf(const Json& e) {
  const Json* content = field(e, "content");
  const Json* actions = field(e, "actions");
  const Json* refs = field(e, "refs");
  const std::string kind = content ? str(*content, "kind") : "";
  std::vector<L> lanes;
  if (kind == "function_call") lanes.push_back(L::call);
  if (actions && field(*actions, "toolDispatch")) lanes.push_back(L::dispatch);
  if (kind == "function_response") lanes.push_back(L::response);
  if (actions && field(*actions, "toolRecovery")) {
    const std::string rk = str(*field(*actions, "toolRecovery"), "kind");
    if (rk == "maka.tool.reconcile_result") lanes.push_back(L::reconcile);
    if (rk == "maka.tool.recovery_decision") lanes.push_back(L::decision);
  }
  if (lanes.empty()) return L::ordinary;
  if (lanes.size() > 1) return L::conflict;
  const L lane = lanes[0];
  const Json* partial = field(e, "partial");
  if ((partial && *partial == true) || field(e, "status") || field(e, "branch")) return L::conflict;
  const std::string role = str(e, "role"), author = str(e, "author");
  switch (lane) {
    case L::call: {
      if (role != "model" || author != "agent") return L::conflict;
      if (!actions) return lane;
      if (!keysExactly(*actions, {"stateDelta"})) return L::conflict;
      const Json& sd = (*actions)["stateDelta"];
      if (!sd.is_object() || sd.empty()) return L::conflict;
      for (auto it = sd.begin(); it != sd.end(); ++it) {
        if (it.key() != "activityKind" && it.key() != "displayName" && it.key() != "intent")
          return L::conflict;
        if (!it.value().is_string()) return L::conflict;
      }
      return lane;
    }
    case L::response: {
      if (role != "tool" || author != "tool") return L::conflict;
      if (!actions) return lane;
      if (!keysExactly(*actions, {"stateDelta"})) return L::conflict;
      const Json& sd = (*actions)["stateDelta"];
      if (!keysExactly(sd, {"durationMs"}) || !sd["durationMs"].is_number()) return L::conflict;
      return lane;
    }
    case L::dispatch: {
      if (content || role != "system" || author != "system") return L::conflict;
      if (!keysExactly(*actions, {"toolDispatch"})) return L::conflict;
      if (!refs) return L::conflict;
      if (!keysExactly(*refs, {"operationId", "toolCallId"}) &&
          !keysExactly(*refs,
                       {"operationId", "toolCallId", "parentToolCallId", "parentOperationId"}))
        return L::conflict;
      return lane;
    }
    default: {  // reconcile / decision
      if (content || role != "system" || author != "system") return L::conflict;
      if (!keysExactly(*actions, {"toolRecovery"})) return L::conflict;
      if (!refs || !keysExactly(*refs, {"operationId", "toolCallId"})) return L::conflict;
      return lane;
    }
  }
}

struct Op {
  std::string inv, callId;
  std::optional<std::string> toolName, opId;
  std::optional<size_t> call, dispatch, response;
  std::vector<size_t> reconciles, decisions;
  std::vector<std::string> issues;
};

struct Exec {  // (session, invocation, run, turn)
  std::string s, i, r, t;
  bool operator==(const Exec&) const = default;
};
inline Exec execOf(const Json& e) {
  return {str(e, "sessionId"), str(e, "invocationId"), str(e, "runId"), str(e, "turnId")};
}

}  // namespace crashsim::model::impl
