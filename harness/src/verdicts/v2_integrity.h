// verdicts/v2_integrity.h — V2: the store is intact after the kill.
//
// Proves: the crashed store (and the store a killed recovery left) opens, and SQLite finds
// nothing wrong in it — `PRAGMA integrity_check` (B-trees, indexes, page accounting) and
// `PRAGMA foreign_key_check` (projection rows pointing at ledger events that do not exist) —
// read with plain SQLite, read-only, outside the runtime. Cannot see: damage SQLite cannot
// detect, and CHECK-constraint violations (SQLite 3.40's integrity_check does not report them).
//
// Under --mode powerloss the crash state is what the disk kept, not what the page cache held: it
// may hold a hot rollback journal (a power cut at the first COMMIT barrier of a store being
// created can revert the unlink of the journal of its switch to WAL), which SQLite lets only a
// writer roll back. When such a journal is there, V2 judges a copy opened read-write, as the
// runtime's first open would (observed::integrityAsFirstWriter); the crashed files themselves are
// never written. Without one V2 reads the store read-only, as for a kill.
#pragma once

#include <filesystem>
#include <string>

#include "verdicts/verdict.h"

namespace crashsim::harness {

// V2 on the store directory; `when` prefixes the reason ("after the recovery kill: ").
// firstWriterScratch: non-empty under power loss — where a hot journal is judged (see above).
void checkIntegrity(const std::filesystem::path& storeDir, const std::string& when, Checks& c,
                    const std::filesystem::path& firstWriterScratch = {});

}  // namespace crashsim::harness
