// The state a recovery kill left (verdicts/recovery_kill_state.h).
#include "verdicts/recovery_kill_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "verdicts/observed_store.h"
#include "verdicts/v4_decisions.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// V3/V4 on the state a killed recovery process left (double faults): expectRecoveryKill.
void checkRecoveryKillState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                            const RuntimeStore& st, const fs::path& store, Checks& c) {
  const auto want = expectRecoveryKill(*id.recoveryFailpoint, id.recoveryHit.value_or(1));
  const std::string at =
      fmt::format("after the recovery kill at {}#{}", failpointName(*id.recoveryFailpoint),
                  id.recoveryHit.value_or(1));
  auto runs = st.listRuns();
  std::stable_sort(runs.begin(), runs.end(), [](const RunHeader& a, const RunHeader& b) {
    return a.createdAt < b.createdAt;
  });
  if (runs.size() < static_cast<size_t>(want.run) ||
      (want.exactlyThatManyRuns && runs.size() != static_cast<size_t>(want.run))) {
    c.fail("V3", fmt::format("{}: {} run(s) in the store, the contract expects {}{}", at,
                             runs.size(), want.exactlyThatManyRuns ? "" : "at least ", want.run));
    return;
  }
  const RunHeader& h = runs[static_cast<size_t>(want.run - 1)];
  const auto events = eventsOf(st, h);
  int facts = 0;
  for (const auto& e : events) facts += !e.partial && e.isTerminal();
  if (facts != (want.terminalFact ? 1 : 0))
    c.fail("V3", fmt::format("{}: run {} has {} terminal RuntimeEvent(s), the contract expects {}",
                             at, h.runId, facts, want.terminalFact ? 1 : 0));
  if (isTerminalStatus(h.status) != want.terminalHeader)
    c.fail("V3", fmt::format("{}: run {} header is {}, the contract expects it {}", at, h.runId,
                             h.status, want.terminalHeader ? "terminal" : "not terminal"));
  if (want.armedIndeterminate && x.armedCall) {
    const auto& armed = sc.calls[*x.armedCall];
    bool response = false;
    for (const auto& e : events)
      response = response || (!e.partial && e.contentKind == ContentKind::function_response &&
                              e.callId == armed.id);
    if (response)
      c.fail("V3", fmt::format("{}: {} has a durable response (the bundle was not rolled back)", at,
                               armed.id));
    const auto res = resolveRecovery(events);
    auto d = std::find_if(res.decisions.begin(), res.decisions.end(),
                          [&](const ToolDecision& t) { return t.toolCallId == armed.id; });
    if (d == res.decisions.end() || d->status != code::indeterminate ||
        d->reason != code::dispatch_without_response)
      c.fail("V4", fmt::format("{}: {} is {}, the contract expects {}/{}", at, armed.id,
                               d == res.decisions.end() ? "undecided" : d->status + "/" + d->reason,
                               code::indeterminate, code::dispatch_without_response));
    if (auto bad = modelDisagreement(events, res, "the ledger " + at); !bad.empty())
      c.fail("V4", bad);
  }
  if (want.claimWithoutStart) {
    const auto rows = observed::claims(store);
    const auto open = std::count_if(rows.begin(), rows.end(),
                                    [](const observed::ClaimRow& r) { return !r.startEventId; });
    if (rows.size() != 1 || open != 1)
      c.fail("V3", fmt::format("{}: {} claim row(s), {} without a start; the contract expects one "
                               "claim without a start",
                               at, rows.size(), open));
    else if (int n = observed::eventsOfRun(store, rows[0].targetRunId); n != 0)
      c.fail("V3", fmt::format("{}: the claimed target run {} has {} event(s), expected none", at,
                               rows[0].targetRunId, n));
  }
  if (!c.failed("V3")) c.pass("V3");
  if (!c.failed("V4") && want.armedIndeterminate) c.pass("V4");
}

}  // namespace crashsim::harness
