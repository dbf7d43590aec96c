// rebaseline_gate.cpp — a rebased epoch's replay notice (workspace-continuity-contract.md g.3)
// and its read-before-write gate (g.4): functions of the facts and the ledger, no state of their
// own, so both survive any crash.
#include <algorithm>
#include <map>
#include <mutex>

#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/workspace_rebaseline.h"
#include "store/workspace_reads.h"

namespace crashsim {

namespace fs = std::filesystem;

std::optional<RebasedEpoch> rebasedEpochOf(RuntimeStore& store, const RunHeader& header) {
  if (!header.workspaceBoundary || !header.workspaceBoundary->is_object()) return std::nullopt;
  const Json& b = *header.workspaceBoundary;
  if (!b.contains("epoch") || !b["epoch"].is_number_integer()) return std::nullopt;
  const std::string ws = workspaceIdForSession(header.sessionId);
  detail::WorkspaceScan scan;
  {
    std::lock_guard lk(store_detail::mutexOf(store));
    scan = store_detail::scanWorkspaceAuthority(store_detail::connectionOf(store), ws);
  }
  const detail::ScannedLineage* ln = scan.find(ws);
  if (!scan.issues.empty() || !ln) return std::nullopt;
  const int64_t epoch = b["epoch"].get<int64_t>();
  for (const detail::ScannedEpoch& e : ln->epochs) {
    if (e.opened.epoch != epoch || e.opened.reason != "user_rebaseline") continue;
    RebasedEpoch out;
    out.workspaceId = ws;
    out.epoch = epoch;
    out.openedEventId = e.openedEventId;
    out.allPaths = e.opened.readSet.value("kind", "") != "paths";
    if (!out.allPaths)
      for (const Json& p : e.opened.readSet.at("paths")) out.paths.push_back(p.get<std::string>());
    return out;
  }
  return std::nullopt;
}

std::string rebaselineNoticeText(const RebasedEpoch& e) {
  std::string text = "Workspace rebaselined to epoch " + std::to_string(e.epoch) + ".\n";
  text +=
      "The files were accepted as they are now and may differ from what earlier messages show.\n";
  if (e.allPaths) {
    text +=
        "Read a file again before you write or edit it; shell commands stay blocked in this "
        "epoch.";
    return text;
  }
  text +=
      "Read each file listed below again before you write or edit it; shell commands stay blocked "
      "until all of them have been read.\n";
  std::string list;
  for (const std::string& p : e.paths) list += (list.empty() ? "" : ", ") + stableJson(Json(p));
  text += "Files: " + (list.empty() ? std::string("none") : list);
  return text;
}

bool rebaselineNoticeCommitted(RuntimeStore& store, const std::string& sessionId,
                               const std::string& epochOpenedEventId) {
  for (const RunHeader& h : store.listRuns(sessionId))
    for (const StoredEvent& se : store.readRunEvents(h.sessionId, h.runId)) {
      const Json& j = se.event.json;
      if (j.contains("actions") && j["actions"].is_object() &&
          j["actions"].contains("stateDelta") && j["actions"]["stateDelta"].is_object() &&
          j["actions"]["stateDelta"].value("workspaceRebaselineNotice", "") == epochOpenedEventId)
        return true;
    }
  return false;
}

RuntimeEvent rebaselineNoticeEvent(const PrefixIdentity& run, const RebasedEpoch& epoch,
                                   double ts) {
  Json e = Json::object();
  e["id"] = rebaselineNoticeId(epoch.openedEventId, run.runId);
  e["invocationId"] = run.invocationId;
  e["sessionId"] = run.sessionId;
  e["runId"] = run.runId;
  e["turnId"] = run.turnId;
  e["ts"] = ts;
  e["partial"] = false;
  e["role"] = "user";
  e["author"] = "host";
  e["content"] = Json{{"kind", "text"}, {"text", rebaselineNoticeText(epoch)}, {"steering", true}};
  e["actions"] = Json{{"stateDelta", Json{{"workspaceRebaselineNotice", epoch.openedEventId}}}};
  return decodeRuntimeEvent(e);
}

std::string rebaselineCanonicalPath(const fs::path& root, const std::string& path) {
  fs::path p(path);
  if (p.is_absolute()) p = p.lexically_normal().lexically_relative(root.lexically_normal());
  return p.lexically_normal().generic_string();
}

std::set<std::string> rebaselineReadPaths(RuntimeStore& store, const std::string& sessionId,
                                          const RebasedEpoch& epoch) {
  std::set<std::string> read;
  for (const RunHeader& h : store.listRuns(sessionId)) {
    if (!h.workspaceBoundary || !h.workspaceBoundary->is_object() ||
        h.workspaceBoundary->value("epoch", int64_t{0}) != epoch.epoch)
      continue;
    std::vector<RuntimeEvent> events;
    for (StoredEvent& se : store.readRunEvents(h.sessionId, h.runId))
      events.push_back(std::move(se.event));
    for (const ToolDecision& d : resolveRecovery(events).decisions) {
      if (d.toolName != "Read" || d.status != "completed" || d.responseIsError.value_or(true) ||
          !d.callIndex)
        continue;
      const Json& content = events[*d.callIndex].json.at("content");
      if (!content.contains("args") || !content["args"].is_object()) continue;
      const Json& args = content["args"];
      if (args.contains("path") && args["path"].is_string())
        read.insert(rebaselineCanonicalPath(h.cwd ? fs::path(*h.cwd) : fs::path(),
                                            args["path"].get<std::string>()));
    }
  }
  return read;
}

Json RebaselineGateRefusal::result() const {
  return Json{{"error", Json{{"code", code}, {"message", message}}}};
}

std::optional<RebaselineGateRefusal> rebaselineGate(
    const RebasedEpoch& epoch, const std::set<std::string>& readPaths, const std::string& toolName,
    const std::optional<std::string>& canonicalPath) {
  const std::string n = std::to_string(epoch.epoch);
  const ToolEffect effect = toolEffect(toolName);
  if (effect == ToolEffect::none) return std::nullopt;
  const auto inReadSet = [&](const std::string& p) {
    return epoch.allPaths || std::binary_search(epoch.paths.begin(), epoch.paths.end(), p);
  };
  if (effect == ToolEffect::declared_write) {
    if (!canonicalPath || !inReadSet(*canonicalPath) || readPaths.count(*canonicalPath))
      return std::nullopt;
    return RebaselineGateRefusal{std::string(code::rebaseline_read_required),
                                 "read " + stableJson(Json(*canonicalPath)) +
                                     " again before writing it (workspace epoch " + n + ")"};
  }
  bool unread = epoch.allPaths;
  for (const std::string& p : epoch.paths)
    if (!readPaths.count(p)) unread = true;
  if (!unread) return std::nullopt;
  return RebaselineGateRefusal{
      std::string(code::rebaseline_opaque_write_blocked),
      toolName + " is blocked until the rebaselined files are read again (workspace epoch " + n +
          ")"};
}

}  // namespace crashsim
