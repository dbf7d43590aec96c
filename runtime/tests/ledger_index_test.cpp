// ledger_index_test.cpp — the ledger key index (ids interned to symbols, one row per event)
// and RuntimeLedger, which keeps it with its events.
#include "recovery/ledger_index.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/runtime_ledger.h"
#include "recovery/ledger_scanner.h"
#include "resolver_fixtures.h"

namespace crashsim {
namespace {

using detail::EventRow;
using detail::kNoSym;
using detail::LedgerIndex;
using detail::SymbolTable;
using testing::kWriteArgs;
using testing::Ledger;

TEST(SymbolTable, InterningIsExactEvenWhenHashesCollide) {
  SymbolTable t;
  // The same hash for different strings (a forced collision): still different symbols.
  const auto a = t.intern("call-1", 42);
  const auto b = t.intern("call-2", 42);
  const auto a2 = t.intern("call-1", 42);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, a2);
  EXPECT_EQ(t.text(a), "call-1");
  EXPECT_EQ(t.text(b), "call-2");
  // The empty string is a symbol of its own, never the absent one.
  const auto empty = t.intern("", 7);
  EXPECT_NE(empty, kNoSym);
  EXPECT_EQ(t.text(empty), "");
  // A prefix is not its longer string.
  EXPECT_NE(t.intern("call", 42), a);
}

TEST(SymbolTable, ManySymbolsSurviveGrowth) {
  SymbolTable t;
  std::vector<detail::Sym> syms;
  for (int i = 0; i < 5000; ++i) {
    const std::string s = "event-" + std::to_string(i);
    syms.push_back(t.intern(s, detail::hashView(s)));
  }
  for (int i = 0; i < 5000; ++i) {
    const std::string s = "event-" + std::to_string(i);
    EXPECT_EQ(t.intern(s, detail::hashView(s)), syms[i]);
    EXPECT_EQ(t.text(syms[i]), s);
  }
  EXPECT_EQ(t.size(), 5001u);
}

Ledger settledWrite() {
  Ledger l = testing::newProtocolT1();  // user-1 (marker), op-1_call, op-1_dispatch
  l.response("op-1_response", "call-1", "Write", "op-1");
  return l;
}

TEST(LedgerIndex, RowsCarryTheIdsTheScanComparesAsSymbols) {
  const Ledger l = settledWrite();
  const LedgerIndex index = LedgerIndex::build(l.events);
  ASSERT_EQ(index.size(), 4u);
  const EventRow& user = index.row(0);
  const EventRow& call = index.row(1);
  const EventRow& dispatch = index.row(2);
  const EventRow& response = index.row(3);
  EXPECT_TRUE(user.has(EventRow::kProtocolMarker));
  EXPECT_EQ(index.text(user.id), "user-1");
  EXPECT_EQ(user.callId, kNoSym);  // no tool content
  EXPECT_EQ(user.refOperationId, kNoSym);
  // One run: every envelope id is the same symbol on every row.
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(index.row(i).invocation, user.invocation);
    EXPECT_EQ(index.row(i).session, user.session);
    EXPECT_EQ(index.row(i).run, user.run);
    EXPECT_EQ(index.row(i).turn, user.turn);
  }
  EXPECT_EQ(index.text(user.invocation), "invocation-1");
  // The call id links call, dispatch and response; the args hash links call and dispatch.
  EXPECT_EQ(call.callId, dispatch.providerToolCallId);
  EXPECT_EQ(call.callId, response.callId);
  EXPECT_EQ(response.refToolCallId, call.callId);
  EXPECT_EQ(call.argsHash, dispatch.argsHash);
  EXPECT_EQ(index.text(call.argsHash), canonicalArgsHash("Write", kWriteArgs));
  EXPECT_EQ(dispatch.operationId, dispatch.refOperationId);
  EXPECT_EQ(response.refOperationId, dispatch.operationId);
  EXPECT_EQ(index.text(dispatch.recoveryMode), "reconcile");
  EXPECT_TRUE(dispatch.has(EventRow::kToolDispatch));
  EXPECT_FALSE(call.has(EventRow::kToolDispatch));
}

