// V5: the plan in two processes, and read-only planning (verdicts/v5_plan.h).
#include "verdicts/v5_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/resume_plan.h"
#include "verdicts/observed_store.h"
#include "verdicts/v5_lineage.h"
#include "verdicts/v5_second_process.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// V5 over every run of an open store: the plan the harness computes (read through the store)
// equals the plan a separate process prints for the run exported as JSON (`crashsim ledger
// resolve`), and planning — Phase 0 and the store-reading Phase 1 planner — leaves every
// table of the store unchanged (observed::tableDigests, read outside the runtime); then the
// lineage digests of the store and of a plan that continues (v5_lineage.h).
void checkV5(RuntimeStore& store, const fs::path& storeDir, const fs::path& work,
             const fs::path& crashsim, Checks& c) {
  const auto tables0 = observed::tableDigests(storeDir);
  for (const auto& h : store.listRuns()) {
    auto events = eventsOf(store, h);
    const Json mine = toJson(buildResumePlan(events), events);
    if (crashsim.empty()) continue;
    std::string ledger;
    for (const auto& e : events) ledger += encodeRuntimeEvent(e) + "\n";
    const auto second = secondProcessPlan(ledger, work / "v5-ledger.jsonl", work / "v5-plan.json",
                                          work / "v5.stderr", crashsim);
    if (!second.plan) {
      c.fail("V5", fmt::format("run {}: crashsim ledger resolve {}", h.runId, second.failure));
      return;
    }
    const Json& theirs = *second.plan;
    if (theirs != mine) {
      c.fail("V5", fmt::format("run {}: the plan differs between this process and `crashsim "
                               "ledger resolve` (disposition {} vs {})",
                               h.runId, mine.value("disposition", "?"),
                               theirs.value("disposition", "?")));
      return;
    }
  }
  ContinuationHost host;  // the store-reading Phase 1 planner (e.1/e.2) must be read-only
  host.enabled = true;
  host.inspector = [] {
    SafetyFacts f;
    f.backgroundOperationsSettled = true;
    return f;
  };
  std::optional<ContinuationPlan> plan;
  try {
    plan = planLatestContinuation(store, std::nullopt, host);
  } catch (const std::exception&) {
    // A refusal is a plan outcome; only a write to the store is a V5 failure.
  }
  if (auto t = observed::firstChangedTable(tables0, observed::tableDigests(storeDir)); !t.empty()) {
    c.fail("V5", "planning changed table " + t);
    return;
  }
  if (plan) checkPlanDigests(*plan, storeDir, c);
  checkLineageDigests(storeDir, "", c);
  if (!c.failed("V5")) c.pass("V5");
}

void checkPlanAgainstOracle(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                            Checks& c) {
  const ResumePlan plan = buildResumePlan(runEvents);
  size_t pending = 0, notDispatched = 0;
  for (const auto& op : x.ops) {
    const auto it = std::find_if(plan.operations.begin(), plan.operations.end(),
                                 [&](const PlanOperation& p) { return p.toolCallId == op.callId; });
    if (op.status.empty()) {
      if (it != plan.operations.end())
        c.fail("V5", fmt::format("plan: {} is an operation ({}) but the oracle expects none",
                                 op.callId, it->status));
      continue;
    }
    std::string want = op.status;
    if (op.status == code::completed) {
      want = op.responseIsError ? code::failed : code::succeeded;
    } else if (op.status == code::definitely_not_dispatched) {
      want = code::not_dispatched;
      ++notDispatched;
    } else if (op.status == code::indeterminate) {
      ++pending;
    }
    if (it == plan.operations.end())
      c.fail("V5", fmt::format("plan: no operation for {}, the contract maps the oracle's {} to {}",
                               op.callId, op.status, want));
    else if (it->status != want)
      c.fail("V5", fmt::format("plan: {} has status {}, the contract maps the oracle's {} to {}",
                               op.callId, it->status, op.status, want));
  }
  auto count = [&](std::string_view code) {
    return static_cast<size_t>(
        std::count_if(plan.diagnostics.begin(), plan.diagnostics.end(),
                      [&](const PlanDiagnostic& d) { return d.code == code; }));
  };
  if (count(code::pending_tool_result) != pending ||
      count(code::tool_not_dispatched) != notDispatched)
    c.fail("V5", fmt::format("plan: {} pending_tool_result and {} tool_not_dispatched "
                             "diagnostic(s), the oracle's decisions give {} and {}",
                             count(code::pending_tool_result), count(code::tool_not_dispatched),
                             pending, notDispatched));
  const bool dangling = pending + notDispatched > 0;
  const bool danglingReason = std::find(plan.rejectionReasons.begin(), plan.rejectionReasons.end(),
                                        code::dangling_tool_state) != plan.rejectionReasons.end();
  const std::string_view disposition = dangling ? code::blocked : code::safe_replay;
  if (plan.disposition != disposition || danglingReason != dangling)
    c.fail("V5", fmt::format("plan: {} ({}dangling_tool_state), the contract expects {}",
                             plan.disposition, danglingReason ? "" : "no ", disposition));
  if (plan.requiresVerification != (pending > 0))
    c.fail("V5", fmt::format("plan: requiresVerification {} with {} indeterminate operation(s)",
                             plan.requiresVerification, pending));
}

}  // namespace crashsim::harness
