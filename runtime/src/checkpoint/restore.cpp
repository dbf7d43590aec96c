// restore.cpp — isolated restore (workspace-continuity-contract.md f.2) and its residue
// quarantine (f.3). The checkpoint is materialised as a locked worktree of the store-owned
// carrier under <store>/workspace/instances/; the user's directory is never read or written here.
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <mutex>
#include <set>

#include "checkpoint/git_cli.h"
#include "checkpoint/refs.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/durable_fs.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "crashsim/workspace.h"
#include "crashsim/workspace_restore.h"
#include "store/store_internal.h"
#include "store/workspace_reads.h"

namespace crashsim {

namespace fs = std::filesystem;
using checkpoint_detail::carrierCall;
using checkpoint_detail::firstLineOf;
using checkpoint_detail::GitCall;
using checkpoint_detail::runGit;
using checkpoint_detail::splitNul;

namespace {

[[noreturn]] void restoreFailed(const std::string& detail, const std::string& message) {
  throw CarrierError(code::checkpoint_restore_failed, detail, message);
}

fs::path canonicalStore(const fs::path& storeDir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(storeDir), ec);
  return ec ? fs::absolute(storeDir).lexically_normal() : p;
}

// fsync(2) of every regular file and directory under `root` (symlinks are not followed), the
// root last.
void fsyncRestoredTree(const fs::path& root) {
  DurableFs& dfs = posixDurableFs();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_symlink()) continue;
    if (e.is_directory())
      dirs.push_back(e.path());
    else if (e.is_regular_file())
      dfs.fsyncFile(e.path());
  }
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) dfs.fsyncDir(*it);
  dfs.fsyncDir(root);
}

// The scanned lineage of the session's workspace, clean (else workspace_fact_corruption).
detail::ScannedLineage scannedLineage(RuntimeStore& store, const std::string& workspaceId) {
  std::lock_guard lk(store_detail::mutexOf(store));
  const detail::WorkspaceScan scan =
      store_detail::scanWorkspaceAuthority(store_detail::connectionOf(store), workspaceId);
  if (!scan.issues.empty())
    throw CarrierError(code::workspace_fact_corruption, "",
                       "the workspace facts do not scan clean: " + scan.issues[0].detail);
  const detail::ScannedLineage* ln = scan.find(workspaceId);
  if (!ln || ln->epochs.empty())
    restoreFailed("no_lineage", "workspace " + workspaceId + " has no epoch to restore from");
  return *ln;
}

// C among the current epoch's accepted checkpoints.
const CheckpointFact& currentCheckpoint(const detail::ScannedLineage& ln,
                                        const std::string& checkpointId) {
  for (const auto& ck : ln.epochs.back().checkpoints)
    if (ck.fact.checkpointId == checkpointId) return ck.fact;
  throw CarrierError(code::workspace_checkpoint_changed, "",
                     "checkpoint " + checkpointId + " is not accepted in the current epoch " +
                         std::to_string(ln.epochs.back().opened.epoch));
}

// Sn at its full high-water: the RC e.7 segment of the source run's whole ledger.
ImmutablePrefix sourceAtHighWater(RuntimeStore& store, const RestoreRequest& req) {
  for (const RunHeader& h : store.listRuns(req.sessionId))
    if (h.runId == req.sourceRunId)
      return readImmutablePrefix(store,
                                 PrefixIdentity{h.sessionId, h.invocationId, h.runId, h.turnId});
  restoreFailed("source_run", "session " + req.sessionId + " has no run " + req.sourceRunId);
}

