// Read-only raw SQLite readers of a store directory (observed_store.h).
#include "verdicts/observed_store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <memory>
#include <stdexcept>

#include "crashsim/reports/report.h"

namespace crashsim::harness::observed {
namespace fs = std::filesystem;

struct ReadScope::Shared {
  fs::path storeDir;
  sqlite3* db = nullptr;  // opened at the scope's first read
  Shared* outer = nullptr;
};

namespace {

void closeOwned(sqlite3* db) { sqlite3_close(db); }
void keepShared(sqlite3*) {}
using Db = std::unique_ptr<sqlite3, void (*)(sqlite3*)>;
using Stmt = std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)>;

Db openOwned(const fs::path& storeDir) {
  sqlite3* raw = nullptr;
  const auto file = storeDir / "runtime.sqlite";
  if (!fs::exists(file)) throw std::runtime_error("no runtime.sqlite in " + storeDir.string());
  int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Db db(raw, &closeOwned);
  if (rc != SQLITE_OK)
    throw std::runtime_error(fmt::format("open {} read-only: {}", file.string(),
                                         raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  return db;
}

// The innermost ReadScope of this thread.
thread_local ReadScope::Shared* tShared = nullptr;

// The scope's connection when one covers storeDir, else a connection of the caller's own.
Db openReadOnly(const fs::path& storeDir) {
  if (tShared == nullptr || tShared->storeDir != storeDir) return openOwned(storeDir);
  if (tShared->db == nullptr) tShared->db = openOwned(storeDir).release();
  return Db(tShared->db, &keepShared);
}

Stmt prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
    throw std::runtime_error(fmt::format("{}: {}", sql, sqlite3_errmsg(db)));
  return Stmt(raw, &sqlite3_finalize);
}

std::string column(sqlite3_stmt* s, int i) {
  switch (sqlite3_column_type(s, i)) {
    case SQLITE_NULL:
      return "N";
    case SQLITE_INTEGER:
      return fmt::format("I{}", sqlite3_column_int64(s, i));
    case SQLITE_FLOAT:
      return fmt::format("F{:a}", sqlite3_column_double(s, i));
    default: {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(s, i));
      int n = sqlite3_column_bytes(s, i);
      return fmt::format("B{}:", n) + std::string(p ? p : "", static_cast<size_t>(n));
    }
  }
}

}  // namespace

ReadScope::ReadScope(fs::path storeDir)
    : shared_(std::make_unique<Shared>(Shared{std::move(storeDir), nullptr, tShared})) {
  tShared = shared_.get();
}

ReadScope::~ReadScope() {
  tShared = shared_->outer;
  if (shared_->db != nullptr) sqlite3_close(shared_->db);
}

std::map<std::string, std::string> tableDigests(const fs::path& storeDir) {
  Db db = openReadOnly(storeDir);
  std::vector<std::pair<std::string, bool>> tables;  // name, WITHOUT ROWID
  {
    Stmt s =
        prepare(db.get(), "SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name");
    while (sqlite3_step(s.get()) == SQLITE_ROW) {
      std::string name = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
      const auto* sqlText = sqlite3_column_text(s.get(), 1);
      std::string sql = sqlText ? reinterpret_cast<const char*>(sqlText) : "";
      tables.push_back({name, sql.find("WITHOUT ROWID") != std::string::npos});
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [name, withoutRowid] : tables) {
    // Every row, every column; rowid order (primary-key order for WITHOUT ROWID tables).
    Stmt s = prepare(db.get(), fmt::format("SELECT * FROM \"{}\"{}", name,
                                           withoutRowid ? "" : " ORDER BY rowid"));
    std::vector<std::string> rows;
    const int n = sqlite3_column_count(s.get());
    int rc;
    while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < n; ++i) row += column(s.get(), i) + "|";
      rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE)
      throw std::runtime_error(fmt::format("read table {}: {}", name, sqlite3_errmsg(db.get())));
    out[name] = reports::manifestDigest(rows) + fmt::format("/{}", rows.size());
  }
  return out;
}

