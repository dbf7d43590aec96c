// The race of two hosts (issue #44 §3): the "+H2" case id, its plan, and H1
// (harness/src/verdicts/h1_race.h) judged on hand-built racers and stores — each bad input names
// the bug that produces it, next to the good race it differs from. The planted-fault tests
// (harness_planted_fault_test) prove H1 end to end.
#include <gtest/gtest.h>

#include <algorithm>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/harness/plan.h"
#include "crashsim/harness/scenario.h"
#include "verdicts/h1_race.h"

namespace code = crashsim::code;
namespace harness = crashsim::harness;
using namespace crashsim::harness;
using namespace crashsim::harness::points;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kClaim = "claim-s-2";

// A start-up report: `work` adds what a recovering host writes (a run repaired, a bundle, a
// continuation); without it the host found nothing to do and parked with `reasons`.
std::string report(bool work, std::vector<std::string> reasons = {},
                   const json& reconcile = json::array()) {
  json r{{"claimRepair", {{"claims", json::array()}, {"skippedSessions", json::array()}}},
         {"reconcile", {{"operations", reconcile}}},
         {"startupRepair", {{"dryRun", false}, {"runs", json::array()}}},
         {"plans", json::array()},
         {"continuation", nullptr}};
  if (work) {
    r["startupRepair"]["runs"].push_back({{"runId", "run-s-1"}, {"action", "recover_terminal"}});
    r["continuation"] = {{"status", "completed"}};
    r["plan"] = {{"decision", "continue"}, {"rejectionReasons", json::array()}};
  } else {
    r["plan"] = {{"decision", "park"}, {"rejectionReasons", reasons}};
  }
  return r.dump() + "\n";
}

std::string refusal(const std::string& code = std::string(code::host_already_active)) {
  return json{{"error", {{"code", code}, {"message", "…"}}}}.dump() + "\n";
}

race::Host host(const std::string& name, int exitCode, std::string out, bool talked = false) {
  race::Host h;
  h.name = name;
  h.atBarrier = true;
  h.exited = true;
  h.exitCode = exitCode;
  h.describe = "exited with code " + std::to_string(exitCode);
  h.stdoutText = std::move(out);
  if (talked) h.modelLog = "{\"step\":1}\n";
  h.hits = PointCounts{};
  return h;
}

json claimLine(const std::string& result) {
  return {{"event", "continuation_claim"}, {"claimId", kClaim}, {"result", result}};
}

// The store after one host recovered a crash state that continues: one claim, its continuation
// run begun by its runtime_admission start, the call ran once.
race::Facts recovered() {
  race::Facts f;
  observed::ClaimBoundaryRow cl;
  cl.claimId = kClaim;
  cl.boundaryDigest = "sha256:b";
  cl.startKind = std::string(code::runtime_admission);
  f.claims.push_back(cl);
  f.runs.push_back({"s", "run-s-1", "t1", "failed", json::object()});
  f.runs.push_back(
      {"s",
       "run-s-2",
       "t2",
       "completed",
       {{"continuationSource", {{"claimId", kClaim}, {"boundaryDigest", "sha256:b"}}}}});
  f.startProvenance["run-s-2"] = std::string(code::runtime_admission);
  f.effects["call-1"] = 1;
  f.lifecycle.push_back(claimLine(std::string(code::acquired)));
  return f;
}

const race::Facts kCrashed{};  // the crash state: no claim, nothing logged
const race::Expectation kContinues{true};

std::string joined(const race::Judgement& j) {
  std::string s;
  for (const auto& p : j.problems) s += p + "\n";
  return s;
}

bool judgementMentions(const race::Judgement& j, const std::string& text) {
  return std::any_of(j.problems.begin(), j.problems.end(),
                     [&](const std::string& p) { return p.find(text) != std::string::npos; });
}

}  // namespace

TEST(RaceCaseId, PrintsParsesAndSortsAfterItsPrimary) {
  const CaseId id = parseCaseId("write-config-port/P6#1/kill+H2");
  EXPECT_TRUE(id.isRace());
  EXPECT_TRUE(id.startsFromPrimary());
  EXPECT_FALSE(id.isDoubleFault());
  EXPECT_EQ(id.str(), "write-config-port/P6#1/kill+H2");
  EXPECT_EQ(id.primary().str(), "write-config-port/P6#1/kill");
  EXPECT_LT(id.primary(), id);
  for (const char* bad : {"s/P6#1/stop+H2", "s/S#3/kill+H2", "s/P6#1/powerloss@1+H2",
                          "s/P6#1/kill+H3", "s/P16#1/kill+H2"})
    EXPECT_THROW(parseCaseId(bad), std::invalid_argument) << bad;
}

