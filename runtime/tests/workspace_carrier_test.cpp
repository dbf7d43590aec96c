// workspace_carrier_test — the carrier, hermetic git, snapshot policy v1, eligibility and capture
// (workspace-continuity-contract.md c, d; j.2 vectors 3 and 5) with the real git CLI, real files
// and a real store. Expected trees, commits and codes are the contract's.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "crashsim/continuation.h"
#include "workspace_run_fixture.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

// The store holds RC e.7's one-event run (j.2 vector 2's boundary) beside the vector 3 workspace.
struct CaptureFixture : WorkspaceRunFixture {
  CaptureFixture() : WorkspaceRunFixture("session-capture") {}

  void SetUp() override {
    WorkspaceRunFixture::SetUp();
    addLegacyRun(*store);
  }

  std::string codeAndDetail(const std::function<void()>& f) {
    try {
      f();
    } catch (const CarrierError& e) {
      return e.code() + (e.detail().empty() ? "" : " " + e.detail());
    } catch (const Error& e) {
      return e.code();
    }
    return "(no error)";
  }
};

}  // namespace

TEST(GitRuntimeVersion, ParsesAndGates) {
  EXPECT_EQ(parseGitVersion("git version 2.39.5"), (std::array<int, 3>{2, 39, 5}));
  EXPECT_EQ(parseGitVersion("git version 2.36.0.windows.1"), (std::array<int, 3>{2, 36, 0}));
  EXPECT_FALSE(parseGitVersion("git version two"));
  EXPECT_FALSE(parseGitVersion("hg version 2.39.5"));
  try {
    resolveGitRuntime("crashsim-no-such-git");
    FAIL() << "a missing git resolved";
  } catch (const CarrierError& e) {
    EXPECT_EQ(e.code(), "git_binary_unavailable");
  }
}

// j.2 vector 3, end to end through captureCheckpoint: L, tree, commit, ref, and the user's
// .git (index included) byte-identical.
TEST_F(CaptureFixture, Vector3TreeCommitAndRefLeaveTheUsersGitUntouched) {
  const auto gitBefore = treeBytes(root / ".git");
  const auto filesBefore = treeBytes(root);
  const CaptureResult r = captureCheckpoint(*store, storeDir, git, captureOf(w));
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.checkpoint.checkpointId, "ckpt_3462b1cde1cb8452d9a0ad87bc8ba6c2");
  EXPECT_EQ(r.checkpoint.carrier.treeOid, kVectorTree);
  EXPECT_EQ(r.checkpoint.carrier.commitOid, kVectorCommit);
  EXPECT_EQ(r.checkpoint.carrier.refName, kVectorRef);
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
  EXPECT_EQ(r.checkpoint.fileCount, 4);  // .gitignore, a.txt, bin/run.sh, link
  EXPECT_EQ(r.checkpoint.totalBytes, 6 + 6 + 10 + 5);
  EXPECT_EQ(treeBytes(root / ".git"), gitBefore);
  EXPECT_EQ(treeBytes(root), filesBefore);
  // The fact: epoch 1 opened on this instance, the checkpoint accepted.
  const auto epochs = listWorkspaceEpochs(*store);
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].instanceIdentity, w.identity);
  EXPECT_EQ(epochs[0].openedReason, "first_checkpoint");
  ASSERT_EQ(listWorkspaceCheckpoints(*store).size(), 1u);
  EXPECT_NO_THROW(store->checkIntact());
  // The carrier's layout (c.1).
  EXPECT_EQ(
      readBytes(storeDir / "workspace" / "carrier.json"),
      "{\"format\":\"crashsim-workspace-carrier\",\"version\":1,\"objectFormat\":\"sha1\"}\n");
  EXPECT_EQ(readBytes(storeDir / "workspace" / "carrier.git" / "info" / "exclude"),
            "/.maka-workspace.json\n");
  // An exact retry: same ref, created:false, nothing new.
  const std::string hash = store->ledgerHash();
  EXPECT_FALSE(captureCheckpoint(*store, storeDir, git, captureOf(w)).created);
  EXPECT_EQ(store->ledgerHash(), hash);
}

// A store named by a relative path (`crashsim-agent run --store st`): git runs from the carrier's
// git-home, so a path left relative would name a directory under it (the carrier was laid out
// there and every capture failed checkpoint_capture_failed, then workspace_carrier_damaged).
TEST_F(CaptureFixture, ARelativeStorePathCapturesIntoTheStoresCarrier) {
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path);
  const CaptureResult r = captureCheckpoint(*store, "store", git, captureOf(w));
  fs::current_path(cwd);
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.checkpoint.carrier.treeOid, kVectorTree);
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), kVectorCommit);
  EXPECT_FALSE(fs::exists(storeDir / "workspace" / "git-home" / "store"));
}

