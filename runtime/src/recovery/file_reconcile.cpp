// Finalize-only file recovery (spec i, c.4, f.6). Contract: recovery/file_reconcile.h.
#include "recovery/file_reconcile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <vector>

#include "crashsim/agent.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "crashsim/recovery_resolver.h"

namespace crashsim {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kReconcileKind = "maka.tool.reconcile_result";
constexpr std::string_view kDecisionKind = "maka.tool.recovery_decision";

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

std::vector<std::string> splitPath(const std::string& relative) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = relative.find('/', start);
    parts.push_back(relative.substr(start, slash == std::string::npos ? slash : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

// Opens the directory that holds `relative`'s last component, walking from the workspace root
// with O_NOFOLLOW one component at a time. Returns the fd, or sets `missing` (a directory on
// the path does not exist) or `unsafe` (a symlink / non-directory on the path; I/O error).
struct ParentDir {
  Fd fd;
  std::string name;  // last component
  bool missing = false;
  std::string failure;  // observation_* code when the walk could not be made safely
};

ParentDir openParent(const fs::path& root, const std::string& relative) {
  ParentDir out;
  const std::vector<std::string> parts = splitPath(relative);
  out.name = parts.back();
  Fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir.ok()) {
    out.failure = std::string(code::observation_io_failed);
    return out;
  }
  // planted bug: only the target itself is opened without following a symlink.
  const int follow = planted("reconcile_follows_parent_symlink") ? 0 : O_NOFOLLOW;
  // planted bug: only the first directory below the root is opened without following one.
  const bool innerFollows = planted("reconcile_follows_inner_parent_symlink");
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    Fd next(::openat(dir.get(), parts[i].c_str(),
                     O_RDONLY | O_DIRECTORY | (innerFollows && i > 0 ? 0 : follow) | O_CLOEXEC));
    if (!next.ok()) {
      const int err = errno;
      if (err == ENOENT || (err == ENOTDIR && planted("reconcile_file_parent_is_absent"))) {
        out.missing = true;
      } else if (err == ELOOP || err == ENOTDIR) {
        out.failure = std::string(code::observation_parent_unsafe);
      } else {
        out.failure = std::string(code::observation_io_failed);
      }
      return out;
    }
    dir = std::move(next);
  }
  out.fd = std::move(dir);
  return out;
}

FileObservation unreadable(std::string_view detail) {
  FileObservation o;
  o.observation = std::string(code::unreadable);
  o.detail = std::string(detail);
  o.observedIdentity = Json{{"unreadable", std::string(detail)}};
  return o;
}

FileStateEvidence evidenceStateOf(const FileState& s) {
  FileStateEvidence e;
  e.exists = s.exists;
  if (s.exists) {
    e.size = static_cast<int64_t>(s.size);
    e.sha256 = s.sha256;
  }
  return e;
}

// Reads the target without following any symlink; nullopt + failure code when unreadable.
std::optional<FileState> readTarget(const WorkspaceIdentity& workspace, const std::string& target,
                                    uint64_t maxBytes, std::string& failure) {
  ParentDir parent = openParent(workspace.root, target);
  if (parent.missing && planted("reconcile_missing_parent_unreadable")) {
    failure = std::string(code::observation_io_failed);  // planted bug: absence is not guessed
    return std::nullopt;
  }
  if (parent.missing) return FileState{};  // a missing directory: the file is observably absent
  if (!parent.failure.empty()) {
    failure = parent.failure;
    return std::nullopt;
  }
  struct stat st {};
  if (::fstatat(parent.fd.get(), parent.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return FileState{};
    failure = std::string(code::observation_io_failed);
    return std::nullopt;
  }
  if (S_ISLNK(st.st_mode)) {
    failure = std::string(code::observation_target_symlink);
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode) && planted("reconcile_directory_is_absent"))
    return FileState{};  // planted bug: "no file there" for a directory in its place
  if (!S_ISREG(st.st_mode)) {
    failure = std::string(code::observation_target_not_regular);
    return std::nullopt;
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    failure = std::string(code::observation_target_too_large);
    return std::nullopt;
  }
  Fd fd(::openat(parent.fd.get(), parent.name.c_str(),
                 O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.ok()) {
    const int err = errno;
    if (err == ENOENT) return FileState{};
    failure =
        std::string(err == ELOOP ? code::observation_target_symlink : code::observation_io_failed);
    return std::nullopt;
  }
  // The file may have been swapped between fstatat and openat: decide on the opened file.
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    failure = std::string(code::observation_target_not_regular);
    return std::nullopt;
  }
  std::string bytes;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failure = std::string(code::observation_io_failed);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > maxBytes) {
      failure = std::string(code::observation_target_too_large);
      return std::nullopt;
    }
  }
  return fileStateOf(bytes);
}

