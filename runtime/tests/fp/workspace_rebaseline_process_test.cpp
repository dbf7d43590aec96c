// workspace_rebaseline_process_test — crash table B of the durable rebaseline
// (workspace-continuity-contract.md g.5) with real processes, real git and SIGKILL, on the
// scenario git-workspace-drift: `run` is killed at P7#1 (the Edit's checkpoint accepted), the user
// edits a.txt, `recover` parks workspace_drifted and names the boundary the user confirms
// (plan.boundaryManifestDigest), then `recover --rebaseline <digest>`:
//  * B5 (no kill, and a kill at P28): epoch 2 opened by user_rebaseline; the continuation binds it
//    and commits the replay notice as its event #2 before its first provider step, exactly once;
//  * B4 (P27): rolled back — epoch 1 current, the plan parks as before; confirming again works;
//  * B6 (P29): the notice is durable, the target is sealed by the next start-up and the next
//    continuation does not repeat it;
//  * the plants rebaseline_skips_notice / rebaseline_repeats_notice break "one notice per rebased
//    epoch" (H4), which `noticeProblem` reports.
// The user's .git and a.txt stay as the user left them in every row.
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
const fs::path kScenario = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "git-workspace-drift.json";
const std::string kSession = "session-git-workspace-drift";

testutil::AgentStep rebaselineStep(const testutil::AgentSandbox& box, const std::string& command,
                                   const std::string& arm, const std::string& logName,
                                   const std::string& rebaseline = {},
                                   const std::string& plant = {}) {
  std::vector<std::string> extra;
  if (!rebaseline.empty()) extra = {"--rebaseline", rebaseline};
  return testutil::runAgentStep(box, kScenario, command, arm, logName, extra, plant);
}

std::map<std::string, std::string> dirBytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && !e.is_symlink())
      out[fs::relative(e.path(), dir).string()] = readFile(e.path());
  return out;
}

// The expected notice text of g.3 for readSet ["a.txt"] in epoch 2 (the contract's lines).
const std::string kNotice =
    "Workspace rebaselined to epoch 2.\n"
    "The files were accepted as they are now and may differ from what earlier messages show.\n"
    "Read each file listed below again before you write or edit it; shell commands stay blocked "
    "until all of them have been read.\n"
    "Files: \"a.txt\"";

struct Notice {
  std::string runId, eventId, text;
  int64_t eventSeq = 0;
};
std::vector<Notice> notices(RuntimeStore& store) {
  std::vector<Notice> out;
  for (const RunHeader& h : store.listRuns(kSession))
    for (const StoredEvent& se : store.readRunEvents(h.sessionId, h.runId)) {
      const Json& j = se.event.json;
      if (j.contains("actions") && j["actions"].contains("stateDelta") &&
          j["actions"]["stateDelta"].contains("workspaceRebaselineNotice"))
        out.push_back({h.runId, se.event.id, j["content"].value("text", ""), se.eventSeq});
    }
  return out;
}

// H4 "one notice per rebased epoch before its first step", from the store alone: for each epoch
// opened by user_rebaseline in which some run bound to it reached a provider step (holds a model
// event), exactly one notice with the g.3 text and id, each as event #2 of its run. "" when it
// holds.
std::string noticeProblem(RuntimeStore& store) {
  const auto ns = notices(store);
  for (const WorkspaceEpochRow& e : listWorkspaceEpochs(store)) {
    if (e.openedReason != "user_rebaseline") continue;
    size_t count = 0;
    for (const Notice& n : ns)
      if (n.eventId == rebaselineNoticeId(e.openedEventId, n.runId)) {
        ++count;
        if (n.text != kNotice) return "notice text differs: " + n.text;
        if (n.eventSeq != 2) return "notice at event " + std::to_string(n.eventSeq);
      }
    bool reached = false;  // a run bound to the epoch holds a model event
    for (const RunHeader& h : store.listRuns(kSession)) {
      if (!h.workspaceBoundary || h.workspaceBoundary->value("epoch", int64_t{0}) != e.epoch)
        continue;
      for (const StoredEvent& se : store.readRunEvents(h.sessionId, h.runId))
        if (se.event.json.value("role", "") == "model") reached = true;
    }
    if (reached && count != 1)
      return "epoch " + std::to_string(e.epoch) + " has " + std::to_string(count) + " notices";
  }
  return "";
}

