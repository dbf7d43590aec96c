// Projections and rebuild (spec f.8, f.9) and fail-closed reads of bad stores (f.2).
#include "crashsim/recovery_resolver.h"
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

struct Snapshot {
  std::vector<ToolOperationRow> ops;
  std::vector<JournalRow> journal;
  std::vector<ToolOperationRow> unsettled;
  RecoveryResolution resolution;
  bool operator==(const Snapshot&) const = default;
};

Snapshot projectionSnapshot(RuntimeStore& s, const Ident& id) {
  Snapshot out;
  out.ops = s.listToolOperations();
  out.journal = s.listJournal();
  out.unsettled = s.listUnsettledToolOperations();
  std::vector<RuntimeEvent> evs;
  for (auto& e : s.readRunEvents(id.session, id.run)) evs.push_back(e.event);
  out.resolution = resolveRecovery(evs);
  return out;
}

Call makeCall(const Ident& id, const std::string& callId) {
  Call c;
  c.id = id;
  c.callId = callId;
  c.args = {{"path", callId + ".txt"}, {"content", "after"}};
  return c;
}

// Builds one store with every state: prepared (v1), success (v2), error (v2), parked (v3),
// recovery-completed (v4); calls interleaved so journal order is a real commit order.
void populate(RuntimeStore& s, const Ident& id) {
  s.append(userEvent(id));
  Call prepared = makeCall(id, "c-prepared"), ok = makeCall(id, "c-ok"),
       err = makeCall(id, "c-err"), parked = makeCall(id, "c-parked"),
       done = makeCall(id, "c-done");
  s.commitToolPrepared(t1(ok, 10));
  s.commitToolPrepared(t1(err, 11));
  s.commitToolOutcome(t2(ok, false, 12));
  s.commitToolOutcome(t2(err, true, 13));
  s.commitToolPrepared(t1(parked, 14));
  s.commitToolPrepared(t1(done, 15));
  s.commitToolRecoveryBundle(completedBundle(done));
  s.commitToolRecoveryBundle(parkedBundle(parked, "unreadable"));
  s.commitToolPrepared(t1(prepared, 16));
}

TEST(StoreProjectionTest, OnlineEqualsReopenEqualsRebuildForEveryState) {
  TempDir dir;
  Ident id;
  Snapshot online;
  {
    auto s = RuntimeStore::open(dir.path);
    populate(*s, id);
    online = projectionSnapshot(*s, id);
  }
  ASSERT_EQ(online.ops.size(), 5u);
  std::map<std::string, std::pair<std::string, int64_t>> states;
  for (auto& o : online.ops) states[o.providerToolCallId] = {o.currentState, o.version};
  EXPECT_EQ(states["c-prepared"], (std::pair<std::string, int64_t>{"prepared", 1}));
  EXPECT_EQ(states["c-ok"], (std::pair<std::string, int64_t>{"outcome_committed", 2}));
  EXPECT_EQ(states["c-err"], (std::pair<std::string, int64_t>{"outcome_committed", 2}));
  EXPECT_EQ(states["c-parked"], (std::pair<std::string, int64_t>{"recovery_parked", 3}));
  EXPECT_EQ(states["c-done"], (std::pair<std::string, int64_t>{"recovery_completed", 4}));
  EXPECT_EQ(online.journal.size(), 1u + 2 + 2 + 3 + 4);
  ASSERT_EQ(online.unsettled.size(), 1u);
  EXPECT_EQ(online.unsettled[0].providerToolCallId, "c-prepared");

  auto s = RuntimeStore::open(dir.path);
  Snapshot reopened = projectionSnapshot(*s, id);
  EXPECT_EQ(reopened, online);
  const std::string ledger = s->ledgerHash();
  auto r = s->rebuildProjections();
  EXPECT_EQ(r.operations, 5u);
  EXPECT_EQ(r.journalEvents, 12u);
  Snapshot rebuilt = projectionSnapshot(*s, id);
  EXPECT_EQ(rebuilt.ops, online.ops);
  EXPECT_EQ(rebuilt.journal, online.journal);
  EXPECT_EQ(rebuilt, online);
  EXPECT_EQ(s->ledgerHash(), ledger);  // rebuild never touches the ledger
}

TEST(StoreProjectionTest, RebuildCountsT1T2AndCompletedBundle) {
  TempDir dir;
  Ident id;
  auto s = RuntimeStore::open(dir.path);
  s->append(userEvent(id));
  Call c = makeCall(id, "c1");
  s->commitToolPrepared(t1(c));
  s->commitToolOutcome(t2(c));
  auto r = s->rebuildProjections();
  EXPECT_EQ(r.operations, 1u);
  EXPECT_EQ(r.journalEvents, 2u);
}

TEST(StoreProjectionTest, UnsettledFilteredBySession) {
  TempDir dir;
  auto s = RuntimeStore::open(dir.path);
  Ident a, b{"session-2", "inv-b", "run-b", "turn-b"};
  s->append(userEvent(a));
  s->append(userEvent(b, "user-b"));
  s->commitToolPrepared(t1(makeCall(a, "x")));
  s->commitToolPrepared(t1(makeCall(b, "y")));
  EXPECT_EQ(s->listUnsettledToolOperations().size(), 2u);
  auto only = s->listUnsettledToolOperations(std::string("session-2"));
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].providerToolCallId, "y");
}