std::string firstChangedTable(const std::map<std::string, std::string>& before,
                              const std::map<std::string, std::string>& after) {
  for (const auto& [name, digest] : before) {
    auto it = after.find(name);
    if (it == after.end()) return name + " (dropped)";
    if (it->second != digest) return name;
  }
  for (const auto& [name, digest] : after)
    if (!before.count(name)) return name + " (created)";
  return "";
}

std::vector<ClaimRow> claims(const fs::path& storeDir) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(),
                   "SELECT claim_id, source_run_id, target_run_id, start_event_id, start_kind FROM "
                   "runtime_continuation_claims ORDER BY claimed_at, claim_id");
  std::vector<ClaimRow> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    ClaimRow r;
    r.claimId = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
    r.sourceRunId = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 1));
    r.targetRunId = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 2));
    if (sqlite3_column_type(s.get(), 3) != SQLITE_NULL)
      r.startEventId = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 3));
    if (sqlite3_column_type(s.get(), 4) != SQLITE_NULL)
      r.startKind = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 4));
    out.push_back(std::move(r));
  }
  return out;
}

namespace {
std::string integrityOf(Db db) {
  try {
    std::string out;
    for (const char* sql : {"PRAGMA integrity_check", "PRAGMA foreign_key_check"}) {
      Stmt s = prepare(db.get(), sql);
      int rc;
      while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
        // Appends, not operator+ chains: GCC 12 at -O3 reports a false -Wrestrict for those.
        std::string row;
        for (int i = 0; i < sqlite3_column_count(s.get()); ++i) {
          const auto* t = sqlite3_column_text(s.get(), i);
          if (i > 0) row.append(" ");
          row.append(t ? reinterpret_cast<const char*>(t) : "NULL");
        }
        if (row == "ok") continue;
        out.append(out.empty() ? "" : "; ").append(sql).append(": ").append(row);
      }
      if (rc != SQLITE_DONE)
        out.append(out.empty() ? "" : "; ")
            .append(sql)
            .append(": ")
            .append(sqlite3_errmsg(db.get()));
    }
    return out.empty() ? "ok" : out;
  } catch (const std::exception& e) {
    return e.what();
  }
}
}  // namespace

