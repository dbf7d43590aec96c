// internal.h — shared internals of the continuation authority (src/continuation only).
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "crashsim/continuation.h"
#include "crashsim/terminal_facts.h"
#include "store/store_internal.h"

namespace crashsim::continuation_detail {

inline store_detail::Connection& conn(RuntimeStore& store) {
  return store_detail::connectionOf(store);
}
// Every public entry point holds the store's (recursive) mutex while it uses the connection.
[[nodiscard]] inline std::unique_lock<std::recursive_mutex> lockStore(RuntimeStore& store) {
  return std::unique_lock<std::recursive_mutex>(store_detail::mutexOf(store));
}

// Reads the prefix of `identity` (by invocation id) on an open connection, pinned at
// upToEventSeq when given. Throws event_seq_gap / partial_in_prefix / runtime_identity_mismatch.
ImmutablePrefix readPrefix(store_detail::Connection& c, const PrefixIdentity& identity,
                           std::optional<int64_t> upToEventSeq);

PrefixIdentity identityOf(const RunHeader& header);
PrefixIdentity identityFromJson(const Json& j);
bool sameIdentity(const PrefixIdentity& a, const PrefixIdentity& b);

// Run headers read on an open connection (agent_runs).
std::optional<RunHeader> readHeader(store_detail::Connection& c, const std::string& sessionId,
                                    const std::string& runId);
std::vector<RunHeader> readHeaders(store_detail::Connection& c,
                                   const std::optional<std::string>& sessionId);

// Immutable header fields (everything but status, updatedAt, completedAt, failureClass,
// failureMessage, abortSource) as JSON.
Json immutableHeaderJson(const RunHeader& h);

// e.2 step 8: header terminal, exactly one terminal fact, last, matching the header.
bool terminalRepairSucceeded(const RunHeader& header, const std::vector<RuntimeEvent>& events);

// Claim rows on an open connection (cross-checked; throws continuation_claim_row_mismatch).
enum class ClaimKey { boundaryDigest, claimId, targetRun };
std::optional<ClaimState> readClaim(store_detail::Connection& c, ClaimKey key, const std::string& a,
                                    const std::string& b = {});
std::vector<ClaimState> readAllClaims(store_detail::Connection& c);

// A boundary the caller has already built from its own segments and digested (lineage
// traversal: the segments before a continuation child).
struct KnownBoundary {
  std::string_view stableJson;      // stableJson(BoundaryCursor{segments, manifestDigest}.toJson())
  std::string_view manifestDigest;  // manifestDigest(segments)
  const Json* lastSegment = nullptr;  // segments.back()
  // Every segment identity has four non-empty ids, all in session `sessionId`.
  bool identitiesWellFormed = false;
  std::string_view sessionId;
  // Run, invocation and turn ids of the segments.
  const std::unordered_set<std::string>* runs = nullptr;
  const std::unordered_set<std::string>* invocations = nullptr;
  const std::unordered_set<std::string>* turns = nullptr;
};
// readClaim(c, ClaimKey::claimId, claimId) for a row expected to carry `known`: a row whose
// boundary_json is byte-identical to known.stableJson is checked without re-parsing or
// re-digesting its boundary (every other check runs as in readClaim); any other row, or any
// check that fails, is decoded by readClaim's own path, so the accepted rows, the errors and
// every ClaimState field are readClaim's — except that claim.boundary.segments then holds
// only the last segment (the caller holds the rest).
std::optional<ClaimState> readClaimWithKnownBoundary(store_detail::Connection& c,
                                                     const std::string& claimId,
                                                     const KnownBoundary& known);

// e.8 decoder rules for a candidate claim. Throws continuation_claim_invalid.
void validateClaim(const ContinuationClaim& claim);
// The target-header rules of validateClaim (they read only the boundary's last segment).
void validateClaimTarget(const ContinuationClaim& claim);
// "sha256:" followed by 64 lower-case hex digits.
bool isClaimDigest(const std::string& s);
// f.7 start-event rules. Throws continuation_start_invalid.
void validateStartEvent(const ContinuationClaim& claim, const RuntimeEvent& start,
                        std::string_view startKind);

// Lineage on an open connection.
Lineage traverse(store_detail::Connection& c, const RunHeader& immediateHeader,
                 ImmutablePrefix immediate);

}  // namespace crashsim::continuation_detail

namespace crashsim::continuation_detail {

// Workspace continuity e.3/e.4 (workspace_gate.cpp): what the gate table decides for one plan.
struct WorkspaceGate {
  bool lineageExists = false;  // the session's workspace has an epoch (RC e.6 step 7 then gives
                               // way to row 2)
  std::optional<std::string> reason;  // at most one rejection reason (rows 1–8)
  std::optional<Json> reasonDetail;
  std::vector<PlanDiagnostic> diagnostics;  // row 3/4 codes under optional_legacy and the rest
  std::optional<Json> binding;  // e.4 safetySnapshot.workspaceBoundary of a continue plan
};
// The gate table of e.3 for a source run whose lineage (cursor) is `lineage`, under
// host.workspacePolicy (enabled). Reads the workspace authority stream through the one scanner
// (detail::scanWorkspaceFacts); asks host.workspaceInspector about the C it names.
WorkspaceGate gateWorkspace(store_detail::Connection& c, const RunHeader& header,
                            const SafetyFacts& facts, const ContinuationHost& host,
                            const Lineage& lineage);

// e.4 revalidation (RC e.9 step 5 and step 8's second pass), after the existing checks:
// workspace_checkpoint_changed, checkpoint_artifact_changed, target_workspace_changed.
void revalidateWorkspace(store_detail::Connection& c, const ContinuationPlan& plan,
                         const RunHeader& header, const SafetyFacts& facts,
                         const ContinuationHost& host, const Lineage& lineage);

}  // namespace crashsim::continuation_detail
