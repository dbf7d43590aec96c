// The deterministic scripted model provider (crashsim/agent.h).
#include <map>
#include <set>

#include "crashsim/agent.h"
#include "crashsim/codes.h"

namespace crashsim {

std::string reissuedCallId(const std::string& scriptedId, size_t n) {
  std::string id = scriptedId;
  id += '~';
  id += std::to_string(n);
  return id;
}

std::string scriptedCallIdOf(const std::string& providerCallId) {
  return providerCallId.substr(0, providerCallId.find('~'));
}

bool isNeverRanStopClosure(const RuntimeEvent& e) {
  if (e.contentKind != ContentKind::function_response || !e.isError) return false;
  const Json& result = e.json.at("content").value("result", Json());
  if (!result.is_object() || !result.contains("error") || !result["error"].is_object())
    return false;
  const std::string c = result["error"].value("code", "");
  return c == code::cancelled_before_dispatch || c == code::not_started;
}

ModelStep ScriptedModel::nextStep(std::span<const RuntimeEvent> history) const {
  // By scripted call id: issued at all, answered by a response that is not a never-ran closure,
  // and how many never-ran closures it has had.
  std::set<std::string> called, answered;
  std::map<std::string, size_t> neverRan;
  for (const auto& e : history) {
    if (!e.isModelVisible()) continue;
    const std::string id = scriptedCallIdOf(e.callId);
    if (e.contentKind == ContentKind::function_call) called.insert(id);
    if (e.contentKind != ContentKind::function_response) continue;
    if (isNeverRanStopClosure(e))
      ++neverRan[id];
    else
      answered.insert(id);
  }
  const auto& model = scenario_.model;
  for (size_t i = 0; i < model.size(); ++i) {
    const ScriptedStep& step = model[i];
    if (step.calls.empty()) break;  // the final answer (only the last step has no calls)
    ModelStep out;
    out.scriptIndex = i;
    bool anyIssued = false;
    for (const auto& call : step.calls) {
      if (called.count(call.id)) anyIssued = true;
      if (!answered.count(call.id)) {
        const auto n = neverRan.find(call.id);
        out.calls.push_back(
            ToolCallRequest{n == neverRan.end() ? call.id : reissuedCallId(call.id, n->second),
                            call.name, call.args});
      }
    }
    if (out.calls.empty()) continue;  // fully answered
    if (!anyIssued) out.text = step.text;
    return out;
  }
  ModelStep final;
  final.scriptIndex = model.size() - 1;
  final.text = model.back().text;
  return final;
}

}  // namespace crashsim
