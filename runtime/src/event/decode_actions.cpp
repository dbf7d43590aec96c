// decode_actions.cpp — the RuntimeEvent decoder's actions section (spec a.3): tool dispatch and
// its file evidence (file_state_v1, spec i), tool recovery facts, continuation-start, token
// usage, permission decisions and the run's protocol marker; fills the event's typed views.
#include <string>

#include "event/decode_primitives.h"

namespace crashsim::decode {
namespace {

// ---- actions (a.3) --------------------------------------------------------------------------

void decodeRequestIdOnly(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"requestId"}, {});
  reqString(o, "requestId", path, true);
}

// "workspace:v1:<uuid>" with the marker UUID rule of spec h (case-insensitive).
bool isWorkspaceIdentity(std::string_view s) {
  constexpr std::string_view kPrefix = "workspace:v1:";
  if (!s.starts_with(kPrefix)) return false;
  const std::string_view u = s.substr(kPrefix.size());
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(u[i])));
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  const char version = u[14];
  const char variant = static_cast<char>(std::tolower(static_cast<unsigned char>(u[19])));
  return version >= '1' && version <= '8' &&
         (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

// File state identity of file_state_v1 evidence: {exists:false} | {exists:true, size, sha256}.
FileStateEvidence decodeFileStateEvidence(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  const Json* existsV = field(o, "exists");
  if (!existsV) fail(code::missing_field, path / "exists", "missing required field");
  if (!existsV->is_boolean()) fail(code::wrong_type, path / "exists", "must be a boolean");
  FileStateEvidence s;
  s.exists = existsV->get<bool>();
  if (!s.exists) {
    checkKeys(o, path, {"exists"}, {});
    return s;
  }
  checkKeys(o, path, {"exists", "size", "sha256"}, {});
  s.size = reqSafeInteger(o.at("size"), path / "size", 0);
  s.sha256 = reqDigest(o, "sha256", path);
  return s;
}

constexpr std::array<std::string_view, 2> kTransformVersions{"write_v1", "edit_v1"};

// actions.toolDispatch.fileEvidence (file_state_v1, spec i): closed key sets at every level.
FileEvidence decodeFileEvidence(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path,
            {"kind", "version", "workspaceIdentity", "targetPath", "before", "expectedAfter",
             "transformVersion", "result"},
            {});
  FileEvidence e;
  expectLiteral(o, "kind", path, "file_state_v1");
  e.kind = "file_state_v1";
  const Json& version = o.at("version");
  if (!version.is_number()) fail(code::wrong_type, path / "version", "must be a number");
  if (safeInteger(version) != std::optional<int64_t>(1)) {
    fail(code::invalid_enum, path / "version", "unsupported fileEvidence version");
  }
  e.workspaceIdentity = reqString(o, "workspaceIdentity", path, true);
  if (!isWorkspaceIdentity(e.workspaceIdentity)) {
    fail(code::event_decode_error, path / "workspaceIdentity", "must be workspace:v1:<uuid>");
  }
  e.targetPath = reqString(o, "targetPath", path, true);
  if (!isCanonicalRelativePath(e.targetPath)) {
    fail(code::event_decode_error, path / "targetPath",
         "must be a canonical relative path (no '..', '.', empty segment, absolute path)");
  }
  e.before = decodeFileStateEvidence(o.at("before"), path / "before");
  e.expectedAfter = decodeFileStateEvidence(o.at("expectedAfter"), path / "expectedAfter");
  e.transformVersion = kTransformVersions[enumIndex(o.at("transformVersion"),
                                                    path / "transformVersion", kTransformVersions)];
  e.result = o.at("result");  // any strict JSON (normalised in pass 1)
  return e;
}

ToolDispatch decodeToolDispatch(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path,
            {"protocol", "operationId", "providerToolCallId", "toolName", "canonicalArgsHash",
             "recoveryMode"},
            {"fileEvidence"});
  ToolDispatch d;
  expectLiteral(o, "protocol", path, code::t1_after_preflight_v1);
  d.protocol = std::string(code::t1_after_preflight_v1);
  d.operationId = reqString(o, "operationId", path, true);
  d.providerToolCallId = reqString(o, "providerToolCallId", path, true);
  d.toolName = reqString(o, "toolName", path, true);
  d.canonicalArgsHash = reqString(o, "canonicalArgsHash", path, true);
  d.recoveryMode =
      kRecoveryModes[enumIndex(o.at("recoveryMode"), path / "recoveryMode", kRecoveryModes)];
  if (const Json* ev = field(o, "fileEvidence")) {
    if (d.recoveryMode != code::reconcile) {
      fail(code::event_decode_error, path / "fileEvidence",
           "file evidence is only allowed on a reconcile-mode dispatch");
    }
    d.fileEvidence = decodeFileEvidence(*ev, path / "fileEvidence");
  }
  return d;
}

