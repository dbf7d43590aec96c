// prefix_plan_test.cpp — prefix properties (issue #8 item 3) and Phase 0 plan properties
// (item 4). The oracle for valid prefixes is the generating script itself (which events of
// each operation a committed prefix contains), not a model of the resolver.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>

#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "ledger_gen.h"

namespace crashsim {
namespace {

using propgen::BuiltLedger;
using propgen::Fate;
using propgen::OpFacts;

struct Expected {
  std::string status, reason;
  std::optional<std::string> origin;
};

// The contract's answer (c.5 rows) for one operation of a committed prefix of a valid ledger.
std::optional<Expected> expectedFor(const OpFacts& f, const std::set<std::string>& present,
                                    bool marker) {
  auto has = [&](const std::string& id) { return !id.empty() && present.count(id) > 0; };
  if (!has(f.callEventId)) return std::nullopt;
  if (!has(f.dispatchEventId)) {
    if (has(f.responseEventId))
      return Expected{"completed", "matching_response", "pre_t1_synthetic"};
    if (marker) return Expected{"definitely_not_dispatched", "new_protocol_before_dispatch", {}};
    return Expected{"indeterminate", "legacy_dispatch_unknown", {}};
  }
  if (has(f.decisionEventId)) {
    if (f.fate == Fate::bundle_completed)
      return Expected{"completed", "recovery_bundle_completed", "recovery_bundle"};
    return Expected{"parked", f.parkedReason, "recovery_bundle"};
  }
  if (has(f.responseEventId)) return Expected{"completed", "matching_response", "normal_t2"};
  return Expected{"indeterminate", "dispatch_without_response", {}};
}

struct Prefix {
  BuiltLedger ledger;
  std::vector<Json> json;
  std::vector<RuntimeEvent> events;
  std::set<std::string> present;
};

Prefix genCommittedPrefix() {
  Prefix p;
  p.ledger = propgen::buildLedger(*propgen::genLedgerSpec());
  const size_t cut = *rc::gen::elementOf(p.ledger.committedPrefixLengths());
  p.json.assign(p.ledger.events.begin(), p.ledger.events.begin() + static_cast<long>(cut));
  p.events = propgen::decodeValid(p.json);
  for (const auto& e : p.json) p.present.insert(e["id"].get<std::string>());
  return p;
}

// Item 3: for any valid ledger and any committed prefix, every operation gets exactly the
// c.5 row its facts name; in particular no operation with a response is indeterminate, no
// completed operation lacks a response or a completed bundle, no corruption is reported, and
// a prefix ending between T1 and T2 is exactly indeterminate / dispatch_without_response.
RC_GTEST_PROP(PrefixProperties, EveryCommittedPrefixResolvesToItsDecisionTableRow, ()) {
  const Prefix p = genCommittedPrefix();
  const RecoveryResolution r = resolveRecovery(p.events);
  RC_LOG() << propgen::showLedger(p.json) << toJson(r).dump() << "\n";

  RC_ASSERT(r.issues.empty());
  RC_ASSERT(!r.hasCorruption);
  RC_ASSERT(r.toolBoundaryProtocol.has_value() == p.ledger.marker);

  std::map<std::string, const ToolDecision*> byCall;
  for (const auto& d : r.decisions) {
    RC_ASSERT(d.status != "corruption");
    // no operation with a response is ever indeterminate
    if (d.responseRuntimeEventId) RC_ASSERT(d.status != "indeterminate");
    // no completed operation lacks a response or a completed bundle
    if (d.status == "completed") {
      RC_ASSERT(d.responseRuntimeEventId.has_value());
      RC_ASSERT(d.reason == "matching_response" || d.reason == "recovery_bundle_completed");
    }
    byCall[d.toolCallId] = &d;
  }
  bool anyIndeterminate = false;
  size_t expectedOps = 0;
  for (const auto& f : p.ledger.ops) {
    const auto exp = expectedFor(f, p.present, p.ledger.marker);
    if (!exp) {
      RC_ASSERT(byCall.count(f.callId) == 0u);
      continue;
    }
    ++expectedOps;
    RC_ASSERT(byCall.count(f.callId) == 1u);
    const ToolDecision& d = *byCall[f.callId];
    RC_ASSERT(d.status == exp->status);
    RC_ASSERT(d.reason == exp->reason);
    RC_ASSERT(d.settlementOrigin == exp->origin);
    RC_ASSERT(d.callRuntimeEventId == std::optional<std::string>(f.callEventId));
    // T1 committed, T2 not: exactly indeterminate / dispatch_without_response
    const bool betweenT1AndT2 = p.present.count(f.dispatchEventId) &&
                                !p.present.count(f.responseEventId) &&
                                !p.present.count(f.decisionEventId);
    if (betweenT1AndT2) {
      RC_ASSERT(d.status == std::string("indeterminate"));
      RC_ASSERT(d.reason == std::string("dispatch_without_response"));
      RC_ASSERT(d.operationId == std::optional<std::string>(f.operationId));
    }
    anyIndeterminate |= exp->status == "indeterminate";
  }
  RC_ASSERT(r.decisions.size() == expectedOps);
  RC_ASSERT(r.requiresReconciliation == anyIndeterminate);
}

// Provider replay (spec d.8, j.2), as an independent model: partial and hidden events are
// dropped; every other non-tool event is kept; a function_call or function_response is kept
// only if its call id is paired: some non-partial response names the same tool as the latest
// non-partial function_call of that id before it. Pairing is per id: once paired, every
// visible call and response of the id is kept (a blocked plan may thus replay an unanswered
// call of a paired id; a safe_replay plan never does, assertSafeReplayHoldsWholeBoundPairs).
std::vector<size_t> expectedReplay(const std::vector<RuntimeEvent>& evs) {
  std::set<std::string> pairedIds;
  for (size_t j = 0; j < evs.size(); ++j) {
    const RuntimeEvent& r = evs[j];
    if (r.partial || r.contentKind != ContentKind::function_response) continue;
    for (size_t i = j; i-- > 0;) {
      const RuntimeEvent& c = evs[i];
      if (c.partial || c.contentKind != ContentKind::function_call || c.callId != r.callId)
        continue;
      if (c.toolName == r.toolName) pairedIds.insert(r.callId);
      break;  // only the latest call of the id counts
    }
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < evs.size(); ++i) {
    const RuntimeEvent& e = evs[i];
    if (e.partial || e.hidden) continue;
    const bool tool = e.contentKind == ContentKind::function_call ||
                      e.contentKind == ContentKind::function_response;
    if (tool && !pairedIds.count(e.callId)) continue;
    out.push_back(i);
  }
  return out;
}

void assertReplayPaired(const std::vector<RuntimeEvent>& evs, const ResumePlan& plan) {
  RC_ASSERT(plan.replayEventIndexes == expectedReplay(evs));
}

// Every replayed call is answered by a later replayed response with the same id and tool name.
void assertReplayedCallsAnswered(const std::vector<RuntimeEvent>& evs, const ResumePlan& plan) {
  const auto& idx = plan.replayEventIndexes;
  for (size_t k = 0; k < idx.size(); ++k) {
    const RuntimeEvent& e = evs[idx[k]];
    if (e.contentKind != ContentKind::function_call) continue;
    bool answered = false;
    for (size_t j = k + 1; j < idx.size() && !answered; ++j) {
      const RuntimeEvent& r = evs[idx[j]];
      answered = r.contentKind == ContentKind::function_response && r.callId == e.callId &&
                 r.toolName == e.toolName;
    }
    RC_ASSERT(answered);
  }
}

// On a settled, uncorrupted history the replay holds whole pairs only: every replayed call
// is answered (above) and every replayed response answers an earlier replayed call.
void assertReplayHasOnlyWholePairs(const std::vector<RuntimeEvent>& evs, const ResumePlan& plan) {
  assertReplayedCallsAnswered(evs, plan);
  const auto& idx = plan.replayEventIndexes;
  for (size_t k = 0; k < idx.size(); ++k) {
    const RuntimeEvent& e = evs[idx[k]];
    if (e.contentKind != ContentKind::function_response) continue;
    bool asked = false;
    for (size_t j = 0; j < k && !asked; ++j) {
      const RuntimeEvent& c = evs[idx[j]];
      asked = c.contentKind == ContentKind::function_call && c.callId == e.callId &&
              c.toolName == e.toolName;
    }
    RC_ASSERT(asked);
  }
}

// j.2 on every ledger, corrupted ones included: a safe_replay plan's replay holds whole pairs
// only, and every visible call the resolver bound a response to is replayed with that response.
void assertSafeReplayHoldsWholeBoundPairs(const std::vector<RuntimeEvent>& evs,
                                          const ResumePlan& plan) {
  if (plan.disposition != "safe_replay") return;
  assertReplayHasOnlyWholePairs(evs, plan);
  std::set<std::string> replayed, hidden;
  for (size_t idx : plan.replayEventIndexes) replayed.insert(evs[idx].id);
  for (const RuntimeEvent& e : evs)
    if (e.hidden) hidden.insert(e.id);
  for (const ToolDecision& d : plan.resolution.decisions) {
    if (!d.callIndex || !d.responseRuntimeEventId) continue;
    if (hidden.count(*d.callRuntimeEventId) || hidden.count(*d.responseRuntimeEventId)) continue;
    RC_ASSERT(replayed.count(*d.callRuntimeEventId) == 1U);
    RC_ASSERT(replayed.count(*d.responseRuntimeEventId) == 1U);
  }
}

void assertPlanInvariants(const std::vector<RuntimeEvent>& evs, const ResumePlan& plan) {
  // safe_replay <=> no rejection reasons, no verification, no corruption (d.7)
  const bool safe =
      plan.rejectionReasons.empty() && !plan.requiresVerification && !plan.resolution.hasCorruption;
  RC_ASSERT((plan.disposition == "safe_replay") == safe);
  RC_ASSERT(plan.disposition == "safe_replay" || plan.disposition == "blocked");
  RC_ASSERT(plan.directive.has_value() == plan.requiresVerification);
  RC_ASSERT(plan.sourceRuntimeEventHighWater == evs.size());
  // the plan reuses the single decision authority
  RC_ASSERT(plan.resolution == resolveRecovery(evs));
  assertReplayPaired(evs, plan);
}

// Item 4 on valid committed prefixes: determinism, user-headed paired replay, and
// safe_replay exactly when every visible operation of the prefix is settled by a response.
RC_GTEST_PROP(PlanProperties, PlanIsDeterministicUserHeadedPairedAndSafeOnlyWhenSettled, ()) {
  const Prefix p = genCommittedPrefix();
  const std::vector<RuntimeEvent> before = p.events;
  const ResumePlan a = buildResumePlan(p.events);
  const ResumePlan b = buildResumePlan(p.events);
  RC_LOG() << propgen::showLedger(p.json) << toJson(a, p.events).dump() << "\n";
  RC_ASSERT(a == b);
  RC_ASSERT(p.events == before);  // planning never mutates its input
  assertPlanInvariants(p.events, a);
  assertReplayHasOnlyWholePairs(p.events, a);

  // replay starts at a user item: the first model-visible replayed event is the user's
  bool seenVisible = false;
  for (size_t idx : a.replayEventIndexes) {
    const RuntimeEvent& e = p.events[idx];
    if (!e.isModelVisible()) continue;
    RC_ASSERT(e.role == Role::user);
    seenVisible = true;
    break;
  }
  RC_ASSERT(seenVisible);

  // safe_replay exactly when every projected (visible) operation is settled by a response
  // and no hidden call is still indeterminate: d.2 projects visible calls only, d.4 emits the
  // per-operation diagnostics (not_dispatched, parked, ...) for projected operations and, for
  // hidden calls, only pending_tool_result while indeterminate (d.6 likewise).
  bool expectSafe = true;
  for (const auto& f : p.ledger.ops) {
    const auto exp = expectedFor(f, p.present, p.ledger.marker);
    if (!exp) continue;
    if (f.hidden ? exp->status == "indeterminate" : exp->status != "completed") expectSafe = false;
  }
  RC_CLASSIFY(std::any_of(p.ledger.ops.begin(), p.ledger.ops.end(),
                          [&](const OpFacts& f) {
                            const auto exp = expectedFor(f, p.present, p.ledger.marker);
                            return f.hidden && exp && exp->status != "completed" &&
                                   exp->status != "indeterminate";
                          }),
              "hidden unsettled call (not blocking)");
  RC_ASSERT((a.disposition == "safe_replay") == expectSafe);
  RC_ASSERT(a.requiresVerification ==
            std::any_of(a.resolution.decisions.begin(), a.resolution.decisions.end(),
                        [](const ToolDecision& d) { return d.status == "indeterminate"; }));
  // every settled visible call of the prefix is replayed with its response
  for (const auto& f : p.ledger.ops) {
    const auto exp = expectedFor(f, p.present, p.ledger.marker);
    if (!exp || f.hidden) continue;
    bool callReplayed = false;
    for (size_t idx : a.replayEventIndexes) callReplayed |= p.events[idx].id == f.callEventId;
    RC_ASSERT(callReplayed == (exp->status == "completed"));
  }
}

// Item 4 on every ledger, corrupted ones included: determinism, invariants, paired replay,
// and an expected high-water that differs always blocks with runtime_offset_mismatch first.
RC_GTEST_PROP(PlanProperties, PlanInvariantsHoldOnCorruptedLedgersAndOffsetMismatchBlocks, ()) {
  const auto c = *propgen::genLedgerCase(true);
  const auto json = propgen::caseEvents(c);
  const auto events = propgen::decodeAll(json);
  RC_PRE(events.has_value());
  const ResumePlan a = buildResumePlan(*events);
  RC_ASSERT(a == buildResumePlan(*events));
  assertPlanInvariants(*events, a);
  assertSafeReplayHoldsWholeBoundPairs(*events, a);
  RC_ASSERT(a == buildResumePlan(*events, events->size()));

  const uint64_t other = *rc::gen::distinctFrom(static_cast<uint64_t>(events->size()));
  const ResumePlan m = buildResumePlan(*events, other);
  RC_ASSERT(m.disposition == std::string("blocked"));
  RC_ASSERT(!m.rejectionReasons.empty());
  RC_ASSERT(m.rejectionReasons.front() == std::string("runtime_offset_mismatch"));
  RC_ASSERT(!m.diagnostics.empty());
  RC_ASSERT(m.diagnostics.front().code == std::string("runtime_offset_mismatch"));
}

}  // namespace
}  // namespace crashsim
