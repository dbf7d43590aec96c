// claim_model.cpp — the continuation claim as data (spec e.8, f.7): its JSON form, the
// continuation-start event it determines, and the decoder rules a candidate claim and its start
// event must meet (validateClaim, validateStartEvent). No store access.
#include <algorithm>
#include <iterator>
#include <set>

#include "continuation/internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {

using namespace continuation_detail;
using store_detail::Connection;

namespace {

[[noreturn]] void invalidClaim(const std::string& msg) {
  throw Error(code::continuation_claim_invalid, msg);
}

Json expectedSourceV2(const ContinuationClaim& claim) {
  PrefixIdentity src = claim.sourceIdentity();
  return Json{{"protocol", std::string(code::continuation_source_v2)},
              {"claimId", claim.claimId},
              {"boundaryDigest", claim.boundaryDigest},
              {"sourceInvocationId", src.invocationId},
              {"sourceRunId", src.runId},
              {"sourceTurnId", src.turnId},
              {"sourceRuntimeEventHighWater", claim.sourceHighWater()},
              {"sourcePrefixDigest", claim.sourcePrefixDigest()},
              {"replayManifestDigest", claim.boundary.manifestDigest}};
}

Json expectedStartJson(const ContinuationClaim& claim, std::string_view provenance) {
  PrefixIdentity src = claim.sourceIdentity();
  return Json{{"protocol", std::string(code::continuation_start_v2)},
              {"provenance", std::string(provenance)},
              {"claimId", claim.claimId},
              {"boundaryDigest", claim.boundaryDigest},
              {"immediateSource",
               {{"sessionId", src.sessionId},
                {"invocationId", src.invocationId},
                {"runId", src.runId},
                {"turnId", src.turnId},
                {"highWater", claim.sourceHighWater()},
                {"prefixDigest", claim.sourcePrefixDigest()}}},
              {"replayManifestDigest", claim.boundary.manifestDigest},
              {"providerProjectionVersion", claim.providerProjectionVersion},
              {"providerReplayDigest", claim.providerReplayDigest}};
}

}  // namespace

// ---------------------------------------------------------------------------------------

Json ContinuationClaim::toJson() const {
  return Json{{"protocol", "continuation_claim_v1"},
              {"claimId", claimId},
              {"boundaryDigest", boundaryDigest},
              {"boundary", boundary.toJson()},
              {"providerProjectionVersion", providerProjectionVersion},
              {"providerReplayDigest", providerReplayDigest},
              {"target", identityJson(target)},
              {"targetRunHeader", targetRunHeader.toJson()},
              {"claimedAt", claimedAt}};
}

ContinuationClaim ContinuationClaim::fromJson(const Json& j) {
  static constexpr std::string_view kKeys[] = {"protocol",
                                               "claimId",
                                               "boundaryDigest",
                                               "boundary",
                                               "providerProjectionVersion",
                                               "providerReplayDigest",
                                               "target",
                                               "targetRunHeader",
                                               "claimedAt"};
  if (!j.is_object()) invalidClaim("continuation claim must be an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(std::begin(kKeys), std::end(kKeys), it.key()) == std::end(kKeys))
      invalidClaim("continuation claim has an unknown key " + it.key());
  }
  for (std::string_view k : kKeys) {
    if (!j.contains(k)) invalidClaim("continuation claim lacks " + std::string(k));
  }
  if (j["protocol"] != "continuation_claim_v1")
    invalidClaim("continuation claim protocol must be continuation_claim_v1");
  auto str = [&](const char* k) {
    if (!j[k].is_string())
      invalidClaim(std::string("continuation claim ") + k + " must be a string");
    return j[k].get<std::string>();
  };
  if (!j["providerProjectionVersion"].is_number_integer() || !j["claimedAt"].is_number())
    invalidClaim("continuation claim providerProjectionVersion/claimedAt must be numbers");
  ContinuationClaim c;
  c.claimId = str("claimId");
  c.boundaryDigest = str("boundaryDigest");
  c.providerReplayDigest = str("providerReplayDigest");
  c.providerProjectionVersion = j["providerProjectionVersion"].get<int>();
  c.claimedAt = j["claimedAt"].get<double>();
  try {
    c.boundary = BoundaryCursor::fromJson(j["boundary"]);
    c.target = identityFromJson(j["target"]);
    c.targetRunHeader = RunHeader::fromJson(j["targetRunHeader"]);
  } catch (const Error& e) {
    if (e.code() == code::continuation_claim_invalid) throw;
    invalidClaim(std::string("continuation claim: ") + e.what());
  }
  return c;
}

PrefixIdentity ContinuationClaim::sourceIdentity() const {
  if (boundary.segments.empty()) invalidClaim("continuation claim boundary has no segments");
  return identityFromJson(boundary.segments.back()["identity"]);
}
int64_t ContinuationClaim::sourceHighWater() const {
  const Json& pos = boundary.segments.back()["position"];
  if (!pos.contains("lastEventSeq") || !pos["lastEventSeq"].is_number_integer()) {
    invalidClaim("continuation claim boundary position lacks lastEventSeq");
  }
  return pos["lastEventSeq"].get<int64_t>();
}
std::string ContinuationClaim::sourcePrefixDigest() const {
  return boundary.segments.back()["prefixDigest"].get<std::string>();
}

