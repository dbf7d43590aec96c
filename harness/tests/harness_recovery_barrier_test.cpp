// The recovery barrier oracle (verdicts/recovery_barrier.h) on real ledgers: the real agent is
// killed at P0#1 of write-config-port and recoveredRun to the end (`crashsim run … --keep`), so the
// store holds the crashed run (sealed) and the continuation run. That pair is cut and edited by
// hand into the states a kill at one of the recovery process's own barriers may (or must never)
// leave. Each bad input names the bug that produces it.
#include <gtest/gtest.h>

#include <algorithm>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/store.h"
#include "test_util.h"
#include "verdicts/observed_store.h"
#include "verdicts/recovery_barrier.h"

using crashsim::RunHeader;
using crashsim::RuntimeStore;
namespace code = crashsim::code;
namespace harness = crashsim::harness;
using namespace crashsim::harness;
using namespace crashsim::harness::test;
namespace fs = std::filesystem;
namespace rb = crashsim::harness::recovery_barrier;

namespace {

struct Recovered {
  harness::Scenario scenario;
  rb::Run crashed;       // the crashed run as recovery left it: the crash's events + its seal
  rb::Run continuation;  // the continuation run, complete
  observed::ClaimRow claim;
  bool ok = false;
};

// write-config-port killed at P0#1 (nothing settled: the continuation makes every call) and
// recoveredRun to the end.
const Recovered& recoveredRun() {
  static const Recovered r = [] {
    Recovered out;
    const fs::path dir = freshDir("crashsim-recovery-barrier");
    const auto run = sh(crashsimBinary().string() + " run 'write-config-port/P0#1/kill' --keep " +
                        (dir / "case").string() + " >/dev/null 2>&1");
    EXPECT_EQ(run.exitCode, 0) << "crashsim run write-config-port/P0#1/kill";
    for (auto& s : loadScenarioDir(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios"))
      if (s.id == "write-config-port") out.scenario = s;
    const fs::path store = dir / "case" / "store";
    if (!fs::exists(store)) return out;
    {
      auto st = RuntimeStore::open(store);
      auto runs = st->listRuns();
      std::stable_sort(runs.begin(), runs.end(), [](const RunHeader& a, const RunHeader& b) {
        return a.createdAt < b.createdAt;
      });
      std::vector<rb::Run> got;
      for (const auto& h : runs) {
        rb::Run r{h.runId, h.status, {}};
        for (auto& se : st->readRunEvents(h.sessionId, h.runId)) r.events.push_back(se.event);
        got.push_back(std::move(r));
      }
      const auto claims = observed::claims(store);
      if (got.size() == 2 && claims.size() == 1) {
        out.crashed = got[0];
        out.continuation = got[1];
        out.claim = claims[0];
        out.ok = true;
      }
    }
    fs::remove_all(dir);
    return out;
  }();
  return r;
}

// The crashed run as the primary kill left it (its seal not yet committed).
rb::Run atPrimary(const Recovered& r) {
  rb::Run p = r.crashed;
  p.status = std::string(code::running);
  if (!p.events.empty() && p.events.back().isTerminal()) p.events.pop_back();
  return p;
}

// The store after a kill with the continuation run's first `n` events durable (n = 0: the target
// run has its header only), the claim recording its start exactly when the start is there.
rb::StoreAtKill withContinuationPrefix(const Recovered& r, size_t n) {
  rb::StoreAtKill at;
  at.runs.push_back(r.crashed);
  rb::Run cont = r.continuation;
  cont.status = std::string(code::running);
  cont.events.resize(std::min(n, cont.events.size()));
  at.runs.push_back(cont);
  observed::ClaimRow claim = r.claim;
  if (n == 0) claim.startEventId.reset(), claim.startKind.reset();
  at.claims.push_back(claim);
  for (const auto& e : cont.events)
    if (e.toolDispatch) at.effects[e.toolDispatch->providerToolCallId] = 1;
  return at;
}

std::vector<std::string> problems(const Recovered& r, const rb::StoreAtKill& at,
                                  rb::State* out = nullptr) {
  rb::State state;
  auto bad = rb::stateProblems(r.scenario, 0, atPrimary(r), {}, at, state);
  if (out) *out = state;
  return bad;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

}  // namespace

TEST(RecoveryBarrierOracle, TheOracleSelectsTheRecoveriesWhoseBarriersAreSwept) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(continuationCallsFrom(r.scenario, points::P0, 1), std::optional<size_t>(0));
  EXPECT_TRUE(sweptRecoveryBarriers(r.scenario, points::P0, 1));
  // P8 seals a run whose calls are all answered: the continuation makes none itself.
  EXPECT_EQ(continuationCallsFrom(r.scenario, points::P8, 1),
            std::optional<size_t>(r.scenario.calls.size()));
  EXPECT_FALSE(sweptRecoveryBarriers(r.scenario, points::P6, 1));  // continues, no bundle, not P0#1
}

// Every state a kill at a transaction boundary of the recovery can leave is legal: nothing
// recoveredRun yet, the crashed run sealed, the claim alone, the target run's header, then each
// prefix of the continuation run with its effects.
TEST(RecoveryBarrierOracle, EveryRecoveryPrefixAtATransactionBoundaryIsLegal) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  {
    rb::StoreAtKill at;
    at.runs.push_back(atPrimary(r));
    EXPECT_EQ(join(problems(r, at)), "");
    at.runs.front() = r.crashed;  // sealed, no claim yet
    rb::State s;
    EXPECT_EQ(join(problems(r, at, &s)), "");
    EXPECT_TRUE(s.sealed);
    EXPECT_FALSE(s.settle);
    at.claims.push_back(r.claim);  // the claim alone (P11's window)
    at.claims.back().startEventId.reset();
    at.claims.back().startKind.reset();
    EXPECT_EQ(join(problems(r, at, &s)), "");
    ASSERT_TRUE(s.settle);
    EXPECT_EQ(s.settle->startKind, code::claim_repair);
    EXPECT_TRUE(s.settle->abandoned);
  }
  for (size_t n = 0; n <= r.continuation.events.size(); ++n) {
    rb::State s;
    EXPECT_EQ(join(problems(r, withContinuationPrefix(r, n), &s)), "") << n << " events";
    if (n > 0 && n < r.continuation.events.size()) {
      ASSERT_TRUE(s.settle) << n;
      EXPECT_EQ(s.settle->startKind, code::runtime_admission);
      EXPECT_FALSE(s.settle->abandoned);
    }
  }
}

// Bug (planted: admission_start_split_commit): the continuation-start and the claim's record of
// it in two transactions; a kill between them leaves a start the claim does not record.
TEST(RecoveryBarrierOracle, AStartTheClaimDoesNotRecordIsHalfATransaction) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  auto at = withContinuationPrefix(r, 1);
  at.claims.front().startEventId.reset();
  at.claims.front().startKind.reset();
  EXPECT_TRUE(mentions(problems(r, at), "records no start")) << join(problems(r, at));
}

