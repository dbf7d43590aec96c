// crashsim/continuation.h — Phase 1 safe-boundary continuation (spec e, f.7, g claim saga).
//
// A continuation never revives an old process. It plans a continuation of a failed/cancelled
// run from its immutable committed history, claims the boundary durably (one store-owned
// idempotency authority), creates a NEW invocation/run/turn, commits the continuation-start
// as the target's event #1, and only then hands the validated history to the provider. It
// never appends a duplicate user message.
//
// What a host does at start-up (`crashsim-agent recover`, `crashsim resume`) is ONE sequence,
// crashsim/host.h hostStartup: claim saga (repairContinuationClaims, first) → reconcilers →
// startup repair → planLatestContinuation per session → when the plan says continue,
// executeContinuation and the agent loop in ex.targetHeader's run with ex.replayHistory.

// Every failure that crosses this API is a crashsim::Error with a stable code (codes.h).
// Planning is read-only: it never writes the store (ledgerHash() is unchanged).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/resume_plan.h"
#include "crashsim/runtime_event.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"
#include "crashsim/workspace_gates.h"

namespace crashsim {

// ---------------------------------------------------------------------------------------
// e.7 Immutable prefixes, segments, cursor, digests

// ImmutableRuntimePrefixV1: the physical runtime_events rows of one invocation, event_seq
// exactly 1..lastEventSeq (eventCount == lastEventSeq), no partial event, every event carrying
// `identity`. prefixDigest is hashing.h prefixDigest() over the canonical events.
struct ImmutablePrefix {
  PrefixIdentity identity;
  int64_t lastEventSeq = 0;
  int64_t eventCount = 0;
  std::string lastEventId;  // empty for an empty prefix
  std::string prefixDigest;
  std::vector<RuntimeEvent> events;

