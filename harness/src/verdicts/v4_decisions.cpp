// V4: resolver decisions against the oracle and the independent model (verdicts/v4_decisions.h).
#include "verdicts/v4_decisions.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "crashsim/codes.h"
#include "verdicts/observed_store.h"
#include "verdicts/resolver_model.h"
#include "verdicts/v3_durable_facts.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// A run's events as the store holds them, read with plain SQLite and decoded (throws when the
// store cannot be read or an event does not decode).
std::vector<RuntimeEvent> storedRunEvents(const fs::path& store, const std::string& runId) {
  std::vector<RuntimeEvent> events;
  for (const auto& row : observed::runEvents(store, runId))
    events.push_back(decodeRuntimeEvent(row.payload));
  return events;
}

// model::compare's first difference ("" when they agree).
std::string firstDifference(const model::Resolution& m, const RecoveryResolution& r) {
  std::string diff = model::compare(m, r);
  if (auto nl = diff.find('\n'); nl != std::string::npos) diff.resize(nl);
  return diff;
}

}  // namespace

// The independent resolver model (verdicts/resolver_model.h: written from the contract, sharing
// no code with runtime/src/recovery) must agree with the runtime's resolution of a ledger, and a
// crash or a recovery never leaves a ledger the model calls corrupt. "" when both hold. The model
// decides under the protocol the agent wrote the run with (agentWroteUnderT1), never the marker
// it reads from the ledger under test.
std::string modelDisagreement(const std::vector<RuntimeEvent>& events,
                              const RecoveryResolution& res, const std::string& which) {
  const model::Resolution m = model::resolve(events, agentWroteUnderT1(events));
  if (m.hasCorruption) {
    std::string issues;
    for (const auto& i : m.issues) issues += " " + i.code + "@" + i.eventId;
    for (const auto& d : m.decisions)
      if (d.reason == std::string(code::recovery_fact_corruption) ||
          d.status == std::string(code::corruption))
        issues += " " + d.toolCallId + ":" + d.reason;
    return "the independent resolver model finds corruption in " + which + ":" + issues;
  }
  const std::string diff = firstDifference(m, res);
  if (diff.empty()) return "";
  return "the resolver disagrees with the independent model on " + which + ": " + diff;
}

void checkDamagedLedgerDecisions(const fs::path& storeCopy,
                                 const std::vector<ExpectedDecision>& expected, Checks& c) {
  std::map<std::string, RecoveryResolution> resolved;  // run → the runtime's resolution
  size_t undecodable = 0;
  try {
    for (const std::string& run : observed::eventRunIds(storeCopy)) {
      std::vector<RuntimeEvent> events;
      try {
        events = storedRunEvents(storeCopy, run);
      } catch (const std::exception&) {
        ++undecodable;  // the runtime cannot decode it either: C1 judges the refusal
        continue;
      }
      RecoveryResolution res = resolveRecovery(events);
      if (auto diff = firstDifference(model::resolve(events), res); !diff.empty())
        c.fail("V4", "the damaged ledger of run " + run +
                         ": the resolver disagrees with the independent model: " + diff);
      resolved.emplace(run, std::move(res));
    }
  } catch (const std::exception& e) {
    if (expected.empty()) {
      c.na("V4", std::string("the damaged store does not open for reading: ") + e.what());
      return;
    }
    c.fail("V4", std::string("the edited ledger cannot be read: ") + e.what());
    return;
  }
  for (const ExpectedDecision& want : expected) {
    auto run = resolved.find(want.runId);
    if (run == resolved.end()) {
      c.fail("V4", fmt::format("run {} of the edited ledger does not decode", want.runId));
      continue;
    }
    const auto& ds = run->second.decisions;
    auto d = std::find_if(ds.begin(), ds.end(),
                          [&](const ToolDecision& t) { return t.toolCallId == want.toolCallId; });
    const std::string got = d == ds.end() ? "no decision" : d->status + "/" + d->reason;
    const std::string wanted =
        want.status.empty() ? "no decision" : want.status + "/" + want.reason;
    if (got != wanted)
      c.fail("V4", fmt::format("edited ledger, run {}: {} is {}, the contract says {}", want.runId,
                               want.toolCallId, got, wanted));
  }
  if (resolved.empty() && expected.empty() && undecodable > 0) {
    c.na("V4", "no run of the damaged store decodes");
    return;
  }
  if (!c.failed("V4")) c.pass("V4");
}

void checkImportedDecisions(const Scenario& scenario, const fs::path& store, Checks& c) {
  std::map<std::string, std::vector<RuntimeEvent>> expected;  // run → the scenario's events
  std::vector<std::string> order;
  for (const Json& e : importedLegacyEvents(scenario)) {
    const std::string run = e.value("runId", "");
    if (!expected.count(run)) order.push_back(run);
    expected[run].push_back(decodeRuntimeEvent(e));
  }
  for (const std::string& run : order) {
    std::vector<RuntimeEvent> stored;
    try {
      stored = storedRunEvents(store, run);
    } catch (const std::exception& e) {
      c.fail("V4", fmt::format("imported run {} cannot be read back: {}", run, e.what()));
      continue;
    }
    if (auto diff = firstDifference(model::resolve(expected[run]), resolveRecovery(stored));
        !diff.empty())
      c.fail("V4", "imported run " + run + ": the resolver disagrees with the model of the " +
                       "scenario's events: " + diff);
  }
  if (!c.failed("V4")) c.pass("V4");
}

void checkDecisions(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                    Checks& c) {
  auto res = resolveRecovery(runEvents);
  if (res.hasCorruption) c.fail("V4", "resolver reports corruption on a crash-only ledger");
  if (auto bad = modelDisagreement(runEvents, res, "the crashed ledger"); !bad.empty())
    c.fail("V4", bad);
  bool expectIndeterminate = false;
  for (const auto& op : x.ops) {
    expectIndeterminate = expectIndeterminate || op.status == code::indeterminate;
    auto it = std::find_if(res.decisions.begin(), res.decisions.end(),
                           [&](const ToolDecision& d) { return d.toolCallId == op.callId; });
    if (op.status.empty()) {
      if (it != res.decisions.end())
        c.fail("V4", fmt::format("{}: resolver decided {}/{} but the oracle expects no operation",
                                 op.callId, it->status, it->reason));
      continue;
    }
    if (it == res.decisions.end()) {
      c.fail("V4", fmt::format("{}: no resolver decision, oracle expects {}/{}", op.callId,
                               op.status, op.reason));
      continue;
    }
    std::string origin = it->settlementOrigin.value_or("");
    if (it->status != op.status || it->reason != op.reason ||
        (!op.settlementOrigin.empty() && origin != op.settlementOrigin))
      c.fail("V4",
             fmt::format("{}{}: resolver {}/{}{}, oracle expects {}/{}{}", op.callId,
                         op.armed ? " (armed)" : "", it->status, it->reason,
                         origin.empty() ? "" : " (" + origin + ")", op.status, op.reason,
                         op.settlementOrigin.empty() ? "" : " (" + op.settlementOrigin + ")"));
  }
  if (!res.hasCorruption && res.requiresReconciliation != expectIndeterminate)
    c.fail("V4", fmt::format("requiresReconciliation is {}, oracle expects {}",
                             res.requiresReconciliation, expectIndeterminate));
  if (!c.failed("V4")) c.pass("V4");
}

}  // namespace crashsim::harness
