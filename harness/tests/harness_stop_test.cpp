// The Stop oracle (verdicts/stop.h) on hand-built stores: the state the termination contract
// demands for a Stop at write-config-port P2#2 (call-1 answered, call-2 through T1, its
// implementation never called), written row by row from the contract — and each realistic bug
// edited into it, which must turn V3 red. Plus the Stop case ids and the stop plan.
#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "crashsim/build_paths.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/plan.h"
#include "crashsim/harness/scenario.h"
#include "test_util.h"
#include "verdicts/stop.h"

using namespace crashsim::harness;
using namespace crashsim::harness::points;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

Scenario scenario() {
  return loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json");
}

struct State {
  std::vector<observed::RunRow> runs{{"s", "run-1", "turn-1", "cancelled",
                                      json{{"status", "cancelled"}, {"abortSource", "user_stop"}}}};
  std::vector<observed::EventRow> events;
  std::vector<observed::FinalizeRow> keys{{"turn-finalize:turn-1", "run-1", "terminal", 2}};
  std::map<std::string, int> effects{{"call-1", 1}};

  void add(std::string id, double at, json payload) {
    payload["id"] = id;
    events.push_back({static_cast<int64_t>(events.size() + 1), id, at, std::move(payload)});
  }
  static json call(const char* id, const char* tool) {
    return {{"content", {{"kind", "function_call"}, {"id", id}, {"name", tool}}}};
  }
  static json dispatch(const char* id) {
    return {{"actions", {{"toolDispatch", {{"providerToolCallId", id}}}}},
            {"refs", {{"operationId", std::string("op-") + id}}}};
  }
  static json response(const char* id, bool bound, const char* errorCode) {
    json r = {{"content", {{"kind", "function_response"}, {"id", id}, {"result", {{"ok", true}}}}}};
    if (bound) r["refs"] = {{"operationId", std::string("op-") + id}};
    if (errorCode) {
      r["content"]["isError"] = true;
      r["content"]["result"] = {{"error", {{"code", errorCode}}}};
    }
    return r;
  }
  State() {
    add("user", 1, {{"content", {{"kind", "text"}, {"text", "go"}}}});
    add("text", 2, {{"content", {{"kind", "text"}, {"text", "look"}}}});
    add("c1", 3, call("call-1", "Read"));
    add("d1", 4, dispatch("call-1"));
    add("r1", 5, response("call-1", true, nullptr));
    add("c2", 6, call("call-2", "Write"));
    add("d2", 7, dispatch("call-2"));
    add("r2", 9, response("call-2", true, "not_started"));
    add("terminal", 9,
        {{"status", "cancelled"},
         {"actions", {{"endInvocation", true}, {"stateDelta", {{"abortSource", "user_stop"}}}}}});
  }
  std::vector<std::string> problems(bool headerWritten = true) const {
    const Scenario sc = scenario();
    return stop::stopStateProblems(sc, stop::expectStop(sc, P2, 2), runs, events, keys, effects,
                                   headerWritten);
  }
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "; ";
  return s;
}

TEST(StopOracle, TheContractsStateAtP2Passes) {
  const auto bad = State().problems();
  EXPECT_TRUE(bad.empty()) << joined(bad);
}

TEST(StopOracle, EachRealisticBugTurnsV3Red) {
  struct Bug {
    const char* name;
    std::function<void(State&)> edit;
    const char* expect;  // a fragment of the first reason that must name it
  };
  const std::vector<Bug> bugs = {
      {"the tool ran after the Stop", [](State& s) { s.effects["call-2"] = 1; },
       "a tool started after the Stop"},
      {"its real result instead of the closure",
       [](State& s) {
         s.events[7].payload = State::response("call-2", true, nullptr);
         s.events[7].payload["id"] = "r2";
       },
       "expects a not_started closure"},
      {"the closure not bound (pre-T1 shape after T1)",
       [](State& s) { s.events[7].payload = State::response("call-2", false, "not_started"); },
       "expects a not_started closure"},
      {"no closure at all",
       [](State& s) {
         s.events.erase(s.events.begin() + 7);
         s.events.back().seq = 8;
       },
       "no response"},
      {"a second terminal (double Stop)",
       [](State& s) { s.add("terminal-2", 10, s.events.back().payload); },
       "terminal RuntimeEvent(s), exactly one"},
      {"written as recovery would (aborted)",
       [](State& s) { s.events.back().payload["status"] = "aborted"; }, "expected cancelled"},
      {"wrong abort source",
       [](State& s) { s.events.back().payload["actions"]["stateDelta"]["abortSource"] = "user"; },
       "expected user_stop"},
      {"the closure in its own transaction", [](State& s) { s.events[7].committedAt = 8; },
       "not committed together"},
      {"no idempotency key", [](State& s) { s.keys.clear(); }, "key row"},
      {"the key names another batch", [](State& s) { s.keys[0].eventCount = 1; }, "batch event"},
      {"header left running", [](State& s) { s.runs[0].status = "running"; }, "run header running"},
      {"T1 after the Stop for a later call",
       [](State& s) { s.events.insert(s.events.begin() + 5, s.events[3]); }, "T1 after the Stop"},
  };
  for (const auto& b : bugs) {
    State s;
    b.edit(s);
    const auto bad = s.problems();
    ASSERT_FALSE(bad.empty()) << b.name << " passed";
    EXPECT_NE(joined(bad).find(b.expect), std::string::npos) << b.name << ": " << joined(bad);
  }
}

