// open/open_case.h — one case of the open harness: the reference run of a scenario and a crash
// case judged by O1–O5 (crashsim/harness/open_sweep.h).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "crashsim/harness/open_driver.h"
#include "crashsim/harness/open_sweep.h"
#include "crashsim/harness/scenario.h"

namespace crashsim::harness {

// The reference run of a scenario: the hits per open point of its run process.
struct OpenReference {
  std::map<std::string, int> hits;
  bool interposerLoaded = false;
  double durationMs = 0;
};

// Runs the scenario unarmed under `dir`; throws crashsim::Error(open_reference_failed) when the
// run does not exit 0 or leaves another workspace than the scenario expects.
OpenReference openReference(const OpenDriver& driver, const Scenario& scenario,
                            const std::filesystem::path& dir);

// The hits the resume of `primary` reaches after the primary's crash (the double faults' plan).
std::map<std::string, int> openResumeHits(const OpenDriver& driver, const Scenario& scenario,
                                          const OpenCaseId& primary,
                                          const std::filesystem::path& dir);

struct OpenCaseResult {
  OpenCaseId id;
  std::map<std::string, std::string> verdicts;  // O1..O5 → "" pass | reason | "n/a: why"
  bool failed = false;
  double durationMs = 0;
  std::vector<std::string> log;  // the narrative `crashsim run` prints
};

// Runs the case under `dir` (created); with `determinism` runs it again under dir/again and
// judges O5. Never throws for the runtime's behaviour.
OpenCaseResult runOpenCase(const OpenDriver& driver, const Scenario& scenario, const OpenCaseId& id,
                           const std::filesystem::path& dir, bool determinism);

}  // namespace crashsim::harness
