// Reference runs and verified cases: runCase is the start every case shares (its folder, the
// judged scenario, why it cannot run), then its fault mode's run (modes/*.cpp); each verdict it
// applies is its own unit in harness/src/verdicts/.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/harness/corruption_injector.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/powerloss_mode.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"
#include "modes/case_run.h"
#include "verdicts/ancestor_tamper.h"
#include "verdicts/barrier.h"
#include "verdicts/c1_corrupt.h"
#include "verdicts/coverage.h"
#include "verdicts/d1_d2_powerloss.h"
#include "verdicts/durable_replace.h"
#include "verdicts/fail_closed.h"
#include "verdicts/file_steps.h"
#include "verdicts/h1_race.h"
#include "verdicts/legacy_import.h"
#include "verdicts/observed_store.h"
#include "verdicts/recovery_barrier.h"
#include "verdicts/recovery_kill_state.h"
#include "verdicts/stop.h"
#include "verdicts/t1_exists.h"
#include "verdicts/v1_kill.h"
#include "verdicts/v2_integrity.h"
#include "verdicts/v3_durable_facts.h"
#include "verdicts/v4_decisions.h"
#include "verdicts/v5_lineage.h"
#include "verdicts/v5_plan.h"
#include "verdicts/v6_rebuild.h"
#include "verdicts/v7_repair.h"
#include "verdicts/v8_recovery.h"
#include "verdicts/verdict.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

const RuntimeDriver& driverOf(const RunOptions& opts) {
  if (opts.driver) return *opts.driver;
  // One crashsim-agent driver per agent binary and thread (a driver holds the binary's path).
  thread_local std::map<fs::path, std::unique_ptr<RuntimeDriver>> drivers;
  auto& d = drivers[opts.agent];
  if (!d) d = makeAgentDriver(opts.agent);
  return *d;
}

fs::path crashStateDir(const RunOptions& opts, const CaseId& primary) {
  return opts.workRoot / ("crash-" + sanitize(primary.str()));
}

WorkspaceSnapshot snapshotWorkspace(const fs::path& dir) {
  WorkspaceSnapshot snap;
  if (!fs::exists(dir)) return snap;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto rel = fs::relative(e.path(), dir).generic_string();
    if (rel == kMarkerFile) continue;
    snap[rel] = readFile(e.path());
  }
  return snap;
}

std::map<std::string, int> readEffects(const fs::path& file) {
  std::map<std::string, int> counts;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = Json::parse(line);
      counts[j.value("callId", std::string("?"))]++;
    } catch (...) {
      counts["<unparseable effects line>"]++;
    }
  }
  return counts;
}

std::string reproduceLine(const CaseId& id, const RunOptions& opts) {
  auto keep = fs::temp_directory_path() / ("crashsim-" + sanitize(id.str()));
  // What reproduces it as printed: the environment that changes the agent or plants a fault,
  // and this crashsim binary (crashsim-planted for planted faults) by its path.
  std::string env;
  for (const char* v : {"CRASHSIM_PLANT", "CRASHSIM_AGENT"})
    if (const char* val = std::getenv(v); val && *val) env += fmt::format("{}={} ", v, val);
  const fs::path self = locateCrashsim();
  const std::string exe = self.empty() ? std::string("crashsim") : self.string();
  return fmt::format("{}{} run '{}' --keep {}{}", env, exe, id.str(), keep.string(),
                     opts.reproduceExtra);
}

