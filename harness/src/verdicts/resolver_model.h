// resolver_model.h — an independent reference model of the RecoveryResolver (spec c.1–c.5).
//
// Written from the contract text only; it shares no code with runtime/src/recovery. It reads
// each event's canonical JSON (event.json) itself — lane detection (a.5), the scanner pass
// (c.2), the per-operation decision order (c.3), the recovery-tail rules (c.4) with the
// bundle validation rules of f.6 (the first failing code is reported beside the resolution, as
// the runtime's recoveryTails; the decision is always recovery_fact_corruption) and the
// resolution flags. The only
// shared helper is canonicalArgsHash (the codec's frozen hash, a.7); the stable codes it decides
// are the contract's vocabulary, spelled once in crashsim/codes.h (data, no logic).
//
// Deliberately simple: maps and linear scans, no performance concerns. The harness judges every
// crashed and every recovered ledger with it (V4, case_runner.cpp); the property tests compare it
// with the resolver on generated ledgers (property_tests/resolver_model_test.cpp).
//
// Readings where the spec text leaves room (each chosen as the fail-closed one):
//  * c.2 step 6: a dispatch that creates its operation (no call yet) is still checked for
//    operationId ownership (duplicate_operation) and identity (refs) like any other dispatch;
//    duplicate_operation is ONE issue (the dispatch's id) recorded on both operations.
//  * c.2 steps 6/7: "tool name equal to the call's" compares with the operation's tool name
//    (the call's, or the first fact's when the call is missing); a response attached to an
//    operation without a call has no call identity to match → identity_conflict.
//  * c.3 step 7: the recovery tail is interpreted only for operations that steps 1–3 did not
//    already mark as corruption (c.5: no combination may degrade from corruption to settled).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/runtime_event.h"

