// crashsim/store.h — the SQLite RuntimeEvent store (spec f, g).
//
// `runtime.sqlite` in a store directory: WAL, synchronous=FULL (configurable for the
// power-loss study), foreign_keys=ON, busy_timeout=5000, BEGIN IMMEDIATE for every write,
// rollback on any error. runtime_events is the only canonical fact table; tool_operations
// and tool_journal_events are projections updated in the same transaction as their events
// and rebuildable from runtime_events alone.
//
// Writers are dedicated (spec j.3) and each rejects the others' lanes:
//   append()                    generic: ordinary events, function calls, unbound responses
//   commitToolPrepared()        T1: call + dispatch + prepared journal + operation row
//   commitToolOutcome()         T2: response + outcome journal + CAS prepared→outcome_committed
//   commitToolRecoveryBundle()  reconcile [+ outcome] + decision, atomically
// Run seal (f.3, j.6): after a run's terminal RuntimeEvent every new event of that run is
// rejected (code::run_sealed) by every writer, recovery bundles included — so host start-up
// (crashsim/host.h) reconciles before startup repair writes the terminal fact. A continuation
// claim seals its source segments against every writer (code::continuation_source_sealed) and
// reserves target event #1 for the continuation start (code::continuation_target_reserved).
// Every failure throws crashsim::Error with a stable code from crashsim/codes.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "crashsim/error.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"

struct sqlite3;