// c.5 full verification: light, then `cat-file --batch` reads every reachable object whole.
void fullVerifyCheckpoint(const WorkspaceCarrier& carrier, const CheckpointFact& c) {
  lightVerifyCheckpoint(carrier, c);
  auto objects = runGit(
      carrier.git(), carrier.gitHome(),
      carrierCall(carrier, {"rev-list", "--objects", "--no-object-names", c.carrier.commitOid}));
  auto read = runGit(carrier.git(), carrier.gitHome(),
                     carrierCall(carrier, {"cat-file", "--batch"}, objects.out));
  // Each object answers "<oid> <type> <size>\n<content>\n"; a missing one "<oid> missing".
  size_t at = 0, count = 0;
  bool whole = objects.ok && read.ok;
  while (whole && at < read.out.size()) {
    const size_t nl = read.out.find('\n', at);
    if (nl == std::string::npos) {
      whole = false;
      break;
    }
    const std::string header = read.out.substr(at, nl - at);
    const size_t sp = header.rfind(' ');
    if (header.find(" missing") != std::string::npos || sp == std::string::npos) {
      whole = false;
      break;
    }
    const size_t size = std::stoull(header.substr(sp + 1));
    at = nl + 1 + size + 1;
    ++count;
  }
  const size_t listed =
      static_cast<size_t>(std::count(objects.out.begin(), objects.out.end(), '\n'));
  if (!whole || at != read.out.size() || count != listed || listed == 0)
    throw CarrierError(
        code::checkpoint_artifact_corrupt, "full_verify",
        "checkpoint " + c.checkpointId + ": an object it reaches does not read whole");
}

bool treeHasGitlink(const WorkspaceCarrier& carrier, const CheckpointFact& c) {
  auto ls = runGit(carrier.git(), carrier.gitHome(),
                   carrierCall(carrier, {"ls-tree", "-r", "-z", c.carrier.treeOid}));
  if (!ls.ok)
    throw CarrierError(code::checkpoint_artifact_corrupt, "",
                       "tree " + c.carrier.treeOid + " does not list: " + ls.failure);
  for (const auto& rec : splitNul(ls.out))
    if (rec.rfind("160000 ", 0) == 0) return true;
  return false;
}

// A worktree registration as `worktree list --porcelain -z` reports it.
struct Registration {
  fs::path path;
  std::string head;
  bool detached = false;
  std::optional<std::string> locked;  // the reason ("" when locked without one)
};

std::vector<Registration> listRegistrations(const WorkspaceCarrier& carrier) {
  auto r = runGit(carrier.git(), carrier.gitHome(),
                  carrierCall(carrier, {"worktree", "list", "--porcelain", "-z"}));
  if (!r.ok) restoreFailed("worktree_list", r.failure);
  std::vector<Registration> out;
  for (const auto& field : splitNul(r.out)) {
    if (field.rfind("worktree ", 0) == 0) {
      out.emplace_back();
      out.back().path = field.substr(9);
    } else if (out.empty()) {
      continue;
    } else if (field.rfind("HEAD ", 0) == 0) {
      out.back().head = field.substr(5);
    } else if (field == "detached") {
      out.back().detached = true;
    } else if (field == "locked") {
      out.back().locked = "";
    } else if (field.rfind("locked ", 0) == 0) {
      out.back().locked = field.substr(7);
    }
  }
  return out;
}

// R2's durability: the tree, then worktrees/<name>/{HEAD,commondir,gitdir,index,locked} with
// their directory (and the directories that name them).
void makeInstanceDurable(const WorkspaceCarrier& carrier, const RestoredInstanceName& n) {
  fsyncRestoredTree(n.path);
  DurableFs& dfs = posixDurableFs();
  dfs.fsyncDir(n.path.parent_path());
  const fs::path admin = carrier.gitDir() / "worktrees" / n.name;
  for (const char* f : {"HEAD", "commondir", "gitdir", "index", "locked"}) {
    std::error_code ec;
    if (fs::is_regular_file(admin / f, ec)) dfs.fsyncFile(admin / f);
  }
  dfs.fsyncDir(admin);
  dfs.fsyncDir(admin.parent_path());
}

}  // namespace

Json RestoreResult::toJson() const {
  return Json{{"fromEpoch", fromEpoch},
              {"toEpoch", toEpoch},
              {"sourceCheckpointId", sourceCheckpointId},
              {"restoredCheckpointId", restored.checkpointId},
              {"instanceRoot", instanceRoot.string()},
              {"instanceIdentity", instanceIdentity},
              {"created", created}};
}

