// events.cpp — runtime_events rows: canonicalisation and checked reads. The f.3 write-side
// invariants shared by every dedicated writer (candidate checks + insert) are event_checks.cpp's.
#include <algorithm>
#include <functional>

#include "crashsim/codes.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

namespace {

constexpr const char* kEventCols =
    "event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, is_terminal, "
    "payload_json, committed_at, rowid";

// Puts a decode into the connection's decode cache, which is dropped as a whole when it would
// exceed its bound (StoreOptions::decodeCacheEvents; by default the cache serves repeated reads
// of recent ledgers, not a whole workspace) — never while a pass reads it in place (DecodePin).
const RuntimeEvent& rememberDecoded(Connection& conn, const std::string& id, std::string payload,
                                    RuntimeEvent event) {
  if (conn.decodePins == 0 && conn.maxDecoded != 0 && conn.decoded.size() >= conn.maxDecoded)
    conn.decoded.clear();
  if (conn.decodePins != 0 && conn.decoded.count(id)) {
    conn.pinnedRedecodes.push_back(std::move(event));  // a pinned entry stays as it was read
    return conn.pinnedRedecodes.back();
  }
  auto& slot = conn.decoded[id];
  slot = {std::move(payload), std::move(event)};
  return slot.second;
}

// Decodes the current row (or reuses the connection's decode of identical payload bytes) and
// checks it against its columns. The returned event is the decode cache's entry: valid until
// the cache next changes (the next decode on this connection).
const RuntimeEvent& rowEvent(Connection& conn, Stmt& st) {
  const std::string id = st.text(0);
  const std::string_view payload = st.textView(8);  // compared in place, copied only on a miss
  const RuntimeEvent* cached = nullptr;
  auto it = conn.decoded.find(id);
  if (it != conn.decoded.end() && it->second.first == payload) cached = &it->second.second;
  if (!cached) {
    RuntimeEvent decoded;
    try {
      decoded = decodeRuntimeEvent(parseJson(payload));
    } catch (const Error& e) {
      throw Error(code::store_corrupt,
                  "Corrupt RuntimeEvent row " + id + ": " + e.code() + ": " + e.what());
    }
    cached = &rememberDecoded(conn, id, std::string(payload), std::move(decoded));
  }
  const RuntimeEvent& ev = *cached;
  if (ev.id != id || ev.sessionId != st.textView(1) || ev.invocationId != st.textView(2) ||
      ev.runId != st.textView(3) || ev.turnId != st.textView(4)) {
    throw Error(code::row_payload_identity_mismatch,
                "RuntimeEvent row/payload identity mismatch for " + id);
  }
  if (ev.partial || eventKindOf(ev) != st.textView(6) ||
      static_cast<int64_t>(ev.isTerminal()) != st.int64(7)) {
    throw Error(code::store_corrupt, "RuntimeEvent row " + id + " disagrees with its payload");
  }
  return ev;
}

StoredEvent rowToStored(Connection& conn, Stmt& st) {
  StoredEvent out;
  out.event = rowEvent(conn, st);
  out.eventSeq = st.int64(5);
  out.eventKind = st.text(6);
  out.committedAt = st.real(9);
  return out;
}

}  // namespace

std::string canonicalPayload(const RuntimeEvent& event, RuntimeEvent* canonical) {
  std::string payload;
  try {
    if (containsNegativeZero(event.json)) throw Error(code::not_losslessly_serializable, "-0");
    payload = encodeRuntimeEvent(event);
    // encodeRuntimeEvent is stableJson of the JSON, so equal JSON re-encodes to equal bytes:
    // the stored bytes must parse back to the same JSON and decode.
    RuntimeEvent back = decodeRuntimeEvent(parseJson(payload));
    if (!(back.json == event.json)) throw Error(code::not_losslessly_serializable, "");
    if (canonical != nullptr) *canonical = std::move(back);
  } catch (const Error& e) {
    throw Error(code::not_losslessly_serializable,
                "RuntimeEvent is not losslessly serializable: " + event.id +
                    (e.what()[0] ? std::string(" (") + e.what() + ")" : std::string()));
  }
  return payload;
}

std::string eventKindOf(const RuntimeEvent& e) {
  if (e.contentKind != ContentKind::none) {
    switch (e.contentKind) {
      case ContentKind::text:
        return "text";
      case ContentKind::thinking:
        return "thinking";
      case ContentKind::function_call:
        return "function_call";
      case ContentKind::function_response:
        return "function_response";
      case ContentKind::error:
        return "error";
      case ContentKind::none:
        break;
    }
  }
  if (e.status) return std::string(toString(*e.status));
  if (e.hasWorkspaceFact) return "workspace_fact";
  if (e.toolDispatch) return "tool_dispatch";
  if (e.hasEndInvocation) return "invocation_end";
  return "runtime_fact";
}

std::vector<StoredEvent> readRunEvents(Connection& conn, const std::string& sessionId,
                                       const std::string& runId) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events WHERE session_id = ?1 AND run_id = ?2 "
                         "ORDER BY event_seq, event_id");
  st.bind(1, sessionId).bind(2, runId);
  std::vector<StoredEvent> out;
  while (st.step()) out.push_back(rowToStored(conn, st));
  return out;
}

void visitRunEvents(Connection& conn, const std::string& sessionId, const std::string& runId,
                    const std::function<void(int64_t, const RuntimeEvent&)>& visit) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events WHERE session_id = ?1 AND run_id = ?2 "
                         "ORDER BY event_seq, event_id");
  st.bind(1, sessionId).bind(2, runId);
  while (st.step()) {
    const RuntimeEvent& e = rowEvent(conn, st);
    visit(st.int64(5), e);
  }
}

std::vector<StoredEvent> readInvocationEvents(Connection& conn, const std::string& invocationId) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events WHERE invocation_id = ?1 ORDER BY event_seq");
  st.bind(1, invocationId);
  std::vector<StoredEvent> out;
  while (st.step()) out.push_back(rowToStored(conn, st));
  return out;
}

void visitInvocationEvents(Connection& conn, const std::string& invocationId,
                           const std::function<void(int64_t, const RuntimeEvent&)>& visit) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events WHERE invocation_id = ?1 ORDER BY event_seq");
  st.bind(1, invocationId);
  while (st.step()) {
    const RuntimeEvent& e = rowEvent(conn, st);
    visit(st.int64(5), e);
  }
}

void visitAllEvents(Connection& conn,
                    const std::function<void(const StoredRow&, const RuntimeEvent&)>& visit) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events ORDER BY invocation_id, event_seq, event_id");
  while (st.step()) {
    const RuntimeEvent& e = rowEvent(conn, st);
    visit(StoredRow{st.int64(10), st.int64(5), st.real(9)}, e);
  }
}

std::vector<StoredEvent> readAllEvents(Connection& conn, std::vector<int64_t>* rowids) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events ORDER BY invocation_id, event_seq, event_id");
  std::vector<StoredEvent> out;
  while (st.step()) {
    out.push_back(rowToStored(conn, st));
    if (rowids) rowids->push_back(st.int64(10));
  }
  return out;
}

std::optional<StoredEvent> readEventById(Connection& conn, const std::string& eventId) {
  auto st = conn.prepare(std::string("SELECT ") + kEventCols +
                         " FROM runtime_events WHERE event_id = ?1");
  st.bind(1, eventId);
  if (!st.step()) return std::nullopt;
  return rowToStored(conn, st);
}

}  // namespace crashsim::store_detail
