// The legacy JSONL import in the sweep (P16, P17): case ids, the oracle's batch arithmetic for
// the built-in legacy-import scenario (15 imported events, 4 per batch — counted from the
// scenario file by hand), the plan, the scenario key, the import-state verdict against
// hand-damaged stores, and the sweep end to end.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/plan.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "test_util.h"
#include "verdicts/legacy_import.h"
#include "verdicts/verdict.h"

using namespace crashsim::harness;
using namespace crashsim::harness::points;
using namespace crashsim::harness::test;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Scenario legacyScenario() {
  return loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "legacy-import.json");
}

CaseId id(const std::string& s) { return parseCaseId(s); }

void exec(const fs::path& store, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((store / "runtime.sqlite").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// A store directory whose import ran to its end through the runtime (batches of 4).
fs::path importedStore(const Scenario& sc, const std::string& name) {
  const fs::path dir = freshDir(name) / "store";
  writeLegacyJsonl(sc, dir);
  crashsim::StoreOptions o;
  o.legacyImportBatchEvents = 4;
  crashsim::RuntimeStore::open(dir, o);
  return dir;
}

}  // namespace

TEST(LegacyImportCaseId, ImportPointsAreKillModePrimariesPairedOnlyWithEachOther) {
  const CaseId p = id("legacy-import/P16#2/kill");
  EXPECT_EQ(p.failpoint, P16);
  EXPECT_TRUE(p.isImport());
  EXPECT_FALSE(p.isBarrier());
  EXPECT_EQ(p.str(), "legacy-import/P16#2/kill");
  EXPECT_EQ(id("s/P17#1/kill+R:P16#3").str(), "s/P17#1/kill+R:P16#3");
  EXPECT_LT(id("legacy-import/P11#1/kill+R:P10#1"), p);  // sorts after P0..P15 and S, F
  EXPECT_LT(id("legacy-import/F#9/kill"), p);
  for (auto bad : {"s/P16#1/stop", "s/P17#1/powerloss@3", "s/P16#1/corrupt@1",
                   "s/P16#1/kill+R:P8#1", "s/P4#1/kill+R:P17#1", "s/P18#1/stop",
                   "s/P18#1/kill+R:P8#1", "s/P016#1/kill", "s/P16#0/kill"})
    EXPECT_THROW(parseCaseId(bad), std::invalid_argument) << bad;
}

TEST(LegacyImportOracle, BatchArithmeticFromTheScenario) {
  const Scenario sc = legacyScenario();
  ASSERT_TRUE(sc.spec.legacyStore);
  EXPECT_EQ(importedLegacyEvents(sc).size(), 15u);  // 16 lines, one partial draft
  EXPECT_EQ(interruptedLegacyRuns(sc), 1);          // legacy-run-4 ends mid-call
  EXPECT_EQ(predictedImportBatches(sc), 4);
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P16#1/kill")), 0u);
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P16#4/kill")), 12u);
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P17#3/kill")), 12u);
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P17#4/kill")), 15u);  // the short last batch
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P17#1/kill+R:P16#1")), 4u);
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P16#3/kill+R:P17#1")), 8u);
  EXPECT_EQ(expectImportStoredEvents(sc, id("x/P16#1/kill+R:P17#4")), 15u);
  const auto h = predictedRecoveryHits(sc, P17, 2);
  for (CrashPoint fp : CrashPoint::all())
    EXPECT_EQ(h[fp], fp == P16 || fp == P17 ? 4
                     : fp == P8 || fp == P9 ? 1  // legacy-run-4's repair
                                            : 0)
        << fp;
  // A scenario without a legacy store never reaches the import.
  const Scenario plain =
      loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "write-config-port.json");
  EXPECT_EQ(predictedImportBatches(plain), 0);
  EXPECT_EQ(predictedRecoveryHits(plain, P4, 1)[P16], 0);
}

TEST(LegacyImportPlan, TheLegacyScenarioIsSweptAtItsImportInKillModeOnly) {
  const Scenario sc = legacyScenario();
  PlanSelection sel;
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), 8u);
  for (const auto& pc : planSweep({sc}, sel).cases) EXPECT_TRUE(pc.id.isImport()) << pc.id.str();
  sel.doubleFaults = true;
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), 8u + 8u * 8u);
  sel.failpoints = {"P16"};  // P16 primaries with all their doubles, P17 primaries' P16 doubles
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), 4u + 4u * 8u + 4u * 4u);
  sel.doubleFaults = false;
  EXPECT_EQ(planSweep({sc}, sel).cases.size(), 4u);
  sel.mode = "stop";
  EXPECT_THROW(planSweep({sc}, sel), std::runtime_error);
  sel.failpoints.clear();
  EXPECT_TRUE(planSweep({sc}, sel).cases.empty());  // the sweep refuses an empty selection
  sel.mode = "kill";
  sel.failpoints = {"P4"};
  EXPECT_TRUE(planSweep({sc}, sel).cases.empty());
}

