// workspace_gate.cpp — the planner's checkpoint gates (workspace-continuity-contract.md e.1,
// e.3, e.4): the covering checkpoint and the workspace-neutral suffix, the gate table that
// replaces RC e.6 step 9 under an enabled host policy, the binding of a continue plan and its
// revalidation (RC e.9 step 5 and step 8's second pass).
//
// One authority per decision: the workspace facts are read through THE scanner
// (store/workspace_reads.h → detail::scanWorkspaceFacts); the planner names C; the host
// inspector (ContinuationHost::workspaceInspector) only observes the carrier, C's artifact and
// drift. Nothing here writes.
#include <algorithm>

#include "continuation/internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "store/workspace_reads.h"

namespace crashsim {

ToolEffect toolEffect(std::string_view toolName) {
  if (toolName == "Read") return ToolEffect::none;
  if (toolName == "Write" || toolName == "Edit") return ToolEffect::declared_write;
  return ToolEffect::opaque;
}

bool workspaceNeutral(const RuntimeEvent& e,
                      const std::map<std::string, std::string>& operationTools) {
  if (e.partial) return true;  // the rule judges non-partial events (a prefix holds no other)
  if (e.hasWorkspaceFact) return false;
  if (e.json.contains("actions") && e.json["actions"].is_object() &&
      e.json["actions"].contains("transferToAgent"))
    return false;
  const auto effectful = [&](const std::string& operationId) {
    const auto it = operationTools.find(operationId);
    return it == operationTools.end() || toolEffect(it->second) != ToolEffect::none;
  };
  if (e.lane == Lane::conflict) return false;
  if (e.lane == Lane::tool_dispatch && e.toolDispatch)
    return toolEffect(e.toolDispatch->toolName) == ToolEffect::none;
  if (e.contentKind == ContentKind::function_response && e.refOperationId)
    return !effectful(*e.refOperationId);
  if ((e.lane == Lane::reconcile_result || e.lane == Lane::recovery_decision) && e.toolRecovery)
    return !effectful(e.toolRecovery->operationId);
  return true;
}

CoveringCheckpoint findCoveringCheckpoint(std::span<const CheckpointFact> epochCheckpoints,
                                          std::span<const ImmutablePrefix> cursor) {
  CoveringCheckpoint out;
  std::optional<size_t> bestK, bestIdx;
  int64_t bestP = 0;
  for (size_t i = 0; i < epochCheckpoints.size(); ++i) {
    const CheckpointFact& ck = epochCheckpoints[i];
    const Json& b = ck.coveredBoundary;
    if (!b.is_object() || !b.contains("identity") || !b.contains("position")) continue;
    const int64_t p = b["position"].value("lastEventSeq", int64_t{0});
    for (size_t k = 0; k < cursor.size(); ++k) {
      if (identityJson(cursor[k].identity) != b["identity"]) continue;
      if (p < 1 || p > cursor[k].lastEventSeq) continue;
      if (!bestK || k > *bestK || (k == *bestK && p > bestP)) {
        bestK = k;
        bestP = p;
        bestIdx = i;
      }
    }
  }
  if (!bestK) return out;
  const CheckpointFact& c = epochCheckpoints[*bestIdx];
  const ImmutablePrefix& sk = cursor[*bestK];
  const std::span<const RuntimeEvent> covered(sk.events.data(), static_cast<size_t>(bestP));
  if (prefixDigest(sk.identity, covered) != c.coveredBoundary.value("prefixDigest", "")) {
    out.corruption = "checkpoint " + c.checkpointId + " covers rows 1.." + std::to_string(bestP) +
                     " of run " + sk.identity.runId + " with another prefix digest";
    return out;
  }
  std::map<std::string, std::string> operationTools;
  for (const ImmutablePrefix& seg : cursor)
    for (const RuntimeEvent& e : seg.events)
      if (e.toolDispatch) operationTools[e.toolDispatch->operationId] = e.toolDispatch->toolName;
  for (size_t k = *bestK; k < cursor.size(); ++k) {
    const size_t from = k == *bestK ? static_cast<size_t>(bestP) : 0;
    for (size_t i = from; i < cursor[k].events.size(); ++i) {
      if (!workspaceNeutral(cursor[k].events[i], operationTools)) {
        out.notNeutralEventId = cursor[k].events[i].id;
        return out;
      }
    }
  }
  out.checkpoint = c;
  return out;
}

namespace continuation_detail {

namespace {

// What the planner names before anything is observed: the scan, the current epoch E and C.
struct Named {
  std::string workspaceId;
  std::optional<detail::WorkspaceIssue> issue;
  std::optional<detail::ScannedEpoch> epoch;  // E
  std::vector<std::string> epochInstances;    // every epoch's instance identity
  CoveringCheckpoint covering;
};

Named nameCheckpoint(store_detail::Connection& c, const RunHeader& header, const Lineage& lineage) {
  Named n;
  n.workspaceId = workspaceIdForSession(header.sessionId);
  const detail::WorkspaceScan scan = store_detail::scanWorkspaceAuthority(c, n.workspaceId);
  if (!scan.issues.empty()) {
    n.issue = scan.issues.front();
    return n;
  }
  const detail::ScannedLineage* ln = scan.find(n.workspaceId);
  if (!ln || ln->epochs.empty()) return n;
  for (const detail::ScannedEpoch& e : ln->epochs)
    n.epochInstances.push_back(e.opened.instance.identity);
  n.epoch = ln->epochs.back();
  std::vector<CheckpointFact> facts;
  for (const detail::ScannedCheckpoint& ck : n.epoch->checkpoints) facts.push_back(ck.fact);
  n.covering = findCoveringCheckpoint(facts, lineage.segments);
  return n;
}

Json bindingOf(const Named& n) {
  const CheckpointFact* c = n.covering.checkpoint ? &*n.covering.checkpoint : nullptr;
  return Json{{"protocol", "crashsim_workspace_binding_v1"},
              {"workspaceId", n.workspaceId},
              {"epoch", n.epoch->opened.epoch},
              {"checkpointId", c ? Json(c->checkpointId) : Json(nullptr)},
              {"treeOid", c ? Json(c->carrier.treeOid) : Json(nullptr)}};
}

}  // namespace

WorkspaceGate gateWorkspace(store_detail::Connection& c, const RunHeader& header,
                            const SafetyFacts& facts, const ContinuationHost& host,
                            const Lineage& lineage) {
  WorkspaceGate g;
  const bool required = host.workspacePolicy.checkpointRequirement == "required";
  const auto park = [&g](std::string_view reason, Json detail) {
    g.reason = std::string(reason);
    g.reasonDetail = std::move(detail);
    return g;
  };
  const Named n = nameCheckpoint(c, header, lineage);
  g.lineageExists = n.issue.has_value() || n.epoch.has_value();
  // Row 1: the lineage scans with an issue (or C's digest is not its rows').
  if (n.issue)
    return park(
        code::workspace_fact_corruption,
        Json{{"issue", n.issue->code}, {"eventId", n.issue->eventId}, {"detail", n.issue->detail}});
  if (!n.covering.corruption.empty())
    return park(code::workspace_fact_corruption, Json{{"detail", n.covering.corruption}});
  // Row 2: the observed instance is E's, and the source header's is some epoch's.
  if (n.epoch) {
    const std::string& epochInstance = n.epoch->opened.instance.identity;
    const bool sourceKnown =
        header.workspaceIdentity && std::find(n.epochInstances.begin(), n.epochInstances.end(),
                                              *header.workspaceIdentity) != n.epochInstances.end();
    if (facts.workspaceIdentity != epochInstance || !sourceKnown)
      return park(code::workspace_identity_mismatch,
                  Json{{"observedInstance", facts.workspaceIdentity},
                       {"epochInstance", epochInstance},
                       {"sourceInstance", header.workspaceIdentity.value_or("")}});
  }
  const CheckpointFact* covering = n.covering.checkpoint ? &*n.covering.checkpoint : nullptr;
  if (!host.workspaceInspector)
    return park(code::safety_observation_unavailable,
                Json{{"message", "no workspace inspector under an enabled checkpoint policy"}});
  WorkspaceObservation obs;
  try {
    obs = host.workspaceInspector(covering);
  } catch (const std::exception& e) {
    return park(code::safety_observation_unavailable, Json{{"message", e.what()}});
  }
  // Rows 3–4: nothing covers the boundary.
  if (!covering) {
    const std::string why =
        obs.carrierAvailable ? std::string(code::no_checkpoint) : obs.carrierCode;
    Json detail = obs.carrierAvailable ? Json{{"workspaceId", n.workspaceId}}
                                       : Json{{"detail", obs.carrierDetail}};
    std::vector<PlanDiagnostic> extra;
    if (!n.covering.notNeutralEventId.empty())
      extra.push_back(PlanDiagnostic{std::string(code::checkpoint_suffix_not_neutral),
                                     Json{{"eventId", n.covering.notNeutralEventId}}});
    if (required) {
      g.diagnostics = std::move(extra);
      return park(why, std::move(detail));
    }
    g.diagnostics.push_back(PlanDiagnostic{why, std::move(detail)});
    for (auto& d : extra) g.diagnostics.push_back(std::move(d));
    if (n.epoch) g.binding = bindingOf(n);
    return g;
  }
  const Json ck{{"checkpointId", covering->checkpointId}};
  // Row 5: C exists, the carrier is unavailable.
  if (!obs.carrierAvailable) {
    Json d = ck;
    d["detail"] = obs.carrierDetail;
    return park(obs.carrierCode, d);
  }
  if (obs.gitVersion != covering->carrier.gitVersion ||
      obs.gitBinarySha256 != covering->carrier.gitBinarySha256)
    g.diagnostics.push_back(
        PlanDiagnostic{std::string(code::git_runtime_changed),
                       Json{{"checkpointGitVersion", covering->carrier.gitVersion},
                            {"gitVersion", obs.gitVersion}}});
  // Row 6: C's policy version is unknown to this runtime.
  if (covering->policyVersion != 1) {
    Json d = ck;
    d["policyVersion"] = covering->policyVersion;
    return park(code::checkpoint_policy_mismatch, d);
  }
  if (!obs.checkpoint || obs.checkpoint->checkpointId != covering->checkpointId)
    return park(
        code::safety_observation_unavailable,
        Json{{"message", "the inspector did not observe checkpoint " + covering->checkpointId}});
  // Row 7: the artifact does not verify.
  if (obs.checkpoint->artifact == "ref_missing") return park(code::workspace_ref_missing, ck);
  if (obs.checkpoint->artifact != "verified") return park(code::checkpoint_artifact_corrupt, ck);
  // Row 8: drifted. (Planted bug planner_ignores_drift: the planner passes a drifted
  // instance as if it matched.)
  if (obs.checkpoint->drift != "match" && !planted("planner_ignores_drift")) {
    Json d = ck;
    if (obs.checkpoint->currentTreeOid) d["currentTreeOid"] = *obs.checkpoint->currentTreeOid;
    if (!obs.checkpoint->detail.empty()) d["detail"] = obs.checkpoint->detail;
    if (!obs.checkpoint->paths.empty()) d["paths"] = obs.checkpoint->paths;
    return park(code::workspace_drifted, d);
  }
  // Row 9: match.
  g.binding = bindingOf(n);
  return g;
}

void revalidateWorkspace(store_detail::Connection& c, const ContinuationPlan& plan,
                         const RunHeader& header, const SafetyFacts& /*facts*/,
                         const ContinuationHost& host, const Lineage& lineage) {
  if (!host.workspacePolicy.enabled()) return;
  const std::optional<Json>& planned = plan.safetySnapshot.workspaceBoundary;
  const Named n = nameCheckpoint(c, header, lineage);
  const auto changed = [](const std::string& what) {
    throw Error(code::workspace_checkpoint_changed,
                "workspace checkpoint changed since planning: " + what);
  };
  if (n.issue || !n.covering.corruption.empty()) changed("the workspace facts no longer scan");
  if (planned.has_value() != n.epoch.has_value()) changed("the workspace lineage");
  if (!n.epoch) return;
  const Json now = bindingOf(n);
  if (now["epoch"] != (*planned)["epoch"]) changed("the epoch");
  if (now["checkpointId"] != (*planned)["checkpointId"]) changed("the covering checkpoint");
  if (!n.covering.checkpoint) return;
  if (!host.workspaceInspector)
    throw Error(code::safety_observation_unavailable, "no workspace inspector");
  WorkspaceObservation obs;
  try {
    obs = host.workspaceInspector(&*n.covering.checkpoint);
  } catch (const std::exception& e) {
    throw Error(code::safety_observation_unavailable, e.what());
  }
  if (!obs.carrierAvailable || !obs.checkpoint || obs.checkpoint->artifact != "verified")
    throw Error(
        code::checkpoint_artifact_changed,
        "checkpoint " + n.covering.checkpoint->checkpointId + " no longer verifies since planning");
  if (!(*planned)["treeOid"].is_null() && obs.checkpoint->drift != "match")
    throw Error(code::target_workspace_changed, "the workspace drifted from checkpoint " +
                                                    n.covering.checkpoint->checkpointId +
                                                    " since planning");
}

}  // namespace continuation_detail
}  // namespace crashsim
