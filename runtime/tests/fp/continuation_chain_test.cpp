// continuation_chain_test.cpp — Phase 1 continuation with real processes and SIGKILL (issue 6
// acceptance; spec e.4, e.9, f.7, g).
//
//  * continuation-chain: `run` is killed at P6 (self mode), `recover` is killed inside its own
//    continuation at P6 (block mode + SIGKILL), the next `recover` inside the next continuation
//    at P1 (call-3 committed, never dispatched), the next one at P11 (claim committed, no
//    start),
//    and a final `recover` finishes the task. Every crashed continuation target with a live
//    runtime_admission start is repaired like any other crashed run (g: only a claim without a
//    start gets the repair start + abandoned terminal). At every step the lineage of the newest
//    run is traversed with the production traversal (every prefix, start, replay and claim
//    digest verified); at the end the workspace is the scenario's reference, every call id ran
//    exactly once, and a further recovery changes nothing.
//  * A recovery killed at P11 and run again converges: claim repair, then a further
//    continuation that completes the task.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "agent_process.h"
#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "verdicts/workspace_expect.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kAgent;
const fs::path kScenario = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "continuation-chain.json";

using Sandbox = testutil::AgentSandbox;

using testutil::readFile;

enum class Kill { none, block, self };

struct ChainStep : testutil::AgentExit {
  std::optional<Json> control;  // the failpoint's control line
  Json report;                  // the last JSON line on stdout (normal exit)
};

// crashsim-agent <command> --store --workspace --scenario, armed with `arm` (when not empty).
// block: waits for the control line, then SIGKILLs; self: the child raises SIGKILL itself
// after writing the control line; none: waits for the normal exit.
ChainStep agent(const Sandbox& box, const std::string& command, const std::string& arm, Kill kill,
                const std::string& logName) {
  const fs::path log = box.base / (logName + ".log");
  std::vector<std::pair<std::string, std::string>> env;
  if (!arm.empty()) env.emplace_back("CRASHSIM_ARM", arm);
  if (kill == Kill::self) env.emplace_back("CRASHSIM_FAILPOINT_MODE", "self");
  std::vector<std::string> args{command};
  if (command != "seed") args.insert(args.end(), {"--store", box.store().string()});
  args.insert(args.end(), {"--workspace", box.ws().string(), "--scenario", kScenario.string()});
  testutil::AgentProcess child(kAgent, args, env, log, /*truncateLog=*/true);
  ChainStep r;
  if (kill != Kill::none) {
    r.control = child.waitForControlLine(std::chrono::seconds(60));
    if (kill == Kill::block) child.kill();
  }
  static_cast<testutil::AgentExit&>(r) = child.reap();
  std::istringstream out(readFile(log));
  std::string line, last;
  while (std::getline(out, line)) {
    if (!line.empty() && line.front() == '{') last = line;
  }
  if (!last.empty() && r.exited) r.report = Json::parse(last);
  return r;
}

// Kills `command` at `arm` and checks that it died there, leaving no normal-exit marker.
void killedAt(const Sandbox& box, const std::string& command, const std::string& arm, Kill kill,
              const std::string& logName) {
  fs::remove(box.store() / "agent-exit.json");
  const ChainStep r = agent(box, command, arm, kill, logName);
  ASSERT_TRUE(r.control.has_value())
      << command << " never reached " << arm << ": " << readFile(box.base / (logName + ".log"));
  EXPECT_EQ((*r.control)["failpoint"], arm.substr(0, arm.find(':')));
  ASSERT_TRUE(r.signaled && r.signal == SIGKILL) << command << " at " << arm;
  EXPECT_FALSE(fs::exists(box.store() / "agent-exit.json")) << command << " at " << arm;
}

std::vector<RunHeader> runsNewestFirst(RuntimeStore& store, const std::string& sessionId) {
  std::vector<RunHeader> runs = store.listRuns(sessionId);
  std::sort(runs.begin(), runs.end(), [](const RunHeader& a, const RunHeader& b) {
    if (a.createdAt != b.createdAt) return a.createdAt > b.createdAt;
    return a.runId > b.runId;
  });
  return runs;
}