  // {protocol:'immutable_runtime_prefix_v1', identity, position, prefixDigest} (no events).
  Json headerJson() const;
  // Segment {protocol:'runtime_prefix_segment_v1', identity, position, prefixDigest}.
  Json segmentJson() const;
};

Json identityJson(const PrefixIdentity& identity);

// Builds a prefix from stored rows (already in event_seq order). Throws
// Error(code::event_seq_gap) unless the seqs are exactly 1,2,3,…; Error(code::partial_in_prefix)
// for a partial event; Error(code::runtime_identity_mismatch) for an event not carrying
// `identity`. `upToEventSeq` pins the prefix: rows above it are ignored.
ImmutablePrefix buildImmutablePrefix(const PrefixIdentity& identity,
                                     std::span<const StoredEvent> rows,
                                     std::optional<int64_t> upToEventSeq = std::nullopt);

// Reads the prefix of (session, run, invocation, turn) from runtime_events, pinned at
// upToEventSeq when given (latest head otherwise). Same errors as buildImmutablePrefix.
ImmutablePrefix readImmutablePrefix(RuntimeStore& store, const PrefixIdentity& identity,
                                    std::optional<int64_t> upToEventSeq = std::nullopt);

// RuntimeBoundaryCursorV1 {protocol:'runtime_boundary_cursor_v1', segments, manifestDigest};
// segments oldest → immediate source.
struct BoundaryCursor {
  Json segments = Json::array();
  std::string manifestDigest;
  Json toJson() const;
  static BoundaryCursor fromJson(const Json& j);  // recomputes and checks the digest
};
// Checks e.7's cursor rules (same session; run/invocation/turn ids pairwise distinct).
BoundaryCursor buildBoundaryCursor(std::span<const ImmutablePrefix* const> segments);

// ---------------------------------------------------------------------------------------
// Workspace continuity e.1: the covering checkpoint and the workspace-neutral suffix

// Tool effect (v1): Read → none; Write, Edit → declared_write; Bash and any other → opaque.
enum class ToolEffect { none, declared_write, opaque };
ToolEffect toolEffect(std::string_view toolName);

// Rule workspace_neutral_v1: a non-partial event is NOT neutral iff it is a tool_dispatch of a
// tool whose effect is not none, a bound function_response (refs.operationId) or a
// recovery-lane event of such an operation, or it carries transferToAgent or workspaceFact.
// `operationTools` maps the operations dispatched in the lineage to their tool names (an
// operation it does not name counts as opaque).
bool workspaceNeutral(const RuntimeEvent& event,
                      const std::map<std::string, std::string>& operationTools);

struct CoveringCheckpoint {
  std::optional<CheckpointFact> checkpoint;  // C, when it covers the boundary
  // The newest candidate's first non-neutral suffix event (diagnostic
  // checkpoint_suffix_not_neutral); empty when C covers or there was no candidate.
  std::string notNeutralEventId;
  // Non-empty: the newest candidate's prefixDigest is not the digest of its rows (the lineage
  // is corrupt, e.3 row 1).
  std::string corruption;
};
// e.1 over the cursor's segments (oldest first) and the current epoch's checkpoints (its
// accepted facts, in event order): candidates are the checkpoints whose coveredBoundary identity
// is some segment Sk's with p ≤ Sk.lastEventSeq; C = the greatest (k, p); C covers iff every
// event of Sk rows p+1.. and of Sk+1..Sn is neutral. Older checkpoints are never consulted.
CoveringCheckpoint findCoveringCheckpoint(std::span<const CheckpointFact> epochCheckpoints,
                                          std::span<const ImmutablePrefix> cursor);

// ---------------------------------------------------------------------------------------
// e.3 Composite provider replay

inline constexpr int kProviderProjectionVersion = 1;

struct ReplayDiagnostic {
  std::string code;
  std::string eventId;
  bool blocking = false;
};

// Provider projection of one segment (e.3 steps 1–6).
struct SegmentReplay {
  bool replayable = false;
  std::string blockedReason;  // tool_recovery_corruption | tool_recovery_unsettled |
                              // provider_replay_unsupported | provider_replay_non_suffix_gap
  std::vector<Json> items;    // untrimmed provider items
  std::vector<std::string> itemStableJson;  // stableJson(items[i])
  std::vector<size_t> replayEventIndexes;   // prefix events that are neither hidden nor trimmed
  std::vector<ReplayDiagnostic> diagnostics;
};

// Projects one immutable prefix. Provider items (stable JSON objects):
//   {type:'text', role:'user'|'assistant', text, eventId, ts}
//   {type:'thinking', text, signature?, eventId, ts}
//   {type:'tool_call', toolCallId, toolName, args, eventId, ts}
//   {type:'tool_result', toolCallId, toolName, result, isError, eventId, ts}
SegmentReplay projectSegment(const ImmutablePrefix& prefix,
                             int providerProjectionVersion = kProviderProjectionVersion);

// The composite replay over segments (oldest → immediate source).
struct CompositeReplay {
  bool replayable = false;
  std::string blockedReason;
  std::optional<size_t> blockedSegment;
  BoundaryCursor boundary;
  int providerProjectionVersion = kProviderProjectionVersion;
  std::string providerReplayDigest;  // sha256 of stable JSON {items, protocol, version}
  Json providerItems = Json::array();
  std::vector<RuntimeEvent> runtimeContext;  // concatenated segment replay events
  size_t immediateSourceContextStart = 0;    // index in runtimeContext of the last segment
};
CompositeReplay buildCompositeReplay(std::span<const ImmutablePrefix* const> segments,
                                     int providerProjectionVersion = kProviderProjectionVersion);

// providerReplayDigest of items (e.3 step 7), for tests and the runner envelope check.
std::string providerReplayDigest(const Json& items,
                                 int providerProjectionVersion = kProviderProjectionVersion);

// ---------------------------------------------------------------------------------------
// e.8 / f.7 Continuation claims

// ContinuationClaimV1.
struct ContinuationClaim {
  std::string claimId;
  std::string boundaryDigest;  // == boundary.manifestDigest
  BoundaryCursor boundary;
  int providerProjectionVersion = kProviderProjectionVersion;
  std::string providerReplayDigest;
  PrefixIdentity target;
  RunHeader targetRunHeader;  // status created, createdAt == updatedAt == claimedAt, V2 source
  double claimedAt = 0;

