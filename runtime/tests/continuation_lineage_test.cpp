// Lineage traversal (e.4) with every code, and an in-process continuation chain of depth >= 3
// built through the store writers (killed, resumed, killed inside the continuation, claim
// abandoned at P11 and repaired, resumed again, completed).
#include <map>

#include "continuation_test_util.h"
#include "crashsim/hashing.h"

using namespace crashsim;
using namespace ctest;

namespace {

struct Lin : ::testing::Test {
  TempStore ts{"lineage"};
  Host h;
  RuntimeStore& s() { return *ts; }

  // Continues `source` (must plan `continue`), then runs `body` in the target and kills it
  // (recovered failed terminal, fact before header) unless `complete`.
  RunIds continueOnce(const std::string& sourceRun, const std::function<void(RunIds&)>& body,
                      bool complete = false) {
    ContinuationPlan p = planContinuation(s(), "s1", sourceRun, h.host());
    EXPECT_EQ(p.decision, "continue") << p.toJson().dump();
    ContinuationExecution ex = executeContinuation(s(), p, h.host());
    RunIds t{"s1", ex.targetHeader.invocationId, ex.targetHeader.runId, ex.targetHeader.turnId};
    t.ts = ex.startEvent.ts;
    RunHeader running = ex.targetHeader;
    running.status = "running";
    s().updateRunHeader(running);
    body(t);
    if (complete) {
      RuntimeEvent term = t.completedTerminal("all done");
      s().append(term);
      RunHeader done = running;
      done.status = "completed";
      done.updatedAt = term.ts;
      done.completedAt = term.ts;
      s().markRunTerminal(done);
    } else {
      finishFailed(s(), t, running);
    }
    return t;
  }
};

// T1 + T2 through the dedicated writers (new protocol in a continuation run).
void toolViaT1T2(RuntimeStore& s, RunIds& t, const std::string& callId, const std::string& tool,
                 const Json& args) {
  const std::string op = deriveOperationId(t.invocation, callId);
  Json call = t.base(op + "_call", "model", "agent");
  call["content"] = Json{{"kind", "function_call"}, {"id", callId}, {"name", tool}, {"args", args}};
  const std::string hash = canonicalArgsHash(tool, args);
  Json disp = t.base(op + "_dispatch", "system", "system");
  disp["actions"] = Json{{"toolDispatch",
                          {{"protocol", "t1_after_preflight_v1"},
                           {"operationId", op},
                           {"providerToolCallId", callId},
                           {"toolName", tool},
                           {"canonicalArgsHash", hash},
                           {"recoveryMode", "reconcile"}}}};
  disp["refs"] = Json{{"operationId", op}, {"toolCallId", callId}};
  ToolPrepared t1{op,
                  op + "_prepared",
                  decodeRuntimeEvent(call),
                  decodeRuntimeEvent(disp),
                  callId,
                  tool,
                  hash,
                  "reconcile",
                  t.ts};
  s.commitToolPrepared(t1);
  Json resp = t.base(op + "_response", "tool", "tool");
  resp["content"] = Json{
      {"kind", "function_response"}, {"id", callId}, {"name", tool}, {"result", {{"ok", true}}}};
  resp["refs"] = Json{{"operationId", op}, {"toolCallId", callId}};
  s.commitToolOutcome(ToolOutcome{op, op + "_outcome", decodeRuntimeEvent(resp), t.ts});
}

}  // namespace