// Traverses the lineage of the newest run of the session at its latest head with the one
// production traversal (e.4): every V2 edge's start, source prefix digest, replay manifest and
// provider replay digest, and durable claim are verified or the traversal throws.
Lineage verifiedLineage(RuntimeStore& store, const std::string& sessionId) {
  const RunHeader newest = runsNewestFirst(store, sessionId).front();
  ImmutablePrefix head = readImmutablePrefix(
      store, PrefixIdentity{newest.sessionId, newest.invocationId, newest.runId, newest.turnId});
  Lineage lin = traverseLineage(store, newest, std::move(head));
  EXPECT_EQ(lin.segments.size(), lin.edges.size() + 1);
  for (size_t i = 0; i < lin.edges.size(); ++i) {
    const LineageEdge& e = lin.edges[i];
    EXPECT_TRUE(e.v2) << "edge " << i;
    EXPECT_EQ(e.childSegment, i + 1);
    EXPECT_TRUE(e.start.has_value());
    if (!e.start) continue;
    const Json& start = e.start->json["actions"]["continuationStart"];
    const ImmutablePrefix& src = lin.segments[i];
    EXPECT_EQ(start["immediateSource"]["runId"], src.identity.runId);
    EXPECT_EQ(start["immediateSource"]["prefixDigest"], src.prefixDigest);
    EXPECT_EQ(e.source["sourcePrefixDigest"], src.prefixDigest);
  }
  return lin;
}

std::string provenanceOf(const Lineage& lin, size_t edge) {
  return lin.edges.at(edge).start->json["actions"]["continuationStart"]["provenance"];
}

std::map<std::string, int> executionsPerCall(const fs::path& effects) {
  std::map<std::string, int> out;
  for (const auto& line : EffectsLog::read(effects)) ++out[line.at("callId").get<std::string>()];
  return out;
}

void expectAllSettled(RuntimeStore& store, const Lineage& lin) {
  for (const ImmutablePrefix& p : lin.segments) {
    const RecoveryResolution res = resolveRecovery(p.events);
    EXPECT_FALSE(res.hasCorruption) << p.identity.runId;
    for (const auto& d : res.decisions) {
      // e.3: settled, or never dispatched (trimmed from the replay and re-issued later).
      EXPECT_TRUE(d.status == code::completed || d.status == code::definitely_not_dispatched)
          << p.identity.runId << " " << d.toolCallId << ": " << d.status;
    }
  }
  EXPECT_TRUE(store.listUnsettledToolOperations().empty());
}

}  // namespace

