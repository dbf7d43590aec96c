// verdicts/wh7_restore.h — WH7 (workspace-continuity-contract.md i.3 H7, f.2, table R, f.3): an
// isolated restore's durable state after its kill and after the recovery that continues.
//
// Expected values come from the contract and the scenario: C is epoch 1's newest checkpoint (the
// oracle's `checkpointsBefore` of them, table W6); b.3 names the instance
// (<store>/workspace/instances/<ws32>-e2), its lock reason ("crashsim checkpoint <C> epoch 2") and
// R (checkpointId(workspaceId, 2, restored, the source run's segment at its full high-water),
// its ref); table R gives what each kill leaves:
//   P23: the instance registered detached at C's commit and locked with the reason; no marker,
//        no ref R, no transition;
//   P24, P25: + the marker and ref R at C's commit; no transition;
//   P26: + the transition E1→E2 (isolated_restore, from the source run's instance to the
//        marker's, source C), epoch 2 `restored` at the instance, R `restored` from C with C's
//        commit and tree.
// After recovery: the P26 state (whatever the kill), residue quarantined (no unnamed
// instances/ entry, no intent left), C's ref untouched, the instance's tracked files as the
// scenario's expect.files (C's tree: the last capture follows the last effectful call), and one
// continuation run that completed bound to (epoch 2, R) with the restored instance's identity
// (its tools run there). The carrier is read with the system git CLI.
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/harness/crash_point.h"
#include "crashsim/scenario.h"

namespace crashsim::harness::wh7 {

// "" when the store after a kill at `fp` (P23–P26) of the restore holds table R's row; else the
// first problem, one line. `checkpointsBefore`: epoch 1's accepted checkpoints (oracle).
std::string restoreKillProblem(const std::filesystem::path& store, CrashPoint fp,
                               int checkpointsBefore);

// "" when the recovered store holds the restored epoch and the continuation bound to it (above).
std::string restoredContinuationProblem(const std::filesystem::path& store,
                                        const crashsim::Scenario& scenario, int checkpointsBefore);

}  // namespace crashsim::harness::wh7
