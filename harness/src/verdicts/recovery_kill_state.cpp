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
  if (int n = observed::eventsOfRun(store, claim.targetRunId);
      want.targetEvents >= 0 && n != want.targetEvents)
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

// A kill inside the continuation's own tool calls (P0–P7 of the continuation run): the crashed
// run sealed (one terminal fact, terminal header), one claim whose runtime_admission start opens
// the target run, that run not terminal and holding, after its start, exactly the call facts the
// oracle places for the kill among the continuation's calls (expectContinuationKill), and the
// resolver's decisions on it the oracle's and the independent model's.
void checkContinuationKillState(const CaseId& id, const Scenario& sc, const RuntimeStore& st,
                                const fs::path& store, std::vector<RunHeader> runs,
                                const std::string& at, Checks& c) {
  CaseExpectation own;
  const CaseExpectation x = expectContinuationKill(sc, id, &own);
  if (!x.ok || !own.ok) {
    c.fail("V3", at + ": oracle: " + (x.whyNot.empty() ? own.whyNot : x.whyNot));
    return;
  }
  if (runs.size() != 2) {
    c.fail("V3", fmt::format("{}: {} run(s) in the store, the contract expects 2 (the crashed run "
                             "and the continuation killed inside its own calls)",
                             at, runs.size()));
    return;
  }
  for (const RunHeader& r : runs)
    if (auto bad = runMarkerProblem(eventsOf(st, r)); !bad.empty()) c.fail("V3", at + ": " + bad);
  int facts = 0;
  for (const auto& e : eventsOf(st, runs[0])) facts += !e.partial && e.isTerminal();
  if (facts != 1 || !isTerminalStatus(runs[0].status))
    c.fail("V3", fmt::format("{}: the crashed run {} has {} terminal fact(s) and a {} header, the "
                             "contract expects it sealed before the continuation",
                             at, runs[0].runId, facts, runs[0].status));
  RecoveryKillExpectation claim;
  claim.claim = true;
  claim.claimStart = std::string(code::runtime_admission);
  claim.targetEvents = -1;  // its start and the calls below
  claim.targetHeader = true;
  checkClaimState(claim, runs, store, at, c);
  const auto events = eventsOf(st, runs[1]);
  for (const auto& bad : callFactProblems(own, events))
    c.fail("V3", fmt::format("{}: continuation run {}: {}", at, runs[1].runId, bad));
  checkDecisions(own, events, c);
  if (!c.failed("V3")) c.pass("V3");
}

}  // namespace

// V3/V4 on the state a killed recovery process left (double faults): expectRecoveryKill.
void checkRecoveryKillState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                            const RuntimeStore& st, const fs::path& store, Checks& c) {
  if (isContinuationKill(id)) {
    auto runs = st.listRuns();
    std::stable_sort(runs.begin(), runs.end(), [](const RunHeader& a, const RunHeader& b) {
      return a.createdAt < b.createdAt;
    });
    checkContinuationKillState(
        id, sc, st, store, std::move(runs),
        fmt::format("after the continuation kill at {}#{}", id.recoveryFailpoint->name(),
                    id.recoveryHit.value_or(1)),
        c);
    return;
  }
  const auto want = expectRecoveryKill(*id.recoveryFailpoint, id.recoveryHit.value_or(1));
  const std::string at = fmt::format("after the recovery kill at {}#{}",
                                     id.recoveryFailpoint->name(), id.recoveryHit.value_or(1));
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