namespace crashsim {

inline constexpr int kSchemaVersion = 5;  // our own numbering (spec f.2 tables we need)

struct StoreOptions {
  // Never writes a byte of the store directory and never migrates or repairs: with a WAL and
  // its -shm the database is opened mode=ro with a read-only -shm (SQLite then reads the WAL
  // into private memory when no writer is live); without a WAL, immutable=1 (the database
  // file holds every commit); with a WAL but no -shm (nothing else can have it open), or a
  // -shm whose index disagrees with the WAL (damaged or cut WAL: SQLite would have to rebuild
  // the index, which a read-only -shm cannot, and would retry for seconds), the database and
  // WAL are copied into a private scratch directory, opened there (SQLite recovers the WAL as a
  // writer's open would) and deleted on close. Closing never checkpoints
  // (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE).
  bool readOnly = false;
  std::string synchronous = "FULL";  // FULL (default) | NORMAL (power-loss study only)
  std::string vfs;                   // SQLite VFS name; empty = default (power-loss VFS in tests)
  // A writer with synchronous FULL/EXTRA hands each commit's WAL frames to the VFS as one write
  // and grows the WAL in zero-filled steps (store/wal_batch_vfs.h): T1+T2 cost 1.48x two bare
  // FULL commits with it, 2.04x without (README, Performance). Off: SQLite's own VFS, exactly.
  // The committed rows are the same either way, after a kill or a power cut at any COMMIT
  // (store_wal_batch_crash_test).
  bool walBatching = true;
  // Legacy import (kLegacyJsonlName): events per import transaction.
  size_t legacyImportBatchEvents = 256;
  // The connection's decode cache (each stored row is decoded once and checked against its
  // columns; a later read of the same bytes reuses the decode): at most this many events, dropped
  // as a whole when full. 0 = no bound: each event is decoded once and the decodes are held until
  // the store closes (about 15 KB per event; host start-up and inspect keep the default, because
  // at 10^6 events an unbounded cache reached 15 GB: docs/host-startup.md). With a bound below
  // the ledger's size every pass over the whole ledger decodes every event again.
  size_t decodeCacheEvents = 200000;
};

// The store manifest: <storeDir>/runtime.manifest, {"format":"crashsim-runtime-store",
// "schemaVersion":n}. A writable open writes it (temp file, fsync, rename, directory fsync,
// through crashsim/durable_fs.h so the power-loss model sees it) once the schema is committed
// and durable, and rewrites it after a migration. From then on the directory is known to hold a
// store: an open (writable or not) whose database is missing, or whose schema version is below
// the manifest's (an empty or truncated file, a deleted WAL that held the schema), fails closed
// with code::store_data_lost and writes nothing — it never re-creates an empty store. A store
// without a manifest (older stores) is opened as before and gets one at its first writable
// open. Deleting the manifest together with the data is not detectable here.
inline constexpr const char* kStoreManifestName = "runtime.manifest";
// The manifest's schemaVersion; nullopt when there is none; code::store_manifest_invalid when it
// is not a regular file of at most 4 KiB holding exactly the object above.
std::optional<int64_t> readStoreManifest(const std::filesystem::path& storeDir);
void writeStoreManifest(const std::filesystem::path& storeDir, int64_t schemaVersion);
// Throws unless <storeDir>/runtime.sqlite exists as a regular file or a legacy import is pending
// (legacyImportPending): code::store_data_lost when the manifest records a store,
// code::store_open_failed when there is no store at all.
void requireRuntimeStore(const std::filesystem::path& storeDir);

// An empty database file beside a -wal that still holds committed frames (a crash on a file
// system with delayed allocation, a botched copy) is refused by every open before SQLite sees
// the directory — SQLite would delete that WAL — with code::store_database_empty_wal_holds_data,
// and nothing changes. (An empty database beside a WAL without a valid commit is
// code::store_data_lost when the manifest records a store.)
//
// salvageWalIntoNewStore rebuilds such a store into <newDir>, which must not exist (else
// code::store_open_failed): the database the WAL's valid commits describe on their own (each
// page from the latest valid frame that wrote it, up to the last valid commit), then the
// manifest; the result must pass a read-only open and checkIntact, or newDir is removed and the
// check's code thrown. code::store_data_lost when the WAL holds no commit or lacks a page (it
// lived only in the lost database file). storeDir is only read; host.lock, effects and the
// lifecycle log are not copied.
void salvageWalIntoNewStore(const std::filesystem::path& storeDir,
                            const std::filesystem::path& newDir);

// Legacy RuntimeEvent JSONL (seed Phase 2): <storeDir>/runtime-events.jsonl, one RuntimeEvent
// (the contract's shape, a) per line, as a host without SQLite wrote it. It is read only while
// the directory has no manifest (legacyImportPending):
//   * the first writable open imports it — the whole file is decoded first (a line that is not
//     one RuntimeEvent → code::legacy_jsonl_invalid naming the line, nothing written; a line
//     with a fact only the dedicated writers make: T1 dispatch, bound response, recovery,
//     continuation-start or workspace fact, the protocol marker →
//     code::legacy_jsonl_unsupported_fact), partial events are skipped (UI state, j.5), then
//     the events go through the generic writer's checks in StoreOptions::legacyImportBatchEvents
//     per transaction ([P16] inside a batch, [P17] after each commit), each run getting its
//     header (running; terminal from a valid terminal fact) with its first event, and
//     committed_at = the event's ts. The manifest is written after the last batch, so a crash
//     anywhere before it re-imports at the next open, every stored event an exact retry (no-op);
//     a writer's error names the line too (run_sealed, runtime_identity_conflict, ...);
//   * a read-only open reads a private copy: the database as it is (if any) with the import
//     completed there, so inspecting a legacy-only or half-imported directory writes nothing;
//   * once the manifest exists, the JSONL is never read again (SQLite is the only authority).
// The JSONL is never deleted or rewritten.
inline constexpr const char* kLegacyJsonlName = "runtime-events.jsonl";
// True when <storeDir> holds a legacy JSONL and no manifest (its import has not completed).
bool legacyImportPending(const std::filesystem::path& storeDir);

// AgentRun header (projection of a run; status written only after its terminal fact).
struct RunHeader {
  std::string sessionId, runId, invocationId, turnId;
  std::string status;  // created | running | completed | failed | cancelled
  double createdAt = 0, updatedAt = 0;
  std::optional<double> completedAt;
  std::optional<std::string> failureClass, failureMessage, abortSource;
  std::optional<std::string> workspaceIdentity;  // "workspace:v1:<uuid>"
  std::optional<std::string> cwd;
  std::optional<std::string> parentRunId, parentTurnId;
  std::optional<Json> continuationSource;  // continuation_source_v2 object
  // Workspace continuity e.4 (immutable): {protocol:'crashsim_workspace_binding_v1',
  // workspaceId, epoch, checkpointId} of a continuation planned under a workspace lineage.
  std::optional<Json> workspaceBoundary;
  Json toJson() const;
  static RunHeader fromJson(const Json&);
  bool operator==(const RunHeader&) const = default;
};

struct StoredEvent {
  RuntimeEvent event;
  int64_t eventSeq = 0;  // per invocation, 1, 2, …
  std::string eventKind;
  double committedAt = 0;
};

struct ToolOperationRow {
  std::string operationId, invocationId, runId, turnId, providerToolCallId, toolName;
  std::string canonicalArgsHash, recoveryMode, currentState;
  std::string callEventId;
  std::optional<std::string> dispatchEventId, resultEventId;
  int64_t version = 0;
  bool operator==(const ToolOperationRow&) const = default;
};

struct JournalRow {
  std::string journalEventId, operationId, invocationId, runId, turnId, state, runtimeEventId;
  std::string canonicalArgsHash, recoveryMode;
  std::optional<std::string> metadataJson;
  double committedAt = 0;
  bool operator==(const JournalRow&) const = default;
};

struct ToolPrepared {  // T1 input (f.4)
  std::string operationId, journalEventId;
  RuntimeEvent call, dispatch;
  std::string providerToolCallId, toolName, canonicalArgsHash, recoveryMode;
  double committedAt = 0;
};
struct ToolOutcome {  // T2 input (f.5)
  std::string operationId, journalEventId;
  RuntimeEvent response;
  double committedAt = 0;
};
struct RecoveryBundle {  // f.6 input
  std::string operationId;
  RuntimeEvent reconcile;
  std::optional<RuntimeEvent> outcome;  // completed bundles only
  RuntimeEvent decision;
};
// A turn's termination batch (termination contract sections 3-6): its closures and its terminal
// RuntimeEvent, accepted in ONE transaction under the idempotency key turn-finalize:<turnId>.
// Event order: the synthetic pre-T1 responses, the T2-shaped outcomes, the terminal last.
struct TurnFinalizeBatch {
  std::vector<RuntimeEvent> syntheticResponses;  // unbound function_responses (no T1)
  std::vector<ToolOutcome> outcomes;             // bound responses through the T2 path
  RuntimeEvent terminal;
  bool stop = false;  // accepted for a Stop: failpoint P12 before COMMIT (otherwise P8)
};
struct WriteResult {
  bool created = false;         // false = exact retry (nothing written)
  int64_t runtimeEventSeq = 0;  // event_seq of the write's anchor event
};

// Tool-ledger errors (f.3, j.10). code() is code::tool_ledger_corruption_error (an EXISTING
// event anywhere in the database has a scanner issue: the store fails stop for every
// tool-bearing write; ordinary events are still accepted) or code::tool_ledger_rejection (the
// candidate write itself would introduce the issue: the store stays healthy). ledgerCode() is
// the scanner code (duplicate_call, duplicate_event_id, transition_shape_conflict, ...) and
// eventId() the offending event; both also appear in what() as "<ledgerCode> at <eventId>".
class LedgerError : public Error {
 public:
  LedgerError(std::string_view code, std::string ledgerCode, std::string eventId,
              const std::string& prefix)
      : Error(code, prefix + ": " + ledgerCode + " at " + eventId),
        ledgerCode_(std::move(ledgerCode)),
        eventId_(std::move(eventId)) {}
  const std::string& ledgerCode() const noexcept { return ledgerCode_; }
  const std::string& eventId() const noexcept { return eventId_; }