// c.2: the caller's environment and the user's git config never reach the carrier's git.
TEST_F(CaptureFixture, CaptureIgnoresTheCallersGitEnvironmentAndGlobalConfig) {
  const fs::path home = dir.path / "home";
  fs::create_directories(home);
  writeFile(home / ".gitconfig",
            "[core]\n\texcludesFile = " + (home / "ignore").string() + "\n\tautocrlf = true\n");
  writeFile(home / "ignore", "a.txt\nbin/\n");
  std::map<std::string, std::optional<std::string>> saved;
  for (const char* k :
       {"HOME", "GIT_DIR", "GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_CONFIG_GLOBAL"}) {
    const char* v = std::getenv(k);
    saved[k] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  ::setenv("HOME", home.c_str(), 1);
  ::setenv("GIT_CONFIG_GLOBAL", (home / ".gitconfig").c_str(), 1);
  ::setenv("GIT_DIR", (dir.path / "elsewhere").c_str(), 1);
  ::setenv("GIT_INDEX_FILE", (root / ".git" / "index").c_str(), 1);
  ::setenv("GIT_WORK_TREE", dir.path.c_str(), 1);
  CaptureResult r;
  EXPECT_NO_THROW(r = captureCheckpoint(*store, storeDir, git, captureOf(w)));
  for (const auto& [k, v] : saved) {
    if (v)
      ::setenv(k.c_str(), v->c_str(), 1);
    else
      ::unsetenv(k.c_str());
  }
  EXPECT_EQ(r.checkpoint.carrier.treeOid, kVectorTree);
}

// d.2 step 5: L must be unchanged between the listing and the fresh re-list. A writer adds a new
// untracked file every 2 ms during the whole capture (each attempt spends at least three git
// children between the two listings; the files it already listed are never modified, so
// `diff-files` passes): all 3 attempts see a different L → `unstable`, nothing accepted. Seen
// red with the re-list compared against the first listing itself.
TEST_F(CaptureFixture, GrowingFileListIsUnstable) {
  fs::create_directories(root / "churn");
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i) {
      writeFile(root / "churn" / ("f" + std::to_string(i)), "x\n");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const std::string got =
      codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(w)); });
  stop = true;
  writer.join();
  EXPECT_EQ(got, "checkpoint_capture_failed unstable");
  EXPECT_TRUE(listWorkspaceCheckpoints(*store).empty());
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), "");
}

// j.2 vector 5 / c.4: a conversion attribute is refused with its stable detail; nothing is
// accepted and no ref is created.
TEST_F(CaptureFixture, LfsFilterAttributeIsUnsupported) {
  writeFile(root / ".gitattributes", "*.bin filter=lfs -text\n");
  writeFile(root / "x.bin", "binary\n");
  EXPECT_EQ(codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(w)); }),
            "checkpoint_policy_unsupported attribute:filter");
  EXPECT_TRUE(listWorkspaceCheckpoints(*store).empty());
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), "");
}

TEST_F(CaptureFixture, DirtySubmoduleIsUnsupported) {
  const fs::path sub = root / "sub";
  fs::create_directories(sub);
  fixtureShell("git init -q " + shellQuoted(sub));
  writeFile(sub / "s.txt", "one\n");
  fixtureShell("cd " + shellQuoted(sub) +
               " && git add s.txt && git -c user.name=t -c user.email=t@t.invalid commit -qm s");
  fixtureShell(
      "cd " + shellQuoted(root) +
      " && git add sub 2>/dev/null && git -c user.name=t -c user.email=t@t.invalid commit -qm sub");
  // Clean: the gitlink is captured.
  EXPECT_NO_THROW(captureCheckpoint(*store, storeDir, git, captureOf(w)));
  writeFile(sub / "s.txt", "two\n");
  const auto carrier = WorkspaceCarrier::open(storeDir, git, true);
  EXPECT_EQ(codeAndDetail([&] { snapshotInstance(carrier, root, w.identity, {}, false); }),
            "checkpoint_policy_unsupported dirty_submodule");
}

TEST_F(CaptureFixture, NestedUntrackedRepositoryIsUnsupported) {
  fixtureShell("git init -q " + shellQuoted(root / "nested"));
  writeFile(root / "nested" / "n.txt", "n\n");
  EXPECT_EQ(codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(w)); }),
            "checkpoint_policy_unsupported nested_repository");
}

// c.4 check 6: a skip-worktree entry (sparse checkout) is unsupported, before any later check.
TEST_F(CaptureFixture, SkipWorktreeEntryIsUnsupported) {
  fixtureShell("git init -q " + shellQuoted(root / "nested"));  // check 7's failure comes later
  fixtureShell("cd " + shellQuoted(root) + " && git update-index --skip-worktree a.txt");
  EXPECT_EQ(codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(w)); }),
            "unsupported_workspace_carrier sparse_checkout");
  EXPECT_TRUE(listWorkspaceCheckpoints(*store).empty());
}

// j.2 vector 5: a directory that is no git work tree root has no carrier.
TEST_F(CaptureFixture, NonGitWorkspaceIsUnsupportedCarrier) {
  const fs::path plain = dir.path / "plain";
  fs::create_directories(plain);
  writeFile(plain / "f.txt", "f\n");
  WorkspaceIdentity pw = ensureWorkspaceIdentity(plain);
  EXPECT_EQ(codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(pw)); }),
            "unsupported_workspace_carrier not_worktree_root");
  // A subdirectory of a work tree is not its root either.
  WorkspaceIdentity inner = ensureWorkspaceIdentity(root / "bin");
  EXPECT_EQ(codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(inner)); }),
            "unsupported_workspace_carrier not_worktree_root");
}

