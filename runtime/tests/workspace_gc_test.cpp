// workspace_gc_test — retention and GC of the carrier (workspace-continuity-contract.md h.1–h.3,
// h.5) with the real git CLI and a real SQLite store: the j.2 vector 3 workspace captured at
// RC e.7's one-event run (j.2 vector 2's ref, an accepted fact), plus orphan refs made with the
// git CLI (a fixture, never the code under test) and aged with touch(1).
#include "crashsim/workspace_gc.h"

#include <sys/wait.h>

#include <cstdio>
#include <memory>

#include "checkpoint/refs.h"
#include "crashsim/build_paths.h"
#include "crashsim/host.h"
#include "workspace_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

// An orphan ref of the vector's workspace in epoch 1 whose checkpoint id no fact has.
const std::string kOrphanRef =
    "refs/crashsim/checkpoints/077e3b1985c9e78d64a0e036e9a4c802/1/"
    "00000000000000000000000000000001";
const std::string kOrphanRef2 =
    "refs/crashsim/checkpoints/077e3b1985c9e78d64a0e036e9a4c802/1/"
    "00000000000000000000000000000002";

struct Gc : ::testing::Test {
  TempDir dir;
  fs::path storeDir = dir.path / "store";
  fs::path gitDir = storeDir / "workspace" / "carrier.git";
  WorkspaceIdentity w;
  GitRuntime git;

  void SetUp() override {
    fs::create_directories(storeDir);
    git = resolveGitRuntime();
    w = makeVector3Workspace(dir.path / "ws");
    auto s = RuntimeStore::open(storeDir);
    addLegacyRun(*s);
    captureCheckpoint(*s, storeDir, git, captureOf(w));  // the accepted fact: kVectorRef
  }

  std::string gitCmd() const { return "git --git-dir=" + shellQuoted(gitDir) + " "; }
  // A commit of the vector's tree with another message, and `ref` at it (no fact names it).
  std::string makeOrphan(const std::string& ref, const std::string& message) {
    const fs::path out = dir.path / "oid.out";
    fixtureShell(gitCmd() + "-c user.name=t -c user.email=t@t.invalid commit-tree " + kVectorTree +
                 " -m '" + message + "' > " + shellQuoted(out));
    const std::string oid = readBytes(out).substr(0, 40);
    fixtureShell(gitCmd() + "update-ref " + ref + " " + oid);
    return oid;
  }
  void age(const std::string& relative) {
    fixtureShell("touch -h -d '2 hours ago' " + shellQuoted(gitDir / relative));
  }
  bool objectExists(const std::string& oid) {
    return std::system((gitCmd() + "cat-file -e " + oid + " 2>/dev/null").c_str()) == 0;
  }
  WorkspaceGcReport gc(std::chrono::milliseconds grace, bool dryRun = false) {
    StoreOptions o;
    o.readOnly = dryRun;
    auto s = RuntimeStore::open(storeDir, o);
    return collectWorkspaceGarbage(*s, git, WorkspaceGcOptions{storeDir, grace, dryRun});
  }
  // The accepted fact's artifact still light-verifies (h.1).
  std::string factArtifactProblem() { return acceptedArtifactProblem(storeDir, git); }
};

std::vector<std::string> names(const std::vector<GcRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.push_back(r.refName);
  return out;
}

// Every file under `dir` by relative name → its bytes and mtime (ns), directories by mtime.
std::map<std::string, std::string> bytesAndTimes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    const std::string t =
        std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    out[fs::relative(e.path(), dir).string()] =
        t + (e.is_regular_file() && !e.is_symlink() ? " " + readBytes(e.path()) : "");
  }
  return out;
}

const fs::path kBin = CRASHSIM_BINARY_DIR;

// A command line's exit status and stdout.
std::pair<int, std::string> shell(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
  const int rc = ::pclose(p.release());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

}  // namespace

