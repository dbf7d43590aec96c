// V4: resolver decisions against the oracle and the independent model (verdicts/v4_decisions.h).
#include "verdicts/v4_decisions.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "crashsim/codes.h"
#include "verdicts/resolver_model.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// The independent resolver model (verdicts/resolver_model.h: written from the contract, sharing
// no code with runtime/src/recovery) must agree with the runtime's resolution of a ledger, and a
// crash or a recovery never leaves a ledger the model calls corrupt. "" when both hold.
std::string modelDisagreement(const std::vector<RuntimeEvent>& events,
                              const RecoveryResolution& res, const std::string& which) {
  const model::Resolution m = model::resolve(events);
  if (m.hasCorruption) {
    std::string issues;
    for (const auto& i : m.issues) issues += " " + i.code + "@" + i.eventId;
    for (const auto& d : m.decisions)
      if (d.reason == std::string(code::recovery_fact_corruption) ||
          d.status == std::string(code::corruption))
        issues += " " + d.toolCallId + ":" + d.reason;
    return "the independent resolver model finds corruption in " + which + ":" + issues;
  }
  std::string diff = model::compare(m, res);
  if (diff.empty()) return "";
  if (auto nl = diff.find('\n'); nl != std::string::npos) diff.resize(nl);
  return "the resolver disagrees with the independent model on " + which + ": " + diff;
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
