// store_impl.h — RuntimeStore::Impl, the state of one open store (its directory, the single
// SQLite connection and the mutex every member takes), shared by the files that implement
// RuntimeStore's members: open.cpp creates it, run_headers.cpp, ledger_reads.cpp,
// projections.cpp and self_checks.cpp read through it. Other rooms use store_detail::connectionOf.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>

#include "crashsim/store.h"
#include "store/store_internal.h"

namespace crashsim {

struct RuntimeStore::Impl {
  std::filesystem::path dir, file;
  std::filesystem::path scratch;  // read-only open of a WAL without -shm: the private copy
  StoreOptions options;
  sqlite3* db = nullptr;
  std::unique_ptr<store_detail::Connection> conn;
  mutable std::recursive_mutex mu;
  ~Impl() {
    conn.reset();
    if (db) sqlite3_close_v2(db);
    std::error_code ec;
    if (!scratch.empty()) std::filesystem::remove_all(scratch, ec);
  }
};

}  // namespace crashsim