namespace crashsim::model {

struct Decision {
  std::string toolCallId;
  std::optional<std::string> toolName, operationId;
  std::string status, reason;
  std::optional<std::string> settlementOrigin;
  std::optional<std::string> callId, dispatchId, responseId;
  std::optional<bool> responseIsError;
};

struct Issue {
  std::string code, eventId;
  bool operator<(const Issue& o) const {
    return std::tie(code, eventId) < std::tie(o.code, o.eventId);
  }
  bool operator==(const Issue& o) const = default;
};

// One operation's recovery-tail check (RecoveryTailCheck): "valid" or the failing code.
struct TailCheck {
  std::string operationId, toolCallId, firstFactId, result;
  bool operator==(const TailCheck& o) const = default;
};

struct Resolution {
  bool newProtocol = false;
  std::vector<Decision> decisions;
  std::vector<Issue> issues;     // scanner codes only (c.2); a tail failure is never one
  std::vector<TailCheck> tails;  // per operation with recovery facts, in decision order
  bool hasCorruption = false;
  bool requiresReconciliation = false;
};

namespace impl {

inline const Json* field(const Json& o, const char* k) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}
inline std::string str(const Json& o, const char* k) {
  const Json* v = field(o, k);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}
inline bool keysExactly(const Json& o, std::set<std::string> keys) {
  if (!o.is_object() || o.size() != keys.size()) return false;
  for (auto it = o.begin(); it != o.end(); ++it)
    if (!keys.count(it.key())) return false;
  return true;
}

enum class L { ordinary, call, dispatch, response, reconcile, decision, conflict };

// a.5: lanes by field presence, then each lane's mandatory envelope.
inline L laneOf(const Json& e) {
  const Json* content = field(e, "content");
  const Json* actions = field(e, "actions");
  const Json* refs = field(e, "refs");
  const std::string kind = content ? str(*content, "kind") : "";
  std::vector<L> lanes;
  if (kind == "function_call") lanes.push_back(L::call);
  if (actions && field(*actions, "toolDispatch")) lanes.push_back(L::dispatch);
  if (kind == "function_response") lanes.push_back(L::response);
  if (actions && field(*actions, "toolRecovery")) {
    const std::string rk = str(*field(*actions, "toolRecovery"), "kind");
    if (rk == "maka.tool.reconcile_result") lanes.push_back(L::reconcile);
    if (rk == "maka.tool.recovery_decision") lanes.push_back(L::decision);
  }
  if (lanes.empty()) return L::ordinary;
  if (lanes.size() > 1) return L::conflict;
  const L lane = lanes[0];
  const Json* partial = field(e, "partial");
  if ((partial && *partial == true) || field(e, "status") || field(e, "branch")) return L::conflict;
  const std::string role = str(e, "role"), author = str(e, "author");
  switch (lane) {
    case L::call: {
      if (role != "model" || author != "agent") return L::conflict;
      if (!actions) return lane;
      if (!keysExactly(*actions, {"stateDelta"})) return L::conflict;
      const Json& sd = (*actions)["stateDelta"];
      if (!sd.is_object() || sd.empty()) return L::conflict;
      for (auto it = sd.begin(); it != sd.end(); ++it) {
        if (it.key() != "activityKind" && it.key() != "displayName" && it.key() != "intent")
          return L::conflict;
        if (!it.value().is_string()) return L::conflict;
      }
      return lane;
    }
    case L::response: {
      if (role != "tool" || author != "tool") return L::conflict;
      if (!actions) return lane;
      if (!keysExactly(*actions, {"stateDelta"})) return L::conflict;
      const Json& sd = (*actions)["stateDelta"];
      if (!keysExactly(sd, {"durationMs"}) || !sd["durationMs"].is_number()) return L::conflict;
      return lane;
    }
    case L::dispatch: {
      if (content || role != "system" || author != "system") return L::conflict;
      if (!keysExactly(*actions, {"toolDispatch"})) return L::conflict;
      if (!refs) return L::conflict;
      if (!keysExactly(*refs, {"operationId", "toolCallId"}) &&
          !keysExactly(*refs,
                       {"operationId", "toolCallId", "parentToolCallId", "parentOperationId"}))
        return L::conflict;
      return lane;
    }
    default: {  // reconcile / decision
      if (content || role != "system" || author != "system") return L::conflict;
      if (!keysExactly(*actions, {"toolRecovery"})) return L::conflict;
      if (!refs || !keysExactly(*refs, {"operationId", "toolCallId"})) return L::conflict;
      return lane;
    }
  }
}

struct Op {
  std::string inv, callId;
  std::optional<std::string> toolName, opId;
  std::optional<size_t> call, dispatch, response;
  std::vector<size_t> reconciles, decisions;
  std::vector<std::string> issues;
};

struct Exec {  // (session, invocation, run, turn)
  std::string s, i, r, t;
  bool operator==(const Exec&) const = default;
};
inline Exec execOf(const Json& e) {
  return {str(e, "sessionId"), str(e, "invocationId"), str(e, "runId"), str(e, "turnId")};
}

// f.6 step 2, validity only. `outcome` is the operation's response, if any.
inline std::string bundleFailure(const std::vector<Json>& E, const Op& op, size_t callI,
                                 size_t dispI, size_t recI, std::optional<size_t> outI,
                                 size_t decI) {
  const Json& call = E[callI];
  const Json& disp = E[dispI];
  const Json& td = disp["actions"]["toolDispatch"];
  const std::string opId = *op.opId;
  const std::string callId = str(call["content"], "id");
  const std::string name = str(call["content"], "name");
  // call identity
  const std::string callConflict(code::call_identity_conflict);
  if (laneOf(call) != L::call) return callConflict;
  if (callId != str(td, "providerToolCallId") || name != str(td, "toolName")) return callConflict;
  if (!(execOf(call) == execOf(disp))) return callConflict;
  // args hash
  try {
    if (canonicalArgsHash(name, call["content"]["args"]) != str(td, "canonicalArgsHash"))
      return std::string(code::canonical_args_hash_conflict);
  } catch (...) {
    return std::string(code::canonical_args_hash_conflict);
  }
  // dispatch identity
  if (str(td, "operationId") != opId || str(disp["refs"], "operationId") != opId ||
      str(disp["refs"], "toolCallId") != callId)
    return std::string(code::dispatch_identity_conflict);
  if (str(td, "recoveryMode") != std::string(code::reconcile))
    return std::string(code::recovery_mode_unsupported);
  const Json& rec = E[recI];
  const Json& dec = E[decI];
  const Json& rtr = rec["actions"]["toolRecovery"];
  const Json& dtr = dec["actions"]["toolRecovery"];
  if (str(rtr, "kind") != "maka.tool.reconcile_result")
    return std::string(code::reconcile_fact_invalid);
  if (str(dtr, "kind") != "maka.tool.recovery_decision")
    return std::string(code::decision_fact_invalid);
  const Json& rp = rtr["payload"];
  const Json& dp = dtr["payload"];
  // fact identity
  for (const Json* f : {&rec, &dec}) {
    if (!(execOf(*f) == execOf(call)) || str((*f)["refs"], "operationId") != opId ||
        str((*f)["refs"], "toolCallId") != callId)
      return std::string(code::recovery_fact_identity_conflict);
  }
  if (str(rp, "operationId") != opId || str(dp, "operationId") != opId)
    return std::string(code::operation_identity_conflict);
  const std::string observation = str(rp, "observation");
  const std::string disposition = str(dp, "disposition");
  std::vector<std::string> expectedEvidence = {str(call, "id"), str(disp, "id"), str(rec, "id")};
  if (disposition == std::string(code::completed)) {
    if (!outI) return std::string(code::outcome_required);
    const Json& out = E[*outI];
    if (laneOf(out) != L::response || str(out["content"], "id") != callId ||
        str(out["content"], "name") != name || !field(out, "refs") ||
        str(out["refs"], "operationId") != opId || str(out["refs"], "toolCallId") != callId ||
        !(execOf(out) == execOf(call)))
      return std::string(code::outcome_identity_conflict);
    const Json* isErr = field(out["content"], "isError");
    if (isErr && *isErr == true) return std::string(code::outcome_not_successful);
    if (str(dp, "outcomeEventId") != str(out, "id"))
      return std::string(code::outcome_reference_conflict);
    if (observation != std::string(code::matches_expected_state) ||
        str(dp, "reasonCode") != std::string(code::reconcile_matches_expected_state))
      return std::string(code::reconcile_decision_conflict);
    expectedEvidence.push_back(str(out, "id"));
  } else if (disposition == std::string(code::parked)) {
    if (outI) return std::string(code::outcome_for_parked);
    if (observation == std::string(code::matches_expected_state) ||
        str(dp, "reasonCode") != "reconcile_" + observation)
      return std::string(code::reconcile_decision_conflict);
  } else {
    return std::string(code::decision_fact_invalid);
  }
  const Json* ev = field(dp, "evidenceEventIds");
  if (!ev || !ev->is_array() || ev->size() != expectedEvidence.size())
    return std::string(code::evidence_order_conflict);
  for (size_t k = 0; k < expectedEvidence.size(); ++k)
    if ((*ev)[k] != expectedEvidence[k]) return std::string(code::evidence_order_conflict);
  return {};
}

// The c.2 scanner: the ledger's events bound into operations, with every issue it finds.
class Scanner {
 public:
  Scanner(const std::vector<Json>& E, Resolution& res) : E_(E), res_(res) {}

