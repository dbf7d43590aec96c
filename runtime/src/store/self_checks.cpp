// self_checks.cpp — the store's self-checks (crashsim/store.h checkIntact, integrityCheck,
// quickCheck): SQLite's own check pragmas, then the ledger's invariants and the projections
// against the rows runtime_events alone imply, in one read transaction. Reads only.
#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/store.h"
#include "store/store_impl.h"
#include "store/store_internal.h"

namespace crashsim {

using store_detail::Connection;

namespace {
// The result rows of a check pragma, one per line ("ok" when the check passes).
std::string checkPragma(Connection& c, const char* pragma) {
  auto st = c.prepare(pragma);
  std::string out;
  while (st.step()) {
    if (!out.empty()) out += "\n";
    out += st.text(0);
  }
  return out;
}
}  // namespace

std::string RuntimeStore::quickCheck() const {
  std::lock_guard lk(impl_->mu);
  return checkPragma(*impl_->conn, "PRAGMA quick_check");
}

namespace {
// The first difference between the stored tool projections and the rows runtime_events alone
// imply; empty when they agree, or when the scanner rejects the ledger (then the resolver
// reports that corruption for the run, where readers see it).
std::string projectionDifference(const RuntimeStore& store, Connection& c) {
  store_detail::LedgerProjection rebuilt;
  try {
    rebuilt = store_detail::projectLedger(c);
  } catch (const Error& e) {
    if (e.code() == code::store_corrupt) return {};
    throw;
  }
  // Rows of operations without a dispatch are not rebuilt (rebuildProjections keeps them).
  std::vector<ToolOperationRow> online;
  std::set<std::string> rebuiltIds;
  for (ToolOperationRow& r : store.listToolOperations())
    if (r.dispatchEventId) online.push_back(std::move(r));
  std::sort(rebuilt.operations.begin(), rebuilt.operations.end(),
            [](const auto& a, const auto& b) { return a.operationId < b.operationId; });
  for (size_t i = 0; i < std::max(online.size(), rebuilt.operations.size()); ++i) {
    if (i >= online.size())
      return "tool_operations lacks " + rebuilt.operations[i].operationId +
             ", which the ledger implies";
    if (i >= rebuilt.operations.size() ||
        online[i].operationId != rebuilt.operations[i].operationId)
      return "tool_operations holds " + online[i].operationId + ", which the ledger does not imply";
    const ToolOperationRow& a = online[i];
    const ToolOperationRow& b = rebuilt.operations[i];
    if (!(a == b)) {
      return "tool_operations row " + a.operationId + " is " + a.currentState + " v" +
             std::to_string(a.version) + " (result " + a.resultEventId.value_or("none") +
             "), the ledger implies " + b.currentState + " v" + std::to_string(b.version) +
             " (result " + b.resultEventId.value_or("none") + ")";
    }
    rebuiltIds.insert(a.operationId);
  }
  std::vector<JournalRow> journal;
  for (JournalRow& j : store.listJournal())
    if (rebuiltIds.count(j.operationId)) journal.push_back(std::move(j));
  for (size_t i = 0; i < std::max(journal.size(), rebuilt.journal.size()); ++i) {
    if (i >= journal.size())
      return "tool_journal_events lacks " + rebuilt.journal[i].journalEventId;
    if (i >= rebuilt.journal.size())
      return "tool_journal_events holds " + journal[i].journalEventId +
             ", which the ledger does not imply";
    if (!(journal[i] == rebuilt.journal[i])) {
      return "tool_journal_events entry " + std::to_string(i + 1) + " is " +
             journal[i].journalEventId + " (" + journal[i].state + "), the ledger implies " +
             rebuilt.journal[i].journalEventId + " (" + rebuilt.journal[i].state + ")";
    }
  }
  return {};
}
// integrity_check's first problem line (it heads its list with "*** in database main ***").
std::string firstIntegrityProblem(const std::string& check) {
  std::string first = check.substr(0, check.find('\n'));
  if (first.rfind("***", 0) == 0 && check.find('\n') != std::string::npos) {
    const size_t start = check.find('\n') + 1;
    first = check.substr(start, check.find('\n', start) - start);
  }
  return first;
}

// Foreign keys hold, every invocation's event_seq is contiguous from 1 and stored in order, and
// every run's events have a header (the workspace authority stream has spines, never run
// headers: b.7 scans it).
void checkLedgerShape(Connection& c, const std::string& where) {
  if (auto st = c.prepare("PRAGMA foreign_key_check"); st.step()) {
    throw Error(
        code::store_foreign_key_violation,
        st.text(0) + " row " + st.text(1) + " references a missing " + st.text(2) + " row" + where);
  }
  if (auto st = c.prepare(
          "SELECT invocation_id, COUNT(*), MIN(event_seq), MAX(event_seq) FROM runtime_events "
          "GROUP BY invocation_id HAVING MIN(event_seq) <> 1 OR MAX(event_seq) <> COUNT(*) "
          "LIMIT 1");
      st.step()) {
    throw Error(code::store_event_seq_gap,
                "invocation " + st.text(0) + " holds " + std::to_string(st.int64(1)) +
                    " events numbered " + std::to_string(st.int64(2)) + ".." +
                    std::to_string(st.int64(3)) + " (a RuntimeEvent is missing)" + where);
  }
  // Events are appended in event_seq order, so their rowids ascend with event_seq.
  if (auto st = c.prepare(
          "SELECT a.invocation_id, a.event_seq FROM runtime_events a JOIN runtime_events b "
          "ON b.invocation_id = a.invocation_id AND b.event_seq = a.event_seq + 1 "
          "WHERE b.rowid < a.rowid LIMIT 1");
      st.step()) {
    throw Error(code::store_event_order_conflict,
                "invocation " + st.text(0) + ": event_seq " + std::to_string(st.int64(1) + 1) +
                    " was stored before event_seq " + std::to_string(st.int64(1)) + where);
  }
  if (auto st =
          c.prepare("SELECT DISTINCT e.session_id, e.run_id, e.invocation_id FROM runtime_events e "
                    "WHERE e.session_id <> 'maka_workspace_authority' AND NOT EXISTS (SELECT 1 "
                    "FROM agent_runs r WHERE r.session_id = e.session_id "
                    "AND r.run_id = e.run_id AND r.invocation_id = e.invocation_id) LIMIT 1");
      st.step()) {
    throw Error(code::store_run_header_missing,
                "run " + st.text(0) + "/" + st.text(1) + " (invocation " + st.text(2) +
                    ") has RuntimeEvents but no agent_runs header" + where);
  }
}

// The termination keys (runtime_turn_finalize) and the terminal headers against the ledger:
// what the terminal writer refuses later (termination_batch_conflict, run_sealed) is found
// here first, so a read-only check never calls a store intact that every writer refuses.
void checkTermination(Connection& c, const std::string& where) {
  if (auto st = c.prepare(
          "SELECT f.operation_id, f.session_id, f.run_id FROM runtime_turn_finalize f WHERE NOT "
          "EXISTS (SELECT 1 FROM runtime_events e WHERE e.event_id = f.terminal_event_id AND "
          "e.session_id = f.session_id AND e.run_id = f.run_id AND e.is_terminal = 1) LIMIT 1");
      st.step()) {
    throw Error(code::store_termination_conflict,
                "the termination key " + st.text(0) + " of run " + st.text(1) + "/" + st.text(2) +
                    " names a terminal RuntimeEvent the ledger does not hold (a deleted event)" +
                    where);
  }
  if (auto st = c.prepare(
          "SELECT r.session_id, r.run_id, r.status FROM agent_runs r WHERE r.status IN "
          "('completed', 'failed', 'cancelled') AND NOT EXISTS (SELECT 1 FROM runtime_events e "
          "WHERE e.session_id = r.session_id AND e.run_id = r.run_id AND e.is_terminal = 1) "
          "LIMIT 1");
      st.step()) {
    throw Error(code::store_termination_conflict,
                "run " + st.text(0) + "/" + st.text(1) + " has a " + st.text(2) +
                    " header but no terminal RuntimeEvent (a deleted event)" + where);
  }
  if (auto st = c.prepare(
          "SELECT r.session_id, r.run_id, f.operation_id, f.run_id FROM agent_runs r JOIN "
          "runtime_turn_finalize f ON f.session_id = r.session_id AND f.turn_id = r.turn_id "
          "WHERE f.run_id <> r.run_id AND r.status NOT IN ('completed', 'failed', 'cancelled') "
          "LIMIT 1");
      st.step()) {
    throw Error(code::store_termination_conflict,
                "run " + st.text(0) + "/" + st.text(1) +
                    " is open, but its turn's termination key " + st.text(2) + " belongs to run " +
                    st.text(3) + " (an extra run header): no terminal batch could ever end it" +
                    where);
  }
}

}  // namespace

void RuntimeStore::checkIntact() const {
  const std::string where = " in " + impl_->file.string();
  // integrity_check, not quick_check: only it verifies each index against its table, and a
  // flipped bit in an index page hides events from the readers that seek through it (a run
  // then seems to have no terminal event). Its cost is in README "Performance".
  const std::string check = integrityCheck();
  if (check != "ok") {
    throw Error(code::store_corrupt, "integrity check of " + impl_->file.string() +
                                         " failed: " + firstIntegrityProblem(check));
  }
  std::lock_guard lk(impl_->mu);
  Connection& c = *impl_->conn;
  // One read transaction: every check sees the same commit.
  c.execScript("BEGIN");
  struct EndRead {
    Connection& c;
    ~EndRead() {
      try {
        c.execScript("COMMIT");
      } catch (...) {
      }
    }
  } endRead{c};
  checkLedgerShape(c, where);
  checkTermination(c, where);
  if (const std::string diff = projectionDifference(*this, c); !diff.empty())
    throw Error(code::store_projection_mismatch, diff + where);
  if (const std::string diff = store_detail::workspaceProjectionDifference(c); !diff.empty())
    throw Error(code::store_projection_mismatch, diff + where);
}

std::string RuntimeStore::integrityCheck() const {
  std::lock_guard lk(impl_->mu);
  return checkPragma(*impl_->conn, "PRAGMA integrity_check");
}

}  // namespace crashsim
