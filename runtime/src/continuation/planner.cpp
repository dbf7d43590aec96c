// planner.cpp — host entry gates (e.1), RuntimeContinuationPlanner.plan (e.2), existing-claim
// classification (e.5) and boundary gates (e.6). Planning is read-only.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>
#include <set>

#include "continuation/internal.h"
#include "continuation/replay_internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/plant.h"

namespace crashsim {

using namespace continuation_detail;

bool safeBoundaryResumeEnabled(const ContinuationHost& host) {
  if (host.enabled) return *host.enabled;
  const char* v = std::getenv("CRASHSIM_SAFE_BOUNDARY_RESUME");
  return !(v && std::string_view(v) == "0");
}

namespace {

std::string randomId() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 32; ++i) {
    if (i == 8 || i == 12 || i == 16 || i == 20) s.push_back('-');
    s.push_back(hex[rng() & 15]);
  }
  return s;
}

ContinuationPlan park(const std::string& sessionId, const std::string& sourceRunId,
                      std::string_view reason, std::optional<Json> detail = std::nullopt) {
  ContinuationPlan p;
  p.decision = "park";
  p.sessionId = sessionId;
  p.sourceRunId = sourceRunId;
  p.rejectionReasons.push_back(std::string(reason));
  p.diagnostics.push_back(PlanDiagnostic{std::string(reason), std::move(detail)});
  return p;
}

bool isLineageCode(std::string_view c) {
  for (std::string_view k :
       {code::runtime_lineage_cycle, code::runtime_lineage_depth_exceeded,
        code::runtime_lineage_missing, code::runtime_identity_mismatch,
        code::source_prefix_digest_mismatch, code::runtime_lineage_start_mismatch,
        code::runtime_lineage_replay_mismatch, code::runtime_lineage_claim_mismatch,
        code::continuation_authority_unavailable}) {
    if (c == k) return true;
  }
  return false;
}

std::string normaliseCwd(std::string p) {
  std::replace(p.begin(), p.end(), '\\', '/');
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  if (p.size() >= 2 && p[1] == ':' && std::isalpha(static_cast<unsigned char>(p[0]))) {
    std::transform(p.begin(), p.end(), p.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
  }
  return p;
}

std::vector<std::string> sortedUnique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// e.5 — classification of an existing claim whose boundary equals the fresh plan's.
std::string_view classifyExistingClaim(store_detail::Connection& c, const ClaimState& cs) {
  const ContinuationClaim& cl = cs.claim;
  std::optional<RunHeader> th;
  try {
    th = readHeader(c, cl.target.sessionId, cl.target.runId);
  } catch (const Error&) {
  }
  if (!th) return code::continuation_claim_repair_required;  // 1
  if (immutableHeaderJson(*th) != immutableHeaderJson(cl.targetRunHeader)) {
    return code::continuation_claim_repair_required;  // 2
  }
  ImmutablePrefix tp;
  try {
    tp = readPrefix(c, cl.target, std::nullopt);
  } catch (const Error&) {
    return code::continuation_claim_repair_required;  // 3
  }
  if (tp.events.empty()) return code::continuation_claim_repair_required;  // 3
  if (!cs.startEventId || tp.events.front().id != *cs.startEventId || !cs.startEvent ||
      encodeRuntimeEvent(*cs.startEvent) != encodeRuntimeEvent(tp.events.front())) {
    return code::continuation_claim_repair_required;  // 4
  }
  std::optional<size_t> terminalAt;
  size_t terminals = 0;
  for (size_t i = 0; i < tp.events.size(); ++i) {
    if (tp.events[i].isTerminal()) {
      ++terminals;
      terminalAt = i;
    }
  }
  const bool headerTerminal = isTerminalRunStatus(th->status);
  if (terminalAt) {
    if (terminals != 1 || *terminalAt + 1 != tp.events.size()) {
      return code::continuation_claim_repair_required;  // 5
    }
    std::optional<std::string> st = terminalFactStatus(tp.events.back(), *th);
    if (!st) return code::continuation_claim_repair_required;                               // 6
    if (!headerTerminal) return code::continuation_claim_repair_required;                   // 7
    if (terminalRepairSucceeded(*th, tp.events)) return code::continuation_already_exists;  // 8
    return code::continuation_claim_repair_required;                                        // 9
  }
  if (headerTerminal) return code::continuation_claim_repair_required;  // 9
  return code::continuation_started_indeterminate;                      // 10
}

bool hasPendingPermission(const Lineage& lineage) {
  std::vector<std::string> requests;
  std::set<std::string> closed;
  for (const ImmutablePrefix& p : lineage.segments) {
    for (const RuntimeEvent& e : p.events) {
      if (e.partial || !e.json.contains("actions")) continue;
      const Json& a = e.json["actions"];
      if (a.contains("permissionRequest") && a["permissionRequest"].is_object()) {
        const Json& r = a["permissionRequest"];
        if (r.contains("requestId") && r["requestId"].is_string()) {
          requests.push_back(r["requestId"].get<std::string>());
        }
      }
      for (const char* k :
           {"permissionDecision", "permissionAnswerAccepted", "permissionClosureAccepted"}) {
        if (a.contains(k) && a[k].is_object() && a[k].contains("requestId") &&
            a[k]["requestId"].is_string()) {
          closed.insert(a[k]["requestId"].get<std::string>());
        }
      }
    }
  }
  for (const std::string& r : requests) {
    if (!closed.count(r)) return true;
  }
  return false;
}

std::string itemRole(const Json& item) {
  if (item["type"] == "text")
    return item["role"].get<std::string>() == "user" ? "user" : "assistant";
  if (item["type"] == "tool_result") return "tool";
  return "assistant";
}

}  // namespace

