// planted_fault_test.cpp — acceptance check of issue #8: the model comparison catches a
// planted resolver fault and shrinks it to a tiny ledger.
//
// The planted variant wraps the real resolveRecovery and reports every
// `indeterminate / dispatch_without_response` operation as `completed` (spec c.5 row
// "call + dispatch, no response, no recovery facts → indeterminate"). The same property the
// resolver_model test runs (model vs resolver on generated, cut and corrupted ledgers) is
// checked programmatically with RapidCheck against that variant; it must FAIL, and the shrunk
// counterexample must be a ledger of at most 4 events, which is printed.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <iostream>

#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "ledger_gen.h"
#include "verdicts/resolver_model.h"

namespace crashsim {
namespace {

RecoveryResolution plantedFaultResolver(std::span<const RuntimeEvent> events) {
  RecoveryResolution r = resolveRecovery(events);
  bool anyIndeterminate = false;
  for (auto& d : r.decisions) {
    if (d.status == code::indeterminate && d.reason == code::dispatch_without_response) {
      d.status = std::string(code::completed);  // the planted fault
    }
    anyIndeterminate |= d.status == code::indeterminate;
  }
  r.requiresReconciliation = !r.hasCorruption && anyIndeterminate;
  return r;
}

TEST(ResolverPlantedFault,
     ModelComparisonCatchesCompletedForDispatchWithoutResponseAndShrinksToFourEvents) {
  std::vector<Json> lastFailing;
  std::string lastDiff;
  const auto property = [&] {
    const auto c = *propgen::genLedgerCase(true);
    const auto json = propgen::caseEvents(c);
    const auto events = propgen::decodeAll(json);
    RC_PRE(events.has_value());
    const std::string diff = model::compare(model::resolve(*events), plantedFaultResolver(*events));
    if (!diff.empty()) {
      lastFailing = json;  // RapidCheck adopts every failing shrink: the last one is minimal
      lastDiff = diff;
      RC_FAIL(diff);
    }
  };
  rc::detail::TestParams params;
  params.seed = 0x8badf00d;
  params.maxSuccess = 1000;
  params.maxSize = 100;
  rc::detail::TestMetadata metadata;
  metadata.id = "PlantedFault/dispatch_without_response_as_completed";
  metadata.description = "model vs planted resolver";
  const auto result = rc::detail::checkTestable(property, metadata, params);

  ASSERT_TRUE(result.is<rc::detail::FailureResult>()) << "planted fault was NOT detected";
  const auto& failure = result.get<rc::detail::FailureResult>();
  std::cout << "planted fault detected after " << failure.numSuccess
            << " passing cases; shrunk counterexample (" << lastFailing.size() << " events):\n"
            << propgen::showLedger(lastFailing) << "difference (model/planted):\n"
            << lastDiff;
  for (const auto& [type, value] : failure.counterExample)
    std::cout << "  counterexample " << type << ": " << value << "\n";
  std::cout << "(expected: RapidCheck's exit note 'Some of your RapidCheck properties had "
               "failures' refers to this deliberately planted fault)\n";

  EXPECT_LE(lastFailing.size(), 4u);
  // The minimal ledger is the c.5 row the fault breaks: a dispatch with no response.
  const auto events = propgen::decodeAll(lastFailing);
  ASSERT_TRUE(events.has_value());
  size_t dispatches = 0, responses = 0;
  for (const auto& e : *events) {
    dispatches += e.lane == Lane::tool_dispatch;
    responses += e.lane == Lane::function_response;
  }
  EXPECT_GE(dispatches, 1u);
  EXPECT_EQ(responses, 0u);
  EXPECT_NE(lastDiff.find("status indeterminate/completed"), std::string::npos) << lastDiff;
}

}  // namespace
}  // namespace crashsim
