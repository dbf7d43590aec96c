// crashsim/workspace_carrier.h — the store-owned carrier repository and checkpoint capture
// (workspace-continuity-contract.md c, d).
//
// The carrier is a bare git repository at <store>/workspace/carrier.git, driven by the
// distribution's git CLI hermetically (c.2): a cleared environment (no user or system config:
// GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL and HOME in the carrier's private git-home), explicit
// absolute GIT_DIR / GIT_WORK_TREE / GIT_INDEX_FILE, the -c options that override any repository
// config, each child in its own process group, killed with it on a deadline and with its parent
// (PR_SET_PDEATHSIG). In the user's directory Phase 4 only reads (rev-parse, ls-files, check-attr,
// status in submodules, with GIT_OPTIONAL_LOCKS=0): the capture index is the carrier's own
// index/<uuid>.index, never the user's .git/index.
// Every failure throws CarrierError: a j.1 code, a stable detail (c.4's `not_worktree_root`,
// `dirty_submodule`, `attribute:filter`, ...) and a one-line message.
#pragma once

#include <array>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/error.h"
#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"

namespace crashsim {

class CarrierError : public Error {
 public:
  CarrierError(std::string_view code, std::string detail, const std::string& message)
      : Error(code,
              std::string(code) + (detail.empty() ? "" : " (" + detail + ")") + ": " + message),
        detail_(std::move(detail)) {}
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string detail_;
};

// --- c.2 the git runtime ---
struct GitRuntime {
  std::filesystem::path binary;  // absolute
  std::string version;           // the text after "git version "
  std::string binarySha256;      // "sha256:<hex>" of the executable
};
// "git version 2.39.5" (optionally followed by more text) → {2, 39, 5}; nullopt when unparsable.
std::optional<std::array<int, 3>> parseGitVersion(std::string_view versionOutput);
// Resolves `name` (searched on PATH without a '/') to an absolute path, runs `git version` under
// the hermetic environment and hashes the binary: git_binary_unavailable when there is none,
// git_version_unsupported below 2.36.0 or unparsable.
GitRuntime resolveGitRuntime(const std::string& name = "git");

// --- c.1 the carrier ---
class WorkspaceCarrier {
 public:
  // Opens <storeDir>/workspace (creating it lazily: git-home, a bare carrier.git made in a
  // tmp-<pid> directory, fsynced and renamed, then carrier.json). With carrier.json, carrier.git
  // must be a bare repository of format version 0 and object format sha1; without it, tmp residue
  // is deleted, and carrier.git too (re-created) unless checkpointFactsExist. Otherwise
  // workspace_carrier_damaged.
  static WorkspaceCarrier open(const std::filesystem::path& storeDir, GitRuntime git,
                               bool checkpointFactsExist);
  // The read-only open of the host inspector (e.2): nullopt when the store has no carrier
  // (neither carrier.json nor carrier.git); workspace_carrier_damaged when carrier.json is not
  // the record, carrier.git is not a bare sha1 repository, or carrier.git has no carrier.json.
  // Creates, deletes and writes nothing.
  static std::optional<WorkspaceCarrier> openExisting(const std::filesystem::path& storeDir,
                                                      GitRuntime git);

  const GitRuntime& git() const { return git_; }
  const std::filesystem::path& dir() const { return dir_; }  // <store>/workspace
  std::filesystem::path gitDir() const { return dir_ / "carrier.git"; }
  std::filesystem::path gitHome() const { return dir_ / "git-home"; }
  // The persistent capture index of an instance (a stat cache only): index/<uuid>.index.
  std::filesystem::path indexFileFor(std::string_view instanceIdentity) const;

