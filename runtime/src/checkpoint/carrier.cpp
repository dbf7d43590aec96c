// carrier.cpp — the carrier repository (workspace-continuity-contract.md c.1), snapshot policy v1
// and eligibility (c.3, c.4) and light verification (c.5).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "checkpoint/git_cli.h"
#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "crashsim/workspace.h"
#include "crashsim/workspace_carrier.h"

namespace crashsim {

namespace fs = std::filesystem;
using checkpoint_detail::firstLineOf;
using checkpoint_detail::GitCall;
using checkpoint_detail::GitEnv;
using checkpoint_detail::gitOk;
using checkpoint_detail::runGit;
using checkpoint_detail::splitNul;

namespace {

constexpr std::string_view kCarrierJson =
    "{\"format\":\"crashsim-workspace-carrier\",\"version\":1,\"objectFormat\":\"sha1\"}\n";
constexpr std::string_view kCarrierExclude = "/.maka-workspace.json\n";

[[noreturn]] void damaged(const std::string& what) {
  throw CarrierError(code::workspace_carrier_damaged, "", what);
}

std::string readSmallFile(const fs::path& p, size_t max = 4096) {
  std::string out;
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && out.size() <= max)
    out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

// fsync(2) of every file and directory under `root`, the root last.
void fsyncTree(const fs::path& root) {
  DurableFs& dfs = posixDurableFs();
  std::vector<fs::path> dirs;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_symlink()) continue;
    if (e.is_directory()) {
      dirs.push_back(e.path());
    } else if (e.is_regular_file()) {
      dfs.fsyncFile(e.path());
    }
  }
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) dfs.fsyncDir(*it);
  dfs.fsyncDir(root);
}

void writeDurably(const fs::path& file, std::string_view bytes) {
  DurableFs& dfs = posixDurableFs();
  const fs::path tmp = file.string() + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove(tmp, ec);
  if (!dfs.createFile(tmp, bytes, 0644)) damaged("cannot create " + tmp.string());
  dfs.fsyncFile(tmp);
  dfs.rename(tmp, file);
  dfs.fsyncDir(file.parent_path());
}

// The private git-home (c.1): empty gitconfig, attributes and ignore, empty hooks/ and template/.
void ensureGitHome(const fs::path& home) {
  fs::create_directories(home / "hooks");
  fs::create_directories(home / "template");
  for (const char* f : {"gitconfig", "attributes", "ignore"}) {
    std::error_code ec;
    if (fs::is_regular_file(home / f, ec) && fs::file_size(home / f, ec) == 0) continue;
    fs::remove(home / f, ec);
    writeDurably(home / f, "");
  }
}

GitCall gitCall(std::vector<std::string> args, GitEnv env = {}, std::string stdinData = {}) {
  GitCall c;
  c.args = std::move(args);
  c.env = std::move(env);
  c.stdinData = std::move(stdinData);
  return c;
}

}  // namespace

WorkspaceCarrier WorkspaceCarrier::open(const fs::path& storeDir, GitRuntime git,
                                        bool checkpointFactsExist) {
  const fs::path dir = fs::absolute(storeDir) / "workspace";  // git runs from its git-home
  WorkspaceCarrier carrier(dir, std::move(git));
  try {
    fs::create_directories(dir);
    for (const char* sub : {"index", "instances", "quarantine"}) fs::create_directories(dir / sub);
    ensureGitHome(carrier.gitHome());
  } catch (const fs::filesystem_error& e) {
    damaged(std::string("cannot lay out ") + dir.string() + ": " + e.what());
  } catch (const Error& e) {
    damaged(std::string("cannot lay out ") + dir.string() + ": " + e.what());
  }
  const GitRuntime& rt = carrier.git_;
  const fs::path home = carrier.gitHome();
  const fs::path gitDir = carrier.gitDir();
  std::error_code ec;
  if (fs::exists(dir / "carrier.json", ec)) {
    if (readSmallFile(dir / "carrier.json") != kCarrierJson)
      damaged((dir / "carrier.json").string() + " is not the carrier's record");
    const GitEnv env{gitDir, {}, {}, {}, {}};
    auto bare = runGit(rt, home, gitCall({"rev-parse", "--is-bare-repository"}, env));
    auto format = runGit(rt, home, gitCall({"rev-parse", "--show-object-format"}, env));
    auto version =
        runGit(rt, home, gitCall({"config", "--get", "core.repositoryformatversion"}, env));
    if (!bare.ok || firstLineOf(bare.out) != "true" || !format.ok ||
        firstLineOf(format.out) != "sha1" || !version.ok || firstLineOf(version.out) != "0")
      damaged(gitDir.string() + " is not a bare sha1 repository of format version 0");
    return carrier;
  }
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("carrier.git.tmp-", 0) == 0) fs::remove_all(e.path());
  if (checkpointFactsExist)
    damaged("the store's checkpoints name a carrier, but " + (dir / "carrier.json").string() +
            " is missing");
  fs::remove_all(gitDir);
  const fs::path tmp = dir / ("carrier.git.tmp-" + std::to_string(::getpid()));
  gitOk(code::workspace_carrier_damaged, "", rt, home,
        gitCall({"init", "--quiet", "--bare", "--object-format=sha1",
                 "--template=" + (home / "template").string(), tmp.string()}));
  fs::create_directories(tmp / "info");
  fs::remove(tmp / "info" / "exclude", ec);
  writeDurably(tmp / "info" / "exclude", kCarrierExclude);
  fsyncTree(tmp);
  posixDurableFs().rename(tmp, gitDir);
  posixDurableFs().fsyncDir(dir);
  writeDurably(dir / "carrier.json", kCarrierJson);
  return carrier;
}

