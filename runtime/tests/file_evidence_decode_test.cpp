// file_evidence_decode_test.cpp — the optional actions.toolDispatch.fileEvidence extension
// (file_state_v1, spec i): exact shape, closed key sets, only on reconcile-mode dispatches,
// typed view, losslessness.
#include <gtest/gtest.h>

#include <string>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/runtime_event.h"
#include "store_test_util.h"

namespace crashsim {
namespace {

using Ptr = Json::json_pointer;

using testutil::kDigestA;
using testutil::kDigestB;
const std::string kWorkspace = "workspace:v1:3f2b8c1e-9d4a-4c7e-8b1f-0a2d3e4f5a6b";

Json evidence() {
  return Json{{"kind", "file_state_v1"},
              {"version", 1},
              {"workspaceIdentity", kWorkspace},
              {"targetPath", "src/config.json"},
              {"before", {{"exists", true}, {"size", 12}, {"sha256", kDigestA}}},
              {"expectedAfter", {{"exists", true}, {"size", 14}, {"sha256", kDigestB}}},
              {"transformVersion", "write_v1"},
              {"result", {{"path", "src/config.json"}, {"bytesWritten", 14}}}};
}

Json dispatchWith(const Json& ev, const char* mode = "reconcile") {
  Json e = Json{{"id", "op_dispatch"}, {"invocationId", "inv-1"}, {"runId", "run-1"},
                {"sessionId", "s-1"},  {"turnId", "turn-1"},      {"ts", 1700000000000},
                {"partial", false},    {"role", "system"},        {"author", "system"}};
  e["actions"] = {{"toolDispatch",
                   {{"protocol", "t1_after_preflight_v1"},
                    {"operationId", "toolop_1"},
                    {"providerToolCallId", "call-1"},
                    {"toolName", "Write"},
                    {"canonicalArgsHash", kDigestA},
                    {"recoveryMode", mode},
                    {"fileEvidence", ev}}}};
  e["refs"] = {{"operationId", "toolop_1"}, {"toolCallId", "call-1"}};
  return e;
}

const std::string kEv = "/actions/toolDispatch/fileEvidence";

// Expects decode to fail with `code` at JSON path `path`.
void expectRejected(const Json& event, std::string_view code, const std::string& path) {
  try {
    decodeRuntimeEvent(event);
    ADD_FAILURE() << "decoded, expected " << code << " at " << path;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.path(), path) << e.what();
  }
}

TEST(FileEvidenceDecode, ValidEvidenceDecodesIntoTheTypedViewOnAToolDispatchLane) {
  const RuntimeEvent d = decodeRuntimeEvent(dispatchWith(evidence()));
  EXPECT_EQ(d.lane, Lane::tool_dispatch);
  ASSERT_TRUE(d.toolDispatch);
  ASSERT_TRUE(d.toolDispatch->fileEvidence);
  const FileEvidence& f = *d.toolDispatch->fileEvidence;
  EXPECT_EQ(f.kind, "file_state_v1");
  EXPECT_EQ(f.workspaceIdentity, kWorkspace);
  EXPECT_EQ(f.targetPath, "src/config.json");
  EXPECT_EQ(f.before, (FileStateEvidence{true, 12, kDigestA}));
  EXPECT_EQ(f.expectedAfter, (FileStateEvidence{true, 14, kDigestB}));
  EXPECT_EQ(f.transformVersion, "write_v1");
  EXPECT_EQ(f.result, (Json{{"path", "src/config.json"}, {"bytesWritten", 14}}));
}

TEST(FileEvidenceDecode, AbsentBeforeStateAndEditTransform) {
  Json ev = evidence();
  ev["before"] = {{"exists", false}};
  ev["transformVersion"] = "edit_v1";
  ev["result"] = {{"path", "src/config.json"}, {"replacements", 1}};
  const RuntimeEvent d = decodeRuntimeEvent(dispatchWith(ev));
  EXPECT_EQ(d.toolDispatch->fileEvidence->before, FileStateEvidence{});
  EXPECT_EQ(d.toolDispatch->fileEvidence->transformVersion, "edit_v1");
}

TEST(FileEvidenceDecode, DispatchWithoutEvidenceHasNoTypedView) {
  Json e = dispatchWith(evidence());
  e["actions"]["toolDispatch"].erase("fileEvidence");
  EXPECT_FALSE(decodeRuntimeEvent(e).toolDispatch->fileEvidence.has_value());
}

TEST(FileEvidenceDecode, LosslessRoundTripKeepsTheEvidenceBytes) {
  Json ev = evidence();
  ev["result"] = {{"nested", {{"z", 1.5}, {"a", Json::array({"x", nullptr, true})}}}};
  const RuntimeEvent d = decodeRuntimeEvent(dispatchWith(ev));
  const RuntimeEvent again = decodeRuntimeEvent(Json::parse(encodeRuntimeEvent(d)));
  EXPECT_EQ(again, d);
  EXPECT_EQ(again.toolDispatch->fileEvidence, d.toolDispatch->fileEvidence);
  EXPECT_NE(encodeRuntimeEvent(d).find("\"fileEvidence\":{"), std::string::npos);
}

TEST(FileEvidenceDecode, OnlyAllowedOnReconcileModeDispatches) {
  for (const char* mode :
       {"replay_safe", "idempotent", "reattach", "outcome_unknown", "never_auto_retry"}) {
    SCOPED_TRACE(mode);
    expectRejected(dispatchWith(evidence(), mode), code::event_decode_error,
                   "$.actions.toolDispatch.fileEvidence");
  }
}

TEST(FileEvidenceDecode, ClosedKeySetsAtEveryLevel) {
  for (const std::string& at : {kEv, kEv + "/before", kEv + "/expectedAfter"}) {
    Json e = dispatchWith(evidence());
    e[Ptr(at)]["bogus"] = 1;
    std::string path = "$" + at + "/bogus";
    for (auto& c : path) c = c == '/' ? '.' : c;
    expectRejected(e, code::unknown_key, path);
  }
  // An absent state carries only `exists`.
  Json e = dispatchWith(evidence());
  e[Ptr(kEv + "/before")] = {{"exists", false}, {"size", 0}};
  expectRejected(e, code::unknown_key, "$.actions.toolDispatch.fileEvidence.before.size");
}

TEST(FileEvidenceDecode, EveryRequiredKeyIsRequired) {
  for (const char* key : {"kind", "version", "workspaceIdentity", "targetPath", "before",
                          "expectedAfter", "transformVersion", "result"}) {
    SCOPED_TRACE(key);
    Json e = dispatchWith(evidence());
    e[Ptr(kEv)].erase(key);
    expectRejected(e, code::missing_field,
                   std::string("$.actions.toolDispatch.fileEvidence.") + key);
  }
  for (const char* key : {"exists", "size", "sha256"}) {
    SCOPED_TRACE(key);
    Json e = dispatchWith(evidence());
    e[Ptr(kEv + "/expectedAfter")].erase(key);
    expectRejected(e, code::missing_field,
                   std::string("$.actions.toolDispatch.fileEvidence.expectedAfter.") + key);
  }
}

TEST(FileEvidenceDecode, LiteralKindVersionAndTransformVersion) {
  const std::string base = "$.actions.toolDispatch.fileEvidence.";
  Json e = dispatchWith(evidence());
  e[Ptr(kEv + "/kind")] = "file_state_v2";
  expectRejected(e, code::invalid_enum, base + "kind");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/version")] = 2;
  expectRejected(e, code::invalid_enum, base + "version");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/version")] = "1";
  expectRejected(e, code::wrong_type, base + "version");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/transformVersion")] = "write_v2";
  expectRejected(e, code::invalid_enum, base + "transformVersion");
}

TEST(FileEvidenceDecode, WorkspaceIdentityMustBeAWorkspaceV1Uuid) {
  for (const char* bad :
       {"workspace:v2:3f2b8c1e-9d4a-4c7e-8b1f-0a2d3e4f5a6b", "3f2b8c1e-9d4a-4c7e-8b1f-0a2d3e4f5a6b",
        "workspace:v1:3f2b8c1e-9d4a-9c7e-8b1f-0a2d3e4f5a6b",  // version 9
        "workspace:v1:3f2b8c1e-9d4a-4c7e-7b1f-0a2d3e4f5a6b",  // variant 7
        "workspace:v1:3f2b8c1e9d4a-4c7e-8b1f-0a2d3e4f5a6b0", "workspace:v1:"}) {
    SCOPED_TRACE(bad);
    Json e = dispatchWith(evidence());
    e[Ptr(kEv + "/workspaceIdentity")] = bad;
    expectRejected(e, code::event_decode_error,
                   "$.actions.toolDispatch.fileEvidence.workspaceIdentity");
  }
  Json upper = dispatchWith(evidence());
  upper[Ptr(kEv + "/workspaceIdentity")] = "workspace:v1:3F2B8C1E-9D4A-4C7E-8B1F-0A2D3E4F5A6B";
  EXPECT_NO_THROW(decodeRuntimeEvent(upper));
  Json empty = dispatchWith(evidence());
  empty[Ptr(kEv + "/workspaceIdentity")] = "";
  expectRejected(empty, code::empty_id, "$.actions.toolDispatch.fileEvidence.workspaceIdentity");
}

TEST(FileEvidenceDecode, TargetPathMustBeCanonicalRelativeInsideTheWorkspace) {
  for (const char* bad : {"../escape.txt", "a/../../b", "/etc/passwd", "./a.txt", "a//b", "a/",
                          "a\\b", "C:/x", "a/./b"}) {
    SCOPED_TRACE(bad);
    Json e = dispatchWith(evidence());
    e[Ptr(kEv + "/targetPath")] = bad;
    expectRejected(e, code::event_decode_error, "$.actions.toolDispatch.fileEvidence.targetPath");
  }
  Json empty = dispatchWith(evidence());
  empty[Ptr(kEv + "/targetPath")] = "";
  expectRejected(empty, code::empty_id, "$.actions.toolDispatch.fileEvidence.targetPath");
}

TEST(FileEvidenceDecode, FileStateSizeIsASafeIntegerAndDigestIsSha256) {
  const std::string p = "$.actions.toolDispatch.fileEvidence.before.";
  Json e = dispatchWith(evidence());
  e[Ptr(kEv + "/before/size")] = -1;
  expectRejected(e, code::invalid_integer, p + "size");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/before/size")] = 1.5;
  expectRejected(e, code::invalid_integer, p + "size");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/before/size")] = 9007199254740992.0;  // 2^53: not safe
  expectRejected(e, code::invalid_integer, p + "size");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/before/size")] = "12";
  expectRejected(e, code::wrong_type, p + "size");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/before/sha256")] = "sha256:" + std::string(64, 'A');
  expectRejected(e, code::invalid_digest, p + "sha256");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/before/exists")] = "yes";
  expectRejected(e, code::wrong_type, p + "exists");
  e = dispatchWith(evidence());
  e[Ptr(kEv + "/before")] = Json::array();
  expectRejected(e, code::wrong_type, "$.actions.toolDispatch.fileEvidence.before");
}

TEST(FileEvidenceDecode, ResultMayBeAnyStrictJsonButMustBePresent) {
  for (const Json& r : {Json(nullptr), Json(0), Json("text"), Json::array(), Json::object()}) {
    Json e = dispatchWith(evidence());
    e[Ptr(kEv + "/result")] = r;
    EXPECT_EQ(decodeRuntimeEvent(e).toolDispatch->fileEvidence->result, r);
  }
  Json e = dispatchWith(evidence());
  e[Ptr(kEv + "/result")] = Json{{"bad", std::string("\xff")}};
  expectRejected(e, code::not_strict_json, "$.actions.toolDispatch.fileEvidence.result.bad");
}

TEST(FileEvidenceDecode, EvidenceMustBeAnObject) {
  expectRejected(dispatchWith(Json("evidence")), code::wrong_type,
                 "$.actions.toolDispatch.fileEvidence");
}

}  // namespace
}  // namespace crashsim
