// rebaseline.cpp — the durable rebaseline (workspace-continuity-contract.md g.1, g.2): the
// preconditions in order with nothing written on a refusal, then the capture of the current
// instance as `rebased` (the capture's own d.2 steps 2–7, P18–P20), the readSet from `diff-tree`,
// and the one writer's transition (or open) with [P27] inside and [P28] after COMMIT.
#include <algorithm>
#include <mutex>

#include "checkpoint/capture_internal.h"
#include "checkpoint/git_cli.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/workspace_rebaseline.h"
#include "store/workspace_reads.h"

namespace crashsim {

namespace fs = std::filesystem;
using checkpoint_detail::runGit;

namespace {

constexpr size_t kMaxReadSetPaths = 1000;  // g.2 B4

[[noreturn]] void refuseRebaseline(std::string_view code, const std::string& message) {
  throw Error(code, "rebaseline refused: " + message + "; nothing was written");
}

PrefixIdentity identityOfSegment(const Json& segment) {
  const Json& id = segment.at("identity");
  return PrefixIdentity{id.at("sessionId").get<std::string>(),
                        id.at("invocationId").get<std::string>(), id.at("runId").get<std::string>(),
                        id.at("turnId").get<std::string>()};
}

// The workspace's lineage through THE scanner (b.7): nullopt without one; `issue` set when it
// does not scan clean (the planner parks on that; a rebaseline cannot clear it).
struct LineageRead {
  std::optional<detail::ScannedLineage> lineage;
  std::string issue;
};
LineageRead lineageOf(RuntimeStore& store, const std::string& ws) {
  std::lock_guard lk(store_detail::mutexOf(store));
  detail::WorkspaceScan scan =
      store_detail::scanWorkspaceAuthority(store_detail::connectionOf(store), ws);
  LineageRead out;
  if (!scan.issues.empty()) {
    out.issue = scan.issues.front().code;
    return out;
  }
  const detail::ScannedLineage* ln = scan.find(ws);
  if (ln && !ln->epochs.empty()) out.lineage = *ln;
  return out;
}

// g.1 item 3: every operation of every cursor segment completed or definitely not dispatched.
void requireSettled(RuntimeStore& store, const Json& segments) {
  for (const Json& seg : segments) {
    const PrefixIdentity id = identityOfSegment(seg);
    const ImmutablePrefix p =
        readImmutablePrefix(store, id, seg.at("position").at("lastEventSeq").get<int64_t>());
    for (const ToolDecision& d : resolveRecovery(p.events).decisions)
      if (d.status != "completed" && d.status != "definitely_not_dispatched")
        refuseRebaseline(code::rebaseline_operation_unsettled,
                         "operation " + d.operationId.value_or(d.toolCallId) + " of run " +
                             id.runId + " is " + d.status);
  }
}

// g.1 item 6: c.4 eligibility of the current instance, read only — in the drift check's scratch
// (objects outside the store, the carrier's as alternates) when a carrier exists; without one,
// the structural checks 4–5 (nothing may be created before the preconditions hold; the capture
// then runs 6–9 itself).
void requireEligible(const GitRuntime& git, const RebaselineRequest& r) {
  std::optional<WorkspaceCarrier> carrier = WorkspaceCarrier::openExisting(r.storeDir, git);
  if (!carrier) {
    try {
      checkWorkspaceStructure(git, {}, r.instanceRoot);
    } catch (const CarrierError& e) {
      refuseRebaseline(e.code(), e.what());
    }
    return;
  }
  CheckpointFact policyOnly;
  policyOnly.limits = r.limits;
  const DriftCheck d =
      checkWorkspaceDrift(*carrier, r.instanceRoot, r.instanceIdentity, policyOnly);
  const std::string prefix = "capture_ineligible:";
  if (d.detail.rfind(prefix, 0) == 0)
    refuseRebaseline(d.detail.substr(prefix.size()), "the instance " + r.instanceRoot.string() +
                                                         " is not eligible for a checkpoint");
}

// g.2 B4: paths with status A, M or T between Cprev's tree and T; ≤ 1000 → paths, else all.
Json rebaselineReadSet(const WorkspaceCarrier& carrier, const std::optional<CheckpointFact>& cprev,
                       const std::string& treeOid) {
  const Json all{{"kind", "all"}};
  if (!cprev) return all;
  auto r = runGit(
      carrier.git(), carrier.gitHome(),
      checkpoint_detail::carrierCall(carrier, {"diff-tree", "-r", "--no-renames", "--name-status",
                                               "-z", cprev->carrier.treeOid, treeOid}));
  if (!r.ok)
    throw CarrierError(code::checkpoint_capture_failed, "read_set",
                       "diff-tree of the rebaseline: " + r.failure);
  const std::vector<std::string> recs = checkpoint_detail::splitNul(r.out);
  std::vector<std::string> paths;
  for (size_t i = 0; i + 1 < recs.size(); i += 2) {
    const std::string& status = recs[i];
    if (status == "A" || status == "M" || status == "T") paths.push_back(recs[i + 1]);
  }
  std::sort(paths.begin(), paths.end());  // bytewise (std::string compares chars as bytes)
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  if (paths.size() > kMaxReadSetPaths) return all;
  return Json{{"kind", "paths"}, {"paths", paths}};
}

// The newest checkpoint of E whose tree the carrier can read (B4's Cprev).
std::optional<CheckpointFact> newestReadable(const WorkspaceCarrier& carrier,
                                             const detail::ScannedEpoch& e) {
  for (auto it = e.checkpoints.rbegin(); it != e.checkpoints.rend(); ++it) {
    if (runGit(carrier.git(), carrier.gitHome(),
               checkpoint_detail::carrierCall(
                   carrier, {"cat-file", "-e", it->fact.carrier.treeOid + "^{tree}"}))
            .ok)
      return it->fact;
  }
  return std::nullopt;
}

}  // namespace

void checkRebaselinePreconditions(RuntimeStore& store, const GitRuntime& git,
                                  const ContinuationPlan& plan, const RebaselineRequest& r) {
  if (!plan.boundary)
    refuseRebaseline(code::rebaseline_confirmation_required,
                     "session " + plan.sessionId + " has no plan boundary to rebaseline");
  const std::string& sessionId = plan.sessionId;
  const LineageRead read = lineageOf(store, workspaceIdForSession(sessionId));
  const detail::ScannedEpoch* current = read.lineage ? &read.lineage->epochs.back() : nullptr;
  // 2. quiescent.
  {
    std::lock_guard lk(store_detail::mutexOf(store));
    try {
      store_detail::requireQuiescent(store_detail::connectionOf(store), sessionId);
    } catch (const Error& e) {
      refuseRebaseline(e.code(), e.what());
    }
  }
  // 3. every cursor operation settled.
  requireSettled(store, plan.boundary->segments);
  // 4. the plan's reasons are all ones a rebaseline clears.
  static const std::vector<std::string_view> clearable{
      code::no_checkpoint, code::workspace_drifted, code::workspace_ref_missing,
      code::checkpoint_artifact_corrupt, code::checkpoint_policy_mismatch};
  for (const std::string& reason : plan.rejectionReasons)
    if (std::find(clearable.begin(), clearable.end(), reason) == clearable.end())
      refuseRebaseline(code::rebaseline_not_applicable,
                       "the plan parks with " + reason + ", which a rebaseline cannot clear");
  if (!read.issue.empty())  // corrupt since the plan was made (which would have parked on it)
    refuseRebaseline(code::rebaseline_not_applicable,
                     "the workspace facts do not scan clean (" + read.issue + ")");
  // 5. with a lineage, the current instance is E's.
  if (current && current->opened.instance.identity != r.instanceIdentity)
    refuseRebaseline(code::workspace_identity_mismatch,
                     "instance " + r.instanceIdentity + " is not epoch " +
                         std::to_string(current->opened.epoch) + "'s " +
                         current->opened.instance.identity);
  // 6. c.4 eligibility, read only.
  requireEligible(git, r);
}

RebaselineResult rebaselineWorkspace(RuntimeStore& store, const GitRuntime& git,
                                     const ContinuationPlan& plan, const RebaselineRequest& r) {
  const RebaselineConfirmation& confirm = r.confirmation;
  // g.1 item 1: the confirmation names this session's current plan.
  if (!plan.boundary || confirm.sessionId != plan.sessionId ||
      confirm.boundaryManifestDigest != plan.boundary->manifestDigest)
    refuseRebaseline(
        code::rebaseline_confirmation_required,
        "the confirmation {" + confirm.sessionId + ", " + confirm.boundaryManifestDigest +
            "} is not the current plan of session " + plan.sessionId + " (boundary " +
            (plan.boundary ? plan.boundary->manifestDigest : std::string("none")) + ")");
  const std::string& sessionId = plan.sessionId;
  const std::string ws = workspaceIdForSession(sessionId);
  const std::string confirmationId =
      rebaselineConfirmationId(sessionId, confirm.boundaryManifestDigest);
  const LineageRead read = lineageOf(store, ws);
  const detail::ScannedEpoch* current = read.lineage ? &read.lineage->epochs.back() : nullptr;
  // The same confirmation again (a start-up after a kill at P28, or a user confirming twice): the
  // epoch it opened is still current — an exact retry, nothing written (no second epoch).
  if (current && current->opened.reason == "user_rebaseline" &&
      current->opened.confirmationId == confirmationId && !current->checkpoints.empty()) {
    RebaselineResult out;
    out.confirmationId = confirmationId;
    out.epoch = current->opened.epoch;
    out.epochOpenedEventId = current->openedEventId;
    out.checkpoint = current->checkpoints.front().fact;
    out.readSet = current->opened.readSet;
    return out;
  }
  checkRebaselinePreconditions(store, git, plan, r);

  // B1–B3: the capture of the current instance, kind rebased, epoch E+1 (1 without lineage),
  // covering Sn at its full high-water [P18–P20].
  const Json& sn = plan.boundary->segments.back();
  const PrefixIdentity snId = identityOfSegment(sn);
  const ImmutablePrefix prefix =
      readImmutablePrefix(store, snId, sn.at("position").at("lastEventSeq").get<int64_t>());
  if (prefix.segmentJson() != sn)
    refuseRebaseline(code::rebaseline_confirmation_required,
                     "run " + snId.runId + " no longer has the confirmed boundary");
  const int64_t epoch = current ? current->opened.epoch + 1 : 1;
  CaptureRequest req;
  req.instanceRoot = r.instanceRoot;
  req.instanceIdentity = r.instanceIdentity;
  req.canonicalRoot = r.canonicalRoot;
  req.run = snId;
  req.lastEventSeq = prefix.lastEventSeq;
  req.limits = r.limits;
  req.ts = r.ts;
  checkpoint_detail::CapturedArtifact a =
      checkpoint_detail::captureArtifact(store, r.storeDir, git, req, prefix, "rebased", epoch);
  // B4: the readSet.
  const std::optional<CheckpointFact> cprev =
      current ? newestReadable(*a.carrier, *current) : std::nullopt;
  RebaselineResult out;
  out.confirmationId = confirmationId;
  out.epoch = epoch;
  out.readSet = rebaselineReadSet(*a.carrier, cprev, a.fact.carrier.treeOid);
  // B5: the one writer — transition with a lineage, open without [P27 inside].
  CheckpointFact& rp = a.fact;
  if (cprev) rp.derivedFrom = cprev->checkpointId;
  std::vector<WorkspaceFact> facts;
  EpochOpenedFact o;
  o.workspaceId = ws;
  o.sessionId = sessionId;
  o.epoch = epoch;
  o.reason = "user_rebaseline";
  o.confirmationId = out.confirmationId;
  o.readSet = out.readSet;
  if (current) {
    TransitionFact t;
    t.workspaceId = ws;
    t.fromEpoch = current->opened.epoch;
    t.toEpoch = epoch;
    t.reason = "user_rebaseline";
    t.fromInstance = t.toInstance = current->opened.instance.identity;
    t.boundary = sn;
    if (cprev) t.sourceCheckpointId = cprev->checkpointId;
    o.instance = current->opened.instance;
    o.transitionEventId = workspaceFactEventId(t);
    facts.emplace_back(std::move(t));
  } else {
    o.instance = {r.instanceIdentity, r.canonicalRoot, "user"};
  }
  out.epochOpenedEventId = workspaceFactEventId(o);
  facts.emplace_back(std::move(o));
  facts.emplace_back(rp);
  std::vector<RuntimeEvent> events;
  for (const auto& f : facts) events.push_back(workspaceFactEvent(f, r.ts));
  out.created = commitWorkspaceFacts(store, events).created;
  CRASHSIM_FAILPOINT(P28);
  // B6: post-verify (the caller re-plans; E is sealed, its artifacts stay).
  try {
    lightVerifyCheckpoint(*a.carrier, rp);
  } catch (const CarrierError& e) {
    throw CarrierError(e.code(), "post_verify", e.what());
  }
  out.checkpoint = std::move(rp);
  return out;
}

}  // namespace crashsim