 private:
  WorkspaceCarrier(std::filesystem::path dir, GitRuntime git)
      : dir_(std::move(dir)), git_(std::move(git)) {}
  std::filesystem::path dir_;
  GitRuntime git_;
};

// --- c.3 / c.4 snapshot of an instance ---
struct WorkspaceSnapshot {
  std::string treeOid;
  int64_t fileCount = 0, totalBytes = 0;  // blob entries (files and symlinks)
  std::vector<std::string> paths;         // L after c.3 step 2, in git's order
};
// Eligibility (c.4 checks 4–9) and the c.3 tree of `instanceRoot` under `limits`, its objects
// written into the carrier through the instance's private index. [P18] once the private index
// holds L and its blobs are in the carrier (a capture only: `atCapture`). Codes:
// unsupported_workspace_carrier (not_worktree_root, object_format, sparse_checkout),
// checkpoint_policy_unsupported (nested_repository, dirty_submodule, attribute:<name>),
// checkpoint_policy_limit_exceeded (maxFiles, maxFileBytes, maxTotalBytes, captureTimeoutMs),
// checkpoint_capture_failed (a git step, or `unstable` after 3 attempts).
WorkspaceSnapshot snapshotInstance(const WorkspaceCarrier& carrier,
                                   const std::filesystem::path& instanceRoot,
                                   std::string_view instanceIdentity, const SnapshotLimits& limits,
                                   bool atCapture);

// c.5 light verification of a checkpoint's artifact: the ref names commitOid
// (workspace_ref_missing); the commit has tree treeOid, no parent, the b.3 identity, and every
// object it reaches is present (checkpoint_artifact_corrupt).
void lightVerifyCheckpoint(const WorkspaceCarrier& carrier, const CheckpointFact& checkpoint);

// c.4 checks 4–5 alone (the structural class: the instance can have a git carrier at all), read
// only: unsupported_workspace_carrier (not_worktree_root, object_format). `gitHome` may be empty
// (no carrier yet).
void checkWorkspaceStructure(const GitRuntime& git, const std::filesystem::path& gitHome,
                             const std::filesystem::path& instanceRoot);

// e.2 steps 2–4, read-only: the c.3 tree of the instance under the checkpoint's own policy, built
// in scratch outside the store (GIT_OBJECT_DIRECTORY = scratch, GIT_ALTERNATE_OBJECT_DIRECTORIES =
// the carrier's objects, GIT_INDEX_FILE = a scratch copy of the persistent index): never a byte
// of the user's .git, the carrier's objects or the store. A c.4 failure is drift (detail
// `capture_ineligible:<code>`); a different tree is drift with at most 20 `diff-tree
// --name-status` entries ("M a.txt").
struct DriftCheck {
  bool match = false;
  std::string currentTreeOid;  // empty when it could not be computed
  std::string detail;          // capture_ineligible:<code>
  std::vector<std::string> paths;
};
DriftCheck checkWorkspaceDrift(const WorkspaceCarrier& carrier,
                               const std::filesystem::path& instanceRoot,
                               std::string_view instanceIdentity, const CheckpointFact& checkpoint);

// e.5 step 2 / c.1: under the host lock, the stale *.lock files of carrier.git/ (top, refs/,
// worktrees/*/) and index/ are deleted. Returns how many; 0 when the store has no carrier.
size_t removeStaleCarrierLocks(const std::filesystem::path& storeDir);

// --- d.2 capture ---
struct CaptureRequest {
  std::filesystem::path instanceRoot;  // canonical root of the observed instance
  std::string instanceIdentity;        // its RC h marker identity, workspace:v1:<uuid>
  std::string canonicalRoot;           // recorded in epoch_opened (diagnostic for `user`)
  PrefixIdentity run;                  // the run whose rows 1..p the checkpoint covers
  int64_t lastEventSeq = 0;            // p
  SnapshotLimits limits;
  double ts = 0;  // Unix ms of the facts (part of their exact-retry bytes)
};
struct CaptureResult {
  CheckpointFact checkpoint;
  bool created = false;  // false: an exact retry of an accepted checkpoint
};
// d.2 steps 1–9 in order, the artifact before the fact: boundary, carrier, eligibility and L,
// private index and blobs [P18], write-tree and stability, commit-tree [P19], create-only ref,
// light-verify, fsync of the ref's directory chain [P20], commitWorkspaceFacts open/append
// ([P21] inside), [P22], post-verify. A ref that exists at another commit →
// workspace_fact_conflict, never overwritten. An instance that is not the current epoch's →
// workspace_identity_mismatch.
CaptureResult captureCheckpoint(RuntimeStore& store, const std::filesystem::path& storeDir,
                                const GitRuntime& git, const CaptureRequest& request);

// The b.3 commit message of a checkpoint: "crashsim-checkpoint-v1\n" + stableJSON({checkpointId,
// workspaceId, epoch, kind, boundary:{sessionId, runId, lastEventSeq, prefixDigest}, policyHash})
// + "\n".
std::string checkpointCommitMessage(const CheckpointFact& checkpoint);

}  // namespace crashsim
