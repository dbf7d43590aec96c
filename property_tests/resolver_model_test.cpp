// resolver_model_test.cpp — RecoveryResolver vs an independent model of spec c.5 (issue #8,
// item 2). The model (resolver_model.h) is written from the contract text and shares no code
// with runtime/src/recovery. Both must agree on every generated ledger, every prefix of it and
// every corruption of those: toolBoundaryProtocol, decisions (status, reason, settlement
// origin, ids, responseIsError), issues (code@eventId multiset) and both flags.
#include "verdicts/resolver_model.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "crashsim/recovery_resolver.h"
#include "ledger_gen.h"

namespace crashsim {
namespace {

using propgen::LedgerCase;

void checkAgreement(const std::vector<Json>& json, const std::vector<RuntimeEvent>& events) {
  const model::Resolution m = model::resolve(events);
  const RecoveryResolution r = resolveRecovery(events);
  const std::string diff = model::compare(m, r);
  if (!diff.empty()) {
    RC_LOG() << "ledger:\n"
             << propgen::showLedger(json) << model::show(m) << "resolver: " << toJson(r).dump()
             << "\n";
    RC_FAIL("model and resolver disagree:\n" + diff);
  }
  RC_TAG(m.hasCorruption ? "corrupt" : (m.requiresReconciliation ? "needs-reconcile" : "clean"));
}

// Generated ledgers and every prefix a crash could leave: the decision table of c.5 row by row.
RC_GTEST_PROP(ResolverModel, AgreesWithDecisionTableOnValidLedgersAndCommittedPrefixes, ()) {
  const auto spec = *propgen::genLedgerSpec();
  const propgen::BuiltLedger l = propgen::buildLedger(spec);
  const auto cuts = l.committedPrefixLengths();
  const size_t cut = *rc::gen::elementOf(cuts);
  const std::vector<Json> json(l.events.begin(), l.events.begin() + static_cast<long>(cut));
  checkAgreement(json, propgen::decodeValid(json));
}

// Arbitrary cuts (not only transaction boundaries) and corruptions: orphans, duplicates,
// swapped order, hash/identity/refs drift, late marker, multi-lane events, torn bundles.
RC_GTEST_PROP(ResolverModel, AgreesOnCorruptionsOrphansDuplicatesDriftAndLateMarker, ()) {
  const LedgerCase c = *propgen::genLedgerCase(true);
  const std::vector<Json> json = propgen::caseEvents(c);
  const auto events = propgen::decodeAll(json);
  RC_PRE(events.has_value());
  for (const auto& k : c.corruptions) RC_TAG(propgen::corruptionName(k.kind));
  checkAgreement(json, *events);
}

// Lane detection (a.5) as the model reads it from the JSON agrees with the decoder's lane.
RC_GTEST_PROP(ResolverModel, SemanticLaneOfEveryEventMatchesTheModelsReading, ()) {
  const LedgerCase c = *propgen::genLedgerCase(true);
  const std::vector<Json> json = propgen::caseEvents(c);
  const auto events = propgen::decodeAll(json);
  RC_PRE(events.has_value());
  for (const auto& e : *events) {
    using L = model::impl::L;
    const L m = model::impl::laneOf(e.json);
    Lane expected = Lane::ordinary;
    switch (m) {
      case L::ordinary:
        expected = Lane::ordinary;
        break;
      case L::call:
        expected = Lane::function_call;
        break;
      case L::dispatch:
        expected = Lane::tool_dispatch;
        break;
      case L::response:
        expected = Lane::function_response;
        break;
      case L::reconcile:
        expected = Lane::reconcile_result;
        break;
      case L::decision:
        expected = Lane::recovery_decision;
        break;
      case L::conflict:
        expected = Lane::conflict;
        break;
    }
    RC_ASSERT(static_cast<int>(e.lane) == static_cast<int>(expected));
  }
}

}  // namespace
}  // namespace crashsim
