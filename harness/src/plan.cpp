// The sweep's case plan from the oracle's prediction (plan.h).
#include "crashsim/harness/plan.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "crashsim/harness/corrupt_checks.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/powerloss_checks.h"
#include "crashsim/reports/report.h"
#include "verdicts/path_mutations.h"
#include "verdicts/stop.h"

namespace crashsim::harness {
namespace {

int parseFailpoint(const std::string& fp) {
  if (fp == "S") return kBarrierS;
  if (fp == "F") return kBarrierF;
  if (fp == "P12") return kStopP12;
  if (fp == "P13") return kStopP13;
  if (fp == "P14") return kAdmissionP14;
  if (fp == "P15") return kAdmissionP15;
  if (fp == "P16") return kImportP16;
  if (fp == "P17") return kImportP17;
  if (fp.size() < 2 || fp.size() > 3 || fp[0] != 'P' ||
      fp.find_first_not_of("0123456789", 1) != std::string::npos ||
      (fp.size() == 3 && fp[1] == '0'))
    throw std::runtime_error("unknown failpoint " + fp + " (P0..P17, S, F)");
  int n = std::stoi(fp.substr(1));
  if (n > 11) throw std::runtime_error("unknown failpoint " + fp + " (P0..P17, S, F)");
  return n;
}

// A Stop accepted before the run decided its end (P0–P7) is ended by a termination batch: it
// reaches P12 and P13 once each. At P8/P9 the run's own terminal is already being committed.
bool stopReachesBatch(int failpoint) { return failpoint <= 7; }

bool globMatch(const std::vector<std::string>& globs, const std::string& id) {
  if (globs.empty()) return true;
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return ::fnmatch(g.c_str(), id.c_str(), 0) == 0;
  });
}

std::vector<bool> wantedFailpoints(const PlanSelection& sel) {
  std::vector<bool> fpWanted(kPoints, sel.failpoints.empty());
  for (const auto& fp : sel.failpoints) fpWanted[static_cast<size_t>(parseFailpoint(fp))] = true;
  return fpWanted;
}

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
std::vector<CaseId> seededIds(const std::string& scenario, int fp, int hit,
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
  const auto fpWanted = wantedFailpoints(sel);
  return sel.barriers && (sel.mode == "kill" || sel.mode == "powerloss") &&
         (fpWanted[kBarrierS] || fpWanted[kBarrierF]) &&
         (sel.caseGlobs.empty() ||
          std::any_of(sel.caseGlobs.begin(), sel.caseGlobs.end(), globMayMatchBarrier));
}