fs::path defaultWorkRoot(const std::string& mode) {
  const FaultMode* m = findFaultMode(mode);
  if (m && m->storeOnTmpfs() && fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return fs::temp_directory_path();
}

reports::CaseRecord caseRecordOf(const CaseId& id, const RunOptions& opts) {
  reports::CaseRecord rec;
  rec.id = id.str();
  rec.scenario = id.scenario;
  rec.failpoint = id.failpointName();
  rec.hit = id.hit;
  rec.mode = id.mode;
  if (id.recoveryFailpoint) {
    rec.recoveryFailpoint = id.recoveryFailpoint->str();
    rec.recoveryHit = id.recoveryHit.value_or(1);
  }
  if (id.stopKill) {  // the second point of a Stop double fault (reports: K:P12 / K:P13)
    rec.recoveryFailpoint = id.stopKill->str();
    rec.recoveryHit = 1;
  }
  rec.reproduce = reproduceLine(id, opts);
  return rec;
}

namespace {

// The verdict of a case from its checks; the case folder kept (crashsim run --keep, a failure
// with --keep-failures) or removed.
void finishCase(CaseOutcome& out, Checks& c, Phases& ph, const fs::path& dir,
                const RunOptions& opts, std::chrono::steady_clock::time_point started) {
  auto& rec = out.record;
  ph.to("report");
  if (c.m["V9"].reason == "not evaluated") c.na("V9", "not sampled (see --verify-determinism)");
  rec.checks = c.m;
  bool anyFail = false;
  for (const auto& [k, v] : rec.checks) anyFail = anyFail || v.status == "fail";
  rec.verdict = anyFail ? "fail" : "pass";
  if (opts.keepDir || (anyFail && opts.keepFailures)) {
    out.keptAt = dir;
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  rec.durationMs = std::chrono::duration<double, std::milli>(ph.close() - started).count();
}

// Why the case cannot run at all ("" when it can).
std::string startProblem(const CaseId& id, const Reference& ref, const Scenario& sc,
                         const std::string& pathOracleProblem, const FaultMode* mode) {
  if (!ref.problem.empty()) return "reference run failed: " + ref.problem;
  if (!pathOracleProblem.empty()) return "oracle: " + pathOracleProblem;
  // A scenario with a legacy store is swept at its import; its own run is the same as without
  // one (plan.cpp), and its cases at other points would start from a store without the JSONL.
  if (id.isImport() != sc.spec.legacyStore.has_value())
    return sc.spec.legacyStore
               ? "scenario " + sc.id + " starts from a legacy store: its cases are P16/P17"
               : "P16/P17 are cases of a scenario with a legacy store (legacyStore)";
  if (!mode) return "fault mode " + id.mode + " is not available in this build";
  return "";
}

}  // namespace

CaseOutcome runCase(const CaseId& id, const Reference& ref, const RunOptions& opts) {
  const auto started = std::chrono::steady_clock::now();
  CaseOutcome out;
  Checks c;
  auto& rec = out.record;
  rec = caseRecordOf(id, opts);
  Phases ph(rec.phasesMs, "setup", started);

  const fs::path dir =
      opts.keepDir ? *opts.keepDir
                   : opts.workRoot / fmt::format("case-{}-{}", ::getpid(), sanitize(id.str()));
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  // A path-mutation case is judged against the scenario with the generated change as its
  // afterCrash (verdicts/path_mutations.h); the agent still plays the scenario file.
  std::optional<pathmut::Expectation> pathX;
  std::optional<Scenario> judged;
  std::string pathOracleProblem;
  if (id.isPathMutation()) {
    try {
      pathX = pathmut::expect(ref.scenario, id);
      judged = pathmut::judgedScenario(ref.scenario, id, *pathX);
    } catch (const std::exception& e) {
      pathOracleProblem = e.what();
    }
  }
  const Scenario& sc = judged ? *judged : ref.scenario;
  const FaultMode* mode = findFaultMode(id.mode);
  if (auto bad = startProblem(id, ref, sc, pathOracleProblem, mode); !bad.empty()) {
    c.fail("V1", bad);
  } else {
    CaseRun run{id, ref, opts, *mode, driverOf(opts), sc, pathX, dir, dir / "store", dir / "ws",
                c,  rec, {},   ph};
    run.say = [&](std::string s) {
      if (opts.verbose) out.log.push_back(std::move(s));
    };
    mode->run(run);
  }
  finishCase(out, c, ph, dir, opts, started);
  return out;
}

}  // namespace crashsim::harness