fs::path WorkspaceCarrier::indexFileFor(std::string_view instanceIdentity) const {
  std::string_view uuid = instanceIdentity;
  if (const auto at = uuid.rfind(':'); at != std::string_view::npos) uuid.remove_prefix(at + 1);
  return dir_ / "index" / (std::string(uuid) + ".index");
}

namespace {

// The c.4 checks 4–9 and L (c.3 steps 1–2) of one attempt.
struct Listing {
  GitEnv user;                                  // the instance's own repository, read only
  std::vector<std::string> paths;               // L
  std::map<std::string, std::string> gitlinks;  // path → the commit the index records
  int64_t fileCount = 0, totalBytes = 0;
};

class Deadline {
 public:
  explicit Deadline(const SnapshotLimits& l)
      : end_(std::chrono::steady_clock::now() + std::chrono::milliseconds(l.captureTimeoutMs)),
        budget_(l.captureTimeoutMs) {}
  std::chrono::milliseconds left() const {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        end_ - std::chrono::steady_clock::now());
    if (ms.count() <= 0)
      throw CarrierError(code::checkpoint_policy_limit_exceeded, "captureTimeoutMs",
                         "the capture took longer than " + std::to_string(budget_) + " ms");
    return ms;
  }

 private:
  std::chrono::steady_clock::time_point end_;
  int64_t budget_;
};

// A git call in the deadline; a timeout is the limit, any other failure `code`.
std::string timed(const Deadline& d, std::string_view code, const GitRuntime& rt,
                  const fs::path& home, GitCall c, const fs::path& cwd = {}) {
  c.timeout = d.left();
  c.cwd = cwd;
  auto r = runGit(rt, home, c);
  if (!r.ok) {
    d.left();  // a timeout is the policy's limit
    throw CarrierError(code, "", r.failure);
  }
  return std::move(r.out);
}