// H8 for this scenario, from the store alone: in every run bound to an epoch opened by
// user_rebaseline (its readSet ["a.txt"], no Read of it in the scenario), each Edit of a.txt is
// refused pre-T1 — no dispatch, a response with g.4's code and message. "" when it holds.
std::string gateProblem(RuntimeStore& store) {
  for (const WorkspaceEpochRow& e : listWorkspaceEpochs(store)) {
    if (e.openedReason != "user_rebaseline") continue;
    const std::string want =
        "read \"a.txt\" again before writing it (workspace epoch " + std::to_string(e.epoch) + ")";
    for (const RunHeader& h : store.listRuns(kSession)) {
      if (!h.workspaceBoundary || h.workspaceBoundary->value("epoch", int64_t{0}) != e.epoch)
        continue;
      const auto events = store.readRunEvents(h.sessionId, h.runId);
      for (const StoredEvent& call : events) {
        const Json& c = call.event.json.value("content", Json::object());
        if (c.value("kind", "") != "function_call" || c.value("name", "") != "Edit") continue;
        const std::string callId = c.value("id", "");
        for (const StoredEvent& o : events) {
          const Json& j = o.event.json;
          if (j.contains("actions") && j["actions"].contains("toolDispatch") &&
              j.value("refs", Json::object()).value("toolCallId", "") == callId)
            return "the Edit " + callId + " of run " + h.runId + " was dispatched";
          const Json& oc = j.value("content", Json::object());
          if (oc.value("kind", "") == "function_response" && oc.value("id", "") == callId &&
              oc.value("result", Json::object()) !=
                  Json{{"error", {{"code", "rebaseline_read_required"}, {"message", want}}}})
            return "the Edit " + callId + " of run " + h.runId + " was answered " +
                   oc.value("result", Json()).dump();
        }
      }
    }
  }
  return "";
}

// Seeds, kills `run` at P7#1, edits a.txt, and returns the digest of the parked plan.
std::string crashDriftAndPark(const testutil::AgentSandbox& box, const std::string& at = "P7:1") {
  EXPECT_EQ(rebaselineStep(box, "seed", "", "seed").exitCode, 0);
  const testutil::AgentStep run = rebaselineStep(box, "run", at, "run");
  EXPECT_TRUE(run.signaled && run.signal == SIGKILL) << readFile(box.base / "run.log");
  std::ofstream(box.ws() / "a.txt", std::ios::binary | std::ios::trunc) << "edited by the user\n";
  const testutil::AgentStep parked = rebaselineStep(box, "recover", "", "park");
  const Json plan = parked.report.value("plan", Json());
  EXPECT_EQ(plan.value("rejectionReasons", Json()), Json::array({"workspace_drifted"}))
      << parked.report.dump();
  return plan.value("boundaryManifestDigest", "");
}

void expectContinuedInEpochTwo(const testutil::AgentSandbox& box, const testutil::AgentStep& s) {
  ASSERT_TRUE(s.exited && s.exitCode == 0) << readFile(box.base / "recover.log");
  const Json plan = s.report.value("plan", Json());
  ASSERT_EQ(plan.value("decision", ""), "continue") << s.report.dump();
  EXPECT_EQ(plan["safetySnapshot"]["workspaceBoundary"]["epoch"], 2);
  EXPECT_EQ(s.report["continuation"].value("status", ""), "completed");
}

}  // namespace

TEST(RebaselineProcess, WrongDigestIsRefusedAndNothingIsWritten) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box);
  ASSERT_FALSE(digest.empty());
  std::string ledger;
  {
    auto store = RuntimeStore::open(box.store());
    ledger = store->ledgerHash();
  }
  const auto carrier = dirBytes(box.store() / "workspace" / "carrier.git" / "refs");
  const testutil::AgentStep s =
      rebaselineStep(box, "recover", "", "recover", "sha256:" + std::string(64, '0'));
  EXPECT_EQ(s.exitCode, 2) << readFile(box.base / "recover.log");
  EXPECT_NE(readFile(box.base / "recover.log").find("rebaseline_confirmation_required"),
            std::string::npos);
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(store->ledgerHash(), ledger);
  EXPECT_EQ(dirBytes(box.store() / "workspace" / "carrier.git" / "refs"), carrier);
  EXPECT_EQ(listWorkspaceEpochs(*store).size(), 1u);
}

