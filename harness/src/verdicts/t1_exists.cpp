// The T1-exists probe's judgement (verdicts/t1_exists.h).
#include "verdicts/t1_exists.h"

#include <fmt/format.h>

#include "verdicts/observed_store.h"
#include "verdicts/v8_recovery.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

std::vector<std::string> t1ExistsProblems(const T1ExistsRun& r) {
  std::vector<std::string> out;
  if (!r.second.exited)
    out.push_back("the second delivery did not end by itself: " + r.second.describe());
  if (r.effectsAfterSecond != r.effectsAtKill)
    out.push_back(
        fmt::format("{} ran in the second delivery (effects log: {} line(s) after the "
                    "kill, {} after): T1 returned created:false",
                    r.callId, r.effectsAtKill.size(), r.effectsAfterSecond.size()));
  if (!r.secondHits) {
    out.push_back("the second delivery wrote no readable failpoint hit counts");
  } else {
    const auto& h = *r.secondHits;
    if (h[points::P1] != static_cast<int>(r.callIndex) + 1)
      out.push_back(
          fmt::format("the second delivery reached P1 {} time(s); re-preparing the "
                      "calls up to {} reaches it {}",
                      h[points::P1], r.callId, r.callIndex + 1));
    for (CrashPoint fp : pointRange(points::P2, points::P6))
      if (h[fp] != 0)
        out.push_back(
            fmt::format("the second delivery passed T1 of {} (reached {} {} time(s)): "
                        "T1 said the operation already exists, its implementation must "
                        "not run (f.4)",
                        r.callId, fp.name(), h[fp]));
  }
  if (r.responseAfterSecond)
    out.push_back(r.callId + " has a function_response after the second delivery: a result was " +
                  "published for an operation T1 said was already claimed");
  if (!r.recovery.exited || r.recovery.exitCode != 0)
    out.push_back("recovery after the second delivery: " + r.recovery.describe());
  else if (auto bad = parkProblem(r.recoverStdout, std::nullopt); !bad.empty())
    out.push_back("recovery after the second delivery: " + bad);
  if (r.effectsAfterRecovery != r.effectsAtKill)
    out.push_back("recovery ran a tool after the second delivery (effects log changed)");
  return out;
}

bool ledgerHoldsResponse(const fs::path& storeDir, const std::string& callId) {
  for (const auto& run : observed::runs(storeDir))
    for (const auto& e : observed::runEvents(storeDir, run.runId)) {
      const auto& p = e.payload;
      if (!p.contains("content") || !p["content"].is_object()) continue;
      const auto& content = p["content"];
      if (content.value("kind", "") == "function_response" && content.value("id", "") == callId)
        return true;
    }
  return false;
}

}  // namespace crashsim::harness
