// Dedicated writers and the f.3 write-side invariants (spec a.5, f.3, f.4, f.5, f.7 seal).
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

struct WriterTest : ::testing::Test {
  TempDir dir;
  std::unique_ptr<RuntimeStore> store = RuntimeStore::open(dir.path);
  Ident id;
  Call call;
  void SetUp() override { store->append(userEvent(id)); }
};

TEST_F(WriterTest, GenericAppendAssignsPerInvocationEventSeqAndExactRetryIsNoOp) {
  auto r1 = store->append(textEvent(id, "text-1", 1100));
  EXPECT_TRUE(r1.created);
  EXPECT_EQ(r1.runtimeEventSeq, 2);
  auto again = store->append(textEvent(id, "text-1", 1100));
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.runtimeEventSeq, 2);
  auto evs = store->readRunEvents(id.session, id.run);
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1].eventKind, "text");
}

TEST_F(WriterTest, ExactRetryWithDifferentBytesIsRuntimeIdentityConflict) {
  store->append(textEvent(id, "text-1", 1100, "a"));
  expectCode([&] { store->append(textEvent(id, "text-1", 1100, "b")); },
             code::runtime_identity_conflict);
}

TEST_F(WriterTest, TextNormalisationIsPersistedAndRawRetryIsIdempotent) {
  Json j = envelope(id, "text-norm", 1200, "user", "user");
  j["content"] = {{"kind", "text"},
                  {"text", "write it"},
                  {"displayText", "write it"},
                  {"attachments", Json::array()},
                  {"quotes", Json::array()}};
  EXPECT_TRUE(store->append(decode(j)).created);
  EXPECT_FALSE(store->append(decode(j)).created);
  auto evs = store->readRunEvents(id.session, id.run);
  EXPECT_EQ(evs.back().event.json["content"], (Json{{"kind", "text"}, {"text", "write it"}}));
}

TEST_F(WriterTest, EventWhoseJsonNoLongerDecodesIsNotLosslesslySerializable) {
  // The decoder is the only way the runtime builds events, but the writers do not trust the
  // in-memory JSON: a value changed after decoding must round-trip through the stable bytes
  // and decode again, or nothing is written.
  const std::string before = store->ledgerHash();
  RuntimeEvent badText = textEvent(id, "text-lone", 1300);
  badText.json["content"]["text"] = std::string(
      "a\xed\xa0\x80\xed\xb0\x80"
      "b");  // a surrogate pair as two 3-byte sequences: not WTF-8
  std::string m = expectCode([&] { store->append(badText); }, code::not_losslessly_serializable);
  EXPECT_NE(m.find("text-lone"), std::string::npos) << m;
  RuntimeEvent unknownKey = textEvent(id, "text-key", 1300);
  unknownKey.json["content"]["colour"] = "red";  // not a key of the text content (a.2)
  expectCode([&] { store->append(unknownKey); }, code::not_losslessly_serializable);
  EXPECT_EQ(store->ledgerHash(), before);
  EXPECT_TRUE(store->append(textEvent(id, "text-ok", 1300)).created);
}

TEST_F(WriterTest, NumberWhoseStableBytesParseToAnotherValueIsNotLosslesslySerializable) {
  // The lossless check compares the parse of the stored bytes with the value (a.6): a number
  // the stable bytes cannot carry exactly is refused, and nothing is written.
  const std::string before = store->ledgerHash();
  RuntimeEvent e = textEvent(id, "text-big-ts", 1300);
  e.json["ts"] = int64_t{9007199254740993};  // the bytes can only say 2^53
  expectCode([&] { store->append(e); }, code::not_losslessly_serializable);
  EXPECT_EQ(store->ledgerHash(), before);
}

