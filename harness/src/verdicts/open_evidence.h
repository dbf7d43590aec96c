// verdicts/open_evidence.h — what the open harness's verdicts O1–O5 read of one case of a
// level-0 runtime (docs/open-harness.md, protocol section 6). Every expected value comes from
// the scenario (its calls, its expected workspace) and the runtime's profile (its declared
// stops), never from a run of the runtime.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "crashsim/harness/open_driver.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/open/profile.h"

namespace crashsim::harness {

struct OpenEvidence {
  const Scenario* scenario = nullptr;
  const open::RuntimeProfile* profile = nullptr;
  OpenArm arm;                // the crash point of the case
  OpenProcessResult crashed;  // the armed run
  OpenProcessResult resumed;  // the resume that followed (its last one after a double fault)
  // A double fault: the resume killed at its own point (resumeArm), before `resumed`.
  std::optional<OpenProcessResult> crashedResume;
  OpenArm resumeArm;
  std::map<std::string, int> effectsBeforeResume;  // effects log: callId → executions at the kill
  std::map<std::string, int> effects;              // … at the end of the case
  // The tool server's re-sent log: callId → finished calls sent again and answered without
  // running (crashsim/open/tool_server.h), at the end of the case.
  std::map<std::string, int> resent;
  // Effects the tool server could match to no call of the scenario (callId "unscripted"): tool
  // name → executions, at the end of the case.
  std::map<std::string, int> unscripted;
  // The tool server's answers log: callId → every result text it gave that call.
  std::map<std::string, std::set<std::string>> answers;
  std::map<std::string, std::string> workspace;  // the final workspace (relative path → bytes)
  std::vector<nlohmann::json> modelLog;          // every request of the case, in order
  int requestsBeforeResume = 0;                  // model requests the crashed run sent
  // … before the resume judged last (after a double fault: the crashed resume's too).
  int requestsBeforeFinalResume = 0;
};

// The one-line result of a verdict: "" = pass, else why it failed.
using OpenVerdict = std::string;

}  // namespace crashsim::harness
