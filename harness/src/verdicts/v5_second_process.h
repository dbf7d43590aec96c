// verdicts/v5_second_process.h — V5's second process (`crashsim ledger resolve`), asked once per
// distinct exported ledger in a harness process.
//
// Proves nothing by itself: it is how checkV5 (v5_plan.h) obtains the plan a separate process
// prints for a run's exported ledger. The answer is a function of the exported bytes alone (the
// second process reads nothing but that file), so the plan a fresh process printed for the
// same bytes earlier in this harness process is reused; this process's own plan is still
// computed and compared for every run of every case. The key is the second process's binary and
// the whole export's SHA-256, so a ledger that differs in any byte (another scenario, case, run or
// event) is resolved by a new process. Only a second process that printed a parseable plan is
// remembered; a failure is reported as it happened and asked again next time.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "crashsim/harness/supervisor.h"

namespace crashsim::harness {

// What the second process answered: its plan, or (no plan) the child's outcome and last stderr
// line for the V5 failure; `reused` when an earlier process's plan for these bytes was reused.
struct SecondProcessPlan {
  std::optional<nlohmann::json> plan;
  std::string failure;
  bool reused = false;
};

// The plan `crashsim ledger resolve` prints for `ledgerJsonl` (a run exported one encoded event
// per line). The export is written to `in` either way (a kept case folder can be replayed); on a
// first sight of these bytes `crashsim` runs with stdout to `outFile`, stderr to `errFile`.
// Thread-safe: the sweep's workers share one memory of answers.
SecondProcessPlan secondProcessPlan(const std::string& ledgerJsonl, const std::filesystem::path& in,
                                    const std::filesystem::path& outFile,
                                    const std::filesystem::path& errFile,
                                    const std::filesystem::path& crashsim);

// How many second-process answers this harness process has reused and asked for (tests).
struct SecondProcessStats {
  size_t reused = 0, spawned = 0;
};
SecondProcessStats secondProcessStats();

}  // namespace crashsim::harness
