// Agent children from the fork server (`crashsim-agent serve`) against exec'd ones: the same
// verdict records, the server really in use, the crash budget in the report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "crashsim/build_paths.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/reports/report.h"
#include "test_util.h"

using namespace crashsim::harness;
using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;
namespace reports = crashsim::reports;

namespace {

// The pids of this process's children whose command line is `crashsim-agent serve`.
std::vector<int> serveChildren() {
  std::vector<int> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    int ppid = 0;
    rest >> state >> ppid;
    if (ppid != ::getpid() || state == "Z") continue;
    std::string cmd = slurp(e.path() / "cmdline");
    std::replace(cmd.begin(), cmd.end(), '\0', ' ');
    if (cmd.find("crashsim-agent serve") != std::string::npos) out.push_back(std::stoi(name));
  }
  return out;
}

// `crashsim-agent --version` through the supervisor on a fresh thread (a fresh fork server).
std::pair<ChildResult, std::vector<int>> versionOnFreshThread(const fs::path& out) {
  std::pair<ChildResult, std::vector<int>> result;
  std::thread([&] {
    SpawnSpec s;
    s.exe = agentBinary();
    s.forkServer = true;
    s.args = {"--version"};
    s.stdoutFile = out;
    result.first = runToEnd(s);
    result.second = serveChildren();
  }).join();
  return result;
}

}  // namespace

TEST(Spawn, AgentChildrenComeFromOneServerPerThreadUnlessExecIsChosen) {
  auto d = freshDir("crashsim-spawn-server");
  const size_t before = serveChildren().size();  // servers of this process's other threads
  setSpawnMethod(SpawnMethod::fork_server);
  const auto [viaServer, servers] = versionOnFreshThread(d / "a.out");
  EXPECT_TRUE(viaServer.exited && viaServer.exitCode == 0) << viaServer.describe();
  EXPECT_NE(slurp(d / "a.out").find("crashsim-agent"), std::string::npos) << slurp(d / "a.out");
  EXPECT_EQ(servers.size(), before + 1) << "the child did not come from a `crashsim-agent serve`";
  setSpawnMethod(SpawnMethod::exec);
  const auto [viaExec, none] = versionOnFreshThread(d / "b.out");
  setSpawnMethod(SpawnMethod::fork_server);
  EXPECT_TRUE(viaExec.exited && viaExec.exitCode == 0) << viaExec.describe();
  EXPECT_EQ(slurp(d / "a.out"), slurp(d / "b.out"));
  EXPECT_EQ(none.size(), before) << "--spawn exec started a fork server";
  // The thread's server went with its thread.
  EXPECT_EQ(serveChildren().size(), before);
  fs::remove_all(d);
}

