// O4 (verdicts/o4_history.h).
#include "verdicts/o4_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>

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

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool containsAny(const std::string& text, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&text](const char* w) { return text.find(w) != std::string::npos; });
}

// The result admits that the outcome is not known (the contract's `outcome_unknown: …`, or
// words to that effect): never a claim either way.
bool saysUnknown(const std::string& lowered) {
  return containsAny(lowered, {"unknown", "uncertain", "indeterminate", "may have", "might have",
                               "may or may not", "not known"});
}

// The result tells the model the call did not happen: the phrases runtimes put into a synthetic
// result for a call they give up on (not executed, cancelled, skipped, rejected …), unless it
// also says the outcome is unknown.
bool saysNotExecuted(const std::string& text) {
  const std::string t = lower(text);
  return !saysUnknown(t) &&
         containsAny(
             t, {"not executed", "not_executed", "not been executed", "never executed", "never ran",
                 "never run", "was not run", "wasn't run", "did not run", "didn't run",
                 "not performed", "cancelled", "canceled", "skipped", "rejected", "aborted"});
}

// The result is an error (a JSON object with "error", or text that starts with "error") or admits
// an unknown outcome: either way no success.
bool isErrorOrUnknown(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("error")) return true;
  const std::string t = lower(text);
  const auto start = t.find_first_not_of(" \t\r\n[");
  return saysUnknown(t) || (start != std::string::npos && t.compare(start, 5, "error") == 0);
}

// The scenario call other than `id` that the tool server gave exactly `text`, when `id` itself
// was never given it: a result presented under the wrong call ("" = none such).
std::string answeredTo(const OpenEvidence& ev, const std::string& id, const std::string& text) {
  if (const auto own = ev.answers.find(id); own != ev.answers.end() && own->second.count(text))
    return "";
  for (const auto& [other, texts] : ev.answers)
    if (other != id && other != "unscripted" && texts.count(text)) return other;
  return "";
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
      if (const std::string other = answeredTo(ev, id, text); !other.empty())
        return fmt::format(
            "request {} presents the result the tool server gave {} as the result of {} ({})", seq,
            other, id, call->name);
      const bool ranBefore = ev.effectsBeforeResume.count(id) > 0;
      if (ranBefore && saysNotExecuted(text))
        return fmt::format(
            "request {} presents {} ({}) as not executed, but its effect ran "
            "before the crash",
            seq, id, call->name);
      if (call->name != "Read" && call->dispatched() && !ev.effects.count(id) &&
          !saysNotExecuted(text) && !isErrorOrUnknown(text))
        return fmt::format("request {} presents {} ({}) as a success, but its effect never ran",
                           seq, id, call->name);
    }
  }
  return "";
}

}  // namespace crashsim::harness
