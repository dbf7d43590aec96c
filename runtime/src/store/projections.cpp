// projections.cpp — the tool projection rows (tool_operations, tool_journal_events), written
// by the online writers and by the rebuild of the disposable projections from runtime_events
// alone (spec f.8, through the shared scanner and recovery-tail interpreter).
#include <algorithm>
#include <mutex>

#include "crashsim/codes.h"
#include "crashsim/store.h"
#include "ledger/ledger_scanner.h"
#include "store/store_impl.h"
#include "store/store_internal.h"

namespace crashsim {

namespace store_detail {

void insertOperationRow(Connection& c, const ToolOperationRow& r) {
  auto ins = c.prepare(
      "INSERT INTO tool_operations (operation_id, invocation_id, run_id, turn_id, "
      "provider_tool_call_id, tool_name, canonical_args_hash, recovery_mode, current_state, "
      "call_event_id, dispatch_event_id, result_event_id, version) VALUES (?1, ?2, ?3, ?4, ?5, "
      "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  // Bound without copies: every string outlives `ins`.
  ins.bindRef(1, r.operationId)
      .bindRef(2, r.invocationId)
      .bindRef(3, r.runId)
      .bindRef(4, r.turnId)
      .bindRef(5, r.providerToolCallId)
      .bindRef(6, r.toolName)
      .bindRef(7, r.canonicalArgsHash)
      .bindRef(8, r.recoveryMode)
      .bindRef(9, r.currentState)
      .bindRef(10, r.callEventId)
      .bind(11, r.dispatchEventId)
      .bind(12, r.resultEventId)
      .bind(13, r.version);
  ins.exec();
}

void insertJournal(Connection& c, const std::string& journalId, const ToolOperationRow& op,
                   std::string_view state, const std::string& runtimeEventId,
                   const std::optional<std::string>& metadata, double committedAt) {
  auto st = c.prepare(
      "INSERT INTO tool_journal_events (journal_event_id, operation_id, invocation_id, run_id, "
      "turn_id, state, runtime_event_id, canonical_args_hash, recovery_mode, metadata_json, "
      "committed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  // Bound without copies: every string outlives `st`.
  st.bindRef(1, journalId)
      .bindRef(2, op.operationId)
      .bindRef(3, op.invocationId)
      .bindRef(4, op.runId)
      .bindRef(5, op.turnId)
      .bindRef(6, state)
      .bindRef(7, runtimeEventId)
      .bindRef(8, op.canonicalArgsHash)
      .bindRef(9, op.recoveryMode)
      .bind(10, metadata)
      .bind(11, committedAt);
  st.exec();
}

}  // namespace store_detail

using store_detail::Connection;
using store_detail::ImmediateTx;

namespace store_detail {

namespace {

// A journal row waiting for its place: journal rows are ordered by their runtime event's rowid
// (the order online commits wrote them in).
struct PendingJournal {
  int64_t rowid = 0;
  JournalRow row;
  size_t op = 0;
};

// The operation row a dispatch implies (its state and version are the caller's).
ToolOperationRow dispatchedOperation(const RuntimeEvent& call, const RuntimeEvent& d) {
  const ToolDispatch& td = *d.toolDispatch;
  ToolOperationRow row;
  row.operationId = td.operationId;
  row.invocationId = d.invocationId;
  row.runId = d.runId;
  row.turnId = d.turnId;
  row.providerToolCallId = td.providerToolCallId;
  row.toolName = td.toolName;
  row.canonicalArgsHash = td.canonicalArgsHash;
  row.recoveryMode = td.recoveryMode;
  row.callEventId = call.id;
  row.dispatchEventId = d.id;
  return row;
}

// One dispatched operation's row and journal rows from its bound events: prepared, then its
// recovery tail (reconcile, outcome, decision) or its T2 outcome.
void projectOperation(const std::vector<double>& committedAt, const std::vector<int64_t>& rowids,
                      detail::EventRefs events, const detail::ScannedOperation& sop,
                      LedgerProjection& out, std::vector<PendingJournal>& journals) {
  if (!sop.call) {
    throw Error(code::store_corrupt,
                "Corrupt tool RuntimeEvent ledger: orphan_dispatch at " + events[*sop.dispatch].id);
  }
  const RuntimeEvent& d = events[*sop.dispatch];
  const ToolDispatch& td = *d.toolDispatch;
  auto tail = detail::interpretRecoveryTail(events, sop);
  if (tail && !tail->valid) {
    throw Error(code::store_corrupt,
                "Corrupt tool recovery bundle for " + td.operationId + ": " + tail->code);
  }
  ToolOperationRow row = dispatchedOperation(events[*sop.call], d);
  const size_t opIndex = out.operations.size();
  auto add = [&](size_t ev, std::string id, std::string_view state, bool metadata) {
    PendingJournal j;
    j.rowid = rowids[ev];
    j.row.journalEventId = std::move(id);
    j.row.operationId = row.operationId;
    j.row.invocationId = row.invocationId;
    j.row.runId = row.runId;
    j.row.turnId = row.turnId;
    j.row.state = state;
    j.row.runtimeEventId = events[ev].id;
    j.row.canonicalArgsHash = row.canonicalArgsHash;
    j.row.recoveryMode = row.recoveryMode;
    if (metadata) j.row.metadataJson = stableJson(events[ev].json.at("actions").at("toolRecovery"));
    j.row.committedAt = committedAt[ev];
    j.op = opIndex;
    journals.push_back(std::move(j));
  };
  add(*sop.dispatch, td.operationId + "_prepared", code::prepared, false);
  int64_t tailEntries = 0;
  if (sop.response) row.resultEventId = events[*sop.response].id;
  if (tail) {
    add(*tail->reconcile, events[*tail->reconcile].id + "_journal", "reconcile_observed", true);
    ++tailEntries;
    if (tail->outcome) {
      add(*tail->outcome, td.operationId + "_outcome", code::outcome_committed, false);
      ++tailEntries;
    }
    const bool completed = tail->disposition == code::completed;
    add(*tail->decision, events[*tail->decision].id + "_journal",
        completed ? code::recovery_completed : code::recovery_parked, true);
    ++tailEntries;
    row.currentState = completed ? code::recovery_completed : code::recovery_parked;
  } else if (sop.response) {
    add(*sop.response, td.operationId + "_outcome", code::outcome_committed, false);
    ++tailEntries;
    row.currentState = code::outcome_committed;
  } else {
    row.currentState = code::prepared;
  }
  row.version = 1 + tailEntries;
  out.operations.push_back(std::move(row));
}

}  // namespace

LedgerProjection projectLedger(Connection& c) {
  // Every event once, read in place: pointers into the decode cache (pinned for the pass), no
  // copy of the ledger; rowids and committed_at in parallel.
  DecodePin pin(c);
  std::vector<const RuntimeEvent*> events;
  std::vector<int64_t> rowids;
  std::vector<double> committedAt;
  if (auto n = c.prepare("SELECT COUNT(*) FROM runtime_events"); n.step()) {
    const auto rows = static_cast<size_t>(n.int64(0));
    events.reserve(rows);
    rowids.reserve(rows);
    committedAt.reserve(rows);
  }
  visitAllEvents(c, [&](const StoredRow& row, const RuntimeEvent& e) {
    events.push_back(&e);
    rowids.push_back(row.rowid);
    committedAt.push_back(row.committedAt);
  });
  auto scan = detail::scanLedger(events);
  if (!scan.issues.empty()) {
    throw Error(code::store_corrupt,
                "Corrupt tool RuntimeEvent ledger: " + scan.issues.front().code + " at " +
                    scan.issues.front().eventId);
  }
  LedgerProjection out;
  std::vector<PendingJournal> journals;
  for (const auto& sop : scan.operations)
    if (sop.dispatch) projectOperation(committedAt, rowids, events, sop, out, journals);
  std::stable_sort(
      journals.begin(), journals.end(),
      [](const PendingJournal& a, const PendingJournal& b) { return a.rowid < b.rowid; });
  for (auto& j : journals) {
    out.journal.push_back(std::move(j.row));
    out.journalOperation.push_back(j.op);
  }
  return out;
}

ToolOperationRow operationFromRow(Stmt& st) {
  ToolOperationRow r;
  r.operationId = st.text(0);
  r.invocationId = st.text(1);
  r.runId = st.text(2);
  r.turnId = st.text(3);
  r.providerToolCallId = st.text(4);
  r.toolName = st.text(5);
  r.canonicalArgsHash = st.text(6);
  r.recoveryMode = st.text(7);
  r.currentState = st.text(8);
  r.callEventId = st.text(9);
  r.dispatchEventId = st.optText(10);
  r.resultEventId = st.optText(11);
  r.version = st.int64(12);
  return r;
}

}  // namespace store_detail

RuntimeStore::RebuildResult RuntimeStore::rebuildProjections() {
  std::lock_guard lk(store_detail::mutexOf(*this));
  Connection& c = store_detail::connectionOf(*this);
  ImmediateTx tx(c);
  const store_detail::LedgerProjection p = store_detail::projectLedger(c);
  c.execScript(
      "DELETE FROM tool_journal_events WHERE operation_id IN (SELECT operation_id FROM "
      "tool_operations WHERE dispatch_event_id IS NOT NULL);"
      "DELETE FROM tool_operations WHERE dispatch_event_id IS NOT NULL;");
  for (const auto& r : p.operations) store_detail::insertOperationRow(c, r);
  for (size_t i = 0; i < p.journal.size(); ++i) {
    const JournalRow& j = p.journal[i];
    store_detail::insertJournal(c, j.journalEventId, p.operations[p.journalOperation[i]], j.state,
                                j.runtimeEventId, j.metadataJson, j.committedAt);
  }
  tx.commit();
  return {p.operations.size(), p.journal.size()};
}

namespace {
constexpr const char* kOpCols =
    "o.operation_id, o.invocation_id, o.run_id, o.turn_id, o.provider_tool_call_id, o.tool_name, "
    "o.canonical_args_hash, o.recovery_mode, o.current_state, o.call_event_id, "
    "o.dispatch_event_id, o.result_event_id, o.version";
}  // namespace

std::vector<ToolOperationRow> RuntimeStore::listToolOperations() const {
  std::lock_guard lk(impl_->mu);
  std::vector<ToolOperationRow> out;
  auto st = impl_->conn->prepare(std::string("SELECT ") + kOpCols +
                                 " FROM tool_operations o ORDER BY o.operation_id");
  while (st.step()) out.push_back(store_detail::operationFromRow(st));
  return out;
}

std::vector<JournalRow> RuntimeStore::listJournal() const {
  std::lock_guard lk(impl_->mu);
  std::vector<JournalRow> out;
  auto st = impl_->conn->prepare(
      "SELECT journal_event_id, operation_id, invocation_id, run_id, turn_id, state, "
      "runtime_event_id, canonical_args_hash, recovery_mode, metadata_json, committed_at "
      "FROM tool_journal_events ORDER BY journal_seq");
  while (st.step()) {
    JournalRow r;
    r.journalEventId = st.text(0);
    r.operationId = st.text(1);
    r.invocationId = st.text(2);
    r.runId = st.text(3);
    r.turnId = st.text(4);
    r.state = st.text(5);
    r.runtimeEventId = st.text(6);
    r.canonicalArgsHash = st.text(7);
    r.recoveryMode = st.text(8);
    r.metadataJson = st.optText(9);
    r.committedAt = st.real(10);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<ToolOperationRow> RuntimeStore::listUnsettledToolOperations(
    const std::optional<std::string>& sessionId) const {
  std::lock_guard lk(impl_->mu);
  std::vector<ToolOperationRow> out;
  auto st = impl_->conn->prepare(
      std::string("SELECT ") + kOpCols +
      " FROM tool_operations o JOIN runtime_events d ON d.event_id = o.dispatch_event_id "
      "WHERE o.current_state = 'prepared' AND o.result_event_id IS NULL "
      "AND (?1 IS NULL OR d.session_id = ?1) ORDER BY o.invocation_id, o.operation_id");
  st.bind(1, sessionId);
  while (st.step()) out.push_back(store_detail::operationFromRow(st));
  return out;
}

}  // namespace crashsim
