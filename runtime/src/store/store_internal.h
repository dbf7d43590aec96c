// store_internal.h — what runtime components in src/ (continuation authority, startup repair)
// need to write into the RuntimeStore in the same style as its dedicated writers.
//
// Contract for users of this header:
//   * every write happens inside an ImmediateTx (BEGIN IMMEDIATE … COMMIT; the destructor
//     rolls back when commit() was not reached, so any thrown error rolls the whole write back);
//   * events enter runtime_events ONLY through insertEvent(), which runs the f.3 write-side
//     invariants (lossless canonicalisation, exact retry, identity consistency, continuation
//     seal/target reservation, run seal, tool-ledger transition check) and assigns event_seq;
//   * rows read back are decoded and cross-checked (row/payload identity) — never trusted.
// The sqlite3 handle is the store's single connection; never share it across fork().
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "crashsim/error.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"

namespace crashsim::store_detail {

// Throws Error(code::sqlite_error / store_corrupt) describing rc on db.
[[noreturn]] void throwSqlite(sqlite3* db, int rc, std::string_view what);

// A prepared statement (cached by the Connection; reset on destruction of the Use handle).
class Stmt {
 public:
  Stmt(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_), owned_(o.owned_) { o.stmt_ = nullptr; }

  Stmt& bind(int idx, std::string_view v);
  // Binds without copying: v must stay valid and unchanged until this Stmt handle is destroyed
  // (its destructor resets the statement and clears the bindings).
  Stmt& bindRef(int idx, std::string_view v);
  Stmt& bind(int idx, const std::string& v) { return bind(idx, std::string_view(v)); }
  Stmt& bind(int idx, const char* v) { return bind(idx, std::string_view(v)); }
  Stmt& bind(int idx, int64_t v);
  Stmt& bind(int idx, double v);
  Stmt& bindNull(int idx);
  Stmt& bind(int idx, const std::optional<std::string>& v) {
    return v ? bind(idx, std::string_view(*v)) : bindNull(idx);
  }
  // Steps once; true when a row is available.
  bool step();
  // Steps to completion (for statements without rows).
  void exec();
  std::string text(int col) const;
  // The column's text without a copy; valid until the next step/reset of this statement (or
  // another column accessor that converts the same column).
  std::string_view textView(int col) const;
  std::optional<std::string> optText(int col) const;
  int64_t int64(int col) const;
  double real(int col) const;
  bool isNull(int col) const;

 private:
  friend class Connection;
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool owned_ = false;  // finalize instead of reset
};

// The store's single connection with a statement cache.
class Connection {
 public:
  explicit Connection(sqlite3* db) : db_(db) {}
  ~Connection();
  sqlite3* db() const { return db_; }
  // Cached prepared statement, reset and with bindings cleared.
  Stmt prepare(std::string_view sql);
  // One-shot execution of SQL text (no rows expected).
  void execScript(std::string_view sql);

  // Workspace-wide ledger health cache (f.3 (1)): valid while PRAGMA data_version (other
  // connections' commits) and sqlite3_total_changes64 (this connection's changes outside the
  // checked writers, e.g. raw SQL) are unchanged since the last full scan.
  struct HealthCache {
    bool valid = false;
    int64_t dataVersion = 0;
    int64_t totalChanges = 0;
  } health;
  // Decode cache: event_id -> (payload bytes, decoded event). Reused only when the stored
  // payload bytes are identical, so a cached decode is always the decode of those bytes.
  std::unordered_map<std::string, std::pair<std::string, RuntimeEvent>> decoded;
  size_t maxDecoded = 200000;  // StoreOptions::decodeCacheEvents (0: no bound)
  // Passes holding pointers into `decoded` (DecodePin): while one does, the cache is never
  // dropped (it may outgrow its bound until the last pin ends, then is dropped if over it).
  int decodePins = 0;
  // Decodes of a cached id whose payload bytes changed, made while pinned (the pinned entry is
  // not replaced); dropped when the last pin ends.
  std::deque<RuntimeEvent> pinnedRedecodes;
  // The stored events of the invocation the checked writers touched last, in event_seq order
  // (the scan input of checkCandidates). Valid under the same key as `health`: no other
  // connection committed (data_version) and every change of this connection since the fill
  // went through the checked writers, whose committed inserts are appended at commit.
  struct InvocationCache {
    bool valid = false;
    std::string invocationId;
    std::vector<RuntimeEvent> events;
    int64_t dataVersion = 0;
    int64_t totalChanges = 0;
    size_t pendingFrom = 0;  // pendingInserts before this index are already in `events`
    int64_t nextSeq = 1;     // MAX(event_seq) + 1 of `events`
    // Positions in `events` by the keys the ledger scanner links events with (call id,
    // operation id), indexed lazily up to `indexed` (linkedStoredEvents in events.cpp).
    std::unordered_map<std::string, std::vector<uint32_t>> byCallId, byOperationId;
    size_t indexed = 0;
  } invocation;
  // Events inserted by the open transaction with their event_seq, appended to `invocation` if
  // it commits.
  std::vector<std::pair<int64_t, RuntimeEvent>> pendingInserts;
  // sqlite3_total_changes64 when the open ImmediateTx began.
  int64_t txBeginChanges = 0;
  // The next event_seq of one invocation in the open transaction: the one it inserted into
  // last (the write lock is held, so MAX(event_seq) + 1 stays what this transaction made it),
  // or, before any insert, the invocation whose cache checkCandidates found current.
  struct NextSeq {
    std::string invocationId;
    int64_t seq = 0;
  };
  std::optional<NextSeq> txNextSeq;

