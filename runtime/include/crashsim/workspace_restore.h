// crashsim/workspace_restore.h — isolated restore of a drifted workspace
// (workspace-continuity-contract.md f): the checkpoint the planner named is materialised as a
// new, locked worktree of the store-owned carrier (never over the user's directory), marked with
// a fresh identity, and a `transition` opens the next epoch in it; the continuation then runs
// there. Also the start-up quarantine of an unfinished restore's residue (f.3).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "crashsim/json.h"
#include "crashsim/store.h"
#include "crashsim/workspace_carrier.h"
#include "crashsim/workspace_facts.h"

namespace crashsim {

// b.3: the restored instance of (workspaceId, toEpoch): name `<ws32>-e<toEpoch>`, path
// `<store>/workspace/instances/<name>` (the store directory made absolute and canonical), lock
// reason `crashsim checkpoint <sourceCheckpointId> epoch <toEpoch>` (an empty storeDir: no path).
struct RestoredInstanceName {
  std::string name;
  std::filesystem::path path;
  std::string lockReason;
};
RestoredInstanceName restoredInstanceName(const std::filesystem::path& storeDir,
                                          std::string_view workspaceId, int64_t toEpoch,
                                          std::string_view sourceCheckpointId);

// e.2 step 1 for a restored instance, read-only: "" when the carrier registers `path` locked with
// `lockReason`; else `instance_missing` (not registered, or its directory is gone) or
// `instance_unlocked` (registered without that lock).
std::string checkRestoredRegistration(const WorkspaceCarrier& carrier,
                                      const std::filesystem::path& path,
                                      const std::string& lockReason);

struct RestoreRequest {
  std::filesystem::path storeDir;
  std::string sessionId;
  std::string sourceRunId;   // the plan's immediate source (its full high-water is Sn)
  std::string checkpointId;  // C, as the planner named it in its workspace_drifted park
  double ts = 0;             // Unix ms of the facts (part of their exact-retry bytes)
};

struct RestoreResult {
  int64_t fromEpoch = 0, toEpoch = 0;
  std::string sourceCheckpointId;
  std::filesystem::path instanceRoot;  // the restored instance's canonical root
  std::string instanceIdentity;        // I′, its fresh RC h marker identity
  CheckpointFact restored;             // R
  bool created = false;                // false: the transition was already committed (retry)
  Json toJson() const;
};

// f.1's preconditions other than the plan's reasons and the dry run: C is a checkpoint of the
// current epoch, its tree has no 160000 entry (checkpoint_restore_failed, detail
// `gitlink_not_restorable`), the session is quiescent (workspace_transition_busy, b.5 check 7).
// Read-only. Throws CarrierError.
void checkRestorePreconditions(RuntimeStore& store, const std::filesystem::path& storeDir,
                               const GitRuntime& git, const RestoreRequest& request);

// f.2 R0–R5, in order: full verification of C (checkpoint_artifact_corrupt); R1 `worktree add
// --detach --lock --reason` into a path that must not exist (checkpoint_restore_failed,
// `instance_path_exists`); R2 registration, lock and the c.3 tree verified
// (checkpoint_restore_failed), the tree and worktrees/<name> made durable [P23]; R3 marker I′,
// the restored ref created create-only at C's commit (an equal ref is an exact retry),
// light-verified [P24]; R4 commitWorkspaceFacts shape `transition` ([P25] inside) [P26]; R5
// post-verification of R. Never reads the user's directory, never writes it. Throws CarrierError
// (or the writer's Error).
RestoreResult isolatedRestore(RuntimeStore& store, const GitRuntime& git,
                              const RestoreRequest& request);

// f.3 (start-up step 2a, under the host lock): every instances/ entry, carrier registration
// (worktrees/<name>) and pending quarantine intent named `<ws32>-e<n>` that no epoch_opened fact
// names by canonicalRoot is the residue of an unfinished restore: 1 intent
// quarantine/<name>.intent.json (temp, fsync, rename), 2 `worktree unlock`, 3 rename the
// directory to quarantine/<name>.<k>, 4 `worktree prune --expire=now`, 5 the intent deleted.
// Each step is idempotent; a kill resumes from the intent. Returns the names quarantined (empty
// when the store has no carrier). Instances a fact names are never touched.
std::vector<std::string> quarantineRestoreResidue(RuntimeStore& store,
                                                  const std::filesystem::path& storeDir,
                                                  const GitRuntime& git);

}  // namespace crashsim
