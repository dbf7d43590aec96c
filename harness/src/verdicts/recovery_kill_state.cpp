// The state a recovery kill left (verdicts/recovery_kill_state.h).
#include "verdicts/recovery_kill_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "verdicts/observed_store.h"
#include "verdicts/v3_durable_facts.h"
#include "verdicts/v4_decisions.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// P11, P14, P15: the one claim row, its start and its target run as the boundary leaves them.
void checkClaimState(const RecoveryKillExpectation& want, const std::vector<RunHeader>& runs,
                     const fs::path& store, const std::string& at, Checks& c) {
  const auto rows = observed::claims(store);
  const std::string wantStart = want.claimStart.empty() ? "no start" : want.claimStart;
  if (rows.size() != 1) {
    c.fail("V3", fmt::format("{}: {} claim row(s), the contract expects one ({})", at, rows.size(),
                             wantStart));
    return;
  }
  const auto& claim = rows[0];
  const std::string start = claim.startKind.value_or("no start");
  if (start != wantStart)
    c.fail("V3",
           fmt::format("{}: the claim has {}, the contract expects {}", at, start, wantStart));
  if (int n = observed::eventsOfRun(store, claim.targetRunId); n != want.targetEvents)
    c.fail("V3", fmt::format("{}: the claimed target run {} has {} event(s), expected {}", at,
                             claim.targetRunId, n, want.targetEvents));
  auto target = std::find_if(runs.begin(), runs.end(),
                             [&](const RunHeader& h) { return h.runId == claim.targetRunId; });
  if ((target != runs.end()) != want.targetHeader)
    c.fail("V3", fmt::format("{}: the claimed target run {} {} a header, the contract expects {}",
                             at, claim.targetRunId, target != runs.end() ? "has" : "has no",
                             want.targetHeader ? "one" : "none"));
  else if (target != runs.end() && isTerminalStatus(target->status))
    c.fail("V3", fmt::format("{}: the claimed target run {} is already {}", at, claim.targetRunId,
                             target->status));
}

}  // namespace

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
      (want.runs > 0 && runs.size() != static_cast<size_t>(want.runs))) {
    c.fail("V3",
           fmt::format("{}: {} run(s) in the store, the contract expects {}{}", at, runs.size(),
                       want.runs > 0 ? "" : "at least ", want.runs > 0 ? want.runs : want.run));
    return;
  }
  for (const RunHeader& r : runs)
    if (auto bad = runMarkerProblem(eventsOf(st, r)); !bad.empty()) c.fail("V3", at + ": " + bad);
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
  if (want.claim) checkClaimState(want, runs, store, at, c);
  if (!c.failed("V3")) c.pass("V3");
  if (!c.failed("V4") && want.armedIndeterminate) c.pass("V4");
}

}  // namespace crashsim::harness