TEST(LegacyImportScenario, TheKeyIsCheckedStrictly) {
  json base =
      json::parse(slurp(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "legacy-import.json"));
  EXPECT_NO_THROW(crashsim::parseScenario(base));
  auto refused = [&](auto mutate) {
    json s = base;
    mutate(s["legacyStore"]);
    try {
      crashsim::parseScenario(s);
    } catch (const crashsim::Error& e) {
      return e.code() == crashsim::code::scenario_invalid;
    }
    return false;
  };
  EXPECT_TRUE(refused([](json& l) { l["batchEvents"] = 0; }));
  EXPECT_TRUE(refused([](json& l) { l["batchEvents"] = 257; }));
  EXPECT_TRUE(refused([](json& l) { l["batchEvents"] = "4"; }));
  EXPECT_TRUE(refused([](json& l) { l["events"] = json::array(); }));
  EXPECT_TRUE(refused([](json& l) { l["events"][0] = "line"; }));
  EXPECT_TRUE(refused([](json& l) { l["extra"] = 1; }));
  EXPECT_TRUE(refused([](json& l) { l.erase("events"); }));
}

// The verdict fails for each kind of wrong import state (hand-damaged copies of a real import).
TEST(LegacyImportVerdict, EveryWrongImportStateIsNamed) {
  const Scenario sc = legacyScenario();
  const fs::path store = importedStore(sc, "crashsim-legacy-verdict");
  EXPECT_TRUE(importStateProblems(sc, store, 15, true).empty());
  EXPECT_FALSE(importStateProblems(sc, store, 14, true).empty());   // one event too many
  EXPECT_FALSE(importStateProblems(sc, store, 15, false).empty());  // manifest too early
  EXPECT_FALSE(importStateProblems(sc, store, 4, false).empty());

  auto damaged = [&](const std::string& name, auto damage) {
    const fs::path d = freshDir("crashsim-legacy-verdict-" + name) / "store";
    crashsim::harness::copyDir(store, d);
    damage(d);
    return importStateProblems(sc, d, 15, true);
  };
  EXPECT_FALSE(damaged("jsonl", [](const fs::path& d) {
                 std::ofstream(d / "runtime-events.jsonl", std::ios::app) << "\n";
               }).empty());
  EXPECT_FALSE(
      damaged("manifest", [](const fs::path& d) { fs::remove(d / "runtime.manifest"); }).empty());
  EXPECT_FALSE(damaged("ts", [](const fs::path& d) {
                 exec(d,
                      "UPDATE runtime_events SET committed_at = committed_at + 1 WHERE "
                      "event_id = 'legacy-run-2-text'");
               }).empty());
  EXPECT_FALSE(damaged("header", [](const fs::path& d) {
                 exec(d, "UPDATE agent_runs SET status = 'running' WHERE run_id = 'legacy-run-3'");
               }).empty());
  EXPECT_FALSE(damaged("lost", [](const fs::path& d) {
                 exec(d, "DELETE FROM runtime_events WHERE event_id = 'legacy-run-3-end'");
               }).empty());
}

// End to end: every import kill and every recovery kill inside the re-run import pass, with the
// case count the oracle predicts.
TEST(LegacyImportSweep, DoubleFaultSweepOfTheImportPasses) {
  const fs::path d = freshDir("crashsim-legacy-sweep");
  auto r =
      sh(crashsimBinary().string() +
         " sweep --jobs 2 --scenario legacy-import --double-faults --out " + (d / "out").string());
  ASSERT_EQ(r.exitCode, 0) << r.out;
  const json rep = json::parse(slurp(d / "out" / "report.json"));
  ASSERT_EQ(rep["cases"].size(), 72u);
  for (const auto& c : rep["cases"]) {
    EXPECT_EQ(c["verdict"], "pass") << c.dump();
    for (auto v : {"V1", "V2", "V3", "V5", "V8"}) EXPECT_EQ(c["checks"][v], "pass") << c.dump();
  }
  fs::remove_all(d);
}