 private:
  std::string ledgerCode_, eventId_;
};

// Threads: a RuntimeStore (its connection, statement and ledger caches) is used by one thread
// at a time; it may move between threads but is not internally synchronised. Processes and
// other RuntimeStore objects coordinate through SQLite's file locks (BEGIN IMMEDIATE).
class RuntimeStore {
 public:
  // Opens (creating and migrating when writable) <storeDir>/runtime.sqlite. A schema newer
  // than kSchemaVersion fails closed (code::schema_newer_than_supported) without writing. A
  // pending legacy JSONL (kLegacyJsonlName) is imported by a writable open and read through a
  // private copy by a read-only one.
  static std::unique_ptr<RuntimeStore> open(const std::filesystem::path& storeDir,
                                            StoreOptions options = {});
  ~RuntimeStore();
  RuntimeStore(const RuntimeStore&) = delete;
  RuntimeStore& operator=(const RuntimeStore&) = delete;

  // --- run headers ---
  // Inserts a run header. Exact retry is a no-op; a different header for the same
  // (sessionId, runId) → code::run_header_conflict.
  void createRun(const RunHeader& header);
  std::optional<RunHeader> readRun(const std::string& sessionId, const std::string& runId) const;
  std::vector<RunHeader> listRuns(const std::optional<std::string>& sessionId = {}) const;
  // Terminal header update. Refuses with code::run_terminal_fact_missing unless the run has
  // exactly one durable terminal RuntimeEvent whose status maps to header.status
  // (completed→completed, failed→failed, aborted|cancelled→cancelled): the terminal fact
  // always commits before the header (g). Exact retry is a no-op; a different terminal header
  // → code::run_header_conflict; unknown run → code::run_not_found.
  void markRunTerminal(const RunHeader& header);
  // Non-terminal header changes (created→running, updatedAt). A terminal status here →
  // code::run_terminal_fact_missing (use markRunTerminal); a terminal stored header is never
  // rewritten (code::run_sealed).
  void updateRunHeader(const RunHeader& header);

