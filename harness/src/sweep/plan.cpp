// The sweep's case plan from the oracle's prediction (plan.h).
#include "crashsim/harness/plan.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {
namespace {

CrashPoint parseFailpoint(const std::string& fp) {
  if (auto p = CrashPoint::parse(fp)) return *p;
  throw std::runtime_error("unknown failpoint " + fp + " (P0..P30, S, F, G)");
}

bool globMatch(const std::vector<std::string>& globs, const std::string& id) {
  if (globs.empty()) return true;
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return ::fnmatch(g.c_str(), id.c_str(), 0) == 0;
  });
}

// The failpoints --failpoint selects (every point when it names none).
class Wanted {
 public:
  explicit Wanted(const PlanSelection& sel) : all_(sel.failpoints.empty()) {
    for (const auto& fp : sel.failpoints) named_[parseFailpoint(fp)] = 1;
  }
  bool operator()(CrashPoint p) const { return all_ || named_[p] != 0; }

 private:
  bool all_;
  PointCounts named_;
};

// Whether a --case glob can select a barrier case: unless its failpoint part (after the first
// '/') starts with 'P', it may ("*", "s/S#*/kill", "s/*"), and the barriers must be planned.
// A glob whose failpoint part is named ("s/P4#*") excludes the barrier cases as before; one that
// names the recovery process's barriers ("s/P0#1/kill+R:S#*", "*+R:[SF]#*") selects them.
bool globMayMatchBarrier(const std::string& glob) {
  const auto slash = glob.find('/');
  if (slash == std::string::npos || slash + 1 >= glob.size() || glob[slash + 1] != 'P') return true;
  return glob.find("R:S") != std::string::npos || glob.find("R:F") != std::string::npos ||
         glob.find("R:[") != std::string::npos;
}

// The cases of one (scenario, failpoint, hit) in the selected mode: one case, or one per seeded
// crash state (powerloss) or damage (corrupt).
std::vector<CaseId> seededIds(const std::string& scenario, CrashPoint fp, int hit,
                              const PlanSelection& sel, const FaultMode& mode) {
  CaseId id;
  id.scenario = scenario;
  id.failpoint = fp;
  id.hit = hit;
  id.mode = sel.mode;
  if (!mode.seeded()) return {id};
  std::vector<CaseId> ids;
  for (uint64_t seed : mode.seeds(id, sel.seed, sel.states)) {
    id.seed = seed;
    ids.push_back(id);
  }
  return ids;
}

const FaultMode& modeOf(const PlanSelection& sel) {
  if (const FaultMode* m = findFaultMode(sel.mode)) return *m;
  throw std::runtime_error("unknown fault mode " + sel.mode);
}

// A selection the modes cannot plan: throws std::runtime_error with the one-line reason.
void checkSelection(const PlanSelection& sel, const FaultMode& mode, const Wanted& wanted) {
  using namespace points;
  const bool stopMode = mode.deliversStop();
  const std::vector<CrashPoint> agentRun = pointRange(P0, P9);
  if (stopMode &&
      (wanted(P10) || wanted(P11) || wanted(P14) || wanted(P15) || wanted(S) || wanted(F)) &&
      !sel.failpoints.empty())
    throw std::runtime_error(
        "--mode stop delivers the Stop in the agent run at P0..P9 (P12/P13 with --double-faults)");
  const std::vector<CrashPoint> capture = pointRange(P18, P22);
  const bool wantsCapture =
      !sel.failpoints.empty() && std::any_of(capture.begin(), capture.end(), wanted);
  if (wantsCapture && !mode.isProcessKill())
    throw std::runtime_error(
        "--failpoint P18..P22 (the workspace checkpoint capture) are kill mode only");
  const bool wantsRestore =
      !sel.failpoints.empty() && (wanted(P23) || wanted(P24) || wanted(P25) || wanted(P26));
  if (wantsRestore && !mode.isProcessKill())
    throw std::runtime_error(
        "--failpoint P23..P26 (the workspace isolated restore) are kill mode only");
  const bool wantsRebaseline =
      !sel.failpoints.empty() && (wanted(P27) || wanted(P28) || wanted(P29));
  if (wantsRebaseline && !mode.isProcessKill())
    throw std::runtime_error(
        "--failpoint P27..P29 (the workspace durable rebaseline) are kill mode only");
  const bool wantsGc = !sel.failpoints.empty() && wanted(P30);
  if (wantsGc && !mode.isProcessKill())
    throw std::runtime_error("--failpoint P30 (the workspace carrier GC) is kill mode only");
  if ((wanted(P16) || wanted(P17)) && !sel.failpoints.empty() && !mode.isProcessKill())
    throw std::runtime_error("--failpoint P16/P17 (the legacy JSONL import) are kill mode only");
  if ((wanted(P12) || wanted(P13)) && !sel.failpoints.empty() && (!stopMode || !sel.doubleFaults))
    throw std::runtime_error(
        "--failpoint P12/P13 are reached only after a Stop: add --mode stop --double-faults");
  if (!stopMode && !sel.failpoints.empty() && !sel.doubleFaults &&
      std::none_of(agentRun.begin(), agentRun.end(), wanted) && !wanted(P16) && !wanted(P17) &&
      !wantsCapture && !wantsRestore && !wantsRebaseline && !wantsGc && !plansBarriers(sel))
    throw std::runtime_error(
        "--failpoint P10/P11/P14/P15 are reached only by a recovery process: add "
        "--double-faults");
  if (sel.pathMutations != "off" && sel.pathMutations != "p4" && sel.pathMutations != "all")
    throw std::runtime_error("--path-mutations is off, p4 or all");
  if (sel.doubleFaults && !mode.doubleFaultRefusal().empty())
    throw std::runtime_error(mode.doubleFaultRefusal());
}

