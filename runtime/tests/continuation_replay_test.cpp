// Immutable prefixes, digests (e.7) and the composite provider replay (e.3).
#include "continuation_test_util.h"
#include "crashsim/hashing.h"

using namespace crashsim;
using namespace ctest;

namespace {

std::vector<StoredEvent> rowsOf(const std::vector<RuntimeEvent>& events) {
  std::vector<StoredEvent> rows;
  int64_t seq = 0;
  for (const auto& e : events) rows.push_back(StoredEvent{e, ++seq, "text", 0});
  return rows;
}

ImmutablePrefix prefixOf(RunIds& r, const std::vector<RuntimeEvent>& events) {
  auto rows = rowsOf(events);
  return buildImmutablePrefix({r.session, r.invocation, r.run, r.turn}, rows);
}

std::vector<std::string> itemTypes(const SegmentReplay& s) {
  std::vector<std::string> out;
  for (const auto& i : s.items) out.push_back(i["type"].get<std::string>());
  return out;
}

}  // namespace

TEST(ContinuationPrefix, PrefixDigestAndManifestDigestMatchFrozenVectors) {
  PrefixIdentity id{"session-1", "invocation-run-legacy", "run-legacy", "turn-run-legacy"};
  Json e = {{"id", "event-legacy"},
            {"sessionId", id.sessionId},
            {"invocationId", id.invocationId},
            {"runId", id.runId},
            {"turnId", id.turnId},
            {"ts", 1},
            {"partial", false},
            {"role", "user"},
            {"author", "user"},
            {"content",
             {{"kind", "text"},
              {"text", "automated prompt"},
              {"origin", {{"kind", "automation"}, {"automationId", "automation-1"}}}}}};
  std::vector<StoredEvent> rows{StoredEvent{decodeRuntimeEvent(e), 1, "text", 0}};
  ImmutablePrefix p = buildImmutablePrefix(id, rows);
  EXPECT_EQ(p.prefixDigest,
            "sha256:d4c8211024788a3fd7554a644f6983f6af088eeb050404f507c76a519080d7ca");
  EXPECT_EQ(p.lastEventSeq, 1);
  EXPECT_EQ(p.eventCount, 1);
  EXPECT_EQ(p.lastEventId, "event-legacy");
  const ImmutablePrefix* segs[] = {&p};
  BoundaryCursor c = buildBoundaryCursor(segs);
  EXPECT_EQ(c.manifestDigest,
            "sha256:a377b3c182ecddc34f136a1a9c9b321d404d614a36ea6674d371ab2c327b4910");
  EXPECT_EQ(c.segments[0]["protocol"], "runtime_prefix_segment_v1");
  EXPECT_EQ(BoundaryCursor::fromJson(c.toJson()).manifestDigest, c.manifestDigest);
}

TEST(ContinuationPrefix, EventSeqGapIsRejectedWithEventSeqGap) {
  RunIds r = ids("s", "r1");
  auto rows = rowsOf({r.user("a"), r.model("b")});
  rows[1].eventSeq = 3;
  try {
    buildImmutablePrefix({r.session, r.invocation, r.run, r.turn}, rows);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "event_seq_gap");
  }
}

TEST(ContinuationPrefix, PartialEventIsRejectedWithPartialInPrefix) {
  RunIds r = ids("s", "r1");
  Json p = r.base("p1", "model", "agent");
  p["partial"] = true;
  p["content"] = Json{{"kind", "text"}, {"text", "stream"}};
  auto rows = rowsOf({r.user("a"), decodeRuntimeEvent(p)});
  try {
    buildImmutablePrefix({r.session, r.invocation, r.run, r.turn}, rows);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "partial_in_prefix");
  }
}

TEST(ContinuationPrefix, ForeignIdentityIsRejectedAndPinningTruncates) {
  RunIds r = ids("s", "r1");
  RunIds o = ids("s", "r2");
  auto rows = rowsOf({r.user("a"), o.model("b")});
  EXPECT_THROW(buildImmutablePrefix({r.session, r.invocation, r.run, r.turn}, rows), Error);
  ImmutablePrefix pinned = buildImmutablePrefix({r.session, r.invocation, r.run, r.turn}, rows, 1);
  EXPECT_EQ(pinned.lastEventSeq, 1);
}

