// execute.cpp — execution revalidation and continuation start (spec e.9).
#include <algorithm>
#include <mutex>
#include <set>

#include "continuation/internal.h"
#include "continuation/replay_internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"

namespace crashsim {

using namespace continuation_detail;

namespace {

std::mutex gInProgressMu;
std::set<std::string> gInProgress;  // sessions resuming in this process

struct InProgress {
  std::string key;
  explicit InProgress(std::string k) : key(std::move(k)) {
    std::lock_guard lk(gInProgressMu);
    if (!gInProgress.insert(key).second) {
      throw Error(code::continuation_in_progress,
                  "A continuation for session " + key + " is already in progress");
    }
  }
  ~InProgress() {
    std::lock_guard lk(gInProgressMu);
    gInProgress.erase(key);
  }
};

[[noreturn]] void reval(std::string_view c, const std::string& msg) { throw Error(c, msg); }

std::vector<std::string> sortedUnique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

SafetyFacts reinspect(const ContinuationPlan& plan, const ContinuationHost& host) {
  SafetyFacts f;
  try {
    f = host.inspector();
  } catch (const std::exception& e) {
    reval(code::safety_observation_unavailable, e.what());
  }
  const SafetySnapshot& s = plan.safetySnapshot;
  if (f.workspaceIdentity != s.workspaceIdentity) {
    reval(code::workspace_identity_changed, "workspace identity changed since planning");
  }
  if (!f.backgroundOperationsSettled) {
    reval(code::background_operation_started, "a background operation started since planning");
  }
  if (sortedUnique(f.availableToolNames) != s.availableToolNames) {
    reval(code::tool_catalog_changed, "available tools changed since planning");
  }
  if (s.workspaceCheckpoint) {
    const auto& cur = f.workspaceCheckpoint;
    if (!cur || !cur->restored || cur->ref != s.workspaceCheckpoint->ref ||
        cur->runtimeEventHighWater != s.workspaceCheckpoint->runtimeEventHighWater) {
      reval(code::workspace_checkpoint_changed, "workspace checkpoint changed since planning");
    }
  }
  return f;
}

void requireCapability(store_detail::Connection& c) {
  auto st = c.prepare(
      "SELECT version FROM runtime_capabilities WHERE capability = "
      "'runtime_continuation_authority'");
  if (!st.step() || st.int64(0) != 1) {
    throw Error(code::capability_unavailable,
                "SQLite runtime continuation capability runtime_continuation_authority_v1 is "
                "unavailable");
  }
}

// e.9 step 1: no run of the session is active.
void requireNoActiveRun(store_detail::Connection& c, const std::string& sessionId) {
  for (const RunHeader& h : readHeaders(c, sessionId)) {
    if (h.status == code::running) {
      throw Error(code::run_active,
                  "Cannot continue while another run is active (" + h.runId + ")");
    }
  }
}

// e.9 step 2: the lineage re-read, ancestors pinned and the immediate source pinned at the
// planned head, must give the plan's boundary segments. `header` is the source run's header.
Lineage rereadLineage(store_detail::Connection& c, const ContinuationPlan& plan,
                      const RunHeader& header) {
  const PrefixIdentity srcId{plan.sessionId, plan.sourceInvocationId, plan.sourceRunId,
                             plan.sourceTurnId};
  Lineage lineage;
  try {
    ImmutablePrefix immediate = readPrefix(c, srcId, plan.sourceRuntimeEventHighWater);
    lineage = traverse(c, header, std::move(immediate));
  } catch (const Error& e) {
    reval(code::source_identity_changed, std::string("lineage: ") + e.code() + ": " + e.what());
  }
  Json segments = Json::array();
  for (const ImmutablePrefix& p : lineage.segments) segments.push_back(p.segmentJson());
  if (segments != plan.boundary->segments) {
    reval(code::source_identity_changed, "source identity/position/digest changed since planning");
  }
  return lineage;
}

// e.9 step 3: the composite replay of the re-read lineage gives the plan's boundary, replay
// digest and runtime context (compared in place, segment events by replay index, not copied;
// the replay items are moved out of the lineage's projections).
void revalidateReplay(const ContinuationPlan& plan, Lineage& lineage) {
  std::vector<const ImmutablePrefix*> segPtrs;
  for (const ImmutablePrefix& p : lineage.segments) segPtrs.push_back(&p);
  CompositeReplay replay =
      composeReplayConsuming(segPtrs, lineage.projections, plan.providerProjectionVersion);
  bool sameContext = true;
  size_t contextAt = 0;
  if (replay.replayable) {
    for (size_t s = 0; sameContext && s < lineage.segments.size(); ++s) {
      for (size_t idx : lineage.projections[s].replayEventIndexes) {
        if (contextAt >= plan.runtimeContext.size() ||
            !(lineage.segments[s].events[idx] == plan.runtimeContext[contextAt])) {
          sameContext = false;
          break;
        }
        ++contextAt;
      }
    }
  }
  sameContext = sameContext && contextAt == plan.runtimeContext.size();
  if (!replay.replayable || replay.boundary.manifestDigest != plan.boundary->manifestDigest ||
      replay.providerReplayDigest != plan.providerReplayDigest || !sameContext) {
    reval(code::source_replay_changed, "source replay changed since planning");
  }
}

// e.9 step 4: the source header's ids, its one terminal fact, its latest head (the planned
// high-water) and a ledger without foreign identities are as planned.
void revalidateSourceHead(store_detail::Connection& c, const ContinuationPlan& plan,
                          const RunHeader& header) {
  if (header.invocationId != plan.sourceInvocationId || header.turnId != plan.sourceTurnId) {
    reval(code::source_identity_changed, "source header ids changed");
  }
  size_t terminals = 0;
  std::optional<std::string> factStatus;
  int64_t latestRows = 0, count = 0;
  store_detail::visitInvocationEvents(c, plan.sourceInvocationId,
                                      [&](int64_t eventSeq, const RuntimeEvent& e) {
                                        if (e.isTerminal() && !e.partial) {
                                          ++terminals;
                                          factStatus = terminalFactStatus(e, header);
                                        }
                                        ++latestRows;
                                        count = eventSeq;
                                      });
  if (terminals != 1 || !factStatus || *factStatus != header.status) {
    reval(code::source_terminal_changed, "source terminal fact changed");
  }
  if (count != plan.sourceRuntimeEventHighWater || latestRows != plan.sourceRuntimeEventHighWater) {
    reval(code::source_high_water_changed, "source high-water changed since planning");
  }
  auto st = c.prepare(
      "SELECT COUNT(*) FROM runtime_events WHERE (session_id = ?1 AND run_id = ?2 AND "
      "(invocation_id <> ?3 OR turn_id <> ?4)) OR (invocation_id = ?3 AND "
      "(session_id <> ?1 OR run_id <> ?2 OR turn_id <> ?4))");
  st.bind(1, plan.sessionId)
      .bind(2, plan.sourceRunId)
      .bind(3, plan.sourceInvocationId)
      .bind(4, plan.sourceTurnId);
  if (st.step() && st.int64(0) != 0) {
    reval(code::source_ledger_identity_changed, "source ledger carries a foreign identity");
  }
}

// e.9 step 6: the claim of the plan's boundary for its target, with the target's run header
// (created, its continuation_source_v2 naming the source), claimed at `claimedAt`.
ContinuationClaim buildClaim(const ContinuationPlan& plan, const ContinuationHost& host,
                             double claimedAt) {
  ContinuationClaim claim;
  claim.claimId = plan.claimId;
  claim.boundary = *plan.boundary;
  claim.boundaryDigest = plan.boundary->manifestDigest;
  claim.providerProjectionVersion = plan.providerProjectionVersion;
  claim.providerReplayDigest = plan.providerReplayDigest;
  claim.target = PrefixIdentity{plan.sessionId, plan.invocationId, plan.runId, plan.turnId};
  claim.claimedAt = claimedAt;
  RunHeader& th = claim.targetRunHeader;
  th.sessionId = plan.sessionId;
  th.runId = plan.runId;
  th.invocationId = plan.invocationId;
  th.turnId = plan.turnId;
  th.status = code::created;
  th.createdAt = th.updatedAt = claimedAt;
  th.workspaceIdentity = plan.safetySnapshot.workspaceIdentity;
  if (!host.currentCwd.empty()) th.cwd = host.currentCwd;
  th.parentRunId = plan.sourceRunId;
  th.parentTurnId = plan.sourceTurnId;
  if (const auto& b = plan.safetySnapshot.workspaceBoundary)  // workspace continuity e.4
    th.workspaceBoundary = Json{{"protocol", (*b)["protocol"]},
                                {"workspaceId", (*b)["workspaceId"]},
                                {"epoch", (*b)["epoch"]},
                                {"checkpointId", (*b)["checkpointId"]}};
  th.continuationSource = Json{{"protocol", std::string(code::continuation_source_v2)},
                               {"claimId", plan.claimId},
                               {"boundaryDigest", claim.boundaryDigest},
                               {"sourceInvocationId", plan.sourceInvocationId},
                               {"sourceRunId", plan.sourceRunId},
                               {"sourceTurnId", plan.sourceTurnId},
                               {"sourceRuntimeEventHighWater", plan.sourceRuntimeEventHighWater},
                               {"sourcePrefixDigest", plan.sourcePrefixDigest},
                               {"replayManifestDigest", claim.boundaryDigest}};
  return claim;
}

// e.9 step 7: no legacy continuation records the same boundary, and the target run does not
// exist yet.
void requireNoLegacyContinuationOrTarget(store_detail::Connection& c,
                                         const ContinuationPlan& plan) {
  for (const RunHeader& h : readHeaders(c, plan.sessionId)) {
    if (h.runId == plan.runId) {
      reval(code::target_run_conflict, "target run " + plan.runId + " already exists");
    }
    if (!h.continuationSource || !h.continuationSource->is_object()) continue;
    const Json& s = *h.continuationSource;
    if (s.value("protocol", "") != code::continuation_source_v2 &&
        s.value("sourceRunId", Json()) == plan.sourceRunId &&
        s.value("sourceRuntimeEventHighWater", Json()) == Json(plan.sourceRuntimeEventHighWater)) {
      reval(code::continuation_claim_conflict, "a legacy continuation records the same boundary");
    }
  }
}

}  // namespace

ContinuationExecution executeContinuation(RuntimeStore& store, const ContinuationPlan& plan,
                                          const ContinuationHost& host) {
  auto storeLock = continuation_detail::lockStore(store);
  if (!plan.isContinue()) {
    throw Error(code::continuation_claim_invalid, "executeContinuation needs a continue plan");
  }
  if (!host.inspector) throw Error(code::safety_observation_unavailable, "no safety inspector");
  store_detail::Connection& c = conn(store);
  // 1. in-process uniqueness, active runs, capability.
  InProgress guard(plan.sessionId);
  requireNoActiveRun(c, plan.sessionId);
  requireCapability(c);
  // 2. re-read the lineage: ancestors pinned, immediate source pinned at the planned head.
  if (!plan.boundary || plan.providerReplayDigest.empty() ||
      plan.providerProjectionVersion != kProviderProjectionVersion) {
    reval(code::source_identity_changed,
          "plan lacks boundary, replay digest or projection version");
  }
  std::optional<RunHeader> header = readHeader(c, plan.sessionId, plan.sourceRunId);
  if (!header) reval(code::source_identity_changed, "source run header is missing");
  Lineage lineage = rereadLineage(c, plan, *header);
  // 3. replay.
  revalidateReplay(plan, lineage);
  // 4. source header and latest head.
  revalidateSourceHead(c, plan, *header);
  // 5. safety re-inspection (workspace continuity e.4 after the existing checks).
  revalidateWorkspace(c, plan, *header, reinspect(plan, host), host, lineage);
  // 6. target header + claim.
  const double claimedAt = host.now ? host.now() : store_detail::nowMs();
  ContinuationClaim claim = buildClaim(plan, host, claimedAt);
  const RunHeader& th = claim.targetRunHeader;
  ClaimResult cr = claimContinuation(store, claim);
  if (host.onClaim) host.onClaim(cr);
  if (cr.result != code::acquired) {
    reval(code::continuation_claim_conflict,
          "continuation claim was not acquired (" + cr.result +
              (cr.conflictDetail.empty() ? "" : ": " + cr.conflictDetail) + ")");
  }
  // 7. legacy continuation of the same boundary; target run already present.
  requireNoLegacyContinuationOrTarget(c, plan);
  // Planted bug: the target run is created before the claim's crash window (P11 must find the
  // claim alone: the double-fault state check).
  const bool targetEarly = planted("target_run_before_claim_window");
  if (targetEarly) store.createRun(th);
  CRASHSIM_FAILPOINT(P11);
  // 8. target run, safety again, durable continuation-start.
  if (!targetEarly) store.createRun(th);
  CRASHSIM_FAILPOINT(P14);  // target run without its start: the claim saga repairs it
  revalidateWorkspace(c, plan, *header, reinspect(plan, host), host, lineage);
  const double startTs = std::max(claimedAt, host.now ? host.now() : store_detail::nowMs());
  RuntimeEvent start = buildContinuationStartEvent(
      claim, "continuation-start-" + plan.claimId, startTs, code::runtime_admission,
      host.protocolMarker && !planted("continuation_start_without_marker"));
  WriteResult wr = commitContinuationStart(store, claim, start);
  if (!wr.created) {
    throw Error(code::continuation_start_conflict,
                "continuation-start already existed; provider admission is never re-issued");
  }
  // The durable runtime_admission start before any provider call: from here on a crash leaves
  // a continuation nobody may repair or repeat (continuation_started_indeterminate).
  CRASHSIM_FAILPOINT(P15);
  // 9. only now may the provider be called.
  ContinuationExecution ex;
  ex.targetHeader = th;
  ex.claim = std::move(claim);
  ex.startEvent = std::move(start);
  ex.replayHistory = plan.runtimeContext;
  ex.providerItems = plan.providerItems;
  ex.providerReplayDigest = plan.providerReplayDigest;
  return ex;
}

}  // namespace crashsim