// a.6: stable JSON writes -0 as 0, and JavaScript deep equality tells -0 from 0, so an event
// holding -0 is not lossless and nothing is written; attachment bytes are the one -0 the
// decoder normalises (a.2), so that event is written.
TEST_F(WriterTest, MinusZeroIsNotLosslesslySerializableExceptAttachmentBytes) {
  const std::string before = store->ledgerHash();
  Json options = textEvent(id, "text-neg-option", 1300).json;
  options["content"]["providerOptions"] = parseJson(R"({"temperature":-0})");
  expectCode([&] { store->append(decode(options)); }, code::not_losslessly_serializable);
  Json ts = textEvent(id, "text-neg-ts", 1300).json;
  ts["ts"] = parseJson("-0");
  expectCode([&] { store->append(decode(ts)); }, code::not_losslessly_serializable);
  EXPECT_EQ(store->ledgerHash(), before);
  Json a = textEvent(id, "text-attachment", 1300).json;
  a["content"]["attachments"] =
      parseJson(R"([{"kind":"other","name":"n","mimeType":"text/plain","bytes":-0,)"
                R"("ref":{"kind":"workspace_file","relativePath":"n.txt"}}])");
  EXPECT_TRUE(store->append(decode(a)).created);
  auto evs = store->readRunEvents(id.session, id.run);
  const Json& bytes = evs.back().event.json["content"]["attachments"][0]["bytes"];
  EXPECT_TRUE(bytes.is_number_integer() && bytes.get<int64_t>() == 0) << bytes;
}

TEST_F(WriterTest, LoneSurrogateTextIsWrittenAndReadsBackAsItself) {
  Json j = textEvent(id, "text-lone", 1300).json;
  j["content"]["text"] = parseJson(R"("a\ud800b")");
  EXPECT_TRUE(store->append(decode(j)).created);
  EXPECT_FALSE(store->append(decode(j)).created);  // the idempotent retry compares equal
  auto evs = store->readRunEvents(id.session, id.run);
  EXPECT_EQ(evs.back().event.json["content"]["text"], std::string("a\xED\xA0\x80"
                                                                  "b"));
}

TEST_F(WriterTest, GenericWriterRejectsReservedToolBoundaryFact) {
  std::string m =
      expectCode([&] { store->append(dispatchEvent(call)); }, code::reserved_tool_boundary_fact);
  EXPECT_EQ(m, "Durable tool facts require the atomic tool boundary writer");
  // A function_response bound to an operation is reserved too.
  store->append(callEvent(call));
  expectCode([&] { store->append(responseEvent(call)); }, code::reserved_tool_boundary_fact);
}

TEST_F(WriterTest, GenericWriterRejectsReservedRecoveryFact) {
  std::string m =
      expectCode([&] { store->append(decode(reconcileJson(call, "r", "matches_prior_state"))); },
                 code::reserved_recovery_fact);
  EXPECT_EQ(m, "Tool recovery facts require the atomic recovery bundle writer");
}

TEST_F(WriterTest, GenericWriterRejectsReservedContinuationFact) {
  Ident target{"session-1", "inv-2", "run-2", "turn-2"};
  Json j = envelope(target, "start-1", 5000, "system", "system");
  j["actions"] = {{"continuationStart",
                   {{"protocol", "continuation_start_v2"},
                    {"provenance", "runtime_admission"},
                    {"claimId", "claim-1"},
                    {"boundaryDigest", digestOf("b")},
                    {"immediateSource",
                     {{"sessionId", id.session},
                      {"invocationId", id.invocation},
                      {"runId", id.run},
                      {"turnId", id.turn},
                      {"highWater", 1},
                      {"prefixDigest", digestOf("p")}}},
                    {"replayManifestDigest", digestOf("m")},
                    {"providerProjectionVersion", 1},
                    {"providerReplayDigest", digestOf("r")}}}};
  std::string m = expectCode([&] { store->append(decode(j)); }, code::reserved_continuation_fact);
  EXPECT_EQ(m, "Continuation start facts require the continuation authority writer");
}

TEST_F(WriterTest, GenericWriterAcceptsCallsAndUnboundResponses) {
  EXPECT_TRUE(store->append(callEvent(call)).created);
  EXPECT_TRUE(store->append(responseEvent(call, 3000, false, false)).created);
}

TEST_F(WriterTest, InvocationIdentityConflictIsRejected) {
  Ident other = id;
  other.run = "run-other";
  expectCode([&] { store->append(textEvent(other, "x", 1)); }, code::runtime_identity_conflict);
  Ident otherTurn = id;
  otherTurn.invocation = "invocation-other";
  expectCode([&] { store->append(textEvent(otherTurn, "y", 1)); }, code::runtime_identity_conflict);
}

