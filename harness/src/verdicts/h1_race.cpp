// H1: two hosts race on one crash state (verdicts/h1_race.h).
#include "verdicts/h1_race.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/harness/case_runner.h"

namespace crashsim::harness::race {
namespace fs = std::filesystem;
using Json = nlohmann::json;

Facts observe(const fs::path& storeDir) {
  Facts f;
  f.claims = observed::claimBoundaries(storeDir);
  f.runs = observed::runs(storeDir);
  for (const std::string& runId : observed::eventRunIds(storeDir)) {
    const auto events = observed::runEvents(storeDir, runId);
    for (size_t i = 0; i < events.size(); ++i) {
      const Json& actions = events[i].payload.value("actions", Json::object());
      if (!actions.is_object()) continue;
      if (i == 0 && actions.contains("continuationStart") &&
          actions["continuationStart"].is_object())
        f.startProvenance[runId] = actions["continuationStart"].value("provenance", "");
      if (!actions.contains("toolRecovery") || !actions["toolRecovery"].is_object()) continue;
      const std::string kind = actions["toolRecovery"].value("kind", "");
      const Json refs = events[i].payload.value("refs", Json::object());
      const std::string op = refs.is_object() ? refs.value("operationId", "?") : "?";
      const StoredFact fact{events[i].eventId, events[i].payload.dump()};
      if (kind == "maka.tool.reconcile_result") f.reconcileFacts[op].push_back(fact);
      if (kind == "maka.tool.recovery_decision") f.decisionFacts[op].push_back(fact);
    }
  }
  f.effects = readEffects(storeDir / "effects.jsonl");
  std::ifstream in(storeDir / "lifecycle.jsonl");
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) f.lifecycle.push_back(Json::parse(line, nullptr, false));
  return f;
}

