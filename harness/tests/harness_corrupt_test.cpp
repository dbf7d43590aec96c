// `--mode corrupt` (issue 22): seeded damage to crashed stores, the verdict C1, its report
// column, reproduction by case id, and the planted host that skips its self-checks.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/corruption_injector.h"
#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"
#include "test_util.h"
#include "verdicts/c1_corrupt.h"
#include "verdicts/fail_closed.h"

using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;
namespace harness = crashsim::harness;
namespace reports = crashsim::reports;

namespace {

json sweepReport(const fs::path& binary, const std::string& args, const fs::path& out, int* rc,
                 std::string* output = nullptr) {
  auto r = sh(binary.string() + " sweep --jobs 2 " + args + " --out " + out.string() + " 2>&1");
  *rc = r.exitCode;
  if (output) *output = r.out;
  if (!fs::exists(out / "report.json")) {
    ADD_FAILURE() << "no report.json; output:\n" << r.out;
    return json::object();
  }
  return json::parse(slurp(out / "report.json"));
}

harness::ChildResult exited(int code) {
  harness::ChildResult r;
  r.spawned = r.exited = true;
  r.exitCode = code;
  return r;
}

harness::AppliedCorruption damage(bool detectable, bool mayGoUnnoticed) {
  harness::AppliedCorruption a;
  a.record.kind = "wal_zero_frame";
  a.record.detail = "WAL frame 1 of 9 zeroed";
  a.record.detectable = detectable;
  a.mayGoUnnoticed = mayGoUnnoticed;
  return a;
}

// A refusal that is everything C1 asks for.
harness::CorruptObservation cleanRefusal() {
  harness::CorruptObservation o;
  o.inspect = exited(2);
  o.inspectCode = "store_wal_frames_lost";
  o.recover = exited(2);
  o.recoverCode = "store_wal_frames_lost";
  return o;
}

std::string judge(const harness::AppliedCorruption& a, const harness::CorruptObservation& o,
                  reports::Corruption* out = nullptr) {
  harness::Checks c;
  reports::Corruption k = a.record;
  harness::judgeCorruption(a, o, k, c);
  if (out) *out = k;
  return c.m.at("C1").status;
}

// The damage kinds of the failed cases of a sweep report, and the checks that failed them.
std::pair<std::set<std::string>, std::set<std::string>> failuresOf(const json& rep) {
  std::set<std::string> kinds, checks;
  for (const auto& c : rep.value("cases", json::array()))
    if (c["verdict"] == "fail") {
      kinds.insert(c["corruption"]["kind"].get<std::string>());
      for (auto& [name, st] : c["checks"].items())
        if (st == "fail") checks.insert(name);
    }
  return {kinds, checks};
}

}  // namespace

TEST(CorruptCaseId, SeedIsRequiredAndThereIsNoDoubleFault) {
  auto id = harness::parseCaseId("write-config-port/P6#1/corrupt@23");
  EXPECT_EQ(id.mode, "corrupt");
  EXPECT_EQ(id.seed, 23u);
  EXPECT_EQ(id.str(), "write-config-port/P6#1/corrupt@23");
  EXPECT_THROW(harness::parseCaseId("write-config-port/P6#1/corrupt"), std::invalid_argument);
  EXPECT_THROW(harness::parseCaseId("write-config-port/P6#1/corrupt@23+R:P10#1"),
               std::invalid_argument);
  EXPECT_THROW(harness::parseCaseId("write-config-port/S#1/corrupt@2"), std::invalid_argument);
}

TEST(CorruptCaseId, SeedsAreDeterministicConsecutiveAndDifferPerPoint) {
  auto id = harness::parseCaseId("write-config-port/P6#1/kill");
  auto s = harness::corruptSeeds(id, 0, 19);
  ASSERT_EQ(s.size(), 19u);
  EXPECT_EQ(s, harness::corruptSeeds(id, 0, 19));
  std::set<uint64_t> kinds;
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i], s[0] + i);
    kinds.insert(s[i] % harness::kCorruptionKinds.size());
  }
  EXPECT_EQ(kinds.size(), harness::kCorruptionKinds.size()) << "19 states visit every kind";
  EXPECT_NE(s, harness::corruptSeeds(id, 1, 19));
  auto other = harness::parseCaseId("write-config-port/P6#2/kill");
  EXPECT_NE(s, harness::corruptSeeds(other, 0, 16));
}

