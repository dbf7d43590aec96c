// repair.cpp — the continuation claim saga of startup repair (spec g, B2.1).
#include <set>

#include "continuation/internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/plant.h"

namespace crashsim {

using namespace continuation_detail;

namespace {

RuntimeEvent repairTerminalEvent(const ContinuationClaim& claim, const RunHeader& target,
                                 double startTs) {
  const std::string fc(code::continuation_abandoned_before_provider_dispatch);
  TerminalFact fact;
  fact.eventId = deriveContinuationRepairId("terminal", claim.claimId);
  fact.ts = std::max(startTs + 1, claim.claimedAt + 1);
  fact.status = code::failed;
  fact.failureClass = fc;
  fact.message = "Continuation was abandoned before provider dispatch.";
  fact.recovered = true;
  fact.recoveryReason = fc;
  return terminalEvent(target, fact);
}

[[noreturn]] void repairFail(const std::string& msg) {
  throw Error(code::continuation_repair_failed, msg);
}

void repairOne(RuntimeStore& store, const ClaimState& state, bool dryRun, ClaimRepairAction& act) {
  store_detail::Connection& c = conn(store);
  const ContinuationClaim& claim = state.claim;
  std::optional<RunHeader> header = readHeader(c, claim.target.sessionId, claim.target.runId);
  // Planted bug: the saga assumes a target header exists only once a start does (V8 at P14).
  if (header && !state.startEventId && planted("claim_repair_requires_absent_target"))
    repairFail("target of claim " + claim.claimId + " exists without a continuation-start");
  if (!header) {
    act.actions.push_back("created_target_header");
    if (!dryRun) store.createRun(claim.targetRunHeader);
    header = claim.targetRunHeader;
  }
  std::optional<std::string> startKind = state.startKind;
  std::optional<RuntimeEvent> start = state.startEvent;
  if (!state.startEventId) {
    if (stableJson(header->toJson()) != stableJson(claim.targetRunHeader.toJson())) {
      repairFail("target header of claim " + claim.claimId + " differs from the claim header");
    }
    ImmutablePrefix tp = readPrefix(c, claim.target, std::nullopt);
    if (!tp.events.empty()) {
      repairFail("target of claim " + claim.claimId + " has events but no continuation-start");
    }
    RuntimeEvent rs =
        buildContinuationStartEvent(claim, deriveContinuationRepairId("start", claim.claimId),
                                    claim.claimedAt, code::claim_repair, false);
    act.actions.push_back("repair_start");
    if (!dryRun) commitContinuationRepairStart(store, claim, rs);
    startKind = std::string(code::claim_repair);
    start = rs;
  } else if (immutableHeaderJson(*header) != immutableHeaderJson(claim.targetRunHeader)) {
    repairFail("target header of claim " + claim.claimId + " is incompatible with the claim");
  }
  // Planted bug: the saga abandons a live runtime_admission start like its own (V8 at P15).
  if (*startKind == code::runtime_admission && !planted("claim_saga_abandons_live_start")) {
    act.actions.push_back("left_runtime_admission");
    return;
  }
  // claim_repair: deterministic failed terminal, then the failed header.
  RuntimeEvent terminal = repairTerminalEvent(claim, *header, start->ts);
  std::vector<StoredEvent> rows =
      dryRun && !state.startEventId
          ? std::vector<StoredEvent>{}
          : store_detail::readInvocationEvents(c, claim.target.invocationId);
  std::optional<RuntimeEvent> existingTerminal;
  for (const StoredEvent& r : rows) {
    if (r.event.isTerminal()) {
      if (existingTerminal) repairFail("target of claim " + claim.claimId + " has two terminals");
      existingTerminal = r.event;
    }
  }
  if (existingTerminal) {
    if (encodeRuntimeEvent(*existingTerminal) != encodeRuntimeEvent(terminal) ||
        rows.back().event.id != terminal.id) {
      repairFail("target of claim " + claim.claimId + " has a conflicting terminal event");
    }
  } else {
    act.actions.push_back("repair_terminal");
    if (!dryRun) store.append(terminal);
  }
  if (header->status != code::failed) {
    if (isTerminalRunStatus(header->status)) {
      repairFail("target header of claim " + claim.claimId + " is terminal with another status");
    }
    const RunHeader failed = terminalHeader(*header, terminal);
    act.actions.push_back("failed_header");
    if (!dryRun) store.markRunTerminal(failed);
  }
  if (act.actions.empty()) act.actions.push_back("already_repaired");
}

}  // namespace

ClaimRepairReport repairContinuationClaims(RuntimeStore& store, RepairMode mode, bool dryRun) {
  auto storeLock = continuation_detail::lockStore(store);
  ClaimRepairReport report;
  store_detail::Connection& c = conn(store);
  // Read every row leniently so one damaged claim only skips its own session (best effort).
  struct Row {
    std::string claimId, sessionId;
  };
  std::vector<Row> rows;
  {
    auto st = c.prepare(
        "SELECT claim_id, target_session_id FROM runtime_continuation_claims "
        "ORDER BY claimed_at, claim_id");
    while (st.step()) rows.push_back(Row{st.text(0), st.text(1)});
  }
  std::set<std::string> skipped;
  for (const Row& row : rows) {
    if (skipped.count(row.sessionId)) continue;
    ClaimRepairAction act;
    act.claimId = row.claimId;
    act.sessionId = row.sessionId;
    try {
      std::optional<ClaimState> state = readClaim(c, ClaimKey::claimId, row.claimId);
      if (!state) repairFail("claim " + row.claimId + " vanished");
      act.targetRunId = state->claim.target.runId;
      repairOne(store, *state, dryRun, act);
    } catch (const Error& e) {
      if (mode == RepairMode::strict) throw;
      act.error = std::string(e.code()) + ": " + e.what();
      act.actions.push_back("skipped_session");
      skipped.insert(row.sessionId);
    }
    report.claims.push_back(std::move(act));
  }
  report.skippedSessions.assign(skipped.begin(), skipped.end());
  return report;
}

Json ClaimRepairReport::toJson() const {
  Json cl = Json::array();
  for (const ClaimRepairAction& a : claims) {
    Json j{{"claimId", a.claimId},
           {"sessionId", a.sessionId},
           {"targetRunId", a.targetRunId},
           {"actions", a.actions}};
    if (!a.error.empty()) j["error"] = a.error;
    cl.push_back(j);
  }
  return Json{{"claims", cl}, {"skippedSessions", skippedSessions}};
}

}  // namespace crashsim