namespace {

// A racer's stdout: its start-up report (an object with "plans") or its error object.
Json reportOf(const Host& h) {
  return Json::parse(h.stdoutText.substr(0, h.stdoutText.find('\n')), nullptr, false);
}

bool isStartupReport(const Json& r) { return r.is_object() && r.contains("plans"); }

std::string errorCodeOf(const Json& r) {
  if (!r.is_object() || !r.contains("error") || !r["error"].is_object()) return "";
  return r["error"].value("code", "");
}

// What a start-up report says it wrote: claims it repaired, bundles, runs it repaired, a
// continuation. Empty when it found nothing to do.
std::vector<std::string> workOf(const Json& r) {
  std::vector<std::string> work;
  const Json none = Json::array();
  for (const Json& c : r.value("claimRepair", Json::object()).value("claims", none))
    for (const Json& a : c.value("actions", none))
      if (a.is_string() && a != "left_runtime_admission" && a != "already_repaired" &&
          a != "skipped_session")
        work.push_back(fmt::format("claim {}: {}", c.value("claimId", "?"), a.get<std::string>()));
  for (const Json& op : r.value("reconcile", Json::object()).value("operations", none)) {
    const std::string action = op.value("action", "");
    if (action.rfind("bundle_", 0) == 0)
      work.push_back(fmt::format("operation {}: {}", op.value("operationId", "?"), action));
  }
  for (const Json& run : r.value("startupRepair", Json::object()).value("runs", none)) {
    const std::string action = run.value("action", "");
    if (action != "none" && action != "skipped_claim_target")
      work.push_back(fmt::format("run {}: {}", run.value("runId", "?"), action));
  }
  if (r.contains("continuation") && !r["continuation"].is_null()) work.push_back("a continuation");
  return work;
}

std::vector<std::string> reasonsOf(const Json& r) {
  std::vector<std::string> out;
  const Json plan = r.value("plan", Json());
  if (!plan.is_object()) return out;
  for (const Json& x : plan.value("rejectionReasons", Json::array()))
    if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

bool nothingToContinue(const std::vector<std::string>& reasons) {
  return !reasons.empty() && std::all_of(reasons.begin(), reasons.end(), [](const auto& x) {
    return x == code::resume_candidate_missing || x == code::continuation_already_exists;
  });
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "-" : s;
}

// The points `hits` counts at least once, "P8×1 S×3" ("" when none).
std::string reachedPoints(const PointCounts& hits) {
  std::string reached;
  for (CrashPoint p : CrashPoint::all())
    if (hits[p] != 0)
      reached += fmt::format("{}{}×{}", reached.empty() ? "" : " ", p.name(), hits[p]);
  return reached;
}

// The hosts: each ran start-up or was refused with host_already_active before any work.
void judgeHosts(const std::vector<Host>& hosts, std::vector<size_t>& ran, Judgement& j) {
  for (size_t i = 0; i < hosts.size(); ++i) {
    const Host& h = hosts[i];
    const std::string who = "racer " + h.name;
    if (!h.atBarrier)
      j.problems.push_back(fmt::format("{} never reached the race barrier ({})", who, h.describe));
    if (!h.exited) {
      j.problems.push_back(fmt::format("{} {}", who, h.describe));
      continue;
    }
    const Json r = reportOf(h);
    if ((h.exitCode == 0 || h.exitCode == 1) && isStartupReport(r)) {
      ran.push_back(i);
      continue;
    }
    const std::string code = errorCodeOf(r);
    if (h.exitCode == 2 && code == code::host_already_active) {
      if (const std::string reached = h.hits ? reachedPoints(*h.hits) : ""; !reached.empty()) {
        j.problems.push_back(fmt::format(
            "{} was refused with {} only after it had worked on the store (reached {}): a host "
            "takes the lock before it opens the store",
            who, code::host_already_active, reached));
      }
      if (!h.modelLog.empty())
        j.problems.push_back(who + " was refused but handed the provider a step");
      continue;
    }
    j.problems.push_back(fmt::format(
        "{} exited {} with {}: a host racing a live owner must be refused with {} (exit 2) or "
        "run after it, not work beside it",
        who, h.exitCode, code.empty() ? h.stdoutText.substr(0, 200) : code,
        code::host_already_active));
  }
  if (ran.empty() && j.problems.empty())
    j.problems.push_back("no racer ran host start-up: both were refused");
}

// Both ran: the later one found nothing to do.
void judgeSecondStartup(const std::vector<Host>& hosts, const std::vector<size_t>& ran,
                        Judgement& j) {
  if (ran.size() == 1) {
    j.recovered = ran.front();
    return;
  }
  if (ran.size() != 2) return;
  std::vector<size_t> working;
  for (size_t i : ran)
    if (!workOf(reportOf(hosts[i])).empty()) working.push_back(i);
  if (working.size() == 2) {
    j.problems.push_back(fmt::format("both racers recovered the crash state — {}: [{}]; {}: [{}]",
                                     hosts[ran[0]].name, join(workOf(reportOf(hosts[ran[0]]))),
                                     hosts[ran[1]].name, join(workOf(reportOf(hosts[ran[1]])))));
    j.recovered = ran.front();
    return;
  }
  const size_t first = working.empty() ? ran[0] : working.front();
  const size_t later = first == ran[0] ? ran[1] : ran[0];
  j.recovered = first;
  const Json firstReport = reportOf(hosts[first]), laterReport = reportOf(hosts[later]);
  const auto reasons = reasonsOf(laterReport);
  const bool firstParked = firstReport.value("continuation", Json()).is_null();
  if (!nothingToContinue(reasons) && !(firstParked && reasons == reasonsOf(firstReport)))
    j.problems.push_back(fmt::format(
        "racer {} ran start-up after racer {} but parked with [{}]: after a finished recovery a "
        "host finds nothing to continue (or the same park: [{}]); this is a host that planned "
        "while the other was still recovering",
        hosts[later].name, hosts[first].name, join(reasons), join(reasonsOf(firstReport))));
  if (!hosts[later].modelLog.empty())
    j.problems.push_back(fmt::format("racer {} found nothing to do but handed the provider a step",
                                     hosts[later].name));
}

// Spec e.8 / j.8: one acquired claim per boundary, one claim row, one continuation run.
void judgeClaims(const Expectation& want, const Facts& before, const Facts& after, Judgement& j) {
  std::map<std::string, std::vector<std::string>> results;  // claim id → logged results
  int acquired = 0;
  for (size_t i = before.lifecycle.size(); i < after.lifecycle.size(); ++i) {
    const Json& l = after.lifecycle[i];
    if (!l.is_object() || l.value("event", "") != "continuation_claim") continue;
    const std::string result = l.value("result", "?");
    results[l.value("claimId", "?")].push_back(result);
    if (result == code::acquired)
      ++acquired;
    else if (result != code::existing)
      j.problems.push_back(
          fmt::format("a racer's claim {} was {}: the other racer's identical "
                      "claim must read existing (spec j.8)",
                      l.value("claimId", "?"), result));
  }
  if (acquired > 1)
    j.problems.push_back(fmt::format(
        "{} racers acquired the continuation claim of one boundary (spec e.8, j.8: one acquired, "
        "the other existing)",
        acquired));
  const int added = static_cast<int>(after.claims.size()) - static_cast<int>(before.claims.size());
  const int wantAdded = want.continues ? 1 : 0;
  if (added != wantAdded)
    j.problems.push_back(
        fmt::format("the race added {} continuation claim(s), the contract "
                    "expects {} (recovery {})",
                    added, wantAdded, want.continues ? "continues" : "parks"));
  if (want.continues && acquired == 0 && added == 1)
    j.problems.push_back("the race added a claim but no racer logged it acquired");
  std::map<std::string, int> perDigest;
  for (const auto& cl : after.claims)
    if (++perDigest[cl.boundaryDigest] == 2)
      j.problems.push_back("two claim rows for boundary " + cl.boundaryDigest);
  for (const auto& cl : after.claims) {
    std::vector<std::string> targets;
    for (const auto& run : after.runs) {
      const Json src = run.header.value("continuationSource", Json());
      if (src.is_object() && src.value("claimId", "") == cl.claimId) targets.push_back(run.runId);
    }
    if (targets.size() != 1) {
      j.problems.push_back(fmt::format(
          "claim {} has {} continuation run(s) [{}]: one boundary, one continuation run",
          cl.claimId, targets.size(), join(targets)));
      continue;
    }
    auto it = after.startProvenance.find(targets.front());
    const std::string provenance = it == after.startProvenance.end() ? "" : it->second;
    if (provenance != code::runtime_admission && provenance != code::claim_repair)
      j.problems.push_back(
          fmt::format("continuation run {} of claim {} does not begin with its "
                      "continuation-start",
                      targets.front(), cl.claimId));
  }
  std::map<std::string, std::vector<std::string>> runsPerBoundary;
  for (const auto& run : after.runs) {
    const Json src = run.header.value("continuationSource", Json());
    if (src.is_object()) runsPerBoundary[src.value("boundaryDigest", "?")].push_back(run.runId);
  }
  for (const auto& [digest, runs] : runsPerBoundary)
    if (runs.size() > 1)
      j.problems.push_back(fmt::format("boundary {} has {} continuation runs [{}]", digest,
                                       runs.size(), join(runs)));
}

// Spec f.6 / j.8: one bundle per operation, or two that converge.
void judgeBundles(const Facts& after, const std::vector<Host>& hosts, Judgement& j) {
  for (const auto* facts : {&after.reconcileFacts, &after.decisionFacts})
    for (const auto& [op, stored] : *facts) {
      if (stored.size() < 2) continue;
      const std::string& firstPayload = stored.front().payload;
      const bool same = std::all_of(stored.begin(), stored.end(),
                                    [&](const StoredFact& f) { return f.payload == firstPayload; });
      j.problems.push_back(fmt::format(
          "operation {} holds {} {} facts ({}): one recovery bundle per operation (spec f.6)", op,
          stored.size(), facts == &after.reconcileFacts ? "reconcile" : "decision",
          same ? "identical payloads under different ids" : "that differ"));
    }
  // Per operation, what each racer says it committed.
  std::map<std::string, std::vector<std::pair<std::string, Json>>> reported;
  for (const Host& h : hosts) {
    const Json r = reportOf(h);
    if (!isStartupReport(r)) continue;
    for (const Json& op : r.value("reconcile", Json::object()).value("operations", Json::array())) {
      const std::string action = op.value("action", "");
      if (action == "bundle_committed" || action == "bundle_exact_retry")
        reported[op.value("operationId", "?")].emplace_back(h.name, op);
    }
  }
  for (const auto& [op, list] : reported) {
    if (list.size() < 2) continue;
    int created = 0;
    for (const auto& [name, o] : list) created += o.value("action", "") == "bundle_committed";
    const Json& a = list[0].second;
    const Json& b = list[1].second;
    if (a.value("disposition", "") != b.value("disposition", "") ||
        a.value("reasonCode", "") != b.value("reasonCode", ""))
      j.problems.push_back(fmt::format(
          "operation {}: racer {} committed a {} bundle ({}) and racer {} a {} one ({}): completed "
          "against parked, exactly one may win (spec j.8)",
          op, list[0].first, a.value("disposition", "?"), a.value("reasonCode", "?"), list[1].first,
          b.value("disposition", "?"), b.value("reasonCode", "?")));
    else if (created > 1)
      j.problems.push_back(fmt::format(
          "operation {}: both racers created its recovery bundle; an exact retry creates nothing",
          op));
  }
}

// No call twice: the effects log and the provider.
void judgeExecutions(const Facts& after, const std::vector<Host>& hosts, Judgement& j) {
  for (const auto& [call, n] : after.effects)
    if (n > 1)
      j.problems.push_back(fmt::format("{} executed {} times: no call runs twice", call, n));
  std::vector<std::string> talked;
  for (const Host& h : hosts)
    if (!h.modelLog.empty()) talked.push_back(h.name);
  if (talked.size() > 1)
    j.problems.push_back(
        fmt::format("racers {} both called the provider: one continuation", join(talked)));
}

}  // namespace

Judgement judge(const Expectation& want, const Facts& before, const Facts& after,
                const std::vector<Host>& hosts) {
  Judgement j;
  std::vector<size_t> ran;
  judgeHosts(hosts, ran, j);
  judgeSecondStartup(hosts, ran, j);
  judgeClaims(want, before, after, j);
  judgeBundles(after, hosts, j);
  judgeExecutions(after, hosts, j);
  return j;
}

}  // namespace crashsim::harness::race
