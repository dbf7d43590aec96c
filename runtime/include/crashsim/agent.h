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
// Stop (crashsim/termination.h): the cancellation token is checked before each provider step
// (after [P7]), before T1 (after [P1]) and before the implementation (after [P2]); a Stop seen
// there ends the turn with the termination plan's batch — the open calls' closures and the
// cancelled terminal (abortSource user_stop) in one transaction ([P12] inside), [P13], the
// header. A result that came back after the Stop is committed through T2 first. When the
// worker has not finished within the cooperative grace after the Stop, the watchdog thread
// seals the run from accepted state (recoveryReason cancellation_grace_expired; the running
// tool stays indeterminate), kills the running Bash process group, and every later write of
// the run loop is refused by the store (run_sealed) and never reaches the model.
//
// Ids are deterministic: operationId = deriveOperationId(invocationId, callId); events
// <op>_call / <op>_dispatch / <op>_response, journal <op>_prepared / <op>_outcome; ordinary
// events <invocationId>_user, <invocationId>_step<k>_text, <invocationId>_terminal.
// Timestamps are wall-clock Unix ms, strictly increasing within a process (the harness
// compares verdicts, never bytes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/termination.h"
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
// call, that call is re-issued and runs once. A response that is a Stop closure saying the tool
// never ran (error code cancelled_before_dispatch or not_started) does not answer the call: like
// a real model after "cancelled", it asks again, under a new provider call id
// reissuedCallId(id, n) (n = how many such closures the call has had).
class ScriptedModel {
 public:
  explicit ScriptedModel(const Scenario& scenario) : scenario_(scenario) {}
  ModelStep nextStep(std::span<const RuntimeEvent> history) const;

 private:
  const Scenario& scenario_;
};

// "<scripted id>~<n>": the provider call id of the n-th re-issue of a scripted call; and back.
std::string reissuedCallId(const std::string& scriptedId, size_t n);
std::string scriptedCallIdOf(const std::string& providerCallId);
// A function_response that closes a call a Stop kept from running (termination plan).
bool isNeverRanStopClosure(const RuntimeEvent& response);

// Wall-clock Unix ms, strictly increasing per instance.
class RunClock {
 public:
  double now();
  // A clock the harness drives (crashsim-agent's instrumented build, CRASHSIM_CLOCK_START_MS):
  // every reading is the previous one + 1 ms from `startMs`, so the same run request delivered
  // twice writes byte-identical events (the store answers them as exact retries).
  void drive(double startMs) {
    driven_ = true;
    last_ = startMs - 1;
  }

 private:
  double last_ = 0;
  bool driven_ = false;
};

struct RunSummary {
  RunIdentity identity;
  // completed | failed | cancelled | recovery_required (a Stop whose batch was not accepted:
  // termination_commit_failed; or a watchdog seal: cancellation_grace_expired)
  std::string status;
  bool continuation = false;
  size_t providerSteps = 0, toolCalls = 0, executions = 0, refused = 0, noOps = 0, toolErrors = 0;
  std::string workspaceIdentity;
  std::optional<std::string> errorCode, errorMessage;  // failed runs
  std::string journalMode, synchronous;  // the store connection's settings (connectionSettings)
  Json toJson() const;
};

// How a turn ends by itself; turned into the terminal RuntimeEvent + header by
// commitTurnTerminal(). (A Stop ends it through the termination plan instead.)
struct TurnEnd {
  std::string status;  // completed | failed
  std::optional<std::string> failureClass;
  std::optional<std::string> message;
};

// The Stop path's settings. Without a store directory there is no watchdog.
struct StopOptions {
  std::chrono::milliseconds cancellationGrace{15000};  // the contract's default
  std::filesystem::path storeDir;  // the watchdog opens its own connection to this store
  StoreOptions storeOptions;
  int commitAttempts = 3;  // a failed termination batch is retried, byte for byte, this often
};

struct GitRuntime;

// Workspace checkpoints of a live run (workspace-continuity-contract.md d.1, d.3): the host's
// checkpoint requirement and the store whose carrier holds them. `disabled` captures nothing.
struct CheckpointOptions {
  std::string requirement = "disabled";  // disabled | optional_legacy | required
  std::filesystem::path storeDir;
};

class AgentRunner {
 public:
  AgentRunner(RuntimeStore& store, const Scenario& scenario, ToolRuntime& tools,
              CancellationToken& cancel, StopOptions stop = {});
  ~AgentRunner();
  AgentRunner(const AgentRunner&) = delete;
  AgentRunner& operator=(const AgentRunner&) = delete;