TEST(ContinuationChain, KilledInsideEveryContinuationConvergesWithEveryCallOnce) {
  Sandbox box;
  const Scenario scenario = loadScenario(kScenario);
  const std::string session = scenarioSessionId(scenario);
  ASSERT_EQ(agent(box, "seed", "", Kill::none, "seed").exitCode, 0);

  // 1. The original run: call-1 (Write) completed (T2), killed before the result is delivered.
  killedAt(box, "run", "P6:1", Kill::self, "run");
  {
    auto store = RuntimeStore::open(box.store());
    EXPECT_EQ(verifiedLineage(*store, session).segments.size(), 1u);
  }

  // 2. Recovery continues (run 2, live runtime_admission start) and is killed inside its own
  //    continuation: call-2 (Edit) completed, result not delivered.
  killedAt(box, "recover", "P6:1", Kill::block, "recover-1");
  {
    auto store = RuntimeStore::open(box.store());
    const Lineage lin = verifiedLineage(*store, session);
    ASSERT_EQ(lin.segments.size(), 2u);
    EXPECT_EQ(provenanceOf(lin, 0), "runtime_admission");
    EXPECT_EQ(lin.headers[1].status, "running") << "killed mid-continuation: no terminal";
    EXPECT_EQ(lin.headers[0].status, "failed");
  }

  // 3. The next recovery repairs run 2 like any crashed run (not
  //    continuation_started_indeterminate), continues from it (run 3), and is killed after
  //    committing call-3's function_call, before T1 (never dispatched).
  killedAt(box, "recover", "P1:1", Kill::block, "recover-2");
  {
    auto store = RuntimeStore::open(box.store());
    const Lineage lin = verifiedLineage(*store, session);
    ASSERT_EQ(lin.segments.size(), 3u);
    EXPECT_EQ(provenanceOf(lin, 1), "runtime_admission");
    EXPECT_EQ(lin.headers[1].status, "failed");
    EXPECT_EQ(lin.headers[1].failureClass, "app_restarted");
    EXPECT_TRUE(store->listUnsettledToolOperations().empty()) << "call-3 never dispatched";
    const RuntimeEvent& last = lin.segments[2].events.back();
    EXPECT_EQ(last.contentKind, ContentKind::function_call);
    EXPECT_EQ(last.json["content"]["id"], "call-3");
  }

  // 4. The next recovery repairs run 3 (its undispatched call is trimmed from the replay),
  //    plans run 4 and is killed at P11: the claim is durable, the continuation-start is not.
  killedAt(box, "recover", "P11:1", Kill::self, "recover-3");
  {
    auto store = RuntimeStore::open(box.store());
    const Lineage lin = verifiedLineage(*store, session);
    ASSERT_EQ(lin.segments.size(), 3u) << "no target run before the start";
    EXPECT_TRUE(store->listUnsettledToolOperations().empty());
    size_t unstarted = 0;
    for (const ClaimState& c : listClaims(*store)) unstarted += c.startEventId ? 0 : 1;
    EXPECT_EQ(unstarted, 1u);
  }

  // 5. The last recovery: claim repair (repair start + abandoned terminal on run 4), then a
  //    further continuation (run 5) re-issues call-3 under its own invocation and finishes the
  //    task with call-4.
  const ChainStep last = agent(box, "recover", "", Kill::none, "recover-4");
  ASSERT_TRUE(last.exited) << readFile(box.base / "recover-4.log");
  EXPECT_EQ(last.exitCode, 0) << readFile(box.base / "recover-4.log");
  const Json& rep = last.report;
  ASSERT_TRUE(rep.is_object()) << readFile(box.base / "recover-4.log");
  ASSERT_EQ(rep["claimRepair"]["claims"].size(), 3u) << rep.dump();  // runs 2, 3 and 4
  EXPECT_EQ(rep["claimRepair"]["claims"][0]["actions"], Json::array({"left_runtime_admission"}));
  EXPECT_EQ(rep["claimRepair"]["claims"][1]["actions"], Json::array({"left_runtime_admission"}));
  EXPECT_EQ(
      rep["claimRepair"]["claims"][2]["actions"],
      Json::array({"created_target_header", "repair_start", "repair_terminal", "failed_header"}));
  EXPECT_EQ(rep["plan"]["decision"], "continue") << rep.dump();
  EXPECT_EQ(rep["plan"]["lineageDepth"], 4);
  ASSERT_TRUE(rep["continuation"].is_object()) << rep.dump();
  EXPECT_EQ(rep["continuation"]["status"], "completed");
  EXPECT_EQ(rep["continuation"]["toolCalls"], 2) << "call-3 (re-issued) and call-4";

  auto store = RuntimeStore::open(box.store());
  EXPECT_EQ(store->integrityCheck(), "ok");
  const Lineage lin = verifiedLineage(*store, session);
  ASSERT_EQ(lin.segments.size(), 5u);
  EXPECT_EQ(provenanceOf(lin, 2), "claim_repair");
  EXPECT_EQ(lin.headers[3].failureClass, "continuation_abandoned_before_provider_dispatch");
  EXPECT_EQ(lin.headers[4].status, "completed");
  expectAllSettled(*store, lin);
  const auto problems = crashsim::harness::workspace::expectedProblems(scenario, box.ws());
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  EXPECT_EQ(
      executionsPerCall(box.store() / "effects.jsonl"),
      (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}, {"call-3", 1}, {"call-4", 1}}));
  // One user message in the whole chain: continuations never append one.
  size_t users = 0;
  for (const ImmutablePrefix& p : lin.segments) {
    for (const RuntimeEvent& e : p.events) users += e.role == Role::user ? 1 : 0;
  }
  EXPECT_EQ(users, 1u);

  // Converged: a further recovery finds nothing to repair or continue.
  const std::string ledger = store->ledgerHash();
  store.reset();
  const ChainStep again = agent(box, "recover", "", Kill::none, "recover-5");
  ASSERT_TRUE(again.exited);
  EXPECT_EQ(again.report["plan"]["decision"], "park");
  EXPECT_EQ(again.report["plan"]["rejectionReasons"], Json::array({"continuation_already_exists"}));
  EXPECT_TRUE(again.report["continuation"].is_null());
  EXPECT_EQ(RuntimeStore::open(box.store())->ledgerHash(), ledger);
}