// j.2 vector 8 (GC part) and h.2–h.3: with grace 0 an orphan ref is deleted and its commit
// pruned; the accepted fact's ref, commit and tree stay and light-verify.
TEST_F(Gc, GraceZeroDeletesTheOrphanAndKeepsEveryFactsRef) {
  const std::string orphan = makeOrphan(kOrphanRef, "orphan");
  ASSERT_TRUE(objectExists(orphan));
  const WorkspaceGcReport r = gc(std::chrono::milliseconds(0));
  EXPECT_TRUE(r.carrier);
  EXPECT_EQ(names(r.deleted), std::vector<std::string>{kOrphanRef});
  EXPECT_TRUE(r.kept.empty());
  EXPECT_TRUE(r.pruned);
  EXPECT_EQ(carrierRef(storeDir, kOrphanRef), "");
  EXPECT_FALSE(objectExists(orphan));  // unreachable, older than now − 0: pruned
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
  EXPECT_TRUE(objectExists(kVectorTree));
  EXPECT_EQ(factArtifactProblem(), "");
  EXPECT_EQ(listWorkspaceCheckpoints(*RuntimeStore::open(storeDir)).size(), 1u);  // no fact
}

// h.2 (a): an orphan younger than orphanGraceMs is kept; an older one is deleted.
TEST_F(Gc, OrphanNewerThanTheGraceIsKept) {
  makeOrphan(kOrphanRef, "young");
  makeOrphan(kOrphanRef2, "old");
  age(kOrphanRef2);
  const WorkspaceGcReport r = gc(std::chrono::hours(1));
  EXPECT_EQ(names(r.deleted), std::vector<std::string>{kOrphanRef2});
  ASSERT_EQ(names(r.kept), std::vector<std::string>{kOrphanRef});
  EXPECT_EQ(r.kept[0].reason, "within_grace");
  EXPECT_NE(carrierRef(storeDir, kOrphanRef), "");
  EXPECT_EQ(carrierRef(storeDir, kOrphanRef2), "");
}

// h.1: a ref an accepted fact names is never deleted, however old, with grace 0.
TEST_F(Gc, AFactNamedRefIsNeverDeleted) {
  age(kVectorRef);
  const WorkspaceGcReport r = gc(std::chrono::milliseconds(0));
  EXPECT_TRUE(r.deleted.empty());
  EXPECT_GE(r.namedRefs, 1u);
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
  EXPECT_EQ(factArtifactProblem(), "");
  // Bad input for the check itself: with the ref deleted by hand the artifact check is red.
  fixtureShell(gitCmd() + "update-ref -d " + kVectorRef);
  EXPECT_EQ(factArtifactProblem(), "workspace_ref_missing");
}

// h.2 (c): the CAS on the oid read in (a) — a ref that moved since is kept.
TEST_F(Gc, ALostCasKeepsTheRef) {
  const std::string first = makeOrphan(kOrphanRef, "first");
  const std::string moved = makeOrphan(kOrphanRef, "moved");  // the ref moved after (a) read it
  ASSERT_NE(first, moved);
  const auto carrier = WorkspaceCarrier::open(storeDir, git, true);
  EXPECT_FALSE(checkpoint_detail::deleteCheckpointRef(carrier, kOrphanRef, first));
  EXPECT_EQ(carrierRef(storeDir, kOrphanRef), moved);
  EXPECT_TRUE(checkpoint_detail::deleteCheckpointRef(carrier, kOrphanRef, moved));
  EXPECT_EQ(carrierRef(storeDir, kOrphanRef), "");
}

// h.3: quarantine entries older than the grace are deleted; a young one and one whose
// quarantine intent is still pending (f.3, in progress) are kept.
TEST_F(Gc, OldQuarantineEntriesAreDeleted) {
  const fs::path q = storeDir / "workspace" / "quarantine";
  fs::create_directories(q / "aaaa-e2.0" / "sub");
  writeFile(q / "aaaa-e2.0" / "sub" / "f.txt", "x");
  fs::create_directories(q / "bbbb-e3.0");
  fs::create_directories(q / "cccc-e4.0");
  writeFile(q / "cccc-e4.intent.json", "{}");
  fixtureShell("touch -d '2 hours ago' " + shellQuoted(q / "aaaa-e2.0") + " " +
               shellQuoted(q / "cccc-e4.0"));
  const WorkspaceGcReport r = gc(std::chrono::hours(1));
  EXPECT_EQ(r.quarantineDeleted, std::vector<std::string>{"aaaa-e2.0"});
  EXPECT_FALSE(fs::exists(q / "aaaa-e2.0"));
  EXPECT_TRUE(fs::exists(q / "bbbb-e3.0"));
  EXPECT_TRUE(fs::exists(q / "cccc-e4.0"));
  EXPECT_TRUE(fs::exists(q / "cccc-e4.intent.json"));
  // A deletion killed after its intent (the rename) is finished by the next GC.
  fs::create_directories(q / "dddd-e5.0.gc-deleting");
  EXPECT_EQ(gc(std::chrono::hours(1)).quarantineDeleted,
            std::vector<std::string>{"dddd-e5.0.gc-deleting"});
  EXPECT_FALSE(fs::exists(q / "dddd-e5.0.gc-deleting"));
}

