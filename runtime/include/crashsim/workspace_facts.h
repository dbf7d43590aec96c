// crashsim/workspace_facts.h — workspace continuity facts (workspace-continuity-contract.md b):
// the derived identifiers, the snapshot policy hash, the three fact kinds, their one writer and
// the projections rebuilt from them.
//
// Workspace facts are RuntimeEvents with actions.workspaceFact = {kind, version:1, payload} in
// the store-owned session kWorkspaceAuthoritySession, one spine (invocation/run/turn) per
// (workspaceId, epoch): event_seq 1 its epoch_opened, then its checkpoints, last (optionally)
// the transition that seals it. Only commitWorkspaceFacts() writes them; every other writer
// refuses a workspaceFact or the authority session (code::reserved_workspace_fact). The three
// tables runtime_workspace_{epochs,checkpoints,transitions} (schema 5) are projections: online
// rows, reopened rows and rebuildWorkspaceProjections() are identical (checkIntact compares).
// Every failure throws crashsim::Error with a code of the contract's j.1.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"

namespace crashsim {

inline constexpr std::string_view kWorkspaceAuthoritySession = "maka_workspace_authority";
inline constexpr std::string_view kEpochOpenedKind = "crashsim.workspace.epoch_opened";
inline constexpr std::string_view kCheckpointAcceptedKind =
    "crashsim.workspace.checkpoint_accepted";
inline constexpr std::string_view kTransitionKind = "crashsim.workspace.transition";

// --- b.3 derived identifiers (the writer recomputes each; callers are never trusted) ---
// hex32(bytes): the first 32 lower-case hex digits of SHA-256(bytes).
std::string hex32(std::string_view bytes);
// "wsp_" + hex32(LP("crashsim.workspace.id.v1") || LP(sessionId)).
std::string workspaceIdForSession(std::string_view sessionId);
// b.3 "rbc_" + hex32(LP("crashsim.workspace.rebaseline-confirmation.v1") || LP(sessionId) ||
// LP(boundaryManifestDigest)): the id of a user's rebaseline confirmation (g.1 item 1).
std::string rebaselineConfirmationId(std::string_view sessionId,
                                     std::string_view boundaryManifestDigest);
// g.3 "workspace-notice-" + hex32(LP("crashsim.workspace.notice.v1") || LP(epochOpenedEventId) ||
// LP(runId)): the id of a rebased epoch's replay notice in the run that commits it.
std::string rebaselineNoticeId(std::string_view epochOpenedEventId, std::string_view runId);
// "ckpt_" + hex32(LP("crashsim.workspace.checkpoint.v1") || LP(workspaceId) || u64be(epoch) ||
// LP(kind) || LP(stableJSON(coveredBoundary))).
std::string checkpointIdFor(std::string_view workspaceId, int64_t epoch, std::string_view kind,
                            const Json& coveredBoundary);
// "refs/crashsim/checkpoints/<ws32>/<epoch>/<ck32>".
std::string checkpointRefName(std::string_view workspaceId, int64_t epoch,
                              std::string_view checkpointId);
// The spine of (workspaceId, epoch): workspace_{inv,run,turn}_<ws32>_<epoch>.
PrefixIdentity workspaceSpine(std::string_view workspaceId, int64_t epoch);

// --- c.3 snapshot policy v1 ---
struct SnapshotLimits {
  int64_t maxFiles = 50000;
  int64_t maxFileBytes = 33554432;
  int64_t maxTotalBytes = 268435456;
  int64_t captureTimeoutMs = 5000;
  bool operator==(const SnapshotLimits&) const = default;
};
// The hashed policy object {version:1, paths, content, entryModes, submodules, attributes,
// limits}.
Json snapshotPolicyObject(const SnapshotLimits& limits);
// "sha256:" + hex SHA-256(LP("crashsim.workspace.snapshot-policy.v1") || LP(stableJSON(object))).
std::string snapshotPolicyHash(const SnapshotLimits& limits);

// --- b.4 payloads ---
struct WorkspaceInstance {
  std::string identity;       // workspace:v1:<uuid>
  std::string canonicalRoot;  // diagnostic for `user`, locates a `restored` instance
  std::string origin;         // user | restored
  bool operator==(const WorkspaceInstance&) const = default;
};

struct EpochOpenedFact {
  std::string workspaceId, sessionId;
  int64_t epoch = 1;
  WorkspaceInstance instance;
  std::string reason;  // first_checkpoint | isolated_restore | user_rebaseline
  std::optional<std::string> transitionEventId, confirmationId;
  Json readSet = Json{{"kind", "none"}};
};

struct CheckpointCarrier {
  std::string commitOid, treeOid, refName, gitVersion, gitBinarySha256;
};

struct CheckpointFact {
  std::string checkpointId, kind, workspaceId;  // kind: captured | restored | rebased
  int64_t epoch = 1;
  std::string instanceIdentity;
  Json coveredBoundary;  // the RC e.7 segment at p (ImmutablePrefix::segmentJson())
  CheckpointCarrier carrier;
  int64_t policyVersion = 1;
  SnapshotLimits limits;
  std::string policyHash;
  int64_t fileCount = 0, totalBytes = 0;
  std::optional<std::string> derivedFrom;
};

struct TransitionFact {
  std::string workspaceId;
  int64_t fromEpoch = 1, toEpoch = 2;
  std::string reason;  // isolated_restore | user_rebaseline
  std::string fromInstance, toInstance;
  Json boundary;  // the RC e.7 segment of the plan's immediate source at its high-water
  std::optional<std::string> sourceCheckpointId;
};

using WorkspaceFact = std::variant<EpochOpenedFact, CheckpointFact, TransitionFact>;

// The event of a fact on its spine (b.2): ids, spine and payload exactly as the contract
// derives them from the fact; `ts` is Unix ms (part of the exact-retry bytes).
RuntimeEvent workspaceFactEvent(const WorkspaceFact& fact, double ts);
// The event id b.2 derives for a fact.
std::string workspaceFactEventId(const WorkspaceFact& fact);
// Decodes an authority event's fact: exact key sets at every level, the kind, version 1 and
// the payload protocol; code::workspace_fact_invalid naming the first problem. The envelope's
// spine and derived ids are the scanner's concern (workspace_spine_conflict).
WorkspaceFact decodeWorkspaceFact(const RuntimeEvent& event);

// --- b.5 the writer ---
struct WorkspaceCommitResult {
  bool created = false;  // false = exact retry, nothing written
  std::vector<std::string> eventIds;
};
// The only writer of workspace facts. `events` is one shape: open (epoch_opened(1), checkpoint
// captured|rebased), append (checkpoint captured) or transition (transition, epoch_opened(e+1),
// checkpoint restored|rebased). One BEGIN IMMEDIATE transaction; the first failing check of b.5
// wins: workspace_fact_invalid, workspace_fact_corruption, {created:false} (exact retry),
// workspace_boundary_mismatch, workspace_epoch_conflict / workspace_epoch_sealed,
// workspace_fact_invalid (instances), workspace_transition_busy, workspace_fact_conflict.
// Never runs git: its caller verifies the artifact before and after. [P21] inside the
// transaction of an open/append, before COMMIT.
WorkspaceCommitResult commitWorkspaceFacts(RuntimeStore& store,
                                           const std::vector<RuntimeEvent>& events);

// --- b.6 projections ---
struct WorkspaceEpochRow {
  std::string workspaceId;
  int64_t epoch = 0;
  std::string sessionId, instanceIdentity, canonicalRoot, instanceOrigin, openedReason;
  std::string readSetJson, openedEventId;
  std::optional<std::string> sealedByEventId;
  bool operator==(const WorkspaceEpochRow&) const = default;
};
struct WorkspaceCheckpointRow {
  std::string checkpointId, workspaceId;
  int64_t epoch = 0;
  std::string kind, coveredSessionId, coveredInvocationId, coveredRunId;
  int64_t coveredEventSeq = 0;
  std::string coveredPrefixDigest, instanceIdentity, commitOid, treeOid, refName;
  int64_t policyVersion = 0;
  std::string policyHash;
  std::optional<std::string> derivedFrom;
  std::string acceptedEventId;
  bool operator==(const WorkspaceCheckpointRow&) const = default;
};
struct WorkspaceTransitionRow {
  std::string workspaceId;
  int64_t fromEpoch = 0, toEpoch = 0;
  std::string reason, fromInstance, toInstance;
  std::optional<std::string> sourceCheckpointId;
  std::string eventId;
  bool operator==(const WorkspaceTransitionRow&) const = default;
};
// Ordered by (workspace_id, epoch), (workspace_id, epoch, accepted rowid), (workspace_id,
// from_epoch).
std::vector<WorkspaceEpochRow> listWorkspaceEpochs(const RuntimeStore& store);
std::vector<WorkspaceCheckpointRow> listWorkspaceCheckpoints(const RuntimeStore& store);
std::vector<WorkspaceTransitionRow> listWorkspaceTransitions(const RuntimeStore& store);

// b.7: one write transaction: scan the authority stream; an issue → code::
// workspace_fact_corruption naming it, nothing changed; else the three tables deleted and
// re-inserted. Returns the number of checkpoint rows.
size_t rebuildWorkspaceProjections(RuntimeStore& store);

// The b.7 scan of the authority stream of one workspace (all when empty), read-only: the first
// issue as "<code> at <eventId>: <detail>", empty when clean.
std::string scanWorkspaceLineage(const RuntimeStore& store, std::string_view workspaceId = {});

}  // namespace crashsim