// B5 without a kill: epoch 2, the continuation bound to it, one notice as its event #2.
TEST(RebaselineProcess, ConfirmedRebaselineContinuesWithOneNotice) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box);
  const auto gitBefore = dirBytes(box.ws() / ".git");
  const testutil::AgentStep s = rebaselineStep(box, "recover", "", "recover", digest);
  expectContinuedInEpochTwo(box, s);
  EXPECT_EQ(s.report["rebaseline"]["epoch"], 2);
  EXPECT_EQ(s.report["rebaseline"]["readSet"], (Json{{"kind", "paths"}, {"paths", {"a.txt"}}}));
  auto store = RuntimeStore::open(box.store());
  const auto ns = notices(*store);
  ASSERT_EQ(ns.size(), 1u);
  EXPECT_EQ(ns[0].runId, s.report["plan"]["runId"]);
  EXPECT_EQ(noticeProblem(*store), "");
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "edited by the user\n");
  EXPECT_EQ(dirBytes(box.ws() / ".git"), gitBefore);
  store->checkIntact();
}

// B4: a kill inside the transition transaction rolls back; the plan parks as before; the same
// confirmation then succeeds (the orphan ref reused exactly).
TEST(RebaselineProcess, KillAtP27LeavesTheOldEpochAndParksAsBefore) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box);
  const testutil::AgentStep k = rebaselineStep(box, "recover", "P27:1", "recover-kill", digest);
  ASSERT_TRUE(k.signaled && k.signal == SIGKILL) << readFile(box.base / "recover-kill.log");
  {
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(listWorkspaceEpochs(*store).size(), 1u);
    EXPECT_TRUE(notices(*store).empty());
  }
  const testutil::AgentStep parked = rebaselineStep(box, "recover", "", "park-again");
  EXPECT_EQ(parked.report["plan"].value("rejectionReasons", Json()),
            Json::array({"workspace_drifted"}));
  expectContinuedInEpochTwo(box, rebaselineStep(box, "recover", "", "recover", digest));
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(noticeProblem(*store), "");
}

// B5 after a kill at P28: the next start-up needs no confirmation; it continues bound to epoch 2
// with the notice.
TEST(RebaselineProcess, KillAtP28ContinuesInTheNewEpochWithTheNotice) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box);
  const testutil::AgentStep k = rebaselineStep(box, "recover", "P28:1", "recover-kill", digest);
  ASSERT_TRUE(k.signaled && k.signal == SIGKILL) << readFile(box.base / "recover-kill.log");
  {
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(listWorkspaceEpochs(*store).size(), 2u);
    EXPECT_TRUE(notices(*store).empty());
  }
  expectContinuedInEpochTwo(box, rebaselineStep(box, "recover", "", "recover"));
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(notices(*store).size(), 1u);
  EXPECT_EQ(noticeProblem(*store), "");
}

// B6: the notice committed, no provider step; start-up seals that target and the next
// continuation does not repeat the notice.
TEST(RebaselineProcess, KillAtP29DoesNotRepeatTheNotice) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box);
  const testutil::AgentStep k = rebaselineStep(box, "recover", "P29:1", "recover-kill", digest);
  ASSERT_TRUE(k.signaled && k.signal == SIGKILL) << readFile(box.base / "recover-kill.log");
  std::string noticeRun;
  {
    auto store = RuntimeStore::open(box.store());
    const auto ns = notices(*store);
    ASSERT_EQ(ns.size(), 1u);
    noticeRun = ns[0].runId;
  }
  expectContinuedInEpochTwo(box, rebaselineStep(box, "recover", "", "recover"));
  auto store = RuntimeStore::open(box.store());
  const auto ns = notices(*store);
  ASSERT_EQ(ns.size(), 1u);
  EXPECT_EQ(ns[0].runId, noticeRun);
  EXPECT_NE(store->readRun(kSession, noticeRun)->status, "running");
  EXPECT_EQ(noticeProblem(*store), "");
}

// H4's check sees the plants: a continuation that skips its notice; a notice repeated by the
// next continuation of the epoch (after a kill at P29).
TEST(RebaselineProcess, PlantedNoticeFaultsAreCaught) {
  {
    testutil::AgentSandbox box;
    const std::string digest = crashDriftAndPark(box);
    rebaselineStep(box, "recover", "", "recover", digest, "rebaseline_skips_notice");
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(noticeProblem(*store), "epoch 2 has 0 notices");
  }
  {
    testutil::AgentSandbox box;
    const std::string digest = crashDriftAndPark(box);
    rebaselineStep(box, "recover", "P29:1", "recover-kill", digest);
    rebaselineStep(box, "recover", "", "recover", "", "rebaseline_repeats_notice");
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(noticeProblem(*store), "epoch 2 has 2 notices");
  }
}

