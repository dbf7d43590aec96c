// terminal_facts.cpp — the one builder of a run's terminal facts (crashsim/terminal_facts.h).
#include "crashsim/terminal_facts.h"

#include <algorithm>
#include <initializer_list>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"

namespace crashsim {

namespace {

// The non-empty string at `path` inside `j`, if any.
std::optional<std::string> stringAt(const Json& j, std::initializer_list<const char*> path) {
  const Json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(k);
    if (it == cur->end()) return std::nullopt;
    cur = &*it;
  }
  if (!cur->is_string() || cur->get_ref<const std::string&>().empty()) return std::nullopt;
  return cur->get<std::string>();
}

}  // namespace

bool isTerminalRunStatus(std::string_view s) {
  return s == code::completed || s == code::failed || s == code::cancelled;
}

std::optional<std::string> terminalRunStatusOf(const RuntimeEvent& e) {
  if (e.partial || !e.status) return std::nullopt;
  switch (*e.status) {
    case EventStatus::completed:
      return std::string(code::completed);
    case EventStatus::failed:
      return std::string(code::failed);
    case EventStatus::aborted:
    case EventStatus::cancelled:
      return std::string(code::cancelled);
    default:
      return std::nullopt;
  }
}

std::optional<std::string> terminalFailureClass(const RuntimeEvent& e, const RunHeader* header) {
  for (const char* k : {"failureClass", "errorClass", "reason", "code"})
    if (auto v = stringAt(e.json, {"actions", "stateDelta", k})) return v;
  if (e.contentKind == ContentKind::error) {
    for (const char* k : {"reason", "code"})
      if (auto v = stringAt(e.json, {"content", k})) return v;
  }
  if (header && header->failureClass && !header->failureClass->empty()) return header->failureClass;
  return std::nullopt;
}

std::optional<std::string> terminalAbortSource(const RuntimeEvent& e, const RunHeader* header) {
  for (const char* k : {"abortSource", "source"})
    if (auto v = stringAt(e.json, {"actions", "stateDelta", k})) return v;
  if (header && header->abortSource && !header->abortSource->empty()) return header->abortSource;
  return std::nullopt;
}

std::optional<std::string> terminalFactStatus(const RuntimeEvent& e, const RunHeader& header) {
  std::optional<std::string> st = terminalRunStatusOf(e);
  if (!st) return std::nullopt;
  if (*st == code::failed && !terminalFailureClass(e, &header)) return std::nullopt;
  if (*st == code::cancelled && !terminalAbortSource(e, &header)) return std::nullopt;
  return st;
}

RuntimeEvent terminalEvent(const RunHeader& run, const TerminalFact& fact) {
  if (!isTerminalRunStatus(fact.status))
    throw Error(code::terminal_event_required, "not a terminal run status: " + fact.status);
  Json e = Json::object();
  e["id"] = fact.eventId;
  e["sessionId"] = run.sessionId;
  e["invocationId"] = run.invocationId;
  e["runId"] = run.runId;
  e["turnId"] = run.turnId;
  e["ts"] = fact.ts;
  e["partial"] = false;
  e["role"] = "system";
  e["author"] = "system";
  Json delta = Json::object();
  if (fact.recovered) delta["recovered"] = true;
  if (fact.recoveryReason) delta["recoveryReason"] = *fact.recoveryReason;
  if (fact.status == code::completed) {
    e["status"] = std::string(code::completed);
  } else if (fact.status == code::failed) {
    if (!fact.failureClass || fact.failureClass->empty())
      throw Error(code::terminal_event_required, "a failed terminal fact needs a failure class");
    e["status"] = std::string(code::failed);
    delta["failureClass"] = *fact.failureClass;
    e["content"] = Json{{"kind", "error"},
                        {"code", *fact.failureClass},
                        {"reason", *fact.failureClass},
                        {"message", fact.message.value_or(*fact.failureClass)}};
  } else {
    if (!fact.abortSource || fact.abortSource->empty())
      throw Error(code::terminal_event_required, "a cancelled terminal fact needs an abort source");
    e["status"] = std::string(fact.recovered ? code::aborted : code::cancelled);
    delta["abortSource"] = *fact.abortSource;
  }
  Json actions = Json{{"endInvocation", true}};
  if (!delta.empty()) actions["stateDelta"] = std::move(delta);
  e["actions"] = std::move(actions);
  return decodeRuntimeEvent(e);
}

RunHeader terminalHeader(const RunHeader& run, const RuntimeEvent& terminal) {
  const std::optional<std::string> st =
      terminal.isTerminal() ? terminalFactStatus(terminal, run) : std::nullopt;
  if (!st)
    throw Error(code::run_terminal_fact_missing, "RuntimeEvent " + terminal.id +
                                                     " is not a valid terminal fact of run " +
                                                     run.sessionId + "/" + run.runId);
  RunHeader h = run;
  h.status = *st;
  h.updatedAt = std::max(run.updatedAt, terminal.ts);
  h.completedAt = terminal.ts;
  if (*st == code::failed) {
    h.failureClass = terminalFailureClass(terminal, &run);
    if (terminal.contentKind == ContentKind::error) {
      if (auto m = stringAt(terminal.json, {"content", "message"})) h.failureMessage = m;
    }
  }
  if (*st == code::cancelled) h.abortSource = terminalAbortSource(terminal, &run);
  return h;
}

RunHeader commitTerminalFacts(RuntimeStore& store, const RunHeader& run,
                              const TurnFinalizeBatch& batch) {
  RunHeader header = terminalHeader(run, batch.terminal);  // refuse before writing anything
  if (planted("stop_header_before_fact") && batch.stop) {  // planted bug: the header goes first
    store.markRunTerminal(header);
    CRASHSIM_FAILPOINT(P13);
    store.commitTurnFinalize(batch);
    return header;
  }
  store.commitTurnFinalize(batch);
  if (batch.stop)
    CRASHSIM_FAILPOINT(P13);
  else
    CRASHSIM_FAILPOINT(P9);
  store.markRunTerminal(header);
  return header;
}

RunHeader commitTerminalFacts(RuntimeStore& store, const RunHeader& run,
                              const RuntimeEvent& terminal) {
  TurnFinalizeBatch batch;
  batch.terminal = terminal;
  return commitTerminalFacts(store, run, batch);
}

}  // namespace crashsim
