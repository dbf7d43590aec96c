// verdicts/observed_store.h — what a store directory holds, read by the harness itself.
//
// The verdicts compare the code under test with the contract; reading the store through the
// runtime's own RuntimeStore would let a store bug hide itself. These readers open
// runtime.sqlite read-only with plain SQLite (no runtime code), never write, and never
// checkpoint. They serve the checks that must see every table (V5, V7), the store's integrity
// (V2) and the durable claim state of a killed recovery (double faults at P11).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace crashsim::harness::observed {

// Table name → digest of every row of it (all columns, in primary-key/rowid order), for every
// table in sqlite_schema. Throws std::runtime_error when the database cannot be read.
std::map<std::string, std::string> tableDigests(const std::filesystem::path& storeDir);

// The first table whose digest differs between two tableDigests results ("" when none).
std::string firstChangedTable(const std::map<std::string, std::string>& before,
                              const std::map<std::string, std::string>& after);

struct ClaimRow {
  std::string claimId, sourceRunId, targetRunId;
  std::optional<std::string> startEventId;  // absent: claimed, continuation-start not committed
};
std::vector<ClaimRow> claims(const std::filesystem::path& storeDir);

// "ok", or what `PRAGMA integrity_check` and `PRAGMA foreign_key_check` report (one line each,
// joined by "; "), or why the database cannot be opened or read at all.
std::string integrity(const std::filesystem::path& storeDir);

// Number of runtime_events rows of a run (any session).
int eventsOfRun(const std::filesystem::path& storeDir, const std::string& runId);

}  // namespace crashsim::harness::observed