// Bug: the claim's start recorded before (or without) the start event.
TEST(RecoveryBarrierOracle, AClaimedStartTheRunLacksIsHalfATransaction) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  auto at = withContinuationPrefix(r, 0);
  at.claims.front() = r.claim;  // records the start, the run holds no event
  EXPECT_TRUE(mentions(problems(r, at), "holds no event")) << join(problems(r, at));
}

// Bug: the claim (or the continuation) before the crashed run is sealed.
TEST(RecoveryBarrierOracle, AClaimBeforeTheSealIsAViolation) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  auto at = withContinuationPrefix(r, 0);
  at.runs.front() = atPrimary(r);
  EXPECT_TRUE(mentions(problems(r, at), "is not sealed")) << join(problems(r, at));
}

// Bug: recovery rewrites the crashed run (a ledger is append-only) or appends to it what is no
// recovery fact of an unsettled call.
TEST(RecoveryBarrierOracle, TheCrashedRunIsAppendOnly) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  auto at = withContinuationPrefix(r, 2);
  ASSERT_GE(at.runs.front().events.size(), 2u);
  at.runs.front().events.erase(at.runs.front().events.begin());
  EXPECT_TRUE(mentions(problems(r, at), "append-only")) << join(problems(r, at));
  at = withContinuationPrefix(r, 2);
  // A continuation event appended to the crashed run, before its seal.
  auto& crashed = at.runs.front().events;
  crashed.insert(crashed.end() - 1, r.continuation.events.at(1));
  EXPECT_TRUE(mentions(problems(r, at), "no recovery fact")) << join(problems(r, at));
}

