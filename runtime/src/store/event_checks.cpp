// event_checks.cpp — the f.3 write-side invariants shared by every dedicated writer: each
// candidate event checked (immutable, identity, seal, continuation rules, protocol marker, the
// writer's transition shape, the prospective scan of a tool boundary's write), then inserted.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "crashsim/codes.h"
#include "crashsim/plant.h"
#include "crashsim/workspace_facts.h"
#include "ledger/ledger_scanner.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

namespace {

bool isToolBearing(const RuntimeEvent& e) {
  return e.lane != Lane::ordinary || e.toolDispatch.has_value() || e.toolRecovery.has_value() ||
         e.contentKind == ContentKind::function_call ||
         e.contentKind == ContentKind::function_response;
}

[[noreturn]] void reject(std::string_view ledgerCode, const std::string& eventId) {
  throw LedgerError(code::tool_ledger_rejection, std::string(ledgerCode), eventId,
                    "Tool ledger rejection");
}

// f.3 (1): workspace-wide ledger health, cached by PRAGMA data_version + total changes.
void ensureLedgerHealthy(Connection& conn) {
  int64_t dv = 0;
  {
    auto st = conn.prepare("PRAGMA data_version");
    if (st.step()) dv = st.int64(0);
  }
  const int64_t tc = sqlite3_total_changes64(conn.db());
  if (conn.health.valid && conn.health.dataVersion == dv && conn.health.totalChanges == tc) return;
  conn.health.valid = false;
  auto all = readAllEvents(conn);
  std::vector<RuntimeEvent> events;
  events.reserve(all.size());
  for (auto& s : all) events.push_back(std::move(s.event));
  auto scan = detail::scanLedger(events);
  if (!scan.issues.empty()) {
    throw LedgerError(code::tool_ledger_corruption_error, scan.issues.front().code,
                      scan.issues.front().eventId, "Corrupt tool RuntimeEvent ledger");
  }
  conn.health = {true, dv, tc};
}

// The stored events of one invocation in event_seq order, from the connection's cache when no
// other connection committed and this one changed nothing outside the checked writers since
// the cache was filled (ImmediateTx::commit appends our own committed inserts).
std::vector<RuntimeEvent>& cachedInvocationEvents(Connection& conn,
                                                  const std::string& invocationId) {
  auto& cache = conn.invocation;
  const int64_t tc = sqlite3_total_changes64(conn.db());
  if (!(cache.valid && cache.invocationId == invocationId &&
        cache.dataVersion == conn.health.dataVersion && cache.totalChanges == tc)) {
    cache.valid = false;
    cache.events.clear();
    cache.byCallId.clear();
    cache.byOperationId.clear();
    cache.indexed = 0;
    cache.nextSeq = 1;
    for (auto& s : readInvocationEvents(conn, invocationId)) {
      cache.events.push_back(std::move(s.event));
      cache.nextSeq = s.eventSeq + 1;  // rows come by event_seq
    }
    cache.invocationId = invocationId;
    cache.dataVersion = conn.health.dataVersion;
    cache.totalChanges = tc;
    cache.pendingFrom = conn.pendingInserts.size();  // read back above, uncommitted or not
    cache.valid = true;
  }
  return cache.events;
}

// Debug builds, and any process with CRASHSIM_VERIFY_FOCUSED_SCAN set (every ctest test sets
// it), also run the whole-invocation scan and fail if its first issue differs.
bool verifyFocusedScan() {
#ifndef NDEBUG
  return true;
#else
  static const bool on = std::getenv("CRASHSIM_VERIFY_FOCUSED_SCAN") != nullptr;
  return on;
#endif
}

// The stored events a prospective scan of `candidates` needs, as ascending positions in the
// cached (healthy) invocation: its first event (the invocation spine) and the closure of every
// stored event linked to a candidate by call id or operation id, and to those by theirs. The
// scanner's state for the candidates' operations depends on nothing else: the stored ledger has
// no issue, candidate ids are new (checked against runtime_events first), and issues of the
// candidates' steps come from their operations, the operation-id owners and the spine. So the
// first issue of scanning these events and then the candidates is the first issue of scanning
// the whole invocation and then the candidates, at O(linked events) instead of O(invocation).
std::vector<uint32_t> linkedStoredEvents(Connection::InvocationCache& cache,
                                         const std::vector<Candidate*>& candidates) {
  for (; cache.indexed < cache.events.size(); ++cache.indexed) {
    const auto at = static_cast<uint32_t>(cache.indexed);
    detail::visitOperationKeys(
        cache.events[cache.indexed], [&](const std::string& k) { cache.byCallId[k].push_back(at); },
        [&](const std::string& k) { cache.byOperationId[k].push_back(at); });
  }
  std::vector<uint32_t> picked;  // a handful of events: found by search, never by a bitmap
  if (cache.events.empty()) return picked;
  std::vector<const std::string*> callIds, operationIds;
  auto pushKeys = [&](const RuntimeEvent& e) {
    detail::visitOperationKeys(
        e, [&](const std::string& k) { callIds.push_back(&k); },
        [&](const std::string& k) { operationIds.push_back(&k); });
  };
  auto take = [&](uint32_t at) {
    if (std::find(picked.begin(), picked.end(), at) != picked.end()) return;
    picked.push_back(at);
    pushKeys(cache.events[at]);
  };
  take(0);
  for (const Candidate* c : candidates) pushKeys(c->canonical);
  while (!callIds.empty() || !operationIds.empty()) {
    const bool isCall = !callIds.empty();
    // The key lives in an event (cached or candidate), which take() never moves.
    const std::string* key = isCall ? callIds.back() : operationIds.back();
    (isCall ? callIds : operationIds).pop_back();
    const auto& index = isCall ? cache.byCallId : cache.byOperationId;
    if (auto it = index.find(*key); it != index.end()) {
      for (uint32_t at : it->second) take(at);
    }
  }
  std::sort(picked.begin(), picked.end());
  return picked;
}

bool shapeMatches(Writer writer, const std::vector<const RuntimeEvent*>& remaining) {
  std::vector<Lane> lanes;
  for (auto* e : remaining) lanes.push_back(e->lane);
  if (lanes.empty()) return true;
  auto boundResponse = [](const RuntimeEvent* e) {
    return e->lane == Lane::function_response && e->refOperationId.has_value();
  };
  switch (writer) {
    case Writer::generic:
    case Writer::continuationStart:
    case Writer::continuationRepairStart:
    case Writer::workspace:
      for (auto* e : remaining) {
        if (e->toolDispatch || e->toolRecovery || boundResponse(e)) return false;
      }
      return true;
    case Writer::t1:
      return (lanes.size() == 2 && lanes[0] == Lane::function_call &&
              lanes[1] == Lane::tool_dispatch) ||
             (lanes.size() == 1 && lanes[0] == Lane::tool_dispatch);
    case Writer::t2:
      return lanes.size() == 1 && boundResponse(remaining[0]);
    case Writer::bundle:
      return (lanes.size() == 2 && lanes[0] == Lane::reconcile_result &&
              lanes[1] == Lane::recovery_decision) ||
             (lanes.size() == 3 && lanes[0] == Lane::reconcile_result &&
              boundResponse(remaining[1]) && lanes[2] == Lane::recovery_decision);
  }
  return false;
}

// f.7 seal rules read from runtime_continuation_claims.
void checkContinuationRules(Connection& conn, Writer writer, const RuntimeEvent& e) {
  {
    auto st = conn.prepare(
        "SELECT claim_id, source_run_id, boundary_json FROM runtime_continuation_claims "
        "WHERE source_session_id = ?1");
    st.bindRef(1, e.sessionId);
    while (st.step()) {
      bool sealed = st.textView(1) == e.runId;
      if (!sealed) {
        try {
          Json b = parseJson(st.text(2));
          if (b.contains("segments") && b["segments"].is_array()) {
            for (const auto& seg : b["segments"]) {
              const Json* id = seg.contains("identity") ? &seg["identity"] : &seg;
              if (id->is_object() && id->value("sessionId", "") == e.sessionId &&
                  id->value("runId", "") == e.runId) {
                sealed = true;
              }
            }
          }
        } catch (const Error&) {
          throw Error(code::store_corrupt, "Corrupt continuation claim row " + st.text(0));
        }
      }
      if (sealed) {
        throw Error(code::continuation_source_sealed,
                    "RuntimeEvent source boundary is sealed by continuation claim " + st.text(0));
      }
    }
  }
  auto st = conn.prepare(
      "SELECT claim_id, target_invocation_id, target_run_id, target_turn_id, start_event_id "
      "FROM runtime_continuation_claims WHERE target_session_id = ?1 AND "
      "(target_invocation_id = ?2 OR target_run_id = ?3 OR target_turn_id = ?4)");
  st.bindRef(1, e.sessionId).bindRef(2, e.invocationId).bindRef(3, e.runId).bindRef(4, e.turnId);
  while (st.step()) {
    if (st.textView(1) != e.invocationId || st.textView(2) != e.runId ||
        st.textView(3) != e.turnId) {
      throw Error(code::runtime_identity_conflict,
                  "RuntimeEvent continuation target identity conflict for " + e.id + " (claim " +
                      st.text(0) + ")");
    }
    const bool startWriter =
        writer == Writer::continuationStart || writer == Writer::continuationRepairStart;
    if (st.isNull(4) && !startWriter) {
      throw Error(code::continuation_target_reserved,
                  "RuntimeEvent target sequence one is reserved for continuation-start (claim " +
                      st.text(0) + ")");
    }
  }
}

void checkIdentityAndSeal(Connection& conn, const RuntimeEvent& e, Writer writer) {
  // Run seal (f.3, j.6): every NEW event of a run with a terminal fact is refused, recovery
  // bundles included. Host start-up therefore reconciles before it recovers the terminal.
  // Planted bug: T2 forgets the seal, so a result that comes back after a watchdog seal lands.
  // Planted bug: the seal is off altogether (double_stop_second_terminal's second terminal).
  if (!(writer == Writer::t2 && planted("late_result_after_seal")) &&
      !planted("double_stop_second_terminal"))
    checkRunNotSealed(conn, e.sessionId, e.runId);
  {
    auto st = conn.prepare(
        "SELECT session_id, run_id, turn_id FROM runtime_events WHERE invocation_id = ?1 "
        "UNION ALL SELECT session_id, run_id, turn_id FROM runtime_partial_snapshots "
        "WHERE invocation_id = ?1 LIMIT 2");
    st.bindRef(1, e.invocationId);
    while (st.step()) {
      if (st.textView(0) != e.sessionId || st.textView(1) != e.runId ||
          st.textView(2) != e.turnId) {
        throw Error(code::runtime_identity_conflict,
                    "RuntimeEvent invocation identity conflict for " + e.invocationId);
      }
    }
  }
  {
    auto st = conn.prepare(
        "SELECT invocation_id, turn_id FROM runtime_events WHERE session_id = ?1 AND run_id = ?2 "
        "LIMIT 1");
    st.bindRef(1, e.sessionId).bindRef(2, e.runId);
    if (st.step() && (st.textView(0) != e.invocationId || st.textView(1) != e.turnId)) {
      throw Error(code::runtime_identity_conflict,
                  "RuntimeEvent run identity conflict for " + e.sessionId + "/" + e.runId);
    }
  }
}

void checkProtocolMarker(Connection& conn, const RuntimeEvent& e) {
  if (!e.runtimeProtocol) return;
  // The protocol marker is a fact of what was wired at run start: event #1 only (j.4).
  auto st =
      conn.prepare("SELECT 1 FROM runtime_events WHERE session_id = ?1 AND run_id = ?2 LIMIT 1");
  st.bind(1, e.sessionId).bind(2, e.runId);
  if (st.step() || *e.runtimeProtocol != code::t1_after_preflight_v1) {
    throw Error(code::protocol_marker_invalid,
                "RuntimeEvent " + e.id +
                    " carries a runtime protocol marker that is not the run's first event");
  }
}

}  // namespace

