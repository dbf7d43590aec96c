// workspace_restore_process_test.cpp — isolated restore end to end with real processes, real git
// and SIGKILL (workspace-continuity-contract.md f, crash table R, j.2 vector 7). The scenario is
// git-workspace-drift with driftAction isolated_restore: `run` is killed at P7#1 (the Edit's
// checkpoint C accepted, the next provider step not started), the user edits the tracked a.txt,
// and `recover` finds the plan parked exactly [workspace_drifted]: it restores C into
// <store>/workspace/instances/<ws32>-e2 (a locked worktree of the carrier, a fresh marker I′),
// commits the transition to epoch 2 and continues there. Expected values come from the contract
// (b.3 names and ids, f.2 steps, table R) and the scenario, never from a run of the code:
//  * the user's directory (work tree and .git) is byte-identical across every recovery;
//  * a kill at P23/P24/P25 leaves no transition (and, from P24 on, the marker and ref R); the
//    next start-up quarantines the residue (f.3), restores again, reuses ref R exactly, with a
//    new marker identity (vector 7);
//  * a kill at P26 leaves the transition; the next start-up restores nothing and continues in
//    the instance (R5);
//  * the continuation's header names I′ and binds (epoch 2, R).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../workspace_test_util.h"
#include "agent_process.h"
#include "crashsim/build_paths.h"
#include "crashsim/continuation.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"
#include "crashsim/workspace_facts.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kAgent;
using testutil::readFile;
using testutil::treeBytes;

// git-workspace-drift with driftAction isolated_restore (a private copy: the scenario list of
// the sweeps is unchanged).
fs::path restoreScenario(const testutil::AgentSandbox& box) {
  std::ifstream in(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "git-workspace-drift.json");
  Json s = Json::parse(in);
  s["id"] = "git-workspace-restore-test";
  s["workspacePolicy"]["driftAction"] = "isolated_restore";
  const fs::path p = box.base / "restore.json";
  std::ofstream(p) << s.dump(2);
  return p;
}

testutil::AgentStep restoreStep(const testutil::AgentSandbox& box, const std::string& command,
                                const std::string& arm, const std::string& logName,
                                const std::string& plant = {}) {
  return testutil::runAgentStep(box, box.base / "restore.json", command, arm, logName, {}, plant);
}

// The hermetic-enough system git (for reading the carrier only).
std::string git(const fs::path& gitDir, const std::string& args) {
  const std::string cmd = "GIT_CONFIG_NOSYSTEM=1 HOME=/nonexistent git --git-dir='" +
                          gitDir.string() + "' " + args + " 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = ::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    ::pclose(p);
  }
  return out;
}

struct Crashed {
  std::string sessionId, sourceRunId, workspaceId;
  WorkspaceCheckpointRow c;  // the Edit's checkpoint (epoch 1, the second)
  std::string userIdentity;
  std::map<std::string, std::string> userBytes;  // the user's directory after the edit
  // b.3 / f.2 derived from the contract: the instance, its lock reason, R and its ref.
  fs::path instance;
  std::string lockReason, restoredId, restoredRef;
};

// Seeds, kills `run` at P7#1, then the user edits a.txt (drift after the crash).
Crashed crashAndDrift(const testutil::AgentSandbox& box) {
  restoreScenario(box);
  Crashed x;
  EXPECT_EQ(restoreStep(box, "seed", "", "seed").exitCode, 0);
  const testutil::AgentStep run = restoreStep(box, "run", "P7:1", "run");
  EXPECT_TRUE(run.signaled && run.signal == SIGKILL) << readFile(box.base / "run.log");
  auto store = RuntimeStore::open(box.store());
  const auto checkpoints = listWorkspaceCheckpoints(*store);
  EXPECT_EQ(checkpoints.size(), 2u);
  if (checkpoints.size() != 2) return x;
  x.c = checkpoints[1];
  x.workspaceId = x.c.workspaceId;
  const auto runs = store->listRuns();
  EXPECT_EQ(runs.size(), 1u);
  const RunHeader& h = runs.at(0);
  x.sessionId = h.sessionId;
  x.sourceRunId = h.runId;
  x.userIdentity = h.workspaceIdentity.value_or("");
  std::ofstream(box.ws() / "a.txt", std::ios::binary | std::ios::trunc) << "edited by the user\n";
  x.userBytes = treeBytes(box.ws());
  x.instance = fs::weakly_canonical(box.store()) / "workspace" / "instances" /
               (x.workspaceId.substr(4) + "-e2");
  x.lockReason = "crashsim checkpoint " + x.c.checkpointId + " epoch 2";
  return x;
}

