// claims.cpp — the continuation claim authority and the continuation-start writers (spec e.8,
// f.7). Every write is one BEGIN IMMEDIATE transaction on the store's connection.
#include <algorithm>
#include <iterator>
#include <set>

#include "continuation/internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/plant.h"

namespace crashsim {

using namespace continuation_detail;
using store_detail::Connection;
using store_detail::ImmediateTx;

namespace {

[[noreturn]] void invalidClaim(const std::string& msg) {
  throw Error(code::continuation_claim_invalid, msg);
}

bool isDigest(const std::string& s) {
  if (s.size() != 71 || s.rfind("sha256:", 0) != 0) return false;
  for (size_t i = 7; i < s.size(); ++i) {
    char ch = s[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return false;
  }
  return true;
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

namespace {
void validateClaimTarget(const ContinuationClaim& claim);
}  // namespace

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
  if (!isDigest(claim.providerReplayDigest)) invalidClaim("invalid providerReplayDigest");
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

namespace {

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

}  // namespace

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

namespace {

constexpr const char* kClaimColumns =
    "claim_id, source_session_id, source_invocation_id, source_run_id, source_turn_id, "
    "source_event_high_water, source_prefix_digest, boundary_digest, boundary_json, "
    "provider_projection_version, provider_replay_digest, target_session_id, "
    "target_invocation_id, target_run_id, target_turn_id, target_run_header_json, claimed_at, "
    "start_event_id, start_kind, protocol_version";

// The claim row's own columns (everything but boundary_json and the start columns).
void readClaimColumns(store_detail::Stmt& st, ContinuationClaim& cl) {
  cl.claimId = st.text(0);
  cl.boundaryDigest = st.text(7);
  cl.providerProjectionVersion = static_cast<int>(st.int64(9));
  cl.providerReplayDigest = st.text(10);
  cl.target = PrefixIdentity{st.text(11), st.text(12), st.text(13), st.text(14)};
  cl.targetRunHeader = RunHeader::fromJson(parseJson(st.textView(15)));
  cl.claimedAt = st.real(16);
}

ClaimState decodeClaimRow(Connection& c, store_detail::Stmt& st) {
  const std::string claimId = st.text(0);
  auto mismatch = [&](const std::string& why) {
    throw Error(code::continuation_claim_row_mismatch,
                "Continuation claim row/payload identity mismatch for " + claimId + ": " + why);
  };
  ClaimState s;
  ContinuationClaim& cl = s.claim;
  try {
    readClaimColumns(st, cl);
    cl.boundary = BoundaryCursor::fromJson(parseJson(st.text(8)));
    validateClaim(cl);
  } catch (const Error& e) {
    if (e.code() == code::continuation_claim_row_mismatch) throw;
    mismatch(e.what());
  }
  if (st.int64(19) != 1) mismatch("protocol_version");
  PrefixIdentity src = cl.sourceIdentity();
  if (!sameIdentity(src, PrefixIdentity{st.text(1), st.text(2), st.text(3), st.text(4)}) ||
      st.int64(5) != cl.sourceHighWater() || st.text(6) != cl.sourcePrefixDigest()) {
    mismatch("source columns");
  }
  if (stableJson(cl.boundary.toJson()) != st.text(8)) mismatch("boundary_json is not stable JSON");
  if (stableJson(cl.targetRunHeader.toJson()) != st.text(15)) mismatch("target header json");
  s.startEventId = st.optText(17);
  s.startKind = st.optText(18);
  if (s.startEventId.has_value() != s.startKind.has_value()) mismatch("start_event_id/start_kind");
  if (s.startEventId) {
    if (*s.startKind != code::runtime_admission && *s.startKind != code::claim_repair) {
      mismatch("start_kind");
    }
    std::optional<StoredEvent> ev = store_detail::readEventById(c, *s.startEventId);
    if (!ev || ev->eventSeq != 1) mismatch("start event is not target event #1");
    try {
      validateStartEvent(cl, ev->event, *s.startKind);
    } catch (const Error& e) {
      mismatch(e.what());
    }
    s.startEvent = ev->event;
  }
  return s;
}

// decodeClaimRow for a row whose boundary_json is byte-identical to `kb.stableJson`: the
// boundary's parse, structure, identity and digest checks are the caller's (it built and
// digested those segments); every other check is decodeClaimRow's. False whenever any check
// fails or throws: the caller then decodes the row with decodeClaimRow (same result/error).
bool decodeClaimRowKnown(Connection& c, store_detail::Stmt& st, const KnownBoundary& kb,
                         ClaimState& s) {
  if (!kb.identitiesWellFormed || kb.lastSegment == nullptr || !kb.runs || !kb.invocations ||
      !kb.turns || st.isNull(8) || st.textView(8) != kb.stableJson) {
    return false;
  }
  try {
    ContinuationClaim& cl = s.claim;
    readClaimColumns(st, cl);
    cl.boundary.segments = Json::array();
    cl.boundary.segments.push_back(*kb.lastSegment);
    cl.boundary.manifestDigest = std::string(kb.manifestDigest);
    // validateClaim (the segment loop over kb's summary).
    const PrefixIdentity& t = cl.target;
    if (cl.claimId.empty() || cl.boundaryDigest != cl.boundary.manifestDigest ||
        cl.providerProjectionVersion != kProviderProjectionVersion ||
        !isDigest(cl.providerReplayDigest) || t.sessionId != kb.sessionId ||
        t.invocationId.empty() || t.runId.empty() || t.turnId.empty() || kb.runs->count(t.runId) ||
        kb.invocations->count(t.invocationId) || kb.turns->count(t.turnId) ||
        cl.sourceHighWater() <= 0) {
      return false;
    }
    validateClaimTarget(cl);
    // The rest of decodeClaimRow (stableJson(boundary) == boundary_json holds by construction).
    if (st.int64(19) != 1) return false;
    PrefixIdentity src = cl.sourceIdentity();
    if (!sameIdentity(src, PrefixIdentity{st.text(1), st.text(2), st.text(3), st.text(4)}) ||
        st.int64(5) != cl.sourceHighWater() || st.textView(6) != cl.sourcePrefixDigest()) {
      return false;
    }
    if (stableJson(cl.targetRunHeader.toJson()) != st.textView(15)) return false;
    s.startEventId = st.optText(17);
    s.startKind = st.optText(18);
    if (s.startEventId.has_value() != s.startKind.has_value()) return false;
    if (s.startEventId) {
      if (*s.startKind != code::runtime_admission && *s.startKind != code::claim_repair) {
        return false;
      }
      std::optional<StoredEvent> ev = store_detail::readEventById(c, *s.startEventId);
      if (!ev || ev->eventSeq != 1) return false;
      validateStartEvent(cl, ev->event, *s.startKind);
      s.startEvent = std::move(ev->event);
    }
  } catch (const Error&) {
    return false;
  }
  return true;
}

}  // namespace

std::optional<ClaimState> readClaimWithKnownBoundary(Connection& c, const std::string& claimId,
                                                     const KnownBoundary& known) {
  auto st = c.prepare(std::string("SELECT ") + kClaimColumns +
                      " FROM runtime_continuation_claims WHERE claim_id = ?1");
  st.bind(1, claimId);
  if (!st.step()) return std::nullopt;
  ClaimState s;
  if (decodeClaimRowKnown(c, st, known, s)) return s;
  return decodeClaimRow(c, st);
}

std::optional<ClaimState> readClaim(Connection& c, ClaimKey key, const std::string& a,
                                    const std::string& b) {
  std::string where;
  switch (key) {
    case ClaimKey::boundaryDigest:
      where = "boundary_digest = ?1";
      break;
    case ClaimKey::claimId:
      where = "claim_id = ?1";
      break;
    case ClaimKey::targetRun:
      where = "target_session_id = ?1 AND target_run_id = ?2";
      break;
  }
  auto st = c.prepare(std::string("SELECT ") + kClaimColumns +
                      " FROM runtime_continuation_claims WHERE " + where);
  st.bind(1, a);
  if (key == ClaimKey::targetRun) st.bind(2, b);
  if (!st.step()) return std::nullopt;
  return decodeClaimRow(c, st);
}

std::vector<ClaimState> readAllClaims(Connection& c) {
  std::vector<ClaimState> out;
  auto st = c.prepare(std::string("SELECT ") + kClaimColumns +
                      " FROM runtime_continuation_claims ORDER BY claimed_at, claim_id");
  while (st.step()) out.push_back(decodeClaimRow(c, st));
  return out;
}

}  // namespace continuation_detail

// ---------------------------------------------------------------------------------------

std::optional<ClaimState> readClaimByBoundaryDigest(RuntimeStore& store,
                                                    const std::string& boundaryDigest) {
  auto storeLock = continuation_detail::lockStore(store);
  return readClaim(conn(store), ClaimKey::boundaryDigest, boundaryDigest);
}
std::optional<ClaimState> readClaimById(RuntimeStore& store, const std::string& claimId) {
  auto storeLock = continuation_detail::lockStore(store);
  return readClaim(conn(store), ClaimKey::claimId, claimId);
}
std::optional<ClaimState> readClaimByTargetRun(RuntimeStore& store, const std::string& sessionId,
                                               const std::string& targetRunId) {
  auto storeLock = continuation_detail::lockStore(store);
  return readClaim(conn(store), ClaimKey::targetRun, sessionId, targetRunId);
}
std::vector<ClaimState> listClaims(RuntimeStore& store) {
  auto storeLock = continuation_detail::lockStore(store);
  return readAllClaims(conn(store));
}

namespace {

// Boundary verification (f.7) inside the claim transaction.
void verifyBoundary(Connection& c, const ContinuationClaim& claim) {
  const Json& segs = claim.boundary.segments;
  for (size_t k = 0; k < segs.size(); ++k) {
    const bool immediate = k + 1 == segs.size();
    PrefixIdentity id = identityFromJson(segs[k]["identity"]);
    const int64_t hw = segs[k]["position"]["lastEventSeq"].get<int64_t>();
    ImmutablePrefix p;
    try {
      p = readPrefix(c, id, immediate ? std::nullopt : std::optional<int64_t>(hw));
    } catch (const Error& e) {
      throw Error(code::continuation_boundary_changed,
                  std::string("Continuation source boundary changed: ") + e.what());
    }
    if (p.events.empty() || (!immediate && p.lastEventSeq < hw)) {
      throw Error(code::continuation_boundary_missing,
                  immediate ? std::string("Continuation source boundary is missing")
                            : "Continuation ancestor boundary is missing for " + id.runId);
    }
    if (p.segmentJson() != segs[k]) {
      throw Error(code::continuation_boundary_changed, "Continuation source boundary changed");
    }
    if (immediate) {
      size_t terminals = 0;
      for (const RuntimeEvent& e : p.events) terminals += e.isTerminal() ? 1 : 0;
      if (terminals != 1 || !p.events.back().isTerminal()) {
        throw Error(code::continuation_boundary_not_terminal,
                    "Continuation source boundary must end with exactly one terminal RuntimeEvent");
      }
    }
  }
}

bool targetLedgerEmpty(Connection& c, const PrefixIdentity& t) {
  auto ev = c.prepare(
      "SELECT 1 FROM runtime_events WHERE invocation_id = ?1 OR (session_id = ?2 AND run_id = ?3) "
      "LIMIT 1");
  ev.bind(1, t.invocationId).bind(2, t.sessionId).bind(3, t.runId);
  if (ev.step()) return false;
  auto pa = c.prepare(
      "SELECT 1 FROM runtime_partial_snapshots WHERE invocation_id = ?1 OR "
      "(session_id = ?2 AND run_id = ?3) LIMIT 1");
  pa.bind(1, t.invocationId).bind(2, t.sessionId).bind(3, t.runId);
  return !pa.step();
}

}  // namespace

ClaimResult claimContinuation(RuntimeStore& store, const ContinuationClaim& claim) {
  auto storeLock = continuation_detail::lockStore(store);
  validateClaim(claim);
  Connection& c = conn(store);
  const std::string boundaryJson = stableJson(claim.boundary.toJson());
  const PrefixIdentity src = claim.sourceIdentity();
  const int64_t hw = claim.sourceHighWater();
  ImmediateTx tx(c);
  std::vector<ClaimState> rows = readAllClaims(c);  // decode-checks every existing row
  verifyBoundary(c, claim);
  ClaimResult out;
  // Planted bug (claim_insert_trusts_plan): the writer trusts the planner's claim lookup (e.2
  // step 5, an earlier read: no claim for this boundary, fresh target ids) and only upserts its
  // row — the read and the write in two transactions.
  const bool trustsPlan = planted("claim_insert_trusts_plan");
  static const std::vector<ClaimState> kUnchecked;
  const std::vector<ClaimState>& checked = trustsPlan ? kUnchecked : rows;
  for (const ClaimState& r : checked) {
    if (r.claim.boundaryDigest == claim.boundaryDigest) {
      if (stableJson(r.claim.boundary.toJson()) != boundaryJson) {
        throw Error(code::continuation_claim_row_mismatch,
                    "Continuation claim boundary JSON differs for digest " + claim.boundaryDigest);
      }
      out.result = std::string(code::existing);
      out.existing = r;
      return out;
    }
  }
  for (const ClaimState& r : checked) {
    const ContinuationClaim& o = r.claim;
    std::string what;
    if (o.claimId == claim.claimId) {
      what = "claimId";
    } else if (o.target.invocationId == claim.target.invocationId) {
      what = "target invocation";
    } else if (o.target.runId == claim.target.runId) {
      what = "target run";
    } else if (o.target.sessionId == claim.target.sessionId &&
               o.target.turnId == claim.target.turnId) {
      what = "target session+turn";
    } else {
      PrefixIdentity os = o.sourceIdentity();
      if (os.sessionId == src.sessionId && os.runId == src.runId && o.sourceHighWater() == hw) {
        what = "source (session, run, high-water)";
      }
    }
    if (!what.empty()) {
      out.result = std::string(code::conflict);
      out.existing = r;
      out.conflictDetail = what;
      return out;
    }
  }
  if (!trustsPlan && !targetLedgerEmpty(c, claim.target)) {
    throw Error(code::continuation_target_not_empty,
                "Continuation claim target RuntimeEvent ledger is not empty");
  }
  auto ins = c.prepare(
      std::string(trustsPlan ? "INSERT OR REPLACE" : "INSERT") +
      " INTO runtime_continuation_claims (claim_id, source_session_id, "
      "source_invocation_id, source_run_id, source_turn_id, source_event_high_water, "
      "source_prefix_digest, boundary_digest, boundary_json, provider_projection_version, "
      "provider_replay_digest, target_session_id, target_invocation_id, target_run_id, "
      "target_turn_id, target_run_header_json, claimed_at, start_event_id, start_kind, "
      "protocol_version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
      "?15, ?16, ?17, NULL, NULL, 1)");
  ins.bind(1, claim.claimId)
      .bind(2, src.sessionId)
      .bind(3, src.invocationId)
      .bind(4, src.runId)
      .bind(5, src.turnId)
      .bind(6, hw)
      .bind(7, claim.sourcePrefixDigest())
      .bind(8, claim.boundaryDigest)
      .bind(9, boundaryJson)
      .bind(10, static_cast<int64_t>(claim.providerProjectionVersion))
      .bind(11, claim.providerReplayDigest)
      .bind(12, claim.target.sessionId)
      .bind(13, claim.target.invocationId)
      .bind(14, claim.target.runId)
      .bind(15, claim.target.turnId)
      .bind(16, stableJson(claim.targetRunHeader.toJson()))
      .bind(17, claim.claimedAt);
  ins.exec();
  tx.commit();
  out.result = std::string(code::acquired);
  return out;
}

namespace {

WriteResult commitStart(RuntimeStore& store, const ContinuationClaim& claim,
                        const RuntimeEvent& start, std::string_view kind) {
  auto storeLock = continuation_detail::lockStore(store);
  validateClaim(claim);
  validateStartEvent(claim, start, kind);
  Connection& c = conn(store);
  ImmediateTx tx(c);
  std::optional<ClaimState> row = readClaim(c, ClaimKey::claimId, claim.claimId);
  if (!row || stableJson(row->claim.toJson()) != stableJson(claim.toJson())) {
    throw Error(code::continuation_claim_row_mismatch,
                "Continuation start requires its exact durable claim " + claim.claimId);
  }
  if (row->startEventId) {
    if (*row->startEventId == start.id && *row->startKind == kind && row->startEvent &&
        encodeRuntimeEvent(*row->startEvent) == encodeRuntimeEvent(start)) {
      return WriteResult{false, 1};
    }
    throw Error(code::continuation_start_conflict,
                "Continuation claim " + claim.claimId + " already has a different start event");
  }
  const auto writer = kind == code::runtime_admission
                          ? store_detail::Writer::continuationStart
                          : store_detail::Writer::continuationRepairStart;
  store_detail::InsertResult ins =
      store_detail::insertEvent(tx, start, writer, store_detail::nowMs());
  if (ins.eventSeq != 1) {
    throw Error(
        code::continuation_start_invalid,
        "Continuation start must be target event #1 (got " + std::to_string(ins.eventSeq) + ")");
  }
  // Planted bug: the live start is appended but the claim never records it (V3 at P15).
  if (kind == code::runtime_admission && planted("admission_start_skips_claim_update")) {
    tx.commit();
    return WriteResult{true, 1};
  }
  // Planted bug: the live start and the claim's record of it in two transactions (a crash between
  // the two COMMITs leaves a target run that begins with a start its claim does not record). No
  // named failpoint falls between them: only the recovery process's S barrier does.
  std::optional<ImmediateTx> second;
  if (kind == code::runtime_admission && planted("admission_start_split_commit")) {
    tx.commit();
    second.emplace(c);
  }
  auto up = c.prepare(
      "UPDATE runtime_continuation_claims SET start_event_id = ?2, start_kind = ?3 "
      "WHERE claim_id = ?1 AND start_event_id IS NULL");
  up.bind(1, claim.claimId).bind(2, start.id).bind(3, kind);
  up.exec();
  if (sqlite3_changes(c.db()) != 1) {
    throw Error(code::continuation_start_conflict, "Continuation start compare-and-set failed");
  }
  if (second)
    second->commit();
  else
    tx.commit();
  return WriteResult{true, 1};
}

}  // namespace

WriteResult commitContinuationStart(RuntimeStore& store, const ContinuationClaim& claim,
                                    const RuntimeEvent& startEvent) {
  return commitStart(store, claim, startEvent, code::runtime_admission);
}
WriteResult commitContinuationRepairStart(RuntimeStore& store, const ContinuationClaim& claim,
                                          const RuntimeEvent& startEvent) {
  return commitStart(store, claim, startEvent, code::claim_repair);
}

}  // namespace crashsim
