// file_reconcile.h — finalize-only file recovery (spec i, c.4, f.6): the reconciler for
// operations the resolver leaves `indeterminate` / `dispatch_without_response`.
//
// Called by host start-up (crashsim/host.h) after the claim saga and BEFORE startup repair:
// the run seal refuses a bundle once the run has its terminal fact. It
// never re-derives tool state: resolveRecovery() decides which operations are indeterminate;
// this file acts only on those, and only on the ones with a dedicated protocol.
//
// Dedicated protocol = a Write/Edit dispatch with recoveryMode `reconcile` (file_state_v1
// evidence bound by T1 as actions.toolDispatch.fileEvidence). Every other indeterminate
// operation (Bash, Read, unknown tools, other recovery modes) is NEVER reconciled: it stays
// indeterminate and Phase 1 planning parks on it.
//
// For each reconcilable operation, in order:
//  1. validate the evidence (validateFileEvidence): a failure is never guessed around — the
//     operation is parked `reconcile_unreadable` (observed identity {"evidenceInvalid":<code>});
//  2. bounded, read-only observation of the target (observeFileEvidence): the path is walked
//     from the workspace root with openat(O_NOFOLLOW) one component at a time, so no symlink
//     is ever followed and nothing outside the workspace is read;
//  3. remove the leftover temp file of THIS operation (".<name>.<operationId>.tmp" next to the
//     target, regular files only) — the target itself is never written, renamed or deleted;
//  4. ONE atomic recovery bundle via RuntimeStore::commitToolRecoveryBundle (P10 sits inside
//     its transaction):
//       matches_expected_state → completed: <op>_reconcile + <op>_response (function_response
//         whose result is exactly evidence.result, refs {operationId, toolCallId}) +
//         <op>_decision (reasonCode reconcile_matches_expected_state, outcomeEventId
//         <op>_response, evidenceEventIds [call, dispatch, reconcile, outcome]);
//       matches_prior_state | diverged | unreadable → parked: <op>_reconcile + <op>_decision
//         (reconcile_<observation>, evidenceEventIds [call, dispatch, reconcile]).
//     Ids and timestamps are deterministic functions of the ledger (ts = max ts of the run's
//     events + 1, +2, +3), so a recovery killed at P10 and run again commits byte-identical
//     facts exactly once, and an exact retry converges ({created:false}).
//
// Observation rules (the observed identity is the file state {exists:false} or
// {exists:true,size,sha256}; an absent file is an observable identity, not an error):
//   observed == expectedAfter → matches_expected_state
//   observed == before        → matches_prior_state
//   otherwise                 → diverged
//   so a DELETED target whose before-state existed (and whose expected-after exists, as for
//   every Write/Edit) is `diverged` — something other than the tool changed the file; a
//   deleted target whose before-state was absent (a Write creating a new file, crash before
//   the rename) is `matches_prior_state`.
//   unreadable: the target (or a directory on its path) is a symlink, the target is not a
//   regular file, it is larger than the observation bound (16 MiB), or an I/O error occurs.
// observationDigest = sha256Digest(stableJson(observed identity)); for unreadable the
// identity is {"unreadable":<detail code>}.
#pragma once

#include <cstdint>
#include <string>

#include "crashsim/json.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"

namespace crashsim {

inline constexpr uint64_t kReconcileObservationMaxBytes = 16u << 20;

struct FileObservation {
  std::string observation;  // matches_expected_state | matches_prior_state | diverged | unreadable
  Json observedIdentity;    // digested into observationDigest
  std::string detail;  // unreadable: observation_* code; evidence failure: file_evidence_* code
};

// Evidence validation against the call, the dispatch and the current workspace. Returns an
// empty string when valid, else the first failing code (codes.h), in this order:
//   file_evidence_missing (no fileEvidence on the dispatch) →
//   file_evidence_identity_conflict (operationId ≠ deriveOperationId(invocation, call id);
//     call/dispatch ids not <op>_call/<op>_dispatch; call id/name/execution identity differ) →
//   file_evidence_workspace_mismatch (evidence workspaceIdentity ≠ current marker identity) →
//   file_evidence_target_invalid (names the workspace marker, or a non-canonical path) →
//   file_evidence_transform_mismatch (Write ↔ write_v1, Edit ↔ edit_v1) →
//   file_evidence_args_mismatch (the call's args.path does not name targetPath; Write: its
//     content is not the expected-after identity) →
//   file_evidence_expected_absent (expectedAfter must exist for Write/Edit) →
//   file_evidence_states_equal (before == expectedAfter: the tool is a no-op before T1) →
//   file_evidence_result_mismatch (result ≠ the production-shaped success result:
//     Write {path, bytesWritten: expectedAfter.size}, Edit {path, replacements: 1}).
std::string validateFileEvidence(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                 const WorkspaceIdentity& workspace);

// Bounded read-only observation of the evidence target and its classification (rules above).
FileObservation observeFileEvidence(const WorkspaceIdentity& workspace,
                                    const FileEvidence& evidence,
                                    uint64_t maxBytes = kReconcileObservationMaxBytes);

// Removes ".<name>.<operationId>.tmp" next to the target when it is a regular file (walked
// without following symlinks), then fsyncs the directory. Returns true when a file was removed.
bool removeOperationTempFile(const WorkspaceIdentity& workspace, const std::string& targetPath,
                             const std::string& operationId);

// The recovery bundle for one observation (deterministic ids; ts = baseTs + 1, 2, 3).
// Evidence must be present for a matches_expected_state observation (its result).
RecoveryBundle buildFileRecoveryBundle(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                       const FileObservation& observation, double baseTs);

// True when `decision` is an operation this reconciler settles: indeterminate /
// dispatch_without_response, tool Write or Edit, recovery mode `reconcile`.
bool hasDedicatedReconciler(const ToolDecision& decision);

struct ReconcileOptions {
  // The workspace to observe; null = none given: every operation with a dedicated reconciler
  // is reported `deferred` (detail reconcile_workspace_required) and nothing is written.
  const WorkspaceIdentity* workspace = nullptr;
  // False in a dry run: step 3 (temp-file removal) is skipped, the workspace is only read.
  bool removeTempFiles = true;
};

// Runs the reconciler over every run of the store. Never throws for a single operation: a
// refused bundle is reported and left alone. Returns
//   {"operations":[{"operationId","toolName","sessionId","runId","recoveryMode","action",
//                   ["observation","detail","disposition","reasonCode","tempRemoved","error"]}]}
// action ∈ left_indeterminate (no dedicated protocol) | left_indeterminate_run_sealed (the run
//          already has its terminal fact) | deferred (no workspace) | bundle_committed |
//          bundle_exact_retry | bundle_refused | skipped_corrupt_ledger.
Json reconcileIndeterminateOperations(RuntimeStore& store, const ReconcileOptions& options);
Json reconcileIndeterminateOperations(RuntimeStore& store, const WorkspaceIdentity& workspace);

}  // namespace crashsim
