// Stop's termination plan and the terminal writer (crashsim/termination.h, store.h
// commitTurnFinalize), judged against the termination contract's closure rules (section 5) and
// idempotency keys (section 6) on hand-built ledgers in a real store.
#include "crashsim/termination.h"

#include <gtest/gtest.h>

#include "crashsim/terminal_facts.h"
#include "store_test_util.h"

namespace crashsim {
namespace {

using namespace testutil;

struct Stopped : ::testing::Test {
  TempDir dir;
  std::unique_ptr<RuntimeStore> store = RuntimeStore::open(dir.path);
  Ident id;
  RunHeader run = header(id);
  Call answered{id, "call-1"}, dispatched{id, "call-2"}, committed{id, "call-3"};
  void SetUp() override {
    store->createRun(run);
    store->append(userEvent(id));
  }
  std::vector<StoredEvent> events() { return store->readRunEvents(id.session, id.run); }
  // call-1 answered (T1 + T2), call-2 through T1 only, call-3 committed only.
  void threeCalls() {
    store->commitToolPrepared(t1(answered));
    store->commitToolOutcome(t2(answered));
    store->commitToolPrepared(t1(dispatched));
    store->append(callEvent(committed));
  }
  TerminationPlan plan(std::optional<LiveToolState> live) {
    return planTermination(run, events(), live, stopTerminalFact(run, 9000, false));
  }
};

std::string errorCode(const RuntimeEvent& e) {
  return e.json.at("content").at("result").at("error").value("code", "");
}

TEST_F(Stopped, ClosesEachOpenCallByTheContractsRule) {
  threeCalls();
  const TerminationPlan p = plan(LiveToolState{});
  // No T1 → synthetic unbound response; T1 without a start → T2-shaped not_started; answered →
  // nothing.
  ASSERT_EQ(p.batch.syntheticResponses.size(), 1u);
  const RuntimeEvent& pre = p.batch.syntheticResponses[0];
  EXPECT_EQ(pre.callId, "call-3");
  EXPECT_TRUE(pre.isError);
  EXPECT_FALSE(pre.refOperationId.has_value());
  EXPECT_EQ(errorCode(pre), "cancelled_before_dispatch");
  ASSERT_EQ(p.batch.outcomes.size(), 1u);
  const ToolOutcome& ns = p.batch.outcomes[0];
  EXPECT_EQ(ns.operationId, dispatched.op());
  EXPECT_EQ(ns.journalEventId, dispatched.op() + "_outcome");
  EXPECT_EQ(ns.response.refOperationId, dispatched.op());
  EXPECT_EQ(errorCode(ns.response), "not_started");
  EXPECT_EQ(p.closedBeforeDispatch, std::vector<std::string>{"call-3"});
  EXPECT_EQ(p.closedNotStarted, std::vector<std::string>{"call-2"});
  EXPECT_TRUE(p.leftIndeterminate.empty());
  // The terminal: cancelled, abortSource user_stop, not a recovered fact.
  const RuntimeEvent& t = p.batch.terminal;
  EXPECT_EQ(t.status, EventStatus::cancelled);
  EXPECT_EQ(t.json["actions"]["stateDelta"]["abortSource"], "user_stop");
  EXPECT_FALSE(t.json["actions"]["stateDelta"].contains("recovered"));
  EXPECT_TRUE(p.batch.stop);
  // Pure: the same inputs give the same batch.
  EXPECT_EQ(plan(LiveToolState{}).batch.terminal, t);
  EXPECT_EQ(plan(LiveToolState{}).batch.outcomes[0].response, ns.response);
}

TEST_F(Stopped, AStartedImplementationStaysIndeterminateAndRestartClosesNothing) {
  threeCalls();
  const TerminationPlan live = plan(LiveToolState{{dispatched.op()}});
  EXPECT_TRUE(live.batch.outcomes.empty());
  EXPECT_EQ(live.leftIndeterminate, std::vector<std::string>{"call-2"});
  // Restart recovery has no memory of "not started": the batch is the terminal alone.
  const TerminationPlan restart = plan(std::nullopt);
  EXPECT_TRUE(restart.batch.syntheticResponses.empty());
  EXPECT_TRUE(restart.batch.outcomes.empty());
  // The watchdog's terminal says recovery is required.
  const TerminalFact w = stopTerminalFact(run, 9000, true);
  EXPECT_EQ(terminalEvent(run, w).json["actions"]["stateDelta"]["recoveryReason"],
            "cancellation_grace_expired");
}

TEST_F(Stopped, TheBatchCommitsAtomicallyAndSettlesEveryOpenCall) {
  threeCalls();
  const TerminationPlan p = plan(LiveToolState{});
  const RunHeader h = commitTerminalFacts(*store, run, p.batch);
  EXPECT_EQ(h.status, "cancelled");
  EXPECT_EQ(h.abortSource, "user_stop");
  const auto ev = events();
  ASSERT_GE(ev.size(), 3u);
  // Closures then the terminal, one commit time, consecutive, the tail.
  const auto& last = ev.back();
  EXPECT_TRUE(last.event.isTerminal());
  for (size_t i = ev.size() - 3; i < ev.size(); ++i) {
    EXPECT_EQ(ev[i].committedAt, last.committedAt) << ev[i].event.id;
    EXPECT_EQ(ev[i].eventSeq,
              ev[ev.size() - 3].eventSeq + static_cast<int64_t>(i - (ev.size() - 3)));
  }
  for (const auto& op : store->listToolOperations())
    EXPECT_EQ(op.currentState, "outcome_committed") << op.operationId;
  EXPECT_TRUE(store->listUnsettledToolOperations().empty());
}

TEST_F(Stopped, TheKeyMakesAnExactRetryANoOpAndRefusesAnotherBatch) {
  threeCalls();
  const TerminationPlan p = plan(LiveToolState{});
  EXPECT_TRUE(store->commitTurnFinalize(p.batch).created);
  const std::string before = store->ledgerHash();
  EXPECT_FALSE(store->commitTurnFinalize(p.batch).created);  // exact retry
  EXPECT_EQ(store->ledgerHash(), before);
  // Another batch under turn-finalize:<turnId>: the watchdog's terminal instead of the Stop's.
  TurnFinalizeBatch other = p.batch;
  other.terminal = terminalEvent(run, stopTerminalFact(run, 9000, true));
  try {
    store->commitTurnFinalize(other);
    FAIL() << "a second batch under the same key was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.code()), "termination_batch_conflict");
  }
  // A terminal of a different id for the same turn: the key still refuses it.
  TurnFinalizeBatch alone;
  Json j = p.batch.terminal.json;
  j["id"] = "another-terminal";
  alone.terminal = decodeRuntimeEvent(j);
  EXPECT_THROW(store->commitTurnFinalize(alone), Error);
  EXPECT_EQ(store->ledgerHash(), before);
  EXPECT_EQ(pragma(store->handle(),
                   "SELECT operation_id || ' ' || terminal_event_id || ' ' || event_count FROM "
                   "runtime_turn_finalize"),
            "turn-finalize:turn-1 " + p.batch.terminal.id + " 3");
}

TEST_F(Stopped, ARefusedBatchLeavesNoClosureBehind) {
  threeCalls();
  // The batch's second write fails (a not_started outcome for the operation that already has
  // its result) after its first (call-3's closure) was inserted: the whole batch rolls back.
  TerminationPlan p = plan(LiveToolState{});
  ToolOutcome late = p.batch.outcomes[0];
  late.operationId = answered.op();
  late.journalEventId = answered.op() + "_outcome";
  Json r = late.response.json;
  r["id"] = answered.op() + "_late";
  r["content"]["id"] = answered.callId;
  r["refs"] = {{"operationId", answered.op()}, {"toolCallId", answered.callId}};
  late.response = decodeRuntimeEvent(r);
  p.batch.outcomes = {late};
  const std::string before = store->ledgerHash();
  EXPECT_THROW(store->commitTurnFinalize(p.batch), Error);
  EXPECT_EQ(store->ledgerHash(), before);
  EXPECT_EQ(store->listUnsettledToolOperations().size(), 1u);
  EXPECT_EQ(pragma(store->handle(), "SELECT count(*) FROM runtime_turn_finalize"), "0");
  // Sealed by a terminal of its own: the Stop's batch is refused whole.
  store->append(testutil::terminalEvent(id, "end", 8000));
  const std::string sealed = store->ledgerHash();
  EXPECT_THROW(store->commitTurnFinalize(plan(LiveToolState{}).batch), Error);
  EXPECT_EQ(store->ledgerHash(), sealed);
}

TEST_F(Stopped, AClosureOfAnotherRunIsRefused) {
  threeCalls();
  TerminationPlan p = plan(LiveToolState{});
  Ident other = id;
  other.run = "run-2";
  other.invocation = "invocation-2";
  p.batch.syntheticResponses.push_back(responseEvent(Call{other, "call-9"}, 9000, true, false));
  try {
    store->commitTurnFinalize(p.batch);
    FAIL() << "a closure of another run was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.code()), "termination_batch_invalid");
  }
}

}  // namespace
}  // namespace crashsim
