// crashsim/harness/runtime_driver.h — the runtime-driver seam: what the harness asks of the
// program under test.
//
// A fault mode never spawns the program itself: it asks its driver to seed a scenario's
// workspace, to start one process of it on a case's store and workspace (the agent run, or a host
// start-up that recovers and continues the task), to arm that process at a crash point and kill
// it there, to run it to its end, and to report the crash points it reached. What the verdicts
// then read — the store directory, the effects log beside it, the model inputs — is exported by
// the program into the paths the driver was given. Today the one driver is crashsim-agent's
// (AgentDriver, harness/src/driver/agent_driver.cpp); a runtime driven from outside through a
// model server and a tool server (the open harness) is the next.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/harness/crash_point.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/harness/supervisor.h"

namespace crashsim::harness {

class RuntimeDriver {
 public:
  virtual ~RuntimeDriver() = default;

  // The processes of the program a case starts.
  enum class Process {
    run,      // the scenario's agent run on a fresh (or legacy) store
    recover,  // a host start-up on a crashed store: repair, recovery, continuation to the end
  };

  // The driver's name in messages ("crashsim-agent").
  virtual std::string_view name() const = 0;
  // Writes the scenario's initial workspace into `workspace` (created); the program's diagnostics
  // go to `log`. The result is the seeding process's.
  virtual ChildResult seed(const Scenario& scenario, const std::filesystem::path& workspace,
                           const std::filesystem::path& log) const = 0;
  // The spawn line of `process` on `store` and `workspace` (not started). The caller adds its
  // output files, timeout and environment.
  virtual SpawnSpec spawn(Process process, const Scenario& scenario,
                          const std::filesystem::path& store,
                          const std::filesystem::path& workspace) const = 0;
  // Makes `spec`'s process write, at its end, the hits of every crash point it reached to
  // `hitsFile` (readHits reads them).
  virtual void reportHits(SpawnSpec& spec, const std::filesystem::path& hitsFile) const = 0;
  // Makes `spec`'s process write the inputs it handed the model to `logFile` (JSON lines) and
  // names that file in `spec.modelInputsFile`, where the verdicts read it.
  virtual void logModelInputs(SpawnSpec& spec, const std::filesystem::path& logFile) const = 0;
  // Makes `spec`'s process write every file step its tools take to `traceFile` (JSON lines: the
  // reference run's trace, from which the oracle places the file-step points).
  virtual void traceFileSteps(SpawnSpec& spec, const std::filesystem::path& traceFile) const = 0;
  // Makes `spec`'s process read a clock that starts at `start` (Unix time) and advances one
  // millisecond per reading, so the same run request delivered twice writes the same events.
  virtual void driveClock(SpawnSpec& spec, std::chrono::milliseconds start) const = 0;
  // Makes `spec`'s process simulate a power cut at its armed point instead of dying there: the
  // crash state `seed` selects is materialised from what was durable (the description written to
  // `crashLog`, the acknowledged writes kept in `ackedDir`); `synchronous` ("FULL" | "NORMAL") is
  // the store's PRAGMA synchronous in the process.
  virtual void simulatePowerLoss(SpawnSpec& spec, uint64_t seed,
                                 const std::filesystem::path& crashLog,
                                 const std::filesystem::path& ackedDir,
                                 const std::string& synchronous) const = 0;
  // Starts `spec` armed at (point, hit), waits until the process reports it there and kills it
  // (ChildResult: the report and how it died; never throws).
  virtual ChildResult crashAt(const SpawnSpec& spec, CrashPoint point, int hit) const = 0;
  // Starts `spec` armed at (point, hit) to be stopped there: when the process reports the point it
  // is sent a Stop twice and goes on, cancelled, to its end; with `killAt` (a Stop-path point) it
  // is killed when it reports that point instead.
  virtual ChildResult stopAt(const SpawnSpec& spec, CrashPoint point, int hit,
                             std::optional<CrashPoint> killAt) const = 0;
  // Starts `spec` with a tool that holds and ignores cancellation (announced by `holdFile`), and
  // sends the Stop `lateBy` after the hold began; the process ends by itself (its watchdog).
  virtual ChildResult stopWhileHeld(const SpawnSpec& spec, const std::filesystem::path& holdFile,
                                    std::chrono::milliseconds lateBy) const = 0;
  // Starts every spec unarmed and releases them together at their host start-up (the race of two
  // hosts); `fifo` is the release's rendezvous.
  virtual RaceResult race(const std::vector<SpawnSpec>& specs,
                          const std::filesystem::path& fifo) const = 0;
  // Starts `spec` unarmed and waits for its end (killed after its timeout; never throws).
  virtual ChildResult runToEnd(const SpawnSpec& spec) const = 0;
  // The hits a process wrote (reportHits); nullopt when the file is missing or unreadable.
  virtual std::optional<PointCounts> readHits(const std::filesystem::path& hitsFile) const = 0;
};

// The crashsim-agent driver: `agent` is the instrumented crashsim-agent binary (locateAgent()).
std::unique_ptr<RuntimeDriver> makeAgentDriver(const std::filesystem::path& agent);

}  // namespace crashsim::harness