RestoredInstanceName restoredInstanceName(const fs::path& storeDir, std::string_view workspaceId,
                                          int64_t toEpoch, std::string_view sourceCheckpointId) {
  RestoredInstanceName n;
  n.name = std::string(workspaceId.substr(4)) + "-e" + std::to_string(toEpoch);
  if (!storeDir.empty()) n.path = canonicalStore(storeDir) / "workspace" / "instances" / n.name;
  n.lockReason = "crashsim checkpoint " + std::string(sourceCheckpointId) + " epoch " +
                 std::to_string(toEpoch);
  return n;
}

std::string checkRestoredRegistration(const WorkspaceCarrier& carrier, const fs::path& path,
                                      const std::string& lockReason) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return "instance_missing";
  for (const Registration& reg : listRegistrations(carrier))
    if (reg.path == path) return reg.locked == lockReason ? "" : "instance_unlocked";
  return "instance_missing";
}

void checkRestorePreconditions(RuntimeStore& store, const fs::path& storeDir, const GitRuntime& git,
                               const RestoreRequest& req) {
  const std::string ws = workspaceIdForSession(req.sessionId);
  const detail::ScannedLineage ln = scannedLineage(store, ws);
  const CheckpointFact& c = currentCheckpoint(ln, req.checkpointId);
  const std::optional<WorkspaceCarrier> carrier =
      WorkspaceCarrier::openExisting(canonicalStore(storeDir), git);
  if (!carrier)
    throw CarrierError(code::workspace_carrier_damaged, "",
                       "checkpoint " + c.checkpointId + " names a carrier the store lacks");
  if (treeHasGitlink(*carrier, c))
    restoreFailed("gitlink_not_restorable", "checkpoint " + c.checkpointId +
                                                " holds a submodule, which no restore populates");
  std::string busy;
  {
    std::lock_guard lk(store_detail::mutexOf(store));
    busy = store_detail::workspaceTransitionBusy(store_detail::connectionOf(store), req.sessionId);
  }
  if (!busy.empty()) throw CarrierError(code::workspace_transition_busy, "", busy);
}

