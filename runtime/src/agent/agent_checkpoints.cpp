// Workspace checkpoints of a live run (crashsim/agent.h enableCheckpoints;
// workspace-continuity-contract.md d.1, d.3). The capture itself is d.2's
// (runtime/src/checkpoint/capture.cpp); this file decides when, and what a failure does.
#include <iostream>

#include "crashsim/agent.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/workspace_carrier.h"

namespace crashsim {

void AgentRunner::enableCheckpoints(CheckpointOptions options) {
  if (options.requirement == "disabled") {
    checkpoints_.reset();
    return;
  }
  if (options.requirement != "optional_legacy" && options.requirement != "required")
    throw Error(code::agent_usage, "checkpoint requirement " + options.requirement +
                                       " is not disabled, optional_legacy or required");
  checkpoints_ = std::move(options);
}

void AgentRunner::captureAt(const RunHeader& header, int64_t p) {
  if (!checkpoints_) return;
  const auto fatal = [](const std::string& c, const std::string& detail) {
    // d.3: under every requirement a post-verify failure, or a conflict the writer reports (a
    // bug or damage), ends the run.
    return detail == "post_verify" || c == code::workspace_fact_conflict ||
           c.rfind("workspace_epoch_", 0) == 0;
  };
  std::string failCode, detail, message;
  try {
    if (!git_) git_ = std::make_shared<const GitRuntime>(resolveGitRuntime());
    CaptureRequest req;
    req.instanceRoot = tools_.workspace().root;
    req.instanceIdentity = tools_.workspace().identity;
    req.canonicalRoot = tools_.workspace().root.string();
    req.run = PrefixIdentity{header.sessionId, header.invocationId, header.runId, header.turnId};
    req.lastEventSeq = p;
    req.ts = clock_.now();
    captureCheckpoint(store_, checkpoints_->storeDir, *git_, req);
    return;
  } catch (const CarrierError& e) {
    failCode = e.code();
    detail = e.detail();
    message = e.what();
  } catch (const Error& e) {
    failCode = e.code();
    message = e.what();
  }
  if (checkpoints_->requirement == "required" || fatal(failCode, detail))
    throw Error(failCode, "workspace checkpoint at row " + std::to_string(p) + ": " + message);
  // optional_legacy: the boundary stays uncovered; logged, the run goes on.
  std::cerr << Json{{"workspaceCapture", Json{{"code", failCode},
                                              {"detail", detail},
                                              {"runId", header.runId},
                                              {"lastEventSeq", p},
                                              {"message", message}}}}
                   .dump()
            << std::endl;
}

}  // namespace crashsim
