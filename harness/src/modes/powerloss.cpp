// The power-loss case's arming: the child's environment, its crash description, the copy of the
// crash state D1 reads (crashsim/harness/powerloss_mode.h).
#include "crashsim/harness/powerloss_mode.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

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

void armPowerloss(SpawnSpec& run, const CaseId& id, const fs::path& caseDir,
                  const std::string& synchronous) {
  run.env["CRASHSIM_POWERLOSS"] = "1";
  run.env["CRASHSIM_POWERLOSS_SEED"] = std::to_string(id.seed.value_or(0));
  run.env["CRASHSIM_POWERLOSS_LOG"] = (caseDir / kPowerlossCrashLog).string();
  run.env["CRASHSIM_POWERLOSS_ACKED"] = (caseDir / kPowerlossAckedDir).string();
  run.env["CRASHSIM_SYNCHRONOUS"] = synchronous;
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
