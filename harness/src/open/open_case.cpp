// One case of the open harness (open/open_case.h).
#include "open/open_case.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "crashsim/error.h"
#include "crashsim/harness/case_runner.h"
#include "verdicts/o1_kill.h"
#include "verdicts/o2_at_most_once.h"
#include "verdicts/o3_recovery.h"
#include "verdicts/o4_history.h"
#include "verdicts/o5_determinism.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<json> readJsonLines(const fs::path& file) {
  std::vector<json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

// The effects log's executions the tool server matched to no scenario call: tool → count.
std::map<std::string, int> readUnscripted(const fs::path& effects) {
  std::map<std::string, int> out;
  for (const json& line : readJsonLines(effects))
    if (line.value("callId", "") == "unscripted") ++out[line.value("tool", "?")];
  return out;
}

// The answers log: callId → the result texts the tool server gave it.
std::map<std::string, std::set<std::string>> readAnswers(const fs::path& answers) {
  std::map<std::string, std::set<std::string>> out;
  for (const json& line : readJsonLines(answers))
    out[line.value("callId", "?")].insert(line.value("text", ""));
  return out;
}

double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The evidence of one run of the case (its crash, its resumes).
struct CaseRun {
  OpenEvidence ev;
  std::vector<std::string> log;
};

CaseRun runOnce(const OpenDriver& driver, const Scenario& scenario, const OpenCaseId& id,
                const fs::path& dir) {
  CaseRun run;
  OpenEvidence& ev = run.ev;
  ev.scenario = &scenario;
  ev.profile = &driver.profile();
  ev.arm = {id.point, id.hit};
  fs::remove_all(dir);
  const OpenPaths paths(dir);
  auto model = driver.startCase(scenario, paths);
  ev.crashed = driver.runProcess(false, scenario, paths, *model, ev.arm, "run");
  run.log.push_back(fmt::format("run: {} at {}#{} ({}): {}",
                                ev.crashed.reached ? "reached" : "not reached", id.point, id.hit,
                                ev.crashed.child.describe(), ev.crashed.controlLine));
  ev.effectsBeforeResume = readEffects(paths.effects);
  ev.requestsBeforeResume = static_cast<int>(model->requestCount());
  ev.requestsBeforeFinalResume = ev.requestsBeforeResume;
  const OpenArm resumeArm = id.resumePoint ? OpenArm{*id.resumePoint, id.resumeHit} : OpenArm{};
  ev.resumed = driver.runProcess(true, scenario, paths, *model, resumeArm, "resume");
  run.log.push_back(fmt::format(
      "resume: {}{}", ev.resumed.child.describe(),
      id.resumePoint ? (ev.resumed.reached ? " (killed at +R point)" : " (+R point not reached)")
                     : ""));
  if (id.resumePoint) {
    ev.resumeArm = resumeArm;
    ev.crashedResume = ev.resumed;
    ev.requestsBeforeFinalResume = static_cast<int>(model->requestCount());
    ev.resumed = driver.runProcess(true, scenario, paths, *model, {}, "resume2");
    run.log.push_back(fmt::format("resume2: {}", ev.resumed.child.describe()));
  }
  model.reset();  // the server stops: the model log is complete
  ev.effects = readEffects(paths.effects);
  ev.resent = readEffects(paths.resent);
  ev.unscripted = readUnscripted(paths.effects);
  ev.answers = readAnswers(paths.answers);
  ev.workspace = snapshotWorkspace(paths.workspace);
  ev.modelLog = readJsonLines(paths.modelLog);
  return run;
}

std::map<std::string, std::string> judge(const OpenEvidence& ev) {
  return {{"O1", judgeO1Kill(ev)},
          {"O2", judgeO2AtMostOnce(ev)},
          {"O3", judgeO3Recovery(ev)},
          {"O4", judgeO4History(ev)}};
}

}  // namespace