TEST(StopOracle, AKillBetweenBatchAndHeaderExpectsTheHeaderNotYetTerminal) {
  State s;
  EXPECT_NE(joined(s.problems(false)).find("died before writing it"), std::string::npos);
  s.runs[0].status = "running";
  const auto bad = s.problems(false);
  EXPECT_TRUE(bad.empty()) << joined(bad);
}

TEST(StopOracle, TheExpectationFollowsTheKillOraclesPlacement) {
  const Scenario sc = scenario();
  // P0#2: the Write's step is decided, not committed: after the Stop its call is committed and
  // closed before dispatch; P4#2: the Write finished, its real result commits; P8: no Stop batch.
  const auto p0 = stop::expectStop(sc, P0, 2);
  ASSERT_TRUE(p0.ok);
  EXPECT_EQ(p0.calls[1].response, stop::Response::before_dispatch);
  EXPECT_EQ(p0.closures(), 1);
  const auto p4 = stop::expectStop(sc, P4, 2);
  EXPECT_EQ(p4.calls[1].response, stop::Response::result);
  EXPECT_EQ(p4.calls[1].executions, 1);
  EXPECT_EQ(p4.closures(), 0);
  EXPECT_TRUE(stop::expectStop(sc, P8, 1).runCompletes);
  // A kill inside the batch leaves the state of the kill case it equals.
  EXPECT_EQ(stop::killEquivalent(sc, parseCaseId("write-config-port/P0#2/stop+K:P12#1")).str(),
            "write-config-port/P1#2/kill");
  EXPECT_EQ(stop::killEquivalent(sc, parseCaseId("write-config-port/P3#1/stop+K:P12#1")).str(),
            "write-config-port/P6#2/kill");
  EXPECT_EQ(stop::killEquivalent(sc, parseCaseId("write-config-port/P2#2/stop+K:P12#1")).str(),
            "write-config-port/P2#2/kill");
}

// The watchdog case of bash-touch-marker (termination contract section 4): the Stop comes while
// call-1, a Bash that ignores SIGTERM, runs; the grace expires and the run is sealed from accepted
// state at ts >= Stop + grace (here 1000 + 1000): call-1 left unknown (no response), one terminal
// cancelled / user_stop / cancellation_grace_expired, alone in its batch, the ledger's tail.
struct GraceState {
  std::vector<observed::RunRow> runs{{"s", "run-1", "turn-1", "cancelled",
                                      json{{"status", "cancelled"}, {"abortSource", "user_stop"}}}};
  std::vector<observed::EventRow> events;
  std::vector<observed::FinalizeRow> keys{{"turn-finalize:turn-1", "run-1", "terminal", 1}};
  std::map<std::string, int> effects{{"call-1", 1}};
  GraceState() {
    State s;  // reuse its event builders
    s.events.clear();
    s.add("user", 1, {{"content", {{"kind", "text"}, {"text", "go"}}}});
    s.add("c1", 2, State::call("call-1", "Bash"));
    s.add("d1", 3, State::dispatch("call-1"));
    s.add("terminal", 2005,
          {{"status", "cancelled"},
           {"ts", 2004},
           {"actions",
            {{"endInvocation", true},
             {"stateDelta",
              {{"abortSource", "user_stop"}, {"recoveryReason", "cancellation_grace_expired"}}}}}});
    events = s.events;
  }
  std::vector<std::string> problems() const {
    const Scenario sc =
        loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "bash-touch-marker.json");
    stop::StopExpectation x = stop::expectStopGrace(sc, 1);
    x.sealNotBeforeMs = 2000;
    return stop::stopStateProblems(sc, x, runs, events, keys, effects, true);
  }
};

TEST(StopOracle, TheWatchdogSealPassesAndEachRealisticBugTurnsV3Red) {
  EXPECT_TRUE(GraceState().problems().empty()) << joined(GraceState().problems());
  struct Bug {
    const char* name;
    std::function<void(GraceState&)> edit;
    const char* expect;
  };
  const std::vector<Bug> bugs = {
      {"grace counted from the run's start: sealed at once",
       [](GraceState& s) { s.events.back().payload["ts"] = 1010; }, "grace was not counted"},
      {"a late result accepted after the seal",
       [](GraceState& s) {
         s.events.push_back({5, "r1", 2100, State::response("call-1", true, nullptr)});
       },
       "contract expects no response"},
      {"the started tool reported not executed",
       [](GraceState& s) {
         s.events.insert(s.events.begin() + 3,
                         {4, "r1", 2005, State::response("call-1", true, "not_started")});
         s.events.back().seq = 5;
         s.keys[0].eventCount = 2;
       },
       "expects no response"},
      {"no recoveryReason on the seal",
       [](GraceState& s) {
         s.events.back().payload["actions"]["stateDelta"].erase("recoveryReason");
       },
       "expected cancellation_grace_expired"},
      {"the tool run again", [](GraceState& s) { s.effects["call-1"] = 2; }, "ran 2 time(s)"},
  };
  for (const auto& b : bugs) {
    GraceState s;
    b.edit(s);
    const auto bad = s.problems();
    ASSERT_FALSE(bad.empty()) << b.name << " passed";
    EXPECT_NE(joined(bad).find(b.expect), std::string::npos) << b.name << ": " << joined(bad);
  }
}