// `relistOf`: the stability re-list of d.2 step 5 ("a fresh L equals L") in the repository an
// earlier listing found: L alone, without checks 4–5 and 7–9 (two git children fewer per
// capture; docs/phase4.md, Capture cost).
Listing listInstance(const WorkspaceCarrier& carrier, const fs::path& root,
                     const SnapshotLimits& limits, const Deadline& d,
                     const GitEnv* relistOf = nullptr) {
  const GitRuntime& rt = carrier.git();
  const fs::path home = carrier.gitHome();
  Listing out;
  if (relistOf) out.user = *relistOf;
  // 4–5: a non-bare work-tree root of a sha1 repository.
  if (!relistOf) {
    auto top = runGit(rt, home, [&] {
      GitCall c = gitCall({"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir",
                           "--show-object-format"});
      c.cwd = root;
      c.timeout = d.left();
      return c;
    }());
    std::vector<std::string> lines;
    for (size_t at = 0; at < top.out.size();) {
      const auto nl = top.out.find('\n', at);
      lines.push_back(top.out.substr(at, nl - at));
      at = nl == std::string::npos ? top.out.size() : nl + 1;
    }
    if (!top.ok || lines.size() < 3 || fs::path(lines[0]) != root)
      throw CarrierError(code::unsupported_workspace_carrier, "not_worktree_root",
                         root.string() + " is not the root of a non-bare git work tree");
    if (lines[2] != "sha1")
      throw CarrierError(code::unsupported_workspace_carrier, "object_format",
                         "the repository's object format is " + lines[2]);
    out.user = GitEnv{lines[1], root, {}, {}, {}};
  }
  const std::string_view unsupported = code::checkpoint_capture_failed;
  // One read of the index and the untracked files serves checks 6 and 7 and L: a cached entry is
  // "<tag> <mode> <oid> <stage>\t<path>", an untracked one "? <path>" (a nested repository's ends
  // in '/'), in L's order.
  const auto records = splitNul(
      timed(d, unsupported, rt, home,
            gitCall({"ls-files", "-z", "-t", "-s", "--cached", "--others", "--exclude-standard"},
                    out.user),
            root));
  struct Entry {
    std::string path, mode, oid;
  };
  std::vector<Entry> entries;
  entries.reserve(records.size());
  for (const auto& rec : records) {
    if (rec.size() < 3) continue;
    // 6: no skip-worktree entry.
    if (rec.rfind("S ", 0) == 0)
      throw CarrierError(code::unsupported_workspace_carrier, "sparse_checkout",
                         "skip-worktree entry " + rec.substr(rec.find('\t') + 1));
    if (rec[0] == '?') {
      entries.push_back({rec.substr(2), {}, {}});
      continue;
    }
    const auto tab = rec.find('\t');
    if (tab == std::string::npos || tab < 2) continue;
    const std::string stage = rec.substr(2, tab - 2);  // "<mode> <oid> <stage>"
    entries.push_back({rec.substr(tab + 1), stage.substr(0, stage.find(' ')),
                       stage.size() > 47 ? stage.substr(7, 40) : std::string()});
  }
  // L (c.3 steps 1–2).
  std::set<std::string> seen;
  for (auto& e : entries) {
    std::string& p = e.path;
    if (p.empty() || p == kWorkspaceMarkerName || !seen.insert(p).second) continue;
    if (p.back() == '/')
      throw CarrierError(code::checkpoint_policy_unsupported, "nested_repository",
                         "nested repository " + p);
    struct stat st {};
    if (::lstat((root / p).c_str(), &st) != 0) continue;  // absent from disk
    out.paths.push_back(p);
  }
  if (relistOf) return out;
  // 7: gitlinks, each clean.
  for (const auto& e : entries)
    if (e.mode == "160000" && seen.count(e.path)) out.gitlinks[e.path] = e.oid;
  for (const auto& [path, oid] : out.gitlinks) {
    if (planted("capture_skips_submodule_check")) break;  // planted bug: a dirty gitlink passes
    const fs::path sub = root / path;
    const GitEnv subEnv{sub / ".git", sub, {}, {}, {}};
    std::error_code ec;
    if (!fs::exists(sub / ".git", ec)) continue;  // not checked out: the index's commit stands
    auto status = runGit(rt, home, [&] {
      GitCall c = gitCall({"status", "--porcelain=v1", "--untracked-files=all", "-z"}, subEnv);
      c.cwd = sub;
      c.timeout = d.left();
      return c;
    }());
    auto head = runGit(rt, home, [&] {
      GitCall c = gitCall({"rev-parse", "--verify", "-q", "HEAD"}, subEnv);
      c.cwd = sub;
      c.timeout = d.left();
      return c;
    }());
    if (!status.ok || !status.out.empty() || !head.ok || firstLineOf(head.out) != oid)
      throw CarrierError(code::checkpoint_policy_unsupported, "dirty_submodule",
                         "submodule " + path + " is not clean at its recorded commit");
  }
  // 8: no conversion attribute.
  std::string stdinPaths;
  for (const auto& p : out.paths) stdinPaths += p + '\0';
  if (!out.paths.empty() && !planted("capture_skips_attribute_check")) {
    const auto recs = splitNul(timed(d, unsupported, rt, home,
                                     gitCall({"check-attr", "-z", "--stdin", "filter", "text",
                                              "eol", "ident", "working-tree-encoding"},
                                             out.user, stdinPaths),
                                     root));
    for (size_t i = 0; i + 2 < recs.size(); i += 3) {
      const std::string& value = recs[i + 2];
      if (value == "unspecified" || (recs[i + 1] == "text" && value == "unset")) continue;
      throw CarrierError(code::checkpoint_policy_unsupported, "attribute:" + recs[i + 1],
                         recs[i] + " has " + recs[i + 1] + "=" + value);
    }
  }
  // 9: limits.
  if (static_cast<int64_t>(out.paths.size()) > limits.maxFiles)
    throw CarrierError(code::checkpoint_policy_limit_exceeded, "maxFiles",
                       std::to_string(out.paths.size()) + " entries");
  for (const auto& p : out.paths) {
    if (out.gitlinks.count(p)) continue;
    struct stat st {};
    if (::lstat((root / p).c_str(), &st) != 0) continue;
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;
    if (st.st_size > limits.maxFileBytes)
      throw CarrierError(code::checkpoint_policy_limit_exceeded, "maxFileBytes",
                         p + " holds " + std::to_string(st.st_size) + " bytes");
    ++out.fileCount;
    out.totalBytes += st.st_size;
    if (out.totalBytes > limits.maxTotalBytes)
      throw CarrierError(code::checkpoint_policy_limit_exceeded, "maxTotalBytes",
                         "more than " + std::to_string(limits.maxTotalBytes) + " bytes");
  }
  return out;
}

}  // namespace