ToolRecovery decodeToolRecovery(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"kind", "version", "payload"}, {});
  ToolRecovery r{};
  const size_t kind = enumIndex(o.at("kind"), path / "kind", kRecoveryKinds);
  const Json& version = o.at("version");
  if (!version.is_number()) fail(code::wrong_type, path / "version", "must be a number");
  if (safeInteger(version) != std::optional<int64_t>(1)) {
    fail(code::invalid_enum, path / "version", "unsupported toolRecovery version");
  }
  const Path pp = path / "payload";
  const Obj& p = asObject(o.at("payload"), pp);
  if (kind == 0) {
    r.kind = ToolRecovery::Kind::reconcile_result;
    checkKeys(p, pp,
              {"protocol", "operationId", "observation", "observationSchema", "observationDigest"},
              {});
    expectLiteral(p, "protocol", pp, code::tool_reconcile_v1);
    r.operationId = reqString(p, "operationId", pp, true);
    r.observation =
        kObservations[enumIndex(p.at("observation"), pp / "observation", kObservations)];
    expectLiteral(p, "observationSchema", pp, code::state_identity_v1);
    r.observationDigest = reqDigest(p, "observationDigest", pp);
    return r;
  }
  r.kind = ToolRecovery::Kind::recovery_decision;
  const Json* disp = field(p, "disposition");
  if (!disp) fail(code::missing_field, pp / "disposition", "missing required field");
  const size_t d = enumIndex(*disp, pp / "disposition", kDispositions);
  if (d == 0) {
    checkKeys(p, pp,
              {"protocol", "operationId", "disposition", "reasonCode", "outcomeEventId",
               "evidenceEventIds"},
              {});
  } else {
    checkKeys(p, pp, {"protocol", "operationId", "disposition", "reasonCode", "evidenceEventIds"},
              {});
  }
  expectLiteral(p, "protocol", pp, code::tool_recovery_v1);
  r.operationId = reqString(p, "operationId", pp, true);
  r.disposition = kDispositions[d];
  if (d == 0) {
    expectLiteral(p, "reasonCode", pp, code::reconcile_matches_expected_state);
    r.reasonCode = std::string(code::reconcile_matches_expected_state);
    r.outcomeEventId = reqString(p, "outcomeEventId", pp, true);
  } else {
    r.reasonCode = kParkedReasons[enumIndex(p.at("reasonCode"), pp / "reasonCode", kParkedReasons)];
  }
  const Path ep = pp / "evidenceEventIds";
  const Json& ev = p.at("evidenceEventIds");
  if (!ev.is_array()) fail(code::wrong_type, ep, "must be an array");
  if (ev.empty()) fail(code::empty_id, ep, "must be a non-empty array");
  r.evidenceEventIds.reserve(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    const std::string& id = asString(ev[i], ep[i], true);
    if (std::find(r.evidenceEventIds.begin(), r.evidenceEventIds.end(), id) !=
        r.evidenceEventIds.end()) {
      fail(code::event_decode_error, ep[i], "duplicate evidence event id \"" + id + "\"");
    }
    r.evidenceEventIds.push_back(id);
  }
  return r;
}

ContinuationStart decodeContinuationStart(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path,
            {"protocol", "provenance", "claimId", "boundaryDigest", "immediateSource",
             "replayManifestDigest", "providerProjectionVersion", "providerReplayDigest"},
            {});
  ContinuationStart c;
  expectLiteral(o, "protocol", path, code::continuation_start_v2);
  c.provenance = kProvenances[enumIndex(o.at("provenance"), path / "provenance", kProvenances)];
  c.claimId = reqString(o, "claimId", path, true);
  c.boundaryDigest = reqDigest(o, "boundaryDigest", path);
  const Path sp = path / "immediateSource";
  const Obj& s = asObject(o.at("immediateSource"), sp);
  checkKeys(s, sp, {"sessionId", "invocationId", "runId", "turnId", "highWater", "prefixDigest"},
            {});
  c.sourceSessionId = reqString(s, "sessionId", sp, true);
  c.sourceInvocationId = reqString(s, "invocationId", sp, true);
  c.sourceRunId = reqString(s, "runId", sp, true);
  c.sourceTurnId = reqString(s, "turnId", sp, true);
  c.sourceHighWater = reqSafeInteger(s.at("highWater"), sp / "highWater", 1);
  c.sourcePrefixDigest = reqDigest(s, "prefixDigest", sp);
  c.replayManifestDigest = reqDigest(o, "replayManifestDigest", path);
  const Json& ppv = o.at("providerProjectionVersion");
  if (!ppv.is_number()) fail(code::wrong_type, path / "providerProjectionVersion", "must be 1");
  if (safeInteger(ppv) != std::optional<int64_t>(1)) {
    fail(code::invalid_enum, path / "providerProjectionVersion",
         "unsupported provider projection version");
  }
  c.providerProjectionVersion = 1;
  c.providerReplayDigest = reqDigest(o, "providerReplayDigest", path);
  return c;
}