TEST(StopOracle, ACooperativeStopMustNotCarryTheWatchdogsReason) {
  State s;
  s.events.back().payload["actions"]["stateDelta"]["recoveryReason"] = "cancellation_grace_expired";
  EXPECT_NE(joined(s.problems()).find("no watchdog seal"), std::string::npos);
}

TEST(StopOracle, OnlyTheCallThatHoldsGetsAWatchdogCase) {
  const auto dir = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios";
  const Scenario lr = loadScenario(dir / "long-run.json");
  ASSERT_EQ(stop::holdingCall(lr), std::optional<size_t>(17));  // call-18, the first Bash
  EXPECT_EQ(stop::holdingHit(lr), std::optional<int>(18));
  const auto x = stop::expectStopGrace(lr, 18);
  ASSERT_TRUE(x.ok) << x.whyNot;
  EXPECT_EQ(x.calls[16].response, stop::Response::result);
  EXPECT_EQ(x.calls[17].response, stop::Response::none);
  EXPECT_EQ(x.calls[17].executions, 1);
  EXPECT_FALSE(x.calls[18].call);
  EXPECT_FALSE(stop::expectStopGrace(lr, 19).ok);  // call-19's Bash does not hold
  EXPECT_FALSE(stop::holdingCall(scenario()).has_value());
}

TEST(StopCaseIds, RoundTripAndRefuseWhatNoStopCanBe) {
  for (const char* ok :
       {"s/P4#1/stop", "s/P0#3/stop+K:P12#1", "s/P7#1/stop+K:P13#1", "s/P2#4/stop+grace"})
    EXPECT_EQ(parseCaseId(ok).str(), ok);
  for (const char* bad : {"s/P10#1/stop", "s/S#1/stop", "s/P4#1/stop@3", "s/P4#1/stop+R:P10#1",
                          "s/P4#1/stop+K:P12#2", "s/P4#1/kill+K:P12#1", "s/P4#1/halt",
                          "s/P4#1/stop+grace", "s/P2#1/kill+grace", "s/P2#1/stop+graces"})
    EXPECT_THROW(parseCaseId(bad), std::invalid_argument) << bad;
}

TEST(StopPlan, EveryAgentPointIsStoppedAndEveryBatchKilledTwice) {
  const Scenario sc = scenario();
  PlanSelection sel;
  sel.mode = "stop";
  const auto hits = predictedHits(sc);
  int primaries = 0, batches = 0;
  for (CrashPoint fp : pointRange(P0, P9)) primaries += hits[fp];
  for (CrashPoint fp : pointRange(P0, P7)) batches += hits[fp];
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), static_cast<size_t>(primaries));
  sel.doubleFaults = true;
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), static_cast<size_t>(primaries + 2 * batches));
  sel.failpoints = {"P13"};
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), static_cast<size_t>(batches));
  sel.doubleFaults = false;
  EXPECT_THROW(planSweep({sc}, sel), std::runtime_error);  // P13 needs --double-faults
  sel.failpoints = {"P10"};
  EXPECT_THROW(planSweep({sc}, sel), std::runtime_error);  // no Stop in a recovery process
  sel.mode = "kill";
  sel.failpoints = {"P12"};
  EXPECT_THROW(planSweep({sc}, sel), std::runtime_error);
}

// A scenario whose Bash call holds gets one watchdog case in stop mode, and none in kill mode.
TEST(StopPlan, TheHoldingBashCallGetsOneWatchdogCase) {
  const Scenario sc =
      loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "bash-touch-marker.json");
  PlanSelection sel;
  sel.mode = "stop";
  std::vector<std::string> grace;
  for (const auto& pc : planSweep({sc}, sel).cases)
    if (pc.id.stopGrace) grace.push_back(pc.id.str());
  EXPECT_EQ(grace, std::vector<std::string>{"bash-touch-marker/P2#1/stop+grace"});
  sel.failpoints = {"P4"};
  for (const auto& pc : planSweep({sc}, sel).cases) EXPECT_FALSE(pc.id.stopGrace);
  sel.failpoints.clear();
  sel.mode = "kill";
  for (const auto& pc : planSweep({sc}, sel).cases) EXPECT_FALSE(pc.id.stopGrace);
  sel.mode = "stop";
  EXPECT_TRUE(planSweep({scenario()}, sel).cases.size() > 0);
  for (const auto& pc : planSweep({scenario()}, sel).cases) EXPECT_FALSE(pc.id.stopGrace);
}

}  // namespace
