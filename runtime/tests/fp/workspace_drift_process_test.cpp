// workspace_drift_process_test.cpp — the planner's checkpoint gates end to end with real
// processes, real git and SIGKILL (workspace-continuity-contract.md e.3 rows 8–9, e.4, e.5; the
// scenario git-workspace-drift). `run` is killed at P7#1: the Edit's T2 committed and captured
// (d.1 b), its result delivered, the next provider step not started — so the crashed boundary is
// covered by that checkpoint (the repaired suffix is the recovered terminal, neutral).
//  * The user edits the tracked a.txt before `recover`: the plan parks workspace_drifted (row 8),
//    no continuation runs, the user's a.txt and .git are as the user left them.
//  * Nothing changes before `recover`: the plan continues bound to the checkpoint (row 9), the
//    continuation's run header carries workspaceBoundary {protocol, workspaceId, epoch,
//    checkpointId}, and the task completes.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "agent_process.h"
#include "crashsim/build_paths.h"
#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kAgent;
using testutil::readFile;
const fs::path kDriftScenario =
    fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "git-workspace-drift.json";

testutil::AgentStep driftAgent(const testutil::AgentSandbox& box, const std::string& command,
                               const std::string& arm, const std::string& logName,
                               const std::string& plant = {}) {
  return testutil::runAgentStep(box, kDriftScenario, command, arm, logName, {}, plant);
}

std::map<std::string, std::string> driftDirBytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink())
      out[fs::relative(e.path(), dir).string()] = readFile(e.path());
  return out;
}

// Seeds the git workspace and kills `run` at P7#1 (the Edit's checkpoint accepted).
void crashCovered(const testutil::AgentSandbox& box) {
  ASSERT_EQ(driftAgent(box, "seed", "", "seed").exitCode, 0);
  const testutil::AgentStep run = driftAgent(box, "run", "P7:1", "run");
  ASSERT_TRUE(run.signaled && run.signal == SIGKILL) << readFile(box.base / "run.log");
  auto store = RuntimeStore::open(box.store());
  ASSERT_EQ(listWorkspaceCheckpoints(*store).size(), 2u);  // the baseline and after the Edit
}

}  // namespace

TEST(WorkspaceDriftProcess, UserEditAfterACoveredCrashParksDrifted) {
  testutil::AgentSandbox box;
  crashCovered(box);
  std::ofstream(box.ws() / "a.txt", std::ios::binary | std::ios::trunc) << "edited by the user\n";
  const auto gitBefore = driftDirBytes(box.ws() / ".git");
  const testutil::AgentStep recover = driftAgent(box, "recover", "", "recover");
  ASSERT_TRUE(recover.exited) << readFile(box.base / "recover.log");
  const Json plan = recover.report.value("plan", Json());
  EXPECT_EQ(plan.value("decision", ""), "park") << recover.report.dump();
  EXPECT_EQ(plan.value("rejectionReasons", Json()), Json::array({"workspace_drifted"}));
  EXPECT_TRUE(recover.report.value("continuation", Json()).is_null());
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "edited by the user\n");
  EXPECT_EQ(driftDirBytes(box.ws() / ".git"), gitBefore);
}

TEST(WorkspaceDriftProcess, NoDriftContinuesBoundToTheCheckpoint) {
  testutil::AgentSandbox box;
  crashCovered(box);
  const testutil::AgentStep recover = driftAgent(box, "recover", "", "recover");
  ASSERT_TRUE(recover.exited && recover.exitCode == 0) << readFile(box.base / "recover.log");
  const Json plan = recover.report.value("plan", Json());
  ASSERT_EQ(plan.value("decision", ""), "continue") << recover.report.dump();
  auto store = RuntimeStore::open(box.store());
  const auto checkpoints = listWorkspaceCheckpoints(*store);
  ASSERT_GE(checkpoints.size(), 2u);
  const Json binding = plan["safetySnapshot"]["workspaceBoundary"];
  EXPECT_EQ(binding["checkpointId"], checkpoints[1].checkpointId);
  EXPECT_EQ(binding["treeOid"], checkpoints[1].treeOid);
  const auto target =
      store->readRun(plan["sessionId"].get<std::string>(), plan["runId"].get<std::string>());
  ASSERT_TRUE(target && target->workspaceBoundary);
  EXPECT_EQ((*target->workspaceBoundary)["checkpointId"], checkpoints[1].checkpointId);
  EXPECT_EQ(target->status, "completed");
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "hello, world\n");
}

// The plant planner_ignores_drift (crashsim/plant.h): the planner passes the drifted instance.
// The plan check above catches it (the plan continues instead of parking workspace_drifted); the
// e.4 revalidation still refuses the claim (target_workspace_changed), so the user's edit stays.
TEST(WorkspaceDriftProcess, PlantedPlannerIgnoringDriftIsCaught) {
  testutil::AgentSandbox box;
  crashCovered(box);
  std::ofstream(box.ws() / "a.txt", std::ios::binary | std::ios::trunc) << "edited by the user\n";
  const testutil::AgentStep recover =
      driftAgent(box, "recover", "", "recover", "planner_ignores_drift");
  const std::string log = readFile(box.base / "recover.log");
  EXPECT_EQ(log.find("\"rejectionReasons\":[\"workspace_drifted\"]"), std::string::npos) << log;
  EXPECT_NE(log.find("target_workspace_changed"), std::string::npos) << log;
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "edited by the user\n");
}