// g.4 end to end: `run` killed at P1#1 (the Edit's call committed, no T1), the user edits a.txt,
// a confirmed rebaseline opens epoch 2 with readSet ["a.txt"]; the continuation's model issues
// the Edit again and the gate refuses it pre-T1 (rebaseline_read_required, no dispatch); the
// user's a.txt stays. The plant rebaseline_gate_open lets it through to preflight, whose answer
// is not g.4's, which gateProblem reports.
TEST(RebaselineProcess, GatedEditIsRefusedBeforeT1) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box, "P1:1");
  const testutil::AgentStep s = rebaselineStep(box, "recover", "", "recover", digest);
  expectContinuedInEpochTwo(box, s);
  EXPECT_EQ(s.report["continuation"]["refused"], 1);
  EXPECT_EQ(s.report["continuation"]["executions"], 0);
  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(gateProblem(*store), "");
  EXPECT_EQ(noticeProblem(*store), "");
  EXPECT_EQ(readFile(box.ws() / "a.txt"), "edited by the user\n");
}

TEST(RebaselineProcess, PlantedOpenGateIsCaught) {
  testutil::AgentSandbox box;
  const std::string digest = crashDriftAndPark(box, "P1:1");
  rebaselineStep(box, "recover", "", "recover", digest, "rebaseline_gate_open");
  auto store = RuntimeStore::open(box.store());
  // Past the open gate the Edit reaches preflight, which refuses it on the user's bytes (its
  // old_string is gone): not g.4's answer, which is what the check reports.
  const std::string problem = gateProblem(*store);
  EXPECT_NE(problem.find("was answered"), std::string::npos) << problem;
  EXPECT_NE(problem.find("tool_precondition_failed"), std::string::npos) << problem;
}

// e.3 diagnostic rebaseline_available (rows 4, 6–8 under driftAction offer_rebaseline, when g.1
// 2–6 hold): the parked plan names what the user confirms; once the instance is ineligible (c.4:
// an LFS filter attribute, g.1 item 6) the same park offers nothing and the confirmation is
// refused with the eligibility code; under driftAction park (the drift scenario) it never shows.
TEST(RebaselineProcess, AParkUnderOfferRebaselineNamesTheAvailableRebaseline) {
  const auto offered = [](const testutil::AgentStep& s) {
    Json out = Json::array();
    for (const Json& d : s.report["plan"].value("diagnostics", Json::array()))
      if (d.value("code", "") == "rebaseline_available") out.push_back(d);
    return out;
  };
  {  // driftAction park
    testutil::AgentSandbox box;
    ASSERT_FALSE(crashDriftAndPark(box).empty());
    EXPECT_EQ(offered(rebaselineStep(box, "recover", "", "park-again")), Json::array());
  }
  testutil::AgentSandbox box;
  Json offer = Json::parse(readFile(kScenario));
  offer["workspacePolicy"]["driftAction"] = "offer_rebaseline";
  const fs::path scenario = box.base / "offer.json";
  std::ofstream(scenario) << offer.dump();
  const auto step = [&](const std::string& command, const std::string& arm, const std::string& log,
                        std::vector<std::string> extra = {}) {
    return testutil::runAgentStep(box, scenario, command, arm, log, extra);
  };
  ASSERT_EQ(step("seed", "", "seed").exitCode, 0);
  const testutil::AgentStep run = step("run", "P7:1", "run");
  ASSERT_TRUE(run.signaled && run.signal == SIGKILL) << readFile(box.base / "run.log");
  std::ofstream(box.ws() / "a.txt", std::ios::binary | std::ios::trunc) << "edited by the user\n";
  const testutil::AgentStep parked = step("recover", "", "park");
  const std::string digest = parked.report["plan"].value("boundaryManifestDigest", "");
  ASSERT_FALSE(digest.empty()) << parked.report.dump();
  EXPECT_EQ(
      offered(parked),
      Json::array({{{"code", "rebaseline_available"},
                    {"detail", {{"sessionId", kSession}, {"boundaryManifestDigest", digest}}}}}))
      << parked.report.dump();
  std::ofstream(box.ws() / ".gitattributes") << "a.txt filter=lfs diff=lfs merge=lfs -text\n";
  const testutil::AgentStep ineligible = step("recover", "", "ineligible");
  EXPECT_EQ(ineligible.report["plan"].value("rejectionReasons", Json()),
            Json::array({"workspace_drifted"}));
  EXPECT_EQ(offered(ineligible), Json::array()) << ineligible.report.dump();
  const testutil::AgentStep refused = step("recover", "", "refused", {"--rebaseline", digest});
  EXPECT_EQ(refused.exitCode, 2) << readFile(box.base / "refused.log");
  EXPECT_NE(readFile(box.base / "refused.log").find("checkpoint_policy_unsupported"),
            std::string::npos)
      << readFile(box.base / "refused.log");
}