namespace {

// e.2 step 2: reads the source run's lineage prefixes into `lineage`; the park a lineage or
// ledger error gives instead (nullopt when the lineage was read).
std::optional<ContinuationPlan> readLineage(store_detail::Connection& c, const RunHeader& header,
                                            Lineage& lineage) {
  const std::string& sid = header.sessionId;
  const std::string& rid = header.runId;
  try {
    ImmutablePrefix immediate = readPrefix(c, identityOf(header), std::nullopt);
    lineage = traverse(c, header, std::move(immediate));
  } catch (const Error& e) {
    if (isLineageCode(e.code())) return park(sid, rid, e.code(), Json{{"message", e.what()}});
    return park(sid, rid, code::runtime_ledger_unreadable, Json{{"message", e.what()}});
  }
  return std::nullopt;
}

// e.2 step 4: the park a composite replay that is not replayable gives (nullopt when it is).
std::optional<ContinuationPlan> unreplayable(const CompositeReplay& replay, const std::string& sid,
                                             const std::string& rid) {
  if (replay.replayable) return std::nullopt;
  if (replay.blockedReason == code::provider_replay_non_suffix_gap ||
      replay.blockedReason == code::provider_replay_unsupported) {
    return park(sid, rid, replay.blockedReason, Json{{"segment", *replay.blockedSegment}});
  }
  return park(
      sid, rid, code::runtime_ledger_unreadable,
      Json{{"message", "continuation replay segment " + std::to_string(*replay.blockedSegment) +
                           " is not replayable: " + replay.blockedReason}});
}

// e.2 step 5: the durable claim state by boundary digest. The park an existing claim on the
// replay's boundary gives (classified by e.5), or the authority being unreadable; nullopt when
// there is no claim.
std::optional<ContinuationPlan> existingClaim(store_detail::Connection& c,
                                              const CompositeReplay& replay, const std::string& sid,
                                              const std::string& rid) {
  std::optional<ClaimState> existing;
  try {
    existing = readClaim(c, ClaimKey::boundaryDigest, replay.boundary.manifestDigest);
  } catch (const Error& e) {
    return park(sid, rid, code::continuation_authority_unavailable, Json{{"message", e.what()}});
  }
  if (!existing) return std::nullopt;
  const ContinuationClaim& cl = existing->claim;
  Json detail{{"continuationClaimId", cl.claimId}, {"continuationRunId", cl.target.runId}};
  if (stableJson(cl.boundary.toJson()) != stableJson(replay.boundary.toJson()) ||
      cl.providerProjectionVersion != replay.providerProjectionVersion ||
      cl.providerReplayDigest != replay.providerReplayDigest) {
    return park(sid, rid, code::continuation_claim_repair_required, detail);
  }
  return park(sid, rid, classifyExistingClaim(c, *existing), detail);
}

// e.2 step 6: the park a legacy continuation gives (a run header whose continuationSource names
// this source run at its high-water); nullopt when there is none.
std::optional<ContinuationPlan> legacyContinuation(store_detail::Connection& c,
                                                   const std::string& sid, const std::string& rid,
                                                   const ImmutablePrefix& src) {
  for (const RunHeader& h : readHeaders(c, sid)) {
    if (!h.continuationSource || !h.continuationSource->is_object()) continue;
    const Json& s = *h.continuationSource;
    if (s.value("sourceRunId", Json()) == rid &&
        s.value("sourceRuntimeEventHighWater", Json()) == Json(src.lastEventSeq)) {
      return park(sid, rid, code::continuation_already_exists,
                  Json{{"continuationRunId", h.runId}});
    }
  }
  return std::nullopt;
}

// e.2 step 7: a plan with fresh ids, drawn in this exact order.
ContinuationPlan freshPlan(const ContinuationHost& host, const std::string& sid,
                           const std::string& rid) {
  auto newId = host.newId ? host.newId : randomId;
  ContinuationPlan plan;
  plan.sessionId = sid;
  plan.sourceRunId = rid;
  plan.invocationId = newId();
  plan.runId = newId();
  plan.turnId = newId();
  plan.claimId = newId();
  return plan;
}

// e.6: a rejection reason (recorded once) and its diagnostic (every time).
void reject(ContinuationPlan& plan, std::string_view r, std::optional<Json> detail = std::nullopt) {
  if (std::find(plan.rejectionReasons.begin(), plan.rejectionReasons.end(), r) ==
      plan.rejectionReasons.end()) {
    plan.rejectionReasons.push_back(std::string(r));
  }
  plan.diagnostics.push_back(PlanDiagnostic{std::string(r), std::move(detail)});
}

// e.6 gate 3: the source ledger is not empty, its events share one execution identity, and the
// fresh ids reuse none of the lineage's. Returns true when the identities disagree.
bool gateSourceIdentity(ContinuationPlan& plan, const Lineage& lineage,
                        const ImmutablePrefix& src) {
  bool identityMismatch = false;
  if (src.events.empty()) {
    reject(plan, code::runtime_ledger_empty);
    return identityMismatch;
  }
  const RuntimeEvent& e0 = src.events.front();
  for (const RuntimeEvent& e : src.events) {
    if (e.sessionId != e0.sessionId || e.invocationId != e0.invocationId || e.runId != e0.runId ||
        e.turnId != e0.turnId) {
      identityMismatch = true;
    }
  }
  if (identityMismatch) reject(plan, code::runtime_identity_mismatch);
  bool reused = false;
  for (const ImmutablePrefix& p : lineage.segments) {
    for (const std::string& id : {plan.invocationId, plan.runId, plan.turnId}) {
      if (id == p.identity.invocationId || id == p.identity.runId || id == p.identity.turnId) {
        reused = true;
      }
    }
  }
  if (reused) reject(plan, code::continuation_identity_reused);
  return identityMismatch;
}

// e.6 gate 10: every tool the replay calls is available. Returns the available tool names,
// sorted and unique (the safety snapshot's).
std::vector<std::string> gateToolCatalog(ContinuationPlan& plan, const Lineage& lineage,
                                         const SafetyFacts& facts) {
  std::vector<std::string> tools = sortedUnique(facts.availableToolNames);
  std::vector<std::string> unavailable;
  for (size_t s = 0; s < lineage.segments.size(); ++s) {
    for (size_t idx : lineage.projections[s].replayEventIndexes) {
      const RuntimeEvent& e = lineage.segments[s].events[idx];
      if (e.contentKind == ContentKind::function_call &&
          !std::binary_search(tools.begin(), tools.end(), e.toolName)) {
        unavailable.push_back(e.toolName);
      }
    }
  }
  if (!unavailable.empty()) {
    reject(plan, code::tool_catalog_mismatch,
           Json{{"unavailableToolNames", sortedUnique(unavailable)}});
  }
  return tools;
}

// e.6 gates 11 and 12: the provider items start with a user item and end with a user or tool
// item.
void gateProviderBoundary(ContinuationPlan& plan, const Json& items) {
  if (items.empty() || itemRole(items.front()) != "user") {
    reject(plan, code::provider_resume_head_unsupported);
  }
  if (items.empty() || (itemRole(items.back()) != "user" && itemRole(items.back()) != "tool")) {
    reject(plan, code::provider_resume_boundary_unsupported);
  }
}

// e.2 step 8: the boundary gates (e.6), in their order; under an enabled workspace policy the
// gate table of workspace continuity e.3 replaces step 9 (at most one reason) and step 7 applies
// only while the session has no workspace lineage (row 2 then decides). Returns the available
// tool names (gate 10).
std::vector<std::string> applyBoundaryGates(store_detail::Connection& c, ContinuationPlan& plan,
                                            const RunHeader& header, const SafetyFacts& facts,
                                            const ContinuationHost& host,
                                            std::optional<int64_t> expectedHighWater,
                                            const Lineage& lineage, const ImmutablePrefix& src,
                                            const CompositeReplay& replay) {
  std::optional<WorkspaceGate> workspace;
  if (host.workspacePolicy.enabled()) workspace = gateWorkspace(c, header, facts, host, lineage);
  const bool repaired = terminalRepairSucceeded(header, src.events);
  // 1
  if (hasPendingPermission(lineage)) reject(plan, code::pending_permission);
  // 2
  std::optional<int64_t> expected =
      facts.workspaceCheckpoint
          ? std::optional<int64_t>(facts.workspaceCheckpoint->runtimeEventHighWater)
          : expectedHighWater;
  if (expected && *expected != src.lastEventSeq) {
    reject(plan, code::runtime_offset_mismatch,
           Json{{"expectedRuntimeEventHighWater", *expected},
                {"actualRuntimeEventHighWater", src.lastEventSeq}});
  }
  // 3
  const bool identityMismatch = gateSourceIdentity(plan, lineage, src);
  // 4 (ledgerReadable is true here: an unreadable ledger parked above).
  // 5
  if (!repaired) reject(plan, code::terminal_repair_failed);
  // 6
  if (header.cwd && !host.currentCwd.empty() &&
      normaliseCwd(*header.cwd) != normaliseCwd(host.currentCwd)) {
    plan.diagnostics.push_back(
        PlanDiagnostic{std::string(code::workspace_location_changed),
                       Json{{"sourceCwd", *header.cwd}, {"currentCwd", host.currentCwd}}});
  }
  // 7
  if ((!workspace || !workspace->lineageExists) &&
      (!header.workspaceIdentity || *header.workspaceIdentity != facts.workspaceIdentity)) {
    reject(plan, code::workspace_identity_mismatch);
  }
  // 8
  if (!facts.backgroundOperationsSettled) reject(plan, code::background_operation_pending);
  // 9
  if (workspace) {
    if (workspace->reason) reject(plan, *workspace->reason, workspace->reasonDetail);
    for (PlanDiagnostic& d : workspace->diagnostics) plan.diagnostics.push_back(std::move(d));
    plan.safetySnapshot.workspaceBoundary = std::move(workspace->binding);
  } else if (facts.workspaceCheckpoint) {
    if (!facts.workspaceCheckpoint->ref) {
      reject(plan, code::workspace_ref_missing);
    } else if (!facts.workspaceCheckpoint->restored) {
      reject(plan, code::checkpoint_restore_failed);
    }
  }
  // 10
  std::vector<std::string> tools = gateToolCatalog(plan, lineage, facts);
  // 11, 12
  if (!identityMismatch) gateProviderBoundary(plan, replay.providerItems);
  return tools;
}

// e.2 end, continue: the source's identity, high-water and digest, the runtime context moved
// out of the lineage (each event was copied once, by the read; the immediate source's part is
// also kept apart for a multi-segment lineage), the replay and the safety snapshot.
void fillContinuePlan(ContinuationPlan& plan, Lineage& lineage, CompositeReplay& replay,
                      const SafetyFacts& facts, std::vector<std::string> tools) {
  const ImmutablePrefix& src = lineage.segments.back();
  plan.decision = "continue";
  plan.sourceInvocationId = src.events.front().invocationId;
  plan.sourceTurnId = src.events.front().turnId;
  plan.sourceRuntimeEventHighWater = src.lastEventSeq;
  plan.sourcePrefixDigest = src.prefixDigest;
  size_t contextSize = 0;
  for (const SegmentReplay& sr : lineage.projections) contextSize += sr.replayEventIndexes.size();
  plan.runtimeContext.reserve(contextSize);
  for (size_t s = 0; s < lineage.segments.size(); ++s) {
    const bool immediate = s + 1 == lineage.segments.size();
    if (immediate && lineage.segments.size() > 1) {
      plan.sourceRuntimeContext.reserve(lineage.projections[s].replayEventIndexes.size());
    }
    for (size_t idx : lineage.projections[s].replayEventIndexes) {
      RuntimeEvent& e = lineage.segments[s].events[idx];
      if (immediate && lineage.segments.size() > 1) plan.sourceRuntimeContext.push_back(e);
      plan.runtimeContext.push_back(std::move(e));
    }
  }
  plan.providerItems = std::move(replay.providerItems);
  plan.boundary = replay.boundary;
  plan.providerReplayDigest = replay.providerReplayDigest;
  plan.providerProjectionVersion = replay.providerProjectionVersion;
  plan.safetySnapshot.workspaceIdentity = facts.workspaceIdentity;
  plan.safetySnapshot.backgroundOperationsSettled = true;
  plan.safetySnapshot.availableToolNames = std::move(tools);
  if (facts.workspaceCheckpoint)
    plan.safetySnapshot.workspaceCheckpoint = facts.workspaceCheckpoint;
}

}  // namespace

