// Coverage: reached hits against the prediction and the barriers' lower bound
// (verdicts/coverage.h).
#include "verdicts/coverage.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// The hit counts an unarmed run wrote (CRASHSIM_HITS_OUT), barriers S and F included; nullopt
// when the file is missing or unreadable (an agent without failpoints, a failed write): never a
// silent zero.
std::optional<std::array<int, kPoints>> readHits(const fs::path& p) {
  try {
    Json j = Json::parse(readFile(p));
    std::array<int, kPoints> h{};
    for (int i = 0; i < kPoints; ++i) h[static_cast<size_t>(i)] = j.at(failpointName(i)).get<int>();
    return h;
  } catch (...) {
    return std::nullopt;
  }
}

// "" when `reached` equals `predicted` over [from, to]; otherwise which failpoint differs.
std::string reachDifference(const std::array<int, 12>& predicted,
                            const std::array<int, kPoints>& reached, int from, int to,
                            const char* what) {
  for (int fp = from; fp <= to; ++fp)
    if (predicted[static_cast<size_t>(fp)] != reached[static_cast<size_t>(fp)])
      return fmt::format("{} reached P{} {} time(s), the oracle predicts {}", what, fp,
                         reached[static_cast<size_t>(fp)], predicted[static_cast<size_t>(fp)]);
  return "";
}

std::string barrierBoundProblem(const std::array<int, 12>& p,
                                const std::array<int, kPoints>& reached) {
  const int minS = p[2] + p[5] + p[8], minF = 3 * p[3];
  if (reached[kBarrierS] >= minS && reached[kBarrierF] >= minF) return "";
  return fmt::format(
      "the reference run reached {} store COMMIT barrier(s) S and {} file-step barrier(s) F; its "
      "named commits and file replaces alone need at least {} and {}",
      reached[kBarrierS], reached[kBarrierF], minS, minF);
}

void checkRecoveryReach(const fs::path& hitsFile, const std::array<int, kPoints>& want, Checks& c) {
  const auto hits = readHits(hitsFile);
  if (!hits) {
    c.fail("V3", "the unarmed recovery wrote no readable failpoint hit counts");
    return;
  }
  std::vector<int> points = {0, 1, 2, 3, 4, 5, 6, 7};  // the continuation's own calls
  points.insert(points.end(), kRecoveryPoints.begin(), kRecoveryPoints.end());
  for (int fp : points) {
    const auto i = static_cast<size_t>(fp);
    if (want[i] != (*hits)[i]) {
      c.fail("V3", fmt::format("the unarmed recovery reached {} {} time(s), the oracle predicts {} "
                               "(the double faults planned for this case)",
                               failpointName(fp), (*hits)[i], want[i]));
      return;
    }
  }
}

}  // namespace crashsim::harness
