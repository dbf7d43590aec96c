// The conformance surface, run as real processes: `crashsim store exec SCRIPT` (spec f writers,
// their stable codes, the multi-process races of j.8) and `crashsim ledger plan-continuation`
// (spec e gates, lineage and claim classification). Every expectation is the contract's: the
// rejection reason a gate names, the f.6 code of the first rule a bundle breaks, the claim
// result e.8 gives. Inputs are hand-built RuntimeEvents; the one digest an input needs (a claim's
// boundary) is taken from a first plan of the same document.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "crashsim/hashing.h"
#include "crashsim/runtime_event.h"
#include "test_util.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kWorkspace = "workspace:v1:2b1c8a9e-3d4f-4a5b-8c6d-7e8f9a0b1c2d";
const std::string kOtherWorkspace = "workspace:v1:9f8e7d6c-5b4a-4c3d-9e2f-1a0b9c8d7e6f";
// a.7 frozen vector: Write {content:'after', path:'notes.txt'}.
const std::string kWriteHash =
    "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9";
const json kWriteArgs = {{"content", "after"}, {"path", "notes.txt"}};

json op(const std::string& name, json input = json::object()) {
  return {{"op", name}, {"input", std::move(input)}};
}

// One run's identity and RuntimeEvent builder (contract-shaped JSON).
struct Ledger {
  std::string session, invocation, run, turn;
  double ts = 1000;
  int n = 0;
  Ledger(std::string s, std::string r, double createdAt = 1000)
      : session(std::move(s)), invocation("inv-" + r), run(r), turn("turn-" + r), ts(createdAt) {}
  json base(const std::string& kind, const char* role, const char* author) {
    ts += 1;
    return {{"id", run + "-" + kind + "-" + std::to_string(++n)},
            {"sessionId", session},
            {"invocationId", invocation},
            {"runId", run},
            {"turnId", turn},
            {"ts", ts},
            {"partial", false},
            {"role", role},
            {"author", author}};
  }
  json user(const std::string& text, bool marker = false) {
    json e = base("user", "user", "user");
    e["content"] = {{"kind", "text"}, {"text", text}};
    if (marker) e["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
    return e;
  }
  json model(const std::string& text) {
    json e = base("model", "model", "agent");
    e["content"] = {{"kind", "text"}, {"text", text}};
    return e;
  }
  json call(const std::string& callId, const std::string& tool = "Write", json args = kWriteArgs) {
    json e = base("call", "model", "agent");
    e["content"] = {{"kind", "function_call"}, {"id", callId}, {"name", tool}, {"args", args}};
    return e;
  }
  json response(const std::string& callId, const std::string& tool = "Write") {
    json e = base("resp", "tool", "tool");
    e["content"] = {
        {"kind", "function_response"}, {"id", callId}, {"name", tool}, {"result", {{"ok", true}}}};
    return e;
  }
  json failedTerminal(const std::string& failureClass = "app_restarted") {
    json e = base("terminal", "system", "system");
    e["status"] = "failed";
    e["content"] = {{"kind", "error"},
                    {"message", "interrupted"},
                    {"code", failureClass},
                    {"reason", failureClass}};
    e["actions"] = {{"endInvocation", true},
                    {"stateDelta",
                     {{"recovered", true},
                      {"recoveryReason", "run_interrupted"},
                      {"failureClass", failureClass}}}};
    return e;
  }
  json header(double createdAt = 1000) const {
    return {{"sessionId", session},
            {"runId", run},
            {"invocationId", invocation},
            {"turnId", turn},
            {"status", "running"},
            {"createdAt", createdAt},
            {"updatedAt", createdAt},
            {"workspaceIdentity", kWorkspace},
            {"cwd", "/ws"}};
  }
};

json append(const json& e) { return op("append", {{"runtimeEvent", e}}); }

// The ops of a finished failed run: header, the events, the failed terminal, the terminal header.
std::vector<json> failedRun(Ledger& r, std::vector<json> events, json header = json()) {
  if (header.is_null()) header = r.header();
  std::vector<json> ops{op("createRun", header)};
  for (const json& e : events) ops.push_back(append(e));
  const json t = r.failedTerminal();
  ops.push_back(append(t));
  header["status"] = "failed";
  header["updatedAt"] = t["ts"];
  header["completedAt"] = t["ts"];
  header["failureClass"] = "app_restarted";
  ops.push_back(op("markRunTerminal", header));
  return ops;
}

// The usual source: user asks, model calls Write (legacy, unbound), tool answers, run failed.
std::vector<json> usualSource(Ledger& r) {
  return failedRun(r,
                   {r.user("write the config"), r.call(r.run + "-c1"), r.response(r.run + "-c1")});
}

json hostFacts() {
  return {{"safeBoundaryResumeEnabled", true},
          {"currentCwd", "/ws"},
          {"safety",
           {{"workspaceIdentity", kWorkspace},
            {"workspacePath", "/ws"},
            {"availableToolNames", {"Write", "Read", "Write"}}}},
          {"ids", {"inv-new", "run-new", "turn-new", "claim-new"}}};
}

struct CliOutcome {
  int exitCode = -1;
  json out;
  std::string text;
};

CliOutcome planOf(const std::vector<json>& ops, json doc) {
  auto d = freshDir("crashsim-conformance-plan");
  doc["store"] = {{"ops", ops}};
  std::ofstream(d / "plan.json") << doc.dump();
  auto r = sh(cs() + " ledger plan-continuation " + (d / "plan.json").string());
  fs::remove_all(d);
  CliOutcome o{r.exitCode, json(), r.out};
  if (!r.out.empty()) o.out = json::parse(r.out);
  return o;
}

json planDoc(const std::string& session, const std::string& run, json host = hostFacts()) {
  return {{"sessionId", session}, {"sourceRunId", run}, {"host", std::move(host)}};
}

using Reasons = std::vector<std::string>;
Reasons reasonsOf(const CliOutcome& o) {
  if (!o.out.is_object() || !o.out.contains("rejectionReasons"))
    return {"<no plan: " + o.text + ">"};
  return o.out["rejectionReasons"].get<Reasons>();
}

// ---- store exec ---------------------------------------------------------------------------

std::vector<json> execLines(const std::string& text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

std::vector<json> exec(const std::vector<json>& ops, const std::string& extra = "") {
  auto d = freshDir("crashsim-conformance-exec");
  std::ofstream(d / "script.json") << json{{"ops", ops}}.dump();
  auto r = sh(cs() + " store exec " + (d / "script.json").string() + extra);
  EXPECT_EQ(r.exitCode, 0) << r.out;
  fs::remove_all(d);
  auto lines = execLines(r.out);
  EXPECT_EQ(lines.size(), ops.size()) << r.out;
  return lines;
}

std::string codeOf(const json& line) {
  return line.contains("error") ? line["error"]["code"].get<std::string>() : "ok";
}

// One T1-protocol tool operation with the a.7 frozen Write args.
struct Tool {
  Ledger& r;
  std::string callId;
  std::string mode = "reconcile";
  std::string opId() const { return crashsim::deriveOperationId(r.invocation, callId); }
  json callEvent() const {
    json e = r.base("x", "model", "agent");
    e["id"] = opId() + "_call";
    e["content"] = {
        {"kind", "function_call"}, {"id", callId}, {"name", "Write"}, {"args", kWriteArgs}};
    return e;
  }
  json dispatchEvent() const {
    json e = r.base("x", "system", "system");
    e["id"] = opId() + "_dispatch";
    e["actions"] = {{"toolDispatch",
                     {{"protocol", "t1_after_preflight_v1"},
                      {"operationId", opId()},
                      {"providerToolCallId", callId},
                      {"toolName", "Write"},
                      {"canonicalArgsHash", kWriteHash},
                      {"recoveryMode", mode}}}};
    e["refs"] = {{"operationId", opId()}, {"toolCallId", callId}};
    return e;
  }
  json responseEvent(const std::string& id, bool isError = false) const {
    json e = r.base("x", "tool", "tool");
    e["id"] = id;
    e["content"] = {{"kind", "function_response"},
                    {"id", callId},
                    {"name", "Write"},
                    {"result", {{"ok", true}}}};
    if (isError) e["content"]["isError"] = true;
    e["refs"] = {{"operationId", opId()}, {"toolCallId", callId}};
    return e;
  }
  json t1() const {
    return op_("commitToolPrepared", {{"operationId", opId()},
                                      {"journalEventId", opId() + "_prepared"},
                                      {"runtimeEvent", callEvent()},
                                      {"dispatchRuntimeEvent", dispatchEvent()},
                                      {"providerToolCallId", callId},
                                      {"toolName", "Write"},
                                      {"canonicalArgsHash", kWriteHash},
                                      {"recoveryMode", mode},
                                      {"committedAt", 2000}});
  }
  json t2(const std::string& responseId, bool isError = false) const {
    return op_("commitToolOutcome", {{"operationId", opId()},
                                     {"journalEventId", opId() + "_outcome"},
                                     {"runtimeEvent", responseEvent(responseId, isError)},
                                     {"committedAt", 3000}});
  }
  json reconcile(const std::string& id, const std::string& observation) const {
    json e = r.base("x", "system", "system");
    e["id"] = id;
    e["actions"] = {{"toolRecovery",
                     {{"kind", "maka.tool.reconcile_result"},
                      {"version", 1},
                      {"payload",
                       {{"protocol", "tool_reconcile_v1"},
                        {"operationId", opId()},
                        {"observation", observation},
                        {"observationSchema", "state_identity_v1"},
                        {"observationDigest", crashsim::sha256Digest(observation)}}}}}};
    e["refs"] = {{"operationId", opId()}, {"toolCallId", callId}};
    return e;
  }
  json decision(const std::string& id, const std::string& disposition, const std::string& reason,
                json evidence, const std::string& outcomeId = "") const {
    json e = r.base("x", "system", "system");
    e["id"] = id;
    json payload = {{"protocol", "tool_recovery_v1"},
                    {"operationId", opId()},
                    {"disposition", disposition},
                    {"reasonCode", reason},
                    {"evidenceEventIds", evidence}};
    if (!outcomeId.empty()) payload["outcomeEventId"] = outcomeId;
    e["actions"] = {
        {"toolRecovery",
         {{"kind", "maka.tool.recovery_decision"}, {"version", 1}, {"payload", payload}}}};
    e["refs"] = {{"operationId", opId()}, {"toolCallId", callId}};
    return e;
  }
  // A completed bundle: reconcile(matches_expected_state), successful outcome, decision.
  json completedBundle(const std::string& tag) const {
    const std::string rec = opId() + "_" + tag + "_reconcile",
                      out = opId() + "_" + tag + "_outcome";
    return op_("commitToolRecoveryBundle",
               {{"operationId", opId()},
                {"reconcileRuntimeEvent", reconcile(rec, "matches_expected_state")},
                {"outcomeRuntimeEvent", responseEvent(out)},
                {"decisionRuntimeEvent",
                 decision(opId() + "_" + tag + "_decision", "completed",
                          "reconcile_matches_expected_state",
                          {opId() + "_call", opId() + "_dispatch", rec, out}, out)}});
  }
  json parkedBundle(const std::string& tag, const std::string& observation = "diverged") const {
    const std::string rec = opId() + "_" + tag + "_reconcile";
    return op_("commitToolRecoveryBundle",
               {{"operationId", opId()},
                {"reconcileRuntimeEvent", reconcile(rec, observation)},
                {"decisionRuntimeEvent",
                 decision(opId() + "_" + tag + "_decision", "parked", "reconcile_" + observation,
                          {opId() + "_call", opId() + "_dispatch", rec})}});
  }
  static json op_(const std::string& name, json input) { return ::op(name, std::move(input)); }
};

}  // namespace

// ---- spec f.4 / f.5 through store exec ---------------------------------------------------------

TEST(StoreExec, T1AndT2CommitRetryIdempotentlyAndRefuseWhatTheContractRefuses) {
  Ledger r("s1", "r1");
  Tool t{r, "call-1"};
  json badJournal = t.t1();
  badJournal["input"]["journalEventId"] = "other";
  json badHash = t.t1();
  badHash["input"]["canonicalArgsHash"] = "sha256:" + std::string(64, '0');
  json otherResponse = t.t2(t.opId() + "_response-other");
  Tool unknown{r, "call-unknown"};
  const json t1 = t.t1(), t2 = t.t2(t.opId() + "_response");
  auto lines = exec({op("createRun", r.header()), append(r.user("go", true)), badJournal, badHash,
                     t1, t1, unknown.t2(unknown.opId() + "_response"), t2, t2, otherResponse,
                     op("listToolOperations"), op("listJournal")});
  EXPECT_EQ(codeOf(lines[2]), "t1_invalid");  // journal id not <operationId>_prepared
  EXPECT_EQ(codeOf(lines[3]), "t1_invalid");  // hash not the one recomputed from the call
  EXPECT_EQ(lines[4]["result"]["created"], true);
  EXPECT_EQ(lines[5]["result"]["created"], false);  // exact retry
  EXPECT_EQ(lines[5]["result"]["runtimeEventSeq"], lines[4]["result"]["runtimeEventSeq"]);
  EXPECT_EQ(codeOf(lines[6]), "unknown_tool_operation");
  EXPECT_EQ(lines[7]["result"]["created"], true);
  EXPECT_EQ(lines[8]["result"]["created"], false);
  // A second, different response: f.5 runs the transition check before the result check, so
  // the scanner's duplicate_response refuses it (the store stays healthy).
  EXPECT_EQ(codeOf(lines[9]), "tool_ledger_rejection");
  EXPECT_EQ(lines[9]["error"]["ledgerCode"], "duplicate_response");
  ASSERT_EQ(lines[10]["result"]["operations"].size(), 1u);
  EXPECT_EQ(lines[10]["result"]["operations"][0]["currentState"], "outcome_committed");
  json states = json::array();
  for (const json& j : lines[11]["result"]["journal"]) states.push_back(j["state"]);
  EXPECT_EQ(states, json({"prepared", "outcome_committed"}));
}

// f.3: the run seal and the generic writer's reserved lanes.
TEST(StoreExec, GenericWriterRefusesReservedLanesAndSealedRuns) {
  Ledger r("s1", "r1");
  Tool t{r, "call-1"};
  const json terminal = r.failedTerminal();
  auto lines =
      exec({op("createRun", r.header()), append(r.user("go", true)), append(t.dispatchEvent()),
            append(terminal), append(terminal), append(r.model("after the end"))});
  EXPECT_EQ(codeOf(lines[2]), "reserved_tool_boundary_fact");
  EXPECT_EQ(lines[3]["result"]["created"], true);
  EXPECT_EQ(lines[4]["result"]["created"], false);  // exact retry of a stored event
  EXPECT_EQ(codeOf(lines[5]), "run_sealed");
}

// ---- spec f.6: every bundle validation code, first failing rule wins ----------------------------

TEST(StoreExec, RecoveryBundleGivesTheF6CodeOfTheFirstRuleItBreaks) {
  Ledger r("s1", "r1");
  Tool t{r, "call-1"};
  auto variant = [&](auto mutate) {
    json b = t.completedBundle("v");
    mutate(b["input"]);
    return b;
  };
  const std::string rec = t.opId() + "_v_reconcile", out = t.opId() + "_v_outcome";
  const json decisionFact = t.completedBundle("v")["input"]["decisionRuntimeEvent"]["actions"];
  const json reconcileFact = t.completedBundle("v")["input"]["reconcileRuntimeEvent"]["actions"];
  std::vector<std::pair<std::string, json>> cases = {
      {"reconcile_fact_invalid",  // the reconcile slot holds a decision fact
       variant([&](json& in) { in["reconcileRuntimeEvent"]["actions"] = decisionFact; })},
      {"decision_fact_invalid",  // the decision slot holds a reconcile fact
       variant([&](json& in) { in["decisionRuntimeEvent"]["actions"] = reconcileFact; })},
      {"recovery_fact_identity_conflict",
       variant([](json& in) { in["decisionRuntimeEvent"]["refs"]["toolCallId"] = "call-other"; })},
      {"operation_identity_conflict", variant([](json& in) {
         in["decisionRuntimeEvent"]["actions"]["toolRecovery"]["payload"]["operationId"] =
             "op-other";
       })},
      {"outcome_required", variant([](json& in) { in.erase("outcomeRuntimeEvent"); })},
      {"outcome_identity_conflict",
       variant([](json& in) { in["outcomeRuntimeEvent"]["content"]["name"] = "Read"; })},
      {"outcome_not_successful",
       variant([](json& in) { in["outcomeRuntimeEvent"]["content"]["isError"] = true; })},
      {"outcome_reference_conflict", variant([](json& in) {
         in["decisionRuntimeEvent"]["actions"]["toolRecovery"]["payload"]["outcomeEventId"] =
             "elsewhere";
       })},
      {"reconcile_decision_conflict", variant([](json& in) {
         in["reconcileRuntimeEvent"]["actions"]["toolRecovery"]["payload"]["observation"] =
             "diverged";
       })},
      {"evidence_order_conflict", variant([&](json& in) {
         in["decisionRuntimeEvent"]["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] =
             json{t.opId() + "_dispatch", t.opId() + "_call", rec, out};
       })},
  };
  json parkedWithOutcome = t.parkedBundle("p");
  parkedWithOutcome["input"]["outcomeRuntimeEvent"] = t.responseEvent(t.opId() + "_p_outcome");
  cases.push_back({"outcome_for_parked", parkedWithOutcome});
  json parkedWrongReason = t.parkedBundle("q");
  parkedWrongReason["input"]["decisionRuntimeEvent"]["actions"]["toolRecovery"]["payload"]
                   ["reasonCode"] = "reconcile_unreadable";
  cases.push_back({"reconcile_decision_conflict", parkedWrongReason});

  // An operation dispatched with another recovery mode takes no bundle at all.
  Tool retry{r, "call-2", "never_auto_retry"};
  std::vector<json> ops{op("createRun", r.header()), append(r.user("go", true))};
  ops.push_back(t.completedBundle("early"));  // no operation yet
  ops.push_back(t.t1());
  for (const auto& c : cases) ops.push_back(c.second);
  const json okBundle = t.completedBundle("ok");
  ops.push_back(okBundle);
  ops.push_back(okBundle);                // exact retry
  ops.push_back(t.parkedBundle("late"));  // already settled
  ops.push_back(op("listToolOperations"));
  ops.push_back(retry.t1());
  ops.push_back(retry.completedBundle("m"));
  auto lines = exec(ops);
  EXPECT_EQ(codeOf(lines[2]), "unknown_tool_operation");
  for (size_t k = 0; k < cases.size(); ++k)
    EXPECT_EQ(codeOf(lines[4 + k]), cases[k].first) << "case " << k;
  const size_t ok = 4 + cases.size();
  ASSERT_EQ(lines.size(), ok + 6);
  EXPECT_EQ(lines[ok]["result"]["created"], true) << lines[ok];
  EXPECT_EQ(lines[ok + 1]["result"]["created"], false) << lines[ok + 1];
  EXPECT_NE(codeOf(lines[ok + 2]), "ok");
  EXPECT_EQ(lines[ok + 3]["result"]["operations"][0]["currentState"], "recovery_completed");
  EXPECT_EQ(codeOf(lines[ok + 4]), "ok") << lines[ok + 4];
  EXPECT_EQ(codeOf(lines[ok + 5]), "recovery_mode_unsupported") << lines[ok + 5];
}

// ---- spec j.8: two processes behind one barrier
// --------------------------------------------------

TEST(StoreExec, TwoProcessesRacingIdenticalOrConflictingBundlesGiveOneEffect) {
  for (const bool identical : {true, false}) {
    Ledger r("s1", "r1");
    Tool t{r, "call-1"};
    auto d = freshDir("crashsim-conformance-race");
    const fs::path store = d / "store";
    ASSERT_EQ(
        sh(cs() + " store exec - --store " + store.string() + " <<'EOF'\n" +
           json{{"ops", {op("createRun", r.header()), append(r.user("go", true)), t.t1()}}}.dump() +
           "\nEOF\n")
            .exitCode,
        0);
    const json bundleA = t.completedBundle("a");  // built once: byte-equal in both scripts
    std::ofstream(d / "a.json") << json{{"ops", {bundleA}}}.dump();
    std::ofstream(d / "b.json")
        << json{{"ops", {identical ? bundleA : t.parkedBundle("b")}}}.dump();
    Cmd a, b;
    std::thread ta([&] {
      a = sh(cs() + " store exec " + (d / "a.json").string() + " --store " + store.string() +
             " --barrier " + (d / "go").string() + " --lock-timeout 30");
    });
    std::thread tb([&] {
      b = sh(cs() + " store exec " + (d / "b.json").string() + " --store " + store.string() +
             " --barrier " + (d / "go").string() + " --lock-timeout 30");
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ofstream(d / "go") << "";
    ta.join();
    tb.join();
    ASSERT_EQ(a.exitCode, 0) << a.out;
    ASSERT_EQ(b.exitCode, 0) << b.out;
    const json la = json::parse(a.out), lb = json::parse(b.out);
    if (identical) {  // both succeed, one of them wrote
      EXPECT_EQ(codeOf(la), "ok");
      EXPECT_EQ(codeOf(lb), "ok");
      EXPECT_NE(la["result"]["created"], lb["result"]["created"]);
    } else {  // exactly one wins
      EXPECT_NE(codeOf(la) == "ok", codeOf(lb) == "ok") << la << lb;
    }
    auto check = sh(cs() + " store exec - --store " + store.string() + " <<'EOF'\n" +
                    json{{"ops", {op("listToolOperations")}}}.dump() + "\nEOF\n");
    const json ops = json::parse(check.out)["result"]["operations"];
    ASSERT_EQ(ops.size(), 1u);
    const std::string state = ops[0]["currentState"];
    EXPECT_TRUE(state == "recovery_completed" || state == "recovery_parked") << state;
    fs::remove_all(d);
  }
}

// Issue #45 (6): `store exec --store` is a writer and takes the host lock like every other one.
// A real store made by the agent, its lock held by another process (this test): the script is
// refused with host_already_active and no byte of the store changes; once the lock is free it
// runs.
TEST(StoreExec, AStoreOwnedByAnotherHostIsRefusedAndLeftAsItWas) {
  auto d = freshDir("crashsim-conformance-lock");
  const fs::path store = completedRun(d, "write-config-port");
  ASSERT_FALSE(store.empty());
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(store))
      files[e.path().filename()] = slurp(e.path());
    return files;
  };
  Ledger r("s-lock", "r-lock");
  std::ofstream(d / "s.json") << json{{"ops", {op("createRun", r.header())}}}.dump();
  const std::string cmd =
      cs() + " store exec " + (d / "s.json").string() + " --store " + store.string();
  const int fd = ::open((store / "host.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const auto before = snapshot();
  const Cmd refused = sh(cmd);
  EXPECT_EQ(refused.exitCode, 2) << refused.out;
  EXPECT_NE(refused.out.find("host_already_active"), std::string::npos) << refused.out;
  EXPECT_EQ(snapshot(), before) << "store exec wrote into a store another host owns";
  ::close(fd);  // the owner goes away: the same script now runs
  const Cmd ran = sh(cmd);
  EXPECT_EQ(ran.exitCode, 0) << ran.out;
  EXPECT_EQ(codeOf(json::parse(ran.out)), "ok") << ran.out;
  fs::remove_all(d);
}

TEST(StoreExec, MalformedScriptExitsTwoBeforeAnyOpRuns) {
  auto d = freshDir("crashsim-conformance-bad");
  std::ofstream(d / "s.json") << R"({"ops":[{"op":"append","input":{}},{"op":"dropTables"}]})";
  auto r = sh(cs() + " store exec " + (d / "s.json").string() + " --store " +
              (d / "store").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("invalid_enum"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(d / "store"));  // nothing ran, no store was created
  fs::remove_all(d);
  // An input value of the wrong JSON type is that op's error; the next op still runs.
  json claim = {{"protocol", "continuation_claim_v1"}, {"claimId", 7}};
  auto lines = exec({op("claimContinuation", {{"claim", claim}}), op("listRuns")});
  EXPECT_NE(codeOf(lines[0]), "ok");
  EXPECT_EQ(codeOf(lines[1]), "ok");
}

// ---- spec e.1 / e.2 / e.6 through plan-continuation ------------------------------------------

TEST(PlanContinuation, ContinuePlanHasFreshIdsInAllocationOrderAndTheSafetySnapshot) {
  Ledger r("s1", "r1");
  CliOutcome o = planOf(usualSource(r), planDoc("s1", "r1"));
  ASSERT_EQ(o.exitCode, 0) << o.text;
  EXPECT_EQ(o.out["decision"], "continue");
  EXPECT_EQ(o.out["invocationId"], "inv-new");  // e.2 step 7 order
  EXPECT_EQ(o.out["runId"], "run-new");
  EXPECT_EQ(o.out["turnId"], "turn-new");
  EXPECT_EQ(o.out["claimId"], "claim-new");
  EXPECT_EQ(o.out["sourceRuntimeEventHighWater"], 4);
  EXPECT_EQ(o.out["runtimeContextEventIds"].size(), 4u);
  EXPECT_EQ(o.out["safetySnapshot"]["availableToolNames"], json({"Read", "Write"}));
  EXPECT_EQ(o.out["safetySnapshot"]["workspaceIdentity"], kWorkspace);
  EXPECT_TRUE(o.out["rejectionReasons"].empty());
}

// Each host entry gate parks with exactly its code, as reason and as diagnostic (e.1).
TEST(PlanContinuation, HostEntryGatesParkWithOneReasonEach) {
  auto park = [](const CliOutcome& o, const std::string& code) {
    EXPECT_EQ(o.exitCode, 1) << o.text;
    EXPECT_EQ(reasonsOf(o), Reasons{code}) << o.text;
    ASSERT_EQ(o.out["diagnostics"].size(), 1u) << o.text;
    EXPECT_EQ(o.out["diagnostics"][0]["code"], code);
  };
  Ledger r("s1", "r1");
  json off = hostFacts();
  off["safeBoundaryResumeEnabled"] = false;
  park(planOf(usualSource(r), planDoc("s1", "r1", off)), "resume_feature_disabled");
  Ledger r2("s1", "r1");
  json noInspector = hostFacts();
  noInspector.erase("safety");
  park(planOf(usualSource(r2), planDoc("s1", "r1", noInspector)), "safety_observation_unavailable");
  Ledger r3("s1", "r1");
  json throwing = hostFacts();
  throwing["inspectorFailure"] = "inspector down";
  park(planOf(usualSource(r3), planDoc("s1", "r1", throwing)), "safety_observation_unavailable");
  Ledger r4("s1", "r1");
  park(planOf(usualSource(r4), planDoc("s1", "nope")), "source_run_unreadable");
  Ledger r5("s1", "r1");
  json noIdentity = r5.header();
  noIdentity.erase("workspaceIdentity");
  park(planOf(failedRun(r5, {r5.user("x")}, noIdentity), planDoc("s1", "r1")),
       "workspace_identity_missing");
  // plan latest: only a running run in the session
  Ledger r6("s1", "r1");
  json latest = {{"sessionId", "s1"}, {"host", hostFacts()}};
  park(planOf({op("createRun", r6.header()), append(r6.user("hi"))}, latest),
       "resume_candidate_missing");
}

// The boundary gates of e.6, each alone on an otherwise continuable source.
TEST(PlanContinuation, BoundaryGatesNameTheirReason) {
  auto with = [](auto mutateHost, json extra = json::object()) {
    Ledger r("s1", "r1");
    json host = hostFacts();
    mutateHost(host);
    json doc = planDoc("s1", "r1", host);
    for (auto& [k, v] : extra.items()) doc[k] = v;
    return planOf(usualSource(r), doc);
  };
  EXPECT_EQ(reasonsOf(with([](json& h) { h["safety"]["workspaceIdentity"] = kOtherWorkspace; })),
            Reasons{"workspace_identity_mismatch"});
  EXPECT_EQ(reasonsOf(with([](json& h) { h["safety"]["backgroundOperationsSettled"] = false; })),
            Reasons{"background_operation_pending"});
  EXPECT_EQ(
      reasonsOf(with([](json& h) {
        h["safety"]["workspaceCheckpoint"] = {{"restored", true}, {"runtimeEventHighWater", 4}};
      })),
      Reasons{"workspace_ref_missing"});
  EXPECT_EQ(reasonsOf(with([](json& h) {
              h["safety"]["workspaceCheckpoint"] = {
                  {"ref", "ckpt-1"}, {"restored", false}, {"runtimeEventHighWater", 4}};
            })),
            Reasons{"checkpoint_restore_failed"});
  const CliOutcome catalog = with([](json& h) { h["safety"]["availableToolNames"] = {"Read"}; });
  EXPECT_EQ(reasonsOf(catalog), Reasons{"tool_catalog_mismatch"});
  EXPECT_EQ(catalog.out["diagnostics"][0]["detail"]["unavailableToolNames"], json({"Write"}));
  EXPECT_EQ(reasonsOf(with([](json&) {}, {{"expectedRuntimeEventHighWater", 3}})),
            Reasons{"runtime_offset_mismatch"});
  // a cwd change is a diagnostic only (k.1)
  const CliOutcome moved = with([](json& h) { h["currentCwd"] = "/elsewhere/"; });
  EXPECT_EQ(moved.out["decision"], "continue") << moved.text;
  EXPECT_EQ(moved.out["diagnostics"][0]["code"], "workspace_location_changed");
}

TEST(PlanContinuation, ReplayAndLedgerGates) {
  // A legacy call never answered: the segment is unsettled → runtime_ledger_unreadable (e.2.4).
  Ledger a("s1", "r1");
  EXPECT_EQ(reasonsOf(planOf(failedRun(a, {a.user("x"), a.call("c1")}), planDoc("s1", "r1"))),
            Reasons{"runtime_ledger_unreadable"});
  // New protocol: a call that never dispatched is allowed, but a provider item after the
  // unanswered call is a gap (e.3.4).
  Ledger b("s1", "r1");
  EXPECT_EQ(reasonsOf(planOf(failedRun(b, {b.user("x", true), b.call("c1"), b.user("again")}),
                             planDoc("s1", "r1"))),
            Reasons{"provider_replay_non_suffix_gap"});
  // The first provider item is the model's, not the user's (e.6.11).
  Ledger c("s1", "r1");
  EXPECT_EQ(reasonsOf(planOf(failedRun(c, {c.model("hello"), c.user("x")}), planDoc("s1", "r1"))),
            Reasons{"provider_resume_head_unsupported"});
  // A permission request never decided (e.6.1).
  Ledger p("s1", "r1");
  json ask = p.model("may I?");
  ask["actions"] = {{"permissionRequest", {{"requestId", "req-1"}, {"toolName", "Write"}}}};
  EXPECT_EQ(reasonsOf(planOf(failedRun(p, {p.user("x"), ask, p.user("yes")}), planDoc("s1", "r1"))),
            Reasons{"pending_permission"});
  // Text with role tool is not a provider item (e.3.3): the segment is not replayable.
  Ledger u("s1", "r1");
  json toolText = u.model("raw tool text");
  toolText["role"] = "tool";
  toolText["author"] = "tool";
  EXPECT_EQ(
      reasonsOf(planOf(failedRun(u, {u.user("x"), toolText, u.user("y")}), planDoc("s1", "r1"))),
      Reasons{"provider_replay_unsupported"});
  // The host hands out the source's own ids (e.6.3).
  Ledger q("s1", "r1");
  json reuse = hostFacts();
  reuse["ids"] = {"inv-r1", "run-new", "turn-new", "claim-new"};
  EXPECT_EQ(reasonsOf(planOf(usualSource(q), planDoc("s1", "r1", reuse))),
            Reasons{"continuation_identity_reused"});
  // A non-terminal source: the terminal repair did not succeed (e.6.5).
  Ledger d("s1", "r1");
  EXPECT_EQ(
      reasonsOf(planOf({op("createRun", d.header()), append(d.user("x"))}, planDoc("s1", "r1"))),
      Reasons{"terminal_repair_failed"});
}

// e.2.6: a run already records this source at this high-water (legacy V1 source).
TEST(PlanContinuation, LegacyContinuationOfTheSameBoundaryIsAlreadyExists) {
  Ledger r("s1", "r1");
  std::vector<json> ops = usualSource(r);
  Ledger child("s1", "r2", 5000);
  json h = child.header(5000);
  h["parentRunId"] = "r1";
  h["continuationSource"] = {{"sourceRunId", "r1"}, {"sourceRuntimeEventHighWater", 4}};
  ops.push_back(op("createRun", h));
  const CliOutcome o = planOf(ops, planDoc("s1", "r1"));
  EXPECT_EQ(reasonsOf(o), Reasons{"continuation_already_exists"});
  EXPECT_EQ(o.out["diagnostics"][0]["detail"]["continuationRunId"], "r2") << o.text;
}

// e.4 lineage through legacy (V1) edges: missing ancestor, cycle, identity, start without V2.
TEST(PlanContinuation, LineageFailuresNameTheirCode) {
  auto childOf = [](const std::string& run, json source, std::vector<json> prior) {
    Ledger c("s1", run, 5000);
    json h = c.header(5000);
    h["continuationSource"] = std::move(source);
    std::vector<json> child = failedRun(c, {c.user("continue")}, h);
    prior.insert(prior.end(), child.begin(), child.end());
    return prior;
  };
  Ledger a("s1", "r1");
  EXPECT_EQ(
      reasonsOf(planOf(childOf("r2", {{"sourceRunId", "ghost"}, {"sourceRuntimeEventHighWater", 4}},
                               usualSource(a)),
                       planDoc("s1", "r2"))),
      Reasons{"runtime_lineage_missing"});
  Ledger b("s1", "r1");
  EXPECT_EQ(reasonsOf(planOf(childOf("r2",
                                     {{"sourceRunId", "r1"},
                                      {"sourceRuntimeEventHighWater", 4},
                                      {"sourceInvocationId", "inv-other"}},
                                     usualSource(b)),
                             planDoc("s1", "r2"))),
            Reasons{"runtime_identity_mismatch"});
  // r1 continues r2 and r2 continues r1
  Ledger x("s1", "r1");
  json hx = x.header();
  hx["continuationSource"] = {{"sourceRunId", "r2"}, {"sourceRuntimeEventHighWater", 2}};
  std::vector<json> cyc = failedRun(x, {x.user("x")}, hx);
  EXPECT_EQ(reasonsOf(planOf(
                childOf("r2", {{"sourceRunId", "r1"}, {"sourceRuntimeEventHighWater", 2}}, cyc),
                planDoc("s1", "r2"))),
            Reasons{"runtime_lineage_cycle"});
  // A V2 source with no continuation-start event on the child (e.4).
  Ledger v("s1", "r1");
  EXPECT_EQ(reasonsOf(planOf(childOf("r2",
                                     {{"protocol", "continuation_source_v2"},
                                      {"claimId", "claim-x"},
                                      {"boundaryDigest", "sha256:" + std::string(64, 'a')},
                                      {"sourceInvocationId", "inv-r1"},
                                      {"sourceRunId", "r1"},
                                      {"sourceTurnId", "turn-r1"},
                                      {"sourceRuntimeEventHighWater", 4},
                                      {"sourcePrefixDigest", "sha256:" + std::string(64, 'b')},
                                      {"replayManifestDigest", "sha256:" + std::string(64, 'a')}},
                                     usualSource(v)),
                             planDoc("s1", "r2"))),
            Reasons{"runtime_lineage_start_mismatch"});
}

// 65 segments: the 65th read fails (e.4 depth bound).
TEST(PlanContinuation, LineageDeeperThan64SegmentsIsDepthExceeded) {
  std::vector<json> ops;
  for (int k = 0; k <= 64; ++k) {
    Ledger r("s1", "r" + std::to_string(k), 1000 + k * 100);
    json h = r.header(1000 + k * 100);
    if (k > 0) {
      h["continuationSource"] = {{"sourceRunId", "r" + std::to_string(k - 1)},
                                 {"sourceRuntimeEventHighWater", 2}};
    }
    std::vector<json> run = failedRun(r, {r.user("step")}, h);
    ops.insert(ops.end(), run.begin(), run.end());
  }
  EXPECT_EQ(reasonsOf(planOf(ops, planDoc("s1", "r64"))),
            Reasons{"runtime_lineage_depth_exceeded"});
  ops.resize(ops.size() - 4);  // drop r64: r63 has 64 segments, within the bound
  const CliOutcome within = planOf(ops, planDoc("s1", "r63"));
  EXPECT_EQ(within.out["decision"], "continue") << within.text;
  EXPECT_EQ(within.out["lineageDepth"], 64);
}

// The claim the host would take for a continue plan (e.8), and its live start event (f.7).
struct ClaimDoc {
  json claim, target, start;
};
ClaimDoc claimFor(const json& plan, const std::string& claimId, const std::string& targetRun,
                  double claimedAt) {
  const json& boundary = plan["boundary"];
  const std::string manifest = boundary["manifestDigest"];
  const json& segment = boundary["segments"].back();
  const json& src = segment["identity"];
  const std::string inv = "inv-" + targetRun, turn = "turn-" + targetRun;
  ClaimDoc d;
  json source = {{"protocol", "continuation_source_v2"},
                 {"claimId", claimId},
                 {"boundaryDigest", manifest},
                 {"sourceInvocationId", src["invocationId"]},
                 {"sourceRunId", src["runId"]},
                 {"sourceTurnId", src["turnId"]},
                 {"sourceRuntimeEventHighWater", segment["position"]["lastEventSeq"]},
                 {"sourcePrefixDigest", segment["prefixDigest"]},
                 {"replayManifestDigest", manifest}};
  d.target = {{"sessionId", src["sessionId"]},
              {"runId", targetRun},
              {"invocationId", inv},
              {"turnId", turn},
              {"status", "created"},
              {"createdAt", claimedAt},
              {"updatedAt", claimedAt},
              {"workspaceIdentity", kWorkspace},
              {"cwd", "/ws"},
              {"parentRunId", src["runId"]},
              {"parentTurnId", src["turnId"]},
              {"continuationSource", source}};
  d.claim = {{"protocol", "continuation_claim_v1"},
             {"claimId", claimId},
             {"boundaryDigest", manifest},
             {"boundary", boundary},
             {"providerProjectionVersion", 1},
             {"providerReplayDigest", plan["providerReplayDigest"]},
             {"target",
              {{"sessionId", src["sessionId"]},
               {"invocationId", inv},
               {"runId", targetRun},
               {"turnId", turn}}},
             {"targetRunHeader", d.target},
             {"claimedAt", claimedAt}};
  d.start = {{"id", targetRun + "-start"},
             {"sessionId", src["sessionId"]},
             {"invocationId", inv},
             {"runId", targetRun},
             {"turnId", turn},
             {"ts", claimedAt + 1},
             {"partial", false},
             {"role", "system"},
             {"author", "system"},
             {"actions",
              {{"continuationStart",
                {{"protocol", "continuation_start_v2"},
                 {"provenance", "runtime_admission"},
                 {"claimId", claimId},
                 {"boundaryDigest", manifest},
                 {"immediateSource",
                  {{"sessionId", src["sessionId"]},
                   {"invocationId", src["invocationId"]},
                   {"runId", src["runId"]},
                   {"turnId", src["turnId"]},
                   {"highWater", segment["position"]["lastEventSeq"]},
                   {"prefixDigest", segment["prefixDigest"]}}},
                 {"replayManifestDigest", manifest},
                 {"providerProjectionVersion", 1},
                 {"providerReplayDigest", plan["providerReplayDigest"]}}}}}};
  return d;
}

// f.7 claim writers through store exec: acquired; the same boundary again is existing, even
// under another claim id; another boundary with the same target run is a conflict; the start
// writer refuses a start that is not the claim's, takes event #1 once and retries exactly.
TEST(StoreExec, ClaimAndStartWritersFollowF7) {
  Ledger r1("s1", "r1"), r2("s1", "r2", 2000);
  std::vector<json> source = usualSource(r1);
  const std::vector<json> second = usualSource(r2);
  source.insert(source.end(), second.begin(), second.end());
  const CliOutcome p1 = planOf(source, planDoc("s1", "r1"));
  const CliOutcome p2 = planOf(source, planDoc("s1", "r2"));
  ASSERT_EQ(p1.out["decision"], "continue") << p1.text;
  ASSERT_EQ(p2.out["decision"], "continue") << p2.text;
  const ClaimDoc a = claimFor(p1.out, "claim-a", "run-new", 90000);
  const ClaimDoc sameBoundary = claimFor(p1.out, "claim-b", "run-b", 90000);
  const ClaimDoc sameTarget = claimFor(p2.out, "claim-c", "run-new", 90000);
  json badStart = a.start;
  badStart["actions"]["continuationStart"]["provenance"] = "claim_repair";
  Ledger target("s1", "run-new", 90005);
  target.invocation = "inv-run-new";
  target.turn = "turn-run-new";
  std::vector<json> ops = source;
  for (json o : {op("claimContinuation", {{"claim", a.claim}}),
                 op("claimContinuation", {{"claim", a.claim}}),
                 op("claimContinuation", {{"claim", sameBoundary.claim}}),
                 op("claimContinuation", {{"claim", sameTarget.claim}}), op("createRun", a.target),
                 append(target.user("before the start")),
                 op("commitContinuationStart", {{"claim", a.claim}, {"runtimeEvent", badStart}}),
                 op("commitContinuationStart", {{"claim", a.claim}, {"runtimeEvent", a.start}}),
                 op("commitContinuationStart", {{"claim", a.claim}, {"runtimeEvent", a.start}}),
                 op("listClaims")})
    ops.push_back(o);
  auto lines = exec(ops);
  const size_t c = source.size();
  EXPECT_EQ(lines[c]["result"]["result"], "acquired") << lines[c];
  EXPECT_EQ(lines[c + 1]["result"]["result"], "existing") << lines[c + 1];
  EXPECT_EQ(lines[c + 2]["result"]["result"], "existing") << lines[c + 2];
  EXPECT_EQ(lines[c + 2]["result"]["existing"]["claimId"], "claim-a");
  EXPECT_EQ(lines[c + 3]["result"]["result"], "conflict") << lines[c + 3];
  EXPECT_EQ(codeOf(lines[c + 4]), "ok") << lines[c + 4];
  EXPECT_NE(codeOf(lines[c + 5]), "ok");  // target event #1 is reserved for the start
  EXPECT_EQ(codeOf(lines[c + 6]), "continuation_start_invalid") << lines[c + 6];
  EXPECT_EQ(lines[c + 7]["result"]["created"], true) << lines[c + 7];
  EXPECT_EQ(lines[c + 8]["result"]["created"], false);
  EXPECT_EQ(lines[c + 8]["result"]["runtimeEventSeq"], 1);
  ASSERT_EQ(lines[c + 9]["result"]["claims"].size(), 1u);
  EXPECT_EQ(lines[c + 9]["result"]["claims"][0]["startKind"], "runtime_admission");
}

// f.7: claimContinuation verifies the boundary against the ledger in its transaction. The
// claim of a terminal source's plan, offered to stores where that source is missing, different,
// or followed by a target that already has events; a claim over a source prefix that does not
// end with its terminal (digests computed from its events, e.7); a claim reusing the source's
// run id as its target.
TEST(StoreExec, ClaimBoundaryIsVerifiedAgainstTheLedger) {
  Ledger r("s1", "r1");
  const std::vector<json> source = usualSource(r);
  const CliOutcome plan = planOf(source, planDoc("s1", "r1"));
  ASSERT_EQ(plan.out["decision"], "continue") << plan.text;
  const ClaimDoc a = claimFor(plan.out, "claim-a", "run-new", 90000);
  auto claimOn = [&](std::vector<json> ops, const json& claim) {
    ops.push_back(op("claimContinuation", {{"claim", claim}}));
    return exec(ops).back();
  };
  // the source run is not in the store
  Ledger other("s1", "r0");
  EXPECT_EQ(codeOf(claimOn(usualSource(other), a.claim)), "continuation_boundary_missing");
  // the source has other events at the boundary's positions (another terminal)
  Ledger changed("s1", "r1");
  changed.ts += 7;
  EXPECT_EQ(codeOf(claimOn(usualSource(changed), a.claim)), "continuation_boundary_changed");
  // the target run already holds an event
  std::vector<json> busy = source;
  Ledger target("s1", "run-new", 80000);
  target.invocation = "inv-run-new";
  target.turn = "turn-run-new";
  json targetHeader = target.header(80000);
  busy.push_back(op("createRun", targetHeader));
  busy.push_back(append(target.user("early")));
  EXPECT_EQ(codeOf(claimOn(busy, a.claim)), "continuation_target_not_empty");
  // the target reuses the source's run id
  const ClaimDoc reuse = claimFor(plan.out, "claim-r", "r1", 90000);
  EXPECT_EQ(codeOf(claimOn(source, reuse.claim)), "continuation_claim_invalid");

  // A source whose prefix does not end with a terminal event: a boundary with the right
  // digests over its three events.
  Ledger pending("s1", "r1");
  std::vector<json> events = {pending.user("write the config"), pending.call("r1-c1"),
                              pending.response("r1-c1")};
  std::vector<crashsim::RuntimeEvent> decoded;
  for (const json& e : events) decoded.push_back(crashsim::decodeRuntimeEvent(crashsim::Json(e)));
  const crashsim::PrefixIdentity id{"s1", "inv-r1", "r1", "turn-r1"};
  json segment = {
      {"protocol", "runtime_prefix_segment_v1"},
      {"identity",
       {{"sessionId", "s1"}, {"invocationId", "inv-r1"}, {"runId", "r1"}, {"turnId", "turn-r1"}}},
      {"position", {{"lastEventSeq", 3}, {"eventCount", 3}, {"lastEventId", events[2]["id"]}}},
      {"prefixDigest", crashsim::prefixDigest(id, decoded)}};
  const json segments = json::array({segment});
  json openPlan = {{"boundary",
                    {{"protocol", "runtime_boundary_cursor_v1"},
                     {"segments", segments},
                     {"manifestDigest", crashsim::manifestDigest(crashsim::Json(segments))}}},
                   {"providerReplayDigest", "sha256:" + std::string(64, 'c')}};
  const ClaimDoc notTerminal = claimFor(openPlan, "claim-open", "run-new", 90000);
  std::vector<json> running{op("createRun", pending.header())};
  for (const json& e : events) running.push_back(append(e));
  EXPECT_EQ(codeOf(claimOn(running, notTerminal.claim)), "continuation_boundary_not_terminal");
}

// e.5: a later plan of the same source classifies the existing claim: no start → repair
// required; a start and no terminal → started indeterminate; the target ended with a valid
// terminal fact and header → already exists.
TEST(PlanContinuation, ExistingClaimIsClassified) {
  Ledger r("s1", "r1");
  std::vector<json> claimed = usualSource(r);
  const CliOutcome first = planOf(claimed, planDoc("s1", "r1"));
  ASSERT_EQ(first.out["decision"], "continue") << first.text;
  const ClaimDoc a = claimFor(first.out, "claim-a", "run-new", 90000);
  claimed.push_back(op("claimContinuation", {{"claim", a.claim}}));
  claimed.push_back(op("createRun", a.target));
  EXPECT_EQ(reasonsOf(planOf(claimed, planDoc("s1", "r1"))),
            Reasons{"continuation_claim_repair_required"});
  claimed.push_back(op("commitContinuationStart", {{"claim", a.claim}, {"runtimeEvent", a.start}}));
  EXPECT_EQ(reasonsOf(planOf(claimed, planDoc("s1", "r1"))),
            Reasons{"continuation_started_indeterminate"});
  Ledger t("s1", "run-new", 90010);
  t.invocation = "inv-run-new";
  t.turn = "turn-run-new";
  const json terminal = t.failedTerminal();
  claimed.push_back(append(terminal));
  json done = a.target;
  done["status"] = "failed";
  done["updatedAt"] = terminal["ts"];
  done["completedAt"] = terminal["ts"];
  done["failureClass"] = "app_restarted";
  claimed.push_back(op("markRunTerminal", done));
  EXPECT_EQ(reasonsOf(planOf(claimed, planDoc("s1", "r1"))),
            Reasons{"continuation_already_exists"});
  // The failed continuation is itself a source: its V2 edge passes every e.4 check (start,
  // digest, replay, claim), so its plan continues over two segments.
  json next = hostFacts();
  next["ids"] = {"inv-3", "run-3", "turn-3", "claim-3"};
  const CliOutcome chained = planOf(claimed, planDoc("s1", "run-new", next));
  EXPECT_EQ(chained.out["decision"], "continue") << chained.text;
  EXPECT_EQ(chained.out["lineageDepth"], 2);
  EXPECT_EQ(chained.out["boundary"]["segments"].size(), 2u);
}
