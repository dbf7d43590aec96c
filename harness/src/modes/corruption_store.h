// modes/corruption_store.h — what the corruption injector's parts share: the seeded choices and
// a plain SQLite connection to the crashed store (as someone with the sqlite3 shell would make
// it); the ledger edits (modes/ledger_edits.cpp).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "crashsim/harness/corruption_injector.h"

namespace crashsim::harness {

// splitmix64: a portable stream of choices from the seed (std distributions are not portable).
struct Choices {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n == 0 ? 0 : next() % n; }
};

// A read-write connection to the crashed store for row damage (as someone with the sqlite3
// shell would make it).
struct Db {
  sqlite3* db = nullptr;
  explicit Db(const std::filesystem::path& file) {
    if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
      std::string m = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close_v2(db);
      throw std::runtime_error("cannot open " + file.string() + ": " + m);
    }
    sqlite3_busy_timeout(db, 5000);
  }
  ~Db() { sqlite3_close_v2(db); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(sql.substr(0, 60) + ": " + m);
    }
  }
  // Each row's columns as text.
  std::vector<std::vector<std::string>> rows(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw std::runtime_error(sql.substr(0, 60) + ": " + sqlite3_errmsg(db));
    std::vector<std::vector<std::string>> out;
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::vector<std::string> r;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        const auto* t = sqlite3_column_text(st, i);
        r.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(r));
    }
    sqlite3_finalize(st);
    return out;
  }
};

inline std::string sqlQuoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Applies one ledger edit of `kind` (call_delete, dispatch_delete, response_delete,
// call_args_change, marker_delete) to an operation (or run) chosen by `ch`, and records in `a`
// the contract's decision for every operation it touched.
void editLedger(Db& d, const std::string& kind, Choices& ch, AppliedCorruption& a);

}  // namespace crashsim::harness
