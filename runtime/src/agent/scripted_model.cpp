// The deterministic scripted model provider (crashsim/agent.h).
#include <set>

#include "crashsim/agent.h"

namespace crashsim {

ModelStep ScriptedModel::nextStep(std::span<const RuntimeEvent> history) const {
  std::set<std::string> called, answered;
  for (const auto& e : history) {
    if (!e.isModelVisible()) continue;
    if (e.contentKind == ContentKind::function_call) called.insert(e.callId);
    if (e.contentKind == ContentKind::function_response) answered.insert(e.callId);
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
        out.calls.push_back(ToolCallRequest{call.id, call.name, call.args});
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
