// inspect_workspace.cpp — the workspace lineage of `crashsim inspect` (contract b.6).
#include "cli/inspect_workspace.h"

#include <fmt/format.h>

#include <iostream>

#include "crashsim/workspace_facts.h"

namespace crashsim::cli {

std::optional<Json> workspaceLineageJson(const RuntimeStore& store) {
  const auto epochs = listWorkspaceEpochs(store);
  const auto checkpoints = listWorkspaceCheckpoints(store);
  const auto transitions = listWorkspaceTransitions(store);
  if (epochs.empty() && checkpoints.empty() && transitions.empty()) return std::nullopt;
  Json out{
      {"epochs", Json::array()}, {"checkpoints", Json::array()}, {"transitions", Json::array()}};
  for (const auto& e : epochs)
    out["epochs"].push_back(Json{{"workspaceId", e.workspaceId},
                                 {"epoch", e.epoch},
                                 {"instanceIdentity", e.instanceIdentity},
                                 {"canonicalRoot", e.canonicalRoot},
                                 {"origin", e.instanceOrigin},
                                 {"openedReason", e.openedReason},
                                 {"sealed", e.sealedByEventId.has_value()}});
  for (const auto& c : checkpoints)
    out["checkpoints"].push_back(
        Json{{"checkpointId", c.checkpointId},
             {"epoch", c.epoch},
             {"kind", c.kind},
             {"coveredRunId", c.coveredRunId},
             {"coveredEventSeq", c.coveredEventSeq},
             {"treeOid", c.treeOid},
             {"refName", c.refName},
             {"derivedFrom", c.derivedFrom ? Json(*c.derivedFrom) : Json(nullptr)}});
  for (const auto& t : transitions)
    out["transitions"].push_back(
        Json{{"workspaceId", t.workspaceId},
             {"fromEpoch", t.fromEpoch},
             {"toEpoch", t.toEpoch},
             {"reason", t.reason},
             {"fromInstance", t.fromInstance},
             {"toInstance", t.toInstance},
             {"sourceCheckpointId",
              t.sourceCheckpointId ? Json(*t.sourceCheckpointId) : Json(nullptr)}});
  const std::string issue = scanWorkspaceLineage(store);
  out["scan"] = issue.empty() ? std::string("clean") : issue;
  return out;
}

void printWorkspaceLineage(const Json& lineage) {
  std::cout << fmt::format("\nworkspace lineage (scan {})\n", lineage.value("scan", "?"));
  for (const auto& e : lineage["epochs"])
    std::cout << fmt::format("  epoch {} of {}: instance {} ({}, {}) at {}{}\n",
                             e["epoch"].get<int64_t>(), e.value("workspaceId", "?"),
                             e.value("instanceIdentity", "?"), e.value("origin", "?"),
                             e.value("openedReason", "?"), e.value("canonicalRoot", "?"),
                             e.value("sealed", false) ? ", sealed" : ", current");
  for (const auto& c : lineage["checkpoints"])
    std::cout << fmt::format(
        "  checkpoint {} (epoch {}, {}) covers {}#{}, tree {}{}\n", c.value("checkpointId", "?"),
        c["epoch"].get<int64_t>(), c.value("kind", "?"), c.value("coveredRunId", "?"),
        c["coveredEventSeq"].get<int64_t>(), c.value("treeOid", "?"),
        c["derivedFrom"].is_string() ? ", from " + c["derivedFrom"].get<std::string>()
                                     : std::string());
  for (const auto& t : lineage["transitions"])
    std::cout << fmt::format(
        "  transition epoch {} -> {} ({}): {} -> {}, source {}\n", t["fromEpoch"].get<int64_t>(),
        t["toEpoch"].get<int64_t>(), t.value("reason", "?"), t.value("fromInstance", "?"),
        t.value("toInstance", "?"),
        t["sourceCheckpointId"].is_string() ? t["sourceCheckpointId"].get<std::string>()
                                            : std::string("none"));
}

}  // namespace crashsim::cli