TEST_F(WriterTest, RunSealedAfterTerminalFactButExactRetryStillIdempotent) {
  store->append(textEvent(id, "text-1", 1100));
  auto term = terminalEvent(id, "terminal-1", 9000);
  EXPECT_TRUE(store->commitTerminalEvent(term).created);
  std::string m =
      expectCode([&] { store->append(textEvent(id, "text-2", 9100)); }, code::run_sealed);
  EXPECT_NE(m.find("is sealed by its terminal fact"), std::string::npos);
  // Run seal is checked before any tool-ledger validation.
  expectCode([&] { store->commitToolPrepared(t1(call)); }, code::run_sealed);
  EXPECT_FALSE(store->append(textEvent(id, "text-1", 1100)).created);
  EXPECT_FALSE(store->commitTerminalEvent(term).created);
}

TEST_F(WriterTest, CommitTerminalEventRequiresTerminal) {
  expectCode([&] { store->commitTerminalEvent(textEvent(id, "t", 1)); },
             code::terminal_event_required);
}

TEST_F(WriterTest, LateProtocolMarkerIsRejected) {
  expectCode([&] { store->append(userEvent(id, "user-2", true, 1500)); },
             code::protocol_marker_invalid);
}

TEST_F(WriterTest, PartialEventsGoOnlyToSnapshots) {
  Json j = envelope(id, "stream-1", 1300, "model", "agent");
  j["partial"] = true;
  j["content"] = {{"kind", "text"}, {"text", "hel"}};
  auto r = store->append(decode(j));
  EXPECT_EQ(r.runtimeEventSeq, 0);
  EXPECT_EQ(store->readRunEvents(id.session, id.run).size(), 1u);
  // The final event with the same stream identity replaces the snapshot.
  store->append(textEvent(id, "stream-1", 1301, "hello"));
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(store->handle(), "SELECT COUNT(*) FROM runtime_partial_snapshots", -1, &st,
                     nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
}

// ---------------------------------------------------------------------------------------
// T1 (f.4)

TEST_F(WriterTest, T1CommitsCallDispatchJournalAndOperation) {
  auto r = store->commitToolPrepared(t1(call));
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.runtimeEventSeq, 3);
  auto ops = store->listToolOperations();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].currentState, "prepared");
  EXPECT_EQ(ops[0].version, 1);
  EXPECT_EQ(ops[0].dispatchEventId, call.dispatchEvent());
  EXPECT_EQ(ops[0].callEventId, call.callEvent());
  auto j = store->listJournal();
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0].journalEventId, call.op() + "_prepared");
  EXPECT_EQ(j[0].state, "prepared");
  EXPECT_EQ(j[0].runtimeEventId, call.dispatchEvent());
  EXPECT_EQ(store->listUnsettledToolOperations().size(), 1u);
}

TEST_F(WriterTest, T1ExactRetryReturnsCreatedFalse) {
  store->commitToolPrepared(t1(call));
  auto r = store->commitToolPrepared(t1(call));
  EXPECT_FALSE(r.created);
  EXPECT_EQ(r.runtimeEventSeq, 3);
  EXPECT_EQ(store->listJournal().size(), 1u);
}

TEST_F(WriterTest, T1AcceptsIdenticalPreCommittedCall) {
  store->append(callEvent(call));  // committed while a permission was pending
  auto r = store->commitToolPrepared(t1(call));
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.runtimeEventSeq, 3);
}

TEST_F(WriterTest, T1PreChecksRejectMismatchedInput) {
  auto bad = t1(call);
  bad.journalEventId = "other_prepared";
  EXPECT_EQ(expectCode([&] { store->commitToolPrepared(bad); }, code::t1_invalid),
            "T1 journal identity must be derived from the tool operation");
  bad = t1(call);
  bad.canonicalArgsHash = digestOf("x");
  expectCode([&] { store->commitToolPrepared(bad); }, code::t1_invalid);
  bad = t1(call);
  Call other = call;
  other.mode = "never_auto_retry";
  bad.dispatch = dispatchEvent(other);
  EXPECT_EQ(expectCode([&] { store->commitToolPrepared(bad); }, code::t1_invalid),
            "T1 requires a matching tool-dispatch RuntimeEvent");
  EXPECT_TRUE(store->listToolOperations().empty());
}

TEST_F(WriterTest, T1OperationIdentityConflict) {
  store->commitToolPrepared(t1(call));
  // Same operation id, different dispatch bytes: the transition check sees the id reuse.
  auto p = t1(call);
  Json d = p.dispatch.json;
  d["ts"] = 7777;
  p.dispatch = decode(d);
  expectLedger([&] { store->commitToolPrepared(p); }, code::tool_ledger_rejection,
               code::duplicate_event_id);
}