  // Fresh run: header (running) + user event #1 with the protocol marker, then the loop.
  RunSummary runFresh(const RunIdentity& identity);
  // Continuation run: the target header and its continuation-start event #1 are already
  // durable (continuation authority). `replayHistory` is the validated history from the
  // source lineage; it is given to the model without a duplicate user message.
  RunSummary runContinuation(const RunHeader& targetHeader,
                             const std::vector<RuntimeEvent>& replayHistory);
  // The public Stop API: cancels the token (a second Stop is a no-op) and returns the receipt;
  // alreadyIdle when no run of this runner is active. Thread-safe; never waits for the exit.
  StopReceipt requestStop();
  // Captures at d.1's points from now on: (a) the baseline of a fresh run, after its user event
  // #1 and before its first provider step (p = 1); (b) after the T2 of an operation whose tool's
  // effect is not `none` (every tool but Read), before its result reaches the model (p = its
  // response); (c) after a Stop's termination batch that closed a dispatched operation of such a
  // tool (p = the terminal event). d.3: under `optional_legacy` a failed capture is logged (one
  // JSON line on stderr) and the run goes on; under `required` the run ends `failed` with the
  // code; a post-verify failure or a writer conflict (workspace_fact_conflict,
  // workspace_epoch_*) ends it `failed` under both.
  void enableCheckpoints(CheckpointOptions options);

 private:
  struct Stopped {};  // a token check saw the Stop
  RunSummary loop(RunHeader header, std::vector<RuntimeEvent> history, bool continuation);
  // One provider step: the Stop check, the model's step, its text and every function_call
  // committed (model output is durable first), then each call through ToolRuntime. False when
  // the step was the final answer.
  bool providerStep(const RunHeader& header, const RunIdentity& id, size_t stepOrdinal,
                    std::vector<RuntimeEvent>& history, RunSummary& summary);
  // The run's end: the watchdog's seal stands, or the Stop's termination batch, or the turn's
  // terminal facts; sets summary.status.
  void endRun(RunHeader& header, const TurnEnd& end, bool stopped, RunSummary& summary);
  void runCall(const RunHeader& header, const ToolCallRequest& call, const RuntimeEvent& callEvent,
               std::vector<RuntimeEvent>& history, RunSummary& summary);
  void checkStop() const;  // throws Stopped when the token is cancelled
  // One store write of the run loop, under acceptMutex_.
  template <class Write>
  auto accepted(Write&& write) {
    std::lock_guard lk(acceptMutex_);
    return write();
  }
  // One d.2 capture at row p of the run (d.3 on failure: logs, or throws Error to end the run).
  void captureAt(const RunHeader& header, int64_t p);
  bool effectful(const std::string& toolName) const { return toolName != "Read"; }  // e.1
  // Workspace continuity g.3: a continuation bound to an epoch opened by user_rebaseline commits
  // the epoch's replay notice (generic append) before its first provider step when no run of the
  // session holds it yet, and adds it to the history [P29]. Nothing without checkpoints.
  void commitRebaselineNoticeIfDue(const RunHeader& header, std::vector<RuntimeEvent>& history);
  // g.4: the read-before-write gate's refusal of `call` in this run, if any (pre-T1). A function
  // of the facts and the ledger, re-read at every call.
  std::optional<Json> rebaselineRefusal(const RunHeader& header, const ToolCallRequest& call);
  // Turns a TurnEnd into the run's terminal facts (terminal_facts.h) and commits them.
  void commitTurnTerminal(RunHeader& header, const TurnEnd& end);
  // The termination batch of a Stop (planTermination from the committed events and live_),
  // retried byte for byte up to stop_.commitAttempts times; false when it was never accepted.
  bool commitStop(RuntimeStore& store, RunHeader& header, bool graceExpired, RunClock& clock);
  // The watchdog thread of one run (see the header comment).
  void watch(std::stop_token stop, RunHeader header);

  RuntimeStore& store_;
  const Scenario& scenario_;
  ToolRuntime& tools_;
  CancellationToken& cancel_;
  StopOptions stop_;
  ScriptedModel model_;
  RunClock clock_;
  // One writer at a time between the run loop and the watchdog. Held around every store write
  // of the run loop (never while a tool runs) and by the watchdog while it plans and commits.
  std::mutex acceptMutex_;
  LiveToolState live_;           // acceptMutex_
  bool sealed_ = false;          // acceptMutex_: this run's terminal batch was accepted
  bool watchdogSealed_ = false;  // acceptMutex_
  std::mutex doneMutex_;
  std::condition_variable_any doneCv_;
  bool active_ = false, finished_ = false;  // doneMutex_
  std::optional<CheckpointOptions> checkpoints_;
  std::shared_ptr<const GitRuntime> git_;  // resolved at the first capture (c.2)
  bool stopClosedEffectful_ = false;       // acceptMutex_: d.1 (c) is due after the Stop batch
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
