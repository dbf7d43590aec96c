// V7: startup repair and fact-before-header (verdicts/v7_repair.h).
#include "verdicts/v7_repair.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/startup_repair.h"
#include "verdicts/observed_store.h"
#include "verdicts/resolver_model.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

InterruptionFacts interruptionFacts(const std::vector<RuntimeEvent>& events) {
  InterruptionFacts f;
  std::set<std::string> open;
  for (const auto& e : events) {
    if (e.partial) continue;
    const auto actions = e.json.find("actions");
    if (actions == e.json.end() || !actions->is_object()) continue;
    auto requestId = [&](const char* key) -> std::string {
      auto it = actions->find(key);
      return it != actions->end() && it->is_object() ? it->value("requestId", "") : "";
    };
    for (const char* k : {"permissionRequest", "userQuestionRequest"})
      if (auto id = requestId(k); !id.empty()) open.insert(id);
    for (const char* k : {"permissionDecision", "permissionAnswerAccepted",
                          "permissionClosureAccepted", "userQuestionAnswerAccepted"})
      if (auto id = requestId(k); !id.empty()) open.erase(id);
  }
  f.openUserWait = !open.empty();
  for (const auto& d : model::resolve(events).decisions)
    f.unsettledTool = f.unsettledTool || d.status != code::completed;
  if (!events.empty()) {
    const RuntimeEvent& last = events.back();
    f.endsInModelText =
        last.role == Role::model && last.contentKind == ContentKind::text && last.isModelVisible();
  }
  return f;
}

std::string recoveryReasonProblem(const std::string& reason, const InterruptionFacts& f) {
  bool claimHolds = false;
  if (reason == code::run_interrupted || reason == code::non_terminal_run_recovered) {
    claimHolds = !f.openUserWait && !f.unsettledTool && !f.endsInModelText;
  } else if (reason == code::stale_user_wait) {
    claimHolds = f.openUserWait;
  } else if (reason == code::tool_interrupted) {
    claimHolds = f.unsettledTool;
  } else if (reason == code::model_stream_completed_without_runtime_terminal) {
    claimHolds = f.endsInModelText;
  } else {
    return fmt::format("recoveryReason '{}' is not one of the contract's five", reason);
  }
  if (claimHolds) return "";
  return fmt::format(
      "recoveryReason {} does not describe the crashed ledger (open user wait: {}, unsettled "
      "tool call: {}, ends in model text: {})",
      reason, f.openUserWait, f.unsettledTool, f.endsInModelText);
}

// Terminal fact before header: every terminal header has exactly one terminal RuntimeEvent
// whose status maps to the header's. Returns "" when the invariant holds.
std::string terminalInvariant(const RuntimeStore& store) {
  for (const auto& h : store.listRuns()) {
    if (!isTerminalStatus(h.status)) continue;
    auto events = eventsOf(store, h);
    std::vector<const RuntimeEvent*> terminals;
    for (const auto& e : events)
      if (!e.partial && e.isTerminal()) terminals.push_back(&e);
    if (terminals.empty())
      return fmt::format(
          "run {} header is {} but has no terminal RuntimeEvent (header before fact)", h.runId,
          h.status);
    if (terminals.size() > 1)
      return fmt::format("run {} has {} terminal RuntimeEvents", h.runId, terminals.size());
    if (headerStatusOfTerminal(*terminals[0]) != h.status)
      return fmt::format("run {} header {} disagrees with its terminal fact {}", h.runId, h.status,
                         headerStatusOfTerminal(*terminals[0]));
    if (&events.back() != terminals[0])
      return fmt::format("run {} terminal fact {} is not the ledger tail", h.runId,
                         terminals[0]->id);
  }
  return "";
}

// V7 on a copy: repair (dry run first), invariant after, second repair changes nothing.
void checkV7(const fs::path& copy, Checks& c) {
  const observed::ReadScope reads(copy);
  auto store = RuntimeStore::open(copy);
  if (auto bad = terminalInvariant(*store); !bad.empty()) {
    c.fail("V7", "crashed store: " + bad);
    return;
  }
  // Terminal facts that already exist must survive repair untouched (P9: header from fact).
  std::map<std::string, std::string> factsBefore;
  std::map<std::string, InterruptionFacts> interrupted;  // the runs without one
  for (const auto& h : store->listRuns()) {
    const auto events = eventsOf(*store, h);
    for (const auto& e : events)
      if (!e.partial && e.isTerminal()) factsBefore[h.runId] = encodeRuntimeEvent(e);
    if (!factsBefore.count(h.runId)) interrupted[h.runId] = interruptionFacts(events);
  }
  const auto tables0 = observed::tableDigests(copy);
  startupRepair(*store, RepairMode::strict, true);
  if (auto t = observed::firstChangedTable(tables0, observed::tableDigests(copy)); !t.empty()) {
    c.fail("V7", "a dry-run repair changed table " + t);
    return;
  }
  startupRepair(*store, RepairMode::strict, false);
  if (auto bad = terminalInvariant(*store); !bad.empty()) {
    c.fail("V7", "after repair: " + bad);
    return;
  }
  for (const auto& h : store->listRuns()) {
    if (!isTerminalStatus(h.status)) {
      c.fail("V7", fmt::format("after repair run {} is still {}", h.runId, h.status));
      return;
    }
    if (!factsBefore.count(h.runId)) {
      // Repair classified an interrupted run (spec g, run recovery step 8–9): status failed,
      // failureClass app_restarted, a recovered terminal fact; the header mirrors it.
      const RuntimeEvent* fact = nullptr;
      const auto events = eventsOf(*store, h);
      for (const auto& e : events)
        if (!e.partial && e.isTerminal()) fact = &e;
      const Json delta =
          fact ? fact->json.value("actions", Json::object()).value("stateDelta", Json::object())
               : Json::object();
      if (!fact || fact->status != EventStatus::failed || delta.value("recovered", false) != true ||
          delta.value("failureClass", "") != std::string(code::app_restarted) ||
          h.status != "failed" || h.failureClass.value_or("") != std::string(code::app_restarted)) {
        c.fail("V7", fmt::format("repair sealed the interrupted run {} as {} (header failureClass "
                                 "{}, fact stateDelta {}); the contract classifies it failed / "
                                 "app_restarted with a recovered terminal fact",
                                 h.runId, h.status, h.failureClass.value_or("-"), delta.dump()));
        return;
      }
      const auto reason = delta.find("recoveryReason");
      if (auto bad = recoveryReasonProblem(
              reason != delta.end() && reason->is_string() ? reason->get<std::string>() : "",
              interrupted[h.runId]);
          !bad.empty()) {
        c.fail("V7", fmt::format("repair sealed the interrupted run {}: {}", h.runId, bad));
        return;
      }
    }
    if (auto it = factsBefore.find(h.runId); it != factsBefore.end()) {
      std::string now;
      for (const auto& e : eventsOf(*store, h))
        if (!e.partial && e.isTerminal()) now = encodeRuntimeEvent(e);
      if (now != it->second) {
        c.fail("V7", fmt::format("repair rewrote the existing terminal fact of run {}", h.runId));
        return;
      }
    }
  }
  std::string h1 = store->ledgerHash();
  auto runs1 = store->listRuns();
  auto second = startupRepair(*store, RepairMode::strict, false);
  if (second.changed() || store->ledgerHash() != h1 || store->listRuns() != runs1) {
    c.fail("V7", "a second repair changed the store (not idempotent)");
    return;
  }
  c.pass("V7");
}

}  // namespace crashsim::harness
