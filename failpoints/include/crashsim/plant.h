// crashsim/plant.h — deliberately planted faults, for proving that the harness catches bugs.
//
// planted("name") is true only in the INSTRUMENTED build (CRASHSIM_ENABLE_FAILPOINTS) and only
// when the environment variable CRASHSIM_PLANT lists that name (comma-separated). The
// production library compiles every call to `false`, so no plant can ever be active there.
// Known plants and the verdict that must catch each (harness/tests/planted_fault_test.cpp):
//   resolver_completed_dispatch  resolver calls dispatch_without_response `completed`  → V4
//   t2_skip_operation_update     T2 commits the response but not the operation update  → V6
//   repair_header_first          startup repair writes the header before the fact      → V7
//   tool_reruns                  a tool runs again after recovery                       → V8
//   tool_skips_dir_fsync         Write/Edit never fsyncs the directory after the rename → V8
//                                under --mode powerloss only (a process kill keeps the rename)
//   t2_split_commit              T2 in two transactions (response, then journal + CAS)  → V6
//                                at a store COMMIT barrier (S#k) only: no named failpoint
//                                falls between the two commits
//   target_run_before_claim_window  the continuation's target run exists at P11         → V3
//                                (the double-fault state check) only
//   store_acknowledges_unsynced  the store runs synchronous OFF under a FULL label      → D1
//                                under --mode powerloss only
//   replay_keeps_unanswered_call the continuation hands the model a trimmed call        → V8
//   leftover_reruns_tool         state leaks between runs of a case (a temp marker)     → V9
//   wal_batch_flush_after_sync   the WAL batching VFS hands a commit's frames to the file
//                                after its sync → store_wal_batch_crash_test (power loss)
//   stop_ignores_token           the implementation starts after a Stop (no check before it)
//                                → V3 under --mode stop (P2 cases)
//   double_stop_second_terminal  a second Stop request writes a second terminal (and the seal
//                                is off for it) → V3 under --mode stop
//   stop_header_before_fact      a Stop's terminal header is written before its batch → V3 of
//                                the +K:P13 double faults (--mode stop --double-faults)
//   late_result_after_seal       T2 ignores the run seal, so a tool result that comes back after
//                                the watchdog sealed the run lands → stop_process_test
//   host_ignores_integrity_check host start-up skips the store self-checks (checkIntact) → C1
//                                under --mode corrupt only
//   claim_repair_requires_absent_target  the claim saga refuses a target header without a start
//                                → V8 of the +R:P14 double faults
//   claim_saga_abandons_live_start  the claim saga abandons a runtime_admission start like its
//                                own → V8 of the +R:P15 double faults
//   admission_start_skips_claim_update  the live start is appended, the claim never records it
//                                → V3 + V8 of the +R:P15 double faults
//   planner_ignores_drift        the planner passes a drifted workspace (workspace e.3 row 8)
//                                → workspace_drift_process_test (the plan); e.4 revalidation
//                                still refuses it (target_workspace_changed)
//   rebaseline_skips_notice      a rebased epoch's continuation commits no replay notice
//                                (workspace g.3) → workspace_rebaseline_process_test (H4)
//   rebaseline_repeats_notice    every continuation of a rebased epoch commits the notice
//                                again → workspace_rebaseline_process_test (H4, after P29)
//   rebaseline_gate_open         the read-before-write gate lets every call through (g.4)
//                                → workspace_rebaseline_process_test (H8)
//   legacy_manifest_first        the legacy JSONL import writes the manifest before its
//                                batches, so a crash inside it ends the import for good
//                                → store_crash_test (P16/P17), V3 of the sweep's P16 cases
//   legacy_import_skips_started_runs  a re-run import skips every run that already has a
//                                header, so a run a crash cut stays half imported → V3 + V8 of
//                                the sweep's P16/P17 cases
//   store_ignores_shm_index      start-up ignores the -shm's mxFrame, so a WAL cut at a commit
//                                boundary opens without the cut commits → C1 (wal_cut_at_commit)
//   store_opens_empty_database   start-up lets SQLite open a 0-byte database beside its WAL
//                                (which deletes the WAL) → C1 (db_empty_beside_wal)
//   host_adopts_unmarked_workspace  start-up marks an unmarked directory it is given as the
//                                store's workspace → C1 (workspace_wrong)
//   reconcile_follows_parent_symlink  the file reconciler follows a symlinked parent directory
//                                of the target → V3 + V8 of parent-symlink-swap's afterCrash cases
//   continuation_runs_tool_before_t1  a continuation run's own call runs its implementation
//                                before its T1 commits → V3/V8 of the continuation kills
//                                (+R:P0..P7 double faults) only
//   admission_start_split_commit  the continuation-start and the claim's record of it commit in
//                                two transactions → V3 (+ V8) of the recovery process's own
//                                S barrier kills (+R:S#k double faults) only: no named failpoint
//                                falls between the two commits
//   t1_exists_runs_tool          the implementation runs although T1 returned created:false
//                                (spec f.4) → V8 of the T1-exists probe (kill-mode P2#1 cases)
//   reconcile_directory_is_absent  the reconciler observes a directory in the target's place
//                                as "no file" → V8 of target-becomes-directory's afterCrash cases
//   reconcile_missing_parent_unreadable  a missing directory on the target's path is called
//                                unreadable, not absent → V8 of parent-deleted's afterCrash cases
//   reconcile_file_parent_is_absent  a regular file where a directory of the path should be
//                                is read as "no file there" → V8 of parent-becomes-file's cases
//   reconcile_follows_inner_parent_symlink  the walk opens only the first directory below the
//                                root without following a symlink → V3 + V8 of the generated
//                                `~path:src/app:symlink` cases only (no scenario names that swap)
//   workspace_root_as_given      the workspace root is the path as given, not its realpath (a
//                                root moved behind a symlink keeps its old location) → V3 + V8
//                                of the generated `~path:.:symlink` cases only
//   host_creates_missing_workspace  start-up re-creates a missing workspace directory before it
//                                proves it → V8 of the generated `~path:.:remove` cases only
//   replace_unlinks_target_first  Write/Edit unlinks the target before renaming the synced temp
//                                file onto it (a "portable" replace): a power cut before the
//                                directory fsync may keep the unlink and lose the rename → D3
//                                under --mode powerloss at the F barriers only (the file-step
//                                trace check does not order unlinks; a kill keeps both or
//                                neither, no barrier falls between them)
//   host_lock_after_claim        host start-up takes the host lock only for the continuation run
//                                it starts: repair, reconcile, planning and the claim run beside
//                                any other host → H1 of the race cases (+H2) only
//   claim_insert_trusts_plan     the claim writer trusts the planner's claim lookup and upserts
//                                its row (a read and a write in two transactions) → unseen while
//                                the host lock serialises hosts; with host_lock_after_claim H1
//                                sees two racers acquire one boundary's claim
//   restore_over_user_directory  an isolated restore also checks the checkpoint out over the
//                                user's directory (workspace f.2 forbids any write there)
//                                → workspace_restore_process_test (the user's bytes, H1)
//   git_child_outlives_agent     a hermetic git child is started without PR_SET_PDEATHSIG: in its
//                                own process group it survives the killed agent (c.2 hygiene)
//                                → WH5 at the git barrier G
//   restore_fact_before_ref      the restore's transition commits before its restored ref
//                                exists (a.3.1) → workspace_restore_process_test (table R's
//                                P24 row: no fact yet)
//   gc_deletes_referenced_ref    the carrier GC ignores the facts (h.1) and deletes every ref
//                                older than the grace, an accepted checkpoint's included
//                                → workspace_gc_crash_test (the artifact check:
//                                workspace_ref_missing)
// The rest (exit_marker_first, planner_touches_header, read_not_recorded, ...) are listed with
// the verdict that catches each in harness/tests/harness_planted_fault_test.cpp and the README.
#pragma once

#if defined(CRASHSIM_FAILPOINTS_FORBIDDEN)
#error "crashsim/plant.h in a source shared by the production and the instrumented build"
#endif

#include <string_view>

#if defined(CRASHSIM_ENABLE_FAILPOINTS)
#include <cstdlib>
#endif

namespace crashsim {

inline bool planted([[maybe_unused]] std::string_view name) {
#if defined(CRASHSIM_ENABLE_FAILPOINTS)
  const char* env = std::getenv("CRASHSIM_PLANT");
  if (!env || !*env) return false;
  std::string_view list(env);
  while (!list.empty()) {
    auto comma = list.find(',');
    if (list.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
#else
  return false;
#endif
}

}  // namespace crashsim
