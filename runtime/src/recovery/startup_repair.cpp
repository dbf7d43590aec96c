// startup_repair.cpp — run-header repair from the ledger (spec g, without the claim saga; run
// repairContinuationClaims first).
//
// Order per run: terminal fact first, header second. The recovered terminal RuntimeEvent goes
// through RuntimeStore::commitTerminalEvent (failpoint P8 inside its transaction); failpoint
// P9 sits between that commit and the header update, so a crash of the recovery process at
// either point is itself repaired by the next startup.
#include "crashsim/startup_repair.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/terminal_facts.h"
#include "store/store_internal.h"

namespace crashsim {

namespace {

std::optional<std::string> stringAt(const Json* obj, const char* key) {
  if (!obj) return std::nullopt;
  auto it = obj->find(key);
  if (it == obj->end() || !it->is_string() || it->get<std::string>().empty()) return std::nullopt;
  return it->get<std::string>();
}

// Run recovery step 3 (g): a claim-owned target without a terminal is skipped because the
// claim saga owns it. The saga owns a target until it has a durable start it did not write
// itself: no start yet (the saga writes the deterministic repair start) or a `claim_repair`
// start (the saga writes the abandoned terminal). A target whose start is a live
// `runtime_admission` start is an ordinary run once started: the saga leaves it alone and run
// recovery repairs it like any other crashed run (its terminal recovered from its ledger, its
// operations left to the reconcilers), so the session can be continued from it.
bool isSagaOwnedClaimTarget(RuntimeStore& store, const RunHeader& h) {
  std::lock_guard lk(store_detail::mutexOf(store));
  auto& c = store_detail::connectionOf(store);
  auto st = c.prepare(
      "SELECT start_kind FROM runtime_continuation_claims WHERE target_session_id = ?1 AND "
      "target_run_id = ?2");
  st.bind(1, h.sessionId).bind(2, h.runId);
  bool owned = false;
  while (st.step()) {
    if (st.isNull(0) || st.text(0) != code::runtime_admission) owned = true;
  }
  return owned;
}

std::string classify(const std::vector<StoredEvent>& stored) {
  if (stored.empty()) return std::string(code::non_terminal_run_recovered);
  std::set<std::string> open;
  for (const auto& s : stored) {
    auto a = s.event.json.find("actions");
    if (a == s.event.json.end() || !a->is_object()) continue;
    auto idOf = [&](const char* key) -> std::optional<std::string> {
      auto it = a->find(key);
      if (it == a->end() || !it->is_object()) return std::nullopt;
      return stringAt(&*it, "requestId");
    };
    for (const char* k : {"permissionRequest", "userQuestionRequest"})
      if (auto id = idOf(k)) open.insert(*id);
    for (const char* k : {"permissionDecision", "permissionAnswerAccepted",
                          "permissionClosureAccepted", "userQuestionAnswerAccepted"})
      if (auto id = idOf(k)) open.erase(*id);
  }
  if (!open.empty()) return std::string(code::stale_user_wait);
  std::vector<RuntimeEvent> events;
  for (const auto& s : stored) events.push_back(s.event);
  auto res = resolveRecovery(events);
  // Planted bug: only a corrupt tool call counts as interrupted, so a run killed around a
  // dispatched call is reported run_interrupted (V7 judges the reason by the crashed ledger).
  const bool overlook = planted("repair_overlooks_interrupted_tool");
  for (const auto& d : res.decisions)
    if (d.status != code::completed && (!overlook || d.status == code::corruption))
      return std::string(code::tool_interrupted);
  const RuntimeEvent& last = stored.back().event;
  if (last.role == Role::model && last.contentKind == ContentKind::text && last.isModelVisible()) {
    return std::string(code::model_stream_completed_without_runtime_terminal);
  }
  return std::string(code::run_interrupted);
}

double nextTs(const RunHeader& h, const std::vector<StoredEvent>& stored) {
  double ts = std::max(h.createdAt, h.updatedAt);
  for (const auto& s : stored) ts = std::max(ts, s.event.ts);
  return ts + 1;
}

[[noreturn]] void ambiguous(const RunHeader& h, const std::string& why) {
  throw Error(code::repair_ambiguous,
              "Startup repair of run " + h.sessionId + "/" + h.runId + " is ambiguous: " + why);
}

// The run's one terminal fact: the ledger's tail, with its status; the header follows it
// (repair_header), or already agrees.
RunRepairAction& repairFromTerminalFact(RuntimeStore& store, const RunHeader& h, bool dryRun,
                                        const std::vector<StoredEvent>& stored,
                                        const StoredEvent& terminal, RunRepairAction& a) {
  const RuntimeEvent& t = terminal.event;
  a.terminalEventId = t.id;
  if (&terminal != &stored.back()) ambiguous(h, "terminal " + t.id + " is not the ledger tail");
  auto st = terminalRunStatusOf(t);
  if (!st) ambiguous(h, "terminal " + t.id + " has no terminal status");
  if (!terminalFactStatus(t, h)) {
    ambiguous(h, *st + " terminal " + t.id +
                     (*st == code::failed ? " has no failure class" : " has no abort source"));
  }
  a.status = *st;
  if (*st == code::failed) a.failureClass = terminalFailureClass(t, &h);
  if (isTerminalRunStatus(h.status)) {
    if (h.status != *st) {
      ambiguous(h, "header status " + h.status + " contradicts terminal " + t.id);
    }
    return a;  // consistent
  }
  a.action = "repair_header";
  if (!dryRun) store.markRunTerminal(terminalHeader(h, t));
  return a;
}

// Header terminal without its fact: append the fact matching the header.
RunRepairAction& appendFactOfHeader(RuntimeStore& store, const RunHeader& h, bool dryRun,
                                    const std::vector<StoredEvent>& stored, const std::string& id,
                                    RunRepairAction& a) {
  a.action = "append_terminal_fact";
  a.status = h.status;
  a.failureClass = h.failureClass;
  if (h.status == code::failed && !h.failureClass)
    ambiguous(h, "failed header has no failure class");
  if (h.status == code::cancelled && !h.abortSource) {
    ambiguous(h, "cancelled header has no abort source");
  }
  if (dryRun) return a;
  TerminalFact fact;
  fact.eventId = id;
  fact.ts = h.completedAt ? *h.completedAt : h.updatedAt;
  for (const auto& s : stored) fact.ts = std::max(fact.ts, s.event.ts);
  fact.status = h.status;
  fact.failureClass = h.failureClass;
  fact.message = h.failureMessage.value_or("Run failed");
  fact.abortSource = h.abortSource;
  fact.recovered = true;
  store.commitTerminalEvent(terminalEvent(h, fact));
  return a;
}

// Neither fact nor terminal header: classify the ledger and seal the run failed / app_restarted,
// the fact before the header.
RunRepairAction& recoverTerminal(RuntimeStore& store, const RunHeader& h, bool dryRun,
                                 const std::vector<StoredEvent>& stored, const std::string& id,
                                 RunRepairAction& a) {
  const std::string reason = classify(stored);
  a.action = "recover_terminal";
  a.status = code::failed;
  a.recoveryReason = reason;
  a.failureClass = std::string(code::app_restarted);
  if (dryRun) return a;
  TerminalFact fact;
  fact.eventId = id;
  fact.ts = nextTs(h, stored);
  fact.status = code::failed;
  fact.failureClass = std::string(code::app_restarted);
  fact.message = "Run did not reach a terminal fact before the runtime restarted (" + reason + ")";
  fact.recovered = true;
  fact.recoveryReason = reason;
  // Planted bug: a run whose model had finished is sealed `completed` instead of failed /
  // app_restarted (V7 checks the classification; V3 sees the continuation that never comes).
  if (planted("repair_seals_finished_run_completed") &&
      reason == code::model_stream_completed_without_runtime_terminal) {
    fact.status = code::completed;
    fact.failureClass.reset();
    fact.message.reset();
  }
  const RuntimeEvent terminal = terminalEvent(h, fact);
  if (planted("repair_header_first")) {  // planted bug: header before fact (V7 must catch it)
    store.markRunTerminal(terminalHeader(h, terminal));
    CRASHSIM_FAILPOINT(P9);
    store.commitTerminalEvent(terminal);
    return a;
  }
  commitTerminalFacts(store, h, terminal);
  return a;
}

RunRepairAction repairRun(RuntimeStore& store, const RunHeader& h, bool dryRun,
                          const RunKeys& leaveOpen) {
  RunRepairAction a;
  a.sessionId = h.sessionId;
  a.runId = h.runId;
  a.action = "none";
  // The common run (one terminal fact, its ledger's tail) needs nothing but that fact: one pass
  // over the rows decodes and checks each (unreadable → throws, as readRunEvents does) without
  // copying the run out of the decode cache. Every other run reads its events.
  {
    std::optional<RuntimeEvent> terminal;
    size_t terminalCount = 0;
    bool tailIsTerminal = false;
    {
      std::lock_guard lk(store_detail::mutexOf(store));
      store_detail::visitRunEvents(store_detail::connectionOf(store), h.sessionId, h.runId,
                                   [&](int64_t, const RuntimeEvent& e) {
                                     tailIsTerminal = e.isTerminal();
                                     if (!tailIsTerminal) return;
                                     if (++terminalCount == 1) terminal = e;
                                   });
    }
    if (terminalCount == 1 && tailIsTerminal) {
      std::vector<StoredEvent> tail(1);
      tail[0].event = std::move(*terminal);
      return repairFromTerminalFact(store, h, dryRun, tail, tail[0], a);
    }
  }
  auto stored = store.readRunEvents(h.sessionId, h.runId);  // unreadable → throws
  std::vector<const StoredEvent*> terminals;
  for (const auto& s : stored)
    if (s.event.isTerminal()) terminals.push_back(&s);
  if (terminals.size() > 1) {
    ambiguous(h, std::to_string(terminals.size()) + " terminal RuntimeEvents");
  }
  if (terminals.size() == 1)
    return repairFromTerminalFact(store, h, dryRun, stored, *terminals[0], a);
  // No terminal fact.
  if (isSagaOwnedClaimTarget(store, h)) {
    a.action = "skipped_claim_target";
    a.detail =
        "continuation claim target without terminal or runtime_admission start: owned by the "
        "claim saga";
    return a;
  }
  if (leaveOpen.count({h.sessionId, h.runId})) {
    a.action = "deferred_reconcile";
    a.detail = std::string(code::reconcile_workspace_required) +
               ": an operation of this run waits for its reconciler; the run stays open";
    return a;
  }
  const std::string id = recoveredTerminalEventId(h.sessionId, h.runId);
  a.terminalEventId = id;
  if (isTerminalRunStatus(h.status)) return appendFactOfHeader(store, h, dryRun, stored, id, a);
  return recoverTerminal(store, h, dryRun, stored, id, a);
}

}  // namespace

bool RepairReport::changed() const {
  for (const auto& r : runs) {
    if (r.action != "none" && r.action != "deferred_reconcile" &&
        r.action.rfind("skipped_", 0) != 0)
      return true;
  }
  return false;
}

Json RepairReport::toJson() const {
  Json out = Json::object();
  out["dryRun"] = dryRun;
  Json arr = Json::array();
  for (const auto& r : runs) {
    Json j = {{"sessionId", r.sessionId}, {"runId", r.runId}, {"action", r.action}};
    if (r.status) j["status"] = *r.status;
    if (r.recoveryReason) j["recoveryReason"] = *r.recoveryReason;
    if (r.failureClass) j["failureClass"] = *r.failureClass;
    if (r.terminalEventId) j["terminalEventId"] = *r.terminalEventId;
    if (!r.detail.empty()) j["detail"] = r.detail;
    arr.push_back(std::move(j));
  }
  out["runs"] = std::move(arr);
  return out;
}

std::string recoveredTerminalEventId(const std::string& sessionId, const std::string& runId) {
  std::string input = "crashsim.runtime-recovered-terminal.v1";
  input.push_back('\0');
  input += sessionId;
  input.push_back('\0');
  input += runId;
  return "runtime-recovered-terminal-" + sha256Hex(input).substr(0, 32);
}

RepairReport startupRepair(RuntimeStore& store, RepairMode mode, bool dryRun,
                           const RunKeys& leaveOpen) {
  RepairReport report;
  report.dryRun = dryRun;
  for (const RunHeader& h : store.listRuns()) {
    try {
      report.runs.push_back(repairRun(store, h, dryRun, leaveOpen));
    } catch (const Error& e) {
      if (mode == RepairMode::strict) throw;
      RunRepairAction a;
      a.sessionId = h.sessionId;
      a.runId = h.runId;
      a.action = e.code() == code::repair_ambiguous ? "skipped_ambiguous" : "skipped_unreadable";
      a.detail = e.code() + ": " + e.what();
      report.runs.push_back(std::move(a));
    }
  }
  return report;
}

}  // namespace crashsim
