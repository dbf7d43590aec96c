// "The harness catches bugs": sweeps against the instrumented runtime with a planted fault
// (CRASHSIM_PLANT, crashsim/plant.h — compiled only into the instrumented build) must report
// a failed verdict with the right V-number.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// True when some runtime source consults the plant (planted("<name>")).
bool plantWired(const std::string& name) {
  for (const auto& e :
       fs::recursive_directory_iterator(fs::path(CRASHSIM_SOURCE_DIR) / "runtime")) {
    if (!e.is_regular_file()) continue;
    auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".h") continue;
    if (slurp(e.path()).find("planted(\"" + name + "\")") != std::string::npos) return true;
  }
  return false;
}

// Runs a sweep with the plant and returns the set of failed checks over all cases.
std::set<std::string> failedChecks(const std::string& plant, const std::string& args,
                                   int* exitCode) {
  auto d = freshDir("crashsim-plant-" + plant);
  auto r = sh("CRASHSIM_PLANT=" + plant + " " + plantedBinary().string() + " sweep --jobs 2 " +
              args + " --out " + (d / "out").string() + " 2>/dev/null");
  *exitCode = r.exitCode;
  std::set<std::string> failed;
  if (fs::exists(d / "out" / "report.json")) {
    auto rep = json::parse(slurp(d / "out" / "report.json"));
    for (const auto& c : rep["cases"])
      for (auto& [k, v] : c["checks"].items())
        if (v == "fail") failed.insert(k);
  }
  fs::remove_all(d);
  return failed;
}

void expectCaught(const std::string& plant, const std::string& args, const std::string& check) {
  ASSERT_TRUE(plantWired(plant)) << "plant " << plant << " is not consulted by the runtime";
  int rc = -1;
  auto failed = failedChecks(plant, args, &rc);
  EXPECT_EQ(rc, 1) << "a planted fault must make the sweep exit 1";
  EXPECT_TRUE(failed.count(check)) << plant << " must fail " << check;
}

}  // namespace

TEST(PlantedFault, ResolverCallingDispatchWithoutResponseCompletedFailsV4) {
  expectCaught("resolver_completed_dispatch", "--scenario write-config-port --failpoint P4", "V4");
}

TEST(PlantedFault, T2SkippingTheOperationUpdateFailsV6) {
  expectCaught("t2_skip_operation_update", "--scenario write-config-port --failpoint P6", "V6");
}

TEST(PlantedFault, RepairWritingTheHeaderBeforeTheFactFailsV7) {
  expectCaught("repair_header_first", "--scenario bash-touch-marker --failpoint P2 --double-faults",
               "V7");
}

TEST(PlantedFault, ToolRunningAgainAfterRecoveryFailsV8) {
  expectCaught("tool_reruns", "--scenario write-config-port --failpoint P6", "V8");
}

// Tool file effects go through the power-loss file model: a rename that no directory fsync made
// durable is reverted by the power cut, so the completed Write's file is gone after recovery.
// The same plant is invisible to a kill sweep, which is why --mode powerloss exists.
TEST(PlantedFault, ToolRenameNeverMadeDurableFailsV8UnderPowerLossOnly) {
  expectCaught("tool_skips_dir_fsync",
               "--scenario write-config-port --failpoint P6 --mode powerloss --states 2", "V8");
  int rc = -1;
  auto failed =
      failedChecks("tool_skips_dir_fsync", "--scenario write-config-port --failpoint P6", &rc);
  EXPECT_EQ(rc, 0) << "a process kill keeps the un-fsynced rename";
  EXPECT_TRUE(failed.empty());
}

TEST(PlantedFault, UnplantedSweepOfTheSameCasesPasses) {
  int rc = -1;
  auto failed =
      failedChecks("none", "--scenario write-config-port --failpoint P4 --failpoint P6", &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(failed.empty());
}