void checkRunNotSealed(Connection& conn, const std::string& sessionId, const std::string& runId) {
  // The partial index holds terminal facts only: one seek, whatever the run's length.
  auto st = conn.prepare(
      "SELECT event_id FROM runtime_events INDEXED BY runtime_events_terminal WHERE "
      "session_id = ?1 AND run_id = ?2 AND is_terminal = 1 LIMIT 1");
  st.bindRef(1, sessionId).bindRef(2, runId);
  if (st.step()) {
    throw Error(code::run_sealed, "RuntimeEvent run " + sessionId + "/" + runId +
                                      " is sealed by its terminal fact " + st.text(0));
  }
}

namespace {

// Each event a candidate: immutable (not partial), the authority stream's only through its own
// writer, no id twice, and an id already stored only as the identical event (then it exists).
// `toolBearing`: some event is a tool boundary's.
std::vector<Candidate> candidatesOf(Connection& conn, Writer writer,
                                    const std::vector<const RuntimeEvent*>& events,
                                    bool& toolBearing) {
  std::vector<Candidate> out;
  toolBearing = false;
  out.reserve(events.size());
  std::vector<std::string_view> seen;  // a write has a handful of events
  seen.reserve(events.size());
  for (const RuntimeEvent* e : events) {
    if (e->partial) {
      throw Error(code::partial_in_prefix,
                  "partial RuntimeEvent " + e->id + " is not an immutable fact");
    }
    // The authority stream has one writer (workspace-continuity-contract.md b.5).
    if (writer != Writer::workspace &&
        (e->hasWorkspaceFact || e->sessionId == kWorkspaceAuthoritySession)) {
      throw Error(code::reserved_workspace_fact,
                  "RuntimeEvent " + e->id +
                      ": workspace facts and the authority session require commitWorkspaceFacts");
    }
    toolBearing = toolBearing || isToolBearing(*e);
    Candidate c;
    c.event = e;
    c.payload = canonicalPayload(*e, &c.canonical);
    if (std::find(seen.begin(), seen.end(), e->id) != seen.end()) {
      reject(code::duplicate_event_id, e->id);
    }
    seen.push_back(e->id);
    auto st =
        conn.prepare("SELECT payload_json, event_seq FROM runtime_events WHERE event_id = ?1");
    st.bindRef(1, e->id);
    if (st.step()) {
      if (st.textView(0) == c.payload) {
        c.exists = true;
        c.existingSeq = st.int64(1);
      } else if (isToolBearing(*e) || writer != Writer::generic) {
        reject(code::duplicate_event_id, e->id);
      } else {
        throw Error(code::runtime_identity_conflict, "RuntimeEvent identity conflict for " + e->id);
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The candidates not yet stored, each past the continuation, identity/seal and protocol-marker
// rules.
std::vector<Candidate*> newCandidates(Connection& conn, Writer writer,
                                      std::vector<Candidate>& all) {
  std::vector<Candidate*> remaining;
  const RuntimeEvent* checked = nullptr;  // execution identity the queries below already passed
  for (auto& c : all) {
    if (c.exists) continue;
    // The continuation and identity/seal rules read only the execution identity and nothing
    // is inserted before every candidate is checked: one check per identity is the same check.
    if (checked == nullptr || !sameExecutionIdentity(*checked, *c.event)) {
      checkContinuationRules(conn, writer, *c.event);
      checkIdentityAndSeal(conn, *c.event, writer);
      checked = c.event;
    }
    checkProtocolMarker(conn, *c.event);
    remaining.push_back(&c);
  }
  return remaining;
}

// The touched invocations, sorted and unique (the scan order of several).
std::vector<const std::string*> touchedInvocations(const std::vector<const RuntimeEvent*>& shape) {
  std::vector<const std::string*> invocations;
  for (auto* e : shape) invocations.push_back(&e->invocationId);
  std::sort(invocations.begin(), invocations.end(),
            [](const std::string* a, const std::string* b) { return *a < *b; });
  invocations.erase(
      std::unique(invocations.begin(), invocations.end(),
                  [](const std::string* a, const std::string* b) { return *a == *b; }),
      invocations.end());
  return invocations;
}

// A tool boundary's write: the ledger healthy, the writer's transition shape, and the scanner
// over the stored events plus the candidates finds no issue (the prospective scan).
void prospectiveScan(Connection& conn, Writer writer, const std::vector<Candidate*>& remaining) {
  ensureLedgerHealthy(conn);
  std::vector<const RuntimeEvent*> shape;
  for (auto* c : remaining) shape.push_back(c->event);
  if (!shapeMatches(writer, shape)) reject(code::transition_shape_conflict, shape[0]->id);
  const std::vector<const std::string*> invocations = touchedInvocations(shape);
  // The prospective scan: stored events, then the candidates. One invocation (every writer's
  // case) takes the linked events of the connection's cache; several take all their events.
  std::vector<RuntimeEvent> scanInput;
  std::vector<uint32_t> picked;
  if (invocations.size() == 1) {
    auto& cache = conn.invocation;
    cachedInvocationEvents(conn, *invocations.front());
    if (!(conn.txNextSeq && conn.txNextSeq->invocationId == cache.invocationId)) {
      // The cache is current inside this write transaction (data_version read under the
      // write lock above): its MAX(event_seq) + 1 is the invocation's next event_seq.
      conn.txNextSeq = Connection::NextSeq{cache.invocationId, cache.nextSeq};
    }
    picked = linkedStoredEvents(cache, remaining);
  } else {
    for (const std::string* inv : invocations) {
      for (auto& s : readInvocationEvents(conn, *inv)) scanInput.push_back(std::move(s.event));
    }
  }
  const size_t stored = picked.empty() ? scanInput.size() : picked.size();
  scanInput.reserve(stored + remaining.size());
  // Events are moved in and back out (no copies); the guard moves them back on any exit.
  // Only scan.issues (owned strings) is read afterwards, never the scan's views.
  for (uint32_t at : picked) scanInput.push_back(std::move(conn.invocation.events[at]));
  for (auto* c : remaining) scanInput.push_back(std::move(c->canonical));
  struct MoveBack {
    std::vector<RuntimeEvent>& input;
    std::vector<RuntimeEvent>& cached;
    const std::vector<uint32_t>& picked;
    const std::vector<Candidate*>& candidates;
    size_t stored;
    ~MoveBack() {
      for (size_t k = 0; k < picked.size(); ++k) cached[picked[k]] = std::move(input[k]);
      for (size_t i = 0; i < candidates.size(); ++i) {
        candidates[i]->canonical = std::move(input[stored + i]);
      }
    }
  };
  auto scan = [&] {
    MoveBack back{scanInput, conn.invocation.events, picked, remaining, stored};
    return detail::scanLedger(scanInput);
  }();
  if (invocations.size() == 1 && verifyFocusedScan()) {
    // Tests and debug builds prove the focused scan against the whole invocation's scan.
    std::vector<RuntimeEvent> whole = conn.invocation.events;
    for (auto* c : remaining) whole.push_back(c->canonical);
    const auto full = detail::scanLedger(whole);
    const bool same = full.issues.empty() == scan.issues.empty() &&
                      (full.issues.empty() || (full.issues[0].code == scan.issues[0].code &&
                                               full.issues[0].eventId == scan.issues[0].eventId));
    if (!same) throw std::logic_error("focused prospective scan differs from the full scan");
  }
  if (!scan.issues.empty()) reject(scan.issues.front().code, scan.issues.front().eventId);
}

}  // namespace

std::vector<Candidate> checkCandidates(ImmediateTx& tx, Writer writer,
                                       const std::vector<const RuntimeEvent*>& events) {
  Connection& conn = tx.conn();
  bool toolBearing = false;
  std::vector<Candidate> out = candidatesOf(conn, writer, events, toolBearing);
  const std::vector<Candidate*> remaining = newCandidates(conn, writer, out);
  if (toolBearing && !remaining.empty()) prospectiveScan(conn, writer, remaining);
  return out;
}

int64_t insertChecked(ImmediateTx& tx, Candidate& c, double committedAt) {
  if (c.exists) return c.existingSeq;
  Connection& conn = tx.conn();
  const RuntimeEvent& e = *c.event;
  int64_t seq = 1;
  if (conn.txNextSeq && conn.txNextSeq->invocationId == e.invocationId) {
    seq = conn.txNextSeq->seq;
  } else {
    auto st = conn.prepare(
        "SELECT COALESCE(MAX(event_seq), 0) + 1 FROM runtime_events WHERE invocation_id = ?1");
    st.bind(1, e.invocationId);
    if (st.step()) seq = st.int64(0);
  }
  auto ins = conn.prepare(
      "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, turn_id, "
      "event_seq, event_kind, is_terminal, payload_json, committed_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  const std::string kind = eventKindOf(e);
  // Bound without copies: every string outlives `ins`.
  ins.bindRef(1, e.id)
      .bindRef(2, e.sessionId)
      .bindRef(3, e.invocationId)
      .bindRef(4, e.runId)
      .bindRef(5, e.turnId)
      .bind(6, seq)
      .bindRef(7, kind)
      .bind(8, static_cast<int64_t>(e.isTerminal() ? 1 : 0))
      .bindRef(9, c.payload)
      .bind(10, committedAt);
  ins.exec();
  // A final event with the same stream identity replaces its mutable partial snapshot.
  auto del = conn.prepare("DELETE FROM runtime_partial_snapshots WHERE stream_key = ?1");
  del.bindRef(1, e.id);
  del.exec();
  conn.pendingInserts.emplace_back(seq, std::move(c.canonical));
  conn.txNextSeq = Connection::NextSeq{e.invocationId, seq + 1};
  return seq;
}

InsertResult insertEvent(ImmediateTx& tx, const RuntimeEvent& event, Writer writer,
                         double committedAt) {
  auto cands = checkCandidates(tx, writer, {&event});
  const bool created = !cands[0].exists;
  int64_t seq = insertChecked(tx, cands[0], committedAt);
  return {created, seq};
}

}  // namespace crashsim::store_detail