RuntimeEvent buildContinuationStartEvent(const ContinuationClaim& claim, const std::string& eventId,
                                         double ts, std::string_view provenance,
                                         bool protocolMarker) {
  Json actions = Json{{"continuationStart", expectedStartJson(claim, provenance)}};
  if (protocolMarker) {
    actions["runtimeProtocol"] = Json{{"toolBoundary", std::string(code::t1_after_preflight_v1)}};
  }
  Json e = Json{{"id", eventId},
                {"sessionId", claim.target.sessionId},
                {"invocationId", claim.target.invocationId},
                {"runId", claim.target.runId},
                {"turnId", claim.target.turnId},
                {"ts", ts},
                {"partial", false},
                {"role", "system"},
                {"author", "system"},
                {"actions", actions}};
  return decodeRuntimeEvent(e);
}

namespace continuation_detail {

bool isClaimDigest(const std::string& s) {
  if (s.size() != 71 || s.rfind("sha256:", 0) != 0) return false;
  for (size_t i = 7; i < s.size(); ++i) {
    char ch = s[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  return true;
}

void validateClaim(const ContinuationClaim& claim) {
  if (claim.claimId.empty()) invalidClaim("continuation claim id is empty");
  if (claim.boundary.segments.empty()) invalidClaim("continuation claim boundary is empty");
  if (manifestDigest(claim.boundary.segments) != claim.boundary.manifestDigest) {
    invalidClaim("continuation claim boundary manifest digest mismatch");
  }
  if (claim.boundaryDigest != claim.boundary.manifestDigest) {
    invalidClaim("continuation claim boundaryDigest differs from its boundary manifest");
  }
  if (claim.providerProjectionVersion != kProviderProjectionVersion) {
    invalidClaim("continuation claim provider projection version must be 1");
  }
  if (!isClaimDigest(claim.providerReplayDigest)) invalidClaim("invalid providerReplayDigest");
  std::set<std::string> runs, invocations, turns;
  for (const Json& seg : claim.boundary.segments) {
    PrefixIdentity id = identityFromJson(seg["identity"]);
    if (id.sessionId != claim.target.sessionId) {
      invalidClaim("Continuation claim target session differs from its source");
    }
    runs.insert(id.runId);
    invocations.insert(id.invocationId);
    turns.insert(id.turnId);
  }
  const PrefixIdentity& t = claim.target;
  if (t.invocationId.empty() || t.runId.empty() || t.turnId.empty()) {
    invalidClaim("continuation claim target ids must be non-empty");
  }
  if (runs.count(t.runId)) invalidClaim("Continuation claim target runId reuses source identity");
  if (invocations.count(t.invocationId)) {
    invalidClaim("Continuation claim target invocationId reuses source identity");
  }
  if (turns.count(t.turnId))
    invalidClaim("Continuation claim target turnId reuses source identity");
  if (claim.sourceHighWater() <= 0)
    invalidClaim("continuation claim source high-water must be > 0");
  validateClaimTarget(claim);
}

// The target-header rules of validateClaim (they read only the boundary's last segment).
void validateClaimTarget(const ContinuationClaim& claim) {
  const PrefixIdentity& t = claim.target;
  const RunHeader& h = claim.targetRunHeader;
  if (!sameIdentity(identityOf(h), t)) invalidClaim("continuation target header ids differ");
  if (h.status != code::created) invalidClaim("continuation target header must be created");
  if (h.createdAt != claim.claimedAt || h.updatedAt != claim.claimedAt) {
    invalidClaim("continuation target header times must equal claimedAt");
  }
  if (h.completedAt || h.failureClass || h.failureMessage || h.abortSource) {
    invalidClaim("continuation target header must not be terminal");
  }
  PrefixIdentity src = claim.sourceIdentity();
  if (h.parentRunId != src.runId || h.parentTurnId != src.turnId) {
    invalidClaim("continuation target header parent must be the immediate source");
  }
  if (!h.continuationSource || *h.continuationSource != expectedSourceV2(claim)) {
    invalidClaim("continuation target header needs the matching continuation_source_v2");
  }
}

void validateStartEvent(const ContinuationClaim& claim, const RuntimeEvent& e,
                        std::string_view startKind) {
  auto bad = [](const std::string& why) {
    throw Error(code::continuation_start_invalid,
                "Invalid continuation-start authority event: " + why);
  };
  if (!sameIdentity(PrefixIdentity{e.sessionId, e.invocationId, e.runId, e.turnId}, claim.target)) {
    bad("target identity");
  }
  if (e.ts < claim.claimedAt) bad("ts before claimedAt");
  if (e.partial) bad("partial");
  if (e.role != Role::system || e.author != Author::system) bad("role/author must be system");
  if (e.status) bad("status");
  if (e.contentKind != ContentKind::none || e.json.contains("content")) bad("content");
  if (!e.json.contains("actions") || !e.json["actions"].is_object()) bad("actions");
  const Json& actions = e.json["actions"];
  for (auto it = actions.begin(); it != actions.end(); ++it) {
    if (it.key() != "continuationStart" && it.key() != "runtimeProtocol") bad("action " + it.key());
  }
  if (!actions.contains("continuationStart")) bad("no continuationStart");
  if (actions.contains("runtimeProtocol")) {
    if (startKind != code::runtime_admission) bad("protocol marker on a repair start");
    if (actions["runtimeProtocol"] !=
        Json{{"toolBoundary", std::string(code::t1_after_preflight_v1)}}) {
      bad("protocol marker value");
    }
  }
  if (actions["continuationStart"] != expectedStartJson(claim, startKind)) {
    bad("continuationStart does not match the claim");
  }
}

}  // namespace continuation_detail
}  // namespace crashsim