 private:
  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*, SqlHash, std::equal_to<>> cache_;
};

// Pins the connection's decode cache for one pass that reads events in place (pointers into
// it, detail::EventRefs): no entry is dropped or replaced by a read of another event while
// the pin lives. When the last pin ends a cache over its bound is dropped, as a read would.
class DecodePin {
 public:
  explicit DecodePin(Connection& c) : c_(c) { ++c_.decodePins; }
  ~DecodePin() {
    if (--c_.decodePins != 0) return;
    c_.pinnedRedecodes.clear();
    if (c_.maxDecoded != 0 && c_.decoded.size() > c_.maxDecoded) c_.decoded.clear();
  }
  DecodePin(const DecodePin&) = delete;
  DecodePin& operator=(const DecodePin&) = delete;

 private:
  Connection& c_;
};

// RAII `BEGIN IMMEDIATE` transaction. Rolls back in the destructor unless committed.
class ImmediateTx {
 public:
  explicit ImmediateTx(Connection& conn);
  ~ImmediateTx();
  ImmediateTx(const ImmediateTx&) = delete;
  ImmediateTx& operator=(const ImmediateTx&) = delete;
  void commit();
  Connection& conn() { return conn_; }

 private:
  Connection& conn_;
  bool done_ = false;
};

// Which dedicated writer is inserting (a.5, f.3 transition shapes, f.7 reservation). Only
// `workspace` (commitWorkspaceFacts) may insert a workspaceFact or into the authority session
// (workspace-continuity-contract.md b.5); every other writer gets reserved_workspace_fact.
enum class Writer {
  generic,
  t1,
  t2,
  bundle,
  continuationStart,
  continuationRepairStart,
  workspace
};

// Canonical candidate (after lossless canonicalisation).
struct Candidate {
  const RuntimeEvent* event = nullptr;
  std::string payload;  // stable JSON bytes
  bool exists = false;  // exact retry of a stored, byte-equal event
  int64_t existingSeq = 0;
  // The decode of `payload` (equal to *event); insertChecked moves it into the connection's
  // caches, so each written event is decoded once and never copied out of the caller's.
  RuntimeEvent canonical;
};

// Canonicalises and checks the lossless requirement (a.6): the stable JSON bytes must parse
// back to the same JSON and decode as a RuntimeEvent. Throws not_losslessly_serializable. The
// decode of the bytes is stored in *canonical when given.
std::string canonicalPayload(const RuntimeEvent& event, RuntimeEvent* canonical = nullptr);

// Same (sessionId, invocationId, runId, turnId).
inline bool sameExecutionIdentity(const RuntimeEvent& a, const RuntimeEvent& b) {
  return a.sessionId == b.sessionId && a.invocationId == b.invocationId && a.runId == b.runId &&
         a.turnId == b.turnId;
}

// event_kind column rule (f.2).
std::string eventKindOf(const RuntimeEvent& event);

// Runs the f.3 candidate checks for one write of `events` by `writer` inside `tx`: exact
// retry detection (byte-equal → exists; different → conflict), continuation seal and target
// reservation, run seal, identity consistency, and — when any candidate is tool-bearing — the
// workspace-wide ledger health fail-stop and the prospective transition check (shape + scan).
// Returns one Candidate per input event (same order).
std::vector<Candidate> checkCandidates(ImmediateTx& tx, Writer writer,
                                       const std::vector<const RuntimeEvent*>& events);

// Inserts one checked candidate (no-op for exact retries) and returns its event_seq.
// committedAt is the runtime_events.committed_at column value. Consumes candidate.canonical.
int64_t insertChecked(ImmediateTx& tx, Candidate& candidate, double committedAt);

// Run seal (f.3, j.6): throws run_sealed when the run has a terminal RuntimeEvent.
void checkRunNotSealed(Connection& conn, const std::string& sessionId, const std::string& runId);

// Convenience: checkCandidates + insertChecked for a single event.
struct InsertResult {
  bool created = false;
  int64_t eventSeq = 0;
};
InsertResult insertEvent(ImmediateTx& tx, const RuntimeEvent& event, Writer writer,
                         double committedAt);

// Reads and decodes (with row/payload identity checks) the events of one run, by event_seq.
std::vector<StoredEvent> readRunEvents(Connection& conn, const std::string& sessionId,
                                       const std::string& runId);
// readRunEvents without the copies: visit(eventSeq, event) for each decoded, checked row in the
// same order with the same errors (`event` as in visitInvocationEvents below).
void visitRunEvents(Connection& conn, const std::string& sessionId, const std::string& runId,
                    const std::function<void(int64_t, const RuntimeEvent&)>& visit);
// Events of one invocation, by event_seq.
std::vector<StoredEvent> readInvocationEvents(Connection& conn, const std::string& invocationId);
// readInvocationEvents without the copies: visit(eventSeq, event) for each decoded, checked row
// in the same order with the same errors. `event` is the connection's cached decode, valid
// only during the call (copy what is kept); `visit` must not use the connection.
void visitInvocationEvents(Connection& conn, const std::string& invocationId,
                           const std::function<void(int64_t, const RuntimeEvent&)>& visit);
// readAllEvents without the rows: visit(row, event) for each decoded, checked row in the same
// order with the same errors (`event` as in visitInvocationEvents).
struct StoredRow {
  int64_t rowid = 0, eventSeq = 0;
  double committedAt = 0;
};
void visitAllEvents(Connection& conn,
                    const std::function<void(const StoredRow&, const RuntimeEvent&)>& visit);
// Every event ordered by (invocation_id, event_seq, event_id); rowids returned in parallel.
std::vector<StoredEvent> readAllEvents(Connection& conn, std::vector<int64_t>* rowids = nullptr);
// One stored event by id (decoded and checked), if present.
std::optional<StoredEvent> readEventById(Connection& conn, const std::string& eventId);

// Current time in Unix milliseconds.
double nowMs();

// Access to a store's connection (open.cpp defines it).
Connection& connectionOf(RuntimeStore& store);
std::recursive_mutex& mutexOf(RuntimeStore& store);

// The projection rows (projections.cpp), one definition for the online writers (f.4–f.6) and
// the rebuild (f.8): a whole tool_operations row, and one tool_journal_events entry of an
// operation (its identity columns come from op).
void insertOperationRow(Connection& c, const ToolOperationRow& row);
// The tool_operations row at st's current result row, whose columns are, in order:
// operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, tool_name,
// canonical_args_hash, recovery_mode, current_state, call_event_id, dispatch_event_id,
// result_event_id, version.
ToolOperationRow operationFromRow(Stmt& st);
// The tool projection rows runtime_events alone imply (spec f.8), through the shared scanner:
// operations in ledger order, journal rows in the order online commits wrote them (their
// events' rowids), journalOperation[i] = the index of journal[i]'s operation. Throws
// code::store_corrupt on a ledger the scanner rejects.
struct LedgerProjection {
  std::vector<ToolOperationRow> operations;
  std::vector<JournalRow> journal;
  std::vector<size_t> journalOperation;
};
LedgerProjection projectLedger(Connection& c);
// Evidence, read from the -wal file and the -shm a crashed writer left, that committed
// transactions are gone or that SQLite's WAL recovery would drop them (wal_check.cpp): a damaged
// frame followed by two or more commit frames of the current WAL generation; or an intact -shm
// index whose last commit (mxFrame, of the WAL's salts) lies beyond the WAL's valid commits
// (a cut WAL). Empty when there is none. Reads only.
std::string walLossEvidence(const std::filesystem::path& wal, const std::filesystem::path& shm);
// The WAL frames SQLite's recovery would keep (up to and including the last valid commit
// frame); 0 when the file is missing, holds no WAL header or no valid commit. Reads only.
size_t walCommittedFrames(const std::filesystem::path& wal);
// True when the -shm's WAL-index header is intact and agrees with the -wal: the WAL header is
// valid, holds the index's salts, and its valid commits reach at least the frames the index
// vouches for (mxFrame). Only then can a read-only connection use the -shm as it is; otherwise
// SQLite would have to rebuild the index, which a read-only -shm cannot, and retries for seconds
// before it fails. Reads only.
bool walIndexAgrees(const std::filesystem::path& wal, const std::filesystem::path& shm);
// The database file the WAL's valid commits describe on their own: every page of the last
// valid commit's database size, each from the latest frame that wrote it. Throws
// code::store_data_lost when there is no valid commit or a page is in no frame (it lived only in
// the database file). Reads only.
std::string walDatabaseImage(const std::filesystem::path& wal);
// The first difference between the workspace projections (schema 5) and the rows the
// authority stream implies (workspace_writer.cpp); empty when they agree or when the stream does
// not scan clean (the planner parks that lineage: workspace_fact_corruption). Reads only.
std::string workspaceProjectionDifference(Connection& c);
void insertJournal(Connection& c, const std::string& journalId, const ToolOperationRow& op,
                   std::string_view state, const std::string& runtimeEventId,
                   const std::optional<std::string>& metadata, double committedAt);

// Run header rows (run_headers.cpp): insert a new one, read one (checked like readRun), and
// overwrite an existing one's status, json, updatedAt, invocation and turn.
void insertRunHeader(Connection& c, const RunHeader& header);
std::optional<RunHeader> readRunHeader(Connection& c, const std::string& sessionId,
                                       const std::string& runId);
void writeHeader(Connection& c, const RunHeader& header, const std::string& json);

// The schema (schema.cpp, spec f.2), checked by every open (open.cpp).
// PRAGMA user_version; code::store_corrupt when it returns no row.
int64_t readUserVersion(Connection& c);
// Throws code::schema_newer_than_supported for a schema version above kSchemaVersion.
[[noreturn]] void throwNewer(int64_t version);
// Brings the schema to kSchemaVersion by the shipped migrations, in one immediate transaction
// (re-checked under the write lock); a no-op when it is there. code::store_open_failed when a
// migration is missing; throwNewer for a newer schema.
void migrate(Connection& c);
// code::store_schema_damaged unless sqlite_master holds exactly the schema the migrations build
// (a flipped bit there can rename a column or drop a constraint), naming the first difference.
void requireSchema(Connection& c, const std::filesystem::path& file);
// code::capability_unavailable unless every capability this runtime needs is recorded at
// version 1 in runtime_capabilities.
void checkCapabilities(Connection& c);

// The open-time refusals the manifest decides (manifest.cpp, crashsim/store.h
// kStoreManifestName), before anything is created. requireManifestSchema: code::store_data_lost
// when the database's schema version is below the one the manifest records.
// refuseEmptyDatabaseBesideAWal: an empty (0-byte) database beside a -wal is refused before
// SQLite sees it (SQLite would delete that WAL): code::store_database_empty_wal_holds_data when
// the WAL holds committed frames; otherwise code::store_data_lost when the manifest records a
// store, code::store_open_failed for a read-only open without one. Reads only.
void requireManifestSchema(const std::filesystem::path& storeDir,
                           const std::optional<int64_t>& manifest, int64_t userVersion);
void refuseEmptyDatabaseBesideAWal(const std::filesystem::path& storeDir,
                                   const std::optional<int64_t>& manifest, bool readOnly);

// Legacy JSONL import (legacy_import.cpp, crashsim/store.h kLegacyJsonlName). readLegacyJsonl
// decodes the whole file (its 1-based line numbers kept) and writes nothing;
// importLegacyEvents inserts them through the generic writer in batches ([P16], [P17]).
struct LegacyLine {
  size_t line = 0;
  RuntimeEvent event;
};
std::vector<LegacyLine> readLegacyJsonl(const std::filesystem::path& file);
void importLegacyEvents(Connection& c, const std::filesystem::path& file,
                        const std::vector<LegacyLine>& lines, size_t batchEvents);

}  // namespace crashsim::store_detail
