// verdicts/v2_integrity.h — V2: the store is intact after the kill.
//
// Proves: the crashed store (and the store a killed recovery left) opens, and SQLite finds
// nothing wrong in it — `PRAGMA integrity_check` (B-trees, indexes, page accounting) and
// `PRAGMA foreign_key_check` (projection rows pointing at ledger events that do not exist) —
// read with plain SQLite, read-only, outside the runtime. Cannot see: damage SQLite cannot
// detect, and CHECK-constraint violations (SQLite 3.40's integrity_check does not report them).
#pragma once

#include <filesystem>
#include <string>

#include "verdicts/verdict.h"

namespace crashsim::harness {

// V2 on the store directory; `when` prefixes the reason ("after the recovery kill: ").
void checkIntegrity(const std::filesystem::path& storeDir, const std::string& when, Checks& c);

}  // namespace crashsim::harness