bool sameExecution(const RuntimeEvent& a, const RuntimeEvent& b) {
  return a.sessionId == b.sessionId && a.invocationId == b.invocationId && a.runId == b.runId &&
         a.turnId == b.turnId;
}

Json recoveryEnvelope(const RuntimeEvent& dispatch, const std::string& id, double ts,
                      const Json& toolRecovery) {
  const ToolDispatch& d = *dispatch.toolDispatch;
  return Json{{"id", id},
              {"invocationId", dispatch.invocationId},
              {"runId", dispatch.runId},
              {"sessionId", dispatch.sessionId},
              {"turnId", dispatch.turnId},
              {"ts", ts},
              {"partial", false},
              {"role", "system"},
              {"author", "system"},
              {"actions", Json{{"toolRecovery", toolRecovery}}},
              {"refs", Json{{"operationId", d.operationId}, {"toolCallId", d.providerToolCallId}}}};
}

std::string parkedReasonOf(std::string_view observation) {
  if (observation == code::matches_prior_state) {
    return std::string(code::reconcile_matches_prior_state);
  }
  if (observation == code::diverged) return std::string(code::reconcile_diverged);
  return std::string(code::reconcile_unreadable);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::string validateFileEvidence(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                 const WorkspaceIdentity& workspace) {
  if (!dispatch.toolDispatch || !dispatch.toolDispatch->fileEvidence) {
    return std::string(code::file_evidence_missing);
  }
  const ToolDispatch& d = *dispatch.toolDispatch;
  const FileEvidence& ev = *d.fileEvidence;
  const std::string op = deriveOperationId(dispatch.invocationId, d.providerToolCallId);
  if (d.operationId != op || dispatch.id != op + "_dispatch" || call.id != op + "_call" ||
      call.contentKind != ContentKind::function_call || call.callId != d.providerToolCallId ||
      call.toolName != d.toolName || !sameExecution(call, dispatch)) {
    return std::string(code::file_evidence_identity_conflict);
  }
  if (ev.workspaceIdentity != workspace.identity) {
    return std::string(code::file_evidence_workspace_mismatch);
  }
  const std::vector<std::string> parts = splitPath(ev.targetPath);
  for (const auto& p : parts) {
    if (p.empty() || p == "." || p == "..") return std::string(code::file_evidence_target_invalid);
  }
  if (ev.targetPath.empty() || ev.targetPath.front() == '/' ||
      parts.back() == kWorkspaceMarkerName) {
    return std::string(code::file_evidence_target_invalid);
  }
  const bool write = d.toolName == "Write";
  const bool edit = d.toolName == "Edit";
  if (!((write && ev.transformVersion == "write_v1") ||
        (edit && ev.transformVersion == "edit_v1"))) {
    return std::string(code::file_evidence_transform_mismatch);
  }
  const Json args = call.json.at("content").at("args");
  if (!args.is_object() || !args.contains("path") || !args.at("path").is_string() ||
      fs::path(args.at("path").get<std::string>()).lexically_normal().generic_string() !=
          ev.targetPath) {
    return std::string(code::file_evidence_args_mismatch);
  }
  if (write) {
    if (!args.contains("content") || !args.at("content").is_string() ||
        evidenceStateOf(fileStateOf(args.at("content").get<std::string>())) != ev.expectedAfter) {
      return std::string(code::file_evidence_args_mismatch);
    }
  }
  if (!ev.expectedAfter.exists) return std::string(code::file_evidence_expected_absent);
  if (ev.before == ev.expectedAfter) return std::string(code::file_evidence_states_equal);
  const Json expectedResult =
      write ? Json{{"path", ev.targetPath}, {"bytesWritten", ev.expectedAfter.size}}
            : Json{{"path", ev.targetPath}, {"replacements", 1}};
  // Compare through stable JSON: numbers as JavaScript sees them.
  if (stableJson(ev.result) != stableJson(expectedResult)) {
    return std::string(code::file_evidence_result_mismatch);
  }
  return {};
}

FileObservation observeFileEvidence(const WorkspaceIdentity& workspace,
                                    const FileEvidence& evidence, uint64_t maxBytes) {
  std::string failure;
  const std::optional<FileState> state =
      readTarget(workspace, evidence.targetPath, maxBytes, failure);
  if (!state) return unreadable(failure);
  FileObservation o;
  o.observedIdentity = toJson(*state);
  const FileStateEvidence observed = evidenceStateOf(*state);
  if (observed == evidence.expectedAfter) {
    o.observation = std::string(code::matches_expected_state);
  } else if (observed == evidence.before) {
    o.observation = std::string(code::matches_prior_state);
  } else {
    o.observation = std::string(code::diverged);
  }
  return o;
}

bool removeOperationTempFile(const WorkspaceIdentity& workspace, const std::string& targetPath,
                             const std::string& operationId) {
  ParentDir parent = openParent(workspace.root, targetPath);
  if (!parent.fd.ok()) return false;
  const std::string temp = "." + parent.name + "." + operationId + ".tmp";
  struct stat st {};
  if (::fstatat(parent.fd.get(), temp.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISREG(st.st_mode)) return false;
  if (::unlinkat(parent.fd.get(), temp.c_str(), 0) != 0) return false;
  ::fsync(parent.fd.get());
  return true;
}

RecoveryBundle buildFileRecoveryBundle(const RuntimeEvent& call, const RuntimeEvent& dispatch,
                                       const FileObservation& observation, double baseTs) {
  const ToolDispatch& d = dispatch.toolDispatch.value();
  const std::string& op = d.operationId;
  const bool completed = observation.observation == code::matches_expected_state;
  RecoveryBundle b;
  b.operationId = op;
  const std::string reconcileId = op + "_reconcile";
  const std::string decisionId = op + "_decision";
  const std::string outcomeId = op + "_response";
  b.reconcile = decodeRuntimeEvent(recoveryEnvelope(
      dispatch, reconcileId, baseTs + 1,
      Json{{"kind", std::string(kReconcileKind)},
           {"version", 1},
           {"payload",
            Json{{"protocol", std::string(code::tool_reconcile_v1)},
                 {"operationId", op},
                 {"observation", observation.observation},
                 {"observationSchema", std::string(code::state_identity_v1)},
                 {"observationDigest", sha256Digest(stableJson(observation.observedIdentity))}}}}));
  Json payload = Json{{"protocol", std::string(code::tool_recovery_v1)}, {"operationId", op}};
  if (completed) {
    if (!d.fileEvidence) {
      throw Error(code::file_evidence_missing,
                  "a completed file recovery bundle needs the evidence result");
    }
    const RunIdentity id{dispatch.sessionId, dispatch.invocationId, dispatch.runId,
                         dispatch.turnId};
    ToolCallRequest request{call.callId, call.toolName, call.json.at("content").at("args")};
    b.outcome = agent_events::responseEvent(id, op, baseTs + 2, request, d.fileEvidence->result,
                                            false, true);
    payload["disposition"] = std::string(code::completed);
    payload["reasonCode"] = std::string(code::reconcile_matches_expected_state);
    payload["outcomeEventId"] = outcomeId;
    payload["evidenceEventIds"] = Json::array({call.id, dispatch.id, reconcileId, outcomeId});
  } else {
    payload["disposition"] = std::string(code::parked);
    payload["reasonCode"] = parkedReasonOf(observation.observation);
    payload["evidenceEventIds"] = Json::array({call.id, dispatch.id, reconcileId});
  }
  b.decision = decodeRuntimeEvent(recoveryEnvelope(
      dispatch, decisionId, baseTs + (completed ? 3 : 2),
      Json{{"kind", std::string(kDecisionKind)}, {"version", 1}, {"payload", payload}}));
  return b;
}

// ---------------------------------------------------------------------------------------------

namespace {

const RuntimeEvent* findEvent(const std::vector<StoredEvent>& events, const std::string& id) {
  for (const auto& e : events) {
    if (e.event.id == id) return &e.event;
  }
  return nullptr;
}

// Reconciles one indeterminate operation of a run; fills `report`.
void reconcileOne(RuntimeStore& store, const WorkspaceIdentity& workspace, bool removeTempFiles,
                  const std::vector<StoredEvent>& events, const ToolDecision& decision,
                  Json& report) {
  const RuntimeEvent* call = findEvent(events, *decision.callRuntimeEventId);
  const RuntimeEvent* dispatch = findEvent(events, *decision.dispatchRuntimeEventId);
  if (call == nullptr || dispatch == nullptr || !dispatch->toolDispatch) {
    report["action"] = "skipped_corrupt_ledger";
    return;
  }
  FileObservation obs;
  const std::string evidenceFailure = validateFileEvidence(*call, *dispatch, workspace);
  if (!evidenceFailure.empty()) {
    // Never guess: evidence that fails validation parks the operation as unreadable.
    obs.observation = std::string(code::unreadable);
    obs.detail = evidenceFailure;
    obs.observedIdentity = Json{{"evidenceInvalid", evidenceFailure}};
  } else {
    const FileEvidence& ev = *dispatch->toolDispatch->fileEvidence;
    obs = observeFileEvidence(workspace, ev);
    // Finalize/cleanup only: the leftover temp file of THIS operation goes; the target stays.
    if (removeTempFiles) {
      report["tempRemoved"] =
          removeOperationTempFile(workspace, ev.targetPath, dispatch->toolDispatch->operationId);
    }
  }
  report["observation"] = obs.observation;
  if (!obs.detail.empty()) report["detail"] = obs.detail;
  double baseTs = 0;
  for (const auto& e : events) baseTs = std::max(baseTs, e.event.ts);
  try {
    const RecoveryBundle bundle = buildFileRecoveryBundle(*call, *dispatch, obs, baseTs);
    const WriteResult w = store.commitToolRecoveryBundle(bundle);
    report["action"] = w.created ? "bundle_committed" : "bundle_exact_retry";
    report["disposition"] = bundle.decision.toolRecovery->disposition;
    report["reasonCode"] = bundle.decision.toolRecovery->reasonCode;
    // Planted bug: a park "restores" the target by rewriting it (V8: a park changes nothing).
    if (planted("park_rewrites_target") && obs.observation == code::matches_prior_state &&
        dispatch->toolDispatch->fileEvidence) {
      const auto target = workspace.root / dispatch->toolDispatch->fileEvidence->targetPath;
      std::ifstream in(target, std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      in.close();
      std::ofstream(target, std::ios::binary | std::ios::trunc) << bytes << "\n";
    }
  } catch (const Error& e) {
    report["action"] = "bundle_refused";
    report["error"] = Json{{"code", e.code()}, {"message", e.what()}};
  }
}

}  // namespace

bool hasDedicatedReconciler(const ToolDecision& decision) {
  return decision.status == code::indeterminate &&
         decision.reason == code::dispatch_without_response &&
         (decision.toolName == "Write" || decision.toolName == "Edit") &&
         decision.recoveryMode == code::reconcile;
}

Json reconcileIndeterminateOperations(RuntimeStore& store, const WorkspaceIdentity& workspace) {
  return reconcileIndeterminateOperations(store, ReconcileOptions{&workspace, true});
}

Json reconcileIndeterminateOperations(RuntimeStore& store, const ReconcileOptions& options) {
  Json ops = Json::array();
  // Runs holding an unsettled (prepared, dispatched, no result) operation.
  std::set<std::pair<std::string, std::string>> runs;  // (sessionId, runId)
  std::set<std::string> unsettledRuns;
  for (const auto& row : store.listUnsettledToolOperations()) unsettledRuns.insert(row.runId);
  if (unsettledRuns.empty()) return Json{{"operations", ops}};
  for (const auto& h : store.listRuns()) {
    if (unsettledRuns.count(h.runId)) runs.insert({h.sessionId, h.runId});
  }
  for (const auto& [sessionId, runId] : runs) {
    std::vector<StoredEvent> events = store.readRunEvents(sessionId, runId);
    std::vector<RuntimeEvent> plain;
    plain.reserve(events.size());
    for (const auto& e : events) plain.push_back(e.event);
    const RecoveryResolution resolution = resolveRecovery(plain);
    const bool sealed = std::any_of(plain.begin(), plain.end(), [](const RuntimeEvent& e) {
      return !e.partial && e.isTerminal();
    });
    for (const ToolDecision& decision : resolution.decisions) {
      if (decision.status != code::indeterminate ||
          decision.reason != code::dispatch_without_response || !decision.operationId ||
          !decision.callRuntimeEventId || !decision.dispatchRuntimeEventId) {
        continue;
      }
      Json r = Json{{"operationId", *decision.operationId},
                    {"toolName", decision.toolName.value_or("")},
                    {"sessionId", sessionId},
                    {"runId", runId},
                    {"recoveryMode", decision.recoveryMode.value_or("")}};
      if (resolution.hasCorruption) {
        r["action"] = "skipped_corrupt_ledger";
      } else if (sealed) {
        // The run already has its terminal fact: no new event may follow it (f.3 run seal).
        r["action"] = "left_indeterminate_run_sealed";
      } else if (!hasDedicatedReconciler(decision)) {
        // No dedicated protocol: never reconciled, stays indeterminate (planning parks on it).
        r["action"] = "left_indeterminate";
      } else if (options.workspace == nullptr) {
        // Nothing can be observed: leave it for a start-up that has the workspace.
        r["action"] = "deferred";
        r["detail"] = code::reconcile_workspace_required;
      } else {
        reconcileOne(store, *options.workspace, options.removeTempFiles, events, decision, r);
        // The ledger of this run changed: later operations see the new facts (and base ts).
        events = store.readRunEvents(sessionId, runId);
      }
      ops.push_back(std::move(r));
    }
  }
  return Json{{"operations", ops}};
}

}  // namespace crashsim
