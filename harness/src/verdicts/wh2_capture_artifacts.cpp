// WH2: table W's checkpoints and their artifacts (wh2_capture_artifacts.h).
#include "verdicts/wh2_capture_artifacts.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"
#include "verdicts/system_git.h"

namespace crashsim::harness::wh2 {
namespace fs = std::filesystem;

namespace {

using verdict_detail::carrierGit;
using verdict_detail::shellQuote;

}  // namespace

std::string captureArtifactProblem(const fs::path& store, std::optional<int> expected) {
  std::vector<WorkspaceCheckpointRow> rows;
  try {
    StoreOptions ro;
    ro.readOnly = true;
    rows = listWorkspaceCheckpoints(*RuntimeStore::open(store, ro));
  } catch (const std::exception& e) {
    return std::string("the store's checkpoints cannot be read: ") + e.what();
  }
  if (expected && static_cast<int>(rows.size()) != *expected)
    return fmt::format("table W: {} accepted checkpoint(s), expected {}", rows.size(), *expected);
  const fs::path carrier = store / "workspace" / "carrier.git";
  for (const auto& c : rows) {
    const auto ref = carrierGit(carrier, "rev-parse --verify -q " + shellQuote(c.refName));
    if (!ref.first || ref.second != c.commitOid)
      return fmt::format("checkpoint {}: its ref {} is {} (fact without its artifact)",
                         c.checkpointId, c.refName, ref.first ? ref.second : "missing");
    const auto tree =
        carrierGit(carrier, "rev-parse --verify -q " + shellQuote(c.commitOid + "^{tree}"));
    if (!tree.first || tree.second != c.treeOid)
      return fmt::format("checkpoint {}: commit {} has no tree {}", c.checkpointId, c.commitOid,
                         c.treeOid);
    const auto objects =
        carrierGit(carrier, "rev-list --objects --missing=error " + shellQuote(c.commitOid));
    if (!objects.first)
      return fmt::format("checkpoint {}: an object reachable from {} is missing", c.checkpointId,
                         c.commitOid);
  }
  return "";
}

}  // namespace crashsim::harness::wh2