RestoreResult isolatedRestore(RuntimeStore& store, const GitRuntime& git,
                              const RestoreRequest& req) {
  const fs::path storeDir = canonicalStore(req.storeDir);
  checkRestorePreconditions(store, storeDir, git, req);
  const std::string ws = workspaceIdForSession(req.sessionId);
  const detail::ScannedLineage ln = scannedLineage(store, ws);
  const detail::ScannedEpoch& epoch = ln.epochs.back();
  const CheckpointFact c = currentCheckpoint(ln, req.checkpointId);
  const WorkspaceCarrier carrier = WorkspaceCarrier::open(storeDir, git, true);
  // R0: full verification; toEpoch, the instance's name, path and lock reason; R.
  fullVerifyCheckpoint(carrier, c);
  RestoreResult out;
  out.fromEpoch = epoch.opened.epoch;
  out.toEpoch = out.fromEpoch + 1;
  out.sourceCheckpointId = c.checkpointId;
  const RestoredInstanceName n = restoredInstanceName(storeDir, ws, out.toEpoch, c.checkpointId);
  const ImmutablePrefix sn = sourceAtHighWater(store, req);
  const Json boundary = sn.segmentJson();
  CheckpointFact r;
  r.kind = "restored";
  r.workspaceId = ws;
  r.epoch = out.toEpoch;
  r.coveredBoundary = boundary;
  r.checkpointId = checkpointIdFor(ws, r.epoch, r.kind, boundary);
  r.carrier = {c.carrier.commitOid, c.carrier.treeOid,
               checkpointRefName(ws, r.epoch, r.checkpointId), git.version, git.binarySha256};
  r.policyVersion = c.policyVersion;
  r.limits = c.limits;
  r.policyHash = c.policyHash;
  r.fileCount = c.fileCount;
  r.totalBytes = c.totalBytes;
  r.derivedFrom = c.checkpointId;
  // R1: a fresh path (residue was quarantined at start-up 2a), registration and lock in one
  // command. Planted bug restore_over_user_directory: the checkpoint is materialised over the
  // user's directory (the source run's workspace) as well — what f.2 forbids (H1).
  struct stat st {};
  if (::lstat(n.path.c_str(), &st) == 0 || fs::exists(carrier.gitDir() / "worktrees" / n.name))
    restoreFailed("instance_path_exists",
                  n.path.string() +
                      " (or its registration) exists: residue is quarantined at "
                      "start-up, never reused");
  fs::create_directories(n.path.parent_path());
  auto add = runGit(git, carrier.gitHome(),
                    carrierCall(carrier, {"worktree", "add", "--detach", "--lock", "--reason",
                                          n.lockReason, n.path.string(), c.carrier.commitOid}));
  if (!add.ok) restoreFailed("worktree_add", add.failure);
  if (planted("restore_over_user_directory")) {
    for (const RunHeader& h : store.listRuns(req.sessionId))
      if (h.runId == req.sourceRunId && h.cwd) {
        GitCall co = carrierCall(carrier, {"checkout", "--force", c.carrier.commitOid, "--", "."});
        co.env.workTree = *h.cwd;
        co.env.indexFile = storeDir / "workspace" / "planted-restore.index";
        runGit(git, carrier.gitHome(), co);
      }
  }
  // R2: registration detached at C's commit, locked with the reason; the c.3 tree of the path
  // under C's policy (in scratch) is C's; then durable [P23].
  bool registered = false;
  for (const Registration& reg : listRegistrations(carrier))
    if (reg.path == n.path) {
      if (!reg.detached || reg.head != c.carrier.commitOid || reg.locked != n.lockReason)
        restoreFailed("registration", n.path.string() +
                                          " is not registered detached at the checkpoint's "
                                          "commit and locked with its reason");
      registered = true;
    }
  if (!registered) restoreFailed("registration", n.path.string() + " is not registered");
  const DriftCheck tree = checkWorkspaceDrift(carrier, n.path, "", c);
  if (!tree.match)
    restoreFailed("tree", n.path.string() + " does not hold checkpoint " + c.checkpointId +
                              "'s tree (" +
                              (tree.detail.empty() ? tree.currentTreeOid : tree.detail) + ")");
  makeInstanceDurable(carrier, n);
  CRASHSIM_FAILPOINT(P23);
  // R3: the marker I′ (the carrier's info/exclude lists it), R's ref create-only, light-verified.
  const WorkspaceIdentity marked = ensureWorkspaceIdentity(n.path);
  out.instanceRoot = marked.root;
  out.instanceIdentity = marked.identity;
  r.instanceIdentity = marked.identity;
  TransitionFact t;
  t.workspaceId = ws;
  t.fromEpoch = out.fromEpoch;
  t.toEpoch = out.toEpoch;
  t.reason = "isolated_restore";
  t.fromInstance = epoch.opened.instance.identity;
  t.toInstance = marked.identity;
  t.boundary = boundary;
  t.sourceCheckpointId = c.checkpointId;
  EpochOpenedFact o;
  o.workspaceId = ws;
  o.sessionId = req.sessionId;
  o.epoch = out.toEpoch;
  o.instance = {marked.identity, marked.root.string(), "restored"};
  o.reason = "isolated_restore";
  o.transitionEventId = workspaceFactEventId(t);
  std::vector<RuntimeEvent> events;
  for (const WorkspaceFact& f : std::vector<WorkspaceFact>{t, o, r})
    events.push_back(workspaceFactEvent(f, req.ts));
  // Planted bug restore_fact_before_ref: the transition commits before R's ref exists (a.3.1).
  std::optional<WorkspaceCommitResult> accepted;
  if (planted("restore_fact_before_ref")) accepted = commitWorkspaceFacts(store, events);
  if (!accepted) {
    checkpoint_detail::createCheckpointRef(carrier, r, code::checkpoint_restore_failed);
    lightVerifyCheckpoint(carrier, r);
    checkpoint_detail::fsyncRefChain(carrier, r.carrier.refName);
  }
  CRASHSIM_FAILPOINT(P24);
  // R4: the transition through the one writer ([P25] inside) [P26].
  if (!accepted) accepted = commitWorkspaceFacts(store, events);
  CRASHSIM_FAILPOINT(P26);
  // R5: post-verify R (the re-plan in the instance is the host's).
  lightVerifyCheckpoint(carrier, r);
  out.restored = std::move(r);
  out.created = accepted->created;
  return out;
}

