// open.cpp — RuntimeStore::open (spec f.1, f.2): the refusals made before SQLite sees the
// directory, the read-only and the writable connection, its pragmas, the migration and the
// manifest write; and what reads the open connection as a whole (backupTo, connectionSettings).
#include <sqlite3.h>
#include <stdlib.h>

#include <cctype>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "crashsim/codes.h"
#include "crashsim/plant.h"
#include "crashsim/store.h"
#include "store/store_impl.h"
#include "store/store_internal.h"
#include "store/wal_batch_vfs.h"

namespace crashsim {

using store_detail::checkCapabilities;
using store_detail::Connection;
using store_detail::migrate;
using store_detail::readUserVersion;
using store_detail::refuseEmptyDatabaseBesideAWal;
using store_detail::requireManifestSchema;
using store_detail::requireSchema;
using store_detail::throwNewer;
using store_detail::throwSqlite;

namespace {

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

// What an open checks before it creates or opens anything: a supported synchronous setting; a
// directory whose manifest records a store still holds its database (never created); no empty
// database beside a WAL; the legacy JSONL decoded in full (a bad line fails closed with nothing
// written); no WAL frames lost (before SQLite replays the WAL and a writer checkpoints what it
// replayed). A writer then creates the directory. Returns the manifest's schema, if any.
std::optional<int64_t> checkBeforeOpen(const std::filesystem::path& storeDir,
                                       const StoreOptions& options,
                                       const std::filesystem::path* legacyJsonl,
                                       std::vector<store_detail::LegacyLine>& legacy) {
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL" &&
      options.synchronous != "EXTRA" && options.synchronous != "OFF") {
    throw Error(code::store_open_failed, "unsupported synchronous setting " + options.synchronous);
  }
  const std::optional<int64_t> manifest = readStoreManifest(storeDir);
  if (options.readOnly || manifest) requireRuntimeStore(storeDir);
  if (!planted("store_opens_empty_database"))
    refuseEmptyDatabaseBesideAWal(storeDir, manifest, options.readOnly);
  if (legacyJsonl) legacy = store_detail::readLegacyJsonl(*legacyJsonl);
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
  return manifest;
}

// The SQLite connection: read-only (openReadOnly, never checkpointing on close) or a writer
// (with WAL batching when it syncs every commit). `existedBefore` gets the "-wal" / "-shm" files
// a writer found. NOMUTEX: one thread at a time uses a RuntimeStore (store.h), whose own caches
// are not synchronised either, so a per-connection mutex protects nothing (~2% of a T1+T2 in
// instructions).
void openDatabase(const std::filesystem::path& file, const StoreOptions& options, sqlite3** db,
                  std::filesystem::path& scratch, std::set<std::string_view>& existedBefore) {
  int rc = SQLITE_OK;
  std::error_code ec;
  if (options.readOnly) {
    rc = openReadOnly(file, db, scratch);
    if (*db) sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  } else {
    // A writer that syncs every commit batches its WAL appends (wal_batch_vfs.h), unless the
    // caller turned it off (StoreOptions::walBatching).
    const char* vfs = options.vfs.empty() ? nullptr : options.vfs.c_str();
    if (options.walBatching && (options.synchronous == "FULL" || options.synchronous == "EXTRA")) {
      if (const char* batched = store_detail::walBatchVfsName(options.vfs)) vfs = batched;
    }
    for (const char* suffix : {"-wal", "-shm"}) {
      std::filesystem::path f = file;
      f += suffix;
      if (std::filesystem::exists(f, ec)) existedBefore.insert(suffix);
    }
    rc = sqlite3_open_v2(file.c_str(), db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
  }
  if (rc != SQLITE_OK) {
    std::string m = *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc);
    throw Error(code::store_open_failed, "cannot open " + file.string() + ": " + m);
  }
}

// A read-only open reads exactly the current schema, upgrading nothing.
void requireCurrentSchemaReadOnly(Connection& c, const std::filesystem::path& storeDir,
                                  const std::optional<int64_t>& manifest,
                                  const std::filesystem::path& file) {
  c.execScript("PRAGMA foreign_keys = ON; PRAGMA query_only = ON");
  int64_t v = readUserVersion(c);
  requireManifestSchema(storeDir, manifest, v);
  if (v > kSchemaVersion) throwNewer(v);
  if (v != kSchemaVersion) {
    throw Error(code::schema_version_mismatch, "SQLite runtime schema " + std::to_string(v) +
                                                   " cannot be read without upgrading to version " +
                                                   std::to_string(kSchemaVersion));
  }
  requireSchema(c, file);
  checkCapabilities(c);
}

// Fail closed on a newer schema before anything could modify the file (journal mode switch
// included), and on a database that lost the schema its manifest records, leaving the directory
// as it was: no checkpoint on close (SQLite would fold the -wal into the database and delete it)
// and no -wal / -shm left behind that this open created.
void refuseNewerSchemaUntouched(std::unique_ptr<Connection>& conn, sqlite3*& db,
                                const std::filesystem::path& file,
                                const std::filesystem::path& storeDir,
                                const std::optional<int64_t>& manifest,
                                const std::set<std::string_view>& existedBefore) {
  std::error_code ec;
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  try {
    const int64_t v = readUserVersion(*conn);
    requireManifestSchema(storeDir, manifest, v);
    if (v > kSchemaVersion) throwNewer(v);
  } catch (const Error&) {
    conn.reset();
    sqlite3_close_v2(db);
    db = nullptr;
    for (const char* suffix : {"-wal", "-shm"}) {
      std::filesystem::path f = file;
      f += suffix;
      if (!existedBefore.count(suffix)) std::filesystem::remove(f, ec);
    }
    throw;
  }
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, nullptr);
}

// A writer's connection settings.
void configureWriter(Connection& c, const StoreOptions& options) {
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
}

// A writer's schema up to date, the legacy import done, then the manifest.
void completeWriterOpen(Connection& c, const std::filesystem::path& storeDir,
                        const std::filesystem::path& file, const StoreOptions& options,
                        const std::optional<int64_t>& manifest,
                        const std::filesystem::path* legacyJsonl,
                        const std::vector<store_detail::LegacyLine>& legacy) {
  migrate(c);
  requireSchema(c, file);
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
    view.decodeCacheEvents = options.decodeCacheEvents;
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
  std::vector<store_detail::LegacyLine> legacy;
  const std::optional<int64_t> manifest = checkBeforeOpen(storeDir, options, legacyJsonl, legacy);
  std::set<std::string_view> existedBefore;  // of "-wal", "-shm": what a writer found
  openDatabase(im.file, options, &im.db, im.scratch, existedBefore);
  sqlite3_extended_result_codes(im.db, 1);
  im.conn = std::make_unique<Connection>(im.db);
  Connection& c = *im.conn;
  c.maxDecoded = options.decodeCacheEvents;
  c.execScript("PRAGMA busy_timeout = 5000");
  if (options.readOnly) {
    requireCurrentSchemaReadOnly(c, storeDir, manifest, im.file);
    return s;
  }
  refuseNewerSchemaUntouched(im.conn, im.db, im.file, storeDir, manifest, existedBefore);
  configureWriter(c, options);
  completeWriterOpen(c, storeDir, im.file, options, manifest, legacyJsonl, legacy);
  return s;
}

std::filesystem::path RuntimeStore::path() const { return impl_->file; }
sqlite3* RuntimeStore::handle() const { return impl_->db; }

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
