// resume_plan.cpp — the Phase 0 ResumePlan (spec d). Pure: reads the events and the
// resolver's decisions, never mutates anything; equal inputs give equal plans.
#include "crashsim/resume_plan.h"

#include "crashsim/codes.h"
#include "crashsim/plant.h"
#include "ledger/flat_index.h"

namespace crashsim {

const std::string_view kResumeDirective =
    "A tool call was interrupted before its committed result was recorded, so its side effects "
    "may or may not have happened. Do not retry the tool call immediately. First inspect the "
    "current state with read-only tools and only then decide the next step.";

namespace {

// d.2: a plan operation's args are its call event's content.args (null when absent).
Json argsOfCall(const RuntimeEvent& call) {
  auto content = call.json.find("content");
  if (content == call.json.end() || !content->is_object()) return nullptr;
  auto args = content->find("args");
  return args == content->end() ? Json() : *args;
}

std::string_view planStatus(const ToolDecision& d) {
  if (d.status == code::completed) {
    return d.responseIsError.value_or(false) ? code::failed : code::succeeded;
  }
  // Planted bug: the resolver's status passes through unmapped (V5 maps the oracle's).
  if (d.status == code::definitely_not_dispatched && !planted("plan_skips_status_mapping"))
    return code::not_dispatched;
  return d.status;  // indeterminate | parked | corruption
}

bool isDanglingDiagnostic(std::string_view c) {
  return c == code::pending_tool_result || c == code::tool_not_dispatched ||
         c == code::tool_recovery_parked || c == code::tool_recovery_corruption ||
         c == code::tool_ledger_corruption || c == code::duplicate_event_id ||
         c == code::semantic_lane_conflict || c == code::protocol_marker_invalid ||
         c == code::unmatched_tool_result || c == code::tool_name_mismatch;
}

void addDiagnostic(std::vector<PlanDiagnostic>& out, std::string_view c,
                   std::optional<Json> detail = std::nullopt) {
  out.push_back(PlanDiagnostic{std::string(c), std::move(detail)});
}

constexpr uint32_t kNoIndex = detail::FlatIndex::kEmpty;

// Call-id groups shared by the unmatched/name-mismatch diagnostics and the replay pairing
// (both key by the provider call id only). A group's key points at the first event that
// carried the call id, so the events pass compares against memory it has just read.
struct ResumeCallGroup {
  std::string_view callId;
  uint32_t latestCall = kNoIndex;     // index of the latest non-partial call event with this id
  uint32_t lastOperation = kNoIndex;  // last projected operation with this call id
  bool paired = false;  // d.8: a response named the tool of the id's latest call before it
};
class ResumeCallGroups {
 public:
  explicit ResumeCallGroups(size_t capacity) : byCallId_(capacity) { groups_.reserve(capacity); }
  // The group of callId, created (unpaired, without call or operation) on first sight.
  uint32_t groupOf(std::string_view callId) {
    const uint64_t h = detail::hashView(callId);
    uint32_t g = byCallId_.find(h, [&](uint32_t v) {
      return groups_[v].callId.data() == callId.data() || groups_[v].callId == callId;
    });
    if (g == kNoIndex) {
      g = static_cast<uint32_t>(groups_.size());
      groups_.push_back(ResumeCallGroup{callId, kNoIndex, kNoIndex, false});
      byCallId_.insert(h, g, [&](uint32_t v) { return detail::hashView(groups_[v].callId); });
    }
    return g;
  }
  ResumeCallGroup& operator[](uint32_t g) { return groups_[g]; }

