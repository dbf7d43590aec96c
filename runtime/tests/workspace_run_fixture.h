// workspace_run_fixture.h — a store, the j.2 vector 3 git workspace and j.2 vector 4's first run
// (user, a call with T1/T2, model text, failed terminal), for the planner gate and rebaseline
// tests (workspace-continuity-contract.md e, g): the set-up both start from.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "continuation_test_util.h"
#include "crashsim/continuation.h"
#include "crashsim/workspace_gates.h"
#include "workspace_test_util.h"

namespace crashsim::testutil {

struct WorkspaceRunFixture : ::testing::Test {
  explicit WorkspaceRunFixture(const std::string& session) : r(ctest::ids(session, "run-1")) {}

  TempDir dir;
  fs::path storeDir = dir.path / "store";
  fs::path root = dir.path / "ws";
  std::unique_ptr<RuntimeStore> store;
  WorkspaceIdentity w;
  GitRuntime git = resolveGitRuntime();
  ctest::RunIds r;
  Call call;
  ctest::Host h;

  void SetUp() override {
    fs::create_directories(storeDir);
    store = RuntimeStore::open(storeDir);
    w = makeVector3Workspace(root);
    root = w.root;
    h.facts.workspaceIdentity = w.identity;
    h.facts.workspacePath = root.string();
  }

  // Rows 1 user, 2 call, 3 dispatch, 4 bound response (T1, T2 of `tool`), 5 model text,
  // 6 failed terminal (j.2 vector 4's first run).
  void sourceRun(const std::string& tool = "Write") {
    RunHeader hd = ctest::header(r, 500, root.string());
    hd.workspaceIdentity = w.identity;
    store->createRun(hd);
    store->append(r.user("write notes", true));
    call.id = Ident{r.session, r.invocation, r.run, r.turn};
    call.tool = tool;
    call.args = tool == "Read" ? Json{{"path", "a.txt"}} : Json{{"path", "notes.txt"}};
    call.mode = tool == "Read" ? "replay_safe" : "reconcile";
    store->commitToolPrepared(t1(call));
    store->commitToolOutcome(t2(call));
    store->append(r.model("done"));
    ctest::finishFailed(*store, r, hd);
  }

  // A capture of the workspace for the run's boundary at event_seq `p`.
  CaptureResult capture(int64_t p) {
    CaptureRequest req;
    req.instanceRoot = root;
    req.instanceIdentity = w.identity;
    req.canonicalRoot = root.string();
    req.run = PrefixIdentity{r.session, r.invocation, r.run, r.turn};
    req.lastEventSeq = p;
    req.ts = 1700000000000;
    return captureCheckpoint(*store, storeDir, git, req);
  }

  // The host under `requirement`, its inspector observing this workspace.
  ContinuationHost host(const std::string& requirement) {
    ContinuationHost ch = h.host();
    ch.currentCwd = root.string();
    ch.workspacePolicy.checkpointRequirement = requirement;
    ch.workspaceInspector = [this](const CheckpointFact* covering) {
      return observeWorkspace(
          WorkspaceObserveRequest{storeDir, root, w.identity, covering, std::nullopt});
    };
    return ch;
  }
};

}  // namespace crashsim::testutil
