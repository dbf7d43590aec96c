// An open sweep's report (crashsim sweep --runtime FILE) in the shared report schema: the
// openReport branch of report.schema.json, its JSON round trip, its Markdown, and the merge of
// shards of one open sweep (split by scenario). Hand-built reports; every expected value comes
// from the schema's contract (report.schema.json's openReport, openCase) and the case built here.
#include <gtest/gtest.h>

#include <string>

#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"

using namespace crashsim::reports;

namespace {

const std::string kDigest =
    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

CaseRecord openCase(const std::string& scenario, const std::string& point, const std::string& o2,
                    std::optional<BaselineEntry> baseline = std::nullopt) {
  CaseRecord c;
  c.scenario = scenario;
  c.failpoint = point;
  c.hit = 1;
  c.mode = "kill";
  c.id = "rt/" + scenario + "/" + point + "#1/kill";
  for (auto n : kOpenCheckNames) c.checks[std::string(n)] = Check{"pass", ""};
  c.checks["O5"] = Check{"n/a", "n/a: O5 not sampled"};
  if (!o2.empty()) c.checks["O2"] = Check{"fail", o2};
  c.verdict = o2.empty() ? "pass" : "fail";
  c.reproduce = "crashsim run '" + c.id + "' --runtime /x/rt.json --scenarios /x/scenarios";
  c.durationMs = 1000;
  c.baseline = std::move(baseline);
  return c;
}

// One scenario's shard of an open sweep of runtime "rt".
Report openShard(const std::string& scenario) {
  Report r;
  r.crashsimVersion = std::string(crashsimVersion());
  r.platform = {"Linux", "6.1", "x86_64", "ext4", "", "GCC 12", "Debug", {}, "", "", std::nullopt};
  r.runtime = "rt";
  r.runtimeLevel = 0;
  r.profileDigest = kDigest;
  r.interposerPreloaded = true;
  r.scenarioRuns[scenario] = {{{"MQ", 2}, {"TE", 1}, {"S", 3}}, 900.25, true};
  r.selection.scenarios = {scenario};
  r.selection.determinism = "first-hit";
  r.cases = {openCase(scenario, "MQ", ""), openCase(scenario, "TE", "call-1 ran 2 times",
                                                    BaselineEntry{"re-runs a Bash", "", {"O2"}})};
  finalizeSummary(r, 2.0, 1);
  return r;
}

std::string violationsOf(const Json& j) {
  std::string all;
  for (const auto& v : validateSchema(reportSchema(), j)) all += v.path + ": " + v.message + "\n";
  return all;
}

}  // namespace

TEST(OpenReportJson, ValidatesAgainstTheSharedSchemaAndRoundTrips) {
  const Report r = openShard("bash-touch-marker");
  const Json j = toJson(r);
  EXPECT_EQ(violationsOf(j), "");
  EXPECT_EQ(j["runtime"], (Json{{"name", "rt"}, {"level", 0}, {"profileDigest", kDigest}}));
  EXPECT_EQ(j["interposer"], (Json{{"preloaded", true}}));
  EXPECT_EQ(j["scenarios"]["bash-touch-marker"]["hits"], (Json{{"MQ", 2}, {"TE", 1}, {"S", 3}}));
  EXPECT_FALSE(j["platform"].contains("sqliteVersion"));
  EXPECT_FALSE(j["selection"].contains("seed"));
  EXPECT_EQ(j["selection"]["determinism"], "first-hit");
  const Json& known = j["cases"][1];
  EXPECT_EQ(known["checks"],
            (Json{{"O1", "pass"}, {"O2", "fail"}, {"O3", "pass"}, {"O4", "pass"}, {"O5", "n/a"}}));
  EXPECT_EQ(known["baseline"], Json::array({"O2"}));
  EXPECT_EQ(known["baselineReason"], "re-runs a Bash");
  EXPECT_FALSE(known.contains("baselineChange")) << "a known finding failing as listed";
  EXPECT_EQ(reportFromJson(j), r);
  EXPECT_EQ(renderJson(reportFromJson(j)), renderJson(r));
}

