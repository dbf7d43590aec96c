// run_headers.cpp — the agent_runs rows (crashsim/store.h "run headers", spec g): RunHeader's
// JSON, its writers (createRun; updateRunHeader; markRunTerminal, after the terminal fact) and
// its checked reads.
#include <mutex>
#include <string>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/plant.h"
#include "crashsim/store.h"
#include "crashsim/terminal_facts.h"
#include "crashsim/workspace_facts.h"
#include "store/store_impl.h"
#include "store/store_internal.h"

namespace crashsim {

using store_detail::Connection;
using store_detail::ImmediateTx;

namespace {

RunHeader headerFromRow(store_detail::Stmt& st) {
  // columns: session_id, run_id, invocation_id, turn_id, status, header_json
  RunHeader h;
  try {
    h = RunHeader::fromJson(parseJson(st.text(5)));
  } catch (const Error& e) {
    throw Error(code::store_corrupt,
                "Corrupt run header row " + st.text(0) + "/" + st.text(1) + ": " + e.what());
  }
  if (h.sessionId != st.text(0) || h.runId != st.text(1) || h.invocationId != st.text(2) ||
      h.turnId != st.text(3) || h.status != st.text(4)) {
    throw Error(code::row_payload_identity_mismatch,
                "Run header row/payload identity mismatch for " + st.text(0) + "/" + st.text(1));
  }
  return h;
}

// The stored header of header's run (checked by headerFromRow), read by the header writers
// inside their transaction, and its stored JSON in *storedJson when given;
// code::run_not_found when the run has none.
RunHeader storedHeaderOf(Connection& c, const RunHeader& header,
                         std::string* storedJson = nullptr) {
  auto sel = c.prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE session_id = ?1 AND run_id = ?2");
  sel.bind(1, header.sessionId).bind(2, header.runId);
  if (!sel.step()) {
    throw Error(code::run_not_found, "Unknown run " + header.sessionId + "/" + header.runId);
  }
  RunHeader stored = headerFromRow(sel);
  if (storedJson) *storedJson = sel.text(5);
  return stored;
}

}  // namespace

// ----------------------------------------------------------------------------------------
// RunHeader JSON

Json RunHeader::toJson() const {
  Json j = Json::object();
  j["sessionId"] = sessionId;
  j["runId"] = runId;
  j["invocationId"] = invocationId;
  j["turnId"] = turnId;
  j["status"] = status;
  j["createdAt"] = createdAt;
  j["updatedAt"] = updatedAt;
  if (completedAt) j["completedAt"] = *completedAt;
  if (failureClass) j["failureClass"] = *failureClass;
  if (failureMessage) j["failureMessage"] = *failureMessage;
  if (abortSource) j["abortSource"] = *abortSource;
  if (workspaceIdentity) j["workspaceIdentity"] = *workspaceIdentity;
  if (cwd) j["cwd"] = *cwd;
  if (parentRunId) j["parentRunId"] = *parentRunId;
  if (parentTurnId) j["parentTurnId"] = *parentTurnId;
  if (continuationSource) j["continuationSource"] = *continuationSource;
  if (workspaceBoundary) j["workspaceBoundary"] = *workspaceBoundary;
  return j;
}

RunHeader RunHeader::fromJson(const Json& j) {
  if (!j.is_object()) throw Error(code::wrong_type, "run header must be an object");
  static const char* const kKnown[] = {"sessionId",
                                       "runId",
                                       "invocationId",
                                       "turnId",
                                       "status",
                                       "createdAt",
                                       "updatedAt",
                                       "completedAt",
                                       "failureClass",
                                       "failureMessage",
                                       "abortSource",
                                       "workspaceIdentity",
                                       "cwd",
                                       "parentRunId",
                                       "parentTurnId",
                                       "continuationSource",
                                       "workspaceBoundary"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) throw Error(code::unknown_key, "unknown run header key " + it.key());
  }
  auto str = [&](const char* k) -> std::string {
    if (!j.contains(k)) throw Error(code::missing_field, std::string("run header lacks ") + k);
    if (!j[k].is_string()) throw Error(code::wrong_type, std::string("run header ") + k);
    return j[k].get<std::string>();
  };
  auto optStr = [&](const char* k) -> std::optional<std::string> {
    if (!j.contains(k)) return std::nullopt;
    if (!j[k].is_string()) throw Error(code::wrong_type, std::string("run header ") + k);
    return j[k].get<std::string>();
  };
  auto num = [&](const char* k) -> double {
    if (!j.contains(k)) throw Error(code::missing_field, std::string("run header lacks ") + k);
    if (!j[k].is_number()) throw Error(code::wrong_type, std::string("run header ") + k);
    return j[k].get<double>();
  };
  RunHeader h;
  h.sessionId = str("sessionId");
  h.runId = str("runId");
  h.invocationId = str("invocationId");
  h.turnId = str("turnId");
  h.status = str("status");
  if (h.status != code::created && h.status != code::running && !isTerminalRunStatus(h.status)) {
    throw Error(code::invalid_enum, "run header status " + h.status);
  }
  h.createdAt = num("createdAt");
  h.updatedAt = num("updatedAt");
  if (j.contains("completedAt")) h.completedAt = num("completedAt");
  h.failureClass = optStr("failureClass");
  h.failureMessage = optStr("failureMessage");
  h.abortSource = optStr("abortSource");
  h.workspaceIdentity = optStr("workspaceIdentity");
  h.cwd = optStr("cwd");
  h.parentRunId = optStr("parentRunId");
  h.parentTurnId = optStr("parentTurnId");
  if (j.contains("continuationSource")) h.continuationSource = j["continuationSource"];
  if (j.contains("workspaceBoundary")) {
    if (!j["workspaceBoundary"].is_object())
      throw Error(code::wrong_type, "run header workspaceBoundary");
    h.workspaceBoundary = j["workspaceBoundary"];
  }
  return h;
}