TEST_F(CaptureFixture, LimitsAreEnforced) {
  const auto carrier = WorkspaceCarrier::open(storeDir, git, false);
  SnapshotLimits few;
  few.maxFiles = 3;
  EXPECT_EQ(codeAndDetail([&] { snapshotInstance(carrier, root, w.identity, few, false); }),
            "checkpoint_policy_limit_exceeded maxFiles");
  SnapshotLimits small;
  small.maxFileBytes = 9;  // bin/run.sh holds 10
  EXPECT_EQ(codeAndDetail([&] { snapshotInstance(carrier, root, w.identity, small, false); }),
            "checkpoint_policy_limit_exceeded maxFileBytes");
}

// d.2 step 7: an existing ref at another commit is a conflict and is never overwritten.
TEST_F(CaptureFixture, RefAtAnotherCommitIsAConflictAndStays) {
  WorkspaceCarrier::open(storeDir, git, false);
  const fs::path carrierGit = storeDir / "workspace" / "carrier.git";
  fixtureShell("cd " + shellQuoted(dir.path) + " && git --git-dir=" + shellQuoted(carrierGit) +
               " update-ref " + kVectorRef +
               " $(git -c user.name=t -c user.email=t@t.invalid --git-dir=" +
               shellQuoted(carrierGit) + " commit-tree $(git --git-dir=" + shellQuoted(carrierGit) +
               " mktree </dev/null) -m foreign)");
  const std::string foreign = carrierRef(storeDir, kVectorRef);
  ASSERT_EQ(foreign.size(), 40u);
  EXPECT_EQ(codeAndDetail([&] { captureCheckpoint(*store, storeDir, git, captureOf(w)); }),
            "workspace_fact_conflict");
  EXPECT_EQ(carrierRef(storeDir, kVectorRef), foreign);
  EXPECT_TRUE(listWorkspaceCheckpoints(*store).empty());
}

// c.5 / W7: a deleted ref or an emptied object fails light verification with its code.
TEST_F(CaptureFixture, LightVerificationFailsClosedOnDamage) {
  const CaptureResult r = captureCheckpoint(*store, storeDir, git, captureOf(w));
  const auto carrier = WorkspaceCarrier::open(storeDir, git, true);
  EXPECT_NO_THROW(lightVerifyCheckpoint(carrier, r.checkpoint));
  const fs::path objects = storeDir / "workspace" / "carrier.git" / "objects";
  const fs::path blob = objects / "ce" / "013625030ba8dba906f756967f9e9ca394464a";  // "hello\n"
  ASSERT_TRUE(fs::exists(blob));
  ::chmod(blob.c_str(), 0644);
  writeFile(blob, "");
  EXPECT_EQ(codeAndDetail([&] { lightVerifyCheckpoint(carrier, r.checkpoint); }),
            "checkpoint_artifact_corrupt");
  fs::remove(storeDir / "workspace" / "carrier.git" / kVectorRef);
  EXPECT_EQ(codeAndDetail([&] { lightVerifyCheckpoint(carrier, r.checkpoint); }),
            "workspace_ref_missing");
}

// W8 basis: an edited file, an added untracked file or an edited .gitignore changes the tree.
TEST_F(CaptureFixture, EditsChangeTheTree) {
  const auto carrier = WorkspaceCarrier::open(storeDir, git, false);
  const std::string base = snapshotInstance(carrier, root, w.identity, {}, false).treeOid;
  EXPECT_EQ(base, kVectorTree);
  writeFile(root / "new.txt", "n\n");
  const std::string added = snapshotInstance(carrier, root, w.identity, {}, false).treeOid;
  EXPECT_NE(added, base);
  fs::remove(root / "new.txt");
  writeFile(root / ".gitignore", "");
  const auto unignored = snapshotInstance(carrier, root, w.identity, {}, false);
  EXPECT_NE(unignored.treeOid, base);
  EXPECT_NE(std::find(unignored.paths.begin(), unignored.paths.end(), "debug.log"),
            unignored.paths.end());
}

// c.1: a carrier whose record says it exists but whose repository is gone is damaged; without
// the record and without facts it is re-created.
TEST_F(CaptureFixture, DamagedCarrierFailsClosed) {
  captureCheckpoint(*store, storeDir, git, captureOf(w));
  fs::remove_all(storeDir / "workspace" / "carrier.git");
  EXPECT_EQ(codeAndDetail([&] { WorkspaceCarrier::open(storeDir, git, true); }),
            "workspace_carrier_damaged");
  fs::remove(storeDir / "workspace" / "carrier.json");
  EXPECT_EQ(codeAndDetail([&] { WorkspaceCarrier::open(storeDir, git, true); }),
            "workspace_carrier_damaged");
  EXPECT_NO_THROW(WorkspaceCarrier::open(storeDir, git, false));
  EXPECT_TRUE(fs::exists(storeDir / "workspace" / "carrier.json"));
}
