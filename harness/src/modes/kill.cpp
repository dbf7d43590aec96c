// The kill mode (--mode kill): the process SIGKILLed at the point (modes/crash_case.cpp), and
// everything that follows a kill — the recovery process killed too, two recoveries racing, the
// armed file's path changed before recovery, the legacy import's kills (modes/legacy_import.cpp).
#include "crashsim/harness/oracle.h"
#include "modes/case_run.h"
#include "verdicts/path_mutations.h"

namespace crashsim::harness {
namespace {

using namespace points;

class KillMode final : public FaultMode {
 public:
  std::string_view name() const override { return "kill"; }
  bool isProcessKill() const override { return true; }
  bool crashesAtBarriers() const override { return true; }
  bool storeOnTmpfs() const override { return true; }

  // A scenario whose store starts from a legacy JSONL is swept at its import: its run after the
  // import is the same as a scenario's without one, and is swept there.
  std::vector<std::pair<CrashPoint, int>> primaryPoints(const Scenario& sc) const override {
    if (sc.spec.legacyStore)
      return {{P16, predictedImportBatches(sc)}, {P17, predictedImportBatches(sc)}};
    auto out = FaultMode::primaryPoints(sc);
    // Each checkpoint capture (oracle.h predictedCaptures; none under a `disabled` policy).
    const auto hits = predictedHits(sc);
    for (CrashPoint fp : pointRange(P18, P22))
      if (hits[fp] > 0) out.emplace_back(fp, hits[fp]);
    // Each isolated restore the scenario's drift after the crash causes (predictedRestore).
    if (const auto restore = predictedRestore(sc))
      for (CrashPoint fp : restore->failpoints) out.emplace_back(fp, 1);
    // Each rebaseline the user confirms after the scenario's drift (predictedRebaseline).
    if (const auto rebaseline = predictedRebaseline(sc))
      for (CrashPoint fp : rebaseline->failpoints) out.emplace_back(fp, 1);
    // The carrier GC of a recovery after a kill that leaves an orphan ref (predictedGc).
    if (predictedGc(sc)) out.emplace_back(P30, 1);
    return out;
  }

  // In this order: the recovery killed inside the continuation's own calls and at every recovery
  // point the oracle predicts (double faults), the path mutations, the recovery killed at its own
  // barriers, the race of two hosts.
  void planFollowUps(PrimaryPlan& plan) const override {
    const PlanSelection& sel = plan.selection();
    if (plan.primary().isCapture()) return;     // a capture kill has no follow-up yet (phase4.md)
    if (plan.primary().isRestore()) return;     // nor a restore kill (phase4.md, f)
    if (plan.primary().isRebaseline()) return;  // nor a rebaseline kill (phase4.md, g)
    if (plan.primary().isGc()) return;          // nor a GC kill (phase4.md, h)
    if (sel.doubleFaults) planRecoveryKills(plan);
    if (sel.pathMutations != "off") planPathMutations(plan);
    if (sel.doubleFaults && plan.plansBarriers()) planRecoveryBarrierKills(plan);
    if (sel.doubleFaults) planRace(plan);
  }

  void run(CaseRun& r) const override {
    if (r.id.isImport())
      runImportCase(r);
    else
      runCrashCase(r);
  }

  std::vector<std::string_view> verdicts() const override { return verdictsWith({"H1"}); }

 private:
  // The recovery process killed at the n first hits of `point`.
  static void addRecoveryKills(PrimaryPlan& plan, CrashPoint point, int n) {
    for (int rh = 1; rh <= n; ++rh) {
      CaseId d = plan.primary();
      d.recoveryFailpoint = point;
      d.recoveryHit = rh;
      plan.follow(d, point);
    }
  }

  // The continuation killed inside its own tool calls (P0–P7 of the continuation run, for the
  // primaries whose continuation the sweep kills: oracle.h), then every recovery point. An import
  // kill pairs only with a recovery kill inside the import (P16/P17): the repair of the
  // interrupted legacy runs that follows it is not swept as a double fault (its state is not the
  // import oracle's), only reached (V3's recovery reach).
  static void planRecoveryKills(PrimaryPlan& plan) {
    const CaseId& pid = plan.primary();
    const auto swept = sweptContinuationKills(plan.scenario(), pid.failpoint, pid.hit);
    for (CrashPoint rfp : pointRange(P0, P7)) {
      if (swept[rfp] > 0 && plan.firstState()) plan.predict(rfp, "recovery", swept[rfp]);
      addRecoveryKills(plan, rfp, swept[rfp]);
    }
    const auto recovery = predictedRecoveryHits(plan.scenario(), pid.failpoint, pid.hit);
    for (CrashPoint rfp : recoveryPoints()) {
      if (pid.isImport() && rfp.group() != PointGroup::legacyImport) continue;
      if (recovery[rfp] > 0 && plan.firstState()) plan.predict(rfp, "recovery", recovery[rfp]);
      addRecoveryKills(plan, rfp, recovery[rfp]);
    }
  }

  // The generated changes of the armed file target's path (verdicts/path_mutations.h).
  static void planPathMutations(PrimaryPlan& plan) {
    const CaseId& pid = plan.primary();
    const auto variants = pathmut::variantsAt(plan.scenario(), pid.failpoint, pid.hit,
                                              plan.selection().pathMutations == "all");
    if (!variants.empty()) plan.predict(pid.failpoint, "path", static_cast<int>(variants.size()));
    for (const auto& m : variants) {
      CaseId d = pid;
      d.pathMutation = m;
      plan.follow(d);
    }
  }

  // The recovery process killed at its own barriers (verdicts/recovery_barrier.h), from the
  // primary's reference recovery.
  static void planRecoveryBarrierKills(PrimaryPlan& plan) {
    const CaseId& pid = plan.primary();
    for (const auto& rb : plan.recoveryBarriers()) {
      if (rb.failpoint != pid.failpoint || rb.hit != pid.hit) continue;
      for (CrashPoint rfp : {S, F}) {
        const int n = rfp == S ? rb.s : rb.f;
        if (n > 0) plan.predict(rfp, "recovery", n);
        addRecoveryKills(plan, rfp, n);
      }
    }
  }

  // The race of two hosts on this crash state (verdicts/h1_race.h).
  static void planRace(PrimaryPlan& plan) {
    const CaseId& pid = plan.primary();
    if (!racedPrimary(plan.scenario(), pid.failpoint, pid.hit)) return;
    plan.predict(pid.failpoint, "race", 1);
    CaseId d = pid;
    d.race = true;
    plan.follow(d);
  }
};

}  // namespace

const FaultMode& killMode() {
  static const KillMode mode;
  return mode;
}

}  // namespace crashsim::harness