// --- run headers ---

void RuntimeStore::createRun(const RunHeader& header) {
  // The authority session has spines, never runs (workspace-continuity-contract.md b.2).
  if (header.sessionId == kWorkspaceAuthoritySession)
    throw Error(code::reserved_workspace_fact,
                "the workspace authority session " + header.sessionId + " holds no run header");
  std::lock_guard lk(impl_->mu);
  Connection& c = *impl_->conn;
  const std::string json = stableJson(header.toJson());
  ImmediateTx tx(c);
  auto sel = c.prepare("SELECT header_json FROM agent_runs WHERE session_id = ?1 AND run_id = ?2");
  sel.bind(1, header.sessionId).bind(2, header.runId);
  if (sel.step()) {
    if (sel.text(0) == json) return;  // exact retry
    throw Error(code::run_header_conflict,
                "Run header conflict for " + header.sessionId + "/" + header.runId);
  }
  store_detail::insertRunHeader(c, header);
  tx.commit();
}

namespace store_detail {
void insertRunHeader(Connection& c, const RunHeader& h) {
  auto ins = c.prepare(
      "INSERT INTO agent_runs (session_id, run_id, invocation_id, turn_id, status, header_json, "
      "created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  ins.bind(1, h.sessionId)
      .bind(2, h.runId)
      .bind(3, h.invocationId)
      .bind(4, h.turnId)
      .bind(5, h.status)
      .bind(6, stableJson(h.toJson()))
      .bind(7, h.createdAt)
      .bind(8, h.updatedAt);
  ins.exec();
}

std::optional<RunHeader> readRunHeader(Connection& c, const std::string& sessionId,
                                       const std::string& runId) {
  auto st = c.prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE session_id = ?1 AND run_id = ?2");
  st.bind(1, sessionId).bind(2, runId);
  if (!st.step()) return std::nullopt;
  return headerFromRow(st);
}
}  // namespace store_detail

std::optional<RunHeader> RuntimeStore::readRun(const std::string& sessionId,
                                               const std::string& runId) const {
  std::lock_guard lk(impl_->mu);
  return store_detail::readRunHeader(*impl_->conn, sessionId, runId);
}

std::vector<RunHeader> RuntimeStore::listRuns(const std::optional<std::string>& sessionId) const {
  std::lock_guard lk(impl_->mu);
  std::vector<RunHeader> out;
  auto st = impl_->conn->prepare(
      "SELECT session_id, run_id, invocation_id, turn_id, status, header_json FROM agent_runs "
      "WHERE ?1 IS NULL OR session_id = ?1 ORDER BY session_id, created_at, run_id");
  st.bind(1, sessionId);
  while (st.step()) out.push_back(headerFromRow(st));
  return out;
}

namespace store_detail {
void writeHeader(Connection& c, const RunHeader& h, const std::string& json) {
  auto up = c.prepare(
      "UPDATE agent_runs SET status = ?3, header_json = ?4, updated_at = ?5, invocation_id = ?6, "
      "turn_id = ?7 WHERE session_id = ?1 AND run_id = ?2");
  up.bind(1, h.sessionId)
      .bind(2, h.runId)
      .bind(3, h.status)
      .bind(4, json)
      .bind(5, h.updatedAt)
      .bind(6, h.invocationId)
      .bind(7, h.turnId);
  up.exec();
}
}  // namespace store_detail

void RuntimeStore::markRunTerminal(const RunHeader& header) {
  std::lock_guard lk(impl_->mu);
  if (!isTerminalRunStatus(header.status)) {
    throw Error(code::run_header_conflict,
                "markRunTerminal requires a terminal status, got " + header.status);
  }
  Connection& c = *impl_->conn;
  const std::string json = stableJson(header.toJson());
  ImmediateTx tx(c);
  std::string storedJson;
  RunHeader stored = storedHeaderOf(c, header, &storedJson);
  if (stored.invocationId != header.invocationId || stored.turnId != header.turnId) {
    throw Error(code::run_header_conflict,
                "Run header identity conflict for " + header.sessionId + "/" + header.runId);
  }
  if (isTerminalRunStatus(stored.status)) {
    if (storedJson == json) return;  // exact retry
    throw Error(code::run_header_conflict, "Run " + header.sessionId + "/" + header.runId +
                                               " already has a different terminal header");
  }
  // The terminal fact must already be durable: exactly one terminal event with a mapping status.
  // (The planted repair_header_first and stop_header_before_fact bugs also switch this defence
  // off, so V7 and the Stop oracle have to catch them.)
  if (planted("repair_header_first") || planted("stop_header_before_fact")) {
    writeHeader(c, header, json);
    tx.commit();
    return;
  }
  auto events = store_detail::readRunEvents(c, header.sessionId, header.runId);
  std::vector<const StoredEvent*> terminals;
  for (const auto& e : events)
    if (e.event.isTerminal()) terminals.push_back(&e);
  if (terminals.size() != 1) {
    throw Error(code::run_terminal_fact_missing,
                "Run " + header.sessionId + "/" + header.runId + " has " +
                    std::to_string(terminals.size()) +
                    " terminal RuntimeEvents; the header follows exactly one terminal fact");
  }
  auto st = terminalRunStatusOf(terminals[0]->event);
  if (!st || *st != header.status) {
    throw Error(code::run_terminal_fact_missing, "Run " + header.sessionId + "/" + header.runId +
                                                     " terminal fact " + terminals[0]->event.id +
                                                     " does not establish status " + header.status);
  }
  writeHeader(c, header, json);
  tx.commit();
}

void RuntimeStore::updateRunHeader(const RunHeader& header) {
  std::lock_guard lk(impl_->mu);
  if (isTerminalRunStatus(header.status)) {
    throw Error(code::run_terminal_fact_missing,
                "terminal run headers are written by markRunTerminal after the terminal fact");
  }
  Connection& c = *impl_->conn;
  const std::string json = stableJson(header.toJson());
  ImmediateTx tx(c);
  RunHeader stored = storedHeaderOf(c, header);
  if (isTerminalRunStatus(stored.status)) {
    throw Error(code::run_sealed,
                "Run " + header.sessionId + "/" + header.runId + " header is already terminal");
  }
  if (stored.invocationId != header.invocationId || stored.turnId != header.turnId) {
    throw Error(code::run_header_conflict,
                "Run header identity conflict for " + header.sessionId + "/" + header.runId);
  }
  writeHeader(c, header, json);
  tx.commit();
}

}  // namespace crashsim
