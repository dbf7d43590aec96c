// V2: integrity of the store, read by plain SQLite (verdicts/v2_integrity.h).
#include "verdicts/v2_integrity.h"

#include "verdicts/observed_store.h"

namespace crashsim::harness {

void checkIntegrity(const std::filesystem::path& storeDir, const std::string& when, Checks& c,
                    const std::filesystem::path& firstWriterScratch) {
  const std::string r = firstWriterScratch.empty()
                            ? observed::integrity(storeDir)
                            : observed::integrityAsFirstWriter(storeDir, firstWriterScratch);
  if (r != "ok")
    c.fail("V2", when + r);
  else if (!c.failed("V2"))
    c.pass("V2");
}

}  // namespace crashsim::harness
