// The oracle's placement of the durable rebaseline P27–P29 (workspace-continuity-contract.md g,
// i.2; oracle.h predictedRebaseline, expectedRebaselineKill): from the scenario and the contract
// alone.
#include <algorithm>
#include <set>

#include "crashsim/harness/oracle.h"

namespace crashsim::harness {

using namespace points;

std::optional<PredictedRebaseline> predictedRebaseline(const Scenario& s) {
  const auto& spec = s.spec;
  const auto& policy = spec.workspacePolicy;
  if (policy.checkpointRequirement == "disabled" || policy.driftAction != "offer_rebaseline" ||
      !spec.afterCrash || !spec.git)
    return std::nullopt;
  PredictedRebaseline out;
  for (const std::string& name : spec.afterCrash->failpoints)
    if (auto fp = CrashPoint::parse(name); fp && fp->group() == PointGroup::workspaceRebaseline)
      out.failpoints.push_back(*fp);
  if (out.failpoints.empty()) return std::nullopt;
  // B4: `M` against the baseline's tree = a tracked seed file written with other bytes. Any other
  // mutation (a delete, an added or ignored path, a symlink) is not modelled here.
  const auto& tracked = spec.git->tracked;
  std::set<std::string> readSet;
  for (const auto& m : spec.afterCrash->mutations) {
    const auto seeded = spec.files.find(m.path);
    if (m.op != "write" || seeded == spec.files.end() ||
        std::find(tracked.begin(), tracked.end(), m.path) == tracked.end())
      return std::nullopt;
    if (seeded->second != m.content) readSet.insert(m.path);
  }
  if (readSet.empty()) return std::nullopt;
  out.readSet.assign(readSet.begin(), readSet.end());  // std::set orders bytewise
  // The armed call: the first Write/Edit; every call before it a Read (so the baseline is the
  // only checkpoint, d.1, and its suffix is neutral, e.1). Every call reaches P1: call i is P1#i+1.
  std::optional<size_t> armed;
  for (size_t i = 0; i < s.calls.size() && !armed; ++i) {
    if (s.calls[i].name == "Read") continue;
    if (!s.calls[i].writesFile()) return std::nullopt;
    armed = i;
  }
  if (!armed) return std::nullopt;
  out.ledgerHit = static_cast<int>(*armed) + 1;
  // g.4: the continuation issues the armed call and every later one; a Write/Edit of a readSet
  // path is gated unless a Read of that path precedes it in the scenario.
  std::set<std::string> read;
  size_t index = 0;
  for (const auto& step : spec.model)
    for (const auto& call : step.calls) {
      const size_t i = index++;
      if (i < *armed || !call.args.contains("path") || !call.args["path"].is_string()) continue;
      const std::string path = call.args["path"].get<std::string>();
      if (call.name == "Read") read.insert(path);
      if ((call.name == "Write" || call.name == "Edit") && readSet.count(path) && !read.count(path))
        out.gatedCalls.push_back(call.id);
    }
  return out;
}

RebaselineKillState expectedRebaselineKill(CrashPoint fp) {
  RebaselineKillState x;         // P27 (B4): rolled back — epoch 1 current, parks as before
  if (fp == P28 || fp == P29) {  // B5: epoch 2 `rebased` committed; no claim yet
    x.epochs = 2;
    x.transition = true;
    x.confirmAgain = false;
  }
  if (fp == P29) {  // B6: claim + start + notice, no terminal, no provider step
    x.runs = 2;
    x.noticeInContinuation = true;
  }
  return x;
}

}  // namespace crashsim::harness