// The planner body (e.2 steps 2–8) given the authoritative entry's facts.
static ContinuationPlan planFromSource(RuntimeStore& store, const RunHeader& header,
                                       const SafetyFacts& facts, const ContinuationHost& host,
                                       std::optional<int64_t> expectedHighWater) {
  store_detail::Connection& c = conn(store);
  const std::string& sid = header.sessionId;
  const std::string& rid = header.runId;
  // 2. lineage prefixes.
  Lineage lineage;
  if (auto parked = readLineage(c, header, lineage)) return std::move(*parked);
  const ImmutablePrefix& src = lineage.segments.back();
  // 3. immediate identity.
  if (src.identity.sessionId != sid || src.identity.runId != rid) {
    return park(sid, rid, code::runtime_identity_mismatch);
  }
  // 4. composite replay.
  std::vector<const ImmutablePrefix*> segPtrs;
  for (const ImmutablePrefix& p : lineage.segments) segPtrs.push_back(&p);
  // The runtime context is not copied here: a continue plan moves it out of the lineage.
  CompositeReplay replay =
      composeReplayConsuming(segPtrs, lineage.projections, kProviderProjectionVersion);
  if (auto parked = unreplayable(replay, sid, rid)) return std::move(*parked);
  // 5. durable claim state by boundary digest.
  if (auto parked = existingClaim(c, replay, sid, rid)) return std::move(*parked);
  // 6. legacy lookup.
  if (auto parked = legacyContinuation(c, sid, rid, src)) return std::move(*parked);
  // 7. fresh ids, in this exact order.
  ContinuationPlan plan = freshPlan(host, sid, rid);
  // 8. boundary gates (e.6).
  std::vector<std::string> tools =
      applyBoundaryGates(c, plan, header, facts, host, expectedHighWater, lineage, src, replay);
  plan.lineageDepth = lineage.segments.size();
  if (!plan.rejectionReasons.empty() || src.events.empty()) {
    plan.decision = "park";
    // Workspace continuity g.1 item 1: a parked plan under an enabled workspace policy names the
    // boundary cursor a user confirms a rebaseline against (toJson: boundaryManifestDigest).
    if (host.workspacePolicy.enabled()) plan.boundary = replay.boundary;
    plan.invocationId.clear();
    plan.runId.clear();
    plan.turnId.clear();
    plan.claimId.clear();
    return plan;
  }
  fillContinuePlan(plan, lineage, replay, facts, std::move(tools));
  return plan;
}