// The race cases come with --double-faults in kill mode only, one per agent failpoint whose first
// hit with recovery work (a claim or a bundle) the oracle names; every other id is unchanged.
TEST(RaceCaseId, PlannedWhereRecoveryHasWorkAndOnlyWithDoubleFaults) {
  std::vector<harness::Scenario> scs;
  for (auto& s : loadScenarioDir(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios"))
    if (s.id == "write-config-port") scs.push_back(s);
  ASSERT_EQ(scs.size(), 1u);
  PlanSelection sel;
  sel.doubleFaults = true;
  std::vector<std::string> races, others;
  for (const auto& pc : planSweep(scs, sel).cases)
    (pc.id.isRace() ? races : others).push_back(pc.id.str());
  EXPECT_EQ(races, (std::vector<std::string>{
                       "write-config-port/P0#1/kill+H2", "write-config-port/P1#1/kill+H2",
                       "write-config-port/P2#2/kill+H2", "write-config-port/P3#1/kill+H2",
                       "write-config-port/P4#2/kill+H2", "write-config-port/P5#2/kill+H2",
                       "write-config-port/P6#1/kill+H2", "write-config-port/P7#1/kill+H2",
                       "write-config-port/P8#1/kill+H2"}));
  sel.doubleFaults = false;
  for (const auto& pc : planSweep(scs, sel).cases) EXPECT_FALSE(pc.id.isRace()) << pc.id.str();
  sel.doubleFaults = true;
  sel.mode = "stop";
  for (const auto& pc : planSweep(scs, sel).cases) EXPECT_FALSE(pc.id.isRace()) << pc.id.str();
}

TEST(H1, OneRecoversTheOtherIsRefusedPasses) {
  const auto j = race::judge(kContinues, kCrashed, recovered(),
                             {host("a", 2, refusal()), host("b", 0, report(true), true)});
  EXPECT_TRUE(j.problems.empty()) << joined(j);
  EXPECT_EQ(j.recovered, 1u);
}

// The second host reached the lock after the first let go: it finds the continuation finished.
TEST(H1, ASecondStartUpAfterTheFirstFindsNothingToDoAndPasses) {
  const auto j =
      race::judge(kContinues, kCrashed, recovered(),
                  {host("a", 0, report(true), true),
                   host("b", 0, report(false, {std::string(code::continuation_already_exists)}))});
  EXPECT_TRUE(j.problems.empty()) << joined(j);
  EXPECT_EQ(j.recovered, 0u);
}

// Bug: the host takes its lock too late — the second planned while the first's continuation ran.
TEST(H1, ASecondHostThatPlannedBesideTheFirstFails) {
  const auto j = race::judge(
      kContinues, kCrashed, recovered(),
      {host("a", 0, report(true), true),
       host("b", 0, report(false, {std::string(code::continuation_started_indeterminate)}))});
  EXPECT_TRUE(judgementMentions(j, "planned while the other was still recovering")) << joined(j);
}

// Bug: the loser got as far as the claim (existing) before anything refused it.
TEST(H1, ALoserRefusedByTheClaimInsteadOfTheHostLockFails) {
  race::Facts after = recovered();
  after.lifecycle.push_back(claimLine(std::string(code::existing)));
  const auto j =
      race::judge(kContinues, kCrashed, after,
                  {host("a", 0, report(true), true),
                   host("b", 2, refusal(std::string(code::continuation_claim_conflict)))});
  EXPECT_TRUE(judgementMentions(j, "continuation_claim_conflict")) << joined(j);
  EXPECT_FALSE(judgementMentions(j, "acquired the continuation claim")) << joined(j);
}

// Bug: the refused host had already repaired and committed (its lock came after its writes).
TEST(H1, ARefusedHostThatHadCommittedFails) {
  race::Host b = host("b", 2, refusal());
  (*b.hits)[S] = 2;
  const auto j =
      race::judge(kContinues, kCrashed, recovered(), {host("a", 0, report(true), true), b});
  EXPECT_TRUE(judgementMentions(j, "only after it had worked on the store (reached S×2)"))
      << joined(j);
}

// Bug: a claim checked in one transaction and written in another — both racers read acquired.
TEST(H1, TwoAcquiredClaimsFail) {
  race::Facts after = recovered();
  after.lifecycle.push_back(claimLine(std::string(code::acquired)));
  const auto j = race::judge(kContinues, kCrashed, after,
                             {host("a", 0, report(true), true), host("b", 2, refusal())});
  EXPECT_TRUE(judgementMentions(j, "2 racers acquired the continuation claim of one boundary"))
      << joined(j);
}

// Bug: two continuation runs for one boundary (two claims under different ids, or one claim
// twice started).
TEST(H1, TwoContinuationRunsForOneBoundaryFail) {
  race::Facts after = recovered();
  after.runs.push_back(
      {"s",
       "run-s-3",
       "t3",
       "completed",
       {{"continuationSource", {{"claimId", kClaim}, {"boundaryDigest", "sha256:b"}}}}});
  const auto j = race::judge(kContinues, kCrashed, after,
                             {host("a", 0, report(true), true), host("b", 0, report(true), true)});
  EXPECT_TRUE(judgementMentions(j, "has 2 continuation run(s)")) << joined(j);
  EXPECT_TRUE(judgementMentions(j, "both called the provider")) << joined(j);
  EXPECT_TRUE(judgementMentions(j, "both racers recovered")) << joined(j);
}

// Bug: the bundle writer takes a second, different bundle for one operation (completed against
// parked: both win).
TEST(H1, TwoDifferingBundlesFail) {
  race::Facts after = recovered();
  after.reconcileFacts["op-1"] = {{"reconcile-op-1", R"({"observation":"matches_expected_state"})"},
                                  {"reconcile-op-1b", R"({"observation":"matches_prior_state"})"}};
  const json completed = json::array({{{"operationId", "op-1"},
                                       {"action", "bundle_committed"},
                                       {"disposition", "completed"},
                                       {"reasonCode", "reconcile_matches_expected_state"}}});
  const json parked = json::array({{{"operationId", "op-1"},
                                    {"action", "bundle_committed"},
                                    {"disposition", "parked"},
                                    {"reasonCode", "reconcile_matches_prior_state"}}});
  const auto j =
      race::judge(kContinues, kCrashed, after,
                  {host("a", 0, report(true, {}, completed), true),
                   host("b", 0, report(false, {"continuation_already_exists"}, parked))});
  EXPECT_TRUE(judgementMentions(j, "holds 2 reconcile facts (that differ)")) << joined(j);
  EXPECT_TRUE(judgementMentions(j, "completed against parked")) << joined(j);
}

// Two identical bundles converge (spec j.8): an exact retry creates nothing, so only one racer
// created it. (Two racers that both reconciled still break the lock rule: both recovered.)
TEST(H1, AnExactRetryOfTheBundleConvergesButTwoCreationsFail) {
  auto op = [](const char* action) {
    return json::array({{{"operationId", "op-1"},
                         {"action", action},
                         {"disposition", "completed"},
                         {"reasonCode", "reconcile_matches_expected_state"}}});
  };
  race::Facts after = recovered();
  after.reconcileFacts["op-1"] = {{"reconcile-op-1", "{}"}};
  auto retry = race::judge(kContinues, kCrashed, after,
                           {host("a", 0, report(true, {}, op("bundle_committed")), true),
                            host("b", 0, report(true, {}, op("bundle_exact_retry")))});
  EXPECT_FALSE(judgementMentions(retry, "created its recovery bundle")) << joined(retry);
  EXPECT_FALSE(judgementMentions(retry, "completed against parked")) << joined(retry);
  EXPECT_FALSE(judgementMentions(retry, "reconcile facts")) << joined(retry);
  auto twice = race::judge(kContinues, kCrashed, after,
                           {host("a", 0, report(true, {}, op("bundle_committed")), true),
                            host("b", 0, report(true, {}, op("bundle_committed")))});
  EXPECT_TRUE(judgementMentions(twice, "both racers created its recovery bundle")) << joined(twice);
}

// Bug: a call executed twice (both racers ran the continuation's call).
TEST(H1, ADoubleExecutionFails) {
  race::Facts after = recovered();
  after.effects["call-1"] = 2;
  const auto j = race::judge(kContinues, kCrashed, after,
                             {host("a", 0, report(true), true), host("b", 2, refusal())});
  EXPECT_TRUE(judgementMentions(j, "call-1 executed 2 times")) << joined(j);
}

// A race that parks adds no claim; a claim that appears anyway is one too many.
TEST(H1, AParkAddsNoClaim) {
  race::Facts after = recovered();
  const auto j = race::judge(race::Expectation{false}, kCrashed, after,
                             {host("a", 0, report(true), true), host("b", 2, refusal())});
  EXPECT_TRUE(
      judgementMentions(j, "the race added 1 continuation claim(s), the contract expects 0"))
      << joined(j);
}

// The harness's own failure: a racer that never reached the barrier raced nobody.
TEST(H1, ARacerThatNeverReachedTheBarrierFails) {
  race::Host b = host("b", 2, refusal());
  b.atBarrier = false;
  const auto j =
      race::judge(kContinues, kCrashed, recovered(), {host("a", 0, report(true), true), b});
  EXPECT_TRUE(judgementMentions(j, "never reached the race barrier")) << joined(j);
}
