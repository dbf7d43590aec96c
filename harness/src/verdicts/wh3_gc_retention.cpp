// WH3: the carrier GC's retention (wh3_gc_retention.h).
#include "verdicts/wh3_gc_retention.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <set>
#include <sstream>

#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"
#include "verdicts/system_git.h"

namespace crashsim::harness::wh3 {
namespace fs = std::filesystem;

using verdict_detail::carrierGit;
using verdict_detail::shellQuote;

std::string gcRetentionProblem(const fs::path& store, bool noOrphans) {
  std::vector<WorkspaceCheckpointRow> rows;
  try {
    StoreOptions ro;
    ro.readOnly = true;
    rows = listWorkspaceCheckpoints(*RuntimeStore::open(store, ro));
  } catch (const std::exception& e) {
    return std::string("the store's checkpoints cannot be read: ") + e.what();
  }
  const fs::path carrier = store / "workspace" / "carrier.git";
  std::set<std::string> named;
  for (const auto& c : rows) {
    named.insert(c.refName);
    const auto ref = carrierGit(carrier, "rev-parse --verify -q " + shellQuote(c.refName));
    if (!ref.first || ref.second != c.commitOid)
      return fmt::format("h.1: checkpoint {}'s ref {} is {} after GC (want {})", c.checkpointId,
                         c.refName, ref.first ? ref.second : "deleted", c.commitOid);
    if (!carrierGit(carrier, "cat-file -e " + shellQuote(c.commitOid + "^{commit}")).first)
      return fmt::format("h.1: checkpoint {}'s commit {} is gone after GC", c.checkpointId,
                         c.commitOid);
  }
  if (!noOrphans) return "";
  const auto refs =
      carrierGit(carrier, "for-each-ref --format='%(refname)' refs/crashsim/checkpoints/");
  if (!refs.first) return "h.2: the carrier's refs cannot be listed";
  std::istringstream in(refs.second);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && !named.count(line))
      return fmt::format("h.2: the orphan ref {} survived a GC with orphanGraceMs 0", line);
  return "";
}

}  // namespace crashsim::harness::wh3
