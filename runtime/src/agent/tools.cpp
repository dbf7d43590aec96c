// ToolRuntime and the built-in tools (crashsim/tools.h).
#include "crashsim/tools.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "workspace/process.h"

namespace crashsim {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// CancellationToken

bool CancellationToken::cancel(std::string reason) {
  requests_.fetch_add(1);
  {
    std::lock_guard lock(mutex_);
    if (cancelled_.load()) return false;
    reason_ = std::move(reason);
    cancelled_.store(true);
  }
  cv_.notify_all();
  return true;
}

bool CancellationToken::waitCancelled(std::stop_token stop) const {
  std::unique_lock lock(mutex_);
  return cv_.wait(lock, stop, [this] { return cancelled_.load(); });
}

void ToolRuntime::killRunningProcessGroup() {
  if (const int pgid = activeGroup_.load(); pgid > 0) ::killpg(pgid, SIGKILL);
}

std::string CancellationToken::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

// ---------------------------------------------------------------------------------------------
// EffectsLog

namespace {

void writeAllFd(int fd, const std::string& text, const std::string& what) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(code::workspace_io_failed, "write " + what + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::vector<Json> EffectsLog::read(const fs::path& path) {
  std::vector<Json> out;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      out.push_back(parseJson(line));
    } catch (const std::exception& e) {
      throw Error(code::invalid_json, path.string() + ": malformed effects line: " + e.what());
    }
  }
  return out;
}

int EffectsLog::recordExecution(const std::string& operationId, const std::string& callId,
                                const std::string& invocationId, const std::string& tool) {
  std::lock_guard lock(mutex_);
  int attempt = 1;
  for (const auto& line : read(path_)) {
    if (line.value("operationId", "") == operationId) ++attempt;
  }
  Json line = Json::object();
  line["operationId"] = operationId;
  line["callId"] = callId;
  line["invocationId"] = invocationId;
  line["tool"] = tool;
  line["attempt"] = attempt;
  std::error_code ec;
  if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(code::workspace_io_failed,
                "open effects log " + path_.string() + ": " + std::strerror(errno));
  }
  try {
    writeAllFd(fd, line.dump() + "\n", path_.string());
    if (::fsync(fd) != 0) {
      throw Error(code::workspace_io_failed,
                  "fsync effects log: " + std::string(std::strerror(errno)));
    }
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return attempt;
}

// ---------------------------------------------------------------------------------------------
// helpers

Json toolErrorResult(std::string_view code, const std::string& message) {
  return Json{{"error", Json{{"code", std::string(code)}, {"message", message}}}};
}

Json buildFileEvidence(const WorkspaceIdentity& workspace, const std::string& targetPath,
                       const FileState& before, const FileState& expectedAfter,
                       std::string_view transformVersion, const Json& result) {
  Json e = Json::object();
  e["kind"] = "file_state_v1";
  e["version"] = 1;
  e["workspaceIdentity"] = workspace.identity;
  e["targetPath"] = targetPath;
  e["before"] = toJson(before);
  e["expectedAfter"] = toJson(expectedAfter);
  e["transformVersion"] = std::string(transformVersion);
  e["result"] = result;
  return e;
}

namespace {

constexpr uint64_t kMaxFileBytes = 4u << 20;

PreflightDecision refuse(std::string_view code, const std::string& message) {
  PreflightDecision d;
  d.kind = PreflightDecision::Kind::refuse;
  d.syntheticResult = toolErrorResult(code, message);
  d.syntheticIsError = true;
  return d;
}

// Closed args schema: every key required, all string-valued.
std::optional<std::string> checkArgs(const Json& args, std::initializer_list<const char*> keys) {
  if (!args.is_object()) return "args must be an object";
  for (const char* k : keys) {
    if (!args.contains(k)) return std::string("missing argument '") + k + "'";
    if (!args[k].is_string()) return std::string("argument '") + k + "' must be a string";
  }
  for (const auto& item : args.items()) {
    const std::string& k = item.key();
    if (std::find_if(keys.begin(), keys.end(), [&](const char* x) { return k == x; }) ==
        keys.end()) {
      return "unknown argument '" + k + "'";
    }
  }
  return std::nullopt;
}

size_t countOccurrences(const std::string& haystack, const std::string& needle) {
  if (needle.empty()) return 0;
  size_t n = 0;
  for (size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// Tool output is model-visible JSON: invalid UTF-8 bytes become U+FFFD.
std::string sanitizeUtf8(const std::string& s) {
  return Json::parse(Json(s).dump(-1, ' ', false, Json::error_handler_t::replace))
      .get<std::string>();
}

Json writeResult(const WorkspacePath& target, size_t bytes) {
  return Json{{"path", target.relative}, {"bytesWritten", bytes}};
}
Json editResult(const WorkspacePath& target) {
  return Json{{"path", target.relative}, {"replacements", 1}};
}

// Atomic file replace: temp in the same directory → write → fsync → [P3] → rename → fsync dir.
// Every step goes through DurableFs (crashsim/durable_fs.h), so a power-loss simulation decides
// which of them a power cut keeps.
void replaceFileAtomically(const fs::path& target, const std::string& content,
                           const std::string& operationId) {
  DurableFs& dfs = durableFs();
  const fs::path dir = target.parent_path();
  // Built by appending to one string: GCC 12 at -O3 reports a false -Wrestrict for the
  // equivalent chain of operator+ on temporaries.
  std::string tempName = ".";
  tempName.append(target.filename().native()).append(".").append(operationId).append(".tmp");
  const fs::path temp = dir / tempName;
  // Barrier F (instrumented build) before each durability step: crash points nobody named.
  try {
    CRASHSIM_BARRIER(F);
    if (!dfs.createFile(temp, content, 0644)) {
      // A temp file of this operation left by a crash of an earlier attempt.
      dfs.removeFile(temp);
      if (!dfs.createFile(temp, content, 0644))
        throw Error(code::tool_execution_failed, "temp file " + temp.string() + " reappeared");
    }
    // Planted bug: the temp file is renamed first and synced afterwards under its final name —
    // a power cut may then keep the new name over bytes that never reached the disk.
    const bool syncAfterRename = planted("tool_syncs_after_rename");
    try {
      CRASHSIM_BARRIER(F);
      if (!syncAfterRename) dfs.fsyncFile(temp);
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
    CRASHSIM_FAILPOINT(P3);
    try {
      CRASHSIM_BARRIER(F);
      // Planted bug: a "portable" replace (for platforms whose rename refuses an existing target)
      // unlinks the target first, then renames. A process kill between the two is a narrow
      // window; a power cut before the directory fsync may keep the unlink and lose the rename,
      // and the target is gone (caught by D3 under --mode powerloss at the F barriers).
      if (planted("replace_unlinks_target_first")) {
        std::error_code ec;
        if (fs::exists(fs::symlink_status(target, ec))) dfs.removeFile(target);
      }
      dfs.rename(temp, target);
      if (syncAfterRename) dfs.fsyncFile(target);
    } catch (...) {
      ::unlink(temp.c_str());
      throw;
    }
    // Planted bug: the rename is never made durable. A process kill cannot tell (the page cache
    // survives); a power cut reverts the target (caught by --mode powerloss, V8).
    CRASHSIM_BARRIER(F);
    if (!planted("tool_skips_dir_fsync")) dfs.fsyncDir(dir);
  } catch (const Error& e) {
    if (e.code() == code::tool_execution_failed) throw;
    throw Error(code::tool_execution_failed, e.code() + ": " + e.what());
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ToolRuntime

ToolRuntime::ToolRuntime(WorkspaceIdentity workspace, ToolPolicy policy, EffectsLog& effects)
    : workspace_(std::move(workspace)), policy_(std::move(policy)), effects_(effects) {}

std::vector<std::string> ToolRuntime::builtinTools() { return {"Bash", "Edit", "Read", "Write"}; }

std::string ToolRuntime::recoveryModeOf(std::string_view toolName) {
  if (toolName == "Read") return std::string(code::replay_safe);
  if (toolName == "Write" || toolName == "Edit") return std::string(code::reconcile);
  return std::string(code::never_auto_retry);
}

std::optional<std::string> ToolRuntime::argsProblem(std::string_view toolName, const Json& args) {
  if (toolName == "Read") return checkArgs(args, {"path"});
  if (toolName == "Write") return checkArgs(args, {"path", "content"});
  if (toolName == "Edit") return checkArgs(args, {"path", "old_string", "new_string"});
  return checkArgs(args, {"command"});  // Bash
}

PreflightDecision ToolRuntime::preflight(const ToolCallRequest& call) const {
  const auto builtins = builtinTools();
  const bool builtin = std::find(builtins.begin(), builtins.end(), call.toolName) != builtins.end();
  const bool available = std::find(policy_.available.begin(), policy_.available.end(),
                                   call.toolName) != policy_.available.end();
  if (!builtin || !available) {
    return refuse(code::tool_unavailable, "tool " + call.toolName + " is not available");
  }
  if (std::find(policy_.denied.begin(), policy_.denied.end(), call.toolName) !=
      policy_.denied.end()) {
    return refuse(code::tool_permission_denied,
                  "permission denied: tool " + call.toolName + " is on the deny list");
  }
  if (auto bad = argsProblem(call.toolName, call.args))
    return refuse(code::tool_args_invalid, call.toolName + ": " + *bad);

  PreflightDecision d;
  d.kind = PreflightDecision::Kind::dispatch;
  d.recoveryMode = recoveryModeOf(call.toolName);
  if (call.toolName == "Bash") {
    if (call.args["command"].get<std::string>().empty()) {
      return refuse(code::tool_args_invalid, "Bash: command must not be empty");
    }
    return d;
  }
  WorkspacePath target;
  try {
    target = resolveWorkspacePath(workspace_.root, call.args["path"].get<std::string>());
  } catch (const Error& e) {
    return refuse(e.code(), e.what());
  }
  d.target = target;
  if (call.toolName == "Read") return d;

  std::string current;
  try {
    d.before = observeFile(target.absolute, kMaxFileBytes, &current);
  } catch (const Error& e) {
    return refuse(code::tool_precondition_failed, e.what());
  }
  std::string_view transform;
  Json result;
  if (call.toolName == "Write") {
    d.newContent = call.args["content"].get<std::string>();
    transform = "write_v1";
    result = writeResult(target, d.newContent.size());
  } else {  // Edit
    if (!d.before.exists) {
      return refuse(code::tool_precondition_failed, "Edit: " + target.relative + " does not exist");
    }
    const std::string oldString = call.args["old_string"].get<std::string>();
    const std::string newString = call.args["new_string"].get<std::string>();
    const size_t n = countOccurrences(current, oldString);
    if (n != 1) {
      return refuse(code::tool_precondition_failed, "Edit: old_string must occur exactly once in " +
                                                        target.relative + " (found " +
                                                        std::to_string(n) + ")");
    }
    d.newContent = current;
    d.newContent.replace(d.newContent.find(oldString), oldString.size(), newString);
    transform = "edit_v1";
    result = editResult(target);
  }
  d.expectedAfter = fileStateOf(d.newContent);
  if (d.before == d.expectedAfter) {
    // Deterministic no-op before T1 (spec i): no operation, synthetic success response.
    PreflightDecision noop;
    noop.kind = PreflightDecision::Kind::no_op;
    noop.syntheticResult = result;
    noop.syntheticIsError = false;
    return noop;
  }
  d.fileEvidence =
      buildFileEvidence(workspace_, target.relative, d.before, d.expectedAfter, transform, result);
  return d;
}

ToolResult ToolRuntime::execute(const ToolCallRequest& call, const PreflightDecision& decision,
                                const ToolExecution& execution, const CancellationToken& cancel) {
  try {
    // Planted bug: Read runs without recording its execution (V8: executions come from the
    // scenario, so a call that is dispatched but never recorded fails).
    if (!(planted("read_not_recorded") && call.toolName == "Read"))
      effects_.recordExecution(execution.operationId, execution.callId, execution.invocationId,
                               call.toolName);
    if (call.toolName == "Read") {
      std::string content;
      const FileState state = observeFile(decision.target->absolute, kMaxFileBytes, &content);
      if (!state.exists) {
        return {toolErrorResult(code::tool_execution_failed,
                                "Read: " + decision.target->relative + " does not exist"),
                true};
      }
      return {Json{{"path", decision.target->relative}, {"content", sanitizeUtf8(content)}}, false};
    }
    if (call.toolName == "Write" || call.toolName == "Edit") {
      // The transform is bound to the before-state T1 recorded: refuse to apply it to anything
      // else.
      const FileState now = observeFile(decision.target->absolute, kMaxFileBytes);
      if (now != decision.before) {
        return {toolErrorResult(code::tool_precondition_failed,
                                call.toolName + ": " + decision.target->relative +
                                    " changed between preflight and execution"),
                true};
      }
      replaceFileAtomically(decision.target->absolute, decision.newContent, execution.operationId);
      return {decision.fileEvidence->at("result"), false};
    }
    if (call.toolName == "Bash") {
      detail::ProcessCancel stop;
      stop.requested = [&cancel] { return cancel.cancelled(); };
      stop.killGrace = policy_.bashKillGrace;
      stop.activeGroup = &activeGroup_;
      auto r = detail::runProcess("/bin/sh", {"-c", call.args["command"].get<std::string>()},
                                  workspace_.root, policy_.bashTimeout, 1u << 20, &stop);
      if (!r.started) {
        return {toolErrorResult(code::tool_execution_failed, "Bash: " + r.spawnError), true};
      }
      if (r.cancelled) {
        Json result = toolErrorResult(code::tool_cancelled, "Bash: stopped (" + cancel.reason() +
                                                                "); its process group terminated");
        result["stdout"] = sanitizeUtf8(r.out);
        result["stderr"] = sanitizeUtf8(r.err);
        return {result, true};
      }
      if (r.timedOut) {
        return {toolErrorResult(code::tool_timeout,
                                "Bash: command exceeded " +
                                    std::to_string(policy_.bashTimeout.count()) + " ms"),
                true};
      }
      Json result{{"exitCode", r.exitCode},
                  {"stdout", sanitizeUtf8(r.out)},
                  {"stderr", sanitizeUtf8(r.err)}};
      return {result, r.exitCode != 0};
    }
    return {toolErrorResult(code::tool_unavailable, "tool " + call.toolName + " is not available"),
            true};
  } catch (const Error& e) {
    return {toolErrorResult(e.code(), e.what()), true};
  } catch (const std::exception& e) {
    return {toolErrorResult(code::tool_execution_failed, e.what()), true};
  }
}

}  // namespace crashsim
