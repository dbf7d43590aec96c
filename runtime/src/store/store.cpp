// store.cpp — RuntimeStore: open (pragmas, migrations, capabilities), run headers, reads and
// inspection (spec f.1, f.2, f.8, g).
#include "crashsim/store.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "crashsim/terminal_facts.h"
#include "store/store_internal.h"
#include "store/wal_batch_vfs.h"

namespace crashsim {

using store_detail::Connection;
using store_detail::ImmediateTx;
using store_detail::throwSqlite;

namespace {

// Schema version 1 (our numbering): the f.2 tables this runtime needs.
constexpr const char* kSchemaV1 = R"SQL(
CREATE TABLE runtime_events (
  event_id TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  event_seq INTEGER NOT NULL CHECK (event_seq > 0),
  event_kind TEXT NOT NULL,
  is_terminal INTEGER NOT NULL CHECK (is_terminal IN (0, 1)),
  payload_json TEXT NOT NULL,
  committed_at REAL NOT NULL,
  UNIQUE (invocation_id, event_seq)
);
CREATE INDEX runtime_events_run_seq ON runtime_events (session_id, run_id, event_seq);
CREATE INDEX runtime_events_session_commit ON runtime_events (session_id, committed_at, event_id);
CREATE TABLE tool_journal_events (
  journal_seq INTEGER PRIMARY KEY AUTOINCREMENT,
  journal_event_id TEXT NOT NULL UNIQUE,
  operation_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('prepared', 'reconcile_observed', 'outcome_committed',
                                       'recovery_completed', 'recovery_parked')),
  runtime_event_id TEXT NOT NULL REFERENCES runtime_events (event_id),
  canonical_args_hash TEXT NOT NULL,
  recovery_mode TEXT NOT NULL,
  external_handle TEXT,
  metadata_json TEXT,
  committed_at REAL NOT NULL
);
CREATE INDEX tool_journal_events_op ON tool_journal_events (operation_id, journal_seq);
CREATE TABLE tool_operations (
  operation_id TEXT PRIMARY KEY NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  provider_tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  canonical_args_hash TEXT NOT NULL,
  recovery_mode TEXT NOT NULL,
  current_state TEXT NOT NULL CHECK (current_state IN ('prepared', 'outcome_committed',
                                                       'recovery_completed', 'recovery_parked')),
  call_event_id TEXT NOT NULL REFERENCES runtime_events (event_id),
  dispatch_event_id TEXT REFERENCES runtime_events (event_id),
  result_event_id TEXT REFERENCES runtime_events (event_id),
  version INTEGER NOT NULL CHECK (version > 0),
  UNIQUE (invocation_id, provider_tool_call_id)
);
CREATE TABLE runtime_partial_snapshots (
  stream_key TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  after_event_id TEXT,
  payload_json TEXT NOT NULL,
  text_content TEXT,
  updated_at REAL NOT NULL
);
CREATE INDEX runtime_partial_snapshots_invocation ON runtime_partial_snapshots (invocation_id);
CREATE TABLE runtime_capabilities (
  capability TEXT PRIMARY KEY NOT NULL,
  version INTEGER NOT NULL CHECK (version > 0)
);
CREATE TABLE runtime_continuation_claims (
  claim_id TEXT PRIMARY KEY NOT NULL,
  source_session_id TEXT NOT NULL,
  source_invocation_id TEXT NOT NULL,
  source_run_id TEXT NOT NULL,
  source_turn_id TEXT NOT NULL,
  source_event_high_water INTEGER NOT NULL CHECK (source_event_high_water > 0),
  source_prefix_digest TEXT NOT NULL,
  boundary_digest TEXT NOT NULL UNIQUE,
  boundary_json TEXT NOT NULL,
  provider_projection_version INTEGER NOT NULL CHECK (provider_projection_version = 1),
  provider_replay_digest TEXT NOT NULL,
  target_session_id TEXT NOT NULL,
  target_invocation_id TEXT NOT NULL UNIQUE,
  target_run_id TEXT NOT NULL UNIQUE,
  target_turn_id TEXT NOT NULL,
  target_run_header_json TEXT NOT NULL,
  claimed_at REAL NOT NULL,
  start_event_id TEXT UNIQUE REFERENCES runtime_events (event_id),
  start_kind TEXT CHECK (start_kind IS NULL OR start_kind IN ('runtime_admission', 'claim_repair')),
  protocol_version INTEGER NOT NULL CHECK (protocol_version = 1),
  UNIQUE (source_session_id, source_run_id, source_event_high_water, source_prefix_digest),
  UNIQUE (target_session_id, target_turn_id)
);
CREATE INDEX runtime_continuation_claims_source ON runtime_continuation_claims (source_session_id, source_run_id);
CREATE TABLE agent_runs (
  session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('created', 'running', 'completed', 'failed', 'cancelled')),
  header_json TEXT NOT NULL,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  PRIMARY KEY (session_id, run_id)
);
INSERT INTO runtime_capabilities (capability, version) VALUES
  ('runtime_recovery_authority', 1),
  ('runtime_continuation_authority', 1),
  ('runtime_workspace_version_authority', 1);
)SQL";

// Schema version 2: terminal facts get a partial index, so the run seal checked before every
// write (f.3) is one seek instead of a walk over the run's events. Non-terminal rows have no
// entry: ordinary writes touch no extra page.
constexpr const char* kSchemaV2 = R"SQL(
CREATE INDEX runtime_events_terminal ON runtime_events (session_id, run_id) WHERE is_terminal = 1;
)SQL";

// Schema version 3: the store stops advertising runtime_workspace_version_authority, which
// version 1 wrote but nothing implements (spec f.1 lists it; its tables are outside the
// contract this runtime implements, so claiming it would be a lie to other readers).
constexpr const char* kSchemaV3 = R"SQL(
DELETE FROM runtime_capabilities WHERE capability = 'runtime_workspace_version_authority';
)SQL";

// v4: the termination batch's idempotency keys (termination contract section 6). One row per
// committed terminal batch, written in the batch's own transaction: operation_id
// "turn-finalize:<turnId>", the batch's digest (an exact retry is a no-op, another batch under
// the key is refused) and the terminal RuntimeEvent it ended with. An authority table like the
// claims: not a projection of runtime_events, never rebuilt.
constexpr const char* kSchemaV4 = R"SQL(
CREATE TABLE runtime_turn_finalize (
  operation_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  batch_digest TEXT NOT NULL,
  terminal_event_id TEXT NOT NULL,
  event_count INTEGER NOT NULL,
  committed_at REAL NOT NULL
);
)SQL";