  // --- dedicated writers ---
  // Generic writer (a.5): ordinary events, function calls and unbound function responses.
  // Rejects tool_dispatch / bound responses (reserved_tool_boundary_fact), toolRecovery
  // (reserved_recovery_fact), continuationStart (reserved_continuation_fact), workspaceFact
  // (reserved_workspace_fact). Exact retry of a stored event = {created:false}. Partial events
  // go only to runtime_partial_snapshots (runtimeEventSeq 0). A terminal event appended here
  // seals its run (f.3 run seal).
  WriteResult append(const RuntimeEvent& event);
  // commitTurnFinalize() of the terminal RuntimeEvent alone (must be terminal, else
  // code::terminal_event_required). Failpoint P8 sits inside its transaction, before COMMIT.
  WriteResult commitTerminalEvent(const RuntimeEvent& event);
  // The terminal writer (termination contract section 6): every terminal RuntimeEvent of the
  // runtime — the run's own end, Stop, the watchdog, restart recovery, claim repair — commits
  // here, with its closures, in one transaction keyed turnFinalizeKey(terminal.turnId), together
  // with the key row (runtime_turn_finalize). The closures pass the generic writer's and T2's
  // checks (each outcome's compare-and-set prepared → outcome_committed); every event must
  // belong to the terminal's run. Same key: the same batch (digest over its canonical events)
  // → {created:false}, nothing written; another batch → code::termination_batch_conflict. A run
  // that already has another terminal → code::run_sealed. [P12] (stop) / [P8] before COMMIT.
  WriteResult commitTurnFinalize(const TurnFinalizeBatch& batch);
  // "turn-finalize:" + turnId.
  static std::string turnFinalizeKey(const std::string& turnId);
  // Every writer below also runs the candidate checks all writers share, inside its
  // transaction: run_sealed (the run has a terminal fact), continuation_source_sealed,
  // continuation_target_reserved, runtime_identity_conflict, protocol_marker_invalid,
  // not_losslessly_serializable, and store_corrupt / row_payload_identity_mismatch for damaged
  // rows; an exact retry of every event returns {created:false}.
  //
  // T1 (f.4): the function_call and its tool-dispatch fact + the `prepared` journal row + the
  // tool_operations row (state prepared, version 1), one transaction. Nothing may execute
  // unless this returns created:true. Input checks → t1_invalid (journal id not
  // <op>_prepared, a recovery fact on either event, call/dispatch that do not match the input
  // or each other). An existing operation: exact retry → {created:false}; any difference, or
  // a stored dispatch without its operation → tool_operation_identity_conflict.
  WriteResult commitToolPrepared(const ToolPrepared& input);
  // T2 (f.5): the bound function_response + the `outcome_committed` journal row + the
  // compare-and-set prepared → outcome_committed, one transaction ([P5] before COMMIT). Input
  // checks → t2_invalid; no operation → unknown_tool_operation; response identity ≠ the
  // operation's → tool_operation_identity_conflict; an operation that already has another
  // outcome → tool_operation_outcome_conflict; a lost compare-and-set →
  // compare_and_set_failed.
  WriteResult commitToolOutcome(const ToolOutcome& input);
  // Recovery bundle (f.6): reconcile fact [+ outcome through the T2 path] + decision fact,
  // their journal rows and the compare-and-sets to recovery_completed | recovery_parked, one
  // transaction ([P10] before COMMIT). Errors: unknown_tool_operation,
  // recovery_bundle_requires_dispatch, the bundle validator's code (spec f.6), an outcome
  // carrying a recovery fact → outcome_identity_conflict, event_order_conflict (stored call
  // after its dispatch), recovery_bundle_already_settled (settled by anything but this exact
  // bundle), compare_and_set_failed, store_corrupt (the operation names a missing event).
  WriteResult commitToolRecoveryBundle(const RecoveryBundle& input);

