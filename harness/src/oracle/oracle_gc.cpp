// The oracle's placement of the carrier GC's P30 (workspace-continuity-contract.md h.2, h.5, i.2
// "a GC with at least one deletable orphan ref"; oracle.h predictedGc): from the scenario and the
// contract alone.
#include "crashsim/harness/oracle.h"

namespace crashsim::harness {

std::optional<PredictedGc> predictedGc(const Scenario& s) {
  const auto& policy = s.spec.workspacePolicy;
  if (policy.checkpointRequirement == "disabled" || !s.spec.git || !policy.gcOrphanGraceMs ||
      *policy.gcOrphanGraceMs != 0)
    return std::nullopt;
  // The first capture (d.1 a, the baseline) killed at its P20 (W4): one orphan ref, no fact.
  const auto first = captureAt(s, 1);
  if (!first) return std::nullopt;
  PredictedGc out;
  out.captureHit = 1;
  out.ledgerPoint = first->ledgerPoint;
  out.ledgerHit = first->ledgerHit;
  return out;
}

}  // namespace crashsim::harness