// migrations[i] brings the schema from version i to i+1. A migration, once shipped, is never
// edited: a change is a new one.
constexpr const char* kMigrations[] = {kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

constexpr const char* kCapabilities[] = {"runtime_recovery_authority",
                                         "runtime_continuation_authority"};

int64_t readUserVersion(Connection& c) {
  auto st = c.prepare("PRAGMA user_version");
  if (!st.step()) throw Error(code::store_corrupt, "PRAGMA user_version returned no row");
  return st.int64(0);
}

// A database below the schema version its manifest records has lost data (store.h).
void requireManifestSchema(const std::filesystem::path& storeDir,
                           const std::optional<int64_t>& manifest, int64_t userVersion) {
  if (!manifest || userVersion >= *manifest) return;
  throw Error(code::store_data_lost,
              "the store manifest in " + storeDir.string() + " records schema version " +
                  std::to_string(*manifest) + " but runtime.sqlite has version " +
                  std::to_string(userVersion) +
                  (userVersion == 0 ? " (no schema: empty, truncated or its WAL lost)" : "") +
                  ": the store's data is lost (nothing was re-created)");
}

// SQLite treats a database file of 0 bytes as a new, empty database and deletes its WAL when
// it opens it (read-only with a -shm too), so a WAL that still holds every commit of a store
// whose database file was emptied (delayed allocation, a botched copy) would be destroyed before
// anything decides. Called before SQLite sees the directory; reads only.
void refuseEmptyDatabaseBesideAWal(const std::filesystem::path& storeDir,
                                   const std::optional<int64_t>& manifest, bool readOnly) {
  namespace fs = std::filesystem;
  const fs::path db = storeDir / "runtime.sqlite", wal = storeDir / "runtime.sqlite-wal";
  std::error_code ec;
  if (fs::symlink_status(db, ec).type() != fs::file_type::regular || ec) return;
  if (fs::file_size(db, ec) != 0 || ec) return;
  const auto walBytes = fs::file_size(wal, ec);
  if (ec || walBytes == 0) return;
  if (const size_t frames = store_detail::walCommittedFrames(wal); frames > 0) {
    throw Error(code::store_database_empty_wal_holds_data,
                db.string() + " is empty (0 bytes) but " + wal.string() + " holds " +
                    std::to_string(frames) +
                    " committed frame(s): the store's data is in the WAL alone; nothing was "
                    "opened or changed (crashsim store salvage-wal rebuilds it into a new "
                    "directory)");
  }
  if (!readOnly && !manifest) return;  // no store recorded, no commit in the WAL: a new store
  throw Error(manifest ? code::store_data_lost : code::store_open_failed,
              db.string() + " is empty (0 bytes) and " + wal.string() +
                  " holds no committed frame" +
                  (manifest ? ": the store's data is lost (nothing was re-created)" : ""));
}

[[noreturn]] void throwNewer(int64_t v) {
  throw Error(code::schema_newer_than_supported, "SQLite runtime schema " + std::to_string(v) +
                                                     " is newer than supported version " +
                                                     std::to_string(kSchemaVersion));
}

std::string pragmaText(Connection& c, const std::string& sql) {
  auto st = c.prepare(sql);
  if (!st.step()) return {};
  std::string v = st.text(0);
  while (st.step()) {
  }
  return v;
}

void ensureWal(Connection& c) {
  std::string mode = pragmaText(c, "PRAGMA journal_mode");
  if (mode == "wal" || mode == "memory") return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(c.db(), "PRAGMA journal_mode = WAL", -1, &st, nullptr);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(st);
      if (rc == SQLITE_ROW) {
        mode = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        rc = SQLITE_OK;
      }
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK && (mode == "wal" || mode == "memory")) return;
    const bool busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (rc != SQLITE_OK && !busy) throwSqlite(c.db(), rc, "PRAGMA journal_mode = WAL");
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(code::store_open_failed,
                  "SQLite runtime store journal_mode cannot become WAL (is " + mode + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void checkCapabilities(Connection& c) {
  for (const char* cap : kCapabilities) {
    auto st = c.prepare("SELECT version FROM runtime_capabilities WHERE capability = ?1");
    st.bind(1, std::string_view(cap));
    if (!st.step() || st.int64(0) != 1) {
      throw Error(code::capability_unavailable,
                  std::string("SQLite runtime recovery capability ") + cap + "@1 is unavailable");
    }
  }
}

void migrate(Connection& c) {
  int64_t v = readUserVersion(c);
  if (v > kSchemaVersion) throwNewer(v);
  if (v == kSchemaVersion) return;
  ImmediateTx tx(c);
  v = readUserVersion(c);  // re-check under the write lock (another process may have migrated)
  if (v > kSchemaVersion) throwNewer(v);
  while (v < kSchemaVersion) {
    if (v < 0 || v >= static_cast<int64_t>(std::size(kMigrations))) {
      throw Error(code::store_open_failed,
                  "Missing SQLite runtime migration " + std::to_string(v + 1));
    }
    c.execScript(kMigrations[v]);
    ++v;
    c.execScript("PRAGMA user_version = " + std::to_string(v));
  }
  tx.commit();
}

// sqlite_master as (type name -> sql) pairs: the schema a store holds.
std::map<std::string, std::string> schemaOf(Connection& c) {
  std::map<std::string, std::string> out;
  auto st = c.prepare("SELECT type || ' ' || name, coalesce(sql, '') FROM sqlite_master");
  while (st.step()) out[st.text(0)] = st.text(1);
  return out;
}

// The first difference between the store's schema and the one the migrations build (a flipped
// bit in sqlite_master can rename a column or drop a constraint); empty when they agree. The
// expected schema is built once per process, in memory, by the same migrations.
std::string schemaDifference(Connection& c) {
  static const std::map<std::string, std::string> expected = [] {
    sqlite3* mem = nullptr;
    if (sqlite3_open(":memory:", &mem) != SQLITE_OK) {
      sqlite3_close(mem);
      throw Error(code::store_open_failed, "cannot open an in-memory database");
    }
    std::map<std::string, std::string> schema;
    {
      Connection m(mem);
      migrate(m);
      schema = schemaOf(m);
    }
    sqlite3_close(mem);
    return schema;
  }();
  const auto actual = schemaOf(c);
  for (const auto& [name, sql] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return name + " is missing";
    if (it->second != sql) return name + " differs from the schema's definition";
  }
  for (const auto& [name, sql] : actual)
    if (!expected.count(name)) return name + " is not part of the schema";
  return {};
}

void requireSchema(Connection& c, const std::filesystem::path& file) {
  if (std::string diff = schemaDifference(c); !diff.empty())
    throw Error(code::store_schema_damaged,
                "the schema of " + file.string() + " is damaged: " + diff);
}

RunHeader headerFromRow(store_detail::Stmt& st) {
  // columns: session_id, run_id, invocation_id, turn_id, status, header_json
  RunHeader h;
  try {
    h = RunHeader::fromJson(parseJson(st.text(5)));
  } catch (const Error& e) {
    throw Error(code::store_corrupt,
                "Corrupt run header row " + st.text(0) + "/" + st.text(1) + ": " + e.what());
  }
  if (h.sessionId != st.text(0) || h.runId != st.text(1) || h.invocationId != st.text(2) ||
      h.turnId != st.text(3) || h.status != st.text(4)) {
    throw Error(code::row_payload_identity_mismatch,
                "Run header row/payload identity mismatch for " + st.text(0) + "/" + st.text(1));
  }
  return h;
}

}  // namespace

// ----------------------------------------------------------------------------------------
// RunHeader JSON

Json RunHeader::toJson() const {
  Json j = Json::object();
  j["sessionId"] = sessionId;
  j["runId"] = runId;
  j["invocationId"] = invocationId;
  j["turnId"] = turnId;
  j["status"] = status;
  j["createdAt"] = createdAt;
  j["updatedAt"] = updatedAt;
  if (completedAt) j["completedAt"] = *completedAt;
  if (failureClass) j["failureClass"] = *failureClass;
  if (failureMessage) j["failureMessage"] = *failureMessage;
  if (abortSource) j["abortSource"] = *abortSource;
  if (workspaceIdentity) j["workspaceIdentity"] = *workspaceIdentity;
  if (cwd) j["cwd"] = *cwd;
  if (parentRunId) j["parentRunId"] = *parentRunId;
  if (parentTurnId) j["parentTurnId"] = *parentTurnId;
  if (continuationSource) j["continuationSource"] = *continuationSource;
  return j;
}

RunHeader RunHeader::fromJson(const Json& j) {
  if (!j.is_object()) throw Error(code::wrong_type, "run header must be an object");
  static const char* const kKnown[] = {
      "sessionId",    "runId",          "invocationId", "turnId",
      "status",       "createdAt",      "updatedAt",    "completedAt",
      "failureClass", "failureMessage", "abortSource",  "workspaceIdentity",
      "cwd",          "parentRunId",    "parentTurnId", "continuationSource"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) throw Error(code::unknown_key, "unknown run header key " + it.key());
  }
  auto str = [&](const char* k) -> std::string {
    if (!j.contains(k)) throw Error(code::missing_field, std::string("run header lacks ") + k);
    if (!j[k].is_string()) throw Error(code::wrong_type, std::string("run header ") + k);
    return j[k].get<std::string>();
  };
  auto optStr = [&](const char* k) -> std::optional<std::string> {
    if (!j.contains(k)) return std::nullopt;
    if (!j[k].is_string()) throw Error(code::wrong_type, std::string("run header ") + k);
    return j[k].get<std::string>();
  };
  auto num = [&](const char* k) -> double {
    if (!j.contains(k)) throw Error(code::missing_field, std::string("run header lacks ") + k);
    if (!j[k].is_number()) throw Error(code::wrong_type, std::string("run header ") + k);
    return j[k].get<double>();
  };
  RunHeader h;
  h.sessionId = str("sessionId");
  h.runId = str("runId");
  h.invocationId = str("invocationId");
  h.turnId = str("turnId");
  h.status = str("status");
  if (h.status != code::created && h.status != code::running && !isTerminalRunStatus(h.status)) {
    throw Error(code::invalid_enum, "run header status " + h.status);
  }
  h.createdAt = num("createdAt");
  h.updatedAt = num("updatedAt");
  if (j.contains("completedAt")) h.completedAt = num("completedAt");
  h.failureClass = optStr("failureClass");
  h.failureMessage = optStr("failureMessage");
  h.abortSource = optStr("abortSource");
  h.workspaceIdentity = optStr("workspaceIdentity");
  h.cwd = optStr("cwd");
  h.parentRunId = optStr("parentRunId");
  h.parentTurnId = optStr("parentTurnId");
  if (j.contains("continuationSource")) h.continuationSource = j["continuationSource"];
  return h;
}

