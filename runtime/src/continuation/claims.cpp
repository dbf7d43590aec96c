// claims.cpp — the continuation claim authority and the continuation-start writers (spec e.8,
// f.7). Every write is one BEGIN IMMEDIATE transaction on the store's connection. The claim as
// data and its rules are claim_model.cpp's; reading claim rows is claim_rows.cpp's.
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

// e.8's lookups over the existing claims: the same boundary (existing, when its JSON is the
// same), else a claim that takes the candidate's id, target or source (conflict). nullopt: none.
std::optional<ClaimResult> existingOrConflict(const std::vector<ClaimState>& checked,
                                              const ContinuationClaim& claim,
                                              const std::string& boundaryJson,
                                              const PrefixIdentity& src, int64_t hw) {
  ClaimResult out;
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
  return std::nullopt;
}

// The claim row (no start yet). `upsert`: the planted claim_insert_trusts_plan's INSERT OR
// REPLACE.
void insertClaimRow(Connection& c, const ContinuationClaim& claim, const std::string& boundaryJson,
                    const PrefixIdentity& src, int64_t hw, bool upsert) {
  auto ins = c.prepare(
      std::string(upsert ? "INSERT OR REPLACE" : "INSERT") +
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
  // Planted bug (claim_insert_trusts_plan): the writer trusts the planner's claim lookup (e.2
  // step 5, an earlier read: no claim for this boundary, fresh target ids) and only upserts its
  // row — the read and the write in two transactions.
  const bool trustsPlan = planted("claim_insert_trusts_plan");
  static const std::vector<ClaimState> kUnchecked;
  const std::vector<ClaimState>& checked = trustsPlan ? kUnchecked : rows;
  if (auto found = existingOrConflict(checked, claim, boundaryJson, src, hw)) return *found;
  if (!trustsPlan && !targetLedgerEmpty(c, claim.target)) {
    throw Error(code::continuation_target_not_empty,
                "Continuation claim target RuntimeEvent ledger is not empty");
  }
  insertClaimRow(c, claim, boundaryJson, src, hw, trustsPlan);
  tx.commit();
  ClaimResult out;
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
