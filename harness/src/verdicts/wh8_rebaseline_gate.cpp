// WH8: the read-before-write gate of a rebaselined epoch (wh8_rebaseline_gate.h).
#include "verdicts/wh8_rebaseline_gate.h"

#include <fmt/format.h>

#include <set>

#include "crashsim/agent.h"
#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"

namespace crashsim::harness::wh8 {
namespace fs = std::filesystem;

std::string gateProblem(const fs::path& store, const crashsim::Scenario& scenario,
                        const PredictedRebaseline& at) {
  try {
    StoreOptions ro;
    ro.readOnly = true;
    auto st = RuntimeStore::open(store, ro);
    int64_t epoch = 0;
    for (const WorkspaceEpochRow& e : listWorkspaceEpochs(*st))
      if (e.openedReason == "user_rebaseline") epoch = e.epoch;
    if (epoch == 0) return "no epoch was opened by user_rebaseline";
    // The paths each gated call writes, from the scenario.
    std::map<std::string, std::string> pathOf;
    for (const auto& step : scenario.model)
      for (const auto& call : step.calls)
        if (std::find(at.gatedCalls.begin(), at.gatedCalls.end(), call.id) != at.gatedCalls.end())
          pathOf[call.id] = call.args.value("path", "");
    std::set<std::string> answered;
    for (const RunHeader& h : st->listRuns(scenarioSessionId(scenario))) {
      if (!h.workspaceBoundary || h.workspaceBoundary->value("epoch", int64_t{0}) != epoch)
        continue;
      for (const StoredEvent& se : st->readRunEvents(h.sessionId, h.runId)) {
        const Json& j = se.event.json;
        const std::string refCall = j.value("refs", Json::object()).value("toolCallId", "");
        if (j.contains("actions") && j["actions"].contains("toolDispatch") && pathOf.count(refCall))
          return fmt::format("the gated {} of run {} was dispatched", refCall, h.runId);
        const Json& c = j.value("content", Json::object());
        if (c.value("kind", "") != "function_response") continue;
        const std::string id = c.value("id", "");
        if (!pathOf.count(id)) continue;
        const Json want{{"error",
                         {{"code", "rebaseline_read_required"},
                          {"message", fmt::format("read {} again before writing it (workspace "
                                                  "epoch {})",
                                                  Json(pathOf[id]).dump(), epoch)}}}};
        if (c.value("result", Json()) != want || !c.value("isError", false))
          return fmt::format("the gated {} of run {} was answered {}", id, h.runId,
                             c.value("result", Json()).dump());
        answered.insert(id);
      }
    }
    for (const auto& [id, path] : pathOf)
      if (!answered.count(id))
        return "no run bound to epoch " + std::to_string(epoch) + " answered the gated " + id;
    return "";
  } catch (const std::exception& e) {
    return std::string("the store cannot be read: ") + e.what();
  }
}

}  // namespace crashsim::harness::wh8