// ----------------------------------------------------------------------------------------
// RuntimeStore

struct RuntimeStore::Impl {
  std::filesystem::path dir, file;
  std::filesystem::path scratch;  // read-only open of a WAL without -shm: the private copy
  StoreOptions options;
  sqlite3* db = nullptr;
  std::unique_ptr<Connection> conn;
  mutable std::recursive_mutex mu;
  ~Impl() {
    conn.reset();
    if (db) sqlite3_close_v2(db);
    std::error_code ec;
    if (!scratch.empty()) std::filesystem::remove_all(scratch, ec);
  }
};

namespace {

// "file:" URI of a path (RFC 3986 percent-encoding of everything SQLite's URI parser treats
// specially).
std::string fileUri(const std::filesystem::path& p) {
  std::string uri = "file:";
  for (unsigned char ch : std::filesystem::absolute(p).string()) {
    if (std::isalnum(ch) || ch == '/' || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      uri.push_back(static_cast<char>(ch));
    } else {
      static const char* hex = "0123456789ABCDEF";
      uri.push_back('%');
      uri.push_back(hex[ch >> 4]);
      uri.push_back(hex[ch & 15]);
    }
  }
  return uri;
}

// Opens `file` for reading only, leaving every byte of its directory unchanged (StoreOptions).
// Sets `scratch` when it had to read a private copy.
int openReadOnly(const std::filesystem::path& file, sqlite3** db, std::filesystem::path& scratch) {
  std::error_code ec;
  std::filesystem::path wal = file, shm = file;
  wal += "-wal";
  shm += "-shm";
  const bool hasWal = std::filesystem::exists(wal, ec);
  const bool hasShm = std::filesystem::exists(shm, ec);
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  if (!hasWal)
    return sqlite3_open_v2((fileUri(file) + "?mode=ro&immutable=1").c_str(), db, flags, nullptr);
  // A -shm that disagrees with the WAL (a WAL cut to its header, damaged, or shorter than the
  // frames the index vouches for) would make SQLite rebuild the index, which a read-only -shm
  // cannot: it retries for seconds and fails with a locking error. The private copy below lets
  // SQLite recover the WAL exactly as a writer's open would, so every command gives one code.
  if (hasShm && store_detail::walIndexAgrees(wal, shm)) {
    return sqlite3_open_v2((fileUri(file) + "?mode=ro&readonly_shm=1").c_str(), db, flags, nullptr);
  }
  std::string tmpl = (std::filesystem::temp_directory_path() / "crashsim-ro-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return SQLITE_CANTOPEN;
  scratch = tmpl;
  std::filesystem::copy_file(file, scratch / "runtime.sqlite", ec);
  if (!ec) std::filesystem::copy_file(wal, scratch / "runtime.sqlite-wal", ec);
  if (ec) return SQLITE_CANTOPEN;
  return sqlite3_open_v2((scratch / "runtime.sqlite").c_str(), db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
}

}  // namespace

struct StoreAccess {
  static Connection& conn(RuntimeStore& s) { return *s.impl_->conn; }
  static std::recursive_mutex& mu(RuntimeStore& s) { return s.impl_->mu; }
};

RuntimeStore::RuntimeStore() : impl_(std::make_unique<Impl>()) {}
RuntimeStore::~RuntimeStore() = default;

std::unique_ptr<RuntimeStore> RuntimeStore::open(const std::filesystem::path& storeDir,
                                                 StoreOptions options) {
  const std::filesystem::path jsonl = storeDir / kLegacyJsonlName;
  if (!legacyImportPending(storeDir)) return openImpl(storeDir, options, nullptr);
  if (!options.readOnly) return openImpl(storeDir, options, &jsonl);
  // A read-only open of a directory whose legacy import has not completed: a private copy of
  // the database (if any) with the import completed there, deleted on close.
  std::string tmpl = (std::filesystem::temp_directory_path() / "crashsim-legacy-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) {
    throw Error(code::store_open_failed, "cannot create a scratch directory in " +
                                             std::filesystem::temp_directory_path().string());
  }
  const std::filesystem::path scratch = tmpl;
  try {
    std::error_code ec;
    if (std::filesystem::symlink_status(storeDir / "runtime.sqlite", ec).type() !=
        std::filesystem::file_type::not_found) {
      openImpl(storeDir, options, nullptr)->backupTo(scratch);
    }
    StoreOptions view;
    view.synchronous = "OFF";  // a private copy: nothing to keep across a crash
    view.walBatching = false;
    view.legacyImportBatchEvents = options.legacyImportBatchEvents;
    auto s = openImpl(scratch, view, &jsonl);
    s->impl_->scratch = scratch;
    s->impl_->conn->execScript("PRAGMA query_only = ON");
    return s;
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
    throw;
  }
}

std::unique_ptr<RuntimeStore> RuntimeStore::openImpl(const std::filesystem::path& storeDir,
                                                     StoreOptions options,
                                                     const std::filesystem::path* legacyJsonl) {
  std::unique_ptr<RuntimeStore> s(new RuntimeStore());
  auto& im = *s->impl_;
  im.dir = storeDir;
  im.file = storeDir / "runtime.sqlite";
  im.options = options;
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL" &&
      options.synchronous != "EXTRA" && options.synchronous != "OFF") {
    throw Error(code::store_open_failed, "unsupported synchronous setting " + options.synchronous);
  }
  // A directory whose manifest records a store must still hold its database: never create it.
  const std::optional<int64_t> manifest = readStoreManifest(storeDir);
  if (options.readOnly || manifest) requireRuntimeStore(storeDir);
  if (!planted("store_opens_empty_database"))
    refuseEmptyDatabaseBesideAWal(storeDir, manifest, options.readOnly);
  // Decoded in full before anything is created: a bad line fails closed with nothing written.
  std::vector<store_detail::LegacyLine> legacy;
  if (legacyJsonl) legacy = store_detail::readLegacyJsonl(*legacyJsonl);
  // Before SQLite replays the WAL (and a writer checkpoints what it replayed).
  if (std::string lost = store_detail::walLossEvidence(storeDir / "runtime.sqlite-wal",
                                                       storeDir / "runtime.sqlite-shm");
      !lost.empty()) {
    throw Error(code::store_wal_frames_lost,
                (storeDir / "runtime.sqlite-wal").string() + ": " + lost);
  }
  std::error_code ec;
  if (!options.readOnly) {
    std::filesystem::create_directories(storeDir, ec);
    if (ec) {
      throw Error(code::store_open_failed,
                  "cannot create store directory " + storeDir.string() + ": " + ec.message());
    }
  }
  // NOMUTEX: one thread at a time uses a RuntimeStore (store.h), whose own caches are not
  // synchronised either, so a per-connection mutex protects nothing (~2% of a T1+T2 in
  // instructions).
  int rc = SQLITE_OK;
  std::set<std::string_view> existedBefore;  // of "-wal", "-shm": what a writer found
  if (options.readOnly) {
    rc = openReadOnly(im.file, &im.db, im.scratch);
    if (im.db) sqlite3_db_config(im.db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  } else {
    // A writer that syncs every commit batches its WAL appends (wal_batch_vfs.h), unless the
    // caller turned it off (StoreOptions::walBatching).
    const char* vfs = options.vfs.empty() ? nullptr : options.vfs.c_str();
    if (options.walBatching && (options.synchronous == "FULL" || options.synchronous == "EXTRA")) {
      if (const char* batched = store_detail::walBatchVfsName(options.vfs)) vfs = batched;
    }
    for (const char* suffix : {"-wal", "-shm"}) {
      std::filesystem::path f = im.file;
      f += suffix;
      if (std::filesystem::exists(f, ec)) existedBefore.insert(suffix);
    }
    rc = sqlite3_open_v2(im.file.c_str(), &im.db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
  }
  if (rc != SQLITE_OK) {
    std::string m = im.db ? sqlite3_errmsg(im.db) : sqlite3_errstr(rc);
    throw Error(code::store_open_failed, "cannot open " + im.file.string() + ": " + m);
  }
  sqlite3_extended_result_codes(im.db, 1);
  im.conn = std::make_unique<Connection>(im.db);
  Connection& c = *im.conn;
  c.execScript("PRAGMA busy_timeout = 5000");
  if (options.readOnly) {
    c.execScript("PRAGMA foreign_keys = ON; PRAGMA query_only = ON");
    int64_t v = readUserVersion(c);
    requireManifestSchema(storeDir, manifest, v);
    if (v > kSchemaVersion) throwNewer(v);
    if (v != kSchemaVersion) {
      throw Error(code::schema_version_mismatch,
                  "SQLite runtime schema " + std::to_string(v) +
                      " cannot be read without upgrading to version " +
                      std::to_string(kSchemaVersion));
    }
    requireSchema(c, im.file);
    checkCapabilities(c);
    return s;
  }
  // Fail closed on a newer schema before anything could modify the file (journal mode
  // switch included), and on a database that lost the schema its manifest records, leaving
  // the directory as it was: no checkpoint on close (SQLite would fold the -wal into the
  // database and delete it) and no -wal / -shm left behind that this open created.
  int64_t v = 0;
  sqlite3_db_config(im.db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  try {
    v = readUserVersion(c);
    requireManifestSchema(storeDir, manifest, v);
    if (v > kSchemaVersion) throwNewer(v);
  } catch (const Error&) {
    im.conn.reset();
    sqlite3_close_v2(im.db);
    im.db = nullptr;
    for (const char* suffix : {"-wal", "-shm"}) {
      std::filesystem::path f = im.file;
      f += suffix;
      if (!existedBefore.count(suffix)) std::filesystem::remove(f, ec);
    }
    throw;
  }
  sqlite3_db_config(im.db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
  // A new store gets 1 KiB pages (an existing one keeps its own; SQLite ignores the pragma
  // once the file has pages). A tool commit dirties one page in each of about a dozen B-trees,
  // so the page size sets the bytes each commit syncs; the CPU cost is the same (callgrind,
  // within 1%). Measured per tool call (T1+T2, 16 calls per run): 119 KB of WAL at 4 KiB,
  // 71 KB at 2 KiB, 46 KB at 1 KiB. The checkpoint threshold (16 MiB of WAL) lets a
  // checkpoint write each hot page once per ~350 calls: 6 KB of database writes per call
  // instead of 13 KB at SQLite's default threshold, and a fifth of the checkpoint fsyncs.
  c.execScript("PRAGMA page_size = 1024");
  ensureWal(c);
  c.execScript("PRAGMA wal_autocheckpoint = 16384");
  // Planted bug (D1): commits acknowledged without a sync, under a FULL label.
  c.execScript("PRAGMA synchronous = " +
               (planted("store_acknowledges_unsynced") ? std::string("OFF") : options.synchronous));
  c.execScript("PRAGMA foreign_keys = ON");
  // The writers' checks seek in six B-trees per event; keep their pages across transactions
  // (16 MiB instead of SQLite's 2 MiB default) rather than rereading them from the WAL.
  c.execScript("PRAGMA cache_size = -16384");
  migrate(c);
  requireSchema(c, im.file);
  checkCapabilities(c);
  // Planted bug: the manifest (which ends every later import) is written before the batches.
  if (legacyJsonl && planted("legacy_manifest_first")) writeStoreManifest(storeDir, kSchemaVersion);
  if (legacyJsonl)
    store_detail::importLegacyEvents(c, *legacyJsonl, legacy, options.legacyImportBatchEvents);
  if (!manifest || *manifest < kSchemaVersion) {
    // The manifest may only claim a schema that a power cut cannot take: below FULL a commit is
    // not synced, so checkpoint (which syncs the WAL, then the database) first.
    if (options.synchronous != "FULL" && options.synchronous != "EXTRA")
      c.execScript("PRAGMA wal_checkpoint(FULL)");
    writeStoreManifest(storeDir, kSchemaVersion);
  }
  return s;
}

std::filesystem::path RuntimeStore::path() const { return impl_->file; }
sqlite3* RuntimeStore::handle() const { return impl_->db; }

// --- run headers ---

void RuntimeStore::createRun(const RunHeader& header) {
  std::lock_guard lk(impl_->mu);
  Connection& c = *impl_->conn;
  const std::string json = stableJson(header.toJson());
  ImmediateTx tx(c);
  auto sel = c.prepare("SELECT header_json FROM agent_runs WHERE session_id = ?1 AND run_id = ?2");
  sel.bind(1, header.sessionId).bind(2, header.runId);
  if (sel.step()) {
    if (sel.text(0) == json) return;  // exact retry
    throw Error(code::run_header_conflict,
                "Run header conflict for " + header.sessionId + "/" + header.runId);
  }
  store_detail::insertRunHeader(c, header);
  tx.commit();
}

namespace store_detail {
void insertRunHeader(Connection& c, const RunHeader& h) {
  auto ins = c.prepare(
      "INSERT INTO agent_runs (session_id, run_id, invocation_id, turn_id, status, header_json, "
      "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  ins.bind(1, h.sessionId)
      .bind(2, h.runId)
      .bind(3, h.invocationId)
      .bind(4, h.turnId)
      .bind(5, h.status)
      .bind(6, stableJson(h.toJson()))
      .bind(7, h.createdAt)
      .bind(8, h.updatedAt);
  ins.exec();
}

std::optional<RunHeader> readRunHeader(Connection& c, const std::string& sessionId,
                                       const std::string& runId) {
  auto st = c.prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE session_id = ?1 AND run_id = ?2");
  st.bind(1, sessionId).bind(2, runId);
  if (!st.step()) return std::nullopt;
  return headerFromRow(st);
}
}  // namespace store_detail

std::optional<RunHeader> RuntimeStore::readRun(const std::string& sessionId,
                                               const std::string& runId) const {
  std::lock_guard lk(impl_->mu);
  return store_detail::readRunHeader(*impl_->conn, sessionId, runId);
}

std::vector<RunHeader> RuntimeStore::listRuns(const std::optional<std::string>& sessionId) const {
  std::lock_guard lk(impl_->mu);
  std::vector<RunHeader> out;
  auto st = impl_->conn->prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE ?1 IS NULL OR session_id = ?1 ORDER BY session_id, created_at, run_id");
  st.bind(1, sessionId);
  while (st.step()) out.push_back(headerFromRow(st));
  return out;
}

namespace store_detail {
void writeHeader(Connection& c, const RunHeader& h, const std::string& json) {
  auto up = c.prepare(
      "UPDATE agent_runs SET status = ?3, header_json = ?4, updated_at = ?5, invocation_id = ?6, "
      "turn_id = ?7 WHERE session_id = ?1 AND run_id = ?2");
  up.bind(1, h.sessionId)
      .bind(2, h.runId)
      .bind(3, h.status)
      .bind(4, json)
      .bind(5, h.updatedAt)
      .bind(6, h.invocationId)
      .bind(7, h.turnId);
  up.exec();
}
}  // namespace store_detail

void RuntimeStore::markRunTerminal(const RunHeader& header) {
  std::lock_guard lk(impl_->mu);
  if (!isTerminalRunStatus(header.status)) {
    throw Error(code::run_header_conflict,
                "markRunTerminal requires a terminal status, got " + header.status);
  }
  Connection& c = *impl_->conn;
  const std::string json = stableJson(header.toJson());
  ImmediateTx tx(c);
  auto sel = c.prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE session_id = ?1 AND run_id = ?2");
  sel.bind(1, header.sessionId).bind(2, header.runId);
  if (!sel.step()) {
    throw Error(code::run_not_found, "Unknown run " + header.sessionId + "/" + header.runId);
  }
  RunHeader stored = headerFromRow(sel);
  std::string storedJson = sel.text(5);
  if (stored.invocationId != header.invocationId || stored.turnId != header.turnId) {
    throw Error(code::run_header_conflict,
                "Run header identity conflict for " + header.sessionId + "/" + header.runId);
  }
  if (isTerminalRunStatus(stored.status)) {
    if (storedJson == json) return;  // exact retry
    throw Error(code::run_header_conflict, "Run " + header.sessionId + "/" + header.runId +
                                               " already has a different terminal header");
  }
  // The terminal fact must already be durable: exactly one terminal event with a mapping status.
  // (The planted repair_header_first and stop_header_before_fact bugs also switch this defence
  // off, so V7 and the Stop oracle have to catch them.)
  if (planted("repair_header_first") || planted("stop_header_before_fact")) {
    writeHeader(c, header, json);
    tx.commit();
    return;
  }
  auto events = store_detail::readRunEvents(c, header.sessionId, header.runId);
  std::vector<const StoredEvent*> terminals;
  for (const auto& e : events)
    if (e.event.isTerminal()) terminals.push_back(&e);
  if (terminals.size() != 1) {
    throw Error(code::run_terminal_fact_missing,
                "Run " + header.sessionId + "/" + header.runId + " has " +
                    std::to_string(terminals.size()) +
                    " terminal RuntimeEvents; the header follows exactly one terminal fact");
  }
  auto st = terminalRunStatusOf(terminals[0]->event);
  if (!st || *st != header.status) {
    throw Error(code::run_terminal_fact_missing, "Run " + header.sessionId + "/" + header.runId +
                                                     " terminal fact " + terminals[0]->event.id +
                                                     " does not establish status " + header.status);
  }
  writeHeader(c, header, json);
  tx.commit();
}

void RuntimeStore::updateRunHeader(const RunHeader& header) {
  std::lock_guard lk(impl_->mu);
  if (isTerminalRunStatus(header.status)) {
    throw Error(code::run_terminal_fact_missing,
                "terminal run headers are written by markRunTerminal after the terminal fact");
  }
  Connection& c = *impl_->conn;
  const std::string json = stableJson(header.toJson());
  ImmediateTx tx(c);
  auto sel = c.prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE session_id = ?1 AND run_id = ?2");
  sel.bind(1, header.sessionId).bind(2, header.runId);
  if (!sel.step()) {
    throw Error(code::run_not_found, "Unknown run " + header.sessionId + "/" + header.runId);
  }
  RunHeader stored = headerFromRow(sel);
  if (isTerminalRunStatus(stored.status)) {
    throw Error(code::run_sealed,
                "Run " + header.sessionId + "/" + header.runId + " header is already terminal");
  }
  if (stored.invocationId != header.invocationId || stored.turnId != header.turnId) {
    throw Error(code::run_header_conflict,
                "Run header identity conflict for " + header.sessionId + "/" + header.runId);
  }
  writeHeader(c, header, json);
  tx.commit();
}

// --- reads ---

std::vector<StoredEvent> RuntimeStore::readRunEvents(const std::string& sessionId,
                                                     const std::string& runId) const {
  std::lock_guard lk(impl_->mu);
  return store_detail::readRunEvents(*impl_->conn, sessionId, runId);
}

std::vector<StoredEvent> RuntimeStore::readAllEvents() const {
  std::lock_guard lk(impl_->mu);
  return store_detail::readAllEvents(*impl_->conn);
}

namespace {
ToolOperationRow opFromRow(store_detail::Stmt& st) {
  ToolOperationRow r;
  r.operationId = st.text(0);
  r.invocationId = st.text(1);
  r.runId = st.text(2);
  r.turnId = st.text(3);
  r.providerToolCallId = st.text(4);
  r.toolName = st.text(5);
  r.canonicalArgsHash = st.text(6);
  r.recoveryMode = st.text(7);
  r.currentState = st.text(8);
  r.callEventId = st.text(9);
  r.dispatchEventId = st.optText(10);
  r.resultEventId = st.optText(11);
  r.version = st.int64(12);
  return r;
}
constexpr const char* kOpCols =
    "o.operation_id, o.invocation_id, o.run_id, o.turn_id, o.provider_tool_call_id, o.tool_name, "
    "o.canonical_args_hash, o.recovery_mode, o.current_state, o.call_event_id, "
    "o.dispatch_event_id, o.result_event_id, o.version";
}  // namespace

std::vector<ToolOperationRow> RuntimeStore::listToolOperations() const {
  std::lock_guard lk(impl_->mu);
  std::vector<ToolOperationRow> out;
  auto st = impl_->conn->prepare(std::string("SELECT ") + kOpCols +
                                 " FROM tool_operations o ORDER BY o.operation_id");
  while (st.step()) out.push_back(opFromRow(st));
  return out;
}

std::vector<JournalRow> RuntimeStore::listJournal() const {
  std::lock_guard lk(impl_->mu);
  std::vector<JournalRow> out;
  auto st = impl_->conn->prepare(
      "SELECT journal_event_id, operation_id, invocation_id, run_id, turn_id, state, "
      "runtime_event_id, canonical_args_hash, recovery_mode, metadata_json, committed_at "
      "FROM tool_journal_events ORDER BY journal_seq");
  while (st.step()) {
    JournalRow r;
    r.journalEventId = st.text(0);
    r.operationId = st.text(1);
    r.invocationId = st.text(2);
    r.runId = st.text(3);
    r.turnId = st.text(4);
    r.state = st.text(5);
    r.runtimeEventId = st.text(6);
    r.canonicalArgsHash = st.text(7);
    r.recoveryMode = st.text(8);
    r.metadataJson = st.optText(9);
    r.committedAt = st.real(10);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ToolOperationRow> RuntimeStore::listUnsettledToolOperations(
    const std::optional<std::string>& sessionId) const {
  std::lock_guard lk(impl_->mu);
  std::vector<ToolOperationRow> out;
  auto st = impl_->conn->prepare(
      std::string("SELECT ") + kOpCols +
      " FROM tool_operations o JOIN runtime_events d ON d.event_id = o.dispatch_event_id "
      "WHERE o.current_state = 'prepared' AND o.result_event_id IS NULL "
      "AND (?1 IS NULL OR d.session_id = ?1) ORDER BY o.invocation_id, o.operation_id");
  st.bind(1, sessionId);
  while (st.step()) out.push_back(opFromRow(st));
  return out;
}

std::string RuntimeStore::ledgerHash() const {
  std::lock_guard lk(impl_->mu);
  auto st = impl_->conn->prepare(
      "SELECT event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, "
      "is_terminal, payload_json, committed_at FROM runtime_events "
      "ORDER BY invocation_id, event_seq, event_id");
  std::string buf;
  auto lp = [&](const std::string& s) {
    uint64_t n = s.size();
    for (int i = 7; i >= 0; --i) buf.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    buf += s;
  };
  lp("crashsim.runtime-events-ledger.v1");
  while (st.step()) {
    for (int i = 0; i < 5; ++i) lp(st.text(i));
    lp(std::to_string(st.int64(5)));
    lp(st.text(6));
    lp(std::to_string(st.int64(7)));
    lp(st.text(8));
    lp(formatEcmaNumber(st.real(9)));
  }
  return sha256Digest(buf);
}

namespace {
// The result rows of a check pragma, one per line ("ok" when the check passes).
std::string checkPragma(Connection& c, const char* pragma) {
  auto st = c.prepare(pragma);
  std::string out;
  while (st.step()) {
    if (!out.empty()) out += "\n";
    out += st.text(0);
  }
  return out;
}
}  // namespace

std::string RuntimeStore::quickCheck() const {
  std::lock_guard lk(impl_->mu);
  return checkPragma(*impl_->conn, "PRAGMA quick_check");
}

namespace {
// The first difference between the stored tool projections and the rows runtime_events alone
// imply; empty when they agree, or when the scanner rejects the ledger (then the resolver
// reports that corruption for the run, where readers see it).
std::string projectionDifference(const RuntimeStore& store, Connection& c) {
  store_detail::LedgerProjection rebuilt;
  try {
    rebuilt = store_detail::projectLedger(c);
  } catch (const Error& e) {
    if (e.code() == code::store_corrupt) return {};
    throw;
  }
  // Rows of operations without a dispatch are not rebuilt (rebuildProjections keeps them).
  std::vector<ToolOperationRow> online;
  std::set<std::string> rebuiltIds;
  for (ToolOperationRow& r : store.listToolOperations())
    if (r.dispatchEventId) online.push_back(std::move(r));
  std::sort(rebuilt.operations.begin(), rebuilt.operations.end(),
            [](const auto& a, const auto& b) { return a.operationId < b.operationId; });
  for (size_t i = 0; i < std::max(online.size(), rebuilt.operations.size()); ++i) {
    if (i >= online.size())
      return "tool_operations lacks " + rebuilt.operations[i].operationId +
             ", which the ledger implies";
    if (i >= rebuilt.operations.size() ||
        online[i].operationId != rebuilt.operations[i].operationId)
      return "tool_operations holds " + online[i].operationId + ", which the ledger does not imply";
    const ToolOperationRow& a = online[i];
    const ToolOperationRow& b = rebuilt.operations[i];
    if (!(a == b)) {
      return "tool_operations row " + a.operationId + " is " + a.currentState + " v" +
             std::to_string(a.version) + " (result " + a.resultEventId.value_or("none") +
             "), the ledger implies " + b.currentState + " v" + std::to_string(b.version) +
             " (result " + b.resultEventId.value_or("none") + ")";
    }
    rebuiltIds.insert(a.operationId);
  }
  std::vector<JournalRow> journal;
  for (JournalRow& j : store.listJournal())
    if (rebuiltIds.count(j.operationId)) journal.push_back(std::move(j));
  for (size_t i = 0; i < std::max(journal.size(), rebuilt.journal.size()); ++i) {
    if (i >= journal.size())
      return "tool_journal_events lacks " + rebuilt.journal[i].journalEventId;
    if (i >= rebuilt.journal.size())
      return "tool_journal_events holds " + journal[i].journalEventId +
             ", which the ledger does not imply";
    if (!(journal[i] == rebuilt.journal[i])) {
      return "tool_journal_events entry " + std::to_string(i + 1) + " is " +
             journal[i].journalEventId + " (" + journal[i].state + "), the ledger implies " +
             rebuilt.journal[i].journalEventId + " (" + rebuilt.journal[i].state + ")";
    }
  }
  return {};
}
}  // namespace

void RuntimeStore::checkIntact() const {
  const std::string where = " in " + impl_->file.string();
  // integrity_check, not quick_check: only it verifies each index against its table, and a
  // flipped bit in an index page hides events from the readers that seek through it (a run
  // then seems to have no terminal event). Its cost is in README "Performance".
  const std::string check = integrityCheck();
  if (check != "ok") {
    // The first problem line (integrity_check heads its list with "*** in database main ***").
    std::string first = check.substr(0, check.find('\n'));
    if (first.rfind("***", 0) == 0 && check.find('\n') != std::string::npos) {
      const size_t start = check.find('\n') + 1;
      first = check.substr(start, check.find('\n', start) - start);
    }
    throw Error(code::store_corrupt,
                "integrity check of " + impl_->file.string() + " failed: " + first);
  }
  std::lock_guard lk(impl_->mu);
  Connection& c = *impl_->conn;
  // One read transaction: every check sees the same commit.
  c.execScript("BEGIN");
  struct EndRead {
    Connection& c;
    ~EndRead() {
      try {
        c.execScript("COMMIT");
      } catch (...) {
      }
    }
  } endRead{c};
  if (auto st = c.prepare("PRAGMA foreign_key_check"); st.step()) {
    throw Error(
        code::store_foreign_key_violation,
        st.text(0) + " row " + st.text(1) + " references a missing " + st.text(2) + " row" + where);
  }
  if (auto st = c.prepare(
          "SELECT invocation_id, COUNT(*), MIN(event_seq), MAX(event_seq) FROM runtime_events "
          "GROUP BY invocation_id HAVING MIN(event_seq) <> 1 OR MAX(event_seq) <> COUNT(*) "
          "LIMIT 1");
      st.step()) {
    throw Error(code::store_event_seq_gap,
                "invocation " + st.text(0) + " holds " + std::to_string(st.int64(1)) +
                    " events numbered " + std::to_string(st.int64(2)) + ".." +
                    std::to_string(st.int64(3)) + " (a RuntimeEvent is missing)" + where);
  }
  // Events are appended in event_seq order, so their rowids ascend with event_seq.
  if (auto st = c.prepare(
          "SELECT a.invocation_id, a.event_seq FROM runtime_events a JOIN runtime_events b "
          "ON b.invocation_id = a.invocation_id AND b.event_seq = a.event_seq + 1 "
          "WHERE b.rowid < a.rowid LIMIT 1");
      st.step()) {
    throw Error(code::store_event_order_conflict,
                "invocation " + st.text(0) + ": event_seq " + std::to_string(st.int64(1) + 1) +
                    " was stored before event_seq " + std::to_string(st.int64(1)) + where);
  }
  if (auto st = c.prepare(
          "SELECT DISTINCT e.session_id, e.run_id, e.invocation_id FROM runtime_events e "
          "WHERE NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.session_id = e.session_id "
          "AND r.run_id = e.run_id AND r.invocation_id = e.invocation_id) LIMIT 1");
      st.step()) {
    throw Error(code::store_run_header_missing,
                "run " + st.text(0) + "/" + st.text(1) + " (invocation " + st.text(2) +
                    ") has RuntimeEvents but no agent_runs header" + where);
  }
  // The termination keys (runtime_turn_finalize) and the terminal headers against the ledger:
  // what the terminal writer refuses later (termination_batch_conflict, run_sealed) is found
  // here first, so a read-only check never calls a store intact that every writer refuses.
  if (auto st = c.prepare(
          "SELECT f.operation_id, f.session_id, f.run_id FROM runtime_turn_finalize f WHERE NOT "
          "EXISTS (SELECT 1 FROM runtime_events e WHERE e.event_id = f.terminal_event_id AND "
          "e.session_id = f.session_id AND e.run_id = f.run_id AND e.is_terminal = 1) LIMIT 1");
      st.step()) {
    throw Error(code::store_termination_conflict,
                "the termination key " + st.text(0) + " of run " + st.text(1) + "/" + st.text(2) +
                    " names a terminal RuntimeEvent the ledger does not hold (a deleted event)" +
                    where);
  }
  if (auto st = c.prepare(
          "SELECT r.session_id, r.run_id, r.status FROM agent_runs r WHERE r.status IN "
          "('completed', 'failed', 'cancelled') AND NOT EXISTS (SELECT 1 FROM runtime_events e "
          "WHERE e.session_id = r.session_id AND e.run_id = r.run_id AND e.is_terminal = 1) "
          "LIMIT 1");
      st.step()) {
    throw Error(code::store_termination_conflict,
                "run " + st.text(0) + "/" + st.text(1) + " has a " + st.text(2) +
                    " header but no terminal RuntimeEvent (a deleted event)" + where);
  }
  if (auto st = c.prepare(
          "SELECT r.session_id, r.run_id, f.operation_id, f.run_id FROM agent_runs r JOIN "
          "runtime_turn_finalize f ON f.session_id = r.session_id AND f.turn_id = r.turn_id "
          "WHERE f.run_id <> r.run_id AND r.status NOT IN ('completed', 'failed', 'cancelled') "
          "LIMIT 1");
      st.step()) {
    throw Error(code::store_termination_conflict,
                "run " + st.text(0) + "/" + st.text(1) +
                    " is open, but its turn's termination key " + st.text(2) + " belongs to run " +
                    st.text(3) + " (an extra run header): no terminal batch could ever end it" +
                    where);
  }
  if (const std::string diff = projectionDifference(*this, c); !diff.empty())
    throw Error(code::store_projection_mismatch, diff + where);
}

void RuntimeStore::backupTo(const std::filesystem::path& dir) const {
  std::lock_guard lk(impl_->mu);
  const std::filesystem::path target = dir / "runtime.sqlite";
  sqlite3* dest = nullptr;
  int rc =
      sqlite3_open_v2(target.c_str(), &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::string why;
  if (rc == SQLITE_OK) {
    sqlite3_backup* b = sqlite3_backup_init(dest, "main", impl_->db, "main");
    if (b == nullptr) {
      rc = sqlite3_errcode(dest);
      why = sqlite3_errmsg(dest);
    } else {
      rc = sqlite3_backup_step(b, -1);
      sqlite3_backup_finish(b);
      if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
      else
        why = sqlite3_errstr(rc);
    }
  } else {
    why = dest ? sqlite3_errmsg(dest) : sqlite3_errstr(rc);
  }
  sqlite3_close_v2(dest);
  if (rc != SQLITE_OK) {
    const int primary = rc & 0xff;
    throw Error(primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB ? code::store_corrupt
                                                                      : code::store_open_failed,
                "cannot copy " + impl_->file.string() + " to " + target.string() + ": " + why);
  }
}

std::string RuntimeStore::integrityCheck() const {
  std::lock_guard lk(impl_->mu);
  return checkPragma(*impl_->conn, "PRAGMA integrity_check");
}

RuntimeStore::ConnectionSettings RuntimeStore::connectionSettings() const {
  std::lock_guard lk(impl_->mu);
  ConnectionSettings s;
  s.journalMode = pragmaText(*impl_->conn, "PRAGMA journal_mode");
  const std::string level = pragmaText(*impl_->conn, "PRAGMA synchronous");
  static const char* const kNames[] = {"OFF", "NORMAL", "FULL", "EXTRA"};
  s.synchronous =
      level.size() == 1 && level[0] >= '0' && level[0] <= '3' ? kNames[level[0] - '0'] : level;
  return s;
}

namespace store_detail {
Connection& connectionOf(RuntimeStore& store) { return StoreAccess::conn(store); }
std::recursive_mutex& mutexOf(RuntimeStore& store) { return StoreAccess::mu(store); }
}  // namespace store_detail

}  // namespace crashsim