TEST(ContinuationChain, RecoveryKilledAtP11ThenRecoveredAgainConverges) {
  Sandbox box;
  const Scenario scenario = loadScenario(kScenario);
  const std::string session = scenarioSessionId(scenario);
  ASSERT_EQ(agent(box, "seed", "", Kill::none, "seed").exitCode, 0);
  killedAt(box, "run", "P6:2", Kill::block, "run");  // call-1 and call-2 completed
  killedAt(box, "recover", "P11:1", Kill::block, "recover-1");
  {
    auto store = RuntimeStore::open(box.store());
    const std::vector<ClaimState> claims = listClaims(*store);
    ASSERT_EQ(claims.size(), 1u);
    EXPECT_FALSE(claims[0].startEventId.has_value());
    EXPECT_FALSE(store->readRun(session, claims[0].claim.target.runId).has_value());
    EXPECT_EQ(verifiedLineage(*store, session).segments.size(), 1u);
  }
  const ChainStep second = agent(box, "recover", "", Kill::none, "recover-2");
  ASSERT_TRUE(second.exited) << readFile(box.base / "recover-2.log");
  EXPECT_EQ(second.exitCode, 0) << readFile(box.base / "recover-2.log");
  const Json& rep = second.report;
  ASSERT_EQ(rep["claimRepair"]["claims"].size(), 1u) << rep.dump();
  EXPECT_EQ(
      rep["claimRepair"]["claims"][0]["actions"],
      Json::array({"created_target_header", "repair_start", "repair_terminal", "failed_header"}));
  EXPECT_EQ(rep["plan"]["decision"], "continue") << rep.dump();
  EXPECT_EQ(rep["plan"]["lineageDepth"], 2);
  ASSERT_TRUE(rep["continuation"].is_object()) << rep.dump();
  EXPECT_EQ(rep["continuation"]["status"], "completed");
  EXPECT_EQ(rep["continuation"]["toolCalls"], 2) << "call-3 and call-4";
  auto store = RuntimeStore::open(box.store());
  const Lineage lin = verifiedLineage(*store, session);
  ASSERT_EQ(lin.segments.size(), 3u) << "original, claim-repaired target, continuation";
  EXPECT_EQ(provenanceOf(lin, 0), "claim_repair");
  EXPECT_EQ(provenanceOf(lin, 1), "runtime_admission");
  EXPECT_EQ(lin.headers[1].failureClass, "continuation_abandoned_before_provider_dispatch");
  EXPECT_EQ(lin.headers[2].status, "completed");
  EXPECT_TRUE(crashsim::harness::workspace::expectedProblems(scenario, box.ws()).empty());
  EXPECT_EQ(
      executionsPerCall(box.store() / "effects.jsonl"),
      (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}, {"call-3", 1}, {"call-4", 1}}));
  expectAllSettled(*store, lin);
}

// g + f.6: repair precedes reconcile, so a file-recovery bundle follows the run's recovered
// terminal. The next start-up must accept that tail (not "terminal is not the ledger tail" /
// repair_ambiguous) and change nothing.
TEST(ContinuationChain, RecoveryAfterAFileRecoveryBundleIsIdempotent) {
  Sandbox box;
  ASSERT_EQ(agent(box, "seed", "", Kill::none, "seed").exitCode, 0);
  killedAt(box, "run", "P4:1", Kill::self, "run");  // call-1 (Write) done, T2 missing
  const ChainStep first = agent(box, "recover", "", Kill::none, "recover-1");
  ASSERT_TRUE(first.exited) << readFile(box.base / "recover-1.log");
  EXPECT_EQ(first.report["reconcile"]["operations"].size(), 1u) << first.report.dump();
  std::string ledger;
  {
    auto store = RuntimeStore::open(box.store());
    ledger = store->ledgerHash();
  }
  const ChainStep second = agent(box, "recover", "", Kill::none, "recover-2");
  ASSERT_TRUE(second.exited);
  ASSERT_TRUE(second.report.is_object()) << readFile(box.base / "recover-2.log");
  EXPECT_FALSE(second.report.contains("error")) << second.report.dump();
  for (const Json& r : second.report["startupRepair"]["runs"]) {
    EXPECT_EQ(r["action"], "none") << r.dump();
  }
  EXPECT_TRUE(second.report["reconcile"]["operations"].empty());
  EXPECT_TRUE(second.report["continuation"].is_null());
  EXPECT_EQ(RuntimeStore::open(box.store())->ledgerHash(), ledger);
}
