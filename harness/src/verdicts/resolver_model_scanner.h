// resolver_model_scanner.h — the resolver model's c.2 scanner (resolver_model.h): the ledger's
// events bound into operations, call, dispatch, response and recovery facts, with every issue the
// contract names (duplicates, orphans, identity and order conflicts).
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

}  // namespace crashsim::model::impl