SweepPlan planSweep(const std::vector<Scenario>& scenarios, const PlanSelection& sel,
                    const std::vector<BarrierHits>& barrierHits) {
  const std::vector<bool> fpWanted = wantedFailpoints(sel);
  const bool stopMode = sel.mode == "stop";
  if (stopMode &&
      (fpWanted[10] || fpWanted[11] || fpWanted[kAdmissionP14] || fpWanted[kAdmissionP15] ||
       fpWanted[kBarrierS] || fpWanted[kBarrierF]) &&
      !sel.failpoints.empty())
    throw std::runtime_error(
        "--mode stop delivers the Stop in the agent run at P0..P9 (P12/P13 with --double-faults)");
  if ((fpWanted[kImportP16] || fpWanted[kImportP17]) && !sel.failpoints.empty() &&
      sel.mode != "kill")
    throw std::runtime_error("--failpoint P16/P17 (the legacy JSONL import) are kill mode only");
  if ((fpWanted[kStopP12] || fpWanted[kStopP13]) && !sel.failpoints.empty() &&
      (!stopMode || !sel.doubleFaults))
    throw std::runtime_error(
        "--failpoint P12/P13 are reached only after a Stop: add --mode stop --double-faults");
  if (!stopMode && !sel.failpoints.empty() && !sel.doubleFaults &&
      std::none_of(fpWanted.begin(), fpWanted.begin() + 10, [](bool b) { return b; }) &&
      !fpWanted[kImportP16] && !fpWanted[kImportP17] && !plansBarriers(sel))
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
  auto reach = [&](const std::string& sc, int fp, const char* process) -> PlannedReach& {
    auto key = std::make_tuple(sc, failpointName(fp), std::string(process));
    auto [it, fresh] = reachRow.try_emplace(key, plan.reach.size());
    if (fresh) plan.reach.push_back({sc, failpointName(fp), process, 0, 0});
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
    std::vector<std::pair<int, int>> primaries;
    if (sc.spec.legacyStore) {
      if (sel.mode == "kill")
        for (int fp : {kImportP16, kImportP17})
          primaries.emplace_back(fp, predictedImportBatches(sc));
    } else {
      const auto hits = predictedHits(sc);
      for (int fp = 0; fp < 10; ++fp) primaries.emplace_back(fp, hits[static_cast<size_t>(fp)]);
    }
    for (const auto& [fp, hitCount] : primaries) {
      if (hitCount > 0) reach(sc.id, fp, "agent").predicted += hitCount;
      for (int h = 1; h <= hitCount; ++h) {
        const std::vector<CaseId> ids = seededIds(sc.id, fp, h, sel);
        const auto recovery = sel.doubleFaults && !stopMode ? predictedRecoveryHits(sc, fp, h)
                                                            : std::array<int, kPoints>{};
        for (const auto& pid : ids) {
          Group g;
          g.primary = {pid, si};
          g.primarySelected =
              fpWanted[static_cast<size_t>(fp)] && globMatch(sel.caseGlobs, pid.str());
          // The recovery process killed at the rh-th hit of rfp, rh = 1..n; selected when the
          // primary's or the recovery's failpoint is and the case id matches the globs.
          auto addRecoveryKills = [&, primaryFp = fp](int rfp, int n) {
            for (int rh = 1; rh <= n; ++rh) {
              CaseId d = pid;
              d.recoveryFailpoint = rfp;
              d.recoveryHit = rh;
              if ((fpWanted[static_cast<size_t>(primaryFp)] ||
                   fpWanted[static_cast<size_t>(rfp)]) &&
                  globMatch(sel.caseGlobs, d.str()))
                g.doubles.push_back({d, si});
            }
          };
          // The continuation killed inside its own tool calls (P0–P7 of the continuation run),
          // for the primaries whose continuation the sweep kills (oracle.h).
          if (sel.doubleFaults && !stopMode) {
            const auto swept = sweptContinuationKills(sc, fp, h);
            for (int rfp = 0; rfp <= 7; ++rfp) {
              const int n = swept[static_cast<size_t>(rfp)];
              if (n > 0 && pid == ids.front()) reach(sc.id, rfp, "recovery").predicted += n;
              addRecoveryKills(rfp, n);
            }
          }
          for (int rfp : kRecoveryPoints) {
            // An import kill pairs only with a recovery kill inside the import (P16/P17): the
            // repair of the interrupted legacy runs that follows it is not swept as a double
            // fault (its state is not the import oracle's), only reached (V3's recovery reach).
            const bool importKill = fp == kImportP16 || fp == kImportP17;
            if (importKill && rfp != kImportP16 && rfp != kImportP17) continue;
            if (recovery[static_cast<size_t>(rfp)] > 0 && pid == ids.front())
              reach(sc.id, rfp, "recovery").predicted += recovery[static_cast<size_t>(rfp)];
            addRecoveryKills(rfp, recovery[static_cast<size_t>(rfp)]);
          }
          if (stopMode && sel.doubleFaults && stopReachesBatch(fp)) {
            for (int k : {kStopP12, kStopP13}) {
              reach(sc.id, k, "stop").predicted += 1;
              CaseId d = pid;
              d.stopKill = k;
              const bool want =
                  (fpWanted[static_cast<size_t>(fp)] || fpWanted[static_cast<size_t>(k)]) &&
                  globMatch(sel.caseGlobs, d.str());
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
              if (fpWanted[static_cast<size_t>(fp)] && globMatch(sel.caseGlobs, d.str()))
                g.doubles.push_back({d, si});
            }
          }
          // The recovery process killed at its own barriers (verdicts/recovery_barrier.h), from
          // the primary's reference recovery.
          if (sel.doubleFaults && sel.mode == "kill" && si < barrierHits.size() &&
              plansBarriers(sel))
            for (const auto& rb : barrierHits[si].recovery) {
              if (rb.failpoint != fp || rb.hit != h) continue;
              for (int rfp : {kBarrierS, kBarrierF}) {
                const int n = rfp == kBarrierS ? rb.s : rb.f;
                if (n > 0) reach(sc.id, rfp, "recovery").predicted += n;
                addRecoveryKills(rfp, n);
              }
            }
          // The race of two hosts on this crash state (verdicts/h1_race.h), kill mode only.
          if (sel.doubleFaults && sel.mode == "kill" && racedPrimary(sc, fp, h)) {
            reach(sc.id, fp, "race").predicted += 1;
            CaseId d = pid;
            d.race = true;
            if (fpWanted[static_cast<size_t>(fp)] && globMatch(sel.caseGlobs, d.str()))
              g.doubles.push_back({d, si});
          }
          // The watchdog case of the scenario's Bash call that ignores cancellation (stop.h).
          if (stopMode && fp == 2 && stop::holdingHit(sc) == h) {
            reach(sc.id, fp, "agent").predicted += 1;
            CaseId d = pid;
            d.stopGrace = true;
            if (fpWanted[2] && globMatch(sel.caseGlobs, d.str())) g.doubles.push_back({d, si});
          }
          groups.push_back(std::move(g));
        }
      }
    }
    if (sc.spec.legacyStore || !plansBarriers(sel) || barrierHits.empty()) continue;
    if (barrierHits.size() != scenarios.size())
      throw std::logic_error("planSweep: one BarrierHits per scenario");
    for (int fp : {kBarrierS, kBarrierF}) {
      const int n = fp == kBarrierS ? barrierHits[si].s : barrierHits[si].f;
      if (n > 0) reach(sc.id, fp, "agent").predicted += n;
      for (int h = 1; h <= n; ++h) {
        for (const CaseId& pid : seededIds(sc.id, fp, h, sel)) {
          Group g;
          g.primary.id = pid;
          g.primary.scenario = si;
          g.primarySelected =
              fpWanted[static_cast<size_t>(fp)] && globMatch(sel.caseGlobs, pid.str());
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
    auto take = [&](const PlannedCase& pc, int fp, const char* process) {
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
  auto key = [](const PlannedReach& r) {
    const int fp = parseFailpoint(r.failpoint);
    // P12..P15 right after P11 (a process reaches either them or the barriers S, F).
    return std::make_tuple(r.scenario, r.process, fp >= kStopP12 ? fp - 2 : fp);
  };
  std::sort(plan.reach.begin(), plan.reach.end(),
            [&](const PlannedReach& a, const PlannedReach& b) { return key(a) < key(b); });
  return plan;
}

}  // namespace crashsim::harness
