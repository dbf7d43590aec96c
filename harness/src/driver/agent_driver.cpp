// The crashsim-agent driver (crashsim/harness/runtime_driver.h): the agent's commands `seed`,
// `run` and `recover`, its failpoint arming (CRASHSIM_ARM through the supervisor) and its hit
// counts (CRASHSIM_HITS_OUT).
#include <fmt/format.h>

#include "crashsim/harness/runtime_driver.h"
#include "verdicts/coverage.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
namespace {

class AgentDriver final : public RuntimeDriver {
 public:
  explicit AgentDriver(fs::path agent) : agent_(std::move(agent)) {}

  std::string_view name() const override { return "crashsim-agent"; }

  ChildResult seed(const Scenario& scenario, const fs::path& workspace,
                   const fs::path& log) const override {
    SpawnSpec s;
    s.exe = agent_;
    s.forkServer = true;
    s.args = {"seed", "--workspace", workspace.string(), "--scenario", scenario.file.string()};
    s.stderrFile = log;
    return harness::runToEnd(s);
  }

  SpawnSpec spawn(Process process, const Scenario& scenario, const fs::path& store,
                  const fs::path& workspace) const override {
    SpawnSpec s;
    s.exe = agent_;
    s.forkServer = true;
    s.args = {process == Process::run ? "run" : "recover",
              "--store",
              store.string(),
              "--workspace",
              workspace.string(),
              "--scenario",
              scenario.file.string()};
    return s;
  }

  void reportHits(SpawnSpec& spec, const fs::path& hitsFile) const override {
    spec.env["CRASHSIM_HITS_OUT"] = hitsFile.string();
  }

  void logModelInputs(SpawnSpec& spec, const fs::path& logFile) const override {
    spec.env["CRASHSIM_MODEL_LOG"] = logFile.string();
    spec.modelInputsFile = logFile;
  }

  void traceFileSteps(SpawnSpec& spec, const fs::path& traceFile) const override {
    spec.env["CRASHSIM_FS_TRACE"] = traceFile.string();
  }

  void simulatePowerLoss(SpawnSpec& spec, uint64_t seed, const fs::path& crashLog,
                         const fs::path& ackedDir, const std::string& synchronous) const override {
    spec.env["CRASHSIM_POWERLOSS"] = "1";
    spec.env["CRASHSIM_POWERLOSS_SEED"] = std::to_string(seed);
    spec.env["CRASHSIM_POWERLOSS_LOG"] = crashLog.string();
    spec.env["CRASHSIM_POWERLOSS_ACKED"] = ackedDir.string();
    spec.env["CRASHSIM_SYNCHRONOUS"] = synchronous;
  }

  void driveClock(SpawnSpec& spec, std::chrono::milliseconds start) const override {
    spec.env["CRASHSIM_CLOCK_START_MS"] = std::to_string(start.count());
  }

  ChildResult crashAt(const SpawnSpec& spec, CrashPoint point, int hit) const override {
    return runArmed(spec, point.str(), hit);
  }

  ChildResult stopAt(const SpawnSpec& spec, CrashPoint point, int hit,
                     std::optional<CrashPoint> killAt) const override {
    std::optional<std::string> killName;
    if (killAt) killName = killAt->str();
    return runStopped(spec, point.str(), hit, killName);
  }

  ChildResult stopWhileHeld(const SpawnSpec& spec, const fs::path& holdFile,
                            std::chrono::milliseconds lateBy) const override {
    return runStoppedWhileHeld(spec, holdFile, lateBy);
  }

  RaceResult race(const std::vector<SpawnSpec>& specs, const fs::path& fifo) const override {
    return runRace(specs, fifo);
  }

  ChildResult runToEnd(const SpawnSpec& spec) const override { return harness::runToEnd(spec); }

  std::optional<PointCounts> readHits(const fs::path& hitsFile) const override {
    return harness::readHits(hitsFile);
  }

 private:
  fs::path agent_;
};

}  // namespace

std::unique_ptr<RuntimeDriver> makeAgentDriver(const fs::path& agent) {
  return std::make_unique<AgentDriver>(agent);
}

}  // namespace crashsim::harness