// R's id and ref once the source run's full high-water is known (after start-up repair sealed
// it: the recovered terminal is part of Sn).
void deriveRestored(const testutil::AgentSandbox& box, Crashed& x) {
  auto store = RuntimeStore::open(box.store());
  const auto h = store->readRun(x.sessionId, x.sourceRunId);
  ASSERT_TRUE(h);
  const ImmutablePrefix sn = readImmutablePrefix(
      *store, PrefixIdentity{h->sessionId, h->invocationId, h->runId, h->turnId});
  x.restoredId = checkpointIdFor(x.workspaceId, 2, "restored", sn.segmentJson());
  x.restoredRef = checkpointRefName(x.workspaceId, 2, x.restoredId);
}

// The registration of `path` in the carrier: {"detached", "HEAD <oid>", "locked <reason>"}.
std::string registrationOf(const testutil::AgentSandbox& box, const fs::path& path) {
  const std::string list =
      git(box.store() / "workspace" / "carrier.git", "worktree list --porcelain");
  const auto at = list.find("worktree " + path.string() + "\n");
  if (at == std::string::npos) return {};
  const auto end = list.find("\n\n", at);
  return list.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The end state after a successful restore and continuation (f.2 R5, table R row R5).
void expectRestoredAndContinued(const testutil::AgentSandbox& box, const Crashed& x,
                                const Json& report) {
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(scanWorkspaceLineage(*store), "");
  const auto epochs = listWorkspaceEpochs(*store);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[1].instanceOrigin, "restored");
  EXPECT_EQ(epochs[1].openedReason, "isolated_restore");
  EXPECT_EQ(epochs[1].canonicalRoot, x.instance.string());
  const auto transitions = listWorkspaceTransitions(*store);
  ASSERT_EQ(transitions.size(), 1u);
  EXPECT_EQ(transitions[0].fromInstance, x.userIdentity);
  EXPECT_EQ(transitions[0].sourceCheckpointId, x.c.checkpointId);
  const std::string iPrime = transitions[0].toInstance;
  EXPECT_NE(iPrime, x.userIdentity);
  const auto marked = readWorkspaceIdentity(x.instance);
  ASSERT_TRUE(marked);
  EXPECT_EQ(marked->identity, iPrime);
  bool restoredFound = false;
  for (const auto& c : listWorkspaceCheckpoints(*store))
    if (c.checkpointId == x.restoredId) {
      restoredFound = true;
      EXPECT_EQ(c.kind, "restored");
      EXPECT_EQ(c.epoch, 2);
      EXPECT_EQ(c.commitOid, x.c.commitOid);
      EXPECT_EQ(c.treeOid, x.c.treeOid);
      EXPECT_EQ(c.refName, x.restoredRef);
      EXPECT_EQ(c.derivedFrom, x.c.checkpointId);
      EXPECT_EQ(c.instanceIdentity, iPrime);
    }
  EXPECT_TRUE(restoredFound) << "no restored checkpoint " << x.restoredId;
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "edited by the user\n");
  // The instance holds C's tree (the Edit's result), the registration is locked with the reason.
  EXPECT_EQ(readFile(x.instance / "a.txt"), "hello, world\n");
  const std::string reg = registrationOf(box, x.instance);
  EXPECT_NE(reg.find("HEAD " + x.c.commitOid), std::string::npos) << reg;
  EXPECT_NE(reg.find("detached"), std::string::npos) << reg;
  EXPECT_NE(reg.find("locked " + x.lockReason), std::string::npos) << reg;
  EXPECT_EQ(git(box.store() / "workspace" / "carrier.git", "rev-parse " + x.restoredRef),
            x.c.commitOid + "\n");
  // The continuation ran in the restored instance, bound to (epoch 2, R), and completed.
  const Json plan = report.value("plan", Json());
  ASSERT_EQ(plan.value("decision", ""), "continue") << report.dump();
  EXPECT_EQ(plan["safetySnapshot"]["workspaceIdentity"], iPrime);
  EXPECT_EQ(plan["safetySnapshot"]["workspaceBoundary"]["epoch"], 2);
  EXPECT_EQ(plan["safetySnapshot"]["workspaceBoundary"]["checkpointId"], x.restoredId);
  const auto target =
      store->readRun(plan["sessionId"].get<std::string>(), plan["runId"].get<std::string>());
  ASSERT_TRUE(target && target->workspaceBoundary);
  EXPECT_EQ(target->workspaceIdentity, iPrime);
  EXPECT_EQ((*target->workspaceBoundary)["epoch"], 2);
  EXPECT_EQ((*target->workspaceBoundary)["checkpointId"], x.restoredId);
  EXPECT_EQ(target->status, "completed");
  // The user's directory (work tree and .git) is byte-identical (H1).
  EXPECT_EQ(treeBytes(box.ws()), x.userBytes);
}

}  // namespace