  // Binds event i into its operation (or records why it cannot).
  void scan(size_t i) {
    const Json& e = E_[i];
    const std::string id = str(e, "id");
    if (seenIds_.count(id)) {
      res_.issues.push_back({std::string(code::duplicate_event_id), id});
      return;
    }
    seenIds_.insert(id);
    const auto triple = std::make_tuple(str(e, "sessionId"), str(e, "runId"), str(e, "turnId"));
    auto [sit, inserted] = spine_.emplace(str(e, "invocationId"), triple);
    if (!inserted && sit->second != triple)
      res_.issues.push_back({std::string(code::invocation_identity_conflict), id});
    const L lane = laneOf(e);
    if (lane == L::conflict) {
      res_.issues.push_back({std::string(code::semantic_lane_conflict), id});
      return;
    }
    if (field(e, "partial") && e["partial"] == true) return;
    if (lane == L::call)
      scanCall(i, e, id);
    else if (lane == L::dispatch)
      scanDispatch(i, e, id);
    else if (lane == L::response)
      scanResponse(i, e, id);
    else if (lane == L::reconcile || lane == L::decision)
      scanRecoveryFact(i, e, id, lane);
  }

  const std::vector<Op>& ops() const { return ops_; }

 private:
  void addOpIssue(Op& op, const std::string& code, const std::string& eventId) {
    op.issues.push_back(code);
    res_.issues.push_back({code, eventId});
  }

