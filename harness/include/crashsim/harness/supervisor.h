// crashsim/harness/supervisor.h — spawning, arming, killing and reaping crashsim-agent.
//
// Children are exec'd with posix_spawn and keep fds 0–3 only (stdin /dev/null, stdout, stderr,
// and the control pipe): a descriptor any harness thread holds, or has not yet marked
// close-on-exec, never lives on in a child. The control pipe is created O_CLOEXEC in the parent;
// only the child being spawned gets its write end, dup2'ed to fd 3 and announced as
// CRASHSIM_CONTROL_FD=3, so parallel workers never leak each other's pipes. Death is judged from
// the native wait status (WIFSIGNALED && WTERMSIG == SIGKILL), which tells "exit 9" from
// "killed by signal 9". Every outcome is reported as data — a child that exits, hangs or reports
// the wrong failpoint never throws out of the supervisor, and a stuck fork server fails the
// spawn that waited on it instead of hanging the sweep.
//
// Children of crashsim-agent and crashsim (SpawnSpec::forkServer) come by default from a fork
// server: each harness thread starts one `<exe> serve` per exe (crashsim/fork_server.h) on first
// use and asks it over a socket for a forked child with the spec's argv, environment,
// stdout/stderr and control pipe — what exec would give it, without paying exec, dynamic loading
// and start-up per child. The server is
// the child's parent: the harness kills the child by pid (valid until reaped) and asks the server
// to reap it, which returns the native wait status. `--spawn exec` (setSpawnMethod) execs every
// child instead, for platforms or runtimes where fork is not safe.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace crashsim::harness {

struct SpawnSpec {
  std::filesystem::path exe;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;        // added to (and overriding) the parent environment
  std::filesystem::path stdoutFile, stderrFile;  // empty = /dev/null
  // Where the process logs the model's inputs (RuntimeDriver::logModelInputs); empty = nowhere.
  std::filesystem::path modelInputsFile;
  std::chrono::milliseconds timeout{20000};
  // The exe is crashsim-agent or crashsim, which serve forks (crashsim/fork_server.h): the child
  // comes from this thread's `<exe> serve` unless the spawn method is exec.
  bool forkServer = false;
  // A kill of this child also judges the descendants it leaves running (ChildResult::survivors,
  // workspace-continuity-contract.md i.3 H5: set for the agents of Phase 4 scenarios).
  bool watchDescendants = false;
};

enum class SpawnMethod { exec, fork_server };
// How agent children are spawned, for the whole process (default fork_server).
void setSpawnMethod(SpawnMethod m);
SpawnMethod spawnMethod();

struct ChildResult {
  bool spawned = false;
  bool timedOut = false;
  bool exited = false;  // WIFEXITED
  int exitCode = -1;
  bool signaled = false;  // WIFSIGNALED
  int signal = 0;
  std::string controlLine;        // armed runs: the line the child wrote (without newline)
  std::string secondControlLine;  // stopped runs with a kill point: the Stop-path failpoint's
  std::string error;              // spawn/IO problem, empty when none
  std::chrono::microseconds elapsed{0};       // spawn to reaped
  std::chrono::microseconds spawnTime{0};     // until the child's pid was known
  std::chrono::microseconds killReapTime{0};  // the SIGKILL (if any) and the reaping
  bool held = false;                          // runStoppedWhileHeld: the tool announced it holds
  double stopSentAtMs = 0;  // runStoppedWhileHeld: wall-clock Unix ms (floor) just before the Stop
  // A SIGKILLed child with SpawnSpec::watchDescendants: the descendants it had running that
  // outlived it (then SIGKILLed with their process groups), one line each
  // (workspace-continuity-contract.md i.3 H5, driver/descendants.h).
  std::vector<std::string> survivors;
  bool killedBySigkill() const { return signaled && signal == 9; }
  std::string describe() const;  // "exited with code 3" | "killed by signal 9" | "timed out"
};

// Spawns armed at (failpoint, hit) (CRASHSIM_ARM), waits for the control record (or EOF /
// timeout), then SIGKILLs and reaps. The control record is returned verbatim. A power-loss
// child's record carries "powerloss":true: it then materialises its crash state and raises
// SIGKILL itself, so the supervisor waits for it to die (until the timeout) before reaping.
ChildResult runArmed(SpawnSpec spec, const std::string& failpoint, int hit);

// Spawns armed at (failpoint, hit) in stop mode (CRASHSIM_FAILPOINT_MODE=stop): when the child
// reports the point it is sent a Stop twice, SIGINT then SIGTERM (a real signal; the second must
// change nothing), and resumes from that point once it accepted the Stop. Without `killAt` the
// child is left to terminate by itself (SIGKILL + failure after the timeout); with `killAt`
// ("P12" / "P13", CRASHSIM_ARM_AFTER_STOP) it is SIGKILLed when it reports that failpoint.
ChildResult runStopped(SpawnSpec spec, const std::string& failpoint, int hit,
                       const std::optional<std::string>& killAt);

// Spawns unarmed with CRASHSIM_TOOL_HOLD=`holdFile` (a Bash command that honours it ignores
// SIGTERM, creates the file and keeps running), waits for the file, then `lateBy` more, and
// sends the Stop twice (SIGINT, SIGTERM); the child is left to terminate by itself (SIGKILL +
// failure after the timeout). No file before the child exits or the timeout: `held` false.
ChildResult runStoppedWhileHeld(SpawnSpec spec, const std::filesystem::path& holdFile,
                                std::chrono::milliseconds lateBy);

// Spawns unarmed and waits for it to exit (SIGKILL + failure after the timeout).
ChildResult runToEnd(SpawnSpec spec);

// The race of two hosts: spawns every spec unarmed with CRASHSIM_RACE_BARRIER=`fifo` (created
// here, a FIFO), waits until each reported the barrier on its control pipe
// ({"barrier":"race",…}, crashsim/failpoints.h awaitRaceBarrier), then releases them all with one
// write and waits for each to exit (each its own spec.timeout from the release; SIGKILL and a
// timeout after). A child that exits or hangs before the barrier does not hold the others: they
// are released when the last report came or could not come. `wall` times the whole race (its
// spawn and kill times the children's sums), for the crash budget.
struct RaceResult {
  std::vector<ChildResult> children;  // in spec order
  std::vector<bool> atBarrier;        // each reported the barrier
  ChildResult wall;
};
RaceResult runRace(std::vector<SpawnSpec> specs, const std::filesystem::path& fifo);

// The crashsim-agent binary: $CRASHSIM_AGENT, else <build>/runtime/crashsim-agent relative to
// this executable (<build>/harness/crashsim → ../runtime/crashsim-agent), else next to it.
std::filesystem::path locateAgent();

// The crashsim binary for helper processes: this executable when it is crashsim (or
// crashsim-planted), else <build>/harness/crashsim next to the agent; empty when neither exists.
std::filesystem::path locateCrashsim();

}  // namespace crashsim::harness