TEST(ContinuationReplay, ProjectionItemsCarryEventIdAndTsAndTrimAfterLastStableItem) {
  RunIds r = ids("s", "r1");
  std::vector<RuntimeEvent> ev{r.user("hello"),
                               r.model("thinking aloud"),
                               r.call("c1", "Write", {{"path", "a"}}),
                               r.response("c1", "Write", {{"ok", true}}),
                               r.model("after result"),
                               r.failedTerminal()};
  ImmutablePrefix p = prefixOf(r, ev);
  SegmentReplay s = projectSegment(p);
  ASSERT_TRUE(s.replayable);
  EXPECT_EQ(itemTypes(s), (std::vector<std::string>{"text", "text", "tool_call", "tool_result"}));
  EXPECT_EQ(s.items[0]["role"], "user");
  EXPECT_EQ(s.items[1]["role"], "assistant");
  EXPECT_EQ(s.items[0]["eventId"], ev[0].id);
  EXPECT_EQ(s.items[0]["ts"], ev[0].ts);
  EXPECT_EQ(s.items[3]["toolCallId"], "c1");
  // The trailing model text is trimmed; the terminal (no item) survives as a replay event.
  EXPECT_EQ(s.replayEventIndexes, (std::vector<size_t>{0, 1, 2, 3, 5}));
}

TEST(ContinuationReplay, UnmatchedSuffixCallIsDroppedWithDiagnosticUnmatchedToolCall) {
  RunIds r = ids("s", "r1");
  std::vector<RuntimeEvent> ev{r.user("hello", true), r.call("c1", "Write", {{"path", "a"}}),
                               r.failedTerminal()};
  SegmentReplay s = projectSegment(prefixOf(r, ev));  // definitely_not_dispatched is allowed
  ASSERT_TRUE(s.replayable) << s.blockedReason;
  EXPECT_EQ(itemTypes(s), (std::vector<std::string>{"text"}));
  ASSERT_FALSE(s.diagnostics.empty());
  EXPECT_EQ(s.diagnostics[0].code, "unmatched_tool_call");
  EXPECT_FALSE(s.diagnostics[0].blocking);
  EXPECT_EQ(s.replayEventIndexes, (std::vector<size_t>{0, 2}));
}

TEST(ContinuationReplay, UnmatchedCallFollowedByItemIsProviderReplayNonSuffixGap) {
  RunIds r = ids("s", "r1");
  std::vector<RuntimeEvent> ev{r.user("hello", true), r.call("c1", "Write", {{"path", "a"}}),
                               r.call("c2", "Read", {{"path", "b"}}),
                               r.response("c2", "Read", {{"text", "x"}}), r.failedTerminal()};
  SegmentReplay s = projectSegment(prefixOf(r, ev));
  EXPECT_FALSE(s.replayable);
  EXPECT_EQ(s.blockedReason, "provider_replay_non_suffix_gap");
}

TEST(ContinuationReplay, OrphanResponseIsCaughtByResolverGateBeforeUnmatchedToolResult) {
  // A response with no prior call would be the projection's blocking unmatched_tool_result;
  // the resolver gate (step 1) sees orphan_response first, so the segment is corrupt.
  RunIds r = ids("s", "r1");
  SegmentReplay s = projectSegment(prefixOf(r, {r.user("a"), r.response("c9", "Read", 1)}));
  EXPECT_FALSE(s.replayable);
  EXPECT_EQ(s.blockedReason, "tool_recovery_corruption");
}

TEST(ContinuationReplay, ToolRoleTextIsBlockingProviderReplayUnsupported) {
  RunIds r = ids("s", "r1");
  Json t = r.base("t1", "tool", "tool");
  t["content"] = Json{{"kind", "text"}, {"text", "tool says"}};
  std::vector<RuntimeEvent> ev{r.user("hello"), decodeRuntimeEvent(t), r.failedTerminal()};
  SegmentReplay s = projectSegment(prefixOf(r, ev));
  EXPECT_FALSE(s.replayable);
  EXPECT_EQ(s.blockedReason, "provider_replay_unsupported");
}

