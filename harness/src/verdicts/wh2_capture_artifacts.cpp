// WH2: table W's checkpoints and their artifacts (wh2_capture_artifacts.h).
#include "verdicts/wh2_capture_artifacts.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"

namespace crashsim::harness::wh2 {
namespace fs = std::filesystem;

namespace {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The system git on the carrier, without any user or system configuration; stdout, and whether
// it exited 0.
std::pair<bool, std::string> git(const fs::path& carrier, const std::string& args) {
  const std::string cmd =
      "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent "
      "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git --git-dir=" +
      shellQuote(carrier.string()) + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  if (!p) return {false, ""};
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
  const int rc = ::pclose(p.release());
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return {rc == 0, out};
}

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
    const auto ref = git(carrier, "rev-parse --verify -q " + shellQuote(c.refName));
    if (!ref.first || ref.second != c.commitOid)
      return fmt::format("checkpoint {}: its ref {} is {} (fact without its artifact)",
                         c.checkpointId, c.refName, ref.first ? ref.second : "missing");
    const auto tree = git(carrier, "rev-parse --verify -q " + shellQuote(c.commitOid + "^{tree}"));
    if (!tree.first || tree.second != c.treeOid)
      return fmt::format("checkpoint {}: commit {} has no tree {}", c.checkpointId, c.commitOid,
                         c.treeOid);
    const auto objects =
        git(carrier, "rev-list --objects --missing=error " + shellQuote(c.commitOid));
    if (!objects.first)
      return fmt::format("checkpoint {}: an object reachable from {} is missing", c.checkpointId,
                         c.commitOid);
  }
  return "";
}

}  // namespace crashsim::harness::wh2