  void scanCall(size_t i, const Json& e, const std::string& id) {
    const std::string inv = str(e, "invocationId");
    const std::string cid = str(e["content"], "id");
    const std::string name = str(e["content"], "name");
    auto it = byKey_.find({inv, cid});
    if (it != byKey_.end()) {
      Op& op = ops_[it->second];
      if (!op.call) {
        op.call = i;
        if (op.toolName && *op.toolName != name)
          addOpIssue(op, std::string(code::identity_conflict), id);
      } else {
        addOpIssue(op, std::string(code::duplicate_call), id);
      }
    } else {
      Op op;
      op.inv = inv;
      op.callId = cid;
      op.toolName = name;
      op.call = i;
      byKey_[{inv, cid}] = ops_.size();
      ops_.push_back(op);
    }
  }

  void scanDispatch(size_t i, const Json& e, const std::string& id) {
    const std::string inv = str(e, "invocationId");
    const Json& td = e["actions"]["toolDispatch"];
    const std::string cid = str(td, "providerToolCallId");
    const std::string opId = str(td, "operationId");
    // Reading of c.2 step 6 (see the note at the top of this file): a dispatch that
    // creates its operation still goes through the operationId ownership check and the
    // identity checks below.
    auto it = byKey_.find({inv, cid});
    size_t oi;
    if (it == byKey_.end()) {
      Op op;
      op.inv = inv;
      op.callId = cid;
      op.toolName = str(td, "toolName");
      op.opId = opId;
      op.dispatch = i;
      oi = ops_.size();
      byKey_[{inv, cid}] = oi;
      ops_.push_back(op);
      addOpIssue(ops_.back(), std::string(code::event_order_conflict), id);
    } else {
      oi = it->second;
      if (ops_[oi].dispatch) {
        addOpIssue(ops_[oi], std::string(code::duplicate_dispatch), id);
        return;
      }
    }
    auto owner = owners_.find(opId);
    if (owner != owners_.end() && owner->second != oi) {
      // one issue, recorded on both operations
      res_.issues.push_back({std::string(code::duplicate_operation), id});
      ops_[owner->second].issues.push_back(std::string(code::duplicate_operation));
      ops_[oi].issues.push_back(std::string(code::duplicate_operation));
      return;
    }
    Op& op = ops_[oi];
    op.opId = opId;
    op.dispatch = i;
    owners_[opId] = oi;
    bool identityOk = str(e["refs"], "operationId") == opId && str(e["refs"], "toolCallId") == cid;
    if (op.toolName != str(td, "toolName")) identityOk = false;
    if (op.call && !(execOf(E_[*op.call]) == execOf(e))) identityOk = false;
    if (!identityOk) addOpIssue(op, std::string(code::identity_conflict), id);
    if (op.call) {
      const Json& call = E_[*op.call];
      bool hashOk = false;
      try {
        hashOk = canonicalArgsHash(str(call["content"], "name"), call["content"]["args"]) ==
                 str(td, "canonicalArgsHash");
      } catch (...) {
        hashOk = false;
      }
      if (!hashOk) addOpIssue(op, std::string(code::canonical_args_hash_conflict), id);
    }
    if (op.response) {
      addOpIssue(op, std::string(code::event_order_conflict), id);
      const Json& r = E_[*op.response];
      const Json* rr = field(r, "refs");
      const bool binds = rr && str(*rr, "operationId") == opId && str(*rr, "toolCallId") == cid &&
                         execOf(r) == execOf(e);
      if (!binds) addOpIssue(op, std::string(code::identity_conflict), str(r, "id"));
    }
  }

  void scanResponse(size_t i, const Json& e, const std::string& id) {
    const std::string inv = str(e, "invocationId");
    const std::string cid = str(e["content"], "id");
    const std::string name = str(e["content"], "name");
    auto it = byKey_.find({inv, cid});
    if (it == byKey_.end()) {
      Op op;
      op.inv = inv;
      op.callId = cid;
      op.toolName = name;
      op.response = i;
      byKey_[{inv, cid}] = ops_.size();
      ops_.push_back(op);
      addOpIssue(ops_.back(), std::string(code::orphan_response), id);
      return;
    }
    Op& op = ops_[it->second];
    if (op.response) {
      addOpIssue(op, std::string(code::duplicate_response), id);
      return;
    }
    op.response = i;
    bool ok = !op.toolName || *op.toolName == name;
    // "same execution identity as the call": without a call there is none to match.
    if (!op.call || !(execOf(E_[*op.call]) == execOf(e))) ok = false;
    if (op.opId) {
      const Json* rr = field(e, "refs");
      if (!rr || str(*rr, "operationId") != *op.opId || str(*rr, "toolCallId") != cid) ok = false;
    }
    if (!ok) addOpIssue(op, std::string(code::identity_conflict), id);
  }