  Json toJson() const;
  // The inverse of toJson (protocol continuation_claim_v1, closed key set). Shape errors throw
  // Error(code::continuation_claim_invalid); the e.8 rules are claimContinuation's to check.
  static ContinuationClaim fromJson(const Json& j);
  // Last boundary segment (the immediate source).
  PrefixIdentity sourceIdentity() const;
  int64_t sourceHighWater() const;
  std::string sourcePrefixDigest() const;
};

// The durable claim state as read back (row decoded and cross-checked with its start event).
struct ClaimState {
  ContinuationClaim claim;
  std::optional<std::string> startEventId;
  std::optional<std::string> startKind;  // runtime_admission | claim_repair
  std::optional<RuntimeEvent> startEvent;
};

struct ClaimResult {
  std::string result;                  // acquired | existing | conflict  (code::acquired, …)
  std::optional<ClaimState> existing;  // for existing / conflict (the row that owns it)
  std::string conflictDetail;          // which identity collided
};

// Validates the claim (e.8 decoder rules) and, in ONE BEGIN IMMEDIATE transaction, checks the
// existing claim rows, verifies the boundary against the ledger (ancestors pinned at their
// lastEventSeq, the immediate source at its latest head ending with exactly one terminal
// event), classifies existing/conflict, requires an empty target ledger and inserts the row.
// Errors: continuation_claim_invalid, continuation_boundary_missing,
// continuation_boundary_changed, continuation_boundary_not_terminal,
// continuation_target_not_empty, continuation_claim_row_mismatch.
ClaimResult claimContinuation(RuntimeStore& store, const ContinuationClaim& claim);

// Builds the continuation-start event for a claim (e.8/a.3): role/author system, actions
// {continuationStart{protocol:'continuation_start_v2', provenance, …}} plus runtimeProtocol
// t1_after_preflight_v1 when `protocolMarker` (runtime_admission only).
RuntimeEvent buildContinuationStartEvent(const ContinuationClaim& claim, const std::string& eventId,
                                         double ts, std::string_view provenance,
                                         bool protocolMarker);

// f.7 writers. The event must be the claim's start (every rule of f.7, else
// continuation_start_invalid); the claim row must exist and equal `claim`; an already
// recorded start returns {created:false, runtimeEventSeq:1} only for the same event id,
// kind and bytes (else continuation_start_conflict). The start takes event_seq 1.
WriteResult commitContinuationStart(RuntimeStore& store, const ContinuationClaim& claim,
                                    const RuntimeEvent& startEvent);  // runtime_admission
WriteResult commitContinuationRepairStart(RuntimeStore& store, const ContinuationClaim& claim,
                                          const RuntimeEvent& startEvent);  // claim_repair

// Claim readers. Every row is decoded and cross-checked (row vs payload, start_event_id vs
// start_kind vs the stored start event); any mismatch fails closed with
// continuation_claim_row_mismatch.
std::optional<ClaimState> readClaimByBoundaryDigest(RuntimeStore& store,
                                                    const std::string& boundaryDigest);
std::optional<ClaimState> readClaimById(RuntimeStore& store, const std::string& claimId);
std::optional<ClaimState> readClaimByTargetRun(RuntimeStore& store, const std::string& sessionId,
                                               const std::string& targetRunId);
std::vector<ClaimState> listClaims(RuntimeStore& store);

// ---------------------------------------------------------------------------------------
// e.4 Lineage

struct LineageEdge {
  size_t childSegment = 0;  // index (oldest first) of the continuation run's segment
  Json source;              // the child's continuationSource
  bool v2 = false;
  std::optional<RuntimeEvent> start;  // child event #1 (V2)
};
struct Lineage {
  std::vector<ImmutablePrefix> segments;   // oldest → immediate source
  std::vector<RunHeader> headers;          // parallel to segments
  std::vector<SegmentReplay> projections;  // parallel to segments (each projected once)
  std::vector<LineageEdge> edges;          // oldest child first
};

// The one traversal shared by planning and execution revalidation. `immediate` is the
// source prefix (latest head or pinned by the caller). Throws Error with one of
// runtime_lineage_cycle, runtime_lineage_depth_exceeded (64 segments max),
// runtime_lineage_missing, runtime_identity_mismatch, source_prefix_digest_mismatch,
// runtime_lineage_start_mismatch, runtime_lineage_replay_mismatch,
// continuation_authority_unavailable, runtime_lineage_claim_mismatch.
// Cost is linear in the total events (each segment read and projected once; per-edge replay
// digests are computed incrementally).
inline constexpr int kMaxLineageDepth = 64;
Lineage traverseLineage(RuntimeStore& store, const RunHeader& immediateHeader,
                        ImmutablePrefix immediate);

// ---------------------------------------------------------------------------------------
// e.1, e.2, e.5, e.6 Planner

struct WorkspaceCheckpoint {
  std::optional<std::string> ref;
  bool restored = false;
  int64_t runtimeEventHighWater = 0;
};

// The local safety inspector's observation (e.1); supplied by the host (the agent).
struct SafetyFacts {
  std::string workspaceIdentity;  // "workspace:v1:<uuid>" from the marker (section h)
  std::string workspacePath;      // canonical path, diagnostic only
  bool backgroundOperationsSettled = true;
  std::vector<std::string> availableToolNames;
  std::optional<WorkspaceCheckpoint> workspaceCheckpoint;
};

struct ContinuationHost {
  // Resume feature flag. nullopt = environment: on unless CRASHSIM_SAFE_BOUNDARY_RESUME=0.
  std::optional<bool> enabled;
  // Session header cwd (currentCwd of e.1 step 6); a change is only a diagnostic.
  std::string currentCwd;
  // Safety inspector; absent → safety_observation_unavailable; a throw → the same code.
  std::function<SafetyFacts()> inspector;
  // Id allocator (invocationId, runId, turnId, claimId in that order); default random.
  std::function<std::string()> newId;
  // Clock in Unix ms; default store_detail::nowMs().
  std::function<double()> now;
  // Write the t1_after_preflight_v1 marker on the live continuation-start (the SQLite T1/T2
  // sink is wired in this runtime).
  bool protocolMarker = true;
  // Told the claim's result (acquired | existing | conflict) as soon as claimContinuation
  // returned, before anything else is checked: the host logs it (lifecycle `continuation_claim`).
  std::function<void(const ClaimResult&)> onClaim;
  // Workspace continuity (contract e.3): the host policy (default disabled: no gate, RC e.6
  // unchanged) and the host inspector, asked about the covering checkpoint the planner names
  // (nullptr: none). Absent or throwing under an enabled policy → safety_observation_unavailable.
  WorkspaceHostPolicy workspacePolicy;
  std::function<WorkspaceObservation(const CheckpointFact* covering)> workspaceInspector;
};

// True unless CRASHSIM_SAFE_BOUNDARY_RESUME is "0" (or host.enabled says otherwise).
bool safeBoundaryResumeEnabled(const ContinuationHost& host);

struct SafetySnapshot {
  std::string workspaceIdentity;
  bool backgroundOperationsSettled = true;
  std::vector<std::string> availableToolNames;  // unique, sorted
  std::optional<WorkspaceCheckpoint> workspaceCheckpoint;
  // e.4: a continue plan of a session with a workspace lineage binds
  // {protocol:'crashsim_workspace_binding_v1', workspaceId, epoch, checkpointId, treeOid}
  // (checkpointId and treeOid null when continuing uncovered under optional_legacy).
  std::optional<Json> workspaceBoundary;
};

struct ContinuationPlan {
  std::string decision;  // "continue" | "park"
  std::vector<std::string> rejectionReasons;
  std::vector<PlanDiagnostic> diagnostics;
  std::string sessionId;
  std::string sourceRunId;  // empty when no candidate
  // continue only:
  std::string invocationId, runId, turnId, claimId;  // fresh
  std::string sourceInvocationId, sourceTurnId;
  int64_t sourceRuntimeEventHighWater = 0;
  std::string sourcePrefixDigest;
  std::vector<RuntimeEvent> runtimeContext;
  std::vector<RuntimeEvent> sourceRuntimeContext;  // >1 segment: the immediate source part
  Json providerItems = Json::array();
  std::optional<BoundaryCursor> boundary;  // also on a park under an enabled workspace policy (g.1)
  std::string providerReplayDigest;
  int providerProjectionVersion = kProviderProjectionVersion;
  SafetySnapshot safetySnapshot;
  size_t lineageDepth = 0;

