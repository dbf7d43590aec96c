// V2: integrity of the store, read by plain SQLite (verdicts/v2_integrity.h).
#include "verdicts/v2_integrity.h"

#include "verdicts/observed_store.h"

namespace crashsim::harness {

void checkIntegrity(const std::filesystem::path& storeDir, const std::string& when, Checks& c,
                    const std::filesystem::path& firstWriterScratch) {
  // A rollback journal beside the database after a power cut is hot: only a writer may roll it
  // back, so V2 reads a copy as the first writer would. Otherwise the read-only reading, as for a
  // kill.
  std::error_code ec;
  const auto journal = storeDir / "runtime.sqlite-journal";
  const bool hotJournal = !firstWriterScratch.empty() && std::filesystem::exists(journal, ec) &&
                          std::filesystem::file_size(journal, ec) > 0;
  const std::string r = hotJournal ? observed::integrityAsFirstWriter(storeDir, firstWriterScratch)
                                   : observed::integrity(storeDir);
  if (r != "ok")
    c.fail("V2", when + r);
  else if (!c.failed("V2"))
    c.pass("V2");
}

}  // namespace crashsim::harness
