// workspace_scanner.h — THE scanner of the workspace authority stream
// (workspace-continuity-contract.md b.7) and the per-fact rules the writer shares (b.5 step 1).
//
// One authority: commitWorkspaceFacts (its step 1 and the scan of the existing lineage, step 2),
// rebuildWorkspaceProjections, checkIntact and the planner all decide through this file. It sits
// in ledger/ beside the tool-ledger scanner: pure, no I/O — the only ledger read it needs (a
// covered boundary against runtime_events) is the caller's BoundaryCheck.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/workspace_facts.h"

namespace crashsim::detail {

// One stored authority event, in (invocation_id, event_seq) order.
struct AuthorityEvent {
  int64_t eventSeq = 0;
  const RuntimeEvent* event = nullptr;
};

struct ScannedCheckpoint {
  CheckpointFact fact;
  std::string eventId;
};
struct ScannedEpoch {
  EpochOpenedFact opened;
  std::string openedEventId;
  std::vector<ScannedCheckpoint> checkpoints;  // event_seq order
  std::optional<TransitionFact> transition;    // the transition that seals it
  std::string transitionEventId;
};
struct ScannedLineage {
  std::string workspaceId;
  std::vector<ScannedEpoch> epochs;  // epochs 1..n (when the scan is clean)
};
struct WorkspaceIssue {
  std::string code;  // a j.1 code
  std::string eventId;
  std::string detail;
  std::string workspaceId;  // when known
};
struct WorkspaceScan {
  std::vector<ScannedLineage> lineages;  // by workspaceId
  std::vector<WorkspaceIssue> issues;    // detection order
  const ScannedLineage* find(std::string_view workspaceId) const;
};

// "" when `segment` (an RC e.7 segment) matches runtime_events rows 1..p of its run: present,
// non-partial, same identity and lastEventId, equal recomputed digest; else what differs.
using BoundaryCheck = std::function<std::string(const Json& segment)>;

// b.7 in one pass; issues: workspace_fact_invalid (undecodable, derivation or shape),
// workspace_spine_conflict, workspace_epoch_gap, workspace_epoch_sealed,
// workspace_fact_conflict (duplicate checkpointId / refName), workspace_boundary_mismatch.
WorkspaceScan scanWorkspaceFacts(std::span<const AuthorityEvent> events,
                                 const BoundaryCheck& boundaryCheck);

// The shapes of b.4's strings, shared by the codec and the scanner: n lowercase hex digits, a
// prefix then n of them, a SHA-1 object id, a "sha256:" digest.
inline bool isLowerHex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}
inline bool isPrefixedHex(std::string_view s, std::string_view prefix, size_t n) {
  return s.substr(0, prefix.size()) == prefix && isLowerHex(s.substr(prefix.size()), n);
}
inline bool isOid(std::string_view s) { return isLowerHex(s, 40); }
inline bool isDigest(std::string_view s) { return isPrefixedHex(s, "sha256:", 64); }
// The session of an RC e.7 segment (its identity's sessionId).
inline std::string segmentSession(const Json& segment) {
  return segment.at("identity").at("sessionId").get<std::string>();
}

// The rules of one fact alone (b.3, b.4): its derived ids (checkpointId, refName, policy hash,
// workspaceId from the session), well-formed OIDs and digests, epochs, the boundary in the
// workspace's session. "" when they hold.
std::string factDerivationProblem(const WorkspaceFact& fact);
// The envelope of a fact's event (b.2): authority session, the spine of (workspaceId, epoch),
// the derived event id. "" when it holds.
std::string factSpineProblem(const RuntimeEvent& event, const WorkspaceFact& fact);
// The workspace a fact belongs to, and its spine epoch (fromEpoch for a transition).
const std::string& factWorkspace(const WorkspaceFact& fact);
int64_t factSpineEpoch(const WorkspaceFact& fact);
// The workspaceId whose spine an authority invocation id names ("wsp_<ws32>"), empty when none.
std::string workspaceOfInvocation(std::string_view invocationId);

}  // namespace crashsim::detail
