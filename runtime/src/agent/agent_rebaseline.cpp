// agent_rebaseline.cpp — the run loop's part of a durable rebaseline
// (workspace-continuity-contract.md g.3 the replay notice, g.4 the read-before-write gate); the
// rules themselves are crashsim/workspace_rebaseline.h's.
#include "crashsim/agent.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "crashsim/workspace_rebaseline.h"

namespace crashsim {

void AgentRunner::commitRebaselineNoticeIfDue(const RunHeader& header,
                                              std::vector<RuntimeEvent>& history) {
  if (!checkpoints_) return;
  const std::optional<RebasedEpoch> epoch = rebasedEpochOf(store_, header);
  if (!epoch) return;
  // Planted bug: a rebaseline's continuation skips its notice (H4).
  if (planted("rebaseline_skips_notice")) return;
  // Planted bug: the notice is committed again by every run of the epoch (H4: one per epoch).
  if (!planted("rebaseline_repeats_notice") &&
      rebaselineNoticeCommitted(store_, header.sessionId, epoch->openedEventId))
    return;
  const RuntimeEvent notice = rebaselineNoticeEvent(
      PrefixIdentity{header.sessionId, header.invocationId, header.runId, header.turnId}, *epoch,
      clock_.now());
  accepted([&] { return store_.append(notice); });
  CRASHSIM_FAILPOINT(P29);
  history.push_back(notice);
}

std::optional<Json> AgentRunner::rebaselineRefusal(const RunHeader& header,
                                                   const ToolCallRequest& call) {
  if (!checkpoints_) return std::nullopt;
  const std::optional<RebasedEpoch> epoch = rebasedEpochOf(store_, header);
  if (!epoch) return std::nullopt;
  if (planted("rebaseline_gate_open")) return std::nullopt;  // planted bug: no gate (H8)
  std::optional<std::string> path;
  if (call.args.is_object() && call.args.contains("path") && call.args["path"].is_string())
    path = rebaselineCanonicalPath(tools_.workspace().root, call.args["path"].get<std::string>());
  const auto refusal = rebaselineGate(*epoch, rebaselineReadPaths(store_, header.sessionId, *epoch),
                                      call.toolName, path);
  if (!refusal) return std::nullopt;
  return refusal->result();
}

}  // namespace crashsim