std::vector<std::string> quarantineRestoreResidue(RuntimeStore& store, const fs::path& storeDir,
                                                  const GitRuntime& git) {
  std::vector<std::string> done;
  const fs::path dir = canonicalStore(storeDir) / "workspace";
  std::error_code ec;
  if (!fs::exists(dir / "carrier.json", ec)) return done;
  std::set<std::string> named;  // canonicalRoot of every epoch_opened fact
  for (const WorkspaceEpochRow& e : listWorkspaceEpochs(store)) named.insert(e.canonicalRoot);
  const fs::path instances = dir / "instances", quarantine = dir / "quarantine",
                 registrations = dir / "carrier.git" / "worktrees";
  // Residue names: `<32 hex>-e<n>` entries of instances/, registrations and pending intents.
  const auto residueName = [](const std::string& s) {
    const size_t dash = s.find("-e");
    return dash == 32 && s.size() > 34 &&
           std::all_of(s.begin(), s.begin() + 32,
                       [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); }) &&
           std::all_of(s.begin() + 34, s.end(),
                       [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
  };
  std::set<std::string> names;
  for (const fs::path& d : {instances, registrations})
    if (fs::is_directory(d, ec))
      for (const auto& e : fs::directory_iterator(d, ec))
        if (residueName(e.path().filename().string())) names.insert(e.path().filename().string());
  if (fs::is_directory(quarantine, ec))
    for (const auto& e : fs::directory_iterator(quarantine, ec)) {
      const std::string f = e.path().filename().string();
      const std::string suffix = ".intent.json";
      if (f.size() > suffix.size() && f.ends_with(suffix))
        names.insert(f.substr(0, f.size() - suffix.size()));
    }
  if (names.empty()) return done;
  const WorkspaceCarrier carrier = WorkspaceCarrier::open(canonicalStore(storeDir), git, true);
  DurableFs& dfs = posixDurableFs();
  fs::create_directories(quarantine);
  for (const std::string& name : names) {
    const fs::path path = instances / name;
    if (named.count(path.string())) continue;  // an instance a fact names is never touched
    // 1: the intent, naming the quarantine slot k (the first free one), written once.
    const fs::path intent = quarantine / (name + ".intent.json");
    fs::path slot;
    if (fs::exists(intent, ec)) {
      std::ifstream in(intent);
      const Json j = Json::parse(in, nullptr, false);
      if (j.is_object() && j.contains("quarantine")) slot = j["quarantine"].get<std::string>();
    }
    if (slot.empty()) {
      int k = 1;
      while (fs::exists(quarantine / (name + "." + std::to_string(k)), ec)) ++k;
      slot = quarantine / (name + "." + std::to_string(k));
      const fs::path tmp = intent.string() + ".tmp";
      fs::remove(tmp, ec);
      const std::string intentBytes =
          stableJson(
              Json{{"name", name}, {"instance", path.string()}, {"quarantine", slot.string()}}) +
          "\n";
      if (!dfs.createFile(tmp, intentBytes, 0644))
        restoreFailed("quarantine_intent", "cannot create " + tmp.string());
      dfs.fsyncFile(tmp);
      dfs.rename(tmp, intent);
      dfs.fsyncDir(quarantine);
    }
    // 2: unlocked (by path while it exists; else the lock file of the registration itself).
    if (fs::exists(registrations / name / "locked", ec)) {
      auto unlock = runGit(git, carrier.gitHome(),
                           carrierCall(carrier, {"worktree", "unlock", path.string()}));
      if (!unlock.ok) fs::remove(registrations / name / "locked", ec);
    }
    // 3: the directory moved into quarantine.
    if (fs::exists(path, ec) || fs::is_symlink(path, ec)) {
      dfs.rename(path, slot);
      dfs.fsyncDir(instances);
      dfs.fsyncDir(quarantine);
    }
    // 4: stale registrations pruned.
    auto prune =
        runGit(git, carrier.gitHome(), carrierCall(carrier, {"worktree", "prune", "--expire=now"}));
    if (!prune.ok) restoreFailed("worktree_prune", prune.failure);
    // 5: the intent deleted.
    fs::remove(intent, ec);
    dfs.fsyncDir(quarantine);
    done.push_back(name);
  }
  return done;
}

}  // namespace crashsim