// h.5: a dry run lists would_delete and changes no byte or mtime of the store directory.
TEST_F(Gc, ADryRunWritesNothing) {
  const std::string orphan = makeOrphan(kOrphanRef, "orphan");
  age(kOrphanRef);
  const fs::path q = storeDir / "workspace" / "quarantine";
  fs::create_directories(q / "aaaa-e2.0");
  fixtureShell("touch -d '2 hours ago' " + shellQuoted(q / "aaaa-e2.0"));
  const auto before = bytesAndTimes(storeDir);
  const WorkspaceGcReport r = gc(std::chrono::hours(1), true);
  EXPECT_EQ(r.wouldDelete, (std::vector<std::string>{kOrphanRef, "quarantine/aaaa-e2.0"}));
  EXPECT_TRUE(r.deleted.empty());
  EXPECT_FALSE(r.pruned);
  EXPECT_EQ(r.toJson().at("would_delete").size(), 2u);
  EXPECT_EQ(bytesAndTimes(storeDir), before);
  EXPECT_TRUE(objectExists(orphan));
  // The same store without --dry-run does delete (the comparison above can see a change).
  gc(std::chrono::hours(1));
  EXPECT_NE(bytesAndTimes(storeDir), before);
}

// Without a carrier GC has nothing to do and creates none.
TEST_F(Gc, NoCarrierNoWork) {
  TempDir other;
  const fs::path bare = other.path / "store";
  fs::create_directories(bare);
  auto s = RuntimeStore::open(bare);
  const WorkspaceGcReport r =
      collectWorkspaceGarbage(*s, git, WorkspaceGcOptions{bare, std::chrono::hours(1), false});
  EXPECT_FALSE(r.carrier);
  EXPECT_FALSE(fs::exists(bare / "workspace"));
}

// The CLI: `crashsim gc STORE --dry-run --json` is read-only (the store's bytes and mtimes are
// unchanged) and lists would_delete; without --dry-run it refuses (exit 2). `crashsim-agent gc`
// collects under the host lock: another holder → host_already_active, exit 2, nothing deleted.
TEST_F(Gc, TheCommandLines) {
  makeOrphan(kOrphanRef, "orphan");
  age(kOrphanRef);
  const std::string store = shellQuoted(storeDir);
  const std::string crashsim = shellQuoted(kBin / "harness" / "crashsim");
  const std::string agent = shellQuoted(kBin / "runtime" / "crashsim-agent");
  const auto before = bytesAndTimes(storeDir);
  const auto dry = shell(crashsim + " gc " + store + " --dry-run --json --grace-ms 3600000");
  EXPECT_EQ(dry.first, 0) << dry.second;
  const Json j = Json::parse(dry.second);
  EXPECT_EQ(j.at("gc").at("would_delete"), Json::array({kOrphanRef}));
  EXPECT_EQ(bytesAndTimes(storeDir), before);
  EXPECT_EQ(shell(crashsim + " gc " + store + " 2>/dev/null").first, 2);
  {
    HostLock held(storeDir);
    const auto busy = shell(agent + " gc --store " + store + " --grace-ms 0 2>/dev/null");
    EXPECT_EQ(busy.first, 2);
    EXPECT_NE(busy.second.find("host_already_active"), std::string::npos) << busy.second;
    EXPECT_NE(carrierRef(storeDir, kOrphanRef), "");
  }
  const auto real = shell(agent + " gc --store " + store + " --grace-ms 0");
  EXPECT_EQ(real.first, 0) << real.second;
  EXPECT_EQ(Json::parse(real.second).at("gc").at("deleted").size(), 1u) << real.second;
  EXPECT_EQ(carrierRef(storeDir, kOrphanRef), "");
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
}