namespace {

// c.3's tree of `root` through the index and object directory of `privTemplate` (the carrier's
// own for a capture; a scratch index and object directory, the carrier's objects as alternates,
// for a drift check, e.2). `capture`: a capture's (its plants apply, its tree must be stable,
// d.2 step 5), else a drift check's.
WorkspaceSnapshot snapshotThrough(const WorkspaceCarrier& carrier, const fs::path& root,
                                  const GitEnv& privTemplate, const SnapshotLimits& limits,
                                  bool atCapture, bool capture) {
  const GitRuntime& rt = carrier.git();
  const fs::path home = carrier.gitHome();
  const Deadline d(limits);
  const std::string_view failed = code::checkpoint_capture_failed;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    Listing l = listInstance(carrier, root, limits, d);
    GitEnv priv = privTemplate;
    // Planted bug: the capture index is the user's own .git/index (H1).
    if (capture && planted("capture_writes_user_index")) priv.indexFile = l.user.gitDir / "index";
    std::set<std::string> inL(l.paths.begin(), l.paths.end());
    std::string stale, regular, links;
    for (const auto& p :
         splitNul(timed(d, failed, rt, home, gitCall({"ls-files", "-z"}, priv), root)))
      if (!p.empty() && !inL.count(p)) stale += p + '\0';
    for (const auto& p : l.paths) {
      if (auto it = l.gitlinks.find(p); it != l.gitlinks.end())
        links += "160000 " + it->second + "\t" + p + '\0';
      else
        regular += p + '\0';
    }
    if (!stale.empty())
      timed(d, failed, rt, home,
            gitCall({"update-index", "-z", "--force-remove", "--stdin"}, priv, stale), root);
    if (!regular.empty())
      timed(d, failed, rt, home,
            gitCall({"update-index", "-z", "--add", "--remove", "--stdin"}, priv, regular), root);
    if (!links.empty())
      timed(d, failed, rt, home, gitCall({"update-index", "-z", "--index-info"}, priv, links),
            root);
    if (atCapture) CRASHSIM_FAILPOINT(P18);
    const std::string tree =
        firstLineOf(timed(d, failed, rt, home, gitCall({"write-tree"}, priv), root));
    // A drift check's tree is compared, never stored (e.2 (3) asks no stability): a file that
    // changes while it is hashed is a change after the check, which the binding's revalidation
    // (e.4) and the claim see.
    if (!capture) return WorkspaceSnapshot{tree, l.fileCount, l.totalBytes, std::move(l.paths)};
    // Stability (d.2 step 5): the files still match the index, and L is unchanged.
    auto diff = runGit(rt, home, [&] {
      GitCall c = gitCall({"diff-files", "--quiet"}, priv);
      c.cwd = root;
      c.timeout = d.left();
      return c;
    }());
    if (!diff.ok && diff.exitCode != 1) throw CarrierError(failed, "", diff.failure);
    if (diff.ok && listInstance(carrier, root, limits, d, &l.user).paths == l.paths)
      return WorkspaceSnapshot{tree, l.fileCount, l.totalBytes, std::move(l.paths)};
  }
  throw CarrierError(failed, "unstable",
                     root.string() + " kept changing during 3 capture attempts");
}

}  // namespace