// The schema requires exactly one of the two check sets, by the report's kind.
TEST(OpenReportJson, TheSchemaRefusesMixedChecksAndAnOpenCaseWithoutO3) {
  const Json good = toJson(openShard("bash-touch-marker"));
  ASSERT_EQ(violationsOf(good), "");
  Json noO3 = good;
  noO3["cases"][0]["checks"].erase("O3");
  EXPECT_NE(violationsOf(noO3).find("$.cases[0].checks: missing required property O3"),
            std::string::npos)
      << violationsOf(noO3);
  Json both = good;  // an open case that carries V1 beside O1..O5
  both["cases"][0]["checks"]["V1"] = "pass";
  EXPECT_NE(violationsOf(both).find("$.cases[0].checks.V1: property not allowed"),
            std::string::npos)
      << violationsOf(both);
  // A built-in case (V1..V9) inside an open report.
  Json builtinCase = good;
  Json v = Json::object();
  for (auto n : kCheckNames) v[std::string(n)] = "pass";
  builtinCase["cases"][0]["checks"] = v;
  EXPECT_NE(violationsOf(builtinCase).find("$.cases[0].checks: missing required property O1"),
            std::string::npos)
      << violationsOf(builtinCase);
  // An open report without its runtime is judged as a built-in one: its cases lack V1..V9.
  Json noRuntime = good;
  noRuntime.erase("runtime");
  EXPECT_NE(violationsOf(noRuntime).find("$.cases[0].checks: missing required property V1"),
            std::string::npos)
      << violationsOf(noRuntime);
  Json noScenarios = good;
  noScenarios.erase("scenarios");
  EXPECT_NE(violationsOf(noScenarios).find("missing required property scenarios"),
            std::string::npos);
  Json badBaseline = good;
  badBaseline["cases"][1]["baseline"] = Json::array({"V2"});
  EXPECT_NE(violationsOf(badBaseline).find("$.cases[1].baseline[0]"), std::string::npos);
}

TEST(OpenReportMarkdown, ShowsTheRuntimeTheReferenceRunsAndTheKnownFinding) {
  const std::string md = renderMarkdown(openShard("bash-touch-marker"));
  EXPECT_NE(md.find("# crashsim open sweep of rt\n"), std::string::npos) << md;
  // One case fails (the known finding), none fails the gate.
  EXPECT_NE(md.find("**PASS** — 2 cases, 1 passed, 1 failed (1 known finding(s) of the baseline, "
                    "0 failing the gate)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| bash-touch-marker | 2 | 0 | 0 | 1 | 0 | 3 | yes | 900 |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("### `rt/bash-touch-marker/TE#1/kill` (known finding)"), std::string::npos);
  EXPECT_EQ(md.find("SQLite"), std::string::npos);
}

TEST(OpenReportMerge, JoinsTheScenarioShardsOfOneOpenSweep) {
  const Report merged =
      mergeReports({openShard("write-config-port"), openShard("bash-touch-marker")});
  EXPECT_EQ(merged.runtime, "rt");
  EXPECT_EQ(merged.selection.scenarios,
            (std::vector<std::string>{"bash-touch-marker", "write-config-port"}));
  EXPECT_EQ(merged.scenarioRuns.size(), 2u);
  ASSERT_EQ(merged.cases.size(), 4u);
  // Sorted by scenario, then the open points' plan order (MQ before TE).
  EXPECT_EQ(merged.cases[0].id, "rt/bash-touch-marker/MQ#1/kill");
  EXPECT_EQ(merged.cases[1].id, "rt/bash-touch-marker/TE#1/kill");
  EXPECT_EQ(merged.summary.failed, 2);
  EXPECT_FALSE(std::any_of(merged.cases.begin(), merged.cases.end(), failsGate));
  EXPECT_EQ(violationsOf(toJson(merged)), "");
}

TEST(OpenReportMerge, RefusesAnotherRuntimeAnotherProfileABuiltInReportAndAScenarioTwice) {
  const Report a = openShard("write-config-port");
  const auto refusal = [&](const Report& b) {
    try {
      mergeReports({a, b});
    } catch (const ReportError& e) {
      return std::string(e.what());
    }
    return std::string("merged");
  };
  Report other = openShard("bash-touch-marker");
  other.runtime = "langgraph-js";
  EXPECT_NE(refusal(other).find("swept runtime langgraph-js"), std::string::npos) << refusal(other);
  Report level = openShard("bash-touch-marker");
  level.runtimeLevel = 1;
  EXPECT_NE(refusal(level).find("(level 1,"), std::string::npos) << refusal(level);
  Report digest = openShard("bash-touch-marker");
  digest.profileDigest[8] = 'f';
  EXPECT_NE(refusal(digest).find("share one profile"), std::string::npos) << refusal(digest);
  Report builtin = openShard("bash-touch-marker");
  builtin.runtime.clear();
  EXPECT_NE(refusal(builtin).find("a sweep of crashsim's own runtime"), std::string::npos)
      << refusal(builtin);
  EXPECT_NE(refusal(a).find("scenario write-config-port was swept by more than one report"),
            std::string::npos)
      << refusal(a);
  Report sample = openShard("bash-touch-marker");
  sample.selection.determinism = "none";
  EXPECT_NE(refusal(sample).find("selected a different case set"), std::string::npos);
  Report interposer = openShard("bash-touch-marker");
  interposer.interposerPreloaded = false;
  EXPECT_NE(refusal(interposer).find("without the barrier interposer"), std::string::npos);
}