std::string integrity(const fs::path& storeDir) {
  try {
    return integrityOf(openReadOnly(storeDir));
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string integrityAsFirstWriter(const fs::path& storeDir, const fs::path& scratch) {
  std::error_code ec;
  fs::remove_all(scratch, ec);
  std::string out;
  try {
    fs::create_directories(scratch);
    const auto file = storeDir / "runtime.sqlite";
    if (!fs::exists(file)) throw std::runtime_error("no runtime.sqlite in " + storeDir.string());
    for (const char* name : {"runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-journal"})
      if (fs::exists(storeDir / name)) fs::copy_file(storeDir / name, scratch / name);
    sqlite3* raw = nullptr;
    const auto copy = scratch / "runtime.sqlite";
    int rc = sqlite3_open_v2(copy.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
    Db db(raw, &closeOwned);
    if (rc != SQLITE_OK)
      throw std::runtime_error(fmt::format("open a copy of {} read-write: {}", file.string(),
                                           raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
    out = integrityOf(std::move(db));
  } catch (const std::exception& e) {
    out = e.what();
  }
  fs::remove_all(scratch, ec);
  return out;
}

int eventsOfRun(const fs::path& storeDir, const std::string& runId) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(), "SELECT count(*) FROM runtime_events WHERE run_id = ?1");
  sqlite3_bind_text(s.get(), 1, runId.c_str(), -1, SQLITE_TRANSIENT);
  return sqlite3_step(s.get()) == SQLITE_ROW ? sqlite3_column_int(s.get(), 0) : -1;
}

namespace {
std::string text(sqlite3_stmt* s, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return p ? std::string(p) : std::string();
}

// The rows of a `SELECT event_seq, event_id, committed_at, payload_json …` statement.
std::vector<EventRow> eventRowsOf(sqlite3_stmt* s) {
  std::vector<EventRow> out;
  while (sqlite3_step(s) == SQLITE_ROW) {
    EventRow r;
    r.seq = sqlite3_column_int64(s, 0);
    r.eventId = text(s, 1);
    r.committedAt = sqlite3_column_double(s, 2);
    r.payload = nlohmann::json::parse(text(s, 3), nullptr, false);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<EventRow> runEvents(const fs::path& storeDir, const std::string& runId) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(),
                   "SELECT event_seq, event_id, committed_at, payload_json FROM runtime_events "
                   "WHERE run_id = ?1 ORDER BY event_seq");
  sqlite3_bind_text(s.get(), 1, runId.c_str(), -1, SQLITE_TRANSIENT);
  return eventRowsOf(s.get());
}

std::vector<std::string> eventRunIds(const fs::path& storeDir) {
  Db db = openReadOnly(storeDir);
  Stmt s =
      // The workspace authority stream (Phase 4, contract b.1) is the store's, not a run's.
      prepare(db.get(),
              "SELECT run_id FROM runtime_events WHERE session_id <> 'maka_workspace_authority' "
              "GROUP BY run_id ORDER BY min(rowid)");
  std::vector<std::string> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) out.push_back(text(s.get(), 0));
  return out;
}

std::vector<RunRow> runs(const fs::path& storeDir) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(),
                   "SELECT session_id, run_id, turn_id, status, header_json FROM agent_runs ORDER "
                   "BY rowid");
  std::vector<RunRow> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW)
    out.push_back({text(s.get(), 0), text(s.get(), 1), text(s.get(), 2), text(s.get(), 3),
                   nlohmann::json::parse(text(s.get(), 4), nullptr, false)});
  return out;
}

std::vector<FinalizeRow> turnFinalizeRows(const fs::path& storeDir) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(),
                   "SELECT operation_id, run_id, terminal_event_id, event_count FROM "
                   "runtime_turn_finalize ORDER BY rowid");
  std::vector<FinalizeRow> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW)
    out.push_back(
        {text(s.get(), 0), text(s.get(), 1), text(s.get(), 2), sqlite3_column_int64(s.get(), 3)});
  return out;
}

std::vector<EventRow> prefixRows(const fs::path& storeDir, const std::string& sessionId,
                                 const std::string& runId) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(),
                   "SELECT event_seq, event_id, committed_at, payload_json FROM runtime_events "
                   "WHERE session_id = ?1 AND run_id = ?2 ORDER BY event_seq");
  sqlite3_bind_text(s.get(), 1, sessionId.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s.get(), 2, runId.c_str(), -1, SQLITE_TRANSIENT);
  return eventRowsOf(s.get());
}

std::vector<ClaimBoundaryRow> claimBoundaries(const fs::path& storeDir) {
  Db db = openReadOnly(storeDir);
  Stmt s = prepare(db.get(),
                   "SELECT claim_id, source_session_id, source_run_id, source_event_high_water, "
                   "source_prefix_digest, boundary_digest, boundary_json, target_run_header_json, "
                   "start_kind FROM runtime_continuation_claims ORDER BY claimed_at, claim_id");
  std::vector<ClaimBoundaryRow> out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    ClaimBoundaryRow r;
    r.claimId = text(s.get(), 0);
    r.sourceSessionId = text(s.get(), 1);
    r.sourceRunId = text(s.get(), 2);
    r.sourceEventHighWater = sqlite3_column_int64(s.get(), 3);
    r.sourcePrefixDigest = text(s.get(), 4);
    r.boundaryDigest = text(s.get(), 5);
    r.boundary = nlohmann::json::parse(text(s.get(), 6), nullptr, false);
    r.targetRunHeader = nlohmann::json::parse(text(s.get(), 7), nullptr, false);
    if (sqlite3_column_type(s.get(), 8) != SQLITE_NULL) r.startKind = text(s.get(), 8);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace crashsim::harness::observed
