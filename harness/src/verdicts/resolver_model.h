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
//
// The model's rooms: resolver_model_types.h (what it decides), resolver_model_events.h (reading
// one event), resolver_model_scanner.h (c.2), resolver_model_decide.h (c.1, c.3, c.4, f.6); this
// header resolves a ledger with them and compares the result with the runtime's.
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

#include "crashsim/recovery_resolver.h"
#include "crashsim/runtime_event.h"
#include "verdicts/resolver_model_decide.h"
#include "verdicts/resolver_model_scanner.h"
#include "verdicts/resolver_model_types.h"

namespace crashsim::model {

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