// Each way a host can mishandle a damaged store turns C1 red (hand-built observations).
TEST(CorruptVerdict, EveryMishandlingFailsC1) {
  EXPECT_EQ(judge(damage(true, false), cleanRefusal()), "pass");
  reports::Corruption k;
  judge(damage(true, false), cleanRefusal(), &k);
  EXPECT_EQ(k.outcome, "failed_closed");
  EXPECT_EQ(k.code, "store_wal_frames_lost");

  auto o = cleanRefusal();
  o.inspectChanged = "runtime.sqlite-wal deleted";
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "inspect wrote";
  o = cleanRefusal();
  o.inspect.exited = false;
  o.inspect.signaled = true;
  o.inspect.signal = 11;
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "inspect crashed";
  o = cleanRefusal();
  o.inspectCode = "internal_error";
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "inspect without a stable code";
  o = cleanRefusal();
  o.recover.exited = false;
  o.recover.timedOut = true;
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "recover hung";
  o = cleanRefusal();
  o.recoverCode = "";
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "refused without a code";
  o = cleanRefusal();
  o.toolRan = true;
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "refused after running a tool";
  o = cleanRefusal();
  o.workspaceChanged = true;
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "refused after changing the workspace";
  o = cleanRefusal();
  o.recoverChanged = "runtime.sqlite rewritten";
  EXPECT_EQ(judge(damage(true, false), o), "fail") << "refused after writing the store";
  // A damage the README names one code for: that code, from inspect and from recover.
  auto named = damage(true, false);
  named.expectedCode = "store_wal_frames_lost";
  EXPECT_EQ(judge(named, cleanRefusal()), "pass");
  o = cleanRefusal();
  o.inspectCode = o.recoverCode = "store_data_lost";  // stable, but not the damage's code
  EXPECT_EQ(judge(named, o), "fail") << "refused with another code";
  o = cleanRefusal();
  o.recoverCode = "store_corrupt";
  EXPECT_EQ(judge(named, o), "fail") << "recover refused with another code";
  o = cleanRefusal();
  o.inspect = exited(0);
  o.inspectCode = "";
  EXPECT_EQ(judge(named, o), "fail") << "inspect called the damaged store intact";
  named.wrongWorkspace = harness::WrongWorkspace::unmarked;  // the store is intact: inspect may
  named.expectedCode = "workspace_unmarked";                 // pass it, recover must refuse
  o.recoverCode = "workspace_unmarked";
  EXPECT_EQ(judge(named, o), "pass");
  o.workspaceChanged = true;  // the marker the old start-up created in the copy
  EXPECT_EQ(judge(named, o), "fail") << "wrote into the wrong workspace";

  // A finished recovery: right only with the kill case's outcome, and never over detectable
  // damage.
  harness::CorruptObservation done;
  done.inspect = exited(0);
  done.recover = exited(0);
  done.contractOutcome.emplace();
  EXPECT_EQ(judge(damage(false, false), done, &k), "pass");
  EXPECT_EQ(k.outcome, "recovered");
  EXPECT_EQ(judge(damage(true, false), done), "fail") << "recovered over detectable damage";
  auto other = done;
  other.contractOutcome->fail("V8", "executions: c1 ran 2 times, expected 1");
  EXPECT_EQ(judge(damage(false, false), other), "fail") << "another outcome, not allowed";
  EXPECT_EQ(judge(damage(false, true), other, &k), "pass") << "undetectable by design";
  EXPECT_EQ(k.outcome, "undetectable");
  EXPECT_NE(k.recovery.find("c1 ran 2 times"), std::string::npos) << k.recovery;
  auto unsafe = done;
  unsafe.completedWithoutResponse = "run r: c1 completed without its function_response";
  EXPECT_EQ(judge(damage(false, true), unsafe), "fail") << "completed without a response";
}

// A refusal counts as failing closed only with a code the contract spells, and not with the two
// that say the runtime met the damage without recognising it.
TEST(FailClosedCode, OnlyContractCodesThatNameTheProblemCount) {
  for (const char* good : {"store_corrupt", "store_schema_damaged", "store_event_seq_gap",
                           "row_payload_identity_mismatch", "termination_batch_conflict",
                           "json_too_deep", "run_terminal_fact_missing"})
    EXPECT_TRUE(harness::isStableFailClosedCode(good)) << good;
  for (const char* bad : {"", "sqlite_error", "internal_error", "store_made_up", "Store_corrupt",
                          "store_corrupt ", "not a code"})
    EXPECT_FALSE(harness::isStableFailClosedCode(bad)) << bad;
}

