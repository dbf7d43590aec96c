// store_fixture.h — shared by the benches that read a real store built in bulk: events and
// continuation claim rows inserted with plain SQL in the exact row format the store writes (the
// writers' per-append checks are not what these benches measure; run headers, continuation
// starts and terminal facts still go through the store API).
#pragma once

#include <sqlite3.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/hashing.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "store/store_internal.h"

namespace crashsim::bench {

inline void check(int rc, sqlite3* db) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    throw std::runtime_error(sqlite3_errmsg(db));
  }
}

inline void insertRows(sqlite3* db, const std::vector<std::pair<RuntimeEvent, int64_t>>& rows) {
  check(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), db);
  sqlite3_stmt* st = nullptr;
  check(
      sqlite3_prepare_v2(db,
                         "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, "
                         "turn_id, event_seq, event_kind, is_terminal, payload_json, committed_at) "
                         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9)",
                         -1, &st, nullptr),
      db);
  for (const auto& [e, seq] : rows) {
    const std::string payload = encodeRuntimeEvent(e);
    const std::string kind = store_detail::eventKindOf(e);  // the store's own event_kind rule
    sqlite3_bind_text(st, 1, e.id.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, e.sessionId.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, e.invocationId.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, e.runId.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, e.turnId.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 6, seq);
    sqlite3_bind_text(st, 7, kind.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, payload.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 9, e.ts);
    check(sqlite3_step(st), db);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  check(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), db);
}

inline void insertClaimRow(sqlite3* db, const ContinuationClaim& c) {
  sqlite3_stmt* st = nullptr;
  check(sqlite3_prepare_v2(
            db,
            "INSERT INTO runtime_continuation_claims (claim_id, source_session_id, "
            "source_invocation_id, source_run_id, source_turn_id, source_event_high_water, "
            "source_prefix_digest, boundary_digest, boundary_json, provider_projection_version, "
            "provider_replay_digest, target_session_id, target_invocation_id, target_run_id, "
            "target_turn_id, target_run_header_json, claimed_at, protocol_version) VALUES "
            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?11, ?12, ?13, ?14, ?15, ?16, 1)",
            -1, &st, nullptr),
        db);
  PrefixIdentity s = c.sourceIdentity();
  std::vector<std::string> t{c.claimId,
                             s.sessionId,
                             s.invocationId,
                             s.runId,
                             s.turnId,
                             "",
                             c.sourcePrefixDigest(),
                             c.boundaryDigest,
                             stableJson(c.boundary.toJson()),
                             c.providerReplayDigest,
                             c.target.sessionId,
                             c.target.invocationId,
                             c.target.runId,
                             c.target.turnId,
                             stableJson(c.targetRunHeader.toJson())};
  for (int i = 0; i < 15; ++i) {
    if (i == 5) {
      sqlite3_bind_int64(st, 6, c.sourceHighWater());
    } else {
      sqlite3_bind_text(st, i + 1, t[i].c_str(), -1, SQLITE_TRANSIENT);
    }
  }
  sqlite3_bind_double(st, 16, c.claimedAt);
  check(sqlite3_step(st), db);
  sqlite3_finalize(st);
}

// The envelope of an event of run `run` (invocation inv-<run>, turn turn-<run>).
inline Json envelope(const std::string& session, const std::string& id, const std::string& run,
                     double ts, const char* role, const char* author) {
  return Json{{"id", id},
              {"sessionId", session},
              {"invocationId", "inv-" + run},
              {"runId", run},
              {"turnId", "turn-" + run},
              {"ts", ts},
              {"partial", false},
              {"role", role},
              {"author", author}};
}

inline RuntimeEvent ev(const std::string& session, const std::string& id, const std::string& run,
                       double ts, const char* role, const char* author, Json content) {
  Json e = envelope(session, id, run, ts, role, author);
  e["content"] = std::move(content);
  return decodeRuntimeEvent(std::move(e));
}

// Admits `h` as the continuation of the last of `prefixes` (its lineage, in order) the way the
// continuation authority does: claim row, run header (parent and continuation_source_v2 set on
// h), continuation start through the dedicated writer (event_seq 1).
inline void admitContinuation(RuntimeStore& s, RunHeader& h,
                              const std::vector<ImmutablePrefix>& prefixes,
                              const std::string& providerReplayDigest, double ts) {
  const ImmutablePrefix& src = prefixes.back();
  std::vector<const ImmutablePrefix*> segs;
  for (const auto& p : prefixes) segs.push_back(&p);
  ContinuationClaim c;
  c.claimId = "claim-" + h.runId;
  c.boundary = buildBoundaryCursor(segs);
  c.boundaryDigest = c.boundary.manifestDigest;
  c.providerReplayDigest = providerReplayDigest;
  c.target = PrefixIdentity{h.sessionId, h.invocationId, h.runId, h.turnId};
  c.claimedAt = ts;
  h.parentRunId = src.identity.runId;
  h.parentTurnId = src.identity.turnId;
  h.continuationSource = Json{{"protocol", std::string(code::continuation_source_v2)},
                              {"claimId", c.claimId},
                              {"boundaryDigest", c.boundaryDigest},
                              {"sourceInvocationId", src.identity.invocationId},
                              {"sourceRunId", src.identity.runId},
                              {"sourceTurnId", src.identity.turnId},
                              {"sourceRuntimeEventHighWater", src.lastEventSeq},
                              {"sourcePrefixDigest", src.prefixDigest},
                              {"replayManifestDigest", c.boundaryDigest}};
  c.targetRunHeader = h;
  insertClaimRow(s.handle(), c);
  s.createRun(h);
  commitContinuationStart(
      s, c, buildContinuationStartEvent(c, "start-" + h.runId, ts, "runtime_admission", true));
}

// Ends run h the way startup repair ends a crashed run: a recovered `failed` terminal fact
// (app_restarted) at ts, then its header.
inline void sealRecoveredFailed(RuntimeStore& s, const RunHeader& h, double ts) {
  Json e = envelope(h.sessionId, h.runId + "-terminal", h.runId, ts, "system", "system");
  e["status"] = std::string(code::failed);
  e["content"] = {
      {"kind", "error"}, {"message", "killed"}, {"code", std::string(code::app_restarted)}};
  e["actions"] = {
      {"endInvocation", true},
      {"stateDelta", {{"recovered", true}, {"failureClass", std::string(code::app_restarted)}}}};
  const RuntimeEvent term = decodeRuntimeEvent(std::move(e));
  s.append(term);
  RunHeader done = h;
  done.status = code::failed;
  done.updatedAt = term.ts;
  done.completedAt = term.ts;
  done.failureClass = code::app_restarted;
  s.markRunTerminal(done);
}

}  // namespace crashsim::bench