  void scanRecoveryFact(size_t i, const Json& e, const std::string& id, L lane) {
    const std::string opId = str(e["actions"]["toolRecovery"]["payload"], "operationId");
    auto owner = owners_.find(opId);
    if (owner == owners_.end()) {
      res_.issues.push_back({std::string(code::event_order_conflict), id});
      return;
    }
    Op* found = &ops_[owner->second];
    (lane == L::reconcile ? found->reconciles : found->decisions).push_back(i);
  }

  const std::vector<Json>& E_;
  Resolution& res_;
  std::vector<Op> ops_;
  std::map<std::pair<std::string, std::string>, size_t> byKey_;
  std::set<std::string> seenIds_;
  std::map<std::string, std::tuple<std::string, std::string, std::string>> spine_;
  std::map<std::string, size_t> owners_;  // operationId -> operation that bound it
};

// c.1: the protocol marker, valid only on the first event.
inline void readProtocolMarker(const std::vector<Json>& E, Resolution& res) {
  for (size_t i = 0; i < E.size(); ++i) {
    const Json* actions = field(E[i], "actions");
    const Json* rp = actions ? field(*actions, "runtimeProtocol") : nullptr;
    if (!rp) continue;
    const bool valid = str(*rp, "toolBoundary") == std::string(code::t1_after_preflight_v1);
    if (i == 0 && valid)
      res.newProtocol = true;
    else
      res.issues.push_back({std::string(code::protocol_marker_invalid), str(E[i], "id")});
  }
}

// c.3 steps 1–6: the decision of one operation from its bound events and issues.
inline Decision decideOperation(const std::vector<Json>& E, const Op& op, bool newProtocol) {
  static const std::vector<std::string> priority = {
      std::string(code::duplicate_call),     std::string(code::duplicate_operation),
      std::string(code::duplicate_dispatch), std::string(code::duplicate_response),
      std::string(code::orphan_response),    std::string(code::canonical_args_hash_conflict),
      std::string(code::identity_conflict),  std::string(code::event_order_conflict)};
  Decision d;
  d.toolCallId = op.callId;
  d.toolName = op.toolName;
  d.operationId = op.opId;
  if (op.call) d.callId = str(E[*op.call], "id");
  if (op.dispatch) d.dispatchId = str(E[*op.dispatch], "id");
  if (op.response) {
    d.responseId = str(E[*op.response], "id");
    const Json* ie = field(E[*op.response]["content"], "isError");
    d.responseIsError = ie && *ie == true;
  }
  d.status =
      newProtocol ? std::string(code::definitely_not_dispatched) : std::string(code::indeterminate);
  d.reason = newProtocol ? std::string(code::new_protocol_before_dispatch)
                         : std::string(code::legacy_dispatch_unknown);
  if (!op.call && op.dispatch) {
    d.status = std::string(code::corruption), d.reason = std::string(code::orphan_dispatch);
  } else if (!op.call && op.response) {
    d.status = std::string(code::corruption), d.reason = std::string(code::orphan_response);
  } else if (!op.issues.empty()) {
    d.status = std::string(code::corruption);
    for (const auto& p : priority)
      if (std::find(op.issues.begin(), op.issues.end(), p) != op.issues.end()) {
        d.reason = p;
        break;
      }
  } else if (op.response) {
    d.status = std::string(code::completed), d.reason = std::string(code::matching_response);
    d.settlementOrigin =
        op.dispatch ? std::string(code::normal_t2) : std::string(code::pre_t1_synthetic);
  } else if (op.dispatch) {
    d.status = std::string(code::indeterminate),
    d.reason = std::string(code::dispatch_without_response);
  }
  return d;
}

// c.3 step 7 / c.4: the operation's recovery tail, checked and (when valid) settling `d`; the
// check is reported beside the resolution.
inline void applyRecoveryTail(const std::vector<Json>& E, const Op& op, Decision& d,
                              Resolution& res) {
  if (op.reconciles.empty() && op.decisions.empty()) return;
  // 7. recovery tail (c.4): never over a corruption found by steps 1-3 (c.5: no combination
  // may degrade from corruption to settled); the check reported beside the resolution then
  // names that corruption's reason.
  std::string failure;
  if (op.reconciles.size() != 1 || op.decisions.size() != 1 || !op.call || !op.dispatch ||
      !op.opId) {
    failure = code::recovery_fact_shape_conflict;
  } else {
    failure = bundleFailure(E, op, *op.call, *op.dispatch, op.reconciles[0], op.response,
                            op.decisions[0]);
  }
  if (failure.empty()) {
    std::vector<size_t> order = {*op.call, *op.dispatch, op.reconciles[0]};
    if (op.response) order.push_back(*op.response);
    order.push_back(op.decisions[0]);
    for (size_t k = 1; k < order.size(); ++k)
      if (order[k - 1] >= order[k]) failure = code::event_order_conflict;
  }
  size_t first = SIZE_MAX;
  for (size_t i : op.reconciles) first = std::min(first, i);
  for (size_t i : op.decisions) first = std::min(first, i);
  std::string opId = op.opId ? *op.opId : str(E[first]["actions"]["toolRecovery"], "operationId");
  // A tail behind a step 1-3 corruption is never consulted: the check names that reason.
  const bool decided = d.status == std::string(code::corruption);
  res.tails.push_back({opId, op.callId, str(E[first], "id"),
                       decided           ? d.reason
                       : failure.empty() ? std::string(code::valid)
                                         : failure});
  if (decided) {
    // steps 1-3 decided
  } else if (!failure.empty()) {
    d.status = std::string(code::corruption),
    d.reason = std::string(code::recovery_fact_corruption);
    d.settlementOrigin.reset();
  } else {
    const Json& dp = E[op.decisions[0]]["actions"]["toolRecovery"]["payload"];
    d.settlementOrigin = std::string(code::recovery_bundle);
    if (str(dp, "disposition") == std::string(code::completed)) {
      d.status = std::string(code::completed),
      d.reason = std::string(code::recovery_bundle_completed);
    } else {
      d.status = std::string(code::parked), d.reason = str(dp, "reasonCode");
    }
  }
}

}  // namespace impl

