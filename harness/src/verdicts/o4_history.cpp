// O4 (verdicts/o4_history.h).
#include "verdicts/o4_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace crashsim::harness {
namespace {

using nlohmann::json;

std::string textOf(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        out += part["text"].get<std::string>();
  return out;
}

bool saysNotExecuted(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* words : {"not executed", "not_executed", "never ran", "was not run"})
    if (text.find(words) != std::string::npos) return true;
  return false;
}

bool isError(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  return j.is_object() && j.contains("error");
}

}  // namespace

OpenVerdict judgeO4History(const OpenEvidence& ev) {
  for (size_t i = static_cast<size_t>(ev.requestsBeforeResume); i < ev.modelLog.size(); ++i) {
    const json& request = ev.modelLog[i];
    const int seq = request.value("seq", static_cast<int>(i) + 1);
    if (request.contains("finding") && request["finding"].is_object())
      return fmt::format(
          "request {} after the crash is a history the scenario cannot explain: {} "
          "({})",
          seq, request["finding"].value("kind", "?"), request["finding"].value("detail", ""));
    if (!request.contains("messages") || !request["messages"].is_array()) continue;
    for (const json& m : request["messages"]) {
      if (!m.is_object() || m.value("role", "") != "tool") continue;
      const std::string id = m.value("tool_call_id", "");
      const auto call = std::find_if(ev.scenario->calls.begin(), ev.scenario->calls.end(),
                                     [&](const ScenarioCall& c) { return c.id == id; });
      if (call == ev.scenario->calls.end()) continue;
      const std::string text = textOf(m.value("content", json()));
      const bool ranBefore = ev.effectsBeforeResume.count(id) > 0;
      if (ranBefore && saysNotExecuted(text))
        return fmt::format(
            "request {} presents {} ({}) as not executed, but its effect ran "
            "before the crash",
            seq, id, call->name);
      if (call->name != "Read" && call->dispatched() && !ev.effects.count(id) &&
          !saysNotExecuted(text) && !isError(text))
        return fmt::format("request {} presents {} ({}) as a success, but its effect never ran",
                           seq, id, call->name);
    }
  }
  return "";
}

}  // namespace crashsim::harness