void decodeTokenUsage(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"input", "output"},
            {"cacheHitInput",
             "cacheMissInput",
             "cacheWriteInput",
             "cacheMissInputSource",
             "reasoning",
             "total",
             "rawFinishReason",
             "runtimeSteps",
             "cacheRead",
             "cacheCreation",
             "costUsd",
             "systemPromptHash",
             "contextRemaining",
             "prefixHash",
             "prefixChangeReason",
             "requestShapeHash",
             "requestShapeChangeReason",
             "promptSegments",
             "contextBudget",
             "providerRequestTraceId"});
  reqFiniteNumber(o.at("input"), path / "input");
  reqFiniteNumber(o.at("output"), path / "output");
}

void decodePermissionDecision(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"requestId", "decision"},
            {"rememberForTurn", "reviewer", "rationale", "riskLevel", "toolName"});
  reqString(o, "requestId", path);
  reqString(o, "decision", path, true);
  optBool(o, "rememberForTurn", path);
  optString(o, "toolName", path, true);
}

}  // namespace

void decodeActions(const Json& actions, const Path& path, RuntimeEvent& ev) {
  const Obj& o = asObject(actions, path);
  checkKeys(
      o, path, {},
      {"stateDelta", "artifactDelta", "permissionRequest", "permissionDecision",
       "permissionAnswerAccepted", "permissionClosureAccepted", "userQuestionRequest",
       "userQuestionAnswerAccepted", "transferToAgent", "endInvocation", "tokenUsage",
       "toolDispatch", "toolRecovery", "runtimeProtocol", "continuationStart", "workspaceFact"});
  if (const Json* pc = field(o, "permissionClosureAccepted")) {
    const Path p = path / "permissionClosureAccepted";
    if (o.size() != 1) {
      fail(code::event_decode_error, p, "permissionClosureAccepted must be the only action");
    }
    const Obj& c = asObject(*pc, p);
    checkKeys(c, p, {"requestId", "reason"}, {});
    reqString(c, "requestId", p, true);
    expectLiteral(c, "reason", p, "timed_out");
  }
  optObject(o, "stateDelta", path);
  if (const Json* ad = field(o, "artifactDelta")) {
    const Path p = path / "artifactDelta";
    for (const auto& [k, val] : asObject(*ad, p)) {
      if (!val.is_string() && !val.is_number() && !val.is_boolean()) {
        fail(code::wrong_type, p / k, "must be a string, number or boolean");
      }
    }
  }
  optObject(o, "permissionRequest", path);
  if (const Json* pd = field(o, "permissionDecision")) {
    decodePermissionDecision(*pd, path / "permissionDecision");
  }
  if (const Json* a = field(o, "permissionAnswerAccepted")) {
    decodeRequestIdOnly(*a, path / "permissionAnswerAccepted");
  }
  optObject(o, "userQuestionRequest", path);
  if (const Json* a = field(o, "userQuestionAnswerAccepted")) {
    decodeRequestIdOnly(*a, path / "userQuestionAnswerAccepted");
  }
  optString(o, "transferToAgent", path);
  ev.hasEndInvocation = optBool(o, "endInvocation", path).value_or(false);
  if (const Json* t = field(o, "tokenUsage")) decodeTokenUsage(*t, path / "tokenUsage");
  if (const Json* d = field(o, "toolDispatch")) {
    ev.toolDispatch = decodeToolDispatch(*d, path / "toolDispatch");
  }
  if (const Json* r = field(o, "toolRecovery")) {
    ev.toolRecovery = decodeToolRecovery(*r, path / "toolRecovery");
  }
  if (const Json* m = field(o, "runtimeProtocol")) {
    const Path p = path / "runtimeProtocol";
    const Obj& mo = asObject(*m, p);
    checkKeys(mo, p, {"toolBoundary"}, {});
    expectLiteral(mo, "toolBoundary", p, code::t1_after_preflight_v1);
    ev.runtimeProtocol = std::string(code::t1_after_preflight_v1);
  }
  if (const Json* c = field(o, "continuationStart")) {
    ev.continuationStart = decodeContinuationStart(*c, path / "continuationStart");
    ev.hasContinuationStart = true;
  }
  if (const Json* w = field(o, "workspaceFact")) {
    asObject(*w, path / "workspaceFact");
    ev.hasWorkspaceFact = true;
  }
}

}  // namespace crashsim::decode