// The model resolver (c.1–c.5). `writtenUnderT1`: the protocol the run was written under, as
// the caller knows it from outside the ledger (the harness's oracle: the agent writes every
// run through T1, c.1 / j.4). When given, the decisions follow it, and a ledger whose marker
// says otherwise disagrees with the runtime (which reads the marker: toolBoundaryProtocol).
// When absent (generated ledgers), the model reads the marker itself (c.1).
inline Resolution resolve(const std::vector<RuntimeEvent>& events,
                          std::optional<bool> writtenUnderT1 = std::nullopt) {
  using namespace impl;
  std::vector<Json> E;
  for (const auto& ev : events) E.push_back(ev.json);
  Resolution res;
  readProtocolMarker(E, res);
  if (writtenUnderT1) res.newProtocol = *writtenUnderT1;
  Scanner scanner(E, res);
  for (size_t i = 0; i < E.size(); ++i) scanner.scan(i);
  for (const Op& op : scanner.ops()) {
    Decision d = decideOperation(E, op, res.newProtocol);
    applyRecoveryTail(E, op, d, res);
    res.decisions.push_back(d);
  }
  bool anyCorrupt = false, anyIndeterminate = false;
  for (const auto& d : res.decisions) {
    anyCorrupt |= d.status == std::string(code::corruption);
    anyIndeterminate |= d.status == std::string(code::indeterminate);
  }
  res.hasCorruption = !res.issues.empty() || anyCorrupt;
  res.requiresReconciliation = !res.hasCorruption && anyIndeterminate;
  return res;
}

