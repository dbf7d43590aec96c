// crashsim/harness/open_sweep.h — `crashsim sweep|run --runtime FILE`: the crash sweep of a
// runtime described by a runtime profile (docs/open-harness.md).
//
// Per scenario a reference run (unarmed, to its end) counts the hits of every open crash point
// (MQ, MA, TC, TE, TR, S: open_driver.h, and a level-1 runtime's own named failpoints from the
// counts it writes to CRASHSIM_HITS_OUT); it must exit 0 with the scenario's expected workspace
// and reach at least one point. Every hit is then one case,
// `<runtime>/<scenario>/<POINT>#<n>/kill`: the run is killed there (SIGKILL to its process group),
// `resume` runs to its end, and O1–O4 judge it (harness/src/verdicts/o*_*.cpp); O5 runs the case a
// second time (the first hit of each point by default; every case with --verify-determinism; none
// with --no-determinism). With --double-faults every primary's resume is killed at each point it
// reaches
// (`…/TE#1/kill+R:MQ#1`), then resumed again.
//
// Exit codes: 0 every case passed, 1 a verdict failed, 2 bad input or a sweep that cannot be
// judged (one line, a stable code): runtime_profile_invalid, open_reference_failed,
// open_no_crash_point, open_selection_empty, open_case_invalid, open_setup_missing,
// open_baseline_invalid.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crashsim::harness {

namespace open_code {
inline constexpr std::string_view reference_failed = "open_reference_failed";
inline constexpr std::string_view no_crash_point = "open_no_crash_point";
inline constexpr std::string_view selection_empty = "open_selection_empty";
inline constexpr std::string_view case_invalid = "open_case_invalid";
inline constexpr std::string_view setup_missing = "open_setup_missing";
inline constexpr std::string_view baseline_invalid = "open_baseline_invalid";
}  // namespace open_code

struct OpenSweepOptions {
  std::filesystem::path runtime;  // the profile
  std::filesystem::path scenarioDir;
  std::vector<std::string> scenarios;  // empty = every scenario of scenarioDir
  // --failpoint: MQ, MA, TC, TE, TR, S or a level-1 runtime's names (empty = all)
  std::vector<std::string> points;
  std::vector<std::string> caseGlobs;  // --case (fnmatch on the case id)
  bool doubleFaults = false;
  bool verifyAll = false, noDeterminism = false;
  bool keepFailures = false;
  // --jobs: cases run at once, each by a worker thread; records still come out in plan order
  int jobs = 1;
  // --out: report.json (report.schema.json's openReport), report.md, junit.xml, report.html
  // (open/open_report.h)
  std::filesystem::path out;
  // --baseline: the known findings {"baselineVersion":1,"findings":[{"case","verdicts":[…],
  // "reason"}]}; the sweep then exits 1 on a failure it does not list or a listed verdict that
  // passes, and 0 when every failure is listed.
  std::filesystem::path baseline;
};

// One case id: `<runtime>/<scenario>/<POINT>#<hit>/kill[+R:<POINT>#<hit>]`; POINT is an open point
// or a named one (isNamedPoint).
struct OpenCaseId {
  std::string runtime, scenario, point;
  int hit = 0;
  std::optional<std::string> resumePoint;
  int resumeHit = 0;
  std::string str() const;
  // Throws crashsim::Error(open_case_invalid) for anything else.
  static OpenCaseId parse(const std::string& text);
};

// crashsim sweep --runtime FILE [--list]: prints the case ids (--list) or runs them.
int openSweepCommand(const OpenSweepOptions& opts, bool listOnly);
// crashsim run CASE --runtime FILE [--keep DIR]: one case, verbose, its directory kept.
int openRunCommand(const std::string& caseText, const OpenSweepOptions& opts,
                   const std::string& keep);

}  // namespace crashsim::harness
