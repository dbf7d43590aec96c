// resolver_model_decide.h — the resolver model's decisions (resolver_model.h): the protocol
// marker (spec c.1), the per-operation decision order (c.3 steps 1–6) and the recovery tail
// (c.3 step 7, c.4) with the bundle validity rules of f.6.
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
#include "verdicts/resolver_model_events.h"
#include "verdicts/resolver_model_types.h"

namespace crashsim::model::impl {

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

}  // namespace crashsim::model::impl
