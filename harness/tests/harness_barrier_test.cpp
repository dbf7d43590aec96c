// The barrier oracle (verdicts/barrier.h) on real ledgers: a complete run of the real agent is
// cut and edited by hand into the states a crash at an unnamed barrier may (or must never)
// leave. Each bad input names the bug that produces it.
#include <gtest/gtest.h>

#include <algorithm>

#include "crashsim/build_paths.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/store.h"
#include "test_util.h"
#include "verdicts/barrier.h"

using crashsim::ContentKind;
using crashsim::RuntimeEvent;
using crashsim::RuntimeStore;
namespace harness = crashsim::harness;
using namespace crashsim::harness;
using namespace crashsim::harness::test;
namespace fs = std::filesystem;

namespace {

struct Ran {
  harness::Scenario scenario;
  std::vector<RuntimeEvent> events;  // the complete run's ledger
};

Ran runToEnd(const std::string& id) {
  Ran r;
  const fs::path dir = freshDir("crashsim-barrier-" + id);
  EXPECT_FALSE(completedRun(dir, id).empty()) << id;
  for (auto& s : loadScenarioDir(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios"))
    if (s.id == id) r.scenario = s;
  auto store = RuntimeStore::open(dir / "store");
  for (const auto& h : store->listRuns())
    for (auto& se : store->readRunEvents(h.sessionId, h.runId)) r.events.push_back(se.event);
  store.reset();
  fs::remove_all(dir);
  return r;
}

// The prefix of `events` up to and including the first event matching `pred`.
template <class Pred>
std::vector<RuntimeEvent> upTo(const std::vector<RuntimeEvent>& events, Pred pred) {
  std::vector<RuntimeEvent> out;
  for (const auto& e : events) {
    out.push_back(e);
    if (pred(e)) return out;
  }
  ADD_FAILURE() << "no event matches";
  return out;
}

bool isDispatch(const RuntimeEvent& e) { return e.toolDispatch.has_value(); }
bool isResponse(const RuntimeEvent& e) { return e.contentKind == ContentKind::function_response; }

std::vector<std::string> problems(const Ran& r, const std::vector<RuntimeEvent>& events,
                                  const std::map<std::string, int>& effects,
                                  barrier::CrashFacts* out = nullptr) {
  barrier::CrashFacts facts;
  auto bad = barrier::crashStateProblems(r.scenario, {events}, effects, facts);
  if (out) *out = facts;
  return bad;
}

}  // namespace

TEST(BarrierOracle, EveryPrefixOfACompleteRunAtATransactionBoundaryIsLegal) {
  const Ran r = runToEnd("write-config-port");
  ASSERT_FALSE(r.events.empty());
  // A prefix whose effects are those of its dispatched calls is a state a crash may leave.
  for (size_t n = 0; n <= r.events.size(); ++n) {
    std::vector<RuntimeEvent> prefix(r.events.begin(), r.events.begin() + n);
    std::map<std::string, int> effects;
    for (const auto& e : prefix)
      if (isResponse(e)) effects[e.callId] = 1;
    EXPECT_TRUE(problems(r, prefix, effects).empty()) << "prefix of " << n << " events";
  }
}

// Bug: the implementation runs before T1 commits (a crash in between loses the dispatch of a
// tool that ran, and recovery runs it again).
TEST(BarrierOracle, AnImplementationWithoutADurableDispatchIsAViolation) {
  const Ran r = runToEnd("bash-touch-marker");
  auto prefix = upTo(
      r.events, [](const RuntimeEvent& e) { return e.contentKind == ContentKind::function_call; });
  prefix.erase(std::remove_if(prefix.begin(), prefix.end(), isDispatch), prefix.end());
  EXPECT_TRUE(mentions(problems(r, prefix, {{"call-1", 1}}), "its T1 dispatch is not durable"));
  EXPECT_TRUE(mentions(problems(r, r.events, {{"call-1", 2}}), "executed 2 times"));
}

// Bug: T2 written without (or before) its T1; a response whose dispatch never became durable.
TEST(BarrierOracle, AResponseWithoutItsDispatchIsAViolation) {
  const Ran r = runToEnd("bash-touch-marker");
  auto events = r.events;
  events.erase(std::remove_if(events.begin(), events.end(), isDispatch), events.end());
  EXPECT_TRUE(mentions(problems(r, events, {{"call-1", 1}}), "without its dispatch"));
}

// Bug: the terminal fact is committed before the run's last event, or twice.
TEST(BarrierOracle, ATerminalFactThatIsNotTheTailIsAViolation) {
  const Ran r = runToEnd("bash-touch-marker");
  auto events = r.events;
  ASSERT_TRUE(events.back().isTerminal());
  std::rotate(events.rbegin(), events.rbegin() + 1, events.rbegin() + 2);  // swap the last two
  EXPECT_TRUE(mentions(problems(r, events, {{"call-1", 1}}), "is not the ledger tail"));
  auto twice = r.events;
  twice.push_back(twice.back());
  EXPECT_TRUE(mentions(problems(r, twice, {{"call-1", 1}}), "terminal facts in one run"));
}

// Bug: a run whose first durable event is not the user message carrying the T1 protocol marker
// (a writer that commits the model's call before the task).
TEST(BarrierOracle, ARunThatDoesNotStartWithItsMarkedUserMessageIsAViolation) {
  const Ran r = runToEnd("bash-touch-marker");
  std::vector<RuntimeEvent> events(r.events.begin() + 1, r.events.end());
  EXPECT_TRUE(mentions(problems(r, events, {{"call-1", 1}}), "is not its user message"));
  barrier::CrashFacts facts;
  EXPECT_TRUE(
      mentions(barrier::crashStateProblems(r.scenario, {r.events, r.events}, {}, facts), "2 runs"));
}

TEST(BarrierOracle, AnUnsettledBashMustParkAndRunsNoMore) {
  const Ran r = runToEnd("bash-touch-marker");
  const auto prefix = upTo(r.events, isDispatch);
  for (int ran : {0, 1}) {
    barrier::CrashFacts facts;
    ASSERT_TRUE(
        problems(r, prefix,
                 ran ? std::map<std::string, int>{{"call-1", 1}} : std::map<std::string, int>{},
                 &facts)
            .empty());
    const auto x = barrier::expectRecovery(r.scenario, facts);
    EXPECT_TRUE(x.mustPark) << ran;
    EXPECT_EQ(barrier::expectedExecutions(r.scenario, facts, true), std::vector<int>{ran});
  }
}

TEST(BarrierOracle, AnUnsettledWriteThatRanMayParkOneThatNeverStartedMustPark) {
  const Ran r = runToEnd("write-config-port");
  size_t writeIndex = 0;
  while (r.scenario.calls[writeIndex].name != "Write") ++writeIndex;
  const std::string writeId = r.scenario.calls[writeIndex].id;
  const auto prefix = upTo(r.events, [&](const RuntimeEvent& e) {
    return e.toolDispatch && e.toolDispatch->providerToolCallId == writeId;
  });
  std::map<std::string, int> effects;
  for (size_t i = 0; i < writeIndex; ++i) effects[r.scenario.calls[i].id] = 1;
  barrier::CrashFacts facts;
  ASSERT_TRUE(problems(r, prefix, effects, &facts).empty());
  EXPECT_TRUE(barrier::expectRecovery(r.scenario, facts).mustPark);
  effects[writeId] = 1;
  ASSERT_TRUE(problems(r, prefix, effects, &facts).empty());
  const auto x = barrier::expectRecovery(r.scenario, facts);
  EXPECT_FALSE(x.mustPark);
  EXPECT_TRUE(x.mayPark);
  // Settled ledger: recovery must continue, and every dispatched call runs once in the end.
  const auto settled =
      upTo(r.events, [&](const RuntimeEvent& e) { return isResponse(e) && e.callId == writeId; });
  ASSERT_TRUE(problems(r, settled, effects, &facts).empty());
  const auto y = barrier::expectRecovery(r.scenario, facts);
  EXPECT_FALSE(y.mustPark || y.mayPark);
  for (int n : barrier::expectedExecutions(r.scenario, facts, false)) EXPECT_EQ(n, 1);
}

TEST(BarrierOracle, ACallLeftUnansweredBeforeASiblingsResultMustPark) {
  const Ran r = runToEnd("parallel-calls");
  // The first call's T1 is lost, the second call is answered after it: a replay gap.
  std::vector<RuntimeEvent> events;
  std::string first;
  for (const auto& e : r.events) {
    if (e.contentKind == ContentKind::function_call && first.empty()) first = e.callId;
    const bool ofFirst =
        !first.empty() &&
        (e.callId == first || (e.toolDispatch && e.toolDispatch->providerToolCallId == first));
    if (ofFirst && e.contentKind != ContentKind::function_call) continue;
    events.push_back(e);
    if (isResponse(e) && e.callId != first) break;
  }
  std::map<std::string, int> effects;
  for (const auto& e : events)
    if (isResponse(e)) effects[e.callId] = 1;
  barrier::CrashFacts facts;
  ASSERT_TRUE(problems(r, events, effects, &facts).empty());
  const auto x = barrier::expectRecovery(r.scenario, facts);
  EXPECT_TRUE(x.mustPark);
  EXPECT_NE(x.why.find("replay gap"), std::string::npos) << x.why;
}

TEST(BarrierOracle, NoAcceptedTaskAndAFinishedRunContinueNothing) {
  const Ran r = runToEnd("bash-touch-marker");
  barrier::CrashFacts facts;
  ASSERT_TRUE(problems(r, {}, {}, &facts).empty());
  EXPECT_FALSE(facts.accepted);
  EXPECT_EQ(barrier::expectedExecutions(r.scenario, facts, true), std::vector<int>{0});
  ASSERT_TRUE(problems(r, r.events, {{"call-1", 1}}, &facts).empty());
  EXPECT_TRUE(facts.finished);
  const auto x = barrier::expectRecovery(r.scenario, facts);
  EXPECT_FALSE(x.mustPark || x.mayPark);
}
