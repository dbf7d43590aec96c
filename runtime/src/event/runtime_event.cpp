// runtime_event.cpp — the strict RuntimeEvent decoder (spec a.1–a.5).
//
// Decoding happens in two passes over a copy of the input:
//  1. normalise every value (numbers to what JavaScript sees, UTF-8 check, non-finite reject);
//  2. validate the closed key sets of every declared level, normalise text content (a.2),
//     fill the typed views and compute the lane (a.5).
// Errors carry a stable code and the JSON path of the offending value. The sections live one per
// file: content (a.2) in decode_content.cpp, actions (a.3) in decode_actions.cpp, the primitives
// in decode_primitives.h; refs (a.4), the lane (a.5) and the top level are here.
#include "crashsim/runtime_event.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <string>
#include <unordered_set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/json_limits.h"
#include "event/decode_primitives.h"
#include "event/utf8.h"

namespace crashsim {
namespace {

using namespace decode;

// ---- refs (a.4) -----------------------------------------------------------------------------

void decodeRefs(const Json& refs, const Path& path, RuntimeEvent& ev) {
  const Obj& o = asObject(refs, path);
  static constexpr std::array<std::string_view, 13> kStringRefs{
      "storedMessageId", "traceEventId",           "toolCallId",
      "providerEventId", "providerRequestTraceId", "artifactId",
      "operationId",     "parentToolCallId",       "parentOperationId",
      "stepId",          "sourceInvocationId",     "sourceRunId",
      "sourceTurnId"};
  for (const auto& [k, v] : o) {
    const Path p = path / k;
    if (std::find(kStringRefs.begin(), kStringRefs.end(), k) != kStringRefs.end()) {
      asString(v, p, false);
    } else if (k == "sourceMessageDigest") {
      if (!isSha256Digest(asString(v, p, false))) {
        fail(code::invalid_digest, p, "must be sha256: followed by 64 lower-case hex digits");
      }
    } else if (k == "sourceRuntimeEventHighWater") {
      ev.refSourceRuntimeEventHighWater = reqSafeInteger(v, p, 0);
    } else {
      fail(code::unknown_key, p, "unknown key \"" + k + "\"");
    }
  }
  if (const Json* v = field(o, "operationId")) ev.refOperationId = v->get<std::string>();
  if (const Json* v = field(o, "toolCallId")) ev.refToolCallId = v->get<std::string>();
  if (const Json* v = field(o, "parentToolCallId")) ev.refParentToolCallId = v->get<std::string>();
  if (const Json* v = field(o, "parentOperationId")) {
    ev.refParentOperationId = v->get<std::string>();
  }
}

// ---- lanes (a.5) ----------------------------------------------------------------------------

bool hasExactKeys(const Json& v, Keys keys) {
  if (!v.is_object() || v.size() != keys.size()) return false;
  for (std::string_view k : keys) {
    if (!v.contains(k)) return false;
  }
  return true;
}

bool functionCallActionsOk(const Json* actions) {
  if (!actions) return true;
  if (!hasExactKeys(*actions, {"stateDelta"})) return false;
  const Json& sd = (*actions)["stateDelta"];
  if (!sd.is_object() || sd.empty()) return false;
  for (const auto& [k, v] : sd.items()) {
    if (k != "activityKind" && k != "displayName" && k != "intent") return false;
    if (!v.is_string()) return false;
  }
  return true;
}

bool functionResponseActionsOk(const Json* actions) {
  if (!actions) return true;
  if (!hasExactKeys(*actions, {"stateDelta"})) return false;
  const Json& sd = (*actions)["stateDelta"];
  return hasExactKeys(sd, {"durationMs"}) && sd["durationMs"].is_number();
}

Lane computeLane(const RuntimeEvent& ev, const Obj& top) {
  int count = 0;
  Lane lane = Lane::ordinary;
  auto add = [&](Lane l) {
    ++count;
    lane = l;
  };
  if (ev.contentKind == ContentKind::function_call) add(Lane::function_call);
  if (ev.toolDispatch) add(Lane::tool_dispatch);
  if (ev.contentKind == ContentKind::function_response) add(Lane::function_response);
  if (ev.toolRecovery) {
    add(ev.toolRecovery->kind == ToolRecovery::Kind::reconcile_result ? Lane::reconcile_result
                                                                      : Lane::recovery_decision);
  }
  if (count == 0) return Lane::ordinary;
  if (count > 1) return Lane::conflict;
  // Mandatory envelope of every tool lane.
  if (ev.partial || ev.status || ev.branch) return Lane::conflict;
  const Json* actions = field(top, "actions");
  const Json* refs = field(top, "refs");
  const bool hasContent = field(top, "content") != nullptr;
  const bool systemEnvelope = ev.role == Role::system && ev.author == Author::system;
  switch (lane) {
    case Lane::function_call:
      if (ev.role != Role::model || ev.author != Author::agent) return Lane::conflict;
      return functionCallActionsOk(actions) ? lane : Lane::conflict;
    case Lane::function_response:
      if (ev.role != Role::tool || ev.author != Author::tool) return Lane::conflict;
      return functionResponseActionsOk(actions) ? lane : Lane::conflict;
    case Lane::tool_dispatch:
      if (hasContent || !systemEnvelope) return Lane::conflict;
      if (!hasExactKeys(*actions, {"toolDispatch"})) return Lane::conflict;
      if (!refs || !(hasExactKeys(*refs, {"operationId", "toolCallId"}) ||
                     hasExactKeys(*refs, {"operationId", "toolCallId", "parentToolCallId",
                                          "parentOperationId"}))) {
        return Lane::conflict;
      }
      return lane;
    case Lane::reconcile_result:
    case Lane::recovery_decision:
      if (hasContent || !systemEnvelope) return Lane::conflict;
      if (!hasExactKeys(*actions, {"toolRecovery"})) return Lane::conflict;
      if (!refs || !hasExactKeys(*refs, {"operationId", "toolCallId"})) return Lane::conflict;
      return lane;
    default:
      return lane;
  }
}

}  // namespace

bool RuntimeEvent::isTerminal() const {
  return hasEndInvocation || (status && *status != EventStatus::streaming);
}

bool RuntimeEvent::isModelVisible() const { return !hidden && hasModelVisibleContent; }

RuntimeEvent decodeRuntimeEvent(const Json& value) { return decodeRuntimeEvent(Json(value)); }

RuntimeEvent decodeRuntimeEvent(Json&& value) {
  const Path root;
  RuntimeEvent ev;
  ev.json = std::move(value);
  Json& j = ev.json;
  normalizeValue(j, root);
  const Obj& top = asObject(j, root);
  checkKeys(
      top, root,
      {"id", "invocationId", "runId", "sessionId", "turnId", "ts", "partial", "role", "author"},
      {"branch", "origin", "modelVisibility", "status", "content", "actions", "refs"});
  ev.id = reqString(top, "id", root, true);
  ev.invocationId = reqString(top, "invocationId", root, true);
  ev.runId = reqString(top, "runId", root, true);
  ev.sessionId = reqString(top, "sessionId", root, true);
  ev.turnId = reqString(top, "turnId", root, true);
  ev.ts = reqFiniteNumber(top.at("ts"), root / "ts");
  if (!top.at("partial").is_boolean())
    fail(code::wrong_type, root / "partial", "must be a boolean");
  ev.partial = top.at("partial").get<bool>();
  ev.role = static_cast<Role>(enumIndex(top.at("role"), root / "role", kRoles));
  ev.author = static_cast<Author>(enumIndex(top.at("author"), root / "author", kAuthors));
  if (const std::string* b = optString(top, "branch", root)) ev.branch = *b;
  if (const Json* o = field(top, "origin")) {
    ev.origin = std::string(kOrigins[enumIndex(*o, root / "origin", kOrigins)]);
  }
  if (const Json* m = field(top, "modelVisibility")) {
    ev.hidden = enumIndex(*m, root / "modelVisibility", kVisibilities) == 1;
  }
  if (const Json* s = field(top, "status")) {
    ev.status = static_cast<EventStatus>(enumIndex(*s, root / "status", kStatuses));
  }
  if (auto it = j.find("content"); it != j.end()) decodeContent(*it, root / "content", ev);
  if (const Json* a = field(top, "actions")) decodeActions(*a, root / "actions", ev);
  if (const Json* r = field(top, "refs")) decodeRefs(*r, root / "refs", ev);
  ev.lane = computeLane(ev, top);
  if (ev.contentKind == ContentKind::function_call) {
    try {
      ev.callArgsHash = canonicalArgsHash(ev.toolName, j["content"]["args"]);
    } catch (const Error&) {
      ev.callArgsHash.reset();
    }
  }
  return ev;
}

std::string encodeRuntimeEvent(const RuntimeEvent& event) { return stableJson(event.json); }

std::vector<RuntimeEvent> decodeRuntimeEventList(std::string_view text) {
  std::vector<RuntimeEvent> out;
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return out;
  if (text[start] == '[') {
    Json arr;
    try {
      arr = parseJson(text, kMaxJsonDepth + 1);  // the array, then events as the store holds them
    } catch (const Error& e) {
      throw EventListError(e, std::nullopt);
    }
    out.reserve(arr.size());
    for (size_t i = 0; i < arr.size(); ++i) {
      try {
        out.push_back(decodeRuntimeEvent(std::move(arr[i])));
      } catch (const Error& e) {
        throw EventListError(e, i);
      }
    }
    return out;
  }
  out.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  size_t index = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      out.push_back(decodeRuntimeEvent(parseJson(line)));
    } catch (const Error& e) {
      throw EventListError(e, index);
    }
    ++index;
  }
  return out;
}

std::string_view toString(Role r) { return kRoles[static_cast<size_t>(r)]; }
std::string_view toString(Author a) { return kAuthors[static_cast<size_t>(a)]; }
std::string_view toString(EventStatus s) { return kStatuses[static_cast<size_t>(s)]; }
std::string_view toString(ContentKind k) {
  return k == ContentKind::none ? std::string_view("none")
                                : kContentKinds[static_cast<size_t>(k) - 1];
}
std::string_view toString(Lane l) {
  static constexpr std::array<std::string_view, 7> kLanes{
      "ordinary",         "function_call",     "tool_dispatch", "function_response",
      "reconcile_result", "recovery_decision", "conflict"};
  return kLanes[static_cast<size_t>(l)];
}

}  // namespace crashsim