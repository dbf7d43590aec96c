// verdicts/wh2_capture_artifacts.h — WH2 (workspace-continuity-contract.md i.3 H2, d.4 table W,
// a.3.1 artifact before fact): after a kill inside the k-th checkpoint capture, the store holds
// exactly the checkpoints table W says, and each one's artifact is in the carrier.
//
// Expected, from the contract and the scenario alone: the oracle's capture count
// (oracle.h expectedCheckpointsAfterCaptureKill: k-1 at P18–P21 — W1–W5 hold no fact of the
// killed capture —, k at P22 — W6), and for every accepted checkpoint its ref under
// refs/crashsim/checkpoints/ names its commitOid, that commit's tree is its treeOid and every
// object it reaches is present (c.5's light verification, done here with the system git CLI
// reading the carrier, never with the runtime's own code). The same holds after recovery to the
// end (H2: each checkpoint the planner can consult verifies).
//
// Cannot see: an artifact that verifies but holds other bytes than the workspace had (the tree
// is compared with the fact, not with the files: vector 3's unit test pins the tree).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace crashsim::harness::wh2 {

// "" when the store at `store` holds `expectedCheckpoints` checkpoints (any number when nullopt)
// and each one's artifact verifies in <store>/workspace/carrier.git; else the first problem.
std::string captureArtifactProblem(const std::filesystem::path& store,
                                   std::optional<int> expectedCheckpoints);

}  // namespace crashsim::harness::wh2
