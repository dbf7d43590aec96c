// crashsim/workspace_rebaseline.h — the durable rebaseline of workspace continuity
// (workspace-continuity-contract.md g): a user-confirmed acceptance of the workspace's current
// files into a new epoch, its replay notice (g.3) and the read-before-write gate (g.4).
//
// A rebaseline is an explicit user act recorded as a fact; it never claims an old checkpoint
// matched. It runs in host start-up (e.5 step 6b) only when the user confirmed the plan they saw,
// {sessionId, boundaryManifestDigest}; driftAction never rebaselines. Every refusal is a
// crashsim::Error with a j.1 code, and nothing is written before the preconditions g.1 hold.
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crashsim/continuation.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "crashsim/workspace_carrier.h"
#include "crashsim/workspace_facts.h"

namespace crashsim {

// g.1 item 1: what the user confirmed — the session and the manifestDigest (RC e.7) of the
// boundary cursor of the plan they were shown.
struct RebaselineConfirmation {
  std::string sessionId;
  std::string boundaryManifestDigest;
};

struct RebaselineRequest {
  std::filesystem::path storeDir;
  std::filesystem::path instanceRoot;  // the observed instance (the host's workspace)
  std::string instanceIdentity;        // its RC h marker identity
  std::string canonicalRoot;           // recorded in epoch_opened when no lineage exists
  RebaselineConfirmation confirmation;
  SnapshotLimits limits;  // the policy of the rebased checkpoint (c.3 default)
  double ts = 0;          // Unix ms of the facts
};

struct RebaselineResult {
  std::string confirmationId;  // b.3 rbc_…
  int64_t epoch = 1;           // the epoch the rebaseline opened
  std::string epochOpenedEventId;
  CheckpointFact checkpoint;  // R′, kind rebased
  Json readSet;               // {kind:'paths', paths} | {kind:'all'}
  bool created = false;       // false: an exact retry of an accepted rebaseline
};

// g.1 items 2–6 for the parked (or continuing) `plan` (item 1, the user's confirmation, is the
// caller's): the same refusals in the same order as rebaselineWorkspace, read only — nothing is
// written to the store, the carrier or the instance (eligibility is checked in scratch). The host
// names `rebaseline_available` (e.3) when they hold.
void checkRebaselinePreconditions(RuntimeStore& store, const GitRuntime& git,
                                  const ContinuationPlan& plan, const RebaselineRequest& request);
// g.1 then g.2 B1–B6 for the parked (or continuing) `plan` of the confirmed session:
//  g.1 in order, the first failure refusing with nothing written — rebaseline_confirmation_required
//  (no plan boundary, another session or digest), workspace_transition_busy (a non-terminal run or
//  an unfinished claim), rebaseline_operation_unsettled (a cursor operation neither completed nor
//  definitely_not_dispatched), rebaseline_not_applicable (a plan reason outside {no_checkpoint,
//  workspace_drifted, workspace_ref_missing, checkpoint_artifact_corrupt,
//  checkpoint_policy_mismatch}), workspace_identity_mismatch (not E's instance), the c.4 code of
//  the current instance (checked in scratch, read only);
//  B1–B3 the capture of the current instance as `rebased` in epoch E+1 (1 without lineage) covering
//  Sn at its full high-water [P18–P20]; B4 the readSet from `diff-tree` against the newest
//  readable checkpoint of E; B5 commitWorkspaceFacts `transition` (with a lineage) or `open`
//  ([P27] inside), [P28] after COMMIT; B6 post-verify. An exact retry returns created:false.
RebaselineResult rebaselineWorkspace(RuntimeStore& store, const GitRuntime& git,
                                     const ContinuationPlan& plan,
                                     const RebaselineRequest& request);

// --- g.3 the replay notice ---
// The epoch a run is bound to (its header's workspaceBoundary) when that epoch was opened by a
// user_rebaseline; nullopt otherwise. Read from the facts (THE scanner).
struct RebasedEpoch {
  std::string workspaceId;
  int64_t epoch = 0;
  std::string openedEventId;
  bool allPaths = false;           // readSet {kind:'all'}
  std::vector<std::string> paths;  // readSet paths, bytewise sorted
};
std::optional<RebasedEpoch> rebasedEpochOf(RuntimeStore& store, const RunHeader& header);
// The notice text of g.3 (four lines, or three for readSet all; no final newline).
std::string rebaselineNoticeText(const RebasedEpoch& epoch);
// True when some run of the session holds the notice of this epoch (stateDelta
// workspaceRebaselineNotice = the epoch_opened event id).
bool rebaselineNoticeCommitted(RuntimeStore& store, const std::string& sessionId,
                               const std::string& epochOpenedEventId);
// The notice event of `run` (role user, author host, steering text, stateDelta), id b.3.
RuntimeEvent rebaselineNoticeEvent(const PrefixIdentity& run, const RebasedEpoch& epoch, double ts);

// --- g.4 the read-before-write gate ---
// "p was read": a run bound to the epoch (header workspaceBoundary.epoch) holds a Read of p,
// completed, response not isError. A pure function of the facts and the ledger.
std::set<std::string> rebaselineReadPaths(RuntimeStore& store, const std::string& sessionId,
                                          const RebasedEpoch& epoch);
// The canonical form of a tool's path argument relative to the workspace root: absolute paths
// under the root made relative, `.`/`..` resolved lexically.
std::string rebaselineCanonicalPath(const std::filesystem::path& root, const std::string& path);
struct RebaselineGateRefusal {
  std::string code;  // rebaseline_read_required | rebaseline_opaque_write_blocked
  std::string message;
  Json result() const;  // {error:{code, message}}
};
// The gate for one call: Write/Edit of an unread readSet path (or any path under readSet all) →
// rebaseline_read_required "read <p> again before writing it (workspace epoch <N>)"; an opaque
// tool while readSet is all or holds an unread path → rebaseline_opaque_write_blocked "<tool> is
// blocked until the rebaselined files are read again (workspace epoch <N>)"; else nullopt (tools
// of effect none, paths outside readSet). `canonicalPath` is the call's path argument, canonical.
std::optional<RebaselineGateRefusal> rebaselineGate(
    const RebasedEpoch& epoch, const std::set<std::string>& readPaths, const std::string& toolName,
    const std::optional<std::string>& canonicalPath);

}  // namespace crashsim
