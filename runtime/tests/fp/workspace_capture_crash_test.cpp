// workspace_capture_crash_test — crash table W (workspace-continuity-contract.md d.4) against the
// instrumented library: a forked child captures a checkpoint and SIGKILLs itself at P18–P22;
// the parent reopens the store and checks the durable state i.1 names, that every accepted
// checkpoint's artifact light-verifies (artifact before fact, a.3.1), and that the user's .git
// and work tree are byte-identical (H1). Two planted faults turn these checks red:
// capture_fact_before_ref (a fact committed before its ref) and capture_writes_user_index (the
// capture index is the user's .git/index).
#include <signal.h>
#include <sys/wait.h>

#include "../workspace_test_util.h"
#include "crashsim/failpoints.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

struct CaptureCrash : ::testing::Test {
  TempDir dir;
  fs::path storeDir = dir.path / "store";
  WorkspaceIdentity w;
  std::map<std::string, std::string> gitBefore, filesBefore;

  void SetUp() override {
    fs::create_directories(storeDir);
    addLegacyRun(*RuntimeStore::open(storeDir));
    w = makeVector3Workspace(dir.path / "ws");
    gitBefore = treeBytes(w.root / ".git");
    filesBefore = treeBytes(w.root);
  }

  // Captures in a forked child armed at `arm` (self-kill) with `plant`; true when it died by
  // SIGKILL.
  bool captureKilled(const std::string& arm, const std::string& plant = {}) {
    const GitRuntime git = resolveGitRuntime();
    pid_t pid = ::fork();
    if (pid == 0) {
      failpoints::resetForTesting();
      ::setenv("CRASHSIM_ARM", arm.c_str(), 1);
      ::setenv("CRASHSIM_FAILPOINT_MODE", "self", 1);
      if (!plant.empty()) ::setenv("CRASHSIM_PLANT", plant.c_str(), 1);
      try {
        auto s = RuntimeStore::open(storeDir);
        captureCheckpoint(*s, storeDir, git, captureOf(w));
      } catch (...) {
        ::_exit(3);
      }
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }

  // a.3.1: every accepted checkpoint's artifact light-verifies.
  std::string factWithoutArtifact() {
    return acceptedArtifactProblem(storeDir, resolveGitRuntime());
  }

  size_t facts() { return listWorkspaceCheckpoints(*RuntimeStore::open(storeDir)).size(); }
  bool userUntouched() {
    return treeBytes(w.root / ".git") == gitBefore && treeBytes(w.root) == filesBefore;
  }
};

}  // namespace

// Table W: W1 (P18), W2–W3 (P19), W4 (P20), W5 (P21), W6 (P22).
TEST_F(CaptureCrash, EachFailpointLeavesTheDurableStateOfItsRow) {
  struct Row {
    const char* arm;
    bool ref;
    size_t facts;
  };
  for (const Row& row : {Row{"P18:1", false, 0}, Row{"P19:1", false, 0}, Row{"P20:1", true, 0},
                         Row{"P21:1", true, 0}, Row{"P22:1", true, 1}}) {
    SCOPED_TRACE(row.arm);
    TempDir fresh;
    storeDir = fresh.path / "store";
    fs::create_directories(storeDir);
    addLegacyRun(*RuntimeStore::open(storeDir));
    ASSERT_TRUE(captureKilled(row.arm));
    EXPECT_EQ(!carrierRef(storeDir, kVectorRef).empty(), row.ref);
    EXPECT_EQ(facts(), row.facts);
    EXPECT_EQ(factWithoutArtifact(), "");
    EXPECT_TRUE(userUntouched());
    auto s = RuntimeStore::open(storeDir);
    EXPECT_NO_THROW(s->checkIntact());
    // Recovery: a later capture of the same boundary converges on the one checkpoint, its ref
    // reused exactly (W4) or its fact an exact retry (W6).
    const CaptureResult again = captureCheckpoint(*s, storeDir, resolveGitRuntime(), captureOf(w));
    EXPECT_EQ(again.created, row.facts == 0);
    EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
    EXPECT_EQ(listWorkspaceCheckpoints(*s).size(), 1u);
  }
}

// Planted: the fact commits before its ref; a kill at P19 leaves a fact without an artifact,
// which the artifact-before-fact check reports.
TEST_F(CaptureCrash, PlantedFactBeforeRefLeavesAFactWithoutItsRef) {
  ASSERT_TRUE(captureKilled("P19:1", "capture_fact_before_ref"));
  EXPECT_EQ(facts(), 1u);
  EXPECT_EQ(factWithoutArtifact(), "workspace_ref_missing");
}

// Planted: the capture index is the user's .git/index; the H1 check sees the user's .git change.
TEST_F(CaptureCrash, PlantedUserIndexChangesTheUsersGit) {
  ASSERT_TRUE(captureKilled("P18:1", "capture_writes_user_index"));
  EXPECT_FALSE(userUntouched());
}
