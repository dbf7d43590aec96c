// crashsim/harness/fault_mode.h — the fault-mode seam: how a crash is made, one mode per file.
//
// A fault mode (kill, powerloss, stop, corrupt) is named in case ids ("…/P4#1/stop"), by
// `--mode` and in reports. It answers three questions, and nothing outside it asks a mode's name:
//   - planning: which cases it plans at a (scenario, crash point, hit) — one, or one per seeded
//     state — and which cases follow each primary (planFollowUps: double faults, races, …);
//   - running: how one case of it runs, after the common start of every case (run);
//   - judging: which verdicts judge its cases (verdicts).
// Its traits below say what the rest of the harness must know of it (the case-id grammar, where a
// case's store may live, the reference run's settings). The modes are registered in one place
// (harness/src/modes/registry.cpp); adding one is a file beside the others and one line there.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/plan.h"
#include "crashsim/harness/scenario.h"

namespace crashsim::harness {

struct CaseRun;  // one case being run (harness/src/modes/case_run.h)

// What a mode's planner sees of one primary case (plan.cpp makes it): the case, and how to add a
// case that follows it (same shard, starts from its crash state).
class PrimaryPlan {
 public:
  virtual ~PrimaryPlan() = default;
  virtual const Scenario& scenario() const = 0;
  virtual const PlanSelection& selection() const = 0;
  virtual const CaseId& primary() const = 0;
  // The first of the primary's seeded states (or the primary itself): reach is counted once.
  virtual bool firstState() const = 0;
  // The reference recoveries' barrier counts of the scenario (empty when none were run).
  virtual const std::vector<RecoveryBarrierHits>& recoveryBarriers() const = 0;
  // Whether the selection plans barrier cases (plan.h plansBarriers).
  virtual bool plansBarriers() const = 0;
  // The oracle predicts `n` more hits of `point` in `process` ("recovery", "stop", …).
  virtual void predict(CrashPoint point, const char* process, int n) = 0;
  // Adds `followUp`, selected when --failpoint selects the primary's point or `alsoBy`, and the
  // case id matches the --case globs.
  virtual void follow(const CaseId& followUp, std::optional<CrashPoint> alsoBy = std::nullopt) = 0;
};

class FaultMode {
 public:
  virtual ~FaultMode() = default;

  // The mode's name in case ids, --mode and reports ("kill").
  virtual std::string_view name() const = 0;

  // --- what the rest of the harness must know of it
  // Each case names the seed of its crash state ("…/powerloss@17"): powerloss, corrupt.
  virtual bool seeded() const { return false; }
  // The crash is a plain SIGKILL of the process, and so is everything that follows a kill: the
  // recovery process killed too (+R:, at its barriers +R:S#k), two recoveries racing (+H2), the
  // armed file's path changed before recovery (~path:), the legacy import's kills (P16, P17).
  virtual bool isProcessKill() const { return false; }
  // The unnamed barriers S#k, F#k are primaries of this mode: kill, powerloss.
  virtual bool crashesAtBarriers() const { return false; }
  // A Stop is delivered at the point instead of the crash (P0–P9; +K:P12#1, +grace): stop.
  virtual bool deliversStop() const { return false; }
  // The crash drops what the OS had not synced: the store's PRAGMA synchronous is the run's
  // (--synchronous, reproduce lines, reports), and the reference run may use a weaker setting.
  virtual bool dropsUnsyncedWrites() const { return false; }
  // A case's store may live on tmpfs (/dev/shm): the mode loses nothing a page cache keeps.
  virtual bool storeOnTmpfs() const { return false; }
  // Why --double-faults is refused for this mode ("" when it is planned).
  virtual std::string doubleFaultRefusal() const { return ""; }

  // --- planning
  // The seeds of the `states` crash states at the primary `id` (seeded modes; else empty).
  virtual std::vector<uint64_t> seeds(const CaseId& id, uint64_t sweepSeed, int states) const;
  // The agent run's points and their predicted hits: P0–P9, nothing for a legacy store.
  virtual std::vector<std::pair<CrashPoint, int>> primaryPoints(const Scenario& scenario) const;
  // Adds the cases that follow one primary (double faults, races, path mutations, …).
  virtual void planFollowUps(PrimaryPlan& plan) const;

  // --- running and judging
  // Runs one case of this mode into run.checks (never throws for a contract violation).
  virtual void run(CaseRun& run) const = 0;
  // The verdicts that judge this mode's cases (reports::kCheckNames and the mode's own).
  virtual std::vector<std::string_view> verdicts() const = 0;
};

// The registered modes, in their order (kill, powerloss, stop, corrupt).
const std::vector<const FaultMode*>& faultModes();
// The mode named `name`, or nullptr.
const FaultMode* findFaultMode(std::string_view name);
// The mode named `name`; std::invalid_argument for an unknown name.
const FaultMode& faultMode(std::string_view name);
// The registered names, in order.
std::vector<std::string> faultModeNames();

}  // namespace crashsim::harness
