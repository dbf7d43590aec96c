// WH4: a confirmed rebaseline's durable state and its one replay notice (wh4_rebaseline_notice.h).
#include "verdicts/wh4_rebaseline_notice.h"

#include <fmt/format.h>

#include "crashsim/agent.h"
#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"
#include "verdicts/system_git.h"

namespace crashsim::harness::wh4 {
namespace fs = std::filesystem;

namespace {

using verdict_detail::carrierGit;

struct Notice {
  std::string runId, eventId, text, forEpochEvent;
  int64_t eventSeq = 0;
};

// What the store holds for the scenario's session.
struct Seen {
  std::vector<WorkspaceEpochRow> epochs;
  std::vector<WorkspaceTransitionRow> transitions;
  std::vector<RunHeader> runs;
  std::map<std::string, std::vector<StoredEvent>> events;  // runId → its events
  std::vector<Notice> notices;
};

Seen read(const fs::path& store, const crashsim::Scenario& scenario) {
  Seen s;
  StoreOptions ro;
  ro.readOnly = true;
  auto st = RuntimeStore::open(store, ro);
  s.epochs = listWorkspaceEpochs(*st);
  s.transitions = listWorkspaceTransitions(*st);
  const std::string session = scenarioSessionId(scenario);
  s.runs = st->listRuns(session);
  for (const RunHeader& h : s.runs) {
    auto& evs = s.events[h.runId] = st->readRunEvents(h.sessionId, h.runId);
    for (const StoredEvent& se : evs) {
      const Json& j = se.event.json;
      if (!j.contains("actions") || !j["actions"].contains("stateDelta") ||
          !j["actions"]["stateDelta"].contains("workspaceRebaselineNotice"))
        continue;
      const Json& forEpoch = j["actions"]["stateDelta"]["workspaceRebaselineNotice"];
      s.notices.push_back(
          {h.runId, se.event.id, j.value("content", Json::object()).value("text", ""),
           forEpoch.is_string() ? forEpoch.get<std::string>() : forEpoch.dump(), se.eventSeq});
    }
  }
  return s;
}

int64_t boundEpoch(const RunHeader& h) {
  return h.workspaceBoundary ? h.workspaceBoundary->value("epoch", int64_t{0}) : 0;
}

bool holdsProviderStep(const std::vector<StoredEvent>& events) {
  for (const StoredEvent& se : events)
    if (se.event.json.value("role", "") == "model") return true;
  return false;
}

// Epoch 2 as g.2 B5 opens it, and its one transition; "" when they are.
std::string epochTwoProblem(const Seen& s, const PredictedRebaseline& at) {
  if (s.epochs.size() != 2) return fmt::format("{} epochs, want 2", s.epochs.size());
  const WorkspaceEpochRow& e = s.epochs[1];
  if (e.epoch != 2 || e.openedReason != "user_rebaseline")
    return fmt::format("epoch {} opened by {}, want epoch 2 by user_rebaseline", e.epoch,
                       e.openedReason);
  if (!s.epochs[0].sealedByEventId) return "epoch 1 is not sealed";
  const Json want{{"kind", "paths"}, {"paths", at.readSet}};
  if (Json::parse(e.readSetJson) != want)
    return "epoch 2's readSet is " + e.readSetJson + ", want " + want.dump();
  if (s.transitions.size() != 1 || s.transitions[0].fromEpoch != 1 ||
      s.transitions[0].toEpoch != 2 || s.transitions[0].reason != "user_rebaseline")
    return fmt::format("{} transitions, want one 1→2 user_rebaseline", s.transitions.size());
  return "";
}

// The notice `n` as g.3 spells it for epoch `e`.
std::string noticeShapeProblem(const Notice& n, const WorkspaceEpochRow& e,
                               const PredictedRebaseline& at) {
  if (n.forEpochEvent != e.openedEventId)
    return "a notice names " + n.forEpochEvent + ", not epoch 2's " + e.openedEventId;
  if (n.eventId != rebaselineNoticeId(e.openedEventId, n.runId))
    return "notice id " + n.eventId + " is not g.3's for run " + n.runId;
  if (n.text != expectedNoticeText(e.epoch, at.readSet))
    return "notice text differs: " + Json(n.text).dump();
  if (n.eventSeq != 2)
    return fmt::format("the notice is event #{} of its run, want #2", n.eventSeq);
  return "";
}

std::string checkpointRefs(const fs::path& store) {
  const auto [ok, out] =
      carrierGit(store / "workspace" / "carrier.git",
                 "for-each-ref --format=%\\(refname\\) refs/crashsim/checkpoints/");
  return ok ? out : "<git for-each-ref failed>";
}

}  // namespace

std::string expectedNoticeText(int64_t epoch, const std::vector<std::string>& readSet) {
  std::string files;
  for (const std::string& p : readSet) files += (files.empty() ? "" : ", ") + Json(p).dump();
  return fmt::format(
      "Workspace rebaselined to epoch {}.\n"
      "The files were accepted as they are now and may differ from what earlier messages show.\n"
      "Read each file listed below again before you write or edit it; shell commands stay blocked "
      "until all of them have been read.\n"
      "Files: {}",
      epoch, files.empty() ? "none" : files);
}

std::string rebaselineKillProblem(const fs::path& store, const crashsim::Scenario& scenario,
                                  CrashPoint fp, const PredictedRebaseline& at) {
  const RebaselineKillState x = expectedRebaselineKill(fp);
  try {
    const Seen s = read(store, scenario);
    // B3: the baseline's ref and the rebaseline's (an orphan at P27, R′'s after the COMMIT).
    const std::string refs = checkpointRefs(store);
    const size_t refCount = refs.empty() ? 0 : std::count(refs.begin(), refs.end(), '\n') + 1;
    if (refCount != static_cast<size_t>(at.checkpointsBefore) + 1)
      return fmt::format("{} checkpoint refs in the carrier, want {}: {}", refCount,
                         at.checkpointsBefore + 1, refs);
    if (x.epochs == 1) {
      if (s.epochs.size() != 1 || !s.transitions.empty())
        return fmt::format(
            "{} epochs and {} transitions after the rolled-back transition, want "
            "1 and 0",
            s.epochs.size(), s.transitions.size());
    } else if (auto bad = epochTwoProblem(s, at); !bad.empty()) {
      return bad;
    }
    if (s.runs.size() != static_cast<size_t>(x.runs))
      return fmt::format("{} runs in the session, want {}", s.runs.size(), x.runs);
    if (!x.noticeInContinuation) {
      if (!s.notices.empty()) return fmt::format("{} notices, want none yet", s.notices.size());
      return "";
    }
    const RunHeader* cont = nullptr;
    for (const RunHeader& h : s.runs)
      if (h.continuationSource) cont = &h;
    if (!cont || boundEpoch(*cont) != 2)
      return "no continuation bound to epoch 2 after the kill at " + fp.str();
    if (cont->status == "completed" || cont->status == "failed" || cont->status == "cancelled")
      return "the killed continuation is " + cont->status;
    const auto& evs = s.events.at(cont->runId);
    if (holdsProviderStep(evs)) return "the killed continuation holds a provider step";
    if (evs.size() != 2)
      return fmt::format("the killed continuation holds {} events, want 2", evs.size());
    if (s.notices.size() != 1 || s.notices[0].runId != cont->runId)
      return fmt::format("{} notices, want one in the killed continuation", s.notices.size());
    return noticeShapeProblem(s.notices[0], s.epochs[1], at);
  } catch (const std::exception& e) {
    return std::string("the store cannot be read: ") + e.what();
  }
}

std::string noticeProblem(const fs::path& store, const crashsim::Scenario& scenario,
                          const PredictedRebaseline& at) {
  try {
    const Seen s = read(store, scenario);
    if (auto bad = epochTwoProblem(s, at); !bad.empty()) return bad;
    const WorkspaceEpochRow& e = s.epochs[1];
    size_t count = 0;
    for (const Notice& n : s.notices) {
      if (auto bad = noticeShapeProblem(n, e, at); !bad.empty()) return bad;
      ++count;
      for (const RunHeader& h : s.runs)
        if (h.runId == n.runId && boundEpoch(h) != 2)
          return "the notice is in run " + h.runId + ", not bound to epoch 2";
    }
    if (count != 1) return fmt::format("epoch 2 has {} notices, want 1", count);
    if (s.runs.empty() || !s.runs.back().continuationSource || boundEpoch(s.runs.back()) != 2 ||
        s.runs.back().status != "completed")
      return "the last run is not a completed continuation bound to epoch 2";
    return "";
  } catch (const std::exception& e) {
    return std::string("the store cannot be read: ") + e.what();
  }
}

}  // namespace crashsim::harness::wh4