TEST(WorkspaceRestoreProcess, DriftAfterACoveredCrashRestoresAndContinuesInTheInstance) {
  testutil::AgentSandbox box;
  Crashed x = crashAndDrift(box);
  ASSERT_FALSE(x.c.checkpointId.empty());
  const testutil::AgentStep recover = restoreStep(box, "recover", "", "recover");
  ASSERT_TRUE(recover.exited && recover.exitCode == 0) << readFile(box.base / "recover.log");
  const Json restore = recover.report.value("workspaceRestore", Json());
  ASSERT_EQ(restore.value("action", ""), "restored") << recover.report.dump();
  EXPECT_EQ(restore["toEpoch"], 2);
  EXPECT_EQ(restore["sourceCheckpointId"], x.c.checkpointId);
  deriveRestored(box, x);
  EXPECT_EQ(restore["restoredCheckpointId"], x.restoredId);
  expectRestoredAndContinued(box, x, recover.report);
}

// e.3 diagnostic isolated_restore_available: a dry run of the drifted start-up reports
// would_restore and names the restore on the parked plan (f.1 holds), writing nothing; with
// driftAction park the same drift names no restore.
TEST(WorkspaceRestoreProcess, DryRunNamesTheAvailableRestore) {
  testutil::AgentSandbox box;
  Crashed x = crashAndDrift(box);
  ASSERT_FALSE(x.c.checkpointId.empty());
  const auto diagnosticsOf = [](const testutil::AgentStep& s, std::string_view code) {
    Json out = Json::array();
    for (const Json& d : s.report["plan"].value("diagnostics", Json::array()))
      if (d.value("code", "") == code) out.push_back(d);
    return out;
  };
  // `crashsim resume --dry-run --json` (crashsim-agent has no dry run): its report on stdout.
  const auto dryRun = [&](const fs::path& scenario, const std::string& log) {
    testutil::AgentProcess cli(fs::path(CRASHSIM_BINARY_DIR) / "harness" / "crashsim",
                               {"resume", box.store().string(), "--workspace", box.ws().string(),
                                "--scenario", scenario.string(), "--dry-run", "--json"},
                               {}, box.base / log, /*truncateLog=*/true);
    testutil::AgentStep s;
    static_cast<testutil::AgentExit&>(s) = cli.reap();
    const std::string out = readFile(box.base / log);
    if (s.exited && out.find('{') != std::string::npos)
      s.report = Json::parse(out.substr(out.find('{')));
    return s;
  };
  const testutil::AgentStep dry = dryRun(box.base / "restore.json", "dry.log");
  ASSERT_TRUE(dry.exited && dry.exitCode == 1) << readFile(box.base / "dry.log");  // parked
  EXPECT_EQ(dry.report["workspaceRestore"].value("action", ""), "would_restore") << dry.report;
  EXPECT_EQ(dry.report["plan"].value("rejectionReasons", Json()),
            Json::array({"workspace_drifted"}));
  EXPECT_EQ(diagnosticsOf(dry, "isolated_restore_available"),
            Json::array({{{"code", "isolated_restore_available"},
                          {"detail", {{"checkpointId", x.c.checkpointId}}}}}))
      << dry.report.dump();
  EXPECT_FALSE(fs::exists(x.instance)) << "a dry run restored";
  Json parkPolicy = Json::parse(readFile(box.base / "restore.json"));
  parkPolicy["workspacePolicy"]["driftAction"] = "park";
  std::ofstream(box.base / "park.json") << parkPolicy.dump();
  const testutil::AgentStep parked = dryRun(box.base / "park.json", "parked.log");
  EXPECT_EQ(parked.report["plan"].value("rejectionReasons", Json()),
            Json::array({"workspace_drifted"}));
  EXPECT_EQ(diagnosticsOf(parked, "isolated_restore_available"), Json::array())
      << parked.report.dump();
}

// Table R rows R2–R5: a kill at each restore failpoint leaves its durable state (i.1), the user's
// directory untouched; the next start-up converges on one transition and continues in the
// instance (P23–P25: residue quarantined, restored again, ref R reused, a new marker).
class RestoreKill : public ::testing::TestWithParam<std::string> {};

