// D3 (verdicts/durable_replace.h) on hand-built crash states: the scenario's data says which
// contents a replaced file may hold, the hand-written ledger facts say which replace is
// acknowledged (durable response) and which dispatched (durable T1). Expected verdicts follow
// from the header's rules, not from a run.
#include <gtest/gtest.h>

#include <fstream>

#include "crashsim/build_paths.h"
#include "crashsim/harness/scenario.h"
#include "test_util.h"
#include "verdicts/durable_replace.h"

using namespace crashsim::harness;
using namespace crashsim::harness::test;
namespace fs = std::filesystem;

namespace {

Scenario findScenario(const std::string& id) {
  return loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / (id + ".json"));
}

void put(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

const std::string kOld = "{\"name\":\"demo\",\"port\":3000}\n";  // write-config-port's seed
const std::string kNew = "{\"name\":\"demo\",\"port\":4000}\n";  // its Write call-2

std::vector<std::string> judge(const std::map<std::string, durable_replace::CallFacts>& facts,
                               const std::optional<std::string>& config) {
  const auto sc = findScenario("write-config-port");
  auto ws = freshDir("crashsim-d3");
  if (config) put(ws / "config.json", *config);
  auto out = durable_replace::problems(sc, facts, ws);
  fs::remove_all(ws);
  return out;
}

}  // namespace

TEST(DurableReplace, UnacknowledgedReplaceMayHoldTheOldOrTheCompleteNewContent) {
  const std::map<std::string, durable_replace::CallFacts> dispatched = {{"call-2", {true, false}}};
  EXPECT_TRUE(judge(dispatched, kOld).empty());
  EXPECT_TRUE(judge(dispatched, kNew).empty());
  // Nothing dispatched: no implementation ran, the file is its seed.
  EXPECT_TRUE(judge({}, kOld).empty());
  EXPECT_FALSE(judge({}, kNew).empty()) << "a replace whose T1 is not durable never ran";
}

TEST(DurableReplace, LostTornOrMissingBytesAreNeverAllowed) {
  const std::map<std::string, durable_replace::CallFacts> dispatched = {{"call-2", {true, false}}};
  auto empty = judge(dispatched, std::string());
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_NE(empty[0].find("lost, torn or garbage"), std::string::npos) << empty[0];
  EXPECT_EQ(judge(dispatched, kNew.substr(0, 12)).size(), 1u);  // a torn prefix of the new bytes
  auto gone = judge(dispatched, std::nullopt);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_NE(gone[0].find("absent"), std::string::npos) << gone[0];
}

TEST(DurableReplace, AnAcknowledgedReplaceMustHoldItsNewContent) {
  const std::map<std::string, durable_replace::CallFacts> acked = {{"call-2", {true, true}}};
  EXPECT_TRUE(judge(acked, kNew).empty());
  auto old = judge(acked, kOld);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_NE(old[0].find("call-2 is acknowledged"), std::string::npos) << old[0];
}

TEST(DurableReplace, AFileTheScenarioCreatesMayBeAbsentUntilItsReplaceIsAcknowledged) {
  // tool-error: call-2 Writes missing.txt, which the seed does not have.
  const auto sc = findScenario("tool-error");
  auto ws = freshDir("crashsim-d3-new");
  EXPECT_TRUE(durable_replace::problems(sc, {{"call-2", {true, false}}}, ws).empty());
  EXPECT_EQ(durable_replace::problems(sc, {{"call-2", {true, true}}}, ws).size(), 1u);
  put(ws / "missing.txt", "");  // the name persisted, its bytes did not
  EXPECT_EQ(durable_replace::problems(sc, {{"call-2", {true, false}}}, ws).size(), 1u);
  fs::remove_all(ws);
}
