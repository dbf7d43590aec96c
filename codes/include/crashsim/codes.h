// crashsim/codes.h — every stable machine code of the contract, spelled once.
//
// Reason codes, statuses, diagnostics, rejection reasons, validation codes and error codes are
// byte-exact contract (spec/runtime-contract.md). Code elsewhere refers to these constants and
// never repeats the literal. Each constant's name is its value.
#pragma once

#include <string_view>

namespace crashsim::code {

// Resolver decision statuses (spec c.3)
inline constexpr std::string_view completed = "completed";
inline constexpr std::string_view indeterminate = "indeterminate";
inline constexpr std::string_view definitely_not_dispatched = "definitely_not_dispatched";
inline constexpr std::string_view parked = "parked";
inline constexpr std::string_view corruption = "corruption";

// Resolver decision reasons (spec c.3, c.5)
inline constexpr std::string_view matching_response = "matching_response";
inline constexpr std::string_view dispatch_without_response = "dispatch_without_response";
inline constexpr std::string_view new_protocol_before_dispatch = "new_protocol_before_dispatch";
inline constexpr std::string_view legacy_dispatch_unknown = "legacy_dispatch_unknown";
inline constexpr std::string_view recovery_bundle_completed = "recovery_bundle_completed";
inline constexpr std::string_view recovery_fact_corruption = "recovery_fact_corruption";
inline constexpr std::string_view orphan_dispatch = "orphan_dispatch";
inline constexpr std::string_view orphan_response = "orphan_response";
inline constexpr std::string_view duplicate_call = "duplicate_call";
inline constexpr std::string_view duplicate_operation = "duplicate_operation";
inline constexpr std::string_view duplicate_dispatch = "duplicate_dispatch";
inline constexpr std::string_view duplicate_response = "duplicate_response";
inline constexpr std::string_view canonical_args_hash_conflict = "canonical_args_hash_conflict";
inline constexpr std::string_view identity_conflict = "identity_conflict";
inline constexpr std::string_view event_order_conflict = "event_order_conflict";

// A recovery tail that passes c.4 (`crashsim ledger resolve`'s recoveryTails[].result)
inline constexpr std::string_view valid = "valid";

// Parked reasons / reconcile observations (spec a.3, i)
inline constexpr std::string_view reconcile_matches_prior_state = "reconcile_matches_prior_state";
inline constexpr std::string_view reconcile_diverged = "reconcile_diverged";
inline constexpr std::string_view reconcile_unreadable = "reconcile_unreadable";
inline constexpr std::string_view reconcile_matches_expected_state =
    "reconcile_matches_expected_state";
inline constexpr std::string_view matches_expected_state = "matches_expected_state";
inline constexpr std::string_view matches_prior_state = "matches_prior_state";
inline constexpr std::string_view diverged = "diverged";
inline constexpr std::string_view unreadable = "unreadable";

// Settlement origins (spec c.3)
inline constexpr std::string_view normal_t2 = "normal_t2";
inline constexpr std::string_view pre_t1_synthetic = "pre_t1_synthetic";
inline constexpr std::string_view recovery_bundle = "recovery_bundle";

// Scanner issues (spec c.2)
inline constexpr std::string_view duplicate_event_id = "duplicate_event_id";
inline constexpr std::string_view invocation_identity_conflict = "invocation_identity_conflict";
inline constexpr std::string_view semantic_lane_conflict = "semantic_lane_conflict";
inline constexpr std::string_view protocol_marker_invalid = "protocol_marker_invalid";
inline constexpr std::string_view recovery_fact_shape_conflict = "recovery_fact_shape_conflict";

// Protocol identifiers (spec a.3)
inline constexpr std::string_view t1_after_preflight_v1 = "t1_after_preflight_v1";
inline constexpr std::string_view tool_reconcile_v1 = "tool_reconcile_v1";
inline constexpr std::string_view tool_recovery_v1 = "tool_recovery_v1";
inline constexpr std::string_view state_identity_v1 = "state_identity_v1";
inline constexpr std::string_view continuation_start_v2 = "continuation_start_v2";
inline constexpr std::string_view runtime_admission = "runtime_admission";
inline constexpr std::string_view claim_repair = "claim_repair";
inline constexpr std::string_view continuation_source_v2 = "continuation_source_v2";
inline constexpr std::string_view runtime_boundary_cursor_v1 = "runtime_boundary_cursor_v1";

// Phase 0 plan (spec d)
inline constexpr std::string_view safe_replay = "safe_replay";
inline constexpr std::string_view blocked = "blocked";
inline constexpr std::string_view succeeded = "succeeded";
inline constexpr std::string_view failed = "failed";
inline constexpr std::string_view not_dispatched = "not_dispatched";
inline constexpr std::string_view runtime_offset_mismatch = "runtime_offset_mismatch";
inline constexpr std::string_view pending_tool_result = "pending_tool_result";
inline constexpr std::string_view tool_not_dispatched = "tool_not_dispatched";
inline constexpr std::string_view tool_recovery_corruption = "tool_recovery_corruption";
inline constexpr std::string_view tool_recovery_parked = "tool_recovery_parked";
inline constexpr std::string_view tool_ledger_corruption = "tool_ledger_corruption";
inline constexpr std::string_view unmatched_tool_result = "unmatched_tool_result";
inline constexpr std::string_view tool_name_mismatch = "tool_name_mismatch";
inline constexpr std::string_view dangling_tool_state = "dangling_tool_state";

// Phase 1 rejection reasons (spec e.6)
inline constexpr std::string_view pending_permission = "pending_permission";
inline constexpr std::string_view workspace_identity_mismatch = "workspace_identity_mismatch";
inline constexpr std::string_view background_operation_pending = "background_operation_pending";
inline constexpr std::string_view tool_catalog_mismatch = "tool_catalog_mismatch";
inline constexpr std::string_view runtime_ledger_unreadable = "runtime_ledger_unreadable";
inline constexpr std::string_view terminal_repair_failed = "terminal_repair_failed";
inline constexpr std::string_view workspace_cwd_mismatch = "workspace_cwd_mismatch";
inline constexpr std::string_view runtime_ledger_empty = "runtime_ledger_empty";
inline constexpr std::string_view runtime_identity_mismatch = "runtime_identity_mismatch";
inline constexpr std::string_view continuation_identity_reused = "continuation_identity_reused";
inline constexpr std::string_view provider_resume_head_unsupported =
    "provider_resume_head_unsupported";
inline constexpr std::string_view provider_resume_boundary_unsupported =
    "provider_resume_boundary_unsupported";
inline constexpr std::string_view provider_replay_non_suffix_gap = "provider_replay_non_suffix_gap";
inline constexpr std::string_view provider_replay_unsupported = "provider_replay_unsupported";
inline constexpr std::string_view runtime_lineage_cycle = "runtime_lineage_cycle";
inline constexpr std::string_view runtime_lineage_depth_exceeded = "runtime_lineage_depth_exceeded";
inline constexpr std::string_view runtime_lineage_missing = "runtime_lineage_missing";
inline constexpr std::string_view runtime_lineage_start_mismatch = "runtime_lineage_start_mismatch";
inline constexpr std::string_view runtime_lineage_replay_mismatch =
    "runtime_lineage_replay_mismatch";
inline constexpr std::string_view runtime_lineage_claim_mismatch = "runtime_lineage_claim_mismatch";
inline constexpr std::string_view source_prefix_digest_mismatch = "source_prefix_digest_mismatch";
inline constexpr std::string_view workspace_ref_missing = "workspace_ref_missing";
inline constexpr std::string_view checkpoint_restore_failed = "checkpoint_restore_failed";
inline constexpr std::string_view source_run_unreadable = "source_run_unreadable";
inline constexpr std::string_view continuation_already_exists = "continuation_already_exists";
inline constexpr std::string_view continuation_authority_unavailable =
    "continuation_authority_unavailable";
inline constexpr std::string_view continuation_claim_repair_required =
    "continuation_claim_repair_required";
inline constexpr std::string_view continuation_started_indeterminate =
    "continuation_started_indeterminate";
inline constexpr std::string_view workspace_identity_missing = "workspace_identity_missing";
inline constexpr std::string_view safety_observation_unavailable = "safety_observation_unavailable";
inline constexpr std::string_view resume_feature_disabled = "resume_feature_disabled";
inline constexpr std::string_view resume_candidate_missing = "resume_candidate_missing";
inline constexpr std::string_view workspace_location_changed = "workspace_location_changed";
inline constexpr std::string_view tool_recovery_unsettled = "tool_recovery_unsettled";
inline constexpr std::string_view unmatched_tool_call = "unmatched_tool_call";
inline constexpr std::string_view partial_skipped = "partial_skipped";
inline constexpr std::string_view tool_id_mismatch = "tool_id_mismatch";

// Execution revalidation (spec e.9)
inline constexpr std::string_view source_identity_changed = "source_identity_changed";
inline constexpr std::string_view source_replay_changed = "source_replay_changed";
inline constexpr std::string_view source_terminal_changed = "source_terminal_changed";
inline constexpr std::string_view source_high_water_changed = "source_high_water_changed";
inline constexpr std::string_view source_ledger_identity_changed = "source_ledger_identity_changed";
inline constexpr std::string_view workspace_identity_changed = "workspace_identity_changed";
inline constexpr std::string_view background_operation_started = "background_operation_started";
inline constexpr std::string_view tool_catalog_changed = "tool_catalog_changed";
inline constexpr std::string_view workspace_checkpoint_changed = "workspace_checkpoint_changed";
inline constexpr std::string_view continuation_claim_conflict = "continuation_claim_conflict";
inline constexpr std::string_view target_run_conflict = "target_run_conflict";
inline constexpr std::string_view source_cwd_changed = "source_cwd_changed";

// Claim results (spec e.8)
inline constexpr std::string_view acquired = "acquired";
inline constexpr std::string_view existing = "existing";
inline constexpr std::string_view conflict = "conflict";

// Recovery bundle validation (spec f.6), in validation order
inline constexpr std::string_view call_identity_conflict = "call_identity_conflict";
inline constexpr std::string_view dispatch_identity_conflict = "dispatch_identity_conflict";
inline constexpr std::string_view recovery_mode_unsupported = "recovery_mode_unsupported";
inline constexpr std::string_view reconcile_fact_invalid = "reconcile_fact_invalid";
inline constexpr std::string_view decision_fact_invalid = "decision_fact_invalid";
inline constexpr std::string_view recovery_fact_identity_conflict =
    "recovery_fact_identity_conflict";
inline constexpr std::string_view operation_identity_conflict = "operation_identity_conflict";
inline constexpr std::string_view outcome_required = "outcome_required";
inline constexpr std::string_view outcome_identity_conflict = "outcome_identity_conflict";
inline constexpr std::string_view outcome_not_successful = "outcome_not_successful";
inline constexpr std::string_view outcome_reference_conflict = "outcome_reference_conflict";
inline constexpr std::string_view reconcile_decision_conflict = "reconcile_decision_conflict";
inline constexpr std::string_view outcome_for_parked = "outcome_for_parked";
inline constexpr std::string_view evidence_order_conflict = "evidence_order_conflict";

// Writers (spec a.5, f.3)
inline constexpr std::string_view reserved_tool_boundary_fact = "reserved_tool_boundary_fact";
inline constexpr std::string_view reserved_recovery_fact = "reserved_recovery_fact";
inline constexpr std::string_view reserved_continuation_fact = "reserved_continuation_fact";
inline constexpr std::string_view reserved_workspace_fact = "reserved_workspace_fact";
inline constexpr std::string_view transition_shape_conflict = "transition_shape_conflict";
inline constexpr std::string_view run_sealed = "run_sealed";
inline constexpr std::string_view tool_ledger_corruption_error = "tool_ledger_corruption_error";
inline constexpr std::string_view tool_ledger_rejection = "tool_ledger_rejection";
inline constexpr std::string_view runtime_identity_conflict = "runtime_identity_conflict";
inline constexpr std::string_view tool_operation_identity_conflict =
    "tool_operation_identity_conflict";
inline constexpr std::string_view tool_operation_outcome_conflict =
    "tool_operation_outcome_conflict";
inline constexpr std::string_view unknown_tool_operation = "unknown_tool_operation";
inline constexpr std::string_view compare_and_set_failed = "compare_and_set_failed";
inline constexpr std::string_view recovery_bundle_requires_dispatch =
    "recovery_bundle_requires_dispatch";
inline constexpr std::string_view recovery_bundle_already_settled =
    "recovery_bundle_already_settled";
inline constexpr std::string_view t1_invalid = "t1_invalid";
inline constexpr std::string_view t2_invalid = "t2_invalid";
inline constexpr std::string_view continuation_source_sealed = "continuation_source_sealed";
inline constexpr std::string_view continuation_target_reserved = "continuation_target_reserved";

// Store (spec f.1, f.2)
inline constexpr std::string_view schema_newer_than_supported = "schema_newer_than_supported";
inline constexpr std::string_view schema_version_mismatch = "schema_version_mismatch";
inline constexpr std::string_view capability_unavailable = "capability_unavailable";
inline constexpr std::string_view store_open_failed = "store_open_failed";
// crashsim host: another run/recover process already owns this store (host.lock held).
inline constexpr std::string_view host_already_active = "host_already_active";
// crashsim host start-up (crashsim/host.h): an operation with a dedicated reconciler was not
// reconciled because the host was given no workspace; its run is left open (not sealed).
inline constexpr std::string_view reconcile_workspace_required = "reconcile_workspace_required";
// crashsim host start-up: an approved continuation was not run — no scenario (the scripted
// model) was given, or the start-up was a dry run.
inline constexpr std::string_view continuation_scenario_required = "continuation_scenario_required";
inline constexpr std::string_view continuation_dry_run = "continuation_dry_run";
// A failure that is not a crashsim::Error (a bug or a library exception), wrapped at the CLI.
inline constexpr std::string_view internal_error = "internal_error";
inline constexpr std::string_view store_corrupt = "store_corrupt";
// Store manifest (crashsim/store.h): it records that the directory holds a store, and the
// database is missing or has lost its schema (never re-created); or the manifest is unreadable.
inline constexpr std::string_view store_data_lost = "store_data_lost";
inline constexpr std::string_view store_manifest_invalid = "store_manifest_invalid";
// Store self-checks (RuntimeStore::checkIntact), each naming what differs.
inline constexpr std::string_view store_foreign_key_violation = "store_foreign_key_violation";
inline constexpr std::string_view store_event_seq_gap = "store_event_seq_gap";
inline constexpr std::string_view store_event_order_conflict = "store_event_order_conflict";
inline constexpr std::string_view store_run_header_missing = "store_run_header_missing";
inline constexpr std::string_view store_projection_mismatch = "store_projection_mismatch";
// A termination key names a terminal RuntimeEvent the ledger lacks, a terminal header has no
// terminal event, or an open run's turn is already finalized by another run: the terminal writer
// would refuse the store (termination_batch_conflict), so its self-check does first.
inline constexpr std::string_view store_termination_conflict = "store_termination_conflict";
// The -wal holds commits SQLite's recovery would silently drop (a damaged frame before them).
inline constexpr std::string_view store_wal_frames_lost = "store_wal_frames_lost";
// runtime.sqlite is empty (0 bytes) while its -wal still holds committed frames: the data lives
// in the WAL alone. Refused before SQLite opens the file (SQLite would delete that WAL), the
// directory unchanged; `crashsim store salvage-wal` rebuilds the database into a new directory.
inline constexpr std::string_view store_database_empty_wal_holds_data =
    "store_database_empty_wal_holds_data";
// sqlite_master differs from the schema the migrations build (a renamed column, a lost index).
inline constexpr std::string_view store_schema_damaged = "store_schema_damaged";
// Legacy RuntimeEvent JSONL import (crashsim/store.h, kLegacyJsonlName): a line that is not one
// decodable RuntimeEvent (or a file that cannot be read), and a line carrying a fact only the
// dedicated SQLite writers produce (T1/T2/recovery/continuation/workspace facts, the protocol
// marker). Both name the line; nothing is written and the JSONL is left as it is.
inline constexpr std::string_view legacy_jsonl_invalid = "legacy_jsonl_invalid";
inline constexpr std::string_view legacy_jsonl_unsupported_fact = "legacy_jsonl_unsupported_fact";
// An output (an export) that could not be written completely.
inline constexpr std::string_view output_unwritable = "output_unwritable";
inline constexpr std::string_view row_payload_identity_mismatch = "row_payload_identity_mismatch";
inline constexpr std::string_view sqlite_error = "sqlite_error";
inline constexpr std::string_view repair_ambiguous = "repair_ambiguous";

// Workspace identity (spec h)
inline constexpr std::string_view workspace_not_found = "workspace_not_found";
inline constexpr std::string_view invalid_workspace = "invalid_workspace";
inline constexpr std::string_view workspace_unmarked = "workspace_unmarked";
inline constexpr std::string_view invalid_workspace_marker = "invalid_workspace_marker";
inline constexpr std::string_view workspace_io_failed = "workspace_io_failed";

// Repair (spec g)
inline constexpr std::string_view app_restarted = "app_restarted";
inline constexpr std::string_view model_stream_completed_without_runtime_terminal =
    "model_stream_completed_without_runtime_terminal";
inline constexpr std::string_view stale_user_wait = "stale_user_wait";
inline constexpr std::string_view tool_interrupted = "tool_interrupted";
inline constexpr std::string_view run_interrupted = "run_interrupted";
inline constexpr std::string_view non_terminal_run_recovered = "non_terminal_run_recovered";
inline constexpr std::string_view continuation_abandoned_before_provider_dispatch =
    "continuation_abandoned_before_provider_dispatch";

// Codec (spec a, a.6)
inline constexpr std::string_view invalid_json = "invalid_json";
// JSON nested deeper than kMaxJsonDepth (crashsim/json_limits.h): refused by every reader and
// writer; in a stored row it is a damaged store (fail closed).
inline constexpr std::string_view json_too_deep = "json_too_deep";
// An input (a ledger file, a JSON-lines stream, a report) larger than the command reads.
inline constexpr std::string_view input_too_large = "input_too_large";
// An input path that is not a readable regular file (a directory, missing, no permission).
inline constexpr std::string_view input_unreadable = "input_unreadable";
// `report merge`: a report that follows its schema but holds what no sweep writes (a coverage
// row that ran more cases than it planned, a format version this build does not read, ...).
inline constexpr std::string_view report_invalid = "report_invalid";
// `report merge`: valid reports that are not parts of one sweep (different versions or case
// sets, a shard missing or given twice, overlapping cases).
inline constexpr std::string_view report_merge_refused = "report_merge_refused";
inline constexpr std::string_view not_strict_json = "not_strict_json";
inline constexpr std::string_view event_decode_error = "event_decode_error";
inline constexpr std::string_view unknown_key = "unknown_key";
inline constexpr std::string_view wrong_type = "wrong_type";
inline constexpr std::string_view missing_field = "missing_field";
inline constexpr std::string_view empty_id = "empty_id";
inline constexpr std::string_view invalid_enum = "invalid_enum";
inline constexpr std::string_view non_finite_number = "non_finite_number";
inline constexpr std::string_view not_losslessly_serializable = "not_losslessly_serializable";
inline constexpr std::string_view event_seq_gap = "event_seq_gap";
inline constexpr std::string_view partial_in_prefix = "partial_in_prefix";
inline constexpr std::string_view invalid_digest = "invalid_digest";
inline constexpr std::string_view invalid_integer = "invalid_integer";

// Run header statuses (spec f.2 agent_runs.status; completed and failed are above)
inline constexpr std::string_view created = "created";
inline constexpr std::string_view running = "running";
inline constexpr std::string_view cancelled = "cancelled";
// A cancelled terminal fact written by recovery carries RuntimeEvent status aborted (spec g).
inline constexpr std::string_view aborted = "aborted";
// The failure class of a run that ended on an error that is not a crashsim::Error.
inline constexpr std::string_view agent_error = "agent_error";

// Tool operation states (spec f.2 tool_operations.current_state; prepared is also T1's journal
// kind)
inline constexpr std::string_view prepared = "prepared";
inline constexpr std::string_view outcome_committed = "outcome_committed";
inline constexpr std::string_view recovery_completed = "recovery_completed";
inline constexpr std::string_view recovery_parked = "recovery_parked";

// Store run headers (spec g) — store room
inline constexpr std::string_view terminal_event_required = "terminal_event_required";
inline constexpr std::string_view run_terminal_fact_missing = "run_terminal_fact_missing";
inline constexpr std::string_view run_header_conflict = "run_header_conflict";
inline constexpr std::string_view run_not_found = "run_not_found";

// Tool recovery modes (spec a.3 toolDispatch.recoveryMode)
inline constexpr std::string_view replay_safe = "replay_safe";
inline constexpr std::string_view idempotent = "idempotent";
inline constexpr std::string_view reconcile = "reconcile";
inline constexpr std::string_view reattach = "reattach";
inline constexpr std::string_view outcome_unknown = "outcome_unknown";
inline constexpr std::string_view never_auto_retry = "never_auto_retry";

// Agent runtime: scenarios, tool preflight refusals and tool failures (this runtime's own codes)
inline constexpr std::string_view scenario_invalid = "scenario_invalid";
inline constexpr std::string_view invalid_workspace_path = "invalid_workspace_path";
inline constexpr std::string_view tool_unavailable = "tool_unavailable";
inline constexpr std::string_view tool_permission_denied = "tool_permission_denied";
inline constexpr std::string_view tool_args_invalid = "tool_args_invalid";
inline constexpr std::string_view tool_precondition_failed = "tool_precondition_failed";
inline constexpr std::string_view tool_execution_failed = "tool_execution_failed";
inline constexpr std::string_view tool_timeout = "tool_timeout";
inline constexpr std::string_view tool_already_claimed = "tool_already_claimed";
inline constexpr std::string_view agent_usage = "agent_usage";

// Stop (spec/termination-contract.md) — this runtime's codes
// The abort source of a run ended by a Stop request (terminal stateDelta.abortSource).
inline constexpr std::string_view user_stop = "user_stop";
// Closure results of the termination batch (error.code of the synthetic / T2-shaped response):
// a committed call that never reached T1, and a T1-committed call whose implementation never
// started (Reasonix runState not_started).
inline constexpr std::string_view cancelled_before_dispatch = "cancelled_before_dispatch";
inline constexpr std::string_view not_started = "not_started";
// A tool whose implementation was running when the Stop came and that ended because of it
// (Bash: its process group terminated).
inline constexpr std::string_view tool_cancelled = "tool_cancelled";
// The worker did not exit within the cooperative grace: the watchdog sealed the run from
// accepted state; a terminal written so carries it as stateDelta.recoveryReason.
inline constexpr std::string_view cancellation_grace_expired = "cancellation_grace_expired";
// The termination batch could not be committed (disk full, I/O error): nothing more is admitted;
// a retry repeats the same batch.
inline constexpr std::string_view termination_commit_failed = "termination_commit_failed";
// A termination batch whose closures are not unbound/T2 responses of the terminal's own run.
inline constexpr std::string_view termination_batch_invalid = "termination_batch_invalid";
// A different batch under an existing turn-finalize:<turnId> key.
inline constexpr std::string_view termination_batch_conflict = "termination_batch_conflict";
// The in-memory phase of a run whose termination batch was not accepted.
inline constexpr std::string_view recovery_required = "recovery_required";

// Continuation authority (spec e.8, e.9, f.7) — this runtime's error codes
inline constexpr std::string_view continuation_claim_invalid = "continuation_claim_invalid";
inline constexpr std::string_view continuation_boundary_missing = "continuation_boundary_missing";
inline constexpr std::string_view continuation_boundary_changed = "continuation_boundary_changed";
inline constexpr std::string_view continuation_boundary_not_terminal =
    "continuation_boundary_not_terminal";
inline constexpr std::string_view continuation_target_not_empty = "continuation_target_not_empty";
inline constexpr std::string_view continuation_claim_row_mismatch =
    "continuation_claim_row_mismatch";
inline constexpr std::string_view continuation_start_invalid = "continuation_start_invalid";
inline constexpr std::string_view continuation_start_conflict = "continuation_start_conflict";
inline constexpr std::string_view continuation_in_progress = "continuation_in_progress";
inline constexpr std::string_view run_active = "run_active";
inline constexpr std::string_view continuation_repair_failed = "continuation_repair_failed";

// Power-loss simulation (failpoints/include/crashsim/powerloss.h; instrumented child only)
inline constexpr std::string_view powerloss_config_invalid = "powerloss_config_invalid";
inline constexpr std::string_view powerloss_io_failed = "powerloss_io_failed";

// File recovery (spec i): evidence validation failures and unreadable-observation details
// (reported by the reconciler; the durable park reason is reconcile_unreadable)
inline constexpr std::string_view file_evidence_missing = "file_evidence_missing";
inline constexpr std::string_view file_evidence_identity_conflict =
    "file_evidence_identity_conflict";
inline constexpr std::string_view file_evidence_workspace_mismatch =
    "file_evidence_workspace_mismatch";
inline constexpr std::string_view file_evidence_target_invalid = "file_evidence_target_invalid";
inline constexpr std::string_view file_evidence_transform_mismatch =
    "file_evidence_transform_mismatch";
inline constexpr std::string_view file_evidence_args_mismatch = "file_evidence_args_mismatch";
inline constexpr std::string_view file_evidence_expected_absent = "file_evidence_expected_absent";
inline constexpr std::string_view file_evidence_states_equal = "file_evidence_states_equal";
inline constexpr std::string_view file_evidence_result_mismatch = "file_evidence_result_mismatch";
inline constexpr std::string_view observation_target_symlink = "observation_target_symlink";
inline constexpr std::string_view observation_target_not_regular = "observation_target_not_regular";
inline constexpr std::string_view observation_target_too_large = "observation_target_too_large";
inline constexpr std::string_view observation_parent_unsafe = "observation_parent_unsafe";
inline constexpr std::string_view observation_io_failed = "observation_io_failed";

// Workspace continuity (workspace-continuity-contract.md j.1; the RC-marked ones are above:
// workspace_ref_missing, workspace_identity_mismatch, reserved_workspace_fact,
// workspace_checkpoint_changed, checkpoint_restore_failed)
inline constexpr std::string_view no_checkpoint = "no_checkpoint";
inline constexpr std::string_view workspace_drifted = "workspace_drifted";
inline constexpr std::string_view checkpoint_artifact_corrupt = "checkpoint_artifact_corrupt";
inline constexpr std::string_view checkpoint_policy_mismatch = "checkpoint_policy_mismatch";
inline constexpr std::string_view workspace_fact_corruption = "workspace_fact_corruption";
inline constexpr std::string_view unsupported_workspace_carrier = "unsupported_workspace_carrier";
inline constexpr std::string_view git_binary_unavailable = "git_binary_unavailable";
inline constexpr std::string_view git_version_unsupported = "git_version_unsupported";
inline constexpr std::string_view workspace_carrier_damaged = "workspace_carrier_damaged";
inline constexpr std::string_view checkpoint_suffix_not_neutral = "checkpoint_suffix_not_neutral";
inline constexpr std::string_view isolated_restore_available = "isolated_restore_available";
inline constexpr std::string_view rebaseline_available = "rebaseline_available";
inline constexpr std::string_view git_runtime_changed = "git_runtime_changed";
inline constexpr std::string_view checkpoint_capture_failed = "checkpoint_capture_failed";
inline constexpr std::string_view checkpoint_policy_unsupported = "checkpoint_policy_unsupported";
inline constexpr std::string_view checkpoint_policy_limit_exceeded =
    "checkpoint_policy_limit_exceeded";
inline constexpr std::string_view workspace_fact_invalid = "workspace_fact_invalid";
inline constexpr std::string_view workspace_fact_conflict = "workspace_fact_conflict";
inline constexpr std::string_view workspace_epoch_conflict = "workspace_epoch_conflict";
inline constexpr std::string_view workspace_epoch_sealed = "workspace_epoch_sealed";
inline constexpr std::string_view workspace_epoch_gap = "workspace_epoch_gap";
inline constexpr std::string_view workspace_spine_conflict = "workspace_spine_conflict";
inline constexpr std::string_view workspace_boundary_mismatch = "workspace_boundary_mismatch";
inline constexpr std::string_view workspace_transition_busy = "workspace_transition_busy";
inline constexpr std::string_view checkpoint_artifact_changed = "checkpoint_artifact_changed";
inline constexpr std::string_view target_workspace_changed = "target_workspace_changed";
inline constexpr std::string_view rebaseline_confirmation_required =
    "rebaseline_confirmation_required";
inline constexpr std::string_view rebaseline_operation_unsettled = "rebaseline_operation_unsettled";
inline constexpr std::string_view rebaseline_not_applicable = "rebaseline_not_applicable";
inline constexpr std::string_view rebaseline_read_required = "rebaseline_read_required";
inline constexpr std::string_view rebaseline_opaque_write_blocked =
    "rebaseline_opaque_write_blocked";
inline constexpr std::string_view git_child_survived = "git_child_survived";

}  // namespace crashsim::code
