// The sweep's case plan from the oracle's prediction (plan.h).
#include "crashsim/harness/plan.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "crashsim/harness/corruption_injector.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/powerloss_mode.h"
#include "crashsim/reports/report.h"
#include "verdicts/path_mutations.h"
#include "verdicts/stop.h"

namespace crashsim::harness {
namespace {

CrashPoint parseFailpoint(const std::string& fp) {
  if (auto p = CrashPoint::parse(fp)) return *p;
  throw std::runtime_error("unknown failpoint " + fp + " (P0..P17, S, F)");
}

// A Stop accepted before the run decided its end (P0–P7) is ended by a termination batch: it
// reaches P12 and P13 once each. At P8/P9 the run's own terminal is already being committed.
bool stopReachesBatch(CrashPoint failpoint) { return failpoint <= points::P7; }

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

// The cases of one (scenario, failpoint, hit) in the selected mode: one kill or Stop case, or
// one per seeded crash state (powerloss) or damage (corrupt).
std::vector<CaseId> seededIds(const std::string& scenario, CrashPoint fp, int hit,
                              const PlanSelection& sel) {
  CaseId id;
  id.scenario = scenario;
  id.failpoint = fp;
  id.hit = hit;
  id.mode = sel.mode;
  if (sel.mode != "powerloss" && sel.mode != "corrupt") return {id};
  std::vector<CaseId> ids;
  for (uint64_t seed : sel.mode == "corrupt" ? corruptSeeds(id, sel.seed, sel.states)
                                             : powerlossSeeds(id, sel.seed, sel.states)) {
    id.seed = seed;
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

bool plansBarriers(const PlanSelection& sel) {
  const Wanted wanted(sel);
  return sel.barriers && (sel.mode == "kill" || sel.mode == "powerloss") &&
         (wanted(points::S) || wanted(points::F)) &&
         (sel.caseGlobs.empty() ||
          std::any_of(sel.caseGlobs.begin(), sel.caseGlobs.end(), globMayMatchBarrier));
}

SweepPlan planSweep(const std::vector<Scenario>& scenarios, const PlanSelection& sel,
                    const std::vector<BarrierHits>& barrierHits) {
  using namespace points;
  const Wanted wanted(sel);
  const bool stopMode = sel.mode == "stop";
  const std::vector<CrashPoint> agentRun = pointRange(P0, P9);
  if (stopMode &&
      (wanted(P10) || wanted(P11) || wanted(P14) || wanted(P15) || wanted(S) || wanted(F)) &&
      !sel.failpoints.empty())
    throw std::runtime_error(
        "--mode stop delivers the Stop in the agent run at P0..P9 (P12/P13 with --double-faults)");
  if ((wanted(P16) || wanted(P17)) && !sel.failpoints.empty() && sel.mode != "kill")
    throw std::runtime_error("--failpoint P16/P17 (the legacy JSONL import) are kill mode only");
  if ((wanted(P12) || wanted(P13)) && !sel.failpoints.empty() && (!stopMode || !sel.doubleFaults))
    throw std::runtime_error(
        "--failpoint P12/P13 are reached only after a Stop: add --mode stop --double-faults");
  if (!stopMode && !sel.failpoints.empty() && !sel.doubleFaults &&
      std::none_of(agentRun.begin(), agentRun.end(), wanted) && !wanted(P16) && !wanted(P17) &&
      !plansBarriers(sel))
    throw std::runtime_error(
        "--failpoint P10/P11/P14/P15 are reached only by a recovery process: add "
        "--double-faults");

  // The recovery kill is a process kill: under --mode powerloss it would be a plain kill wearing
  // a power-loss label (D1/D2 would judge nothing). Refused until the recovery runs over the
  // power-loss VFS as well.
  if (sel.doubleFaults && sel.mode == "powerloss")
    throw std::runtime_error(
        "--double-faults is kill mode only: the recovery kill is a process kill, not a power cut");
  if (sel.pathMutations != "off" && sel.pathMutations != "p4" && sel.pathMutations != "all")
    throw std::runtime_error("--path-mutations is off, p4 or all");
  if (sel.doubleFaults && sel.mode == "corrupt")
    throw std::runtime_error(
        "--double-faults is kill mode only: a corrupt case damages the crash state of one kill");
  SweepPlan plan;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> reachRow;
  auto reach = [&](const std::string& sc, CrashPoint fp, const char* process) -> PlannedReach& {
    auto key = std::make_tuple(sc, fp.str(), std::string(process));
    auto [it, fresh] = reachRow.try_emplace(key, plan.reach.size());
    if (fresh) plan.reach.push_back({sc, fp.str(), process, 0, 0});
    return plan.reach[it->second];
  };

  // Every primary (in CaseId order) with its double faults; selection is applied per case.
  struct Group {
    PlannedCase primary;
    bool primarySelected = false;
    std::vector<PlannedCase> doubles;  // selected double faults
  };
  std::vector<Group> groups;
  for (size_t si = 0; si < scenarios.size(); ++si) {
    const Scenario& sc = scenarios[si];
    // The agent run's kill points and their predicted hits. A scenario whose store starts from a
    // legacy JSONL is swept at its import (kill mode only); its run after the import is the same
    // as a scenario without one, and is swept there.
    std::vector<std::pair<CrashPoint, int>> primaries;
    if (sc.spec.legacyStore) {
      if (sel.mode == "kill")
        for (CrashPoint fp : {P16, P17}) primaries.emplace_back(fp, predictedImportBatches(sc));
    } else {
      const auto hits = predictedHits(sc);
      for (CrashPoint fp : agentRun) primaries.emplace_back(fp, hits[fp]);
    }
    for (const auto& [fp, hitCount] : primaries) {
      if (hitCount > 0) reach(sc.id, fp, "agent").predicted += hitCount;
      for (int h = 1; h <= hitCount; ++h) {
        const std::vector<CaseId> ids = seededIds(sc.id, fp, h, sel);
        const auto recovery =
            sel.doubleFaults && !stopMode ? predictedRecoveryHits(sc, fp, h) : PointCounts{};
        for (const auto& pid : ids) {
          Group g;
          g.primary = {pid, si};
          g.primarySelected = wanted(fp) && globMatch(sel.caseGlobs, pid.str());
          // The recovery process killed at the rh-th hit of rfp, rh = 1..n; selected when the
          // primary's or the recovery's failpoint is and the case id matches the globs.
          auto addRecoveryKills = [&, primaryFp = fp](CrashPoint rfp, int n) {
            for (int rh = 1; rh <= n; ++rh) {
              CaseId d = pid;
              d.recoveryFailpoint = rfp;
              d.recoveryHit = rh;
              if ((wanted(primaryFp) || wanted(rfp)) && globMatch(sel.caseGlobs, d.str()))
                g.doubles.push_back({d, si});
            }
          };
          // The continuation killed inside its own tool calls (P0–P7 of the continuation run),
          // for the primaries whose continuation the sweep kills (oracle.h).
          if (sel.doubleFaults && !stopMode) {
            const auto swept = sweptContinuationKills(sc, fp, h);
            for (CrashPoint rfp : pointRange(P0, P7)) {
              const int n = swept[rfp];
              if (n > 0 && pid == ids.front()) reach(sc.id, rfp, "recovery").predicted += n;
              addRecoveryKills(rfp, n);
            }
          }
          for (CrashPoint rfp : recoveryPoints()) {
            // An import kill pairs only with a recovery kill inside the import (P16/P17): the
            // repair of the interrupted legacy runs that follows it is not swept as a double
            // fault (its state is not the import oracle's), only reached (V3's recovery reach).
            const bool importKill = fp.group() == PointGroup::legacyImport;
            if (importKill && rfp.group() != PointGroup::legacyImport) continue;
            if (recovery[rfp] > 0 && pid == ids.front())
              reach(sc.id, rfp, "recovery").predicted += recovery[rfp];
            addRecoveryKills(rfp, recovery[rfp]);
          }
          if (stopMode && sel.doubleFaults && stopReachesBatch(fp)) {
            for (CrashPoint k : {P12, P13}) {
              reach(sc.id, k, "stop").predicted += 1;
              CaseId d = pid;
              d.stopKill = k;
              const bool want = (wanted(fp) || wanted(k)) && globMatch(sel.caseGlobs, d.str());
              if (want) g.doubles.push_back({d, si});
            }
          }
          // The generated changes of the armed file target's path (path_mutations.h).
          if (sel.mode == "kill" && sel.pathMutations != "off") {
            const auto variants = pathmut::variantsAt(sc, fp, h, sel.pathMutations == "all");
            if (!variants.empty())
              reach(sc.id, fp, "path").predicted += static_cast<int>(variants.size());
            for (const auto& m : variants) {
              CaseId d = pid;
              d.pathMutation = m;
              if (wanted(fp) && globMatch(sel.caseGlobs, d.str())) g.doubles.push_back({d, si});
            }
          }
          // The recovery process killed at its own barriers (verdicts/recovery_barrier.h), from
          // the primary's reference recovery.
          if (sel.doubleFaults && sel.mode == "kill" && si < barrierHits.size() &&
              plansBarriers(sel))
            for (const auto& rb : barrierHits[si].recovery) {
              if (rb.failpoint != fp || rb.hit != h) continue;
              for (CrashPoint rfp : {S, F}) {
                const int n = rfp == S ? rb.s : rb.f;
                if (n > 0) reach(sc.id, rfp, "recovery").predicted += n;
                addRecoveryKills(rfp, n);
              }
            }
          // The race of two hosts on this crash state (verdicts/h1_race.h), kill mode only.
          if (sel.doubleFaults && sel.mode == "kill" && racedPrimary(sc, fp, h)) {
            reach(sc.id, fp, "race").predicted += 1;
            CaseId d = pid;
            d.race = true;
            if (wanted(fp) && globMatch(sel.caseGlobs, d.str())) g.doubles.push_back({d, si});
          }
          // The watchdog case of the scenario's Bash call that ignores cancellation (stop.h).
          if (stopMode && fp == P2 && stop::holdingHit(sc) == h) {
            reach(sc.id, fp, "agent").predicted += 1;
            CaseId d = pid;
            d.stopGrace = true;
            if (wanted(P2) && globMatch(sel.caseGlobs, d.str())) g.doubles.push_back({d, si});
          }
          groups.push_back(std::move(g));
        }
      }
    }
    if (sc.spec.legacyStore || !plansBarriers(sel) || barrierHits.empty()) continue;
    if (barrierHits.size() != scenarios.size())
      throw std::logic_error("planSweep: one BarrierHits per scenario");
    for (CrashPoint fp : {S, F}) {
      const int n = fp == S ? barrierHits[si].s : barrierHits[si].f;
      if (n > 0) reach(sc.id, fp, "agent").predicted += n;
      for (int h = 1; h <= n; ++h) {
        for (const CaseId& pid : seededIds(sc.id, fp, h, sel)) {
          Group g;
          g.primary.id = pid;
          g.primary.scenario = si;
          g.primarySelected = wanted(fp) && globMatch(sel.caseGlobs, pid.str());
          groups.push_back(std::move(g));
        }
      }
    }
  }
  std::sort(groups.begin(), groups.end(),
            [](const Group& a, const Group& b) { return a.primary.id < b.primary.id; });

  std::vector<std::string> allIds, shardIds;
  size_t position = 0;
  for (const auto& g : groups) {
    if (!g.primarySelected && g.doubles.empty()) continue;
    const bool mine =
        static_cast<int>(position++ % static_cast<size_t>(sel.shardTotal)) == sel.shardIndex;
    auto take = [&](const PlannedCase& pc, CrashPoint fp, const char* process) {
      allIds.push_back(pc.id.str());
      if (!mine) return;
      shardIds.push_back(pc.id.str());
      plan.cases.push_back(pc);
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
  plan.sweepCases = allIds.size();
  plan.manifestDigest = reports::manifestDigest(shardIds);
  plan.sweepManifestDigest = reports::manifestDigest(allIds);
  // In crash-point order within a (scenario, process).
  auto key = [](const PlannedReach& r) {
    return std::make_tuple(r.scenario, r.process, parseFailpoint(r.failpoint));
  };
  std::sort(plan.reach.begin(), plan.reach.end(),
            [&](const PlannedReach& a, const PlannedReach& b) { return key(a) < key(b); });
  return plan;
}

}  // namespace crashsim::harness
