// capture.cpp — checkpoint capture (workspace-continuity-contract.md d.2): the artifact (blobs,
// tree, commit, ref) durable and verified before the fact that names it commits.
#include <algorithm>
#include <fstream>

#include "checkpoint/capture_internal.h"
#include "checkpoint/git_cli.h"
#include "checkpoint/refs.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/durable_fs.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "crashsim/workspace_carrier.h"

namespace crashsim {

namespace fs = std::filesystem;
using checkpoint_detail::carrierCall;
using checkpoint_detail::firstLineOf;
using checkpoint_detail::runGit;

namespace checkpoint_detail {

CapturedArtifact captureArtifact(RuntimeStore& store, const fs::path& storeDir,
                                 const GitRuntime& git, const CaptureRequest& req,
                                 const ImmutablePrefix& prefix, const std::string& kind,
                                 int64_t epoch,
                                 const std::function<void(const CheckpointFact&)>& beforeRef) {
  // 2. The carrier.
  CapturedArtifact out;
  out.carrier.emplace(
      WorkspaceCarrier::open(storeDir, git, !listWorkspaceCheckpoints(store).empty()));
  const WorkspaceCarrier& carrier = *out.carrier;
  // 3–5. Eligibility, L, the private index and blobs [P18], the tree.
  // Planted bug: the capture holds the user's .git/index.lock while it reads the instance (as a
  // `git add` into the user's index would), released after the tree is written: a kill inside
  // leaves the user's repository locked (H1).
  const fs::path userLock = req.instanceRoot / ".git" / "index.lock";
  const bool plantLock = planted("capture_locks_user_index");
  if (plantLock) std::ofstream(userLock, std::ios::app).flush();
  const WorkspaceSnapshot snap =
      snapshotInstance(carrier, req.instanceRoot, req.instanceIdentity, req.limits, true);
  if (plantLock) fs::remove(userLock);
  CheckpointFact& c = out.fact;
  const std::string ws = workspaceIdForSession(req.run.sessionId);
  c.kind = kind;
  c.workspaceId = ws;
  c.epoch = epoch;
  c.instanceIdentity = req.instanceIdentity;
  c.coveredBoundary = prefix.segmentJson();
  c.checkpointId = checkpointIdFor(ws, c.epoch, c.kind, c.coveredBoundary);
  c.limits = req.limits;
  c.policyHash = snapshotPolicyHash(req.limits);
  c.fileCount = snap.fileCount;
  c.totalBytes = snap.totalBytes;
  c.carrier = {"", snap.treeOid, checkpointRefName(ws, c.epoch, c.checkpointId), git.version,
               git.binarySha256};
  // 6. The commit [P19].
  auto commit =
      runGit(git, carrier.gitHome(),
             carrierCall(carrier, {"commit-tree", snap.treeOid}, checkpointCommitMessage(c)));
  if (!commit.ok) throw CarrierError(code::checkpoint_capture_failed, "", commit.failure);
  c.carrier.commitOid = firstLineOf(commit.out);
  if (beforeRef) beforeRef(c);
  CRASHSIM_FAILPOINT(P19);
  // 7. The ref, create-only; light-verify; its directories durable [P20].
  createCheckpointRef(carrier, c, code::checkpoint_capture_failed);
  lightVerifyCheckpoint(carrier, c);
  fsyncRefChain(carrier, c.carrier.refName);
  CRASHSIM_FAILPOINT(P20);
  return out;
}

}  // namespace checkpoint_detail

CaptureResult captureCheckpoint(RuntimeStore& store, const fs::path& storeDir,
                                const GitRuntime& git, const CaptureRequest& req) {
  // 1. The boundary: rows 1..p of the run, as their RC e.7 segment.
  const ImmutablePrefix prefix = readImmutablePrefix(store, req.run, req.lastEventSeq);
  if (prefix.lastEventSeq != req.lastEventSeq)
    throw CarrierError(
        code::checkpoint_capture_failed, "boundary",
        "run " + req.run.runId + " holds no row " + std::to_string(req.lastEventSeq));
  const std::string ws = workspaceIdForSession(req.run.sessionId);
  std::optional<WorkspaceEpochRow> current;
  for (auto& e : listWorkspaceEpochs(store))
    if (e.workspaceId == ws) current = std::move(e);
  if (current && current->instanceIdentity != req.instanceIdentity)
    throw CarrierError(code::workspace_identity_mismatch, "",
                       "instance " + req.instanceIdentity + " is not epoch " +
                           std::to_string(current->epoch) + "'s " + current->instanceIdentity);
  std::vector<RuntimeEvent> events;
  std::optional<WorkspaceCommitResult> accepted;
  const auto factsOf = [&](const CheckpointFact& c) {
    std::vector<WorkspaceFact> facts;
    if (!current) {
      EpochOpenedFact o;
      o.workspaceId = ws;
      o.sessionId = req.run.sessionId;
      o.epoch = 1;
      o.instance = {req.instanceIdentity, req.canonicalRoot, "user"};
      o.reason = "first_checkpoint";
      facts.emplace_back(std::move(o));
    }
    facts.emplace_back(c);
    events.clear();
    for (const auto& f : facts) events.push_back(workspaceFactEvent(f, req.ts));
  };
  // 2–7 [P18–P20]. Planted bug: the fact commits before its ref exists (a.3.1, H2).
  checkpoint_detail::CapturedArtifact a = checkpoint_detail::captureArtifact(
      store, storeDir, git, req, prefix, "captured", current ? current->epoch : 1,
      [&](const CheckpointFact& c) {
        if (!planted("capture_fact_before_ref")) return;
        factsOf(c);
        accepted = commitWorkspaceFacts(store, events);
      });
  CheckpointFact& c = a.fact;
  // 8. The fact ([P21] inside the writer's transaction) [P22].
  if (!accepted) {
    factsOf(c);
    accepted = commitWorkspaceFacts(store, events);
  }
  CRASHSIM_FAILPOINT(P22);
  // 9. Post-verify (its failure ends the run under every requirement, d.3: detail post_verify).
  try {
    lightVerifyCheckpoint(*a.carrier, c);
  } catch (const CarrierError& e) {
    throw CarrierError(e.code(), "post_verify", e.what());
  }
  return CaptureResult{std::move(c), accepted->created};
}

}  // namespace crashsim