WorkspaceSnapshot snapshotInstance(const WorkspaceCarrier& carrier, const fs::path& root,
                                   std::string_view instanceIdentity, const SnapshotLimits& limits,
                                   bool atCapture) {
  const GitEnv priv{carrier.gitDir(), root, carrier.indexFileFor(instanceIdentity), {}, {}};
  return snapshotThrough(carrier, root, priv, limits, atCapture, true);
}

std::optional<WorkspaceCarrier> WorkspaceCarrier::openExisting(const fs::path& storeDir,
                                                               GitRuntime git) {
  const fs::path dir = fs::absolute(storeDir) / "workspace";  // git runs from its git-home
  WorkspaceCarrier carrier(dir, std::move(git));
  std::error_code ec;
  if (!fs::exists(dir / "carrier.json", ec)) {
    if (fs::exists(carrier.gitDir(), ec))
      damaged((dir / "carrier.json").string() + " is missing beside " + carrier.gitDir().string());
    return std::nullopt;
  }
  if (readSmallFile(dir / "carrier.json") != kCarrierJson)
    damaged((dir / "carrier.json").string() + " is not the carrier's record");
  const GitRuntime& rt = carrier.git_;
  const fs::path home = carrier.gitHome();
  const GitEnv env{carrier.gitDir(), {}, {}, {}, {}};
  auto probe =
      runGit(rt, home, gitCall({"rev-parse", "--is-bare-repository", "--show-object-format"}, env));
  if (!probe.ok || probe.out != "true\nsha1\n")
    damaged(carrier.gitDir().string() + " is not a bare sha1 repository");
  return carrier;
}

void checkWorkspaceStructure(const GitRuntime& git, const fs::path& gitHome,
                             const fs::path& instanceRoot) {
  auto top = runGit(git, gitHome, [&] {
    GitCall c =
        gitCall({"rev-parse", "--path-format=absolute", "--show-toplevel", "--show-object-format"});
    c.cwd = instanceRoot;
    return c;
  }());
  const std::string out = top.out;
  const auto nl = out.find('\n');
  const std::string toplevel = out.substr(0, nl);
  const std::string format =
      nl == std::string::npos ? std::string() : firstLineOf(out.substr(nl + 1));
  if (!top.ok || fs::path(toplevel) != instanceRoot)
    throw CarrierError(code::unsupported_workspace_carrier, "not_worktree_root",
                       instanceRoot.string() + " is not the root of a non-bare git work tree");
  if (format != "sha1")
    throw CarrierError(code::unsupported_workspace_carrier, "object_format",
                       "the repository's object format is " + format);
}

DriftCheck checkWorkspaceDrift(const WorkspaceCarrier& carrier, const fs::path& instanceRoot,
                               std::string_view instanceIdentity,
                               const CheckpointFact& checkpoint) {
  // Scratch outside the store (c.1): a copy of the persistent index, an empty object directory
  // whose alternates are the carrier's objects. Nothing is written into the store or the
  // instance's .git.
  std::string tmpl = (fs::temp_directory_path() / "crashsim-drift-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    throw CarrierError(code::checkpoint_capture_failed, "scratch",
                       "cannot create a scratch directory for the drift check");
  const fs::path scratch(tmpl);
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{scratch};
  std::error_code ec;
  fs::create_directories(scratch / "objects" / "info", ec);
  fs::create_directories(scratch / "objects" / "pack", ec);
  const fs::path persistent = carrier.indexFileFor(instanceIdentity);
  if (fs::is_regular_file(persistent, ec))
    fs::copy_file(persistent, scratch / "index", fs::copy_options::overwrite_existing, ec);
  const GitEnv priv{carrier.gitDir(), instanceRoot, scratch / "index", scratch / "objects",
                    carrier.gitDir() / "objects"};
  DriftCheck out;
  WorkspaceSnapshot now;
  try {
    now = snapshotThrough(carrier, instanceRoot, priv, checkpoint.limits, false, false);
  } catch (const CarrierError& e) {
    out.detail = "capture_ineligible:" + std::string(e.code());
    return out;  // drifted: the tree cannot be computed under the checkpoint's policy
  }
  out.currentTreeOid = now.treeOid;
  if (now.treeOid == checkpoint.carrier.treeOid) {
    out.match = true;
    return out;
  }
  const GitEnv read{carrier.gitDir(), {}, {}, scratch / "objects", carrier.gitDir() / "objects"};
  auto diff = runGit(carrier.git(), carrier.gitHome(),
                     gitCall({"diff-tree", "-r", "--no-renames", "--name-status", "-z",
                              checkpoint.carrier.treeOid, now.treeOid},
                             read));
  const auto recs = splitNul(diff.out);
  for (size_t i = 0; diff.ok && i + 1 < recs.size() && out.paths.size() < 20; i += 2)
    out.paths.push_back(recs[i] + " " + recs[i + 1]);
  return out;
}