// Compares the model with the runtime's resolution: protocol, flags, issues (as a multiset:
// the contract names the issues, not their detection order), the recovery-tail checks reported
// beside it (in decision order) and every decision field.
// Returns an empty string when they agree, else a description of the first differences.
inline std::string compare(const Resolution& m, const RecoveryResolution& r) {
  std::ostringstream os;
  auto opt = [](const std::optional<std::string>& s) { return s ? *s : std::string("<absent>"); };
  const bool rNew =
      r.toolBoundaryProtocol && *r.toolBoundaryProtocol == std::string(code::t1_after_preflight_v1);
  if (m.newProtocol != rNew)
    os << "toolBoundaryProtocol: model " << m.newProtocol << " resolver "
       << opt(r.toolBoundaryProtocol) << "\n";
  if (m.hasCorruption != r.hasCorruption)
    os << "hasCorruption: model " << m.hasCorruption << " resolver " << r.hasCorruption << "\n";
  if (m.requiresReconciliation != r.requiresReconciliation)
    os << "requiresReconciliation: model " << m.requiresReconciliation << " resolver "
       << r.requiresReconciliation << "\n";
  std::vector<Issue> mi = m.issues, ri;
  for (const auto& i : r.issues) ri.push_back({i.code, i.eventId});
  std::sort(mi.begin(), mi.end());
  std::sort(ri.begin(), ri.end());
  if (mi != ri) {
    os << "issues: model [";
    for (const auto& i : mi) os << i.code << "@" << i.eventId << " ";
    os << "] resolver [";
    for (const auto& i : ri) os << i.code << "@" << i.eventId << " ";
    os << "]\n";
  }
  std::vector<TailCheck> rt;
  for (const auto& t : r.recoveryTails)
    rt.push_back({t.operationId, t.toolCallId, t.firstRecoveryFactEventId, t.result});
  if (m.tails != rt) {
    os << "recoveryTails: model [";
    for (const auto& t : m.tails)
      os << t.toolCallId << "@" << t.firstFactId << ":" << t.result << " ";
    os << "] resolver [";
    for (const auto& t : rt) os << t.toolCallId << "@" << t.firstFactId << ":" << t.result << " ";
    os << "]\n";
  }
  if (m.decisions.size() != r.decisions.size()) {
    os << "decision count: model " << m.decisions.size() << " resolver " << r.decisions.size()
       << "\n";
  }
  for (size_t k = 0; k < std::min(m.decisions.size(), r.decisions.size()); ++k) {
    const Decision& a = m.decisions[k];
    const ToolDecision& b = r.decisions[k];
    std::ostringstream d;
    if (a.toolCallId != b.toolCallId) d << " toolCallId " << a.toolCallId << "/" << b.toolCallId;
    if (a.status != b.status) d << " status " << a.status << "/" << b.status;
    if (a.reason != b.reason) d << " reason " << a.reason << "/" << b.reason;
    if (a.settlementOrigin != b.settlementOrigin)
      d << " settlementOrigin " << opt(a.settlementOrigin) << "/" << opt(b.settlementOrigin);
    if (a.toolName != b.toolName) d << " toolName " << opt(a.toolName) << "/" << opt(b.toolName);
    if (a.operationId != b.operationId)
      d << " operationId " << opt(a.operationId) << "/" << opt(b.operationId);
    if (a.callId != b.callRuntimeEventId)
      d << " callRuntimeEventId " << opt(a.callId) << "/" << opt(b.callRuntimeEventId);
    if (a.dispatchId != b.dispatchRuntimeEventId)
      d << " dispatchRuntimeEventId " << opt(a.dispatchId) << "/" << opt(b.dispatchRuntimeEventId);
    if (a.responseId != b.responseRuntimeEventId)
      d << " responseRuntimeEventId " << opt(a.responseId) << "/" << opt(b.responseRuntimeEventId);
    if (a.responseIsError != b.responseIsError)
      d << " responseIsError "
        << (a.responseIsError ? (*a.responseIsError ? "true" : "false") : "<absent>") << "/"
        << (b.responseIsError ? (*b.responseIsError ? "true" : "false") : "<absent>");
    if (!d.str().empty()) os << "decision[" << k << "] (model/resolver):" << d.str() << "\n";
  }
  return os.str();
}

inline std::string show(const Resolution& m) {
  std::ostringstream os;
  os << "model: newProtocol=" << m.newProtocol << " hasCorruption=" << m.hasCorruption
     << " requiresReconciliation=" << m.requiresReconciliation << "\n";
  for (const auto& d : m.decisions)
    os << "  " << d.toolCallId << " " << d.status << "/" << d.reason << "\n";
  for (const auto& i : m.issues) os << "  issue " << i.code << "@" << i.eventId << "\n";
  for (const auto& t : m.tails)
    os << "  recoveryTail " << t.toolCallId << "@" << t.firstFactId << " " << t.result << "\n";
  return os.str();
}

}  // namespace crashsim::model