// Bug: a run nobody claimed, a second claim, a second continuation-start.
TEST(RecoveryBarrierOracle, OnlyTheClaimedTargetRunsAndStartsOnce) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  auto at = withContinuationPrefix(r, 1);
  at.runs.back().runId = "run-nobody-claimed";
  EXPECT_TRUE(mentions(problems(r, at), "no claim names it")) << join(problems(r, at));
  at = withContinuationPrefix(r, 1);
  at.claims.push_back(at.claims.front());
  EXPECT_TRUE(mentions(problems(r, at), "2 continuation claims")) << join(problems(r, at));
  at = withContinuationPrefix(r, 2);
  at.runs.back().events.push_back(r.continuation.events.front());
  EXPECT_TRUE(mentions(problems(r, at), "second continuation-start")) << join(problems(r, at));
}

// Bug: a continuation call runs before its T1 (or before the continuation even started), or a
// crashed run's call runs again.
TEST(RecoveryBarrierOracle, NoImplementationWithoutItsT1) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  auto at = withContinuationPrefix(r, 1);
  at.effects["call-1"] = 1;
  EXPECT_TRUE(mentions(problems(r, at), "implementation before T1")) << join(problems(r, at));
  at = withContinuationPrefix(r, 0);
  at.effects["call-1"] = 1;
  EXPECT_TRUE(mentions(problems(r, at), "no continuation-start is durable"))
      << join(problems(r, at));
  // From a primary whose crashed run answered call-1 (firstCall 1): call-1 ran again.
  rb::State s;
  auto again = withContinuationPrefix(r, 0);
  again.effects["call-1"] = 2;
  EXPECT_TRUE(mentions(rb::stateProblems(r.scenario, 1, atPrimary(r), {{"call-1", 1}}, again, s),
                       "1 time(s) at the primary crash, 2 after"));
}

// What the next recovery must do: a Read dispatched without its response parks (nothing runs
// again); a Write that ran may park; no start yet, or a finished continuation, continues /
// finishes with every call run once.
TEST(RecoveryBarrierOracle, TheNextRecoveryDoesWhatTheContinuationsFactsDemand) {
  const auto& r = recoveredRun();
  ASSERT_TRUE(r.ok);
  const auto& cont = r.continuation.events;
  auto dispatchOf = [&](const std::string& call) {
    for (size_t i = 0; i < cont.size(); ++i)
      if (cont[i].toolDispatch && cont[i].toolDispatch->providerToolCallId == call) return i + 1;
    ADD_FAILURE() << "no dispatch of " << call;
    return size_t{0};
  };
  rb::State s;
  ASSERT_EQ(join(problems(r, withContinuationPrefix(r, dispatchOf("call-1")), &s)), "");
  auto want = rb::expectRecovery(r.scenario, 0, s);
  EXPECT_TRUE(want.mustPark) << "a dispatched Read without its response parks";
  EXPECT_EQ(rb::expectedExecutions(r.scenario, 0, {}, s, true), (std::vector<int>{1, 0}));

  ASSERT_EQ(join(problems(r, withContinuationPrefix(r, dispatchOf("call-2")), &s)), "");
  want = rb::expectRecovery(r.scenario, 0, s);
  EXPECT_FALSE(want.mustPark);
  EXPECT_TRUE(want.mayPark) << "a Write that ran: the file decides";
  EXPECT_EQ(rb::expectedExecutions(r.scenario, 0, {}, s, false), (std::vector<int>{1, 1}));

  ASSERT_EQ(join(problems(r, withContinuationPrefix(r, 0), &s)), "");
  want = rb::expectRecovery(r.scenario, 0, s);
  EXPECT_FALSE(want.mustPark || want.mayPark) << "no start yet: the whole continuation follows";
  EXPECT_EQ(rb::expectedExecutions(r.scenario, 0, {}, s, false), (std::vector<int>{1, 1}));

  ASSERT_EQ(join(problems(r, withContinuationPrefix(r, cont.size()), &s)), "");
  EXPECT_TRUE(s.continuation.finished);
  EXPECT_FALSE(s.settle) << "a finished continuation leaves the saga nothing to settle";
}