TEST_P(RestoreKill, LeavesItsRowAndTheNextStartUpConverges) {
  const std::string fp = GetParam();
  testutil::AgentSandbox box;
  Crashed x = crashAndDrift(box);
  ASSERT_FALSE(x.c.checkpointId.empty());
  const testutil::AgentStep killed = restoreStep(box, "recover", fp + ":1", "recover-killed");
  ASSERT_TRUE(killed.signaled && killed.signal == SIGKILL)
      << readFile(box.base / "recover-killed.log");
  deriveRestored(box, x);
  EXPECT_EQ(treeBytes(box.ws()), x.userBytes) << "the kill at " << fp << " changed the user's dir";
  std::string residueIdentity;
  {
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(scanWorkspaceLineage(*store), "");
    const bool committed = fp == "P26";
    EXPECT_EQ(listWorkspaceTransitions(*store).size(), committed ? 1u : 0u);
    EXPECT_EQ(listWorkspaceEpochs(*store).size(), committed ? 2u : 1u);
    // The instance is there, registered and locked (R2 on).
    EXPECT_TRUE(fs::is_directory(x.instance));
    EXPECT_NE(registrationOf(box, x.instance).find("locked " + x.lockReason), std::string::npos);
    const auto marked = readWorkspaceIdentity(x.instance);
    const std::string ref =
        git(box.store() / "workspace" / "carrier.git", "rev-parse -q --verify " + x.restoredRef);
    if (fp == "P23") {
      EXPECT_FALSE(marked) << "P23 precedes the marker";
      EXPECT_EQ(ref, "") << "P23 precedes ref R";
    } else {
      ASSERT_TRUE(marked);
      residueIdentity = marked->identity;
      EXPECT_EQ(ref, x.c.commitOid + "\n");
    }
  }
  const testutil::AgentStep recover = restoreStep(box, "recover", "", "recover");
  ASSERT_TRUE(recover.exited && recover.exitCode == 0) << readFile(box.base / "recover.log");
  if (fp == "P26") {
    EXPECT_FALSE(recover.report.contains("workspaceRestore")) << recover.report.dump();
    EXPECT_FALSE(recover.report.contains("restoreResidue")) << recover.report.dump();
  } else {
    const std::string name = x.workspaceId.substr(4) + "-e2";
    EXPECT_EQ(recover.report.value("restoreResidue", Json()),
              Json({{"quarantined", Json::array({name})}}));
    EXPECT_EQ(recover.report["workspaceRestore"].value("action", ""), "restored");
    EXPECT_TRUE(fs::is_directory(box.store() / "workspace" / "quarantine" / (name + ".1")));
    EXPECT_FALSE(fs::exists(box.store() / "workspace" / "quarantine" / (name + ".intent.json")));
  }
  expectRestoredAndContinued(box, x, recover.report);
  if (!residueIdentity.empty() && fp != "P26") {
    const auto marked = readWorkspaceIdentity(x.instance);
    ASSERT_TRUE(marked);
    EXPECT_NE(marked->identity, residueIdentity) << "a marker in residue authorises nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(TableR, RestoreKill, ::testing::Values("P23", "P24", "P25", "P26"));

// Plant restore_over_user_directory (crashsim/plant.h): the checkpoint is also materialised over
// the user's directory. The byte-identity of the user's directory (H1) catches it.
TEST(WorkspaceRestoreProcess, PlantedRestoreOverTheUsersDirectoryIsCaught) {
  testutil::AgentSandbox box;
  Crashed x = crashAndDrift(box);
  ASSERT_FALSE(x.c.checkpointId.empty());
  const testutil::AgentStep recover =
      restoreStep(box, "recover", "", "recover", "restore_over_user_directory");
  ASSERT_TRUE(recover.exited) << readFile(box.base / "recover.log");
  EXPECT_NE(treeBytes(box.ws()), x.userBytes) << "the plant did not reach the user's directory";
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "hello, world\n");  // the user's edit overwritten
}

// Plant restore_fact_before_ref: the transition commits before R's ref exists (a.3.1). Killed at
// P24, the store holds a restored checkpoint whose ref is missing — what table R's P24 row
// forbids (no fact before P25's COMMIT).
TEST(WorkspaceRestoreProcess, PlantedFactBeforeRefIsCaughtAtP24) {
  testutil::AgentSandbox box;
  Crashed x = crashAndDrift(box);
  ASSERT_FALSE(x.c.checkpointId.empty());
  const testutil::AgentStep killed =
      restoreStep(box, "recover", "P24:1", "recover-killed", "restore_fact_before_ref");
  ASSERT_TRUE(killed.signaled) << readFile(box.base / "recover-killed.log");
  deriveRestored(box, x);
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(listWorkspaceTransitions(*store).size(), 1u) << "the fact committed before P24";
  EXPECT_EQ(
      git(box.store() / "workspace" / "carrier.git", "rev-parse -q --verify " + x.restoredRef), "")
      << "and its ref does not exist";
}