size_t removeStaleCarrierLocks(const fs::path& storeDir) {
  const fs::path dir = fs::absolute(storeDir) / "workspace";  // git runs from its git-home
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  size_t removed = 0;
  const auto sweep = [&](const fs::path& d, bool recursive) {
    if (!fs::is_directory(d, ec)) return;
    std::vector<fs::path> locks;
    if (recursive) {
      for (auto it = fs::recursive_directory_iterator(d, ec); !ec && it != decltype(it)();
           it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".lock")
          locks.push_back(it->path());
    } else {
      for (const auto& e : fs::directory_iterator(d, ec))
        if (e.is_regular_file(ec) && e.path().extension() == ".lock") locks.push_back(e.path());
    }
    for (const auto& p : locks) removed += fs::remove(p, ec) ? 1 : 0;
  };
  const fs::path gitDir = dir / "carrier.git";
  sweep(gitDir, false);
  sweep(gitDir / "refs", true);
  if (fs::is_directory(gitDir / "worktrees", ec))
    for (const auto& e : fs::directory_iterator(gitDir / "worktrees", ec))
      if (e.is_directory(ec)) sweep(e.path(), false);
  sweep(dir / "index", false);
  return removed;
}

std::string checkpointCommitMessage(const CheckpointFact& c) {
  const Json& b = c.coveredBoundary;
  const Json m = {{"checkpointId", c.checkpointId},
                  {"workspaceId", c.workspaceId},
                  {"epoch", c.epoch},
                  {"kind", c.kind},
                  {"boundary",
                   {{"sessionId", b.at("identity").at("sessionId")},
                    {"runId", b.at("identity").at("runId")},
                    {"lastEventSeq", b.at("position").at("lastEventSeq")},
                    {"prefixDigest", b.at("prefixDigest")}}},
                  {"policyHash", c.policyHash}};
  return "crashsim-checkpoint-v1\n" + stableJson(m) + "\n";
}

void lightVerifyCheckpoint(const WorkspaceCarrier& carrier, const CheckpointFact& c) {
  const GitRuntime& rt = carrier.git();
  const fs::path home = carrier.gitHome();
  const GitEnv env{carrier.gitDir(), {}, {}, {}, {}};
  auto ref = runGit(rt, home, gitCall({"rev-parse", "--verify", "-q", c.carrier.refName}, env));
  if (!ref.ok || firstLineOf(ref.out) != c.carrier.commitOid)
    throw CarrierError(code::workspace_ref_missing, "",
                       c.carrier.refName + " does not name " + c.carrier.commitOid);
  auto corrupt = [&](const std::string& what) {
    throw CarrierError(code::checkpoint_artifact_corrupt, "",
                       "checkpoint " + c.checkpointId + ": " + what);
  };
  auto commit = runGit(rt, home, gitCall({"cat-file", "commit", c.carrier.commitOid}, env));
  if (!commit.ok) corrupt("commit " + c.carrier.commitOid + " does not read: " + commit.failure);
  const std::string identity = "crashsim checkpoint <checkpoint@crashsim.invalid> 946684800 +0000";
  const std::string headers = commit.out.substr(0, commit.out.find("\n\n") + 1);
  if (headers !=
      "tree " + c.carrier.treeOid + "\nauthor " + identity + "\ncommitter " + identity + "\n")
    corrupt("commit " + c.carrier.commitOid + " is not the checkpoint's (tree, parent, identity)");
  auto objects = runGit(
      rt, home, gitCall({"rev-list", "--objects", "--no-object-names", c.carrier.commitOid}, env));
  if (!objects.ok || objects.out.empty()) corrupt("its objects do not list: " + objects.failure);
  auto check =
      runGit(rt, home, gitCall({"cat-file", "--batch-check", "--buffer"}, env, objects.out));
  if (!check.ok || check.out.find(" missing") != std::string::npos)
    corrupt("an object it reaches is missing");
}

}  // namespace crashsim
