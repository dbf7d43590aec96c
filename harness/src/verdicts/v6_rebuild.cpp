// V6: online projections equal the rebuilt ones (verdicts/v6_rebuild.h).
#include "verdicts/v6_rebuild.h"

#include <fmt/format.h>

#include <algorithm>

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// V6 on a copy of the store directory.
void checkV6(const fs::path& copy, Checks& c) {
  auto store = RuntimeStore::open(copy);
  auto ops0 = store->listToolOperations();
  auto j0 = store->listJournal();
  store->rebuildProjections();
  auto ops1 = store->listToolOperations();
  auto j1 = store->listJournal();
  if (ops0 != ops1) {
    std::string detail;
    for (size_t i = 0; i < std::max(ops0.size(), ops1.size()); ++i) {
      if (i >= ops0.size() || i >= ops1.size() || !(ops0[i] == ops1[i])) {
        detail = i < ops0.size() && i < ops1.size()
                     ? fmt::format("operation {}: online state {} v{}, rebuilt {} v{}",
                                   ops0[i].providerToolCallId, ops0[i].currentState,
                                   ops0[i].version, ops1[i].currentState, ops1[i].version)
                     : fmt::format("{} online operations, {} rebuilt", ops0.size(), ops1.size());
        break;
      }
    }
    c.fail("V6", "rebuilt tool_operations differ from the online projection: " + detail);
    return;
  }
  if (j0 != j1) {
    c.fail("V6", fmt::format("rebuilt tool_journal_events differ ({} online rows, {} rebuilt)",
                             j0.size(), j1.size()));
    return;
  }
  c.pass("V6");
}

}  // namespace crashsim::harness