// The whole mode over one scenario: every damage kind at every reached point, C1 green, the
// detectable damage refused, the report valid against its schema with its corruption column.
TEST(CorruptSweep, EveryKindAtEveryPointFailsClosedOrRecovers) {
  auto d = freshDir("crashsim-corrupt-sweep");
  int rc = -1;
  std::string output;
  json rep =
      sweepReport(crashsimBinary(), "--mode corrupt --scenario write-config-port --states 19",
                  d / "out", &rc, &output);
  ASSERT_TRUE(rep.is_object() && rep.contains("cases")) << output;
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(rep["selection"]["mode"], "corrupt");
  const auto violations = reports::validateSchema(reports::reportSchema(), rep);
  EXPECT_TRUE(violations.empty()) << violations.front().path << ": " << violations.front().message;
  std::map<std::string, int> kinds;
  int refused = 0, detectable = 0;
  const std::regex idPattern(R"(^write-config-port/P\d+#\d+/corrupt@\d+$)");
  for (const auto& c : rep["cases"]) {
    EXPECT_TRUE(std::regex_match(c["id"].get<std::string>(), idPattern)) << c["id"];
    EXPECT_EQ(c["verdict"], "pass") << c.dump();
    EXPECT_EQ(c["checks"]["C1"], "pass") << c.dump();
    ASSERT_TRUE(c.contains("corruption")) << c.dump();
    const auto& k = c["corruption"];
    ++kinds[k["kind"]];
    if (k["detectable"] == true) {
      ++detectable;
      EXPECT_EQ(k["outcome"], "failed_closed") << c.dump();
    }
    refused += k["outcome"] == "failed_closed";
  }
  EXPECT_EQ(kinds.size(), harness::kCorruptionKinds.size());
  EXPECT_GT(detectable, 20);
  EXPECT_GE(refused, detectable);
  const std::string md = slurp(d / "out" / "report.md");
  EXPECT_NE(md.find("## Corruption"), std::string::npos);
  EXPECT_NE(md.find("| event_seq_swap |"), std::string::npos);
  fs::remove_all(d);
}

// Two points (P1: a call before its T1; P6: after its T2; every damage kind at each hit)
// are enough for a host that skips its self-checks; the whole point set is the test above.
TEST(CorruptSweep, PlantedHostThatSkipsItsSelfChecksFailsC1) {
  auto d = freshDir("crashsim-corrupt-plant");
  int rc = -1;
  std::string output;
  json rep = sweepReport("CRASHSIM_PLANT=host_ignores_integrity_check " + plantedBinary().string(),
                         "--mode corrupt --scenario write-config-port --states 19 --failpoint P1 "
                         "--failpoint P6",
                         d / "out", &rc, &output);
  EXPECT_EQ(rc, 1) << output;
  const auto [failedKinds, failedChecks] = failuresOf(rep);
  EXPECT_EQ(failedChecks, std::set<std::string>{"C1"});
  // Damage only the self-checks see: a swapped event_seq, a missing header.
  EXPECT_TRUE(failedKinds.count("event_seq_swap")) << output;
  EXPECT_TRUE(failedKinds.count("header_delete")) << output;
  fs::remove_all(d);
}

// Issue #45's damages kept from coming back: each planted start-up bug of the old behaviour
// turns exactly its damage kind red (C1), at one point of the write (P6: after its T2).
TEST(CorruptSweep, PlantedStartUpsThatDestroyOrAdoptFailC1OnTheirKind) {
  const std::map<std::string, std::string> kindOf = {
      {"store_ignores_shm_index", "wal_cut_at_commit"},
      {"store_opens_empty_database", "db_empty_beside_wal"},
      {"host_adopts_unmarked_workspace", "workspace_wrong"}};
  for (const auto& [plant, kind] : kindOf) {
    auto d = freshDir("crashsim-corrupt-plant-" + kind);
    int rc = -1;
    std::string output;
    json rep = sweepReport("CRASHSIM_PLANT=" + plant + " " + plantedBinary().string(),
                           "--mode corrupt --scenario write-config-port --states 19 "
                           "--failpoint P6",
                           d / "out", &rc, &output);
    EXPECT_EQ(rc, 1) << plant << "\n" << output;
    const auto [failedKinds, failedChecks] = failuresOf(rep);
    EXPECT_EQ(failedChecks, std::set<std::string>{"C1"}) << plant;
    EXPECT_TRUE(failedKinds.count(kind)) << plant << "\n" << output;
    for (const auto& k : failedKinds)  // the -shm also shows other WAL damage; nothing else
      EXPECT_TRUE(k == kind || (plant == "store_ignores_shm_index" && k.rfind("wal_", 0) == 0))
          << plant << " failed " << k;
    fs::remove_all(d);
  }
}

TEST(CorruptRun, OneSeededCaseIsReproducibleFromItsId) {
  auto d = freshDir("crashsim-corrupt-run");
  const std::string id = "write-config-port/P6#1/corrupt@" +
                         std::to_string(harness::corruptSeeds(
                             harness::parseCaseId("write-config-port/P6#1/kill"), 0, 11)[0]);
  json first, second;
  for (json* j : {&first, &second}) {
    fs::remove_all(d / "case");
    auto r = sh(crashsimBinary().string() + " run '" + id + "' --keep " + (d / "case").string() +
                " 2>&1");
    EXPECT_EQ(r.exitCode, 0) << r.out;
    ASSERT_TRUE(fs::exists(d / "case" / "corruption.json")) << r.out;
    *j = json::parse(slurp(d / "case" / "corruption.json"));
  }
  EXPECT_EQ(first, second);
  EXPECT_FALSE(first.value("detail", "").empty());
  fs::remove_all(d);
}
