// crashsim/agent.h — the agent run loop and the scripted model provider.
//
// One agent run (DESIGN.md "The runtime"):
//   run header (running, workspaceIdentity, cwd) → user event #1 carrying
//   actions.runtimeProtocol {toolBoundary:"t1_after_preflight_v1"} → loop:
//     [P7 when results were delivered] provider step (scripted model, from the history)
//     final step → final text event → terminal facts (below)
//     [P0] step text event; every function_call committed by the generic writer
//     per call: [P1] preflight → refusal/no-op = synthetic function_response (generic writer,
//       before T1) | T1 commitToolPrepared → [P2] implementation ([P3] in Write/Edit) → [P4]
//       T2 commitToolOutcome ([P5] inside the store) → [P6] → result into the history
//   terminal facts (commitTurnTerminal → crashsim/terminal_facts.h commitTerminalFacts):
//   terminal RuntimeEvent via commitTerminalEvent ([P8] inside) → [P9] → terminal run header.
// A cancellation token is checked between steps and handed to every tool; cancellation ends
// the turn through the same terminal-facts function (status cancelled).
//
// Ids are deterministic: operationId = deriveOperationId(invocationId, callId); events
// <op>_call / <op>_dispatch / <op>_response, journal <op>_prepared / <op>_outcome; ordinary
// events <invocationId>_user, <invocationId>_step<k>_text, <invocationId>_terminal.
// Timestamps are wall-clock Unix ms, strictly increasing within a process (the harness
// compares verdicts, never bytes).
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/tools.h"
#include "crashsim/workspace.h"

namespace crashsim {

struct RunIdentity {
  std::string sessionId, invocationId, runId, turnId;
  bool operator==(const RunIdentity&) const = default;
};

// session-<id>, invocation-<id>-1, run-<id>-1, turn-<id>-1 for scenario <id>.
RunIdentity freshRunIdentity(const Scenario& scenario);
std::string scenarioSessionId(const Scenario& scenario);

// One provider step decided by the scripted model.
struct ModelStep {
  size_t scriptIndex = 0;  // index into scenario.model
  std::optional<std::string> text;
  std::vector<ToolCallRequest> calls;  // empty = the final answer
  bool isFinal() const { return calls.empty(); }
};

// Deterministic scripted provider. nextStep() decides only from the model-visible history it
// is given (function_call / function_response events, any invocation): the next step is the
// first scripted step whose calls do not all have a function_response in the history; a
// partially answered step re-issues only its unanswered calls (same provider call ids; its
// text is repeated only when none of its calls appears in the history); after the last step
// with calls it returns the final text. So after a continuation that trimmed an undispatched
// call, that call is re-issued and runs once.
class ScriptedModel {
 public:
  explicit ScriptedModel(const Scenario& scenario) : scenario_(scenario) {}
  ModelStep nextStep(std::span<const RuntimeEvent> history) const;

 private:
  const Scenario& scenario_;
};

// Wall-clock Unix ms, strictly increasing per instance.
class RunClock {
 public:
  double now();

 private:
  double last_ = 0;
};

struct RunSummary {
  RunIdentity identity;
  std::string status;  // completed | failed | cancelled
  bool continuation = false;
  size_t providerSteps = 0, toolCalls = 0, executions = 0, refused = 0, noOps = 0, toolErrors = 0;
  std::string workspaceIdentity;
  std::optional<std::string> errorCode, errorMessage;  // failed runs
  std::string journalMode, synchronous;  // the store connection's settings (connectionSettings)
  Json toJson() const;
};

// How a turn ends; turned into the terminal RuntimeEvent + header by commitTurnTerminal().
struct TurnEnd {
  std::string status;  // completed | failed | cancelled
  std::optional<std::string> failureClass;
  std::optional<std::string> message;
  std::optional<std::string> abortSource;
};

class AgentRunner {
 public:
  AgentRunner(RuntimeStore& store, const Scenario& scenario, ToolRuntime& tools,
              CancellationToken& cancel);

  // Fresh run: header (running) + user event #1 with the protocol marker, then the loop.
  RunSummary runFresh(const RunIdentity& identity);
  // Continuation run: the target header and its continuation-start event #1 are already
  // durable (continuation authority). `replayHistory` is the validated history from the
  // source lineage; it is given to the model without a duplicate user message.
  RunSummary runContinuation(const RunHeader& targetHeader,
                             const std::vector<RuntimeEvent>& replayHistory);

 private:
  RunSummary loop(RunHeader header, std::vector<RuntimeEvent> history, bool continuation);
  void runCall(const RunHeader& header, const ToolCallRequest& call, const RuntimeEvent& callEvent,
               std::vector<RuntimeEvent>& history, RunSummary& summary);
  // Turns a TurnEnd into the run's terminal facts (terminal_facts.h) and commits them.
  void commitTurnTerminal(RunHeader& header, const TurnEnd& end);

  RuntimeStore& store_;
  const Scenario& scenario_;
  ToolRuntime& tools_;
  CancellationToken& cancel_;
  ScriptedModel model_;
  RunClock clock_;
};

// Builds the events the run loop commits (all pass through decodeRuntimeEvent).
namespace agent_events {
RuntimeEvent userEvent(const RunIdentity& id, double ts, const std::string& text,
                       bool protocolMarker);
RuntimeEvent textEvent(const RunIdentity& id, const std::string& eventId, double ts,
                       const std::string& text);
RuntimeEvent callEvent(const RunIdentity& id, const std::string& operationId, double ts,
                       const ToolCallRequest& call);
// toolDispatch fact; `fileEvidence` (Write/Edit) is bound as actions.toolDispatch.fileEvidence
// (file_state_v1, see crashsim/runtime_event.h FileEvidence).
RuntimeEvent dispatchEvent(const RunIdentity& id, const std::string& operationId, double ts,
                           const ToolCallRequest& call, const std::string& argsHash,
                           const std::string& recoveryMode,
                           const std::optional<Json>& fileEvidence);
// Bound (T2: refs {operationId, toolCallId}) or unbound (synthetic, pre-T1) response.
RuntimeEvent responseEvent(const RunIdentity& id, const std::string& operationId, double ts,
                           const ToolCallRequest& call, const Json& result, bool isError,
                           bool bound);
}  // namespace agent_events

RunIdentity identityOf(const RunHeader& header);

}  // namespace crashsim