// Every primary (in CaseId order) with the cases that follow it; selection is applied per case.
struct Group {
  PlannedCase primary;
  bool primarySelected = false;
  std::vector<PlannedCase> doubles;  // selected cases that follow it
};

// The sweep's planner: the groups of every scenario, then the shard's cases and the reach table.
class Planner {
 public:
  Planner(const PlanSelection& sel, const std::vector<BarrierHits>& barrierHits, size_t scenarios)
      : sel_(sel),
        mode_(modeOf(sel)),
        wanted_(sel),
        barrierHits_(barrierHits),
        scenarios_(scenarios) {
    checkSelection(sel_, mode_, wanted_);
  }

  // The predicted reach row of (scenario, point, process), made on first use.
  PlannedReach& reach(const std::string& sc, CrashPoint fp, const char* process) {
    auto key = std::make_tuple(sc, fp.str(), std::string(process));
    auto [it, fresh] = reachRow_.try_emplace(key, plan_.reach.size());
    if (fresh) plan_.reach.push_back({sc, fp.str(), process, 0, 0});
    return plan_.reach[it->second];
  }

  // The agent run's primaries of scenario `si` (and the cases that follow each), then its
  // barrier primaries.
  void planScenario(const Scenario& sc, size_t si);
  // The shard's cases from the groups (position ≡ shard index mod shard total).
  SweepPlan finish();

 private:
  class Primary;
  void planBarriers(const Scenario& sc, size_t si);

  const PlanSelection& sel_;
  const FaultMode& mode_;
  const Wanted wanted_;
  const std::vector<BarrierHits>& barrierHits_;
  size_t scenarios_;
  SweepPlan plan_;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> reachRow_;
  std::vector<Group> groups_;
};

// One primary as its mode's planner sees it (fault_mode.h PrimaryPlan).
class Planner::Primary final : public PrimaryPlan {
 public:
  Primary(Planner& p, const Scenario& sc, size_t si, Group& g, bool first)
      : p_(p), sc_(sc), si_(si), g_(g), first_(first) {}
  const Scenario& scenario() const override { return sc_; }
  const PlanSelection& selection() const override { return p_.sel_; }
  const CaseId& primary() const override { return g_.primary.id; }
  bool firstState() const override { return first_; }
  const std::vector<RecoveryBarrierHits>& recoveryBarriers() const override {
    static const std::vector<RecoveryBarrierHits> none;
    return si_ < p_.barrierHits_.size() ? p_.barrierHits_[si_].recovery : none;
  }
  bool plansBarriers() const override { return harness::plansBarriers(p_.sel_); }
  void predict(CrashPoint point, const char* process, int n) override {
    p_.reach(sc_.id, point, process).predicted += n;
  }
  void follow(const CaseId& d, std::optional<CrashPoint> alsoBy) override {
    if ((p_.wanted_(g_.primary.id.failpoint) || (alsoBy && p_.wanted_(*alsoBy))) &&
        globMatch(p_.sel_.caseGlobs, d.str()))
      g_.doubles.push_back({d, si_});
  }

 private:
  Planner& p_;
  const Scenario& sc_;
  size_t si_;
  Group& g_;
  bool first_;
};

