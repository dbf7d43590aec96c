// refs.cpp — a checkpoint's ref, create-only and durable (contract d.2 step 7, f.2 R3).
#include "checkpoint/refs.h"

#include "checkpoint/git_cli.h"
#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"

namespace crashsim::checkpoint_detail {

namespace fs = std::filesystem;

void fsyncRefChain(const WorkspaceCarrier& carrier, const std::string& refName) {
  const fs::path refs = carrier.gitDir() / "refs";
  for (fs::path dir = (carrier.gitDir() / refName).parent_path();; dir = dir.parent_path()) {
    posixDurableFs().fsyncDir(dir);
    if (dir == refs || dir == carrier.gitDir()) break;
  }
}

bool deleteCheckpointRef(const WorkspaceCarrier& carrier, const std::string& refName,
                         const std::string& oid) {
  if (!runGit(carrier.git(), carrier.gitHome(),
              carrierCall(carrier, {"update-ref", "-d", refName, oid}))
           .ok)
    return false;
  // git removes the deleted ref's empty parent directories: fsync the nearest one left.
  const fs::path refs = carrier.gitDir() / "refs";
  std::error_code ec;
  for (fs::path dir = (carrier.gitDir() / refName).parent_path();; dir = dir.parent_path()) {
    if (fs::is_directory(dir, ec)) posixDurableFs().fsyncDir(dir);
    if (dir == refs || dir == carrier.gitDir() || !dir.has_parent_path()) break;
  }
  return true;
}

void createCheckpointRef(const WorkspaceCarrier& carrier, const CheckpointFact& c,
                         std::string_view failureCode) {
  const std::string zeros(40, '0');
  const GitEnv env{carrier.gitDir(), {}, {}, {}, {}};
  GitCall create;
  create.args = {"update-ref", "--no-deref", c.carrier.refName, c.carrier.commitOid, zeros};
  create.env = env;
  auto r = runGit(carrier.git(), carrier.gitHome(), create);
  if (r.ok) return;
  GitCall read;
  read.args = {"rev-parse", "--verify", "-q", c.carrier.refName};
  read.env = env;
  auto existing = runGit(carrier.git(), carrier.gitHome(), read);
  if (existing.ok && firstLineOf(existing.out) == c.carrier.commitOid) return;  // exact retry
  if (existing.ok)
    throw CarrierError(code::workspace_fact_conflict, "",
                       c.carrier.refName + " exists at " + firstLineOf(existing.out) + ", not at " +
                           c.carrier.commitOid + "; it is never overwritten");
  throw CarrierError(failureCode, "", r.failure);
}

}  // namespace crashsim::checkpoint_detail
