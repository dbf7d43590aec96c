// The power-loss case's arming: the child's environment, its crash description, the copy of the
// crash state D1 reads (crashsim/harness/powerloss_mode.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "crashsim/harness/powerloss_mode.h"
#include "modes/case_run.h"
#include "modes/state_seed.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::vector<uint64_t> powerlossSeeds(const CaseId& primary, uint64_t sweepSeed, int states) {
  // Kept below 10^6 so case ids stay short. Consecutive seeds select consecutive crash kinds
  // (kindForSeed = seed % 4).
  const uint64_t base = (stateSeedHash("", primary, sweepSeed) % 250000) * 4;
  std::vector<uint64_t> seeds;
  for (int i = 0; i < states; ++i) seeds.push_back(base + static_cast<uint64_t>(i));
  return seeds;
}

void armPowerloss(const RuntimeDriver& driver, SpawnSpec& run, const CaseId& id,
                  const fs::path& caseDir, const std::string& synchronous) {
  driver.simulatePowerLoss(run, id.seed.value_or(0), caseDir / kPowerlossCrashLog,
                           caseDir / kPowerlossAckedDir, synchronous);
}

std::string powerlossCrashProblem(const CaseId& id, const fs::path& caseDir) {
  const fs::path log = caseDir / kPowerlossCrashLog;
  if (!fs::exists(log)) return "the power-loss child wrote no crash description " + log.string();
  Json j;
  try {
    j = Json::parse(readFile(log));
  } catch (const std::exception& e) {
    return "unparseable crash description " + log.string() + ": " + e.what();
  }
  if (j.contains("error"))
    return "materialising the crash state failed: " + j["error"].get<std::string>();
  if (!j.contains("kind") || j.value("seed", uint64_t{0}) != id.seed.value_or(0))
    return fmt::format("crash description is not for seed {}: {}", id.seed.value_or(0),
                       j.dump().substr(0, 200));
  return "";
}

void keepPowerlossCrashCopy(const fs::path& store, const fs::path& caseDir) {
  const fs::path copy = caseDir / kPowerlossCrashCopyDir;
  fs::remove_all(copy);
  fs::create_directories(copy);
  for (const char* name : kStoreDbFiles)
    if (fs::exists(store / name)) fs::copy_file(store / name, copy / name);
}

}  // namespace crashsim::harness

namespace crashsim::harness {
namespace {

// A power cut at the point: the power-loss VFS drops, keeps a seeded subset of, or tears what the
// OS had not synced (crashsim/powerloss.h); then the kill's checks and D1–D3
// (verdicts/d1_d2_powerloss.h, verdicts/durable_replace.h).
class PowerlossMode final : public FaultMode {
 public:
  std::string_view name() const override { return "powerloss"; }
  bool seeded() const override { return true; }
  bool crashesAtBarriers() const override { return true; }
  bool dropsUnsyncedWrites() const override { return true; }
  // The recovery kill is a process kill: under --mode powerloss it would be a plain kill wearing
  // a power-loss label (D1/D2 would judge nothing). Refused until the recovery runs over the
  // power-loss VFS as well.
  std::string doubleFaultRefusal() const override {
    return "--double-faults is kill mode only: the recovery kill is a process kill, not a power "
           "cut";
  }
  std::vector<uint64_t> seeds(const CaseId& id, uint64_t sweepSeed, int states) const override {
    return powerlossSeeds(id, sweepSeed, states);
  }
  void run(CaseRun& r) const override { runCrashCase(r); }
  std::vector<std::string_view> verdicts() const override {
    return verdictsWith({"D1", "D2", "D3"});
  }
};

}  // namespace

const FaultMode& powerlossMode() {
  static const PowerlossMode mode;
  return mode;
}

}  // namespace crashsim::harness
