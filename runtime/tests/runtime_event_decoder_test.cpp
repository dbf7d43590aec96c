// runtime_event_decoder_test.cpp — the strict RuntimeEvent decoder (spec a.1–a.5): closed key
// sets with JSON paths, types, empty ids, enums, lanes and lane conflicts, text normalisation,
// losslessness, list decoding.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/json_limits.h"
#include "crashsim/runtime_event.h"
#include "store_test_util.h"

namespace crashsim {
namespace {

using Ptr = Json::json_pointer;

using testutil::kDigestA;
using testutil::kDigestB;

Json envelope(const char* id, const char* role, const char* author) {
  return Json{
      {"id", id},           {"invocationId", "inv-1"}, {"runId", "run-1"}, {"sessionId", "s-1"},
      {"turnId", "turn-1"}, {"ts", 1700000000000},     {"partial", false}, {"role", role},
      {"author", author}};
}

Json userEvent() {
  Json e = envelope("e-user", "user", "user");
  e["content"] = {{"kind", "text"}, {"text", "write it"}};
  e["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  return e;
}

Json callEvent() {
  Json e = envelope("op_call", "model", "agent");
  e["content"] = {{"kind", "function_call"},
                  {"id", "call-1"},
                  {"name", "Write"},
                  {"args", {{"path", "notes.txt"}, {"content", "after"}}}};
  return e;
}

Json dispatchEvent() {
  Json e = envelope("op_dispatch", "system", "system");
  e["actions"] = {{"toolDispatch",
                   {{"protocol", "t1_after_preflight_v1"},
                    {"operationId", "toolop_1"},
                    {"providerToolCallId", "call-1"},
                    {"toolName", "Write"},
                    {"canonicalArgsHash", kDigestA},
                    {"recoveryMode", "reconcile"}}}};
  e["refs"] = {{"operationId", "toolop_1"}, {"toolCallId", "call-1"}};
  return e;
}

Json responseEvent() {
  Json e = envelope("op_response", "tool", "tool");
  e["content"] = {{"kind", "function_response"},
                  {"id", "call-1"},
                  {"name", "Write"},
                  {"result", {{"ok", true}}},
                  {"isError", false}};
  e["refs"] = {{"operationId", "toolop_1"}, {"toolCallId", "call-1"}};
  return e;
}

Json reconcileEvent() {
  Json e = envelope("op_reconcile", "system", "system");
  e["actions"] = {{"toolRecovery",
                   {{"kind", "maka.tool.reconcile_result"},
                    {"version", 1},
                    {"payload",
                     {{"protocol", "tool_reconcile_v1"},
                      {"operationId", "toolop_1"},
                      {"observation", "matches_expected_state"},
                      {"observationSchema", "state_identity_v1"},
                      {"observationDigest", kDigestB}}}}}};
  e["refs"] = {{"operationId", "toolop_1"}, {"toolCallId", "call-1"}};
  return e;
}

Json decisionEvent(bool completed) {
  Json e = envelope("op_decision", "system", "system");
  Json payload = {{"protocol", "tool_recovery_v1"}, {"operationId", "toolop_1"}};
  if (completed) {
    payload["disposition"] = "completed";
    payload["reasonCode"] = "reconcile_matches_expected_state";
    payload["outcomeEventId"] = "op_response";
    payload["evidenceEventIds"] = {"op_call", "op_dispatch", "op_reconcile", "op_response"};
  } else {
    payload["disposition"] = "parked";
    payload["reasonCode"] = "reconcile_matches_prior_state";
    payload["evidenceEventIds"] = {"op_call", "op_dispatch", "op_reconcile"};
  }
  e["actions"] = {
      {"toolRecovery",
       {{"kind", "maka.tool.recovery_decision"}, {"version", 1}, {"payload", payload}}}};
  e["refs"] = {{"operationId", "toolop_1"}, {"toolCallId", "call-1"}};
  return e;
}

Json continuationStartEvent() {
  Json e = envelope("cont-start", "system", "system");
  e["actions"] = {{"continuationStart",
                   {{"protocol", "continuation_start_v2"},
                    {"provenance", "runtime_admission"},
                    {"claimId", "claim-1"},
                    {"boundaryDigest", kDigestA},
                    {"immediateSource",
                     {{"sessionId", "s-1"},
                      {"invocationId", "inv-0"},
                      {"runId", "run-0"},
                      {"turnId", "turn-0"},
                      {"highWater", 7},
                      {"prefixDigest", kDigestB}}},
                    {"replayManifestDigest", kDigestA},
                    {"providerProjectionVersion", 1},
                    {"providerReplayDigest", kDigestB}}},
                  {"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  e["refs"] = {{"sourceInvocationId", "inv-0"},
               {"sourceRunId", "run-0"},
               {"sourceTurnId", "turn-0"},
               {"sourceRuntimeEventHighWater", 7}};
  return e;
}

Json richOrdinaryEvent() {
  Json e = envelope("e-rich", "model", "agent");
  e["branch"] = "main";
  e["origin"] = "provider";
  e["modelVisibility"] = "visible";
  e["status"] = "completed";
  e["content"] = {{"kind", "error"},
                  {"message", "boom"},
                  {"code", "E1"},
                  {"reason", "provider_failed"},
                  {"details", {"a", "b"}}};
  e["actions"] = {
      {"stateDelta", {{"k", {1, 2}}}},
      {"artifactDelta", {{"size", 3}, {"name", "x"}, {"ok", true}}},
      {"permissionRequest", {{"requestId", "r-1"}}},
      {"permissionDecision",
       {{"requestId", "r-1"}, {"decision", "allow"}, {"rememberForTurn", true}, {"toolName", "W"}}},
      {"permissionAnswerAccepted", {{"requestId", "r-1"}}},
      {"userQuestionRequest", {{"requestId", "q-1"}}},
      {"userQuestionAnswerAccepted", {{"requestId", "q-1"}}},
      {"transferToAgent", "other"},
      {"endInvocation", true},
      {"tokenUsage", {{"input", 10}, {"output", 20}, {"total", 30}}},
      {"workspaceFact", {{"kind", "x"}}}};
  e["refs"] = {{"storedMessageId", "m"},
               {"traceEventId", "t"},
               {"providerEventId", "p"},
               {"sourceMessageDigest", kDigestA},
               {"providerRequestTraceId", "pr"},
               {"artifactId", "a"},
               {"stepId", "st"}};
  return e;
}

void expectDecodeError(const Json& j, std::string_view code, std::string_view path) {
  try {
    decodeRuntimeEvent(j);
    ADD_FAILURE() << "decoded without error; expected " << code << " at " << path << "\n"
                  << j.dump();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.path(), path) << e.what();
  }
}

Lane laneOf(const Json& j) { return decodeRuntimeEvent(j).lane; }

// Valid events and typed views
// ---------------------------------------------------------------------

TEST(RuntimeEventDecode, UserEventWithProtocolMarkerFillsViews) {
  const RuntimeEvent ev = decodeRuntimeEvent(userEvent());
  EXPECT_EQ(ev.id, "e-user");
  EXPECT_EQ(ev.invocationId, "inv-1");
  EXPECT_EQ(ev.runId, "run-1");
  EXPECT_EQ(ev.sessionId, "s-1");
  EXPECT_EQ(ev.turnId, "turn-1");
  EXPECT_EQ(ev.ts, 1700000000000.0);
  EXPECT_FALSE(ev.partial);
  EXPECT_EQ(ev.role, Role::user);
  EXPECT_EQ(ev.author, Author::user);
  EXPECT_EQ(ev.contentKind, ContentKind::text);
  EXPECT_EQ(ev.runtimeProtocol, std::optional<std::string>("t1_after_preflight_v1"));
  EXPECT_EQ(ev.lane, Lane::ordinary);
  EXPECT_TRUE(ev.isModelVisible());
  EXPECT_FALSE(ev.isTerminal());
}

TEST(RuntimeEventDecode, FunctionCallViewsAndCachedArgsHash) {
  const RuntimeEvent ev = decodeRuntimeEvent(callEvent());
  EXPECT_EQ(ev.lane, Lane::function_call);
  EXPECT_EQ(ev.contentKind, ContentKind::function_call);
  EXPECT_EQ(ev.callId, "call-1");
  EXPECT_EQ(ev.toolName, "Write");
  EXPECT_EQ(ev.callArgsHash,
            std::optional<std::string>(
                "sha256:763712445cbfb7feebe3bd4ba14e29425f05e40b8cd14aef0896853dca24b4d9"));
  Json noName = callEvent();
  noName["content"]["name"] = "";
  EXPECT_EQ(decodeRuntimeEvent(noName).callArgsHash, std::nullopt);
}

TEST(RuntimeEventDecode, DispatchResponseAndRecoveryViews) {
  const RuntimeEvent d = decodeRuntimeEvent(dispatchEvent());
  EXPECT_EQ(d.lane, Lane::tool_dispatch);
  ASSERT_TRUE(d.toolDispatch);
  EXPECT_EQ(d.toolDispatch->protocol, "t1_after_preflight_v1");
  EXPECT_EQ(d.toolDispatch->operationId, "toolop_1");
  EXPECT_EQ(d.toolDispatch->providerToolCallId, "call-1");
  EXPECT_EQ(d.toolDispatch->toolName, "Write");
  EXPECT_EQ(d.toolDispatch->canonicalArgsHash, kDigestA);
  EXPECT_EQ(d.toolDispatch->recoveryMode, "reconcile");
  EXPECT_EQ(d.refOperationId, std::optional<std::string>("toolop_1"));
  EXPECT_EQ(d.refToolCallId, std::optional<std::string>("call-1"));

  const RuntimeEvent r = decodeRuntimeEvent(responseEvent());
  EXPECT_EQ(r.lane, Lane::function_response);
  EXPECT_EQ(r.callId, "call-1");
  EXPECT_FALSE(r.isError);

  const RuntimeEvent rec = decodeRuntimeEvent(reconcileEvent());
  EXPECT_EQ(rec.lane, Lane::reconcile_result);
  ASSERT_TRUE(rec.toolRecovery);
  EXPECT_EQ(rec.toolRecovery->kind, ToolRecovery::Kind::reconcile_result);
  EXPECT_EQ(rec.toolRecovery->operationId, "toolop_1");
  EXPECT_EQ(rec.toolRecovery->observation, "matches_expected_state");
  EXPECT_EQ(rec.toolRecovery->observationDigest, kDigestB);

  const RuntimeEvent done = decodeRuntimeEvent(decisionEvent(true));
  EXPECT_EQ(done.lane, Lane::recovery_decision);
  EXPECT_EQ(done.toolRecovery->disposition, "completed");
  EXPECT_EQ(done.toolRecovery->reasonCode, "reconcile_matches_expected_state");
  EXPECT_EQ(done.toolRecovery->outcomeEventId, "op_response");
  EXPECT_EQ(done.toolRecovery->evidenceEventIds.size(), 4u);

  const RuntimeEvent parked = decodeRuntimeEvent(decisionEvent(false));
  EXPECT_EQ(parked.toolRecovery->disposition, "parked");
  EXPECT_EQ(parked.toolRecovery->reasonCode, "reconcile_matches_prior_state");
  EXPECT_EQ(parked.toolRecovery->outcomeEventId, "");
}

TEST(RuntimeEventDecode, ContinuationStartV2View) {
  const RuntimeEvent ev = decodeRuntimeEvent(continuationStartEvent());
  EXPECT_TRUE(ev.hasContinuationStart);
  ASSERT_TRUE(ev.continuationStart);
  EXPECT_EQ(ev.continuationStart->provenance, "runtime_admission");
  EXPECT_EQ(ev.continuationStart->claimId, "claim-1");
  EXPECT_EQ(ev.continuationStart->sourceRunId, "run-0");
  EXPECT_EQ(ev.continuationStart->sourceHighWater, 7);
  EXPECT_EQ(ev.continuationStart->sourcePrefixDigest, kDigestB);
  EXPECT_EQ(ev.refSourceRuntimeEventHighWater, std::optional<int64_t>(7));
  EXPECT_EQ(ev.lane, Lane::ordinary);
}

TEST(RuntimeEventDecode, RichOrdinaryEventAndTerminalRules) {
  const RuntimeEvent ev = decodeRuntimeEvent(richOrdinaryEvent());
  EXPECT_EQ(ev.branch, std::optional<std::string>("main"));
  EXPECT_EQ(ev.origin, std::optional<std::string>("provider"));
  EXPECT_EQ(ev.status, std::optional<EventStatus>(EventStatus::completed));
  EXPECT_TRUE(ev.hasEndInvocation);
  EXPECT_TRUE(ev.hasWorkspaceFact);
  EXPECT_TRUE(ev.isTerminal());
  EXPECT_FALSE(ev.isModelVisible());  // error content is never model-visible

  Json streaming = envelope("e", "model", "agent");
  streaming["status"] = "streaming";
  EXPECT_FALSE(decodeRuntimeEvent(streaming).isTerminal());
  Json end = envelope("e", "system", "system");
  end["actions"] = {{"endInvocation", true}};
  EXPECT_TRUE(decodeRuntimeEvent(end).isTerminal());
  end["actions"]["endInvocation"] = false;
  EXPECT_FALSE(decodeRuntimeEvent(end).isTerminal());
  for (const char* s : {"completed", "failed", "aborted", "cancelled"}) {
    Json t = envelope("e", "system", "system");
    t["status"] = s;
    EXPECT_TRUE(decodeRuntimeEvent(t).isTerminal()) << s;
  }
}

TEST(RuntimeEventDecode, ModelVisibility) {
  Json hidden = userEvent();
  hidden["modelVisibility"] = "hidden";
  EXPECT_FALSE(decodeRuntimeEvent(hidden).isModelVisible());
  Json empty = userEvent();
  empty["content"]["text"] = "";
  EXPECT_FALSE(decodeRuntimeEvent(empty).isModelVisible());
  EXPECT_FALSE(decodeRuntimeEvent(envelope("e", "system", "system")).isModelVisible());
  Json thinking = envelope("e", "model", "agent");
  thinking["content"] = {{"kind", "thinking"}, {"text", ""}, {"signature", "sig"}};
  EXPECT_TRUE(decodeRuntimeEvent(thinking).isModelVisible());
}

// Closed key sets: an unknown key at every declared level, with its path ----------------------

struct UnknownKeyCase {
  const char* name;
  Json (*make)();
  const char* objectPointer;
  const char* expectedPath;
};

Json textWithExtras() {
  Json e = userEvent();
  e["content"]["origin"] = {{"kind", "scheduled_task"}, {"scheduledTaskId", "t"}};
  e["content"]["attachments"] = {
      {{"kind", "image"},
       {"name", "a.png"},
       {"mimeType", "image/png"},
       {"bytes", 3},
       {"ref", {{"kind", "workspace_file"}, {"relativePath", "a.png"}}}}};
  e["content"]["quotes"] = {{{"text", "q"}, {"label", "l"}}};
  e["content"]["displayText"] = "use @src/a.cc";
  e["content"]["inlineReferences"] = {
      {{"kind", "workspace_file"}, {"value", "@src/a.cc"}, {"label", "a.cc"}, {"start", 4}}};
  return e;
}
Json thinkingEvent() {
  Json e = envelope("e", "model", "agent");
  e["content"] = {{"kind", "thinking"}, {"text", "hmm"}};
  return e;
}
Json closureEvent() {
  Json e = envelope("e", "system", "system");
  e["actions"] = {{"permissionClosureAccepted", {{"requestId", "r"}, {"reason", "timed_out"}}}};
  return e;
}

const UnknownKeyCase kUnknownKeyCases[] = {
    {"envelope", userEvent, "", "$.bogus"},
    {"text_content", userEvent, "/content", "$.content.bogus"},
    {"text_origin", textWithExtras, "/content/origin", "$.content.origin.bogus"},
    {"attachment", textWithExtras, "/content/attachments/0", "$.content.attachments[0].bogus"},
    {"attachment_ref", textWithExtras, "/content/attachments/0/ref",
     "$.content.attachments[0].ref.bogus"},
    {"quote", textWithExtras, "/content/quotes/0", "$.content.quotes[0].bogus"},
    {"inline_reference", textWithExtras, "/content/inlineReferences/0",
     "$.content.inlineReferences[0].bogus"},
    {"thinking_content", thinkingEvent, "/content", "$.content.bogus"},
    {"function_call_content", callEvent, "/content", "$.content.bogus"},
    {"function_response_content", responseEvent, "/content", "$.content.bogus"},
    {"error_content", richOrdinaryEvent, "/content", "$.content.bogus"},
    {"actions", userEvent, "/actions", "$.actions.bogus"},
    {"runtime_protocol", userEvent, "/actions/runtimeProtocol", "$.actions.runtimeProtocol.bogus"},
    {"tool_dispatch", dispatchEvent, "/actions/toolDispatch", "$.actions.toolDispatch.bogus"},
    {"tool_recovery_envelope", reconcileEvent, "/actions/toolRecovery",
     "$.actions.toolRecovery.bogus"},
    {"reconcile_payload", reconcileEvent, "/actions/toolRecovery/payload",
     "$.actions.toolRecovery.payload.bogus"},
    {"decision_payload", [] { return decisionEvent(true); }, "/actions/toolRecovery/payload",
     "$.actions.toolRecovery.payload.bogus"},
    {"parked_decision_payload", [] { return decisionEvent(false); },
     "/actions/toolRecovery/payload", "$.actions.toolRecovery.payload.bogus"},
    {"continuation_start", continuationStartEvent, "/actions/continuationStart",
     "$.actions.continuationStart.bogus"},
    {"continuation_immediate_source", continuationStartEvent,
     "/actions/continuationStart/immediateSource",
     "$.actions.continuationStart.immediateSource.bogus"},
    {"permission_decision", richOrdinaryEvent, "/actions/permissionDecision",
     "$.actions.permissionDecision.bogus"},
    {"permission_answer_accepted", richOrdinaryEvent, "/actions/permissionAnswerAccepted",
     "$.actions.permissionAnswerAccepted.bogus"},
    {"user_question_answer_accepted", richOrdinaryEvent, "/actions/userQuestionAnswerAccepted",
     "$.actions.userQuestionAnswerAccepted.bogus"},
    {"permission_closure_accepted", closureEvent, "/actions/permissionClosureAccepted",
     "$.actions.permissionClosureAccepted.bogus"},
    {"token_usage", richOrdinaryEvent, "/actions/tokenUsage", "$.actions.tokenUsage.bogus"},
    {"refs", dispatchEvent, "/refs", "$.refs.bogus"},
};

class ClosedKeySet : public ::testing::TestWithParam<UnknownKeyCase> {};

TEST_P(ClosedKeySet, UnknownKeyIsRejectedWithItsPath) {
  const UnknownKeyCase& c = GetParam();
  Json base = c.make();
  ASSERT_NO_THROW(decodeRuntimeEvent(base)) << c.name;
  base[Ptr(c.objectPointer)]["bogus"] = 1;
  expectDecodeError(base, "unknown_key", c.expectedPath);
}

INSTANTIATE_TEST_SUITE_P(UnknownKey, ClosedKeySet, ::testing::ValuesIn(kUnknownKeyCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RuntimeEventDecodeMissingField, EveryRequiredEnvelopeField) {
  for (const char* k :
       {"id", "invocationId", "runId", "sessionId", "turnId", "ts", "partial", "role", "author"}) {
    Json e = userEvent();
    e.erase(k);
    expectDecodeError(e, "missing_field", std::string("$.") + k);
  }
}

TEST(RuntimeEventDecodeMissingField, ContentAndActionShapes) {
  Json call = callEvent();
  call["content"].erase("args");  // the args key must be present
  expectDecodeError(call, "missing_field", "$.content.args");
  Json resp = responseEvent();
  resp["content"].erase("result");
  expectDecodeError(resp, "missing_field", "$.content.result");
  Json disp = dispatchEvent();
  disp["actions"]["toolDispatch"].erase("recoveryMode");
  expectDecodeError(disp, "missing_field", "$.actions.toolDispatch.recoveryMode");
  Json dec = decisionEvent(true);
  dec["actions"]["toolRecovery"]["payload"].erase("outcomeEventId");
  expectDecodeError(dec, "missing_field", "$.actions.toolRecovery.payload.outcomeEventId");
  Json noKind = userEvent();
  noKind["content"].erase("kind");
  expectDecodeError(noKind, "missing_field", "$.content.kind");
  Json cs = continuationStartEvent();
  cs["actions"]["continuationStart"]["immediateSource"].erase("highWater");
  expectDecodeError(cs, "missing_field", "$.actions.continuationStart.immediateSource.highWater");
}

TEST(RuntimeEventDecodeMissingField, NullArgsArePresentArgs) {
  Json call = callEvent();
  call["content"]["args"] = nullptr;
  EXPECT_EQ(decodeRuntimeEvent(call).lane, Lane::function_call);
}

// Types -------------------------------------------------------------------------------------

TEST(RuntimeEventDecodeWrongType, EnvelopeAndNestedFields) {
  struct Case {
    const char* pointer;
    Json value;
    const char* path;
  };
  const Case cases[] = {
      {"/id", 1, "$.id"},
      {"/ts", "1", "$.ts"},
      {"/partial", "false", "$.partial"},
      {"/role", 1, "$.role"},
      {"/branch", false, "$.branch"},
      {"/content", "text", "$.content"},
      {"/content/text", nullptr, "$.content.text"},
      {"/content/displayText", 3, "$.content.displayText"},
      {"/content/steering", false, "$.content.steering"},
      {"/content/providerOptions", Json::array(), "$.content.providerOptions"},
      {"/content/attachments", Json::object(), "$.content.attachments"},
      {"/actions", Json::array(), "$.actions"},
      {"/actions/stateDelta", "x", "$.actions.stateDelta"},
      {"/actions/endInvocation", 1, "$.actions.endInvocation"},
      {"/actions/transferToAgent", 1, "$.actions.transferToAgent"},
      {"/actions/artifactDelta", Json{{"k", Json::array()}}, "$.actions.artifactDelta.k"},
      {"/refs", "r", "$.refs"},
      {"/refs/toolCallId", 5, "$.refs.toolCallId"},
      {"/refs/stepId", Json::object(), "$.refs.stepId"},
  };
  for (const Case& c : cases) {
    Json e = userEvent();
    e[Ptr(c.pointer)] = c.value;
    expectDecodeError(e, "wrong_type", c.path);
  }
  Json err = richOrdinaryEvent();
  err["content"]["details"] = Json::array({"a", 1});
  expectDecodeError(err, "wrong_type", "$.content.details");
  Json resp = responseEvent();
  resp["content"]["isError"] = "yes";
  expectDecodeError(resp, "wrong_type", "$.content.isError");
  Json call = callEvent();
  call["content"]["providerExecuted"] = 1;
  expectDecodeError(call, "wrong_type", "$.content.providerExecuted");
  Json dec = decisionEvent(false);
  dec["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = "op_call";
  expectDecodeError(dec, "wrong_type", "$.actions.toolRecovery.payload.evidenceEventIds");
  Json rec = reconcileEvent();
  rec["actions"]["toolRecovery"]["version"] = "1";
  expectDecodeError(rec, "wrong_type", "$.actions.toolRecovery.version");
}

TEST(RuntimeEventDecodeWrongType, TopLevelMustBeAnObject) {
  expectDecodeError(Json::array(), "wrong_type", "$");
  expectDecodeError(Json("event"), "wrong_type", "$");
}

// Empty ids ------------------------------------------------------------------------------------

TEST(RuntimeEventDecodeEmptyId, RequiredIdsMustBeNonEmpty) {
  struct Case {
    Json (*make)();
    const char* pointer;
    const char* path;
  };
  const Case cases[] = {
      {userEvent, "/id", "$.id"},
      {userEvent, "/invocationId", "$.invocationId"},
      {userEvent, "/runId", "$.runId"},
      {userEvent, "/sessionId", "$.sessionId"},
      {userEvent, "/turnId", "$.turnId"},
      {dispatchEvent, "/actions/toolDispatch/operationId", "$.actions.toolDispatch.operationId"},
      {dispatchEvent, "/actions/toolDispatch/providerToolCallId",
       "$.actions.toolDispatch.providerToolCallId"},
      {dispatchEvent, "/actions/toolDispatch/toolName", "$.actions.toolDispatch.toolName"},
      {reconcileEvent, "/actions/toolRecovery/payload/operationId",
       "$.actions.toolRecovery.payload.operationId"},
      {[] { return decisionEvent(true); }, "/actions/toolRecovery/payload/outcomeEventId",
       "$.actions.toolRecovery.payload.outcomeEventId"},
      {[] { return decisionEvent(true); }, "/actions/toolRecovery/payload/evidenceEventIds/1",
       "$.actions.toolRecovery.payload.evidenceEventIds[1]"},
      {continuationStartEvent, "/actions/continuationStart/claimId",
       "$.actions.continuationStart.claimId"},
      {continuationStartEvent, "/actions/continuationStart/immediateSource/runId",
       "$.actions.continuationStart.immediateSource.runId"},
      {closureEvent, "/actions/permissionClosureAccepted/requestId",
       "$.actions.permissionClosureAccepted.requestId"},
  };
  for (const Case& c : cases) {
    Json e = c.make();
    e[Ptr(c.pointer)] = "";
    expectDecodeError(e, "empty_id", c.path);
  }
  Json dec = decisionEvent(false);
  dec["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = Json::array();
  expectDecodeError(dec, "empty_id", "$.actions.toolRecovery.payload.evidenceEventIds");
}

TEST(RuntimeEventDecodeShape, EvidenceIdsMustBeDistinct) {
  Json dec = decisionEvent(false);
  dec["actions"]["toolRecovery"]["payload"]["evidenceEventIds"] = {"a", "b", "a"};
  expectDecodeError(dec, "event_decode_error",
                    "$.actions.toolRecovery.payload.evidenceEventIds[2]");
}

TEST(RuntimeEventDecodeShape, PermissionClosureMustBeTheOnlyAction) {
  Json e = closureEvent();
  ASSERT_NO_THROW(decodeRuntimeEvent(e));
  e["actions"]["endInvocation"] = true;
  expectDecodeError(e, "event_decode_error", "$.actions.permissionClosureAccepted");
  Json r = closureEvent();
  r["actions"]["permissionClosureAccepted"]["reason"] = "other";
  expectDecodeError(r, "invalid_enum", "$.actions.permissionClosureAccepted.reason");
}

TEST(RuntimeEventDecodeShape, CompletedDecisionMayNotBeParkedShapeAndViceVersa) {
  Json parkedWithOutcome = decisionEvent(false);
  parkedWithOutcome["actions"]["toolRecovery"]["payload"]["outcomeEventId"] = "op_response";
  expectDecodeError(parkedWithOutcome, "unknown_key",
                    "$.actions.toolRecovery.payload.outcomeEventId");
}

// Enums and literals -----------------------------------------------------------------------------

TEST(RuntimeEventDecodeInvalidEnum, EnvelopeEnums) {
  struct Case {
    const char* pointer;
    const char* value;
  };
  for (const Case& c : {Case{"/role", "assistant"}, Case{"/author", "bot"}, Case{"/status", "done"},
                        Case{"/origin", "legacy"}, Case{"/modelVisibility", "secret"},
                        Case{"/content/kind", "image"}}) {
    Json e = userEvent();
    e[Ptr(c.pointer)] = c.value;
    std::string path = "$" + std::string(c.pointer);
    std::replace(path.begin(), path.end(), '/', '.');
    expectDecodeError(e, "invalid_enum", path);
  }
}

TEST(RuntimeEventDecodeInvalidEnum, RecoveryAndDispatchLiterals) {
  struct Case {
    Json (*make)();
    const char* pointer;
    Json value;
    const char* path;
  };
  const Case cases[] = {
      {dispatchEvent, "/actions/toolDispatch/protocol", "t2", "$.actions.toolDispatch.protocol"},
      {dispatchEvent, "/actions/toolDispatch/recoveryMode", "retry",
       "$.actions.toolDispatch.recoveryMode"},
      {userEvent, "/actions/runtimeProtocol/toolBoundary", "t0",
       "$.actions.runtimeProtocol.toolBoundary"},
      {reconcileEvent, "/actions/toolRecovery/kind", "maka.tool.other",
       "$.actions.toolRecovery.kind"},
      {reconcileEvent, "/actions/toolRecovery/version", 999, "$.actions.toolRecovery.version"},
      {reconcileEvent, "/actions/toolRecovery/version", 1.5, "$.actions.toolRecovery.version"},
      {reconcileEvent, "/actions/toolRecovery/payload/protocol", "tool_reconcile_v2",
       "$.actions.toolRecovery.payload.protocol"},
      {reconcileEvent, "/actions/toolRecovery/payload/observation", "same",
       "$.actions.toolRecovery.payload.observation"},
      {reconcileEvent, "/actions/toolRecovery/payload/observationSchema", "v2",
       "$.actions.toolRecovery.payload.observationSchema"},
      {[] { return decisionEvent(true); }, "/actions/toolRecovery/payload/disposition", "retry",
       "$.actions.toolRecovery.payload.disposition"},
      {[] { return decisionEvent(true); }, "/actions/toolRecovery/payload/reasonCode",
       "reconcile_diverged", "$.actions.toolRecovery.payload.reasonCode"},
      {[] { return decisionEvent(false); }, "/actions/toolRecovery/payload/reasonCode",
       "redo_disabled_pending_cas", "$.actions.toolRecovery.payload.reasonCode"},
      {continuationStartEvent, "/actions/continuationStart/protocol", "continuation_start_v1",
       "$.actions.continuationStart.protocol"},
      {continuationStartEvent, "/actions/continuationStart/provenance", "manual",
       "$.actions.continuationStart.provenance"},
      {continuationStartEvent, "/actions/continuationStart/providerProjectionVersion", 2,
       "$.actions.continuationStart.providerProjectionVersion"},
  };
  for (const Case& c : cases) {
    Json e = c.make();
    e[Ptr(c.pointer)] = c.value;
    expectDecodeError(e, "invalid_enum", c.path);
  }
}

TEST(RuntimeEventDecodeInvalidDigest, Sha256DigestsAreLowerCaseHex) {
  const std::string upper = "sha256:" + std::string(64, 'A');
  const std::string shortHex = "sha256:" + std::string(63, 'a');
  struct Case {
    Json (*make)();
    const char* pointer;
    const char* path;
  };
  const Case cases[] = {
      {reconcileEvent, "/actions/toolRecovery/payload/observationDigest",
       "$.actions.toolRecovery.payload.observationDigest"},
      {continuationStartEvent, "/actions/continuationStart/boundaryDigest",
       "$.actions.continuationStart.boundaryDigest"},
      {continuationStartEvent, "/actions/continuationStart/immediateSource/prefixDigest",
       "$.actions.continuationStart.immediateSource.prefixDigest"},
      {continuationStartEvent, "/actions/continuationStart/replayManifestDigest",
       "$.actions.continuationStart.replayManifestDigest"},
      {continuationStartEvent, "/actions/continuationStart/providerReplayDigest",
       "$.actions.continuationStart.providerReplayDigest"},
      {richOrdinaryEvent, "/refs/sourceMessageDigest", "$.refs.sourceMessageDigest"},
  };
  for (const Case& c : cases) {
    for (const std::string& bad : {upper, shortHex, std::string(64, 'a')}) {
      Json e = c.make();
      e[Ptr(c.pointer)] = bad;
      expectDecodeError(e, "invalid_digest", c.path);
    }
  }
}

TEST(RuntimeEventDecodeInvalidInteger, SafeIntegerRules) {
  for (const Json& bad :
       {Json(-1), Json(1.5), Json(9007199254740992.0), Json(int64_t{9007199254740993})}) {
    Json e = continuationStartEvent();
    e["refs"]["sourceRuntimeEventHighWater"] = bad;
    expectDecodeError(e, "invalid_integer", "$.refs.sourceRuntimeEventHighWater");
  }
  Json zero = continuationStartEvent();
  zero["refs"]["sourceRuntimeEventHighWater"] = 0;  // >= 0 is fine for the ref
  EXPECT_NO_THROW(decodeRuntimeEvent(zero));
  zero["actions"]["continuationStart"]["immediateSource"]["highWater"] = 0;  // but > 0 here
  expectDecodeError(zero, "invalid_integer",
                    "$.actions.continuationStart.immediateSource.highWater");
  Json maxSafe = continuationStartEvent();
  maxSafe["refs"]["sourceRuntimeEventHighWater"] = 9007199254740991;
  EXPECT_EQ(decodeRuntimeEvent(maxSafe).refSourceRuntimeEventHighWater,
            std::optional<int64_t>(9007199254740991));
}

TEST(RuntimeEventDecodeNonFinite, NaNAndInfinityAnywhereAreRejected) {
  Json e = callEvent();
  e["content"]["args"]["n"] = std::numeric_limits<double>::quiet_NaN();
  expectDecodeError(e, "non_finite_number", "$.content.args.n");
  Json ts = userEvent();
  ts["ts"] = std::numeric_limits<double>::infinity();
  expectDecodeError(ts, "non_finite_number", "$.ts");
  Json arr = responseEvent();
  arr["content"]["result"] = Json::array({1, -std::numeric_limits<double>::infinity()});
  expectDecodeError(arr, "non_finite_number", "$.content.result[1]");
}

TEST(RuntimeEventDecodeNotStrictJson, InvalidUtf8AndBinary) {
  Json e = userEvent();
  // A surrogate pair spelled as two 3-byte sequences is not WTF-8 (a lone surrogate is, a.6).
  e["content"]["text"] = std::string("\xED\xA0\x80\xED\xB0\x80");
  expectDecodeError(e, "not_strict_json", "$.content.text");
  e["content"]["text"] = std::string("\xC0\xAF");  // overlong
  expectDecodeError(e, "not_strict_json", "$.content.text");
  e["content"]["text"] = std::string("\xED\xA0\x80");  // a lone surrogate: data
  EXPECT_EQ(encodeRuntimeEvent(decodeRuntimeEvent(e)).find("\\ud800") != std::string::npos, true);
  Json b = callEvent();
  b["content"]["args"] = Json::binary({1});
  expectDecodeError(b, "not_strict_json", "$.content.args");
}

// Text content (a.2) ------------------------------------------------------------------------------

TEST(RuntimeEventTextNormalisation, SpecVectorDropsRedundantFields) {
  Json e = envelope("e", "user", "user");
  e["content"] = {{"kind", "text"},
                  {"text", "write it"},
                  {"displayText", "write it"},
                  {"attachments", Json::array()},
                  {"quotes", Json::array()}};
  const RuntimeEvent ev = decodeRuntimeEvent(e);
  EXPECT_EQ(stableJson(ev.json["content"]), R"({"kind":"text","text":"write it"})");
  // A raw retry of the normalised form is idempotent.
  const RuntimeEvent again = decodeRuntimeEvent(parseJson(encodeRuntimeEvent(ev)));
  EXPECT_EQ(encodeRuntimeEvent(again), encodeRuntimeEvent(ev));
  EXPECT_EQ(again, ev);
}

TEST(RuntimeEventTextNormalisation, KeepsDifferentDisplayTextAndNormalisesNegativeZeroBytes) {
  Json e = textWithExtras();
  e["content"]["attachments"][0]["bytes"] = -0.0;
  e["content"]["inlineReferences"] = Json::array();
  const RuntimeEvent ev = decodeRuntimeEvent(e);
  EXPECT_EQ(ev.json["content"]["displayText"], "use @src/a.cc");
  EXPECT_EQ(stableJson(ev.json["content"]["attachments"][0]["bytes"]), "0");
  EXPECT_FALSE(std::signbit(ev.json["content"]["attachments"][0]["bytes"].get<double>()));
  // An empty inlineReferences array is kept (it marks a current-format plain message).
  EXPECT_TRUE(ev.json["content"]["inlineReferences"].is_array());
}

TEST(RuntimeEventTextNormalisation, AutomationOriginBecomesLegacyAutomation) {
  Json e = userEvent();
  e["content"]["origin"] = {{"kind", "automation"}, {"automationId", "a-1"}};
  EXPECT_EQ(decodeRuntimeEvent(e).json["content"]["origin"]["kind"], "legacy_automation");
  e["content"]["origin"] = {{"kind", "robot"}};
  expectDecodeError(e, "invalid_enum", "$.content.origin.kind");
}

TEST(RuntimeEventTextContent, AttachmentAndInlineReferenceRules) {
  Json badBytes = textWithExtras();
  badBytes["content"]["attachments"][0]["bytes"] = -1;
  expectDecodeError(badBytes, "invalid_integer", "$.content.attachments[0].bytes");
  Json badKind = textWithExtras();
  badKind["content"]["attachments"][0]["kind"] = "video";
  expectDecodeError(badKind, "invalid_enum", "$.content.attachments[0].kind");
  Json mismatch = textWithExtras();
  mismatch["content"]["inlineReferences"][0]["start"] = 3;
  expectDecodeError(mismatch, "event_decode_error", "$.content.inlineReferences[0].start");
  Json badValue = textWithExtras();
  badValue["content"]["inlineReferences"][0]["value"] = "@../a.cc";
  expectDecodeError(badValue, "event_decode_error", "$.content.inlineReferences[0].value");
  Json skill = userEvent();
  skill["content"]["text"] = "\xF0\x9F\x98\x80 /skill:review now";
  skill["content"]["inlineReferences"] = {
      {{"kind", "skill"}, {"value", "/skill:review"}, {"label", "Review"}, {"start", 3}}};
  EXPECT_NO_THROW(decodeRuntimeEvent(skill));  // offsets are UTF-16 code units
}

// Lanes (a.5) -------------------------------------------------------------------------------------

TEST(RuntimeEventLane, DetectedByFieldPresence) {
  EXPECT_EQ(laneOf(userEvent()), Lane::ordinary);
  EXPECT_EQ(laneOf(callEvent()), Lane::function_call);
  EXPECT_EQ(laneOf(dispatchEvent()), Lane::tool_dispatch);
  EXPECT_EQ(laneOf(responseEvent()), Lane::function_response);
  EXPECT_EQ(laneOf(reconcileEvent()), Lane::reconcile_result);
  EXPECT_EQ(laneOf(decisionEvent(true)), Lane::recovery_decision);
  EXPECT_EQ(laneOf(decisionEvent(false)), Lane::recovery_decision);
  EXPECT_EQ(laneOf(continuationStartEvent()), Lane::ordinary);
}

TEST(RuntimeEventLane, SemanticLaneConflictForMoreThanOneLane) {
  Json callAndDispatch = callEvent();
  callAndDispatch["actions"] = dispatchEvent()["actions"];
  EXPECT_EQ(laneOf(callAndDispatch), Lane::conflict);
  Json responseAndRecovery = responseEvent();
  responseAndRecovery["actions"] = reconcileEvent()["actions"];
  EXPECT_EQ(laneOf(responseAndRecovery), Lane::conflict);
  Json dispatchAndRecovery = dispatchEvent();
  dispatchAndRecovery["actions"]["toolRecovery"] = reconcileEvent()["actions"]["toolRecovery"];
  EXPECT_EQ(laneOf(dispatchAndRecovery), Lane::conflict);
}

TEST(RuntimeEventLane, SemanticLaneConflictIsNotADecodeError) {
  Json e = callEvent();
  e["partial"] = true;
  RuntimeEvent ev;
  ASSERT_NO_THROW(ev = decodeRuntimeEvent(e));
  EXPECT_EQ(ev.lane, Lane::conflict);
  EXPECT_EQ(ev.callId, "call-1");  // views are still filled
}

TEST(RuntimeEventLane, EveryToolLaneRequiresNotPartialNoStatusNoBranch) {
  for (Json (*make)() : {callEvent, dispatchEvent, responseEvent, reconcileEvent,
                         +[] { return decisionEvent(true); }}) {
    ASSERT_NE(laneOf(make()), Lane::conflict);
    Json partial = make();
    partial["partial"] = true;
    EXPECT_EQ(laneOf(partial), Lane::conflict) << partial.dump();
    Json status = make();
    status["status"] = "completed";
    EXPECT_EQ(laneOf(status), Lane::conflict) << status.dump();
    Json streaming = make();
    streaming["status"] = "streaming";
    EXPECT_EQ(laneOf(streaming), Lane::conflict) << streaming.dump();
    Json branch = make();
    branch["branch"] = "b";
    EXPECT_EQ(laneOf(branch), Lane::conflict) << branch.dump();
  }
  // Ordinary events may carry all three.
  Json ordinary = userEvent();
  ordinary["partial"] = true;
  ordinary["status"] = "streaming";
  ordinary["branch"] = "b";
  EXPECT_EQ(laneOf(ordinary), Lane::ordinary);
}

TEST(RuntimeEventLane, FunctionCallEnvelope) {
  Json role = callEvent();
  role["role"] = "system";
  EXPECT_EQ(laneOf(role), Lane::conflict);
  Json author = callEvent();
  author["author"] = "tool";
  EXPECT_EQ(laneOf(author), Lane::conflict);
  Json ok = callEvent();
  ok["actions"] = {
      {"stateDelta", {{"activityKind", "edit"}, {"displayName", "Write"}, {"intent", "x"}}}};
  EXPECT_EQ(laneOf(ok), Lane::function_call);
  ok["actions"] = {{"stateDelta", {{"intent", "x"}}}};
  EXPECT_EQ(laneOf(ok), Lane::function_call);
  for (const Json& bad :
       {Json{{"artifactDelta", {{"k", 1}}}}, Json{{"endInvocation", true}},
        Json{{"stateDelta", Json::object()}}, Json{{"stateDelta", {{"other", "x"}}}},
        Json{{"stateDelta", {{"intent", 1}}}},
        Json{{"stateDelta", {{"intent", "x"}}}, {"endInvocation", false}}, Json::object()}) {
    Json e = callEvent();
    e["actions"] = bad;
    EXPECT_EQ(laneOf(e), Lane::conflict) << bad.dump();
  }
}

TEST(RuntimeEventLane, FunctionResponseEnvelope) {
  Json role = responseEvent();
  role["role"] = "model";
  EXPECT_EQ(laneOf(role), Lane::conflict);
  Json author = responseEvent();
  author["author"] = "system";
  EXPECT_EQ(laneOf(author), Lane::conflict);
  Json ok = responseEvent();
  ok["actions"] = {{"stateDelta", {{"durationMs", 12.5}}}};
  EXPECT_EQ(laneOf(ok), Lane::function_response);
  for (const Json& bad :
       {Json{{"endInvocation", true}}, Json{{"stateDelta", {{"continuationStart", true}}}},
        Json{{"stateDelta", {{"durationMs", "12"}}}},
        Json{{"stateDelta", {{"durationMs", 1}, {"intent", "x"}}}},
        Json{{"stateDelta", {{"durationMs", 1}}}, {"endInvocation", false}}}) {
    Json e = responseEvent();
    e["actions"] = bad;
    EXPECT_EQ(laneOf(e), Lane::conflict) << bad.dump();
  }
  Json unbound = responseEvent();
  unbound.erase("refs");
  EXPECT_EQ(laneOf(unbound), Lane::function_response);
}

TEST(RuntimeEventLane, ToolDispatchEnvelope) {
  Json content = dispatchEvent();
  content["content"] = {{"kind", "text"}, {"text", "x"}};
  EXPECT_EQ(laneOf(content), Lane::conflict);
  Json role = dispatchEvent();
  role["role"] = "model";
  EXPECT_EQ(laneOf(role), Lane::conflict);
  Json author = dispatchEvent();
  author["author"] = "agent";
  EXPECT_EQ(laneOf(author), Lane::conflict);
  Json extraAction = dispatchEvent();
  extraAction["actions"]["endInvocation"] = true;
  EXPECT_EQ(laneOf(extraAction), Lane::conflict);
  Json noRefs = dispatchEvent();
  noRefs.erase("refs");
  EXPECT_EQ(laneOf(noRefs), Lane::conflict);
  Json extraRef = dispatchEvent();
  extraRef["refs"]["stepId"] = "s";
  EXPECT_EQ(laneOf(extraRef), Lane::conflict);
  Json missingRef = dispatchEvent();
  missingRef["refs"].erase("toolCallId");
  EXPECT_EQ(laneOf(missingRef), Lane::conflict);
  Json parents = dispatchEvent();
  parents["refs"]["parentToolCallId"] = "exec-call";
  parents["refs"]["parentOperationId"] = "toolop_exec";
  EXPECT_EQ(laneOf(parents), Lane::tool_dispatch);
  EXPECT_EQ(decodeRuntimeEvent(parents).refParentOperationId,
            std::optional<std::string>("toolop_exec"));
  Json halfParents = dispatchEvent();
  halfParents["refs"]["parentToolCallId"] = "exec-call";
  EXPECT_EQ(laneOf(halfParents), Lane::conflict);
}

TEST(RuntimeEventLane, RecoveryFactEnvelopes) {
  for (Json (*make)() : {reconcileEvent, +[] { return decisionEvent(false); }}) {
    Json content = make();
    content["content"] = {{"kind", "text"}, {"text", "x"}};
    EXPECT_EQ(laneOf(content), Lane::conflict);
    Json role = make();
    role["role"] = "tool";
    EXPECT_EQ(laneOf(role), Lane::conflict);
    Json author = make();
    author["author"] = "host";
    EXPECT_EQ(laneOf(author), Lane::conflict);
    Json extraAction = make();
    extraAction["actions"]["stateDelta"] = Json::object();
    EXPECT_EQ(laneOf(extraAction), Lane::conflict);
    Json parents = make();
    parents["refs"]["parentToolCallId"] = "exec-call";
    parents["refs"]["parentOperationId"] = "toolop_exec";
    EXPECT_EQ(laneOf(parents), Lane::conflict);
    Json noRefs = make();
    noRefs.erase("refs");
    EXPECT_EQ(laneOf(noRefs), Lane::conflict);
  }
}

// toolDispatch.fileEvidence (this runtime's spec-i extension)

Json dispatchWithEvidence() {
  Json e = dispatchEvent();
  e["actions"]["toolDispatch"]["fileEvidence"] = {
      {"kind", "file_state_v1"},
      {"version", 1},
      {"workspaceIdentity", "workspace:v1:123e4567-e89b-42d3-a456-426614174000"},
      {"targetPath", "src/notes.txt"},
      {"before", {{"exists", false}}},
      {"expectedAfter", {{"exists", true}, {"size", 5}, {"sha256", kDigestA}}},
      {"transformVersion", "write_v1"},
      {"result", {{"ok", true}}}};
  return e;
}

TEST(RuntimeEventFileEvidence, DecodesIntoTheDispatchView) {
  const RuntimeEvent ev = decodeRuntimeEvent(dispatchWithEvidence());
  EXPECT_EQ(ev.lane, Lane::tool_dispatch);
  ASSERT_TRUE(ev.toolDispatch && ev.toolDispatch->fileEvidence);
  const FileEvidence& fe = *ev.toolDispatch->fileEvidence;
  EXPECT_EQ(fe.targetPath, "src/notes.txt");
  EXPECT_FALSE(fe.before.exists);
  EXPECT_TRUE(fe.expectedAfter.exists);
  EXPECT_EQ(fe.expectedAfter.size, 5);
  EXPECT_EQ(fe.expectedAfter.sha256, kDigestA);
  EXPECT_EQ(fe.transformVersion, "write_v1");
  const RuntimeEvent back = decodeRuntimeEvent(parseJson(encodeRuntimeEvent(ev)));
  EXPECT_EQ(back, ev);
}

TEST(RuntimeEventFileEvidence, ClosedShapeAndReconcileOnly) {
  const std::string fe = "$.actions.toolDispatch.fileEvidence";
  Json notReconcile = dispatchWithEvidence();
  notReconcile["actions"]["toolDispatch"]["recoveryMode"] = "never_auto_retry";
  expectDecodeError(notReconcile, "event_decode_error", fe);
  Json extra = dispatchWithEvidence();
  extra["actions"]["toolDispatch"]["fileEvidence"]["bogus"] = 1;
  expectDecodeError(extra, "unknown_key", fe + ".bogus");
  Json absentWithSize = dispatchWithEvidence();
  absentWithSize["actions"]["toolDispatch"]["fileEvidence"]["before"]["size"] = 0;
  expectDecodeError(absentWithSize, "unknown_key", fe + ".before.size");
  Json badPath = dispatchWithEvidence();
  badPath["actions"]["toolDispatch"]["fileEvidence"]["targetPath"] = "../etc/passwd";
  expectDecodeError(badPath, "event_decode_error", fe + ".targetPath");
  Json badWorkspace = dispatchWithEvidence();
  badWorkspace["actions"]["toolDispatch"]["fileEvidence"]["workspaceIdentity"] = "workspace:v1:x";
  expectDecodeError(badWorkspace, "event_decode_error", fe + ".workspaceIdentity");
  Json badVersion = dispatchWithEvidence();
  badVersion["actions"]["toolDispatch"]["fileEvidence"]["version"] = 2;
  expectDecodeError(badVersion, "invalid_enum", fe + ".version");
  Json badDigest = dispatchWithEvidence();
  badDigest["actions"]["toolDispatch"]["fileEvidence"]["expectedAfter"]["sha256"] = "abc";
  expectDecodeError(badDigest, "invalid_digest", fe + ".expectedAfter.sha256");
  Json badTransform = dispatchWithEvidence();
  badTransform["actions"]["toolDispatch"]["fileEvidence"]["transformVersion"] = "patch_v1";
  expectDecodeError(badTransform, "invalid_enum", fe + ".transformVersion");
}

// Losslessness (a.6)
// -------------------------------------------------------------------------------

TEST(RuntimeEventLossless, DecodeOfParsedEncodingEqualsDecoded) {
  Json numbers = callEvent();
  numbers["content"]["args"] = {{"big", int64_t{9007199254740993}},
                                {"float", 1.0},
                                {"neg0", -0.0},
                                {"tiny", 5e-324},
                                {"huge", 1e21},
                                {"u", std::numeric_limits<uint64_t>::max()},
                                {"__proto__", {{"admin", true}}},
                                {"s", "\xF0\x9F\x98\x80\n\x01"}};
  for (const Json& raw :
       {userEvent(), callEvent(), dispatchEvent(), responseEvent(), reconcileEvent(),
        decisionEvent(true), decisionEvent(false), continuationStartEvent(), richOrdinaryEvent(),
        textWithExtras(), closureEvent(), numbers}) {
    const RuntimeEvent ev = decodeRuntimeEvent(raw);
    const std::string bytes = encodeRuntimeEvent(ev);
    const RuntimeEvent back = decodeRuntimeEvent(parseJson(bytes));
    EXPECT_EQ(back, ev) << bytes;
    EXPECT_EQ(encodeRuntimeEvent(back), bytes);
    EXPECT_EQ(back.lane, ev.lane);
    EXPECT_EQ(back.callArgsHash, ev.callArgsHash);
  }
}

TEST(RuntimeEventLossless, NumbersAreNormalisedToWhatJavaScriptSees) {
  Json e = callEvent();
  e["content"]["args"] = {{"i", int64_t{9007199254740993}}, {"f", 2.0}};
  const RuntimeEvent ev = decodeRuntimeEvent(e);
  EXPECT_TRUE(ev.json["content"]["args"]["f"].is_number_integer());
  EXPECT_TRUE(ev.json["content"]["args"]["i"].is_number_float());
  EXPECT_EQ(stableJson(ev.json["content"]["args"]), R"({"f":2,"i":9007199254740992})");
}

// Lists
// --------------------------------------------------------------------------------------------

TEST(RuntimeEventList, JsonArrayAndJsonLines) {
  const std::string array =
      "[" + userEvent().dump() + ",\n" + callEvent().dump() + "," + dispatchEvent().dump() + "]";
  const auto fromArray = decodeRuntimeEventList(array);
  ASSERT_EQ(fromArray.size(), 3u);
  EXPECT_EQ(fromArray[2].lane, Lane::tool_dispatch);
  const std::string lines =
      userEvent().dump() + "\n\n" + callEvent().dump() + "\r\n" + dispatchEvent().dump() + "\n";
  const auto fromLines = decodeRuntimeEventList(lines);
  ASSERT_EQ(fromLines.size(), 3u);
  EXPECT_EQ(fromLines[1], fromArray[1]);
  EXPECT_TRUE(decodeRuntimeEventList("").empty());
  EXPECT_TRUE(decodeRuntimeEventList("  \n").empty());
  EXPECT_TRUE(decodeRuntimeEventList("[]").empty());
}

TEST(RuntimeEventList, ErrorNamesTheIndexAndPath) {
  Json bad = callEvent();
  bad["id"] = "";
  const std::string array = "[" + userEvent().dump() + "," + bad.dump() + "]";
  try {
    decodeRuntimeEventList(array);
    FAIL() << "accepted";
  } catch (const EventListError& e) {
    EXPECT_EQ(e.code(), "empty_id");
    EXPECT_EQ(e.index(), std::optional<size_t>(1));
    EXPECT_EQ(e.path(), "[1]$.id");
  }
  const std::string lines = userEvent().dump() + "\n\n" + userEvent().dump() + "\n{oops\n";
  try {
    decodeRuntimeEventList(lines);
    FAIL() << "accepted";
  } catch (const EventListError& e) {
    EXPECT_EQ(e.code(), "invalid_json");
    EXPECT_EQ(e.index(), std::optional<size_t>(2));
  }
  try {
    decodeRuntimeEventList("[{\"id\":1},");
    FAIL() << "accepted";
  } catch (const EventListError& e) {
    EXPECT_EQ(e.code(), "invalid_json");
    EXPECT_EQ(e.index(), std::nullopt);
  }
  try {
    decodeRuntimeEventList("[1]");
    FAIL() << "accepted";
  } catch (const EventListError& e) {
    EXPECT_EQ(e.code(), "wrong_type");
    EXPECT_EQ(e.path(), "[0]$");
  }
}

TEST(RuntimeEventToString, EnumsSpellTheContractValues) {
  EXPECT_EQ(toString(Role::model), "model");
  EXPECT_EQ(toString(Author::host), "host");
  EXPECT_EQ(toString(EventStatus::cancelled), "cancelled");
  EXPECT_EQ(toString(ContentKind::function_response), "function_response");
  EXPECT_EQ(toString(ContentKind::none), "none");
  EXPECT_EQ(toString(Lane::recovery_decision), "recovery_decision");
  EXPECT_EQ(toString(Lane::conflict), "conflict");
}

// #22: 100,000 nested levels crashed every reader (unbounded recursion in the decoder's
// normalisation and the args hash's strict-JSON check). Expected: json_too_deep, no crash.
std::string nested(size_t depth, const std::string& leaf = "1") {
  return std::string(depth, '[') + leaf + std::string(depth, ']');
}

// The stable code f throws, or "accepted".
template <typename F>
std::string codeOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "accepted";
}

TEST(JsonDepthLimit, DeepTextIsRefusedByEveryReader) {
  const std::string deep = nested(100000);
  EXPECT_EQ(codeOf([&] { parseJson(deep); }), "json_too_deep");
  EXPECT_EQ(codeOf([&] { decodeRuntimeEventList(deep); }), "json_too_deep");
  EXPECT_EQ(codeOf([&] { decodeRuntimeEventList(deep + "\n"); }), "json_too_deep");
  // Exactly at the limit parses; one more level does not. Brackets inside strings do not count.
  EXPECT_NO_THROW(parseJson(nested(kMaxJsonDepth)));
  EXPECT_EQ(codeOf([&] { parseJson(nested(kMaxJsonDepth + 1)); }), "json_too_deep");
  EXPECT_NO_THROW(parseJson(nested(kMaxJsonDepth, "\"[[[[\\\"[[\"")));
}

TEST(JsonDepthLimit, DeepValuesBuiltInMemoryAreRefusedByTheWalkers) {
  Json v = 1;
  // 1,000 levels: past the limit, yet shallow enough for nlohmann's own recursive copy.
  for (size_t i = 0; i < 1000; ++i) v = Json::array({std::move(v)});
  EXPECT_EQ(codeOf([&] { stableJson(v); }), "json_too_deep");
  EXPECT_EQ(codeOf([&] { canonicalArgsHash("Bash", v); }), "json_too_deep");
  Json ev = {{"args", v}};
  EXPECT_EQ(codeOf([&] { decodeRuntimeEvent(ev); }), "json_too_deep");
}

TEST(JsonStrictText, ANulByteEndsNothing) {
  // nlohmann stops at a NUL byte; "{}\0garbage" was read as {}.
  try {
    parseJson(std::string("{}\0garbage", 10));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "invalid_json");
  }
}

}  // namespace
}  // namespace crashsim