TEST_F(WriterTest, T1SecondDispatchForSameCallIsRejectionDuplicateDispatch) {
  store->commitToolPrepared(t1(call));
  auto p = t1(call);
  Json d = p.dispatch.json;
  d["id"] = "second-dispatch";
  p.dispatch = decode(d);
  expectLedger([&] { store->commitToolPrepared(p); }, code::tool_ledger_rejection,
               code::duplicate_dispatch);
}

// ---------------------------------------------------------------------------------------
// T2 (f.5)

TEST_F(WriterTest, T2CommitsOutcomeWithCompareAndSet) {
  store->commitToolPrepared(t1(call));
  auto r = store->commitToolOutcome(t2(call));
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.runtimeEventSeq, 4);
  auto ops = store->listToolOperations();
  EXPECT_EQ(ops[0].currentState, "outcome_committed");
  EXPECT_EQ(ops[0].version, 2);
  EXPECT_EQ(ops[0].resultEventId, call.responseEvent());
  EXPECT_TRUE(store->listUnsettledToolOperations().empty());
  auto again = store->commitToolOutcome(t2(call));
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.runtimeEventSeq, 4);
}

TEST_F(WriterTest, T2UnknownOperation) {
  expectCode([&] { store->commitToolOutcome(t2(call)); }, code::unknown_tool_operation);
}

TEST_F(WriterTest, T2PreChecks) {
  store->commitToolPrepared(t1(call));
  auto o = t2(call);
  o.journalEventId = "x_outcome";
  expectCode([&] { store->commitToolOutcome(o); }, code::t2_invalid);
  o = t2(call);
  o.response = responseEvent(call, 3000, false, false);  // unbound
  expectCode([&] { store->commitToolOutcome(o); }, code::t2_invalid);
}

TEST_F(WriterTest, T2IdentityMustMatchOperation) {
  store->commitToolPrepared(t1(call));
  auto o = t2(call);
  Json r = o.response.json;
  r["content"]["name"] = "Edit";
  o.response = decode(r);
  expectCode([&] { store->commitToolOutcome(o); }, code::tool_operation_identity_conflict);
}

TEST_F(WriterTest, T2SecondDifferentResponseIsRejectedDuplicateResponse) {
  store->commitToolPrepared(t1(call));
  store->commitToolOutcome(t2(call));
  auto o = t2(call);
  Json r = o.response.json;
  r["id"] = "another-response";
  o.response = decode(r);
  expectLedger([&] { store->commitToolOutcome(o); }, code::tool_ledger_rejection,
               code::duplicate_response);
  // Same id, different bytes.
  o = t2(call, true);
  expectLedger([&] { store->commitToolOutcome(o); }, code::tool_ledger_rejection,
               code::duplicate_event_id);
}

TEST_F(WriterTest, T2AfterParkedDecisionFailsCompareAndSet) {
  store->commitToolPrepared(t1(call));
  store->commitToolRecoveryBundle(parkedBundle(call));
  expectCode([&] { store->commitToolOutcome(t2(call)); }, code::compare_and_set_failed);
  EXPECT_EQ(store->listToolOperations()[0].currentState, "recovery_parked");
}

// ---------------------------------------------------------------------------------------
// Ledger health fail-stop vs candidate rejection (f.3, j.10)

TEST_F(WriterTest, CandidateRejectionLeavesStoreHealthy) {
  store->append(callEvent(call));
  // A second call with the same (invocation, call id) is the candidate's bug.
  Json j = callEvent(call).json;
  j["id"] = "dup-call";
  expectLedger([&] { store->append(decode(j)); }, code::tool_ledger_rejection,
               code::duplicate_call);
  // The store stays healthy: T1 for the original call still works.
  EXPECT_TRUE(store->commitToolPrepared(t1(call)).created);
}

