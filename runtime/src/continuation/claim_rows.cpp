// claim_rows.cpp — the continuation claim rows read back (spec e.8): each row decoded and
// cross-checked against the claim rules (continuation_claim_row_mismatch), the known-boundary
// fast path of lineage traversal, and the public readers by boundary digest, id and target run.
#include <algorithm>
#include <iterator>
#include <set>

#include "continuation/internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {

using namespace continuation_detail;
using store_detail::Connection;

namespace continuation_detail {

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
        !isClaimDigest(cl.providerReplayDigest) || t.sessionId != kb.sessionId ||
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
}  // namespace crashsim