ContinuationPlan planContinuation(RuntimeStore& store, const std::string& sessionId,
                                  const std::string& sourceRunId, const ContinuationHost& host,
                                  std::optional<int64_t> expectedRuntimeEventHighWater) {
  auto storeLock = continuation_detail::lockStore(store);
  if (!safeBoundaryResumeEnabled(host))
    return park(sessionId, sourceRunId, code::resume_feature_disabled);
  if (!host.inspector) return park(sessionId, sourceRunId, code::safety_observation_unavailable);
  std::optional<RunHeader> header;
  try {
    header = readHeader(conn(store), sessionId, sourceRunId);
  } catch (const Error&) {
  }
  if (!header) return park(sessionId, sourceRunId, code::source_run_unreadable);
  if (!header->workspaceIdentity)
    return park(sessionId, sourceRunId, code::workspace_identity_missing);
  SafetyFacts facts;
  try {
    facts = host.inspector();
  } catch (const std::exception& e) {
    return park(sessionId, sourceRunId, code::safety_observation_unavailable,
                Json{{"message", e.what()}});
  }
  return planFromSource(store, *header, facts, host, expectedRuntimeEventHighWater);
}

ContinuationPlan planLatestContinuation(RuntimeStore& store,
                                        const std::optional<std::string>& sessionId,
                                        const ContinuationHost& host) {
  if (planted("planner_touches_header")) {  // planted bug: the read-only planner writes (V5)
    for (RunHeader h : store.listRuns(sessionId))
      if (h.status == code::running) {
        h.updatedAt += 1;
        store.updateRunHeader(h);
      }
  }
  auto storeLock = continuation_detail::lockStore(store);
  const std::string sid = sessionId.value_or("");
  if (!safeBoundaryResumeEnabled(host)) return park(sid, "", code::resume_feature_disabled);
  std::vector<RunHeader> runs;
  try {
    runs = readHeaders(conn(store), sessionId);
  } catch (const Error&) {
    return park(sid, "", code::resume_candidate_missing);
  }
  const RunHeader* best = nullptr;
  for (const RunHeader& h : runs) {
    const bool inline_ = !h.parentRunId || h.continuationSource.has_value();
    if (!inline_ || (h.status != code::failed && h.status != code::cancelled)) continue;
    if (!best || h.createdAt > best->createdAt ||
        (h.createdAt == best->createdAt && h.runId > best->runId)) {
      best = &h;
    }
  }
  if (!best) return park(sid, "", code::resume_candidate_missing);
  return planContinuation(store, best->sessionId, best->runId, host);
}

