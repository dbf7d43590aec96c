// crashsim/tools.h — ToolRuntime: preflight → (T1 by the run loop) → implementation, and the
// four tools with real side effects in a real workspace directory.
//
//   tool   recoveryMode       args (closed key set)                 success result
//   Read   replay_safe        {path}                                {path, content}
//   Write  reconcile          {path, content}                       {path, bytesWritten}
//   Edit   reconcile          {path, old_string, new_string}        {path, replacements:1}
//   Bash   never_auto_retry   {command}                             {exitCode, stdout, stderr}
//
// Preflight (no side effect, nothing executed) checks, in order: tool availability, permission
// (deny list), the args schema, path confinement (no '..', no absolute path, no symlink out,
// never the workspace marker) and file-tool preconditions (Edit: old_string occurs exactly
// once). A refusal is a result the run loop commits as a synthetic isError function_response
// BEFORE T1 (settlement pre_t1_synthetic). A file tool whose before-state already equals its
// expected-after state is a deterministic no-op before T1: no operation, synthetic success
// response (spec i). Otherwise preflight returns a dispatch with the recovery mode and, for
// Write/Edit, the durable file evidence that T1 binds into the dispatch fact.
//
// execute() runs only after T1 created the operation. Its first action is one fsynced line
// in the effects log (the oracle's execution count), then the side effect. Write/Edit: temp
// file ".<name>.<operationId>.tmp" in the target's directory, write, fsync, [P3], rename,
// fsync the directory. Exceptions never escape execute(): they become isError results.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/workspace.h"

namespace crashsim {

// One cooperative cancellation token per process (crashsim/termination.h): checked by the run
// loop before each provider step, before T1 and before the implementation, and handed to every
// tool (Bash polls it). cancel() is thread-safe and idempotent: the first reason wins; it
// returns true for the call that cancelled. Never call it from a signal handler (it locks).
class CancellationToken {
 public:
  bool cancel(std::string reason);
  bool cancelled() const { return cancelled_.load(); }
  int requests() const { return requests_.load(); }  // cancel() calls so far, repeats included
  std::string reason() const;
  // Blocks until cancelled (true) or until `stop` is requested (false).
  bool waitCancelled(std::stop_token stop) const;

 private:
  std::atomic<bool> cancelled_{false};
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  mutable std::condition_variable_any cv_;
  std::string reason_;
};

// The effects log: one JSON line per tool execution, appended and fsynced at the START of
// every implementation:
//   {"operationId","callId","invocationId","tool","attempt"}
// attempt = 1 + earlier lines with the same operationId. Kept next to (not inside) the store
// (default <storeDir>/effects.jsonl) so double execution is detectable.
class EffectsLog {
 public:
  explicit EffectsLog(std::filesystem::path path) : path_(std::move(path)) {}
  // Appends one line (O_APPEND, fsync). Returns the attempt number written.
  int recordExecution(const std::string& operationId, const std::string& callId,
                      const std::string& invocationId, const std::string& tool);
  // Every line of a log (missing file = empty). Malformed lines throw Error(invalid_json).
  static std::vector<Json> read(const std::filesystem::path& path);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::mutex mutex_;
};

struct ToolCallRequest {
  std::string callId;  // provider tool-call id
  std::string toolName;
  Json args = Json::object();
};

struct PreflightDecision {
  enum class Kind { dispatch, refuse, no_op } kind = Kind::refuse;
  std::string recoveryMode;          // dispatch: the tool's recovery mode
  Json syntheticResult;              // refuse / no_op: the synthetic response's result
  bool syntheticIsError = false;     // refuse: true; no_op: false
  std::optional<Json> fileEvidence;  // dispatch of Write/Edit: file_state_v1 evidence
  // What the implementation needs (resolved path, new content, expected states).
  std::optional<WorkspacePath> target;
  std::string newContent;
  FileState before, expectedAfter;
};

struct ToolResult {
  Json result;
  bool isError = false;
};

struct ToolPolicy {
  std::vector<std::string> available;  // tools the model may call
  std::vector<std::string> denied;     // permissions.deny
  std::chrono::milliseconds bashTimeout{10000};
  // Stop: a running Bash gets SIGTERM on its process group, then SIGKILL after this grace.
  std::chrono::milliseconds bashKillGrace{2000};
};

struct ToolExecution {
  std::string operationId, callId, invocationId;
};

class ToolRuntime {
 public:
  ToolRuntime(WorkspaceIdentity workspace, ToolPolicy policy, EffectsLog& effects);

  PreflightDecision preflight(const ToolCallRequest& call) const;
  // Runs the implementation of a dispatched call (never throws; errors → isError results). The
  // run loop checks the token before it calls this; a Bash command that is running when the
  // token is cancelled has its process group terminated and returns
  // {"error":{"code":"tool_cancelled",...},"stdout","stderr"} (isError).
  ToolResult execute(const ToolCallRequest& call, const PreflightDecision& decision,
                     const ToolExecution& execution, const CancellationToken& cancel);
  // The watchdog (crashsim/termination.h): SIGKILL to the process group of the Bash command
  // running now, if any. Thread-safe.
  void killRunningProcessGroup();

  const WorkspaceIdentity& workspace() const { return workspace_; }
  // "replay_safe" | "reconcile" | "never_auto_retry" for the built-in tools; unknown →
  // never_auto_retry (the contract's default).
  static std::string recoveryModeOf(std::string_view toolName);
  // The built-in tool names, sorted.
  static std::vector<std::string> builtinTools();
  // The closed args schema of a built-in tool (every key required, all strings): why `args`
  // does not fit it ("missing argument 'path'", …), or nullopt when it does. Preflight refuses
  // such a call with tool_args_invalid; the scenario loader refuses such a script. The tool must
  // be a built-in one.
  static std::optional<std::string> argsProblem(std::string_view toolName, const Json& args);

 private:
  WorkspaceIdentity workspace_;
  ToolPolicy policy_;
  EffectsLog& effects_;
  std::atomic<int> activeGroup_{0};  // the running Bash command's process group (0: none)
};

// {"error":{"code":<code>,"message":<message>}} — the result shape of refusals and failures.
Json toolErrorResult(std::string_view code, const std::string& message);

// The file_state_v1 evidence T1 binds into the dispatch fact as
// actions.toolDispatch.fileEvidence (spec i):
// {kind:"file_state_v1", version:1, workspaceIdentity, targetPath, before, expectedAfter,
//  transformVersion:"write_v1"|"edit_v1", result}
Json buildFileEvidence(const WorkspaceIdentity& workspace, const std::string& targetPath,
                       const FileState& before, const FileState& expectedAfter,
                       std::string_view transformVersion, const Json& result);

}  // namespace crashsim
