// V5's second process, once per distinct exported ledger (verdicts/v5_second_process.h).
#include "verdicts/v5_second_process.h"

#include <fstream>
#include <mutex>
#include <unordered_map>

#include "crashsim/hashing.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// The answers by the export's SHA-256. Bounded: dropped as a whole past kMaxAnswers (a sweep's
// distinct ledgers number in the thousands; each plan is a few KB).
constexpr size_t kMaxAnswers = 16384;

struct Answers {
  std::mutex mu;
  std::unordered_map<std::string, Json> plans;
  SecondProcessStats stats;
};

Answers& answers() {
  static Answers a;
  return a;
}

}  // namespace

SecondProcessPlan secondProcessPlan(const std::string& ledgerJsonl, const fs::path& in,
                                    const fs::path& outFile, const fs::path& errFile,
                                    const fs::path& crashsim) {
  {
    std::ofstream f(in, std::ios::binary);
    f << ledgerJsonl;
  }
  const std::string key = crashsim.string() + "\n" + sha256Hex(ledgerJsonl);
  Answers& a = answers();
  {
    std::lock_guard lk(a.mu);
    if (auto it = a.plans.find(key); it != a.plans.end()) {
      ++a.stats.reused;
      return {it->second, {}, true};
    }
    ++a.stats.spawned;
  }
  SpawnSpec spec;
  spec.exe = crashsim;
  spec.forkServer = true;
  spec.args = {"ledger", "resolve", in.string()};
  spec.stdoutFile = outFile;
  spec.stderrFile = errFile;
  auto r = runToEnd(spec);
  SecondProcessPlan out;
  try {
    out.plan = Json::parse(readFile(outFile)).at("plan");
  } catch (const std::exception&) {
    out.failure = r.describe() + ": " + lastLine(errFile);
    return out;
  }
  std::lock_guard lk(a.mu);
  if (a.plans.size() >= kMaxAnswers) a.plans.clear();
  a.plans.emplace(key, *out.plan);
  return out;
}

SecondProcessStats secondProcessStats() {
  std::lock_guard lk(answers().mu);
  return answers().stats;
}

}  // namespace crashsim::harness