Json ContinuationPlan::toJson() const {
  Json j = Json::object();
  j["decision"] = decision;
  j["rejectionReasons"] = rejectionReasons;
  Json diags = Json::array();
  for (const PlanDiagnostic& d : diagnostics) {
    Json dj{{"code", d.code}};
    if (d.detail) dj["detail"] = *d.detail;
    diags.push_back(dj);
  }
  j["diagnostics"] = diags;
  j["sessionId"] = sessionId;
  j["sourceRunId"] = sourceRunId;
  if (decision != "continue" && boundary) j["boundaryManifestDigest"] = boundary->manifestDigest;
  if (decision == "continue") {
    j["invocationId"] = invocationId;
    j["runId"] = runId;
    j["turnId"] = turnId;
    j["claimId"] = claimId;
    j["sourceInvocationId"] = sourceInvocationId;
    j["sourceTurnId"] = sourceTurnId;
    j["sourceRuntimeEventHighWater"] = sourceRuntimeEventHighWater;
    j["sourcePrefixDigest"] = sourcePrefixDigest;
    if (boundary) j["boundary"] = boundary->toJson();
    j["providerReplayDigest"] = providerReplayDigest;
    j["providerProjectionVersion"] = providerProjectionVersion;
    Json ids = Json::array();
    for (const RuntimeEvent& e : runtimeContext) ids.push_back(e.id);
    j["runtimeContextEventIds"] = ids;
    j["lineageDepth"] = lineageDepth;
    Json snap{{"workspaceIdentity", safetySnapshot.workspaceIdentity},
              {"backgroundOperationsSettled", safetySnapshot.backgroundOperationsSettled},
              {"availableToolNames", safetySnapshot.availableToolNames}};
    if (safetySnapshot.workspaceCheckpoint) {
      snap["workspaceCheckpoint"] = Json{
          {"ref", safetySnapshot.workspaceCheckpoint->ref.value_or("")},
          {"runtimeEventHighWater", safetySnapshot.workspaceCheckpoint->runtimeEventHighWater}};
    }
    if (safetySnapshot.workspaceBoundary)
      snap["workspaceBoundary"] = *safetySnapshot.workspaceBoundary;
    j["safetySnapshot"] = snap;
  }
  return j;
}

}  // namespace crashsim
