// The JUnit and HTML views of an open sweep (open/open_report.h).
#include "open/open_report.h"

#include <fstream>

#include "crashsim/codes.h"
#include "crashsim/error.h"

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

void writeOpenViews(const std::filesystem::path& dir, const std::string& runtime,
                    std::vector<reports::CaseRecord> cases, double wallSeconds) {
  reports::Report report;
  report.crashsimVersion = std::string(reports::crashsimVersion());
  report.runtime = runtime;
  report.cases = std::move(cases);  // in plan order: scenario, then MQ MA TC TE TR S
  reports::finalizeSummary(report, wallSeconds, 1);
  std::filesystem::create_directories(dir);
  auto put = [&](const char* name, const std::string& text) {
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f)
      throw Error(std::string(code::output_unwritable), "cannot write " + (dir / name).string());
  };
  put("junit.xml", reports::renderJunit(report));
  put("report.html", reports::renderHtml(report));
}

}  // namespace crashsim::harness
