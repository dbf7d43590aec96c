// workspace_gc_crash_test — retention and GC against the instrumented library
// (workspace-continuity-contract.md h, i.1 P30, j.2 vector 8) with real git, a real SQLite store
// and SIGKILL in forked children:
//  * a capture killed at P20 (W4) leaves an orphan ref; GC with grace 0 deletes it and keeps
//    every fact's ref (after the boundary is captured again, its fact names the ref: kept);
//  * GC killed at P30 has deleted exactly the first orphan (refName order), written no fact, and
//    the next GC finishes;
//  * the plant gc_deletes_referenced_ref (GC ignores the facts) deletes an accepted fact's ref,
//    which the artifact check reports (workspace_ref_missing).
#include <signal.h>
#include <sys/wait.h>

#include "../workspace_test_util.h"
#include "crashsim/failpoints.h"
#include "crashsim/workspace_gc.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

const std::string kOrphanA =
    "refs/crashsim/checkpoints/077e3b1985c9e78d64a0e036e9a4c802/1/"
    "00000000000000000000000000000001";

struct GcCrash : ::testing::Test {
  TempDir dir;
  fs::path storeDir = dir.path / "store";
  fs::path gitDir = storeDir / "workspace" / "carrier.git";
  WorkspaceIdentity w;
  GitRuntime git;

  void SetUp() override {
    fs::create_directories(storeDir);
    git = resolveGitRuntime();
    w = makeVector3Workspace(dir.path / "ws");
    addLegacyRun(*RuntimeStore::open(storeDir));
  }

  // Runs `body` in a forked child armed at `arm` (self-kill); true when it died by SIGKILL.
  template <typename F>
  bool killedAt(const std::string& arm, F body) {
    pid_t pid = ::fork();
    if (pid == 0) {
      failpoints::resetForTesting();
      ::setenv("CRASHSIM_ARM", arm.c_str(), 1);
      ::setenv("CRASHSIM_FAILPOINT_MODE", "self", 1);
      try {
        body();
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }
  WorkspaceGcReport gc(std::chrono::milliseconds grace) {
    auto s = RuntimeStore::open(storeDir);
    return collectWorkspaceGarbage(*s, git, WorkspaceGcOptions{storeDir, grace, false});
  }
  void makeOrphan(const std::string& ref) {
    fixtureShell("git --git-dir=" + shellQuoted(gitDir) + " update-ref " + ref + " " +
                 kVectorCommit);
  }
  std::string factArtifactProblem() { return acceptedArtifactProblem(storeDir, git); }
  size_t facts() { return listWorkspaceCheckpoints(*RuntimeStore::open(storeDir)).size(); }
};

}  // namespace

// j.2 vector 8: GC with grace 0 deletes a P20 kill's orphan ref and keeps every fact's ref.
TEST_F(GcCrash, GraceZeroDeletesAP20OrphanAndKeepsEveryFactsRef) {
  ASSERT_TRUE(killedAt("P20:1", [&] {
    auto s = RuntimeStore::open(storeDir);
    captureCheckpoint(*s, storeDir, git, captureOf(w));
  }));
  ASSERT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);  // W4: the orphan ref
  ASSERT_EQ(facts(), 0u);
  const WorkspaceGcReport r = gc(std::chrono::milliseconds(0));
  ASSERT_EQ(r.deleted.size(), 1u);
  EXPECT_EQ(r.deleted[0].refName, kVectorRef);
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), "");
  // The boundary captured again: its fact names the ref, which GC with grace 0 keeps.
  {
    auto s = RuntimeStore::open(storeDir);
    EXPECT_TRUE(captureCheckpoint(*s, storeDir, git, captureOf(w)).created);
  }
  EXPECT_TRUE(gc(std::chrono::milliseconds(0)).deleted.empty());
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
  EXPECT_EQ(factArtifactProblem(), "");
}

// i.1 P30: the first orphan deleted, the rest and the prune not done, no fact written; the next
// GC finishes. The accepted fact's artifact verifies after the kill and after the next GC.
TEST_F(GcCrash, AKillAtP30LeavesASubsetDoneAndTheNextGcFinishes) {
  {
    auto s = RuntimeStore::open(storeDir);
    captureCheckpoint(*s, storeDir, git, captureOf(w));
  }
  const std::string orphanB =
      "refs/crashsim/checkpoints/077e3b1985c9e78d64a0e036e9a4c802/1/"
      "00000000000000000000000000000002";
  makeOrphan(kOrphanA);
  makeOrphan(orphanB);
  const auto rowsBefore = listWorkspaceCheckpoints(*RuntimeStore::open(storeDir)).size();
  ASSERT_TRUE(killedAt("P30:1", [&] { gc(std::chrono::milliseconds(0)); }));
  EXPECT_EQ(carrierRef(storeDir, kOrphanA), "");  // the first, in refName order
  EXPECT_EQ(carrierRef(storeDir, orphanB), kVectorCommit);
  EXPECT_EQ(facts(), rowsBefore);
  EXPECT_EQ(factArtifactProblem(), "");
  EXPECT_NO_THROW(RuntimeStore::open(storeDir)->checkIntact());
  const WorkspaceGcReport next = gc(std::chrono::milliseconds(0));
  ASSERT_EQ(next.deleted.size(), 1u);
  EXPECT_EQ(next.deleted[0].refName, orphanB);
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
  EXPECT_EQ(factArtifactProblem(), "");
}

// Planted gc_deletes_referenced_ref: GC ignores the facts; the accepted fact's ref is deleted and
// the artifact check (h.1) is red.
TEST_F(GcCrash, PlantedGcDeletesAReferencedRef) {
  {
    auto s = RuntimeStore::open(storeDir);
    captureCheckpoint(*s, storeDir, git, captureOf(w));
  }
  ::setenv("CRASHSIM_PLANT", "gc_deletes_referenced_ref", 1);
  const WorkspaceGcReport r = gc(std::chrono::milliseconds(0));
  ::unsetenv("CRASHSIM_PLANT");
  EXPECT_EQ(r.deleted.size(), 1u);
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), "");
  EXPECT_EQ(factArtifactProblem(), "workspace_ref_missing");
}