void Planner::planScenario(const Scenario& sc, size_t si) {
  for (const auto& [fp, hitCount] : mode_.primaryPoints(sc)) {
    if (hitCount > 0) reach(sc.id, fp, "agent").predicted += hitCount;
    for (int h = 1; h <= hitCount; ++h) {
      const std::vector<CaseId> ids = seededIds(sc.id, fp, h, sel_, mode_);
      for (const auto& pid : ids) {
        Group g;
        g.primary = {pid, si};
        g.primarySelected = wanted_(pid.failpoint) && globMatch(sel_.caseGlobs, pid.str());
        Primary primary(*this, sc, si, g, pid == ids.front());
        mode_.planFollowUps(primary);
        groups_.push_back(std::move(g));
      }
    }
  }
  planBarriers(sc, si);
}

// The unnamed barriers S#k, F#k (and G#k in a process-kill mode) as primaries, from the reference
// run's counts.
void Planner::planBarriers(const Scenario& sc, size_t si) {
  if (sc.spec.legacyStore || !plansBarriers(sel_) || barrierHits_.empty()) return;
  if (barrierHits_.size() != scenarios_)
    throw std::logic_error("planSweep: one BarrierHits per scenario");
  for (CrashPoint fp : {points::S, points::F, points::G}) {
    const BarrierHits& b = barrierHits_[si];
    const int n = fp == points::S ? b.s : fp == points::F ? b.f : mode_.isProcessKill() ? b.g : 0;
    if (n > 0) reach(sc.id, fp, "agent").predicted += n;
    for (int h = 1; h <= n; ++h) {
      for (const CaseId& pid : seededIds(sc.id, fp, h, sel_, mode_)) {
        Group g;
        g.primary.id = pid;
        g.primary.scenario = si;
        g.primarySelected = wanted_(fp) && globMatch(sel_.caseGlobs, pid.str());
        groups_.push_back(std::move(g));
      }
    }
  }
}

SweepPlan Planner::finish() {
  std::sort(groups_.begin(), groups_.end(),
            [](const Group& a, const Group& b) { return a.primary.id < b.primary.id; });
  std::vector<std::string> allIds, shardIds;
  size_t position = 0;
  for (const auto& g : groups_) {
    if (!g.primarySelected && g.doubles.empty()) continue;
    const bool mine =
        static_cast<int>(position++ % static_cast<size_t>(sel_.shardTotal)) == sel_.shardIndex;
    auto take = [&](const PlannedCase& pc, CrashPoint fp, const char* process) {
      allIds.push_back(pc.id.str());
      if (!mine) return;
      shardIds.push_back(pc.id.str());
      plan_.cases.push_back(pc);
      reach(pc.id.scenario, fp, process).planned += 1;
    };
    if (g.primarySelected) take(g.primary, g.primary.id.failpoint, "agent");
    for (const auto& d : g.doubles) {
      if (d.id.stopKill)
        take(d, *d.id.stopKill, "stop");
      else if (d.id.pathMutation)
        take(d, d.id.failpoint, "path");
      else if (d.id.stopGrace)
        take(d, d.id.failpoint, "agent");
      else if (d.id.race)
        take(d, d.id.failpoint, "race");
      else
        take(d, *d.id.recoveryFailpoint, "recovery");
    }
  }
  plan_.sweepCases = allIds.size();
  plan_.manifestDigest = reports::manifestDigest(shardIds);
  plan_.sweepManifestDigest = reports::manifestDigest(allIds);
  // In crash-point order within a (scenario, process).
  auto key = [](const PlannedReach& r) {
    return std::make_tuple(r.scenario, r.process, parseFailpoint(r.failpoint));
  };
  std::sort(plan_.reach.begin(), plan_.reach.end(),
            [&](const PlannedReach& a, const PlannedReach& b) { return key(a) < key(b); });
  return std::move(plan_);
}

}  // namespace

bool plansBarriers(const PlanSelection& sel) {
  const Wanted wanted(sel);
  const FaultMode* mode = findFaultMode(sel.mode);
  return sel.barriers && mode && mode->crashesAtBarriers() &&
         (wanted(points::S) || wanted(points::F) || wanted(points::G)) &&
         (sel.caseGlobs.empty() ||
          std::any_of(sel.caseGlobs.begin(), sel.caseGlobs.end(), globMayMatchBarrier));
}

SweepPlan planSweep(const std::vector<Scenario>& scenarios, const PlanSelection& sel,
                    const std::vector<BarrierHits>& barrierHits) {
  Planner planner(sel, barrierHits, scenarios.size());
  for (size_t si = 0; si < scenarios.size(); ++si) planner.planScenario(scenarios[si], si);
  return planner.finish();
}

}  // namespace crashsim::harness
