// One verdict, one unit: each verdict of harness/src/verdicts/ judged on a hand-built input that
// must fail it (and on the good input next to it, which must pass). The inputs are real stores
// of real agent runs, edited with plain SQLite, or hand-built records; each names the bug that
// produces it. The planted-fault tests prove the same verdicts end to end.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/store.h"
#include "test_util.h"
#include "verdicts/coverage.h"
#include "verdicts/d1_d2_powerloss.h"
#include "verdicts/observed_store.h"
#include "verdicts/v1_kill.h"
#include "verdicts/v2_integrity.h"
#include "verdicts/v3_durable_facts.h"
#include "verdicts/v4_decisions.h"
#include "verdicts/v6_rebuild.h"
#include "verdicts/v7_repair.h"
#include "verdicts/v8_recovery.h"
#include "verdicts/v9_determinism.h"
#include "verdicts/wh1_user_git.h"

using crashsim::ContentKind;
using crashsim::RuntimeEvent;
using crashsim::RuntimeStore;
namespace code = crashsim::code;
namespace harness = crashsim::harness;
namespace reports = crashsim::reports;
using namespace crashsim::harness;
using namespace crashsim::harness::points;
using namespace crashsim::harness::test;
namespace fs = std::filesystem;

namespace {

harness::Scenario loadScenarioNamed(const std::string& id) {
  for (auto& s : loadScenarioDir(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios"))
    if (s.id == id) return s;
  ADD_FAILURE() << "no scenario " << id;
  return {};
}

// A complete run of the real agent: its store directory under `dir`.
fs::path completedStore(const fs::path& dir, const std::string& id) {
  const fs::path store = completedRun(dir, id);
  EXPECT_FALSE(store.empty()) << id;
  return store;
}

void sql(const fs::path& store, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((store / "runtime.sqlite").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::vector<RuntimeEvent> ledgerOf(const fs::path& store) {
  auto st = RuntimeStore::open(store);
  std::vector<RuntimeEvent> out;
  for (const auto& h : st->listRuns())
    for (auto& se : st->readRunEvents(h.sessionId, h.runId)) out.push_back(se.event);
  return out;
}

// The ledger up to and including the first response (the state a kill at P6#1 leaves).
std::vector<RuntimeEvent> upToFirstResponse(const std::vector<RuntimeEvent>& events) {
  std::vector<RuntimeEvent> out;
  for (const auto& e : events) {
    out.push_back(e);
    if (e.contentKind == ContentKind::function_response) break;
  }
  return out;
}

}  // namespace

// V1. Bugs: an agent that hangs at the boundary, reports another point, exits instead of dying,
// or writes its normal-exit marker first.
TEST(VerdictV1, OnlyASigkilledChildThatReportedTheArmedPointPasses) {
  auto d = freshDir("crashsim-v1");
  SpawnSpec spec;
  spec.stderrFile = d / "stderr";
  ChildResult good;
  good.spawned = good.signaled = true;
  good.signal = 9;
  good.controlLine = R"({"failpoint":"P4","hit":2,"pid":1})";
  EXPECT_EQ(killProblem(good, "P4", 2, spec, d), "");
  ChildResult hung = good;
  hung.timedOut = true;
  EXPECT_NE(killProblem(hung, "P4", 2, spec, d).find("hung"), std::string::npos);
  EXPECT_NE(killProblem(good, "P4", 1, spec, d).find("instead of P4#1"), std::string::npos);
  EXPECT_NE(killProblem(good, "S", 2, spec, d).find("instead of S#2"), std::string::npos);
  ChildResult exited = good;
  exited.signaled = false;
  exited.exited = true;
  exited.exitCode = 9;  // `exit 9` is not SIGKILL
  EXPECT_NE(killProblem(exited, "P4", 2, spec, d).find("SIGKILL"), std::string::npos);
  ChildResult silent = good;
  silent.controlLine.clear();
  EXPECT_NE(killProblem(silent, "P4", 2, spec, d).find("before reaching"), std::string::npos);
  std::ofstream(d / "agent-exit.json") << "{}";
  EXPECT_NE(killProblem(good, "P4", 2, spec, d).find("agent-exit.json"), std::string::npos);
  fs::remove_all(d);
}

// V3. Bug: a transaction that is not all-or-nothing at its boundary (here: the complete run's
// terminal fact is durable where the P6 window has none).
TEST(VerdictV3, DurableFactsMustBeTheOracleRowsPrefix) {
  auto d = freshDir("crashsim-v3");
  const auto sc = loadScenarioNamed("bash-touch-marker");
  const auto all = ledgerOf(completedStore(d, "bash-touch-marker"));
  const auto x = expectCase(sc, P6, 1);
  ASSERT_TRUE(x.ok);
  Checks good, bad, wrongCall;
  checkDurableFacts(x, upToFirstResponse(all), good);
  EXPECT_EQ(good.m["V3"].status, "pass") << good.m["V3"].reason;
  checkDurableFacts(x, all, bad);
  EXPECT_EQ(bad.m["V3"].status, "fail");
  EXPECT_NE(bad.m["V3"].reason.find("terminal RuntimeEvent committed"), std::string::npos);
  checkDurableFacts(expectCase(sc, P2, 1), upToFirstResponse(all), wrongCall);
  EXPECT_NE(wrongCall.m["V3"].reason.find("oracle expects true/true/false"), std::string::npos)
      << wrongCall.m["V3"].reason;
  fs::remove_all(d);
}

// V4. Bug: a resolver that calls a settled call indeterminate, or the other way round (here the
// ledger is P6's, the expectation P2's: the oracle wants dispatch_without_response).
TEST(VerdictV4, DecisionsMustBeTheOracleRows) {
  auto d = freshDir("crashsim-v4");
  const auto sc = loadScenarioNamed("bash-touch-marker");
  const auto crashed = upToFirstResponse(ledgerOf(completedStore(d, "bash-touch-marker")));
  Checks good, bad;
  checkDecisions(expectCase(sc, P6, 1), crashed, good);
  EXPECT_EQ(good.m["V4"].status, "pass") << good.m["V4"].reason;
  checkDecisions(expectCase(sc, P2, 1), crashed, bad);
  EXPECT_EQ(bad.m["V4"].status, "fail");
  EXPECT_NE(bad.m["V4"].reason.find(code::dispatch_without_response), std::string::npos)
      << bad.m["V4"].reason;
  EXPECT_EQ(modelDisagreement(crashed, resolveRecovery(crashed), "x"), "");
  fs::remove_all(d);
}

// V6. Bug: a writer whose projection disagrees with its ledger fact.
TEST(VerdictV6, AProjectionThatDisagreesWithTheLedgerFails) {
  auto d = freshDir("crashsim-v6");
  const fs::path store = completedStore(d, "bash-touch-marker");
  Checks good, bad;
  checkV6(store, good);
  EXPECT_EQ(good.m["V6"].status, "pass") << good.m["V6"].reason;
  sql(store, "UPDATE tool_operations SET current_state = 'prepared', result_event_id = NULL");
  checkV6(store, bad);
  EXPECT_EQ(bad.m["V6"].status, "fail");
  EXPECT_NE(bad.m["V6"].reason.find("online state prepared"), std::string::npos)
      << bad.m["V6"].reason;
  fs::remove_all(d);
}

// V7. Bug: a header written without (or against) its terminal fact.
TEST(VerdictV7, AHeaderThatDisagreesWithItsTerminalFactFails) {
  auto d = freshDir("crashsim-v7");
  const fs::path store = completedStore(d, "bash-touch-marker");
  EXPECT_EQ(terminalInvariant(*RuntimeStore::open(store)), "");
  sql(store,
      "UPDATE agent_runs SET status = 'failed', header_json = json_set(header_json, '$.status', "
      "'failed')");
  EXPECT_NE(terminalInvariant(*RuntimeStore::open(store)).find("disagrees with its terminal fact"),
            std::string::npos);
  Checks bad;
  checkV7(store, bad);
  EXPECT_EQ(bad.m["V7"].status, "fail");
  fs::remove_all(d);
}

// V7's recovery reason, on hand-built facts. Bugs: a reason outside the contract's five, a
// specific reason the ledger does not show, an unspecific reason while a specific one applies.
TEST(VerdictV7, ARecoveryReasonMustBeOneOfFiveAndHoldOfTheLedger) {
  const InterruptionFacts none, toolOpen{false, true, false}, wait{true, false, false},
      modelText{false, false, true}, waitAndTool{true, true, false};
  for (const char* generic : {"run_interrupted", "non_terminal_run_recovered"}) {
    EXPECT_EQ(recoveryReasonProblem(generic, none), "") << generic;
    for (const auto& f : {toolOpen, wait, modelText})
      EXPECT_NE(recoveryReasonProblem(generic, f), "") << generic;
  }
  EXPECT_EQ(recoveryReasonProblem("tool_interrupted", toolOpen), "");
  EXPECT_NE(recoveryReasonProblem("tool_interrupted", none), "");
  EXPECT_NE(recoveryReasonProblem("tool_interrupted", modelText), "");
  EXPECT_EQ(recoveryReasonProblem("stale_user_wait", wait), "");
  EXPECT_NE(recoveryReasonProblem("stale_user_wait", toolOpen), "");
  EXPECT_EQ(recoveryReasonProblem("model_stream_completed_without_runtime_terminal", modelText),
            "");
  EXPECT_NE(recoveryReasonProblem("model_stream_completed_without_runtime_terminal", none), "");
  // The contract leaves the order open: either specific reason that applies passes.
  EXPECT_EQ(recoveryReasonProblem("stale_user_wait", waitAndTool), "");
  EXPECT_EQ(recoveryReasonProblem("tool_interrupted", waitAndTool), "");
  // Not one of the five (a synonym, a missing field read as "").
  EXPECT_NE(recoveryReasonProblem("interrupted", none).find("not one of"), std::string::npos);
  EXPECT_NE(recoveryReasonProblem("", none).find("not one of"), std::string::npos);
}

// V8. Bugs: a park that touches the workspace, a park with another reason than the contract's,
// a resume that repeats the prompt, a tool that runs twice.
TEST(VerdictV8, ParkWorkspaceHistoryAndExecutionsAreJudged) {
  EXPECT_EQ(workspaceChange({{"a", "1"}}, {{"a", "1"}}), "");
  EXPECT_EQ(workspaceChange({{"a", "1"}}, {{"a", "2"}}), "a was rewritten");
  EXPECT_EQ(workspaceChange({{"a", "1"}}, {{"a", "1"}, {"b", ""}}), "b was created");
  EXPECT_EQ(workspaceChange({{"a", "1"}}, {}), "a was removed");

  const std::string parked =
      R"({"plan":{"decision":"park","rejectionReasons":["runtime_ledger_unreadable"],)"
      R"("diagnostics":[{"code":"tool_recovery_unsettled"}]},"continuation":null})";
  EXPECT_EQ(parkProblem(parked, false), "");
  EXPECT_EQ(parkProblem(parked, std::nullopt), "");
  EXPECT_NE(parkProblem(parked, true).find("provider_replay_non_suffix_gap"), std::string::npos);
  EXPECT_NE(parkProblem(R"({"plan":{"decision":"continue"},"continuation":null})", false)
                .find("did not park"),
            std::string::npos);
  EXPECT_NE(parkProblem("not json", false).find("no JSON summary"), std::string::npos);

  auto d = freshDir("crashsim-v8");
  const fs::path store = completedStore(d, "bash-touch-marker");
  EXPECT_EQ(continuationHistoryProblem(*RuntimeStore::open(store), 1), "");
  EXPECT_NE(continuationHistoryProblem(*RuntimeStore::open(store), 0).find("1 user message"),
            std::string::npos);

  const auto sc = loadScenarioNamed("bash-touch-marker");
  Checks once, twice;
  checkExecutions(sc, {1}, {{"call-1", 1}}, once);
  EXPECT_NE(once.m["V8"].status, "fail");
  checkExecutions(sc, {1}, {{"call-1", 2}}, twice);
  EXPECT_NE(twice.m["V8"].reason.find("executed 2 time(s)"), std::string::npos);
  fs::remove_all(d);
}

// V9. Bug: a case whose verdict depends on the run (timing, leftovers).
TEST(VerdictV9, ARecordThatDiffersInAnyCheckFails) {
  std::map<std::string, reports::Check> a = {{"V1", {"pass", ""}}, {"V8", {"pass", ""}}};
  EXPECT_EQ(determinismCheck(a, a).status, "pass");
  auto b = a;
  b["V8"] = {"fail", "executed 2 time(s)"};
  const auto v9 = determinismCheck(a, b);
  EXPECT_EQ(v9.status, "fail");
  EXPECT_NE(v9.reason.find("V8"), std::string::npos);
  b = a;
  b["V9"] = {"fail", "ignored"};
  EXPECT_EQ(determinismCheck(a, b).status, "pass");
}

// Coverage. Bugs: a runtime that crosses a boundary more (or less) often than the scenario
// implies; a store write that bypasses the COMMIT barrier; a capture whose git children bypass
// the spawn barrier G.
TEST(VerdictCoverage, ReachAndBarrierBoundsAreJudged) {
  PointCounts predicted;
  predicted[P2] = predicted[P5] = 2;
  predicted[P3] = 1;
  predicted[P8] = 1;
  PointCounts reached = predicted;
  reached[S] = 5;
  reached[F] = 3;
  const auto crashPath = pointRange(P0, P11);
  EXPECT_EQ(reachDifference(predicted, reached, crashPath, "run"), "");
  EXPECT_EQ(barrierBoundProblem(predicted, reached), "");
  reached[P5] = 3;
  EXPECT_NE(reachDifference(predicted, reached, crashPath, "run").find("reached P5 3 time(s)"),
            std::string::npos);
  reached[S] = 4;
  EXPECT_NE(barrierBoundProblem(predicted, reached).find("at least 5, 3 and 0"), std::string::npos);
  reached[S] = 5;
  reached[F] = 2;
  EXPECT_NE(barrierBoundProblem(predicted, reached), "");
  // Two accepted captures (P22) need at least ten git children (five each).
  reached[F] = 3;
  predicted[P22] = reached[P22] = 2;
  reached[G] = 10;
  EXPECT_EQ(barrierBoundProblem(predicted, reached), "");
  reached[G] = 9;
  EXPECT_NE(barrierBoundProblem(predicted, reached).find("9 git barrier(s) G"), std::string::npos);
}

// V8 replay. Bugs: a continuation that hands the model a half-finished history (an unanswered
// call, a result before its call, the prompt twice or not first) or the wrong boundary (a call
// the oracle says was trimmed, or one that was answered left out).
TEST(VerdictV8, TheHistoryHandedToTheModelIsJudged) {
  auto line = [](const std::string& items) {
    return R"({"runId":"run-2","step":1,"history":[)" + items + "]}\n";
  };
  const std::string user = R"({"role":"user","kind":"text"})";
  auto call = [](const std::string& id) {
    return R"({"role":"model","kind":"function_call","callId":")" + id + "\"}";
  };
  auto result = [](const std::string& id) {
    return R"({"role":"tool","kind":"function_response","callId":")" + id + "\"}";
  };
  const std::string good = line(user + "," + call("c1") + "," + result("c1"));
  EXPECT_EQ(replayProblem(good, std::set<std::string>{"c1"}), "");
  EXPECT_EQ(replayProblem("", std::set<std::string>{"c1"}), "") << "no continuation, no replay";
  EXPECT_NE(replayProblem(good, std::set<std::string>{"c1", "c2"}).find("the oracle expects"),
            std::string::npos);
  EXPECT_NE(replayProblem(line(user + "," + call("c1")), std::nullopt).find("without its response"),
            std::string::npos);
  EXPECT_NE(replayProblem(line(user + "," + result("c1") + "," + call("c1")), std::nullopt)
                .find("before its call"),
            std::string::npos);
  EXPECT_NE(replayProblem(line(call("c1") + "," + result("c1") + "," + user), std::nullopt)
                .find("not the first item"),
            std::string::npos);
  EXPECT_NE(
      replayProblem(line(call("c1") + "," + result("c1")), std::nullopt).find("0 user message(s)"),
      std::string::npos);
  EXPECT_NE(replayProblem(line(user + "," + call("c1") + "," + result("c1") + "," + result("c1")),
                          std::nullopt)
                .find("answered twice"),
            std::string::npos);
  // Only the first step is the replay; later steps are judged by the invariants alone.
  EXPECT_EQ(replayProblem(good + line(user + "," + call("c1") + "," + result("c1") + "," +
                                      call("c2") + "," + result("c2")),
                          std::set<std::string>{"c1"}),
            "");
}

// V2. Bug: a store left damaged (here a B-tree page zeroed by hand, as a torn write would).
TEST(VerdictV2, ADamagedStoreFailsAndAnIntactOnePasses) {
  auto d = freshDir("crashsim-v2");
  const fs::path store = completedStore(d, "bash-touch-marker");
  Checks good, bad;
  checkIntegrity(store, "", good);
  EXPECT_EQ(good.m["V2"].status, "pass") << good.m["V2"].reason;
  sql(store, "PRAGMA wal_checkpoint(TRUNCATE)");
  {
    std::fstream f(store / "runtime.sqlite", std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f);
    f.seekp(2 * 1024);  // page 3 of the store's 1 KiB pages: a table's B-tree root
    const std::string zeros(1024, '\0');
    f.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  checkIntegrity(store, "after: ", bad);
  EXPECT_EQ(bad.m["V2"].status, "fail");
  EXPECT_EQ(bad.m["V2"].reason.rfind("after: ", 0), 0u) << bad.m["V2"].reason;
  auto nostore = d / "none";
  Checks missing;
  checkIntegrity(nostore, "", missing);
  EXPECT_EQ(missing.m["V2"].status, "fail");
  fs::remove_all(d);
}

// D2 (after recovery). Bugs: recovery that exits 0 on a damaged store, or runs a tool there.
TEST(VerdictD2, RecoveryOnADamagedStoreMustFailClosedAndRunNothing) {
  auto d = freshDir("crashsim-d2");
  const fs::path store = completedStore(d, "bash-touch-marker");
  PowerlossFindings f;
  f.evaluated = true;
  f.damaged = true;
  f.damage = "PRAGMA integrity_check: page 3 is never used";
  f.effectsAtCrash = readEffects(store / "effects.jsonl");
  std::ofstream(d / "refused.stdout") << R"({"error":{"code":"store_corrupt","message":"x"}})"
                                      << "\n";
  ChildResult refused;
  refused.spawned = refused.exited = true;
  refused.exitCode = 2;
  CheckMap ok = {{"D2", {"pass", ""}}};
  checkPowerlossRecovery(f, store, refused, d / "refused.stdout", ok);
  EXPECT_EQ(ok["D2"].status, "pass") << ok["D2"].reason;
  ChildResult succeeded = refused;
  succeeded.exitCode = 0;
  CheckMap masked = {{"D2", {"pass", ""}}};
  checkPowerlossRecovery(f, store, succeeded, d / "refused.stdout", masked);
  EXPECT_EQ(masked["D2"].status, "fail");
  EXPECT_NE(masked["D2"].reason.find("exited 0 on a damaged store"), std::string::npos);
  f.effectsAtCrash.clear();  // the effects log grew since the crash: recovery ran a tool
  CheckMap ran = {{"D2", {"pass", ""}}};
  checkPowerlossRecovery(f, store, refused, d / "refused.stdout", ran);
  EXPECT_NE(ran["D2"].reason.find("ran a tool"), std::string::npos) << ran["D2"].reason;
  fs::remove_all(d);
}

// The readers every verdict above uses share one read-only connection inside an
// observed::ReadScope. The bug this catches: a scope that keeps a read transaction open or keeps
// rows between reads would judge a store as it was, not as another connection (the agent's
// recovery, a dry-run repair) left it; and one that served another store's reads from its
// connection would judge the wrong store.
TEST(ObservedStore, AReadScopeSeesWhatAnotherConnectionCommitsBetweenReads) {
  const fs::path dir = freshDir("crashsim-observed-scope");
  const fs::path store = dir / "store", other = dir / "other";
  RuntimeStore::open(store).reset();
  RuntimeStore::open(other).reset();
  auto write = [&](const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((store / "runtime.sqlite").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    const std::string why = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << why;
  };
  const auto otherDigests = observed::tableDigests(other);  // outside any scope
  {
    const observed::ReadScope reads(store);
    const auto empty = observed::tableDigests(store);
    ASSERT_FALSE(empty.empty());
    write("CREATE TABLE scratch(x); INSERT INTO scratch VALUES (1)");  // a schema change
    const auto created = observed::tableDigests(store);
    EXPECT_EQ(observed::firstChangedTable(empty, created), "scratch (created)");
    write("INSERT INTO scratch VALUES (2)");  // rows only
    EXPECT_EQ(observed::firstChangedTable(created, observed::tableDigests(store)), "scratch");
    EXPECT_EQ(observed::tableDigests(other), otherDigests);  // its own connection, not the scope's
    EXPECT_EQ(observed::integrity(store), "ok");
  }
  fs::remove_all(dir);
}

// WH1 (i.3 H1) on hand-built directories: the user's .git and a submodule's own .git (a directory,
// or a gitfile) byte-identical, the only allowed change RC h's marker line in the user's
// info/exclude. Bugs: c.4 check 7's `status` in the submodule rewriting its index (no
// GIT_OPTIONAL_LOCKS=0), a capture touching the submodule's gitfile.
TEST(WH1UserGit, ASubmodulesGitIsJudgedToo) {
  const fs::path d = freshDir("crashsim-wh1-submodule");
  const auto put = [](const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
  };
  const fs::path tpl = d / "template", ws = d / "ws";
  put(tpl / ".git" / "HEAD", "ref: refs/heads/main\n");
  put(tpl / ".git" / "info" / "exclude", "# x\n");
  put(tpl / "lib" / ".git" / "index", "submodule index");
  put(tpl / "lib" / "lib.txt", "v2\n");
  put(tpl / "vendor" / "dep" / ".git", "gitdir: ../../.git/modules/dep\n");
  const auto fresh = [&] {
    fs::remove_all(ws);
    fs::copy(tpl, ws, fs::copy_options::recursive);
    put(ws / ".git" / "info" / "exclude", "# x\n.maka-workspace.json\n");
    put(ws / "notes.txt", "hello\n");  // the work tree is V8's, not WH1's
  };
  fresh();
  EXPECT_EQ(wh1::userGitProblem(tpl, ws), "");
  put(ws / "lib" / ".git" / "index", "rewritten by status");
  EXPECT_EQ(wh1::userGitProblem(tpl, ws), "the user's lib/.git/index changed");
  fresh();
  put(ws / "lib" / ".git" / "index.lock", "");
  EXPECT_EQ(wh1::userGitProblem(tpl, ws), "the user's lib/.git/index.lock appeared");
  fresh();
  fs::remove_all(ws / "lib" / ".git");
  EXPECT_EQ(wh1::userGitProblem(tpl, ws), "the user's lib/.git/ is gone");
  fresh();
  put(ws / "vendor" / "dep" / ".git", "gitdir: /elsewhere\n");
  EXPECT_EQ(wh1::userGitProblem(tpl, ws), "the user's vendor/dep/.git changed");
  fresh();
  put(ws / ".git" / "index", "user index");
  EXPECT_EQ(wh1::userGitProblem(tpl, ws), "the user's .git/index appeared");
  fs::remove_all(d);
}
