// The agent run loop (crashsim/agent.h). Failpoints P0–P4, P6, P7 sit here; P3 is inside the
// Write/Edit implementation (tools.cpp), P5 and P8 / P12 inside the store's T2 and terminal
// writer transactions, P9 / P13 between the terminal facts (terminal_facts.cpp).
#include <algorithm>
#include <iostream>
#include <optional>
#include <thread>

#include "crashsim/agent.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "crashsim/terminal_facts.h"

#if defined(CRASHSIM_ENABLE_FAILPOINTS)
#include <cstdlib>
#include <fstream>
#endif

namespace crashsim {
namespace {

// Instrumented build only: what the provider is handed at each step (the model-visible
// history), one JSON line per step appended to $CRASHSIM_MODEL_LOG, for the harness to judge
// the continuation's replay (V8). Identities and kinds only, never content. The production
// library compiles this to nothing.
void logProviderInput([[maybe_unused]] const RunIdentity& id, [[maybe_unused]] size_t step,
                      [[maybe_unused]] const std::vector<RuntimeEvent>& history) {
#if defined(CRASHSIM_ENABLE_FAILPOINTS)
  const char* path = std::getenv("CRASHSIM_MODEL_LOG");
  if (path == nullptr || *path == '\0') return;
  Json items = Json::array();
  for (const auto& e : history) {
    if (!e.isModelVisible()) continue;
    Json item = {{"role", toString(e.role)}, {"kind", toString(e.contentKind)}};
    if (!e.callId.empty()) item["callId"] = e.callId;
    items.push_back(std::move(item));
  }
  std::ofstream(path, std::ios::app)
      << Json{{"runId", id.runId}, {"step", step}, {"history", std::move(items)}}.dump() << "\n";
#endif
}

}  // namespace

std::string scenarioSessionId(const Scenario& scenario) { return "session-" + scenario.id; }

RunIdentity freshRunIdentity(const Scenario& scenario) {
  return RunIdentity{scenarioSessionId(scenario), "invocation-" + scenario.id + "-1",
                     "run-" + scenario.id + "-1", "turn-" + scenario.id + "-1"};
}

Json RunSummary::toJson() const {
  Json j = Json::object();
  j["sessionId"] = identity.sessionId;
  j["invocationId"] = identity.invocationId;
  j["runId"] = identity.runId;
  j["turnId"] = identity.turnId;
  j["status"] = status;
  j["continuation"] = continuation;
  j["providerSteps"] = providerSteps;
  j["toolCalls"] = toolCalls;
  j["executions"] = executions;
  j["refused"] = refused;
  j["noOps"] = noOps;
  j["toolErrors"] = toolErrors;
  j["workspaceIdentity"] = workspaceIdentity;
  if (errorCode) j["errorCode"] = *errorCode;
  if (errorMessage) j["errorMessage"] = *errorMessage;
  if (!journalMode.empty()) j["journalMode"] = journalMode;
  if (!synchronous.empty()) j["synchronous"] = synchronous;
  return j;
}

AgentRunner::AgentRunner(RuntimeStore& store, const Scenario& scenario, ToolRuntime& tools,
                         CancellationToken& cancel, StopOptions stop)
    : store_(store),
      scenario_(scenario),
      tools_(tools),
      cancel_(cancel),
      stop_(std::move(stop)),
      model_(scenario) {
#if defined(CRASHSIM_ENABLE_FAILPOINTS)
  // The harness drives the clock (the T1-exists probe); never in the production library.
  if (const char* start = std::getenv("CRASHSIM_CLOCK_START_MS"); start && *start)
    clock_.drive(std::strtod(start, nullptr));
#endif
}

AgentRunner::~AgentRunner() = default;

StopReceipt AgentRunner::requestStop() {
  bool active = false;
  {
    std::lock_guard lk(doneMutex_);
    active = active_ && !finished_;
  }
  StopReceipt receipt;
  receipt.alreadyIdle = !active;
  if (active) cancel_.cancel(std::string(code::user_stop));
  return receipt;
}

void AgentRunner::checkStop() const {
  if (cancel_.cancelled()) throw Stopped{};
}

RunSummary AgentRunner::runFresh(const RunIdentity& id) {
  RunHeader header;
  header.sessionId = id.sessionId;
  header.runId = id.runId;
  header.invocationId = id.invocationId;
  header.turnId = id.turnId;
  header.status = code::running;
  header.createdAt = header.updatedAt = clock_.now();
  header.workspaceIdentity = tools_.workspace().identity;
  header.cwd = tools_.workspace().root.string();
  store_.createRun(header);
  // Event #1 carries the protocol marker: the SQLite T1/T2 sink is really wired for this run.
  RuntimeEvent user = agent_events::userEvent(id, clock_.now(), scenario_.user, true);
  store_.append(user);
  return loop(header, {user}, false);
}

RunSummary AgentRunner::runContinuation(const RunHeader& targetHeader,
                                        const std::vector<RuntimeEvent>& replayHistory) {
  RunHeader header = targetHeader;
  if (header.status != code::running) {
    header.status = code::running;
    header.updatedAt = clock_.now();
    store_.updateRunHeader(header);
  }
  if (planted("resume_repeats_user_message")) {  // planted bug: the resume re-sends the prompt
    RuntimeEvent user =
        agent_events::userEvent(identityOf(header), clock_.now(), scenario_.user, false);
    store_.append(user);
  }
  return loop(header, replayHistory, true);
}

bool AgentRunner::providerStep(const RunHeader& header, const RunIdentity& id, size_t stepOrdinal,
                               std::vector<RuntimeEvent>& history, RunSummary& summary) {
  checkStop();  // before each provider step
  logProviderInput(id, stepOrdinal, history);
  ModelStep step = model_.nextStep(history);
  ++summary.providerSteps;
  const std::string textId = id.invocationId + "_step" + std::to_string(stepOrdinal) + "_text";
  if (step.isFinal()) {
    if (step.text) {
      RuntimeEvent text = agent_events::textEvent(id, textId, clock_.now(), *step.text);
      accepted([&] { return store_.append(text); });
      history.push_back(text);
    }
    return false;
  }
  CRASHSIM_FAILPOINT(P0);
  if (step.text) {
    RuntimeEvent text = agent_events::textEvent(id, textId, clock_.now(), *step.text);
    accepted([&] { return store_.append(text); });
    history.push_back(text);
  }
  // Model output is durable first: every function_call of the step, generic writer.
  std::vector<RuntimeEvent> callEvents;
  for (const auto& call : step.calls) {
    const std::string op = deriveOperationId(id.invocationId, call.callId);
    RuntimeEvent ev = agent_events::callEvent(id, op, clock_.now(), call);
    accepted([&] { return store_.append(ev); });
    history.push_back(ev);
    callEvents.push_back(std::move(ev));
  }
  for (size_t i = 0; i < step.calls.size(); ++i) {
    runCall(header, step.calls[i], callEvents[i], history, summary);
  }
  return true;
}

void AgentRunner::endRun(RunHeader& header, const TurnEnd& end, bool stopped, RunSummary& summary) {
  bool watchdogSealed = false;
  {
    std::lock_guard lk(acceptMutex_);
    watchdogSealed = watchdogSealed_;
  }
  if (watchdogSealed) {
    // The watchdog sealed the run from accepted state; what the worker did since was refused.
    summary.status = code::recovery_required;
    summary.errorCode = std::string(code::cancellation_grace_expired);
  } else if (stopped) {
    summary.errorCode.reset();
    summary.errorMessage.reset();
    if (commitStop(store_, header, false, clock_)) {
      summary.status = code::cancelled;
      if (stopClosedEffectful_) {  // d.1 (c): after the batch and its terminal header
        try {
          captureAt(header, store_.readRunEvents(header.sessionId, header.runId).back().eventSeq);
        } catch (const Error& e) {  // the run is already sealed: the failure is only reported
          summary.errorCode = e.code();
          summary.errorMessage = e.what();
        }
      }
    } else {
      summary.status = code::recovery_required;
      summary.errorCode = std::string(code::termination_commit_failed);
    }
  } else {
    commitTurnTerminal(header, end);
    summary.status = end.status;
  }
}

RunSummary AgentRunner::loop(RunHeader header, std::vector<RuntimeEvent> history,
                             bool continuation) {
  const RunIdentity id = identityOf(header);
  RunSummary summary;
  summary.identity = id;
  summary.continuation = continuation;
  summary.workspaceIdentity = tools_.workspace().identity;
  {
    std::lock_guard lk(doneMutex_);
    active_ = true;
    finished_ = false;
  }
  std::jthread watchdog;
  if (!stop_.storeDir.empty())
    watchdog = std::jthread([this, header](std::stop_token st) { watch(st, header); });
  TurnEnd end;
  bool stopped = false;
  try {
    if (!continuation) captureAt(header, 1);  // d.1 (a): the baseline, before any provider step
    if (continuation) commitRebaselineNoticeIfDue(header, history);  // g.3, before step 1
    bool deliveredResults = false;
    for (size_t stepOrdinal = 1;; ++stepOrdinal) {
      if (deliveredResults) CRASHSIM_FAILPOINT(P7);
      if (!providerStep(header, id, stepOrdinal, history, summary)) {
        end = TurnEnd{std::string(code::completed), std::nullopt, std::nullopt};
        break;
      }
      deliveredResults = true;
    }
  } catch (const Stopped&) {
    stopped = true;
  } catch (const Error& e) {
    end = TurnEnd{std::string(code::failed), e.code(), e.what()};
    summary.errorCode = e.code();
    summary.errorMessage = e.what();
  } catch (const std::exception& e) {
    end = TurnEnd{std::string(code::failed), std::string(code::agent_error), e.what()};
    summary.errorCode = code::agent_error;
    summary.errorMessage = e.what();
  }
  endRun(header, end, stopped, summary);
  {
    std::lock_guard lk(doneMutex_);
    finished_ = true;
  }
  doneCv_.notify_all();
  return summary;
}

bool AgentRunner::commitStop(RuntimeStore& store, RunHeader& header, bool graceExpired,
                             RunClock& clock) {
  std::lock_guard lk(acceptMutex_);
  if (sealed_) return true;
  const std::vector<StoredEvent> events = store.readRunEvents(header.sessionId, header.runId);
  double ts = clock.now();
  for (const auto& e : events) ts = std::max(ts, e.event.ts + 1);
  LiveToolState live = live_;
  // Planted bug: the watchdog plans without the live start evidence, so the tool still running
  // is closed as never started (not_started) instead of being left unknown.
  if (graceExpired && planted("watchdog_forgets_started_tool")) live.started.clear();
  const TerminationPlan plan =
      planTermination(header, events, live, stopTerminalFact(header, ts, graceExpired));
  for (int attempt = 1;; ++attempt) {
    try {
      header = commitTerminalFacts(store, header, plan.batch);  // the same batch every time
      sealed_ = true;
      for (const auto& e : events)  // d.1 (c): a closed dispatched call of an effectful tool
        if (e.event.contentKind == ContentKind::function_call && effectful(e.event.toolName) &&
            std::count(plan.closedNotStarted.begin(), plan.closedNotStarted.end(), e.event.callId))
          stopClosedEffectful_ = !graceExpired;
      watchdogSealed_ = graceExpired;
      if (planted("double_stop_second_terminal") && cancel_.requests() >= 2) {
        // Planted bug: the second Stop request writes a terminal batch of its own.
        TerminalFact again = stopTerminalFact(header, ts + 1, graceExpired);
        again.eventId += "_2";
        store.append(terminalEvent(header, again));
      }
      return true;
    } catch (const Error& e) {
      if (std::string_view(e.code()) == code::termination_batch_conflict ||
          attempt >= stop_.commitAttempts) {
        std::cerr << Json{{"error", Json{{"code", std::string(code::termination_commit_failed)},
                                         {"cause", e.code()},
                                         {"message", e.what()}}}}
                         .dump()
                  << std::endl;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    }
  }
}

void AgentRunner::watch(std::stop_token stop, RunHeader header) {
  const auto runStart = std::chrono::steady_clock::now();  // the thread starts with the run
  if (!cancel_.waitCancelled(stop)) return;
  {
    // The cooperative grace is counted from the Stop. Planted bug: from the run's start, so a
    // Stop late in a long run is sealed at once.
    const auto deadline =
        (planted("watchdog_grace_from_run_start") ? runStart : std::chrono::steady_clock::now()) +
        stop_.cancellationGrace;
    std::unique_lock lk(doneMutex_);
    if (doneCv_.wait_until(lk, stop, deadline, [this] { return finished_; })) return;
    if (stop.stop_requested()) return;
  }
  try {
    auto store = RuntimeStore::open(stop_.storeDir, stop_.storeOptions);
    RunClock clock;
    if (commitStop(*store, header, true, clock)) tools_.killRunningProcessGroup();
  } catch (const std::exception& e) {
    std::cerr << Json{{"error", Json{{"code", std::string(code::termination_commit_failed)},
                                     {"message", e.what()}}}}
                     .dump()
              << std::endl;
  }
}

void AgentRunner::runCall(const RunHeader& header, const ToolCallRequest& call,
                          const RuntimeEvent& callEvent, std::vector<RuntimeEvent>& history,
                          RunSummary& summary) {
  const RunIdentity id = identityOf(header);
  const std::string op = deriveOperationId(id.invocationId, call.callId);
  ++summary.toolCalls;
  CRASHSIM_FAILPOINT(P1);
  checkStop();  // before T1 (and before a pre-T1 refusal)
  if (const std::optional<Json> gated = rebaselineRefusal(header, call)) {
    // g.4: refused pre-T1 like a preflight refusal (synthetic response, no dispatch).
    ++summary.refused;
    RuntimeEvent response =
        agent_events::responseEvent(id, op, clock_.now(), call, *gated, true, false);
    accepted([&] { return store_.append(response); });
    history.push_back(response);
    return;
  }
  const PreflightDecision decision = tools_.preflight(call);
  if (decision.kind != PreflightDecision::Kind::dispatch) {
    // Refusal or deterministic no-op: synthetic response before T1 (pre_t1_synthetic).
    if (decision.kind == PreflightDecision::Kind::refuse) ++summary.refused;
    if (decision.kind == PreflightDecision::Kind::no_op) ++summary.noOps;
    RuntimeEvent response = agent_events::responseEvent(
        id, op, clock_.now(), call, decision.syntheticResult, decision.syntheticIsError, false);
    accepted([&] { return store_.append(response); });
    history.push_back(response);
    return;
  }
  const std::string argsHash = canonicalArgsHash(call.toolName, call.args);
  ToolPrepared prepared;
  prepared.operationId = op;
  prepared.journalEventId = op + "_prepared";
  prepared.call = callEvent;
  prepared.dispatch = agent_events::dispatchEvent(id, op, clock_.now(), call, argsHash,
                                                  decision.recoveryMode, decision.fileEvidence);
  prepared.providerToolCallId = call.callId;
  prepared.toolName = call.toolName;
  prepared.canonicalArgsHash = argsHash;
  prepared.recoveryMode = decision.recoveryMode;
  prepared.committedAt = clock_.now();
  // Planted bug: a continuation run's own call runs its implementation before its T1 commits
  // (the dispatch is recorded after the side effect). A kill in between leaves a side effect
  // no durable T1 covers; only a kill inside the continuation's own calls can see it.
  std::optional<ToolResult> early;
  if (planted("continuation_runs_tool_before_t1") && summary.continuation)
    early =
        tools_.execute(call, decision, ToolExecution{op, call.callId, id.invocationId}, cancel_);
  const WriteResult t1 = accepted([&] { return store_.commitToolPrepared(prepared); });
  // Planted bug: the implementation runs although T1 says the operation already exists.
  if (!t1.created && !planted("t1_exists_runs_tool")) {
    // The operation was already claimed: the implementation must not run (f.4).
    throw Error(code::tool_already_claimed,
                "tool operation " + op + " was already prepared; not executing it again");
  }
  CRASHSIM_FAILPOINT(P2);
  if (!planted("stop_ignores_token")) checkStop();  // planted bug: the tool starts after a Stop
  {
    std::lock_guard lk(acceptMutex_);
    live_.started.insert(op);  // from here on a Stop cannot say "not started"
  }
  const ToolResult result =
      early ? *early
            : tools_.execute(call, decision, ToolExecution{op, call.callId, id.invocationId},
                             cancel_);
  ++summary.executions;
  if (result.isError) ++summary.toolErrors;
  CRASHSIM_FAILPOINT(P4);
  ToolOutcome outcome;
  outcome.operationId = op;
  outcome.journalEventId = op + "_outcome";
  outcome.response =
      agent_events::responseEvent(id, op, clock_.now(), call, result.result, result.isError, true);
  outcome.committedAt = clock_.now();
  const WriteResult t2 = accepted([&] {
    const WriteResult w = store_.commitToolOutcome(outcome);
    live_.started.erase(op);
    return w;
  });
  CRASHSIM_FAILPOINT(P6);
  if (planted("boundary_crossed_twice")) CRASHSIM_FAILPOINT(P6);  // planted: coverage (exit 2)
  if (effectful(call.toolName)) captureAt(header, t2.runtimeEventSeq);  // d.1 (b)
  // Only now does the result reach the next provider step.
  history.push_back(outcome.response);
}

void AgentRunner::commitTurnTerminal(RunHeader& header, const TurnEnd& end) {
  TerminalFact fact;
  fact.eventId = header.invocationId + "_terminal";
  fact.ts = clock_.now();
  fact.status = end.status;
  if (end.status == code::failed) {
    fact.failureClass = end.failureClass.value_or(std::string(code::agent_error));
    fact.message = end.message;
  }
  std::lock_guard lk(acceptMutex_);
  header = commitTerminalFacts(store_, header, terminalEvent(header, fact));
  sealed_ = true;
}

}  // namespace crashsim
