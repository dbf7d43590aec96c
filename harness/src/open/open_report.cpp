// The reports of an open sweep (open/open_report.h).
#include "open/open_report.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/harness/sweep.h"
#include "crashsim/open/profile.h"

namespace crashsim::harness {

reports::CaseRecord openCaseRecord(const OpenCaseResult& r, const std::string& reproduce,
                                   std::optional<reports::BaselineEntry> baseline) {
  reports::CaseRecord c;
  c.id = r.id.str();
  c.scenario = r.id.scenario;
  c.failpoint = r.id.point;
  c.hit = r.id.hit;
  c.mode = "kill";
  if (r.id.resumePoint) {
    c.recoveryFailpoint = *r.id.resumePoint;
    c.recoveryHit = r.id.resumeHit;
  }
  for (const auto& [name, reason] : r.verdicts)
    c.checks[name] = {reason.empty() ? "pass" : reason.starts_with("n/a") ? "n/a" : "fail", reason};
  c.verdict = r.failed ? "fail" : "pass";
  c.reproduce = reproduce;
  c.durationMs = r.durationMs;
  c.baseline = std::move(baseline);
  return c;
}

reports::Report openReport(const OpenDriver& driver, const OpenSweepOptions& opts,
                           const std::map<std::string, OpenReference>& references,
                           std::vector<reports::CaseRecord> cases, double wallSeconds,
                           const std::filesystem::path& workRoot) {
  reports::Report report;
  report.crashsimVersion = std::string(reports::crashsimVersion());
  // The SQLite fields stay out of the JSON (openPlatform): the runtime's storage is its own.
  report.platform = describePlatform(workRoot);
  report.runtime = std::string(driver.name());
  report.runtimeLevel = driver.profile().level;
  std::ifstream in(opts.runtime, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in)
    throw Error(std::string(open::kProfileInvalid),
                opts.runtime.string() + ": cannot be read again for its digest");
  report.profileDigest = reports::sha256Digest(bytes.str());
  report.interposerPreloaded = driver.hasInterposer();
  for (const auto& [id, ref] : references)
    report.scenarioRuns[id] = {ref.hits, ref.durationMs, ref.interposerLoaded};
  report.selection.scenarios = opts.scenarios;
  report.selection.failpoints = opts.points;
  report.selection.caseGlobs = opts.caseGlobs;
  report.selection.mode = "kill";
  report.selection.doubleFaults = opts.doubleFaults;
  report.selection.determinism = opts.noDeterminism ? "none" : opts.verifyAll ? "all" : "first-hit";
  report.cases = std::move(cases);  // in plan order: scenario, then MQ MA TC TE TR S
  reports::finalizeSummary(report, wallSeconds, std::max(1, opts.jobs));
  return report;
}

void writeOpenReports(const std::filesystem::path& dir, const reports::Report& report) {
  try {
    reports::writeAll(report, dir);
  } catch (const reports::ReportError& e) {
    throw Error(std::string(code::output_unwritable), e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    throw Error(std::string(code::output_unwritable), e.what());
  }
}

}  // namespace crashsim::harness
