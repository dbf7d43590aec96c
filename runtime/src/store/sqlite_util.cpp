// sqlite_util.cpp — statement cache, immediate transactions and error mapping for the store.
#include <chrono>
#include <string>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

void throwSqlite(sqlite3* db, int rc, std::string_view what) {
  const int primary = rc & 0xff;
  std::string msg = std::string(what) + ": " + sqlite3_errstr(rc);
  if (db != nullptr && sqlite3_errmsg(db) != nullptr)
    msg += " (" + std::string(sqlite3_errmsg(db)) + ")";
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) throw Error(code::store_corrupt, msg);
  throw Error(code::sqlite_error, msg);
}

Stmt::~Stmt() {
  if (stmt_ == nullptr) return;
  if (owned_) {
    sqlite3_finalize(stmt_);
  } else {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Stmt& Stmt::bind(int idx, std::string_view v) {
  int rc = sqlite3_bind_text(stmt_, idx, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) throwSqlite(db_, rc, "bind");
  return *this;
}
Stmt& Stmt::bindRef(int idx, std::string_view v) {
  int rc = sqlite3_bind_text(stmt_, idx, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
  if (rc != SQLITE_OK) throwSqlite(db_, rc, "bind");
  return *this;
}
Stmt& Stmt::bind(int idx, int64_t v) {
  int rc = sqlite3_bind_int64(stmt_, idx, v);
  if (rc != SQLITE_OK) throwSqlite(db_, rc, "bind");
  return *this;
}
Stmt& Stmt::bind(int idx, double v) {
  int rc = sqlite3_bind_double(stmt_, idx, v);
  if (rc != SQLITE_OK) throwSqlite(db_, rc, "bind");
  return *this;
}
Stmt& Stmt::bindNull(int idx) {
  int rc = sqlite3_bind_null(stmt_, idx);
  if (rc != SQLITE_OK) throwSqlite(db_, rc, "bind");
  return *this;
}
bool Stmt::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throwSqlite(db_, rc, "step");
}
void Stmt::exec() {
  while (step()) {
  }
}
std::string Stmt::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  if (p == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}
std::string_view Stmt::textView(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  int n = sqlite3_column_bytes(stmt_, col);
  if (p == nullptr) return {};
  return std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}
std::optional<std::string> Stmt::optText(int col) const {
  if (isNull(col)) return std::nullopt;
  return text(col);
}
int64_t Stmt::int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::real(int col) const { return sqlite3_column_double(stmt_, col); }
bool Stmt::isNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

Connection::~Connection() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  cache_.clear();
}

Stmt Connection::prepare(std::string_view sql) {
  auto it = cache_.find(sql);
  if (it != cache_.end()) return Stmt(db_, it->second);
  std::string key(sql);
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, key.c_str(), static_cast<int>(key.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) throwSqlite(db_, rc, "prepare");
  cache_.emplace(std::move(key), stmt);
  return Stmt(db_, stmt);
}

void Connection::execScript(std::string_view sql) {
  std::string s(sql);
  char* err = nullptr;
  int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string m = err ? err : "";
    sqlite3_free(err);
    throwSqlite(db_, rc, "exec " + m);
  }
}

ImmediateTx::ImmediateTx(Connection& conn) : conn_(conn) {
  conn_.prepare("BEGIN IMMEDIATE").exec();
  conn_.pendingInserts.clear();
  conn_.txNextSeq.reset();
  conn_.invocation.pendingFrom = 0;
  conn_.txBeginChanges = sqlite3_total_changes64(conn_.db());
}

ImmediateTx::~ImmediateTx() {
  if (!done_) {
    if (sqlite3_get_autocommit(conn_.db()) == 0) {
      sqlite3_exec(conn_.db(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    // Caches refreshed inside the transaction may hold what the rollback undid.
    conn_.health.valid = false;
    conn_.invocation.valid = false;
  }
  conn_.pendingInserts.clear();
  conn_.txNextSeq.reset();
}

void ImmediateTx::commit() {
  // Barrier S (instrumented build): a crash point nobody named, just before every store COMMIT;
  // a kill here loses this transaction and keeps every earlier one.
  CRASHSIM_BARRIER(S);
  conn_.prepare("COMMIT").exec();
  done_ = true;
  // Every runtime_events insert of an ImmediateTx went through the checked writers, which keep
  // a healthy ledger healthy: a cache that was current when this transaction began (or was
  // refreshed inside it) stays valid across our own commit.
  const int64_t now = sqlite3_total_changes64(conn_.db());
  if (conn_.health.valid && conn_.health.totalChanges >= conn_.txBeginChanges) {
    conn_.health.totalChanges = now;
  } else {
    conn_.health.valid = false;
  }
  auto& inv = conn_.invocation;
  if (inv.valid && inv.totalChanges >= conn_.txBeginChanges) {
    for (size_t i = inv.pendingFrom; i < conn_.pendingInserts.size(); ++i) {
      auto& [seq, e] = conn_.pendingInserts[i];
      if (e.invocationId == inv.invocationId) {
        inv.events.push_back(std::move(e));
        inv.nextSeq = seq + 1;
      }
    }
    inv.totalChanges = now;
  } else {
    inv.valid = false;
  }
  conn_.pendingInserts.clear();
  conn_.txNextSeq.reset();
}

double nowMs() {
  using namespace std::chrono;
  return static_cast<double>(
      duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

}  // namespace crashsim::store_detail