TEST_F(Lin, ContinuationChainDepthFourWithP11RepairConvergesAndDigestsVerify) {
  // run 1: user + Write, then killed.
  RunIds r1 = makeFailedRun(s(), "s1", "r1", 10);
  // run 2: continuation; model text, Edit via T1/T2, then killed inside the continuation.
  h.clock = 20000;
  RunIds r2 = continueOnce("r1", [&](RunIds& t) {
    s().append(t.model("continuing"));
    toolViaT1T2(s(), t, "c-edit", "Edit", {{"path", "a.txt"}, {"old", "x"}, {"new", "y"}});
  });
  // run 3: claim committed, killed at P11 (no start) → the claim saga repairs it.
  h.clock = 30000;
  ContinuationPlan p3 = planLatestContinuation(s(), "s1", h.host());
  ASSERT_EQ(p3.decision, "continue") << p3.toJson().dump();
  EXPECT_EQ(p3.sourceRunId, r2.run);
  EXPECT_EQ(p3.lineageDepth, 2u);
  ASSERT_EQ(p3.sourceRuntimeContext.size(),
            6u);  // start, model, call, dispatch, response, terminal
  EXPECT_EQ(p3.sourceRuntimeContext.front().runId, r2.run);
  ContinuationClaim c3;
  {
    // executeContinuation up to the claim, as a process killed at P11 leaves it.
    c3.claimId = p3.claimId;
    c3.boundary = *p3.boundary;
    c3.boundaryDigest = p3.boundary->manifestDigest;
    c3.providerReplayDigest = p3.providerReplayDigest;
    c3.target = PrefixIdentity{"s1", p3.invocationId, p3.runId, p3.turnId};
    c3.claimedAt = 30001;
    RunHeader& th = c3.targetRunHeader;
    th.sessionId = "s1";
    th.runId = p3.runId;
    th.invocationId = p3.invocationId;
    th.turnId = p3.turnId;
    th.status = "created";
    th.createdAt = th.updatedAt = c3.claimedAt;
    th.workspaceIdentity = kWorkspace;
    th.cwd = "/ws";
    th.parentRunId = p3.sourceRunId;
    th.parentTurnId = p3.sourceTurnId;
    th.continuationSource = Json{{"protocol", "continuation_source_v2"},
                                 {"claimId", p3.claimId},
                                 {"boundaryDigest", c3.boundaryDigest},
                                 {"sourceInvocationId", p3.sourceInvocationId},
                                 {"sourceRunId", p3.sourceRunId},
                                 {"sourceTurnId", p3.sourceTurnId},
                                 {"sourceRuntimeEventHighWater", p3.sourceRuntimeEventHighWater},
                                 {"sourcePrefixDigest", p3.sourcePrefixDigest},
                                 {"replayManifestDigest", c3.boundaryDigest}};
    ASSERT_EQ(claimContinuation(s(), c3).result, "acquired");
  }
  EXPECT_EQ(planLatestContinuation(s(), "s1", h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_claim_repair_required"});
  ClaimRepairReport rep = repairContinuationClaims(s(), RepairMode::strict, false);
  ASSERT_EQ(rep.claims.size(), 2u);
  EXPECT_EQ(rep.claims[0].actions, std::vector<std::string>{"left_runtime_admission"});
  EXPECT_EQ(rep.claims[1].actions,
            (std::vector<std::string>{"created_target_header", "repair_start", "repair_terminal",
                                      "failed_header"}));
  // run 4: continues from the repaired run 3 and completes.
  h.clock = 40000;
  RunIds r4 = continueOnce(
      p3.runId,
      [&](RunIds& t) {
        s().append(t.model("finishing"));
        toolViaT1T2(s(), t, "c-read", "Read", {{"path", "a.txt"}});
      },
      true);
  // Lineage of run 4: r1 → r2 → r3 (repair) → r4, every digest verified by the traversal.
  RunHeader h4 = *s().readRun("s1", r4.run);
  Lineage lin =
      traverseLineage(s(), h4, readImmutablePrefix(s(), {"s1", r4.invocation, r4.run, r4.turn}));
  ASSERT_EQ(lin.segments.size(), 4u);
  EXPECT_EQ(lin.segments[0].identity.runId, "r1");
  EXPECT_EQ(lin.segments[1].identity.runId, r2.run);
  EXPECT_EQ(lin.segments[2].identity.runId, p3.runId);
  EXPECT_EQ(lin.edges.size(), 3u);
  for (const auto& e : lin.edges) EXPECT_TRUE(e.v2);
  EXPECT_EQ(lin.edges[1].start->json["actions"]["continuationStart"]["provenance"], "claim_repair");
  EXPECT_EQ(lin.segments[2].events[1].json["actions"]["stateDelta"]["failureClass"],
            "continuation_abandoned_before_provider_dispatch");
  // Every tool appears exactly once across the chain's replay history; one user message.
  ContinuationPlan done = planLatestContinuation(s(), "s1", h.host());
  EXPECT_EQ(done.decision, "park");  // newest failed run (r3) already continued by r4
  EXPECT_EQ(done.rejectionReasons, std::vector<std::string>{"continuation_already_exists"});
  std::vector<const ImmutablePrefix*> segs;
  for (const auto& p : lin.segments) segs.push_back(&p);
  CompositeReplay all = buildCompositeReplay(segs);
  ASSERT_TRUE(all.replayable);
  std::map<std::string, int> calls;
  int users = 0;
  for (const auto& it : all.providerItems) {
    if (it["type"] == "tool_call") calls[it["toolCallId"].get<std::string>()]++;
    if (it["type"] == "text" && it["role"] == "user") users++;
  }
  EXPECT_EQ(users, 1);
  EXPECT_EQ(calls, (std::map<std::string, int>{{"c-edit", 1}, {"c-read", 1}, {"r1-c1", 1}}));
  (void)r1;
}

TEST_F(Lin, SelfReferenceIsRuntimeLineageCycle) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  hd.parentRunId = "r1";
  hd.continuationSource = Json{{"sourceRunId", "r1"}, {"sourceRuntimeEventHighWater", 2}};
  s().createRun(hd);
  s().append(r.user("x"));
  finishFailed(s(), r, hd);
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_cycle"});
}

TEST_F(Lin, MissingAncestorIsRuntimeLineageMissing) {
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  hd.parentRunId = "ghost";
  hd.continuationSource = Json{{"sourceRunId", "ghost"}, {"sourceRuntimeEventHighWater", 2}};
  s().createRun(hd);
  s().append(r.user("x"));
  finishFailed(s(), r, hd);
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_missing"});
}

TEST_F(Lin, WrongHighWaterIsRuntimeIdentityMismatch) {
  makeFailedRun(s(), "s1", "r0", 5);
  RunIds r = ids("s1", "r1");
  RunHeader hd = header(r, 10);
  hd.parentRunId = "r0";
  hd.continuationSource = Json{{"sourceRunId", "r0"}, {"sourceRuntimeEventHighWater", 9}};
  s().createRun(hd);
  s().append(r.user("x"));
  finishFailed(s(), r, hd);
  EXPECT_EQ(planContinuation(s(), "s1", "r1", h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_identity_mismatch"});
}

TEST_F(Lin, SixtyFourSegmentsPassSixtyFiveAreRuntimeLineageDepthExceeded) {
  std::string prev;
  for (int i = 0; i < 65; ++i) {
    RunIds r = ids("s1", "run" + std::to_string(i));
    r.ts = 10 + i * 10;
    RunHeader hd = header(r, r.ts);
    if (!prev.empty()) {
      hd.parentRunId = prev;
      hd.continuationSource = Json{{"sourceRunId", prev}, {"sourceRuntimeEventHighWater", 2}};
    }
    s().createRun(hd);
    s().append(r.user("step " + std::to_string(i)));
    finishFailed(s(), r, hd);
    prev = r.run;
    if (i == 63) {
      ContinuationPlan p = planContinuation(s(), "s1", prev, h.host());
      EXPECT_EQ(p.decision, "continue") << p.toJson().dump();
      EXPECT_EQ(p.lineageDepth, 64u);
    }
  }
  EXPECT_EQ(planContinuation(s(), "s1", prev, h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_depth_exceeded"});
}

TEST_F(Lin, TamperedAncestorIsSourcePrefixDigestMismatch) {
  makeFailedRun(s(), "s1", "r1", 10);
  RunIds r2 = continueOnce("r1", [&](RunIds& t) { s().append(t.model("x")); });
  Json e = s().readRunEvents("s1", "r1")[0].event.json;
  e["content"]["text"] = "rewritten history";
  execSql(s(), "UPDATE runtime_events SET payload_json = " + sqlQuote(stableJson(e)) +
                   " WHERE event_id = " + sqlQuote(e["id"].get<std::string>()));
  EXPECT_EQ(planContinuation(s(), "s1", r2.run, h.host()).rejectionReasons,
            std::vector<std::string>{"source_prefix_digest_mismatch"});
}

TEST_F(Lin, StartWithoutV2HeaderOrMismatchedSourceIsRuntimeLineageStartMismatch) {
  makeFailedRun(s(), "s1", "r1", 10);
  RunIds r2 = continueOnce("r1", [&](RunIds& t) { s().append(t.model("x")); });
  RunHeader h2 = *s().readRun("s1", r2.run);
  RunHeader noSource = h2;
  noSource.continuationSource.reset();
  execSql(s(), "UPDATE agent_runs SET header_json = " + sqlQuote(stableJson(noSource.toJson())) +
                   " WHERE run_id = " + sqlQuote(r2.run));
  EXPECT_EQ(planContinuation(s(), "s1", r2.run, h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_start_mismatch"});
  RunHeader otherClaim = h2;
  (*otherClaim.continuationSource)["claimId"] = "not-the-claim";
  execSql(s(), "UPDATE agent_runs SET header_json = " + sqlQuote(stableJson(otherClaim.toJson())) +
                   " WHERE run_id = " + sqlQuote(r2.run));
  EXPECT_EQ(planContinuation(s(), "s1", r2.run, h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_start_mismatch"});
}

TEST_F(Lin, ForgedReplayDigestIsRuntimeLineageReplayMismatch) {
  makeFailedRun(s(), "s1", "r1", 10);
  ContinuationPlan p = planContinuation(s(), "s1", "r1", h.host());
  ASSERT_EQ(p.decision, "continue");
  p.providerReplayDigest = "sha256:" + std::string(64, 'e');  // claim made with a forged digest
  ContinuationClaim c;
  c.claimId = p.claimId;
  c.boundary = *p.boundary;
  c.boundaryDigest = p.boundary->manifestDigest;
  c.providerReplayDigest = p.providerReplayDigest;
  c.target = PrefixIdentity{"s1", p.invocationId, p.runId, p.turnId};
  c.claimedAt = 500;
  RunHeader& th = c.targetRunHeader;
  th = RunHeader{};
  th.sessionId = "s1";
  th.runId = p.runId;
  th.invocationId = p.invocationId;
  th.turnId = p.turnId;
  th.status = "created";
  th.createdAt = th.updatedAt = 500;
  th.workspaceIdentity = kWorkspace;
  th.parentRunId = "r1";
  th.parentTurnId = p.sourceTurnId;
  th.continuationSource = Json{{"protocol", "continuation_source_v2"},
                               {"claimId", p.claimId},
                               {"boundaryDigest", c.boundaryDigest},
                               {"sourceInvocationId", p.sourceInvocationId},
                               {"sourceRunId", "r1"},
                               {"sourceTurnId", p.sourceTurnId},
                               {"sourceRuntimeEventHighWater", p.sourceRuntimeEventHighWater},
                               {"sourcePrefixDigest", p.sourcePrefixDigest},
                               {"replayManifestDigest", c.boundaryDigest}};
  ASSERT_EQ(claimContinuation(s(), c).result, "acquired");
  s().createRun(th);
  commitContinuationStart(s(), c,
                          buildContinuationStartEvent(c, "st", 501, "runtime_admission", true));
  RunIds t{"s1", p.invocationId, p.runId, p.turnId};
  t.ts = 600;
  RunHeader running = th;
  running.status = "running";
  s().updateRunHeader(running);
  finishFailed(s(), t, running);
  EXPECT_EQ(planContinuation(s(), "s1", p.runId, h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_replay_mismatch"});
}

TEST_F(Lin, ChangedChildHeaderIsRuntimeLineageClaimMismatch) {
  makeFailedRun(s(), "s1", "r1", 10);
  RunIds r2 = continueOnce("r1", [&](RunIds& t) { s().append(t.model("x")); });
  RunHeader h2 = *s().readRun("s1", r2.run);
  h2.cwd = "/somewhere/else";
  execSql(s(), "UPDATE agent_runs SET header_json = " + sqlQuote(stableJson(h2.toJson())) +
                   " WHERE run_id = " + sqlQuote(r2.run));
  EXPECT_EQ(planContinuation(s(), "s1", r2.run, h.host()).rejectionReasons,
            std::vector<std::string>{"runtime_lineage_claim_mismatch"});
}

TEST_F(Lin, UnreadableClaimRowIsContinuationAuthorityUnavailable) {
  makeFailedRun(s(), "s1", "r1", 10);
  RunIds r2 = continueOnce("r1", [&](RunIds& t) { s().append(t.model("x")); });
  execSql(s(), "UPDATE runtime_continuation_claims SET target_run_header_json = '{}'");
  EXPECT_EQ(planContinuation(s(), "s1", r2.run, h.host()).rejectionReasons,
            std::vector<std::string>{"continuation_authority_unavailable"});
}