  // --- reads ---
  std::vector<StoredEvent> readRunEvents(const std::string& sessionId,
                                         const std::string& runId) const;  // by event_seq
  std::vector<StoredEvent> readAllEvents() const;  // (invocation_id, event_seq, event_id)
  std::vector<ToolOperationRow> listToolOperations() const;
  std::vector<JournalRow> listJournal() const;  // by journal_seq
  std::vector<ToolOperationRow> listUnsettledToolOperations(
      const std::optional<std::string>& sessionId = {}) const;
  struct RebuildResult {
    size_t operations = 0, journalEvents = 0;
  };
  RebuildResult rebuildProjections();  // one write transaction (f.8)
  std::string ledgerHash() const;      // sha256 over every runtime_events row, for "unchanged"
  std::string integrityCheck() const;  // PRAGMA integrity_check result ("ok")
  std::string quickCheck() const;      // PRAGMA quick_check result ("ok")
  // The self-checks every reader and writer of a store runs first (host start-up, resume,
  // inspect), in one read transaction; reads only. Each failure throws its own code naming
  // the first problem:
  //   store_corrupt                integrityCheck() is not "ok" (damaged pages, or an index
  //                                that disagrees with its table);
  //   store_foreign_key_violation  a projection or claim row references a missing event;
  //   store_event_seq_gap          an invocation's event_seq values are not 1..n (a deleted
  //                                RuntimeEvent);
  //   store_event_order_conflict   an invocation's events were stored out of event_seq order
  //                                (rowids ascend with event_seq: swapped or renumbered rows);
  //   store_run_header_missing     RuntimeEvents of a run without its agent_runs header (with
  //                                the same invocation);
  //   store_projection_mismatch    tool_operations / tool_journal_events differ from the rows
  //                                the ledger implies (the rebuild of f.8, computed, not written);
  //   store_termination_conflict   a termination key (runtime_turn_finalize) names a terminal
  //                                event the ledger lacks, a terminal header has no terminal
  //                                event, or an open run's turn was finalized by another run
  //                                (what the terminal writer refuses: termination_batch_conflict).
  // A header without events is legal (a continuation target before its start, spec e.8); a
  // ledger the scanner rejects is left to the resolver, which reports it per run.
  void checkIntact() const;
  // Copies the store's committed state with SQLite's online backup API into a NEW database
  // <dir>/runtime.sqlite (a consistent snapshot, even beside a live writer). Reads only.
  void backupTo(const std::filesystem::path& dir) const;
  // The writer connection's durability settings as SQLite reports them, for reports:
  // journalMode ("wal") and synchronous ("OFF" | "NORMAL" | "FULL" | "EXTRA").
  struct ConnectionSettings {
    std::string journalMode, synchronous;
  };
  ConnectionSettings connectionSettings() const;
  std::filesystem::path path() const;

  // Internal access for runtime components in src/ (continuation authority, repair).
  sqlite3* handle() const;

 private:
  RuntimeStore();
  // open() without the legacy view: imports *legacyJsonl when given (writable opens only).
  static std::unique_ptr<RuntimeStore> openImpl(const std::filesystem::path& storeDir,
                                                StoreOptions options,
                                                const std::filesystem::path* legacyJsonl);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend struct StoreAccess;
};

// Writes every RuntimeEvent of the store as legacy JSONL (kLegacyJsonlName's format): one
// canonical event per line, ordered by (invocation, event_seq), each row decoded and checked.
// A ledger of legacy facts imports back to the same ledgerHash(); one holding the dedicated
// writers' facts is refused by the import (legacy_jsonl_unsupported_fact): claims, projections
// and the termination keys are not RuntimeEvents. code::output_unwritable when `out` fails.
void exportLegacyJsonl(const RuntimeStore& store, std::ostream& out);

}  // namespace crashsim