TEST(LedgerIndex, DuplicateIdIsMarkedOnLaterEventsOnly) {
  Ledger l = settledWrite();
  l.text("user-1", "same id as the first event");
  l.text("user-1", "and again");
  const LedgerIndex index = LedgerIndex::build(l.events);
  EXPECT_FALSE(index.row(0).has(EventRow::kDuplicateId));
  EXPECT_TRUE(index.row(4).has(EventRow::kDuplicateId));
  EXPECT_TRUE(index.row(5).has(EventRow::kDuplicateId));
  // An id equal to another field's text (a call id) is not a duplicate event id.
  Ledger m;
  m.user("user-1", true);
  m.call("call-1", "call-1", "Write", kWriteArgs);
  EXPECT_FALSE(LedgerIndex::build(m.events).row(1).has(EventRow::kDuplicateId));
}

TEST(LedgerIndex, ScanRefusesAnIndexOfOtherEvents) {
  const Ledger l = settledWrite();
  const LedgerIndex index = LedgerIndex::build(std::span(l.events).first(2));
  EXPECT_THROW(detail::scanLedger(l.events, index), std::logic_error);
}

// A corrupted ledger with every kind of link the scan follows (reused call id, duplicate
// operation id, identity drift, orphan response, a recovery bundle).
Ledger mixedLedger() {
  Ledger l = testing::newProtocolT1();
  l.reconcile("op-1_reconcile", "op-1", "call-1", "matches_prior_state");
  l.decision("op-1_decision", "op-1", "call-1", "parked", "reconcile_matches_prior_state",
             {"op-1_call", "op-1_dispatch", "op-1_reconcile"});
  l.call("op-2_call", "call-2", "Read", Json{{"path", "a"}});
  l.dispatch("op-2_dispatch", "op-1", "call-2", "Read", Json{{"path", "a"}}, "replay_safe");
  l.response("orphan_response", "call-9", "Bash");
  l.call("op-3_call", "call-1", "Read", Json{{"path", "b"}});
  l.call("op-4_call", "call-4", "Write", kWriteArgs, [](Json& j) { j["runId"] = "run-2"; });
  l.response("op-4_response", "call-4", "Read");
  l.text("op-1_call", "duplicate id");
  return l;
}

TEST(RuntimeLedger, GivesExactlyWhatTheSpanOverloadsGive) {
  const Ledger l = mixedLedger();
  RuntimeLedger appended;
  for (const RuntimeEvent& e : l.events) appended.append(e);
  const RuntimeLedger constructed(l.events);
  ASSERT_EQ(appended.size(), l.events.size());
  EXPECT_EQ(appended[3], l.events[3]);

  const RecoveryResolution expected = resolveRecovery(std::span<const RuntimeEvent>(l.events));
  EXPECT_TRUE(expected.hasCorruption);
  EXPECT_GE(expected.issues.size(), 4u);
  EXPECT_EQ(resolveRecovery(appended), expected);
  EXPECT_EQ(resolveRecovery(constructed), expected);
  const ResumePlan plan = buildResumePlan(l.events, 5);
  EXPECT_EQ(buildResumePlan(appended, 5), plan);
  EXPECT_EQ(buildResumePlan(constructed, 5), plan);
  EXPECT_EQ(toJson(buildResumePlan(appended), appended.events()),
            toJson(buildResumePlan(l.events), l.events));
}

TEST(RuntimeLedger, ResolvesAfterEveryAppend) {
  const Ledger l = mixedLedger();
  RuntimeLedger ledger;
  for (size_t n = 0; n < l.events.size(); ++n) {
    ledger.append(l.events[n]);
    const std::span<const RuntimeEvent> prefix(l.events.data(), n + 1);
    EXPECT_EQ(buildResumePlan(ledger), buildResumePlan(prefix)) << "prefix of " << n + 1;
  }
}

}  // namespace
}  // namespace crashsim