 private:
  std::vector<ResumeCallGroup> groups_;
  detail::FlatIndex byCallId_;
};

// d.2 operations: decisions with a call that is not hidden, in decision order. Returns true
// when a hidden call is indeterminate.
bool projectOperations(ResumePlan& plan, std::span<const RuntimeEvent> events,
                       ResumeCallGroups& groups) {
  const RecoveryResolution& resolution = plan.resolution;
  plan.operations.reserve(resolution.decisions.size());
  bool hiddenIndeterminate = false;
  const std::vector<ToolDecision>& decisions = resolution.decisions;
  for (size_t k = 0; k < decisions.size(); ++k) {
    const ToolDecision& d = decisions[k];
    if (!d.callIndex) continue;
    const RuntimeEvent& call = events[*d.callIndex];
    if (call.hidden) {
      hiddenIndeterminate = hiddenIndeterminate || d.status == code::indeterminate;
      continue;
    }
    PlanOperation& op = plan.operations.emplace_back();
    op.toolCallId = d.toolCallId;
    op.toolName = call.toolName;
    op.args = argsOfCall(call);
    op.status = planStatus(d);
    op.callRuntimeEventId = *d.callRuntimeEventId;
    op.responseRuntimeEventId = d.responseRuntimeEventId;
    op.responseIsError = d.responseIsError;
    groups[groups.groupOf(call.callId)].lastOperation =
        static_cast<uint32_t>(plan.operations.size() - 1);
  }
  return hiddenIndeterminate;
}

// d.4 diagnostics, in the contract's order, up to the events pass: the offset, each visible
// operation's status, the resolver's issues, the corrupt decisions without a call, and the
// hidden indeterminate calls. Returns true when a visible operation is indeterminate.
bool resolutionDiagnostics(ResumePlan& plan, std::span<const RuntimeEvent> events,
                           std::optional<uint64_t> expectedRuntimeEventHighWater,
                           bool hiddenIndeterminate) {
  const RecoveryResolution& resolution = plan.resolution;
  std::vector<PlanDiagnostic>& diagnostics = plan.diagnostics;
  if (expectedRuntimeEventHighWater && *expectedRuntimeEventHighWater != events.size()) {
    addDiagnostic(diagnostics, code::runtime_offset_mismatch,
                  Json{{"expectedRuntimeEventHighWater", *expectedRuntimeEventHighWater},
                       {"actualRuntimeEventHighWater", static_cast<uint64_t>(events.size())}});
  }
  bool visibleIndeterminate = false;
  for (const PlanOperation& op : plan.operations) {
    if (op.status == code::indeterminate) {
      visibleIndeterminate = true;
      addDiagnostic(diagnostics, code::pending_tool_result);
    } else if (op.status == code::not_dispatched) {
      addDiagnostic(diagnostics, code::tool_not_dispatched);
    } else if (op.status == code::corruption) {
      addDiagnostic(diagnostics, code::tool_recovery_corruption);
    } else if (op.status == code::parked) {
      addDiagnostic(diagnostics, code::tool_recovery_parked);
    }
  }
  for (const ResolverIssue& issue : resolution.issues) {
    if (issue.code == code::protocol_marker_invalid || issue.code == code::duplicate_event_id ||
        issue.code == code::semantic_lane_conflict) {
      addDiagnostic(diagnostics, issue.code);
    } else {
      addDiagnostic(diagnostics, code::tool_ledger_corruption, Json{{"issueCode", issue.code}});
    }
  }
  for (const ToolDecision& d : resolution.decisions) {
    if (d.status == code::corruption && !d.callRuntimeEventId &&
        d.reason != code::orphan_response) {
      addDiagnostic(diagnostics, code::tool_recovery_corruption);
    }
  }
  if (hiddenIndeterminate) {
    for (const ToolDecision& d : resolution.decisions) {
      if (d.status == code::indeterminate && d.callIndex && events[*d.callIndex].hidden) {
        addDiagnostic(diagnostics, code::pending_tool_result);
      }
    }
  }
  return visibleIndeterminate;
}

// The replay candidates of the events pass (every visible non-partial event) and the call-id
// group of each tool event (kNoIndex for the others).
struct ReplayCandidates {
  std::vector<uint32_t> candidates;
  std::vector<uint32_t> groupOfEvent;
};

// One pass over the events: responses without a projected operation (d.4, last two
// diagnostics) and call-id pairing for the provider replay (d.8). Pairing is per call id, not
// per event: an id is paired once some non-partial response names the same tool as the
// LATEST earlier non-partial call of that id, and then every visible non-partial call and
// response of the id is replayed (so no call the resolver bound a response to is dropped,
// and no response loses its call: j.2). Replay candidates are collected in the same pass and
// calls/responses filtered by their id's pairing afterwards.
ReplayCandidates pairToolEvents(ResumePlan& plan, std::span<const RuntimeEvent> events,
                                ResumeCallGroups& groups) {
  std::vector<PlanDiagnostic>& diagnostics = plan.diagnostics;
  ReplayCandidates rc;
  std::vector<uint32_t>& candidates = rc.candidates;
  std::vector<uint32_t>& groupOfEvent = rc.groupOfEvent;
  groupOfEvent.assign(events.size(), kNoIndex);  // tool events only
  candidates.reserve(events.size());
  const size_t n = events.size();
  for (size_t i = 0; i < n; ++i) {
    const RuntimeEvent& e = events[i];
    if (e.partial) continue;
    const bool isCall = e.contentKind == ContentKind::function_call;
    const bool isResponse = e.contentKind == ContentKind::function_response;
    if (!e.hidden) candidates.push_back(static_cast<uint32_t>(i));
    if (!isCall && !isResponse) continue;
    groupOfEvent[i] = groups.groupOf(e.callId);
    ResumeCallGroup& group = groups[groupOfEvent[i]];
    if (isCall) {
      group.latestCall = static_cast<uint32_t>(i);
      continue;
    }
    if (group.latestCall != kNoIndex && events[group.latestCall].toolName == e.toolName) {
      group.paired = true;
    }
    if (e.hidden) continue;
    if (group.lastOperation == kNoIndex) {
      addDiagnostic(diagnostics, code::unmatched_tool_result);
    } else if (const PlanOperation& op = plan.operations[group.lastOperation];
               op.toolName != e.toolName) {
      addDiagnostic(diagnostics, code::tool_name_mismatch,
                    Json{{"callToolName", op.toolName}, {"responseToolName", e.toolName}});
    }
  }
  return rc;
}

// d.5 rejection reasons (set, first-appearance order).
void rejectionReasons(ResumePlan& plan) {
  for (const PlanDiagnostic& diagnostic : plan.diagnostics) {
    std::string_view reason;
    if (diagnostic.code == code::runtime_offset_mismatch) {
      reason = code::runtime_offset_mismatch;
    } else if (isDanglingDiagnostic(diagnostic.code)) {
      reason = code::dangling_tool_state;
    } else {
      continue;
    }
    bool present = false;
    for (const std::string& r : plan.rejectionReasons) present = present || r == reason;
    if (!present) plan.rejectionReasons.emplace_back(reason);
  }
}

}  // namespace

ResumePlan buildResumePlan(std::span<const RuntimeEvent> events,
                           std::optional<uint64_t> expectedRuntimeEventHighWater) {
  ResumePlan plan;
  plan.resolution = resolveRecovery(events);
  const RecoveryResolution& resolution = plan.resolution;
  plan.sourceRuntimeEventHighWater = events.size();
  ResumeCallGroups groups(resolution.decisions.size() + 1);
  // d.2 operations.
  const bool hiddenIndeterminate = projectOperations(plan, events, groups);
  // d.4 diagnostics, in the contract's order.
  const bool visibleIndeterminate =
      resolutionDiagnostics(plan, events, expectedRuntimeEventHighWater, hiddenIndeterminate);
  const ReplayCandidates rc = pairToolEvents(plan, events, groups);
  // d.5 rejection reasons.
  rejectionReasons(plan);
  // d.6, d.7.
  plan.requiresVerification = visibleIndeterminate || hiddenIndeterminate;
  if (plan.requiresVerification) plan.directive = std::string(kResumeDirective);
  plan.disposition =
      plan.rejectionReasons.empty() && !plan.requiresVerification && !resolution.hasCorruption
          ? code::safe_replay
          : code::blocked;
  // d.8 provider replay events: keep content-less and other content events; keep calls and
  // responses only when their call id is paired.
  plan.replayEventIndexes.reserve(rc.candidates.size());
  for (const uint32_t index : rc.candidates) {
    const uint32_t g = rc.groupOfEvent[index];
    if (g == kNoIndex || groups[g].paired) plan.replayEventIndexes.push_back(index);
  }
  return plan;
}

Json toJson(const ResumePlan& plan, std::span<const RuntimeEvent> events) {
  Json j = Json::object();
  j["disposition"] = plan.disposition;
  Json operations = Json::array();
  for (const PlanOperation& op : plan.operations) {
    Json o = Json::object();
    o["toolCallId"] = op.toolCallId;
    o["toolName"] = op.toolName;
    o["status"] = op.status;
    o["callRuntimeEventId"] = op.callRuntimeEventId;
    if (op.responseRuntimeEventId) o["responseRuntimeEventId"] = *op.responseRuntimeEventId;
    if (op.responseIsError) o["responseIsError"] = *op.responseIsError;
    operations.push_back(std::move(o));
  }
  j["operations"] = std::move(operations);
  Json diagnostics = Json::array();
  for (const PlanDiagnostic& d : plan.diagnostics) {
    Json o = Json::object();
    o["code"] = d.code;
    if (d.detail) o["detail"] = *d.detail;
    diagnostics.push_back(std::move(o));
  }
  j["diagnostics"] = std::move(diagnostics);
  j["rejectionReasons"] = plan.rejectionReasons;
  j["requiresVerification"] = plan.requiresVerification;
  j["directive"] = plan.directive ? Json(*plan.directive) : Json();
  j["sourceRuntimeEventHighWater"] = plan.sourceRuntimeEventHighWater;
  Json replay = Json::array();
  for (size_t i : plan.replayEventIndexes) replay.push_back(events[i].id);
  j["replayRuntimeEventIds"] = std::move(replay);
  return j;
}

}  // namespace crashsim
