// The corruption injector's ledger edits (call_delete … marker_delete): an operation's facts
// removed or changed the way a careless migration or a hand edit would, event_seq kept
// contiguous, with the contract's decision for what remains (modes/corruption_store.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "crashsim/codes.h"
#include "modes/corruption_store.h"

namespace crashsim::harness {
namespace {

// ---- ledger edits (call_delete … marker_delete) -------------------------------------------

// One operation's facts in a run, from the stored payloads (read by the harness, no runtime
// code): the rows of its call, dispatch and response, and whether recovery facts name it.
struct OpFacts {
  std::string runId, callId, operationId;
  std::optional<size_t> call, dispatch, response;
  bool recovery = false;
};

struct LedgerRows {
  std::vector<std::vector<std::string>>
      rows;  // event_id, run_id, invocation_id, event_seq, payload
  std::vector<nlohmann::json> payloads;
  std::vector<OpFacts> ops;                  // creation order
  std::map<std::string, size_t> firstOfRun;  // run → its lowest-event_seq row
};

const nlohmann::json* at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string textAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* v = at(j, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

LedgerRows readLedger(Db& d) {
  LedgerRows l;
  l.rows = d.rows(
      "SELECT event_id, run_id, invocation_id, event_seq, payload_json FROM runtime_events "
      "ORDER BY rowid");
  std::map<std::pair<std::string, std::string>, size_t> byCall;  // (run, call id) → op
  std::map<std::string, size_t> byOperation;
  auto opOf = [&](const std::string& run, const std::string& callId) -> OpFacts& {
    auto [it, fresh] = byCall.try_emplace({run, callId}, l.ops.size());
    if (fresh) l.ops.push_back(OpFacts{run, callId, {}, {}, {}, {}, false});
    return l.ops[it->second];
  };
  std::vector<size_t> recoveryRows;
  for (size_t i = 0; i < l.rows.size(); ++i) {
    const auto& row = l.rows[i];
    l.payloads.push_back(nlohmann::json::parse(row[4], nullptr, false));
    const nlohmann::json& p = l.payloads.back();
    auto first = l.firstOfRun.find(row[1]);
    if (first == l.firstOfRun.end() || std::stoll(l.rows[first->second][3]) > std::stoll(row[3]))
      l.firstOfRun[row[1]] = i;
    if (!p.is_object() || p.value("partial", false)) continue;
    const std::string kind = textAt(p, {"content", "kind"});
    if (kind == "function_call") opOf(row[1], textAt(p, {"content", "id"})).call = i;
    if (kind == "function_response") opOf(row[1], textAt(p, {"content", "id"})).response = i;
    if (at(p, {"actions", "toolDispatch"})) {
      OpFacts& op = opOf(row[1], textAt(p, {"actions", "toolDispatch", "providerToolCallId"}));
      op.dispatch = i;
      op.operationId = textAt(p, {"actions", "toolDispatch", "operationId"});
      byOperation[op.operationId] = static_cast<size_t>(&op - l.ops.data());
    }
    if (at(p, {"actions", "toolRecovery"})) recoveryRows.push_back(i);
  }
  for (size_t i : recoveryRows)
    if (auto it =
            byOperation.find(textAt(l.payloads[i], {"actions", "toolRecovery", "operationId"}));
        it != byOperation.end())
      l.ops[it->second].recovery = true;
  return l;
}

// The contract's decision (spec c.3 steps 1–5, c.5) of an operation without recovery facts
// whose remaining facts are these. Restated here from the contract, not the runtime's resolver.
ExpectedDecision contractDecision(const OpFacts& op, bool call, bool dispatch, bool response,
                                  bool newProtocol, bool argsHashConflict) {
  ExpectedDecision x{op.runId, op.callId, "", ""};
  auto set = [&](std::string_view status, std::string_view reason) {
    x.status = status;
    x.reason = reason;
  };
  if (!call && dispatch)
    set(code::corruption, code::orphan_dispatch);
  else if (!call && response)
    set(code::corruption, code::orphan_response);
  else if (!call)
    return x;  // nothing of the operation remains
  else if (argsHashConflict && dispatch)
    set(code::corruption, code::canonical_args_hash_conflict);
  else if (response)
    set(code::completed, code::matching_response);
  else if (dispatch)
    set(code::indeterminate, code::dispatch_without_response);
  else if (newProtocol)
    set(code::definitely_not_dispatched, code::new_protocol_before_dispatch);
  else
    set(code::indeterminate, code::legacy_dispatch_unknown);
  return x;
}

bool hasMarker(const nlohmann::json& payload) {
  return at(payload, {"actions", "runtimeProtocol"}) != nullptr;
}

// Deletes one event and closes the event_seq gap it leaves in its invocation.
void deleteEventKeepingSeq(Db& d, const std::vector<std::string>& row) {
  const std::string inv = sqlQuoted(row[2]);
  d.exec("BEGIN");
  d.exec("DELETE FROM runtime_events WHERE event_id = " + sqlQuoted(row[0]));
  d.exec("UPDATE runtime_events SET event_seq = event_seq + 1000000000 WHERE invocation_id = " +
         inv + " AND event_seq > " + row[3]);
  d.exec("UPDATE runtime_events SET event_seq = event_seq - 1000000001 WHERE invocation_id = " +
         inv + " AND event_seq > 1000000000");
  d.exec("COMMIT");
}

void setPayload(Db& d, const std::string& eventId, const nlohmann::json& payload) {
  d.exec("UPDATE runtime_events SET payload_json = " + sqlQuoted(payload.dump()) +
         " WHERE event_id = " + sqlQuoted(eventId));
}

}  // namespace

void editLedger(Db& d, const std::string& kind, Choices& ch, AppliedCorruption& a) {
  LedgerRows l = readLedger(d);
  auto& r = a.record;
  // No operation with recovery facts is edited: its bundle would fail first (c.3 step 7).
  std::vector<size_t> candidates;
  for (size_t k = 0; k < l.ops.size(); ++k) {
    const OpFacts& op = l.ops[k];
    if (op.recovery) continue;
    const bool fits = kind == "call_delete"       ? op.call.has_value()
                      : kind == "dispatch_delete" ? op.dispatch.has_value()
                      : kind == "response_delete" ? op.response.has_value()
                      : kind == "call_args_change"
                          ? op.call && op.dispatch
                          : op.call && hasMarker(l.payloads[l.firstOfRun[op.runId]]);
    if (fits) candidates.push_back(k);
  }
  if (candidates.empty()) {
    r.detail = "no operation this edit applies to";
    return;
  }
  const OpFacts& op = l.ops[candidates[ch.below(candidates.size())]];
  const bool newProtocol = hasMarker(l.payloads[l.firstOfRun[op.runId]]);
  bool call = op.call.has_value(), dispatch = op.dispatch.has_value(),
       response = op.response.has_value(), conflict = false;
  std::optional<size_t> removed;
  if (kind == "call_delete") removed = op.call, call = false;
  if (kind == "dispatch_delete") removed = op.dispatch, dispatch = false;
  if (kind == "response_delete") removed = op.response, response = false;
  if (removed) {
    deleteEventKeepingSeq(d, l.rows[*removed]);
    r.detail = fmt::format("{} of call {} in run {} deleted, later events renumbered",
                           l.rows[*removed][0], op.callId, op.runId);
  } else if (kind == "call_args_change") {
    nlohmann::json p = l.payloads[*op.call];
    p["content"]["args"] = nlohmann::json{{"crashsimEdited", true}};
    setPayload(d, l.rows[*op.call][0], p);
    conflict = true;
    r.detail = fmt::format("the args of call {} in run {} changed after its dispatch hashed them",
                           op.callId, op.runId);
  } else {  // marker_delete: every operation of the run is decided as legacy
    const size_t first = l.firstOfRun[op.runId];
    nlohmann::json p = l.payloads[first];
    p["actions"].erase("runtimeProtocol");
    if (p["actions"].empty()) p.erase("actions");
    setPayload(d, l.rows[first][0], p);
    r.detail = fmt::format("the t1_after_preflight_v1 marker of run {}'s first event {} removed",
                           op.runId, l.rows[first][0]);
    for (const OpFacts& o : l.ops)
      if (o.runId == op.runId && !o.recovery)
        a.expectedDecisions.push_back(contractDecision(
            o, o.call.has_value(), o.dispatch.has_value(), o.response.has_value(), false, false));
  }
  if (kind != "marker_delete")
    a.expectedDecisions.push_back(
        contractDecision(op, call, dispatch, response, newProtocol, conflict));
  // The store's self-checks may or may not see an edit that keeps event_seq contiguous (a
  // projection row that names a deleted event does; a pre-T1 call has none): refused, or
  // recovered from the edited history, the decisions on it are V4's to judge.
  a.mayGoUnnoticed = true;
}

}  // namespace crashsim::harness