TEST_F(WriterTest, ExistingCorruptionFailsStopForToolWritesButNotOrdinaryEvents) {
  store->append(callEvent(call));
  // Smuggle a duplicate call through a separate connection.
  Json j = callEvent(call).json;
  j["id"] = "smuggled-call";
  auto smuggled = decode(j);
  rawSql(dir.db(),
         "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, "
         "event_seq, event_kind, is_terminal, payload_json, committed_at) VALUES ('smuggled-call', "
         "'session-1', 'invocation-1', 'run-1', 'turn-1', 3, 'function_call', 0, " +
             sqlQuote(encodeRuntimeEvent(smuggled)) + ", 1)");
  Call other = call;
  other.callId = "call-2";
  expectLedger([&] { store->commitToolPrepared(t1(other)); }, code::tool_ledger_corruption_error,
               code::duplicate_call);
  // Any session: still fail-stop.
  Call elsewhere = other;
  elsewhere.id = Ident{"session-2", "inv-9", "run-9", "turn-9"};
  expectLedger([&] { store->append(callEvent(elsewhere)); }, code::tool_ledger_corruption_error,
               code::duplicate_call);
  // Ordinary events are still accepted on a damaged ledger (a run may still end).
  EXPECT_TRUE(store->append(textEvent(id, "text-ok", 5000)).created);
}

TEST_F(WriterTest, LaneConflictCandidateIsRejectedSemanticLaneConflict) {
  Json j = callEvent(call).json;
  j["actions"] = {{"endInvocation", true}};
  expectLedger([&] { store->append(decode(j)); }, code::tool_ledger_rejection,
               code::semantic_lane_conflict);
}

// ---------------------------------------------------------------------------------------
// Continuation seal (f.7) — claim rows written as the continuation authority would.

void insertClaim(const fs::path& db, const Ident& source, const Ident& target,
                 const char* startEventId = nullptr) {
  Json boundary = {{"protocol", "runtime_boundary_cursor_v1"},
                   {"segments", Json::array({{{"protocol", "runtime_prefix_segment_v1"},
                                              {"identity",
                                               {{"sessionId", source.session},
                                                {"invocationId", source.invocation},
                                                {"runId", source.run},
                                                {"turnId", source.turn}}},
                                              {"position", 1},
                                              {"prefixDigest", digestOf("p")}}})},
                   {"manifestDigest", digestOf("m")}};
  rawSql(db,
         "INSERT INTO runtime_continuation_claims (claim_id, source_session_id, "
         "source_invocation_id, source_run_id, source_turn_id, source_event_high_water, "
         "source_prefix_digest, boundary_digest, boundary_json, provider_projection_version, "
         "provider_replay_digest, target_session_id, target_invocation_id, target_run_id, "
         "target_turn_id, target_run_header_json, claimed_at, start_event_id, start_kind, "
         "protocol_version) VALUES ('claim-1', " +
             sqlQuote(source.session) + ", " + sqlQuote(source.invocation) + ", " +
             sqlQuote(source.run) + ", " + sqlQuote(source.turn) + ", 2, " +
             sqlQuote(digestOf("p")) + ", " + sqlQuote(digestOf("m")) + ", " +
             sqlQuote(stableJson(boundary)) + ", 1, " + sqlQuote(digestOf("r")) + ", " +
             sqlQuote(target.session) + ", " + sqlQuote(target.invocation) + ", " +
             sqlQuote(target.run) + ", " + sqlQuote(target.turn) + ", '{}', 6000, " +
             (startEventId ? sqlQuote(startEventId) : std::string("NULL")) + ", " +
             (startEventId ? "'runtime_admission'" : "NULL") + ", 1)");
}

TEST_F(WriterTest, ContinuationSourceSealedAfterClaim) {
  Ident target{"session-1", "inv-2", "run-2", "turn-2"};
  insertClaim(dir.db(), id, target);
  std::string m = expectCode([&] { store->append(textEvent(id, "late", 7000)); },
                             code::continuation_source_sealed);
  EXPECT_NE(m.find("sealed by continuation claim claim-1"), std::string::npos);
  // Exact retries of stored source events remain idempotent.
  EXPECT_FALSE(store->append(userEvent(id)).created);
}

TEST_F(WriterTest, ContinuationTargetSequenceOneIsReserved) {
  Ident target{"session-1", "inv-2", "run-2", "turn-2"};
  insertClaim(dir.db(), id, target);
  std::string m = expectCode([&] { store->append(userEvent(target, "t-user")); },
                             code::continuation_target_reserved);
  EXPECT_NE(m.find("target sequence one is reserved for continuation-start"), std::string::npos);
  // Touching only part of the target identity is an identity conflict.
  Ident partial = target;
  partial.turn = "turn-x";
  expectCode([&] { store->append(textEvent(partial, "p", 1)); }, code::runtime_identity_conflict);
}

}  // namespace