TEST(StoreProjectionTest, RebuildKeepsLegacyRowsWithoutDispatchQuarantined) {
  TempDir dir;
  Ident id;
  auto s = RuntimeStore::open(dir.path);
  s->append(userEvent(id, "user-1", false));
  Call c = makeCall(id, "legacy");
  s->append(callEvent(c));
  rawSql(dir.db(),
         "INSERT INTO tool_operations (operation_id, invocation_id, run_id, turn_id, "
         "provider_tool_call_id, tool_name, canonical_args_hash, recovery_mode, current_state, "
         "call_event_id, dispatch_event_id, result_event_id, version) VALUES ('legacy-op', "
         "'invocation-1', 'run-1', 'turn-1', 'legacy', 'Write', 'h', 'never_auto_retry', "
         "'prepared', " +
             sqlQuote(c.callEvent()) + ", NULL, NULL, 1)");
  s->rebuildProjections();
  auto ops = s->listToolOperations();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].operationId, "legacy-op");
  EXPECT_TRUE(s->listUnsettledToolOperations().empty());  // never listed as unsettled
}

// ---------------------------------------------------------------------------------------
// Bad input: fail closed, nothing rewritten.

TEST(StoreBadInputTest, SmuggledDuplicateCallFailsClosedAndNothingIsRewritten) {
  TempDir dir;
  Ident id;
  Call c = makeCall(id, "c1");
  {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(id));
    s->commitToolPrepared(t1(c));
  }
  Json j = callEvent(c).json;
  j["id"] = "smuggled";
  rawSql(dir.db(),
         "PRAGMA wal_checkpoint(TRUNCATE); INSERT INTO runtime_events (event_id, session_id, "
         "invocation_id, run_id, turn_id, event_seq, event_kind, is_terminal, payload_json, "
         "committed_at) VALUES ('smuggled', 'session-1', 'invocation-1', 'run-1', 'turn-1', 9, "
         "'function_call', 0, " +
             sqlQuote(encodeRuntimeEvent(decode(j))) +
             ", 1); "
             "PRAGMA wal_checkpoint(TRUNCATE);");
  const std::string bytes = readBytes(dir.db());
  {
    auto s = RuntimeStore::open(dir.path);
    std::string m = expectCode([&] { s->rebuildProjections(); }, code::store_corrupt);
    EXPECT_NE(m.find("Corrupt tool RuntimeEvent ledger: duplicate_call at smuggled"),
              std::string::npos);
    expectLedger([&] { s->commitToolOutcome(t2(c)); }, code::tool_ledger_corruption_error,
                 code::duplicate_call);
    // The resolver sees it as corruption, never as a retry.
    std::vector<RuntimeEvent> evs;
    for (auto& e : s->readRunEvents(id.session, id.run)) evs.push_back(e.event);
    auto res = resolveRecovery(evs);
    EXPECT_TRUE(res.hasCorruption);
    EXPECT_EQ(s->listToolOperations().size(), 1u);
  }
  EXPECT_EQ(readBytes(dir.db()), bytes);
}

TEST(StoreBadInputTest, RowPayloadIdentityMismatchFailsClosed) {
  TempDir dir;
  Ident id;
  {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(id));
    s->append(textEvent(id, "text-1", 1100));
  }
  // The payload claims another turn than its row's columns.
  Ident forged = id;
  forged.turn = "turn-x";
  rawSql(dir.db(), "UPDATE runtime_events SET payload_json = " +
                       sqlQuote(encodeRuntimeEvent(textEvent(forged, "text-1", 1100))) +
                       " WHERE event_id = 'text-1'; PRAGMA wal_checkpoint(TRUNCATE);");
  const std::string bytes = readBytes(dir.db());
  {
    auto s = RuntimeStore::open(dir.path);
    std::string m = expectCode([&] { s->readRunEvents(id.session, id.run); },
                               code::row_payload_identity_mismatch);
    EXPECT_EQ(m, "RuntimeEvent row/payload identity mismatch for text-1");
    expectCode([&] { s->readAllEvents(); }, code::row_payload_identity_mismatch);
    expectCode([&] { s->rebuildProjections(); }, code::row_payload_identity_mismatch);
    // Inside writers too (the candidate's invocation is read back).
    Call c = makeCall(id, "c1");
    expectCode([&] { s->commitToolPrepared(t1(c)); }, code::row_payload_identity_mismatch);
  }
  EXPECT_EQ(readBytes(dir.db()), bytes);
}

TEST(StoreBadInputTest, GarbageHeaderFailsClosedWithoutRewrite) {
  TempDir dir;
  {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(Ident{}));
  }
  std::string bytes = readBytes(dir.db());
  ASSERT_GT(bytes.size(), 100u);
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<char>('G' + i);
  {
    std::ofstream out(dir.db(), std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  expectCode([&] { RuntimeStore::open(dir.path); }, code::store_corrupt);
  StoreOptions ro;
  ro.readOnly = true;
  expectCode([&] { RuntimeStore::open(dir.path, ro); }, code::store_corrupt);
  EXPECT_EQ(readBytes(dir.db()), bytes);
}

TEST(StoreBadInputTest, TruncatedFileFailsClosedWithoutRewrite) {
  TempDir dir;
  Ident id;
  {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(id));
    for (int i = 0; i < 200; ++i) {
      s->append(textEvent(id, "text-" + std::to_string(i), 1100 + i, std::string(400, 'x')));
    }
  }
  std::string bytes = readBytes(dir.db());
  ASSERT_GT(bytes.size(), 8 * 4096u);
  bytes.resize(bytes.size() / 2);
  {
    std::ofstream out(dir.db(), std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  // Open or the first read fails closed with a stable code.
  bool failed = false;
  try {
    auto s = RuntimeStore::open(dir.path);
    s->readAllEvents();
    s->readRunEvents(id.session, id.run);
  } catch (const Error& e) {
    failed = true;
    EXPECT_EQ(e.code(), code::store_corrupt) << e.what();
  }
  EXPECT_TRUE(failed);
  EXPECT_EQ(readBytes(dir.db()), bytes);
}

}  // namespace
