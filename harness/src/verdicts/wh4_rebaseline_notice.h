// verdicts/wh4_rebaseline_notice.h — WH4 (workspace-continuity-contract.md i.3 H4, g.2, g.3, table
// B of g.5, i.1): a confirmed rebaseline's durable state after its kill, and its replay notice.
//
// Expected values come from the contract and the scenario (oracle.h predictedRebaseline,
// expectedRebaselineKill), for the scenario's one session:
//   after the kill at P27 (B4): epoch 1 only, no transition, the source run only (no provider
//     step in a process killed before the COMMIT), no notice; the carrier holds the baseline's
//     ref and the rebaseline's orphan ref (B3: refs/crashsim/checkpoints/ has two);
//   at P28 (B5): + epoch 2 opened by user_rebaseline with readSet {kind:paths, paths:<readSet>},
//     one transition 1→2 `user_rebaseline`; still no continuation run, no notice;
//   at P29 (B6): + one continuation bound to epoch 2, not terminal, holding exactly
//     continuation-start and the notice (event #2) — no provider step;
// after the recovery to the end: epochs 1 and 2 (one transition), exactly one notice for epoch 2
// in the session — g.3's text for the readSet, id workspace-notice-… (b.3, g.3) of the run that
// holds it, that run's event #2 and bound to epoch 2 — and the last run a continuation bound to
// epoch 2 that completed. The carrier is read with the system git CLI.
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/harness/crash_point.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/scenario.h"

namespace crashsim::harness::wh4 {

// g.3's notice text for epoch `epoch` and a `paths` readSet (the contract's four lines).
std::string expectedNoticeText(int64_t epoch, const std::vector<std::string>& readSet);

// "" when the store after a kill at `fp` (P27–P29) of the confirmed recovery holds table B's row
// (above); else the first problem, one line.
std::string rebaselineKillProblem(const std::filesystem::path& store,
                                  const crashsim::Scenario& scenario, CrashPoint fp,
                                  const PredictedRebaseline& at);

// "" when the recovered store holds epoch 2 and its one notice (above).
std::string noticeProblem(const std::filesystem::path& store, const crashsim::Scenario& scenario,
                          const PredictedRebaseline& at);

}  // namespace crashsim::harness::wh4
