// V5: the plan in two processes, and read-only planning (verdicts/v5_plan.h).
#include "verdicts/v5_plan.h"

#include <fmt/format.h>

#include <fstream>

#include "crashsim/continuation.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/resume_plan.h"
#include "verdicts/observed_store.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// V5 over every run of an open store: the plan the harness computes (read through the store)
// equals the plan a separate process prints for the run exported as JSON (`crashsim ledger
// resolve`), and planning — Phase 0 and the store-reading Phase 1 planner — leaves every
// table of the store unchanged (observed::tableDigests, read outside the runtime).
void checkV5(RuntimeStore& store, const fs::path& storeDir, const fs::path& work,
             const fs::path& crashsim, Checks& c) {
  const auto tables0 = observed::tableDigests(storeDir);
  for (const auto& h : store.listRuns()) {
    auto events = eventsOf(store, h);
    const Json mine = toJson(buildResumePlan(events), events);
    if (crashsim.empty()) continue;
    const fs::path in = work / "v5-ledger.jsonl", outFile = work / "v5-plan.json";
    {
      std::ofstream f(in, std::ios::binary);
      for (const auto& e : events) f << encodeRuntimeEvent(e) << "\n";
    }
    SpawnSpec spec;
    spec.exe = crashsim;
    spec.forkServer = true;
    spec.args = {"ledger", "resolve", in.string()};
    spec.stdoutFile = outFile;
    spec.stderrFile = work / "v5.stderr";
    auto r = runToEnd(spec);
    Json theirs;
    try {
      theirs = Json::parse(readFile(outFile)).at("plan");
    } catch (const std::exception&) {
      c.fail("V5", fmt::format("run {}: crashsim ledger resolve {}: {}", h.runId, r.describe(),
                               lastLine(spec.stderrFile)));
      return;
    }
    if (theirs != mine) {
      c.fail("V5", fmt::format("run {}: the plan differs between this process and `crashsim "
                               "ledger resolve` (disposition {} vs {})",
                               h.runId, mine.value("disposition", "?"),
                               theirs.value("disposition", "?")));
      return;
    }
  }
  ContinuationHost host;  // the store-reading Phase 1 planner (e.1/e.2) must be read-only
  host.enabled = true;
  host.inspector = [] {
    SafetyFacts f;
    f.backgroundOperationsSettled = true;
    return f;
  };
  try {
    (void)planLatestContinuation(store, std::nullopt, host);
  } catch (const std::exception&) {
    // A refusal is a plan outcome; only a write to the store is a V5 failure.
  }
  if (auto t = observed::firstChangedTable(tables0, observed::tableDigests(storeDir)); !t.empty()) {
    c.fail("V5", "planning changed table " + t);
    return;
  }
  c.pass("V5");
}

}  // namespace crashsim::harness
