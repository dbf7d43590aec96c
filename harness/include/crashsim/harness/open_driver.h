// crashsim/harness/open_driver.h — the open harness's driver (docs/open-harness.md, protocol
// sections 3–5): drives a runtime crashsim did not build, described by a runtime profile.
//
// For one case the driver seeds the workspace from the scenario, serves the scenario's model
// in-process (crashsim::open::ModelServer, a fresh port per case) and hands the runtime the tool
// server's command line ({toolServerJson}: `env -u LD_PRELOAD crashsim-tool-server …`, never
// preloaded), runs the profile's run or resume command in its own process group with the
// barrier interposer preloaded, and kills the whole group with SIGKILL at the armed crash point:
//   MQ#n  the n-th model request was received (and logged), before its answer — in the model
//         server's thread, so the runtime never sees the answer;
//   MA#n  the n-th answer was fully written;
//   TC#n, TE#n, TR#n  the tool server's points (crashsim/open/tool_points.h), reported on the
//         case's control file; TR kills at the runtime's next request after the result;
//   S#n   the n-th durability barrier of the runtime's process tree (the interposer);
//   <NAME>#n  (a level-1 profile only) the n-th hit of the runtime's own named failpoint NAME,
//         armed with CRASHSIM_ARM=NAME:n and reported on the control file like a barrier; the
//         runtime writes its hit counts to CRASHSIM_HITS_OUT when it ends unarmed.
// The hits are counted per process of the runtime (run, or resume), from 1.
//
// Why not the RuntimeDriver interface (runtime_driver.h): that seam is shaped by crashsim-agent —
// a store directory, Stop delivery, host races, a fork server, the agent's hits file that names
// every row of kCrashPoints. A level-0 runtime has none of them; what it has (a model server
// and a tool server that live with the case, a process group) does not fit a SpawnSpec. The
// open points are their own table (kOpenPoints) for the same reason: the agent's hits file and
// the coverage verdict read every row of kCrashPoints.
#pragma once

#include <sys/types.h>

#include <array>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "crashsim/harness/scenario.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/open/profile.h"

namespace crashsim::harness {

// The open harness's crash points, in the order cases sort by.
inline constexpr std::array<std::string_view, 6> kOpenPoints{"MQ", "MA", "TC", "TE", "TR", "S"};
bool isOpenPoint(std::string_view name);
// A name a level-1 runtime may give its own failpoint: a letter, then at most 31 letters, digits,
// '_' or '-' (safe in a shell word, a file name and a case id), and none of kOpenPoints.
bool isNamedPoint(std::string_view name);

// One case's directory and the files in it.
struct OpenPaths {
  // resent: the tool server's finished calls sent again and answered without running
  // answers: every result the tool server gave ({"callId","text"}, crashsim/open/tool_server.h)
  std::filesystem::path dir, workspace, stateDir, effects, resent, answers, modelLog;
  explicit OpenPaths(const std::filesystem::path& caseDir);
  // The per-process files of process `tag` ("run", "resume", "resume2").
  std::filesystem::path control(const std::string& tag) const { return dir / (tag + ".control"); }
  std::filesystem::path toolCounter(const std::string& tag) const { return dir / (tag + ".tools"); }
  std::filesystem::path barriers(const std::string& tag) const { return dir / (tag + ".barriers"); }
  std::filesystem::path namedHits(const std::string& tag) const { return dir / (tag + ".named"); }
  std::filesystem::path out(const std::string& tag) const { return dir / (tag + ".out"); }
  std::filesystem::path err(const std::string& tag) const { return dir / (tag + ".err"); }
};

// Where a process is armed: point empty = unarmed.
struct OpenArm {
  std::string point;
  int hit = 0;
};

// How one process of the runtime ended, and what it reached.
struct OpenProcessResult {
  ChildResult child;         // exit status, signal, timeout (supervisor.h's record)
  bool reached = false;      // the armed point was reached (and the group was killed there)
  std::string controlLine;   // the report (tool server, interposer) or the model server's note
  pid_t reporter = 0;        // the process that reported (0: the harness's model server)
  bool groupGone = true;     // no process of the runtime's group outlived the kill
  bool reporterGone = true;  // the reporting process did not outlive the kill
  std::map<std::string, int> hits;  // kOpenPoints (and a level-1 runtime's names) → hits reached
  // A level-1 runtime that ended unarmed without valid named counts (CRASHSIM_HITS_OUT missing,
  // not an object of names to counts, or a name that is not isNamedPoint): why; "" otherwise.
  std::string namedHitsProblem;
  bool interposerLoaded = false;  // some process of the tree loaded the interposer
  int modelRequestsAtEnd = 0;     // the model log's requests when the process ended
};

class OpenCaseModel;  // the model server of one case (open_driver.cpp)

class OpenDriver {
 public:
  // `toolServer`: the crashsim-tool-server binary; `interposer`: the preload library (empty =
  // none: S is then never counted, and the report says so).
  OpenDriver(open::RuntimeProfile profile, std::filesystem::path toolServer,
             std::filesystem::path interposer);
  ~OpenDriver();
  const open::RuntimeProfile& profile() const { return profile_; }
  std::string_view name() const { return profile_.name; }
  bool hasInterposer() const { return !interposer_.empty(); }

  // Starts a case: creates its directory (workspace seeded with the scenario's files, an empty
  // state directory) and its model server. Throws std::runtime_error when it cannot.
  std::unique_ptr<OpenCaseModel> startCase(const Scenario& scenario, const OpenPaths& paths) const;
  // Runs the profile's `run` (resume = false) or `resume` command for the case, armed at `arm`,
  // until it ends, its limit passes (killed, timedOut) or the armed point is reached (the group
  // is killed). Never throws for the runtime's behaviour.
  OpenProcessResult runProcess(bool resume, const Scenario& scenario, const OpenPaths& paths,
                               OpenCaseModel& model, const OpenArm& arm,
                               const std::string& tag) const;

 private:
  open::RuntimeProfile profile_;
  std::filesystem::path toolServer_, interposer_;
};

// The case's model server (its findings and log belong to the case).
class OpenCaseModel {
 public:
  virtual ~OpenCaseModel() = default;
  virtual std::string baseUrl() const = 0;
  virtual size_t requestCount() const = 0;
};

// crashsim-tool-server and the interposer beside this executable (<build>/harness/crashsim →
// <build>/open/…); $CRASHSIM_TOOL_SERVER / $CRASHSIM_INTERPOSER override. Empty when missing.
std::filesystem::path locateToolServer();
std::filesystem::path locateInterposer();

}  // namespace crashsim::harness