TEST(Spawn, ForkServerChildDeathIsJudgedFromTheNativeStatus) {
  auto d = freshDir("crashsim-spawn-status");
  auto seed =
      sh(agentBinary().string() + " seed --workspace " + (d / "ws").string() + " --scenario " +
         (fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json").string());
  ASSERT_EQ(seed.exitCode, 0) << seed.out;
  SpawnSpec run;
  run.exe = agentBinary();
  run.forkServer = true;
  run.args = {"run",
              "--store",
              (d / "store").string(),
              "--workspace",
              (d / "ws").string(),
              "--scenario",
              (fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json").string()};
  const ChildResult killed = runArmed(run, "P4", 1);
  EXPECT_TRUE(killed.killedBySigkill()) << killed.describe();
  EXPECT_NE(killed.controlLine.find("\"failpoint\":\"P4\""), std::string::npos)
      << killed.controlLine;
  EXPECT_GT(killed.spawnTime.count(), 0);
  EXPECT_LE((killed.spawnTime + killed.killReapTime).count(), killed.elapsed.count());
  // An exit is an exit: an out-of-range option is the agent's usage error, exit 2.
  run.args.push_back("--cancellation-grace-ms");
  run.args.push_back("0");
  const ChildResult usage = runToEnd(run);
  EXPECT_TRUE(usage.exited && usage.exitCode == 2) << usage.describe();
  EXPECT_FALSE(usage.signaled);
  fs::remove_all(d);
}

// A descriptor the harness holds without close-on-exec (one another thread has just opened, or
// has not yet marked, when a spawn forks) must not live on in a child: a fork server lives as
// long as its thread, and a pipe end it kept would leave that pipe's reader waiting for EOF
// forever (Boost.Process's exec-error pipe did, and hung an ASan sweep). Neither an exec'd
// child nor a fork server may hold it.
TEST(Spawn, NoChildOrForkServerInheritsAHarnessDescriptorBeyondFd3) {
  auto d = freshDir("crashsim-spawn-fds");
  constexpr int kLeaky = 77;
  ASSERT_EQ(::dup2(::fileno(stderr), kLeaky), kLeaky);  // dup2: no FD_CLOEXEC on the copy
  SpawnSpec probe;
  probe.exe = "/bin/sh";
  probe.args = {"-c", "if [ -e /proc/$$/fd/77 ]; then echo held; else echo clean; fi"};
  probe.stdoutFile = d / "probe.out";
  const ChildResult r = runToEnd(probe);
  EXPECT_TRUE(r.exited && r.exitCode == 0) << r.describe();
  EXPECT_EQ(slurp(d / "probe.out"), "clean\n") << "an exec'd child kept the harness's fd 77";
  setSpawnMethod(SpawnMethod::fork_server);
  std::vector<std::string> holders;
  std::thread([&] {
    SpawnSpec s;
    s.exe = agentBinary();
    s.forkServer = true;
    s.args = {"--version"};
    const ChildResult v = runToEnd(s);
    EXPECT_TRUE(v.exited && v.exitCode == 0) << v.describe();
    const auto servers = serveChildren();
    EXPECT_FALSE(servers.empty());
    for (int pid : servers)
      if (fs::exists(fs::path("/proc") / std::to_string(pid) / "fd" / std::to_string(kLeaky)))
        holders.push_back(std::to_string(pid));
  }).join();
  ::close(kLeaky);
  EXPECT_TRUE(holders.empty()) << "fork servers holding the harness's fd 77: "
                               << fmt::format("{}", fmt::join(holders, " "));
  fs::remove_all(d);
}

TEST(Spawn, ServeRefusesAnFd3ThatIsNotItsSocket) {
  auto r = sh(agentBinary().string() + " serve 3</dev/null 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_NE(r.out.find("serve: fd 3 is not a SOCK_SEQPACKET socket"), std::string::npos) << r.out;
}

// The acceptance: a sweep with --spawn exec and one with the fork server give identical
// verdict records (kill with double faults over a Bash, a file-tool and a legacy-import
// scenario, and Stop), and the report carries the crash budget.
TEST(Spawn, ExecAndForkServerSweepsGiveIdenticalVerdictRecords) {
  auto d = freshDir("crashsim-spawn-sweep");
  const std::string scenarios =
      " --scenario bash-touch-marker --scenario write-config-port --scenario legacy-import";
  // Every kind of kill case (a first hit of each failpoint and barrier, the double faults after
  // it, the continuation's own kills, the T1-exists probe, the import cases) at its first hit:
  // 152 of the 288 cases, so the test costs half.
  const std::string firstHits = " --case '*/[PSF]*#1/*'";
  // Each sweep: the report folder's mode name, then its selection.
  const std::vector<std::pair<std::string, std::string>> sweeps = {
      {"kill", "kill --double-faults" + scenarios + firstHits},
      {"stop", "stop --scenario write-config-port"}};
  for (const std::string spawn : {"exec", "fork-server"}) {
    for (const auto& [mode, selection] : sweeps) {
      const fs::path out = d / (spawn + "-" + mode);
      auto r = sh(crashsimBinary().string() + " --spawn " + spawn + " sweep --mode " + selection +
                  " --jobs 2 --out " + out.string() + " 2>&1");
      ASSERT_EQ(r.exitCode, 0) << spawn << " " << selection << "\n" << r.out;
      EXPECT_NE(r.out.find("crash budget: "), std::string::npos) << r.out;
    }
  }
  for (const std::string mode : {"kill", "stop"}) {
    const json a = loadJson(d / ("exec-" + mode) / "report.json");
    const json b = loadJson(d / ("fork-server-" + mode) / "report.json");
    ASSERT_GT(a["summary"]["total"].get<int>(), 0);
    EXPECT_EQ(reports::withoutTimingAndPlatform(a).dump(1),
              reports::withoutTimingAndPlatform(b).dump(1))
        << mode;
  }
  // Every millisecond of a case is in exactly one phase; a kill case spends time in each of the
  // crash budget's phases up to the report, and the sums are the summary's.
  const json rep = loadJson(d / "fork-server-kill" / "report.json");
  std::map<std::string, double> sums;
  for (const auto& c : rep["cases"]) {
    double total = 0;
    for (const auto& [phase, ms] : c["phasesMs"].items()) {
      sums[phase] += ms.get<double>();
      if (phase != "determinism") total += ms.get<double>();  // V9's second run: not in durationMs
    }
    EXPECT_NEAR(total, c["durationMs"].get<double>(), 0.05 * c["durationMs"].get<double>() + 0.1)
        << c["id"];
    // A path mutation or a race of two hosts (+H2) starts from its primary's kept crash state: no
    // armed run, no crash state of its own to verify.
    const std::string cid = c["id"].get<std::string>();
    const bool fromCrashState = cid.find("~path:") != std::string::npos || cid.ends_with("+H2");
    for (auto phase : {"spawn", "run", "kill", "verify", "recovery", "v8", "report"})
      if (!fromCrashState ||
          (std::string_view(phase) != "run" && std::string_view(phase) != "verify"))
        EXPECT_GT(c["phasesMs"].value(phase, 0.0), 0.0) << c["id"] << " " << phase;
  }
  const json& budget = rep["summary"]["budget"];
  EXPECT_EQ(budget["workers"], 2);
  EXPECT_EQ(budget["fractionRun"].get<double>(), 1.0);
  for (const auto& [phase, ms] : sums)
    EXPECT_NEAR(budget["phasesMs"][phase].get<double>(), ms, 1) << phase;
  fs::remove_all(d);
}