  bool isContinue() const { return decision == "continue"; }
  // {decision, rejectionReasons, diagnostics, sessionId, sourceRunId, …ids, boundary digest,
  // providerReplayDigest, runtimeContextEventIds, safetySnapshot}.
  Json toJson() const;
};

// e.1 "plan latest": feature gate, candidate = newest session-inline failed/cancelled run of
// the session (createdAt desc, runId desc); nullopt session = every session.
ContinuationPlan planLatestContinuation(RuntimeStore& store,
                                        const std::optional<std::string>& sessionId,
                                        const ContinuationHost& host);
// e.1 authoritative entry + e.2 planner + e.5 + e.6 gates for one source run. Read-only.
ContinuationPlan planContinuation(RuntimeStore& store, const std::string& sessionId,
                                  const std::string& sourceRunId, const ContinuationHost& host,
                                  std::optional<int64_t> expectedRuntimeEventHighWater = {});

// ---------------------------------------------------------------------------------------
// e.9 Execution

struct ContinuationExecution {
  RunHeader targetHeader;  // the created target run (status created)
  ContinuationClaim claim;
  RuntimeEvent startEvent;                  // durable target event #1
  std::vector<RuntimeEvent> replayHistory;  // validated history to give the model
  Json providerItems = Json::array();
  std::string providerReplayDigest;
};

// Revalidates (e.9 steps 1–5, Error codes source_identity_changed, source_replay_changed,
// source_terminal_changed, source_high_water_changed, source_ledger_identity_changed,
// workspace_identity_changed, background_operation_started, tool_catalog_changed,
// workspace_checkpoint_changed), claims (not acquired → continuation_claim_conflict),
// checks legacy/target-run conflicts (continuation_claim_conflict, target_run_conflict),
// [P11], creates the target run, [P14], re-inspects safety, commits the runtime_admission
// continuation-start, [P15], and returns the history. Only after this returns may the provider
// run.
// Also: continuation_in_progress (same session already resuming in this process),
// run_active (another run of the session is running), capability_unavailable.
ContinuationExecution executeContinuation(RuntimeStore& store, const ContinuationPlan& plan,
                                          const ContinuationHost& host);

// ---------------------------------------------------------------------------------------
// g Claim repair saga

// RepairMode (strict | bestEffort) is startup_repair.h's.

struct ClaimRepairAction {
  std::string claimId;
  std::string sessionId;
  std::string targetRunId;
  // created_target_header, repair_start, repair_terminal, failed_header,
  // left_runtime_admission, already_repaired, skipped_session, error
  std::vector<std::string> actions;
  std::string error;  // best-effort: the swallowed failure
};
struct ClaimRepairReport {
  std::vector<ClaimRepairAction> claims;
  std::vector<std::string> skippedSessions;
  Json toJson() const;
};

// For every claim: missing target header → created from the claim's header; no start →
// (empty target required) deterministic claim_repair start (id continuation-repair-start-…,
// ts = claimedAt, no marker); claim_repair start → deterministic failed terminal
// (continuation-repair-terminal-…, failureClass continuation_abandoned_before_provider_dispatch)
// then the failed header; runtime_admission start → left alone. dryRun reports without
// writing. strict throws on any failure; bestEffort skips the session.
ClaimRepairReport repairContinuationClaims(RuntimeStore& store, RepairMode mode, bool dryRun);

}  // namespace crashsim
