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
std::optional<PointCounts> readHits(const fs::path& p) {
  try {
    Json j = Json::parse(readFile(p));
    PointCounts h;
    for (CrashPoint fp : CrashPoint::all()) h[fp] = j.at(fp.str()).get<int>();
    return h;
  } catch (...) {
    return std::nullopt;
  }
}

// "" when `reached` equals `predicted` over `points`; otherwise which failpoint differs.
std::string reachDifference(const PointCounts& predicted, const PointCounts& reached,
                            const std::vector<CrashPoint>& points, const char* what) {
  for (CrashPoint fp : points)
    if (predicted[fp] != reached[fp])
      return fmt::format("{} reached {} {} time(s), the oracle predicts {}", what, fp.name(),
                         reached[fp], predicted[fp]);
  return "";
}

std::string barrierBoundProblem(const PointCounts& p, const PointCounts& reached) {
  using namespace points;
  const int minS = p[P2] + p[P5] + p[P8], minF = 3 * p[P3];
  // Each accepted capture runs at least five git children: the listing L (c.3), the index update
  // (d.2 step 4), write-tree (5), commit-tree (6) and update-ref (7).
  const int minG = 5 * p[P22];
  if (reached[S] >= minS && reached[F] >= minF && reached[G] >= minG) return "";
  return fmt::format(
      "the reference run reached {} store COMMIT barrier(s) S, {} file-step barrier(s) F and {} "
      "git barrier(s) G; its named commits, file replaces and captures alone need at least {}, {} "
      "and {}",
      reached[S], reached[F], reached[G], minS, minF, minG);
}

void checkRecoveryReach(const fs::path& hitsFile, const PointCounts& want, Checks& c) {
  const auto hits = readHits(hitsFile);
  if (!hits) {
    c.fail("V3", "the unarmed recovery wrote no readable failpoint hit counts");
    return;
  }
  if (auto bad = reachDifference(want, *hits, recoveryReachPoints(), "the unarmed recovery");
      !bad.empty())
    c.fail("V3", bad + " (the double faults planned for this case)");
}

}  // namespace crashsim::harness
