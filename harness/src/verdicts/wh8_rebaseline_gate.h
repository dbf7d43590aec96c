// verdicts/wh8_rebaseline_gate.h — WH8 (workspace-continuity-contract.md i.3 H8, g.4): in an
// epoch opened by a confirmed rebaseline, a gated Write/Edit is never dispatched nor executed, and
// is answered with g.4's refusal.
//
// Expected values come from the contract and the scenario (oracle.h predictedRebaseline): each
// call of `gatedCalls` (a Write/Edit of a readSet path no Read of the scenario precedes) is held,
// with its response, by a run bound to epoch 2, and in every run bound to epoch 2 it has no
// toolDispatch event and its response is the pre-T1 answer {error:{code:rebaseline_read_required,
// message:"read <p> again before writing it (workspace epoch 2)"}} with isError true. H8 says
// "never dispatched nor executed"; the exact answer is required too, so that a gate left open
// whose call preflight happens to refuse (a stale old_string) is still seen (phase4.md).
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/harness/oracle.h"
#include "crashsim/scenario.h"

namespace crashsim::harness::wh8 {

// "" when the recovered store's epoch-2 runs refuse every gated call as g.4 says; else the first
// problem, one line.
std::string gateProblem(const std::filesystem::path& store, const crashsim::Scenario& scenario,
                        const PredictedRebaseline& at);

}  // namespace crashsim::harness::wh8