TEST(ContinuationReplay, HiddenSystemEmptyAndErrorContentProduceNoItems) {
  RunIds r = ids("s", "r1");
  Json hidden = r.base("h1", "model", "agent");
  hidden["modelVisibility"] = "hidden";
  hidden["content"] = Json{{"kind", "text"}, {"text", "secret"}};
  Json err = r.base("e1", "system", "system");
  err["content"] = Json{{"kind", "error"}, {"message", "boom"}};
  std::vector<RuntimeEvent> ev{r.user("hello"), decodeRuntimeEvent(hidden), r.systemText("sys"),
                               r.model(""), decodeRuntimeEvent(err)};
  ImmutablePrefix p = prefixOf(r, ev);
  SegmentReplay s = projectSegment(p);
  ASSERT_TRUE(s.replayable);
  EXPECT_EQ(itemTypes(s), (std::vector<std::string>{"text"}));
  // Hidden events never enter the replay events; the others survive.
  EXPECT_EQ(s.replayEventIndexes, (std::vector<size_t>{0, 2, 3, 4}));
}

TEST(ContinuationReplay, ProjectionVersionTwoIsProviderReplayUnsupported) {
  RunIds r = ids("s", "r1");
  SegmentReplay s = projectSegment(prefixOf(r, {r.user("a")}), 2);
  EXPECT_FALSE(s.replayable);
  EXPECT_EQ(s.blockedReason, "provider_replay_unsupported");
}

TEST(ContinuationReplay, LegacyDanglingCallIsToolRecoveryUnsettled) {
  RunIds r = ids("s", "r1");
  SegmentReplay s =
      projectSegment(prefixOf(r, {r.user("a"), r.call("c1", "Bash", {{"command", "x"}})}));
  EXPECT_FALSE(s.replayable);
  EXPECT_EQ(s.blockedReason, "tool_recovery_unsettled");
}

TEST(ContinuationReplay, DuplicateCallIsToolRecoveryCorruption) {
  RunIds r = ids("s", "r1");
  SegmentReplay s =
      projectSegment(prefixOf(r, {r.user("a"), r.call("c1", "Bash", {}), r.call("c1", "Bash", {}),
                                  r.response("c1", "Bash", 1)}));
  EXPECT_FALSE(s.replayable);
  EXPECT_EQ(s.blockedReason, "tool_recovery_corruption");
}

TEST(ContinuationReplay, NameMismatchIsBlockingToolIdMismatchOrCorruption) {
  RunIds r = ids("s", "r1");
  SegmentReplay s = projectSegment(
      prefixOf(r, {r.user("a"), r.call("c1", "Bash", {}), r.response("c1", "Read", 1)}));
  EXPECT_FALSE(s.replayable);
  // The resolver sees the name mismatch first (identity_conflict → corruption).
  EXPECT_EQ(s.blockedReason, "tool_recovery_corruption");
}

TEST(ContinuationReplay, CompositeConcatenatesSegmentsAndDigestIsIncremental) {
  RunIds a = ids("s", "r1");
  RunIds b = ids("s", "r2");
  ImmutablePrefix pa = prefixOf(a, {a.user("one"), a.model("m1"), a.failedTerminal()});
  ImmutablePrefix pb =
      prefixOf(b, {b.user("two"), b.call("c", "Read", {}), b.response("c", "Read", 2)});
  const ImmutablePrefix* segs[] = {&pa, &pb};
  CompositeReplay c = buildCompositeReplay(segs);
  ASSERT_TRUE(c.replayable);
  // Segment a is trimmed after its user text independently (m1 never reappears).
  ASSERT_EQ(c.providerItems.size(), 4u);
  EXPECT_EQ(c.providerItems[0]["text"], "one");
  EXPECT_EQ(c.providerItems[1]["text"], "two");
  EXPECT_EQ(c.providerReplayDigest, providerReplayDigest(c.providerItems));
  EXPECT_EQ(c.providerReplayDigest,
            sha256Digest(stableJson(Json{{"protocol", "provider_replay_plan_v1"},
                                         {"providerProjectionVersion", 1},
                                         {"items", c.providerItems}})));
  EXPECT_EQ(c.boundary.segments.size(), 2u);
  EXPECT_EQ(c.immediateSourceContextStart, 2u);  // a: user + terminal
  EXPECT_EQ(c.runtimeContext.size(), 5u);
}