OpenReference openReference(const OpenDriver& driver, const Scenario& scenario,
                            const fs::path& dir) {
  const auto start = Clock::now();
  fs::remove_all(dir);
  const OpenPaths paths(dir);
  auto model = driver.startCase(scenario, paths);
  const OpenProcessResult r = driver.runProcess(false, scenario, paths, *model, {}, "run");
  model.reset();
  const auto fail = [&](const std::string& why) {
    return Error(std::string(open_code::reference_failed),
                 fmt::format("{}: the reference run of {} {} (its output: {})", driver.name(),
                             scenario.id, why, paths.err("run").string()));
  };
  if (!r.child.spawned) throw fail("did not start: " + r.child.error);
  if (!r.child.exited || r.child.exitCode != 0) throw fail(r.child.describe());
  if (!r.namedHitsProblem.empty()) throw fail(r.namedHitsProblem + " (a level-1 profile)");
  int total = 0;
  for (const auto& [point, n] : r.hits) total += n;
  if (total == 0)
    throw Error(std::string(open_code::no_crash_point),
                fmt::format("{}: the reference run of {} reaches no crash point (no model "
                            "request, no tool call, no barrier): nothing can be judged",
                            driver.name(), scenario.id));
  OpenEvidence ev;
  ev.scenario = &scenario;
  ev.profile = &driver.profile();
  ev.resumed = r;
  ev.effects = readEffects(paths.effects);
  ev.resent = readEffects(paths.resent);
  ev.unscripted = readUnscripted(paths.effects);
  ev.workspace = snapshotWorkspace(paths.workspace);
  if (const std::string why = judgeO3Recovery(ev); !why.empty())
    throw fail("did not do the task: " + why.substr(why.find(':') + 2));
  // A reference run that already runs a call twice, or one the model never made, cannot be the
  // yardstick of the cases (and its runtime's tool calls may not reach the tool server as sent).
  if (const std::string why = judgeO2AtMostOnce(ev); !why.empty())
    throw fail("broke at-most-once without a crash: " + why);
  OpenReference ref;
  ref.hits = r.hits;
  ref.interposerLoaded = r.interposerLoaded;
  ref.durationMs = msSince(start);
  return ref;
}

std::map<std::string, int> openResumeHits(const OpenDriver& driver, const Scenario& scenario,
                                          const OpenCaseId& primary, const fs::path& dir) {
  OpenCaseId unarmed = primary;
  unarmed.resumePoint.reset();
  const CaseRun run = runOnce(driver, scenario, unarmed, dir);
  if (!run.ev.crashed.reached) return {};
  // A resume that ended by itself owes a level-1 profile its named counts, as the run does.
  if (run.ev.resumed.child.exited && !run.ev.resumed.namedHitsProblem.empty())
    throw Error(std::string(open_code::reference_failed),
                fmt::format("{}: the unarmed resume after {} {} (a level-1 profile)", driver.name(),
                            unarmed.str(), run.ev.resumed.namedHitsProblem));
  return run.ev.resumed.hits;
}

OpenCaseResult runOpenCase(const OpenDriver& driver, const Scenario& scenario, const OpenCaseId& id,
                           const fs::path& dir, bool determinism) {
  const auto start = Clock::now();
  OpenCaseResult result;
  result.id = id;
  CaseRun first = runOnce(driver, scenario, id, dir / "case");
  result.verdicts = judge(first.ev);
  result.log = first.log;
  if (determinism) {
    const CaseRun second = runOnce(driver, scenario, id, dir / "again");
    const json a = openVerdictRecord(first.ev, result.verdicts);
    const json b = openVerdictRecord(second.ev, judge(second.ev));
    result.verdicts["O5"] = judgeO5Determinism(a, b);
  } else {
    result.verdicts["O5"] = "n/a: not sampled";
  }
  for (const auto& [name, reason] : result.verdicts)
    if (!reason.empty() && !reason.starts_with("n/a")) result.failed = true;
  result.durationMs = msSince(start);
  return result;
}

}  // namespace crashsim::harness
