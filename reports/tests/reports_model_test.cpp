// Report model, writers, schema validation and merge.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "crashsim/build_paths.h"
#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"

using namespace crashsim::reports;

namespace {

Json loadSchema() {
  std::ifstream in(std::filesystem::path(CRASHSIM_SOURCE_DIR) / "reports" / "report.schema.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str());
}

CaseRecord makeCase(std::string scenario, std::string fp, int hit, bool pass,
                    std::optional<std::string> rfp = {}) {
  CaseRecord c;
  c.scenario = scenario;
  c.failpoint = fp;
  c.hit = hit;
  c.mode = "kill";
  c.id = scenario + "/" + fp + "#" + std::to_string(hit) + "/kill";
  if (rfp) {
    c.recoveryFailpoint = *rfp;
    c.recoveryHit = 1;
    c.id += "+R:" + *rfp + "#1";
  }
  for (auto n : kCheckNames) c.checks[std::string(n)] = Check{"pass", ""};
  c.checks["V9"] = Check{"n/a", "not sampled"};
  if (!pass) c.checks["V8"] = Check{"fail", "callId c1 executed 2 times"};
  c.verdict = pass ? "pass" : "fail";
  c.reproduce = "crashsim run " + c.id + " --keep /tmp/x";
  c.durationMs = 10.0 + hit;
  return c;
}

Report makeReport() {
  Report r;
  r.crashsimVersion = std::string(crashsimVersion());
  r.platform.os = "Linux";
  r.platform.kernel = "6.1";
  r.platform.arch = "x86_64";
  r.platform.fsType = "tmpfs";
  r.platform.sqliteVersion = "3.40.1";
  r.platform.sqliteCompileOptions = {"THREADSAFE=1"};
  r.platform.journalMode = "wal";
  r.platform.synchronous = "FULL";
  r.platform.compiler = "GCC 12";
  r.platform.buildType = "RelWithDebInfo";
  r.shards = {{0, 1}};
  r.cases = {makeCase("write-config-port", "P4", 1, true), makeCase("bash-once", "P2", 1, false),
             makeCase("write-config-port", "P4", 1, true, "P10")};
  sortCases(r);
  finalizeSummary(r, 0.5);
  return r;
}

}  // namespace

TEST(ReportJson, ValidatesAgainstReportSchema) {
  auto schema = loadSchema();
  auto j = toJson(makeReport());
  auto violations = validateSchema(schema, j);
  for (const auto& v : violations) ADD_FAILURE() << v.path << ": " << v.message;
  EXPECT_TRUE(violations.empty());
}

TEST(ReportJson, SchemaRejectsBadVerdictMissingCheckAndBadCaseId) {
  auto schema = loadSchema();
  auto j = toJson(makeReport());
  j["cases"][0]["verdict"] = "maybe";
  j["cases"][1]["checks"].erase("V5");
  j["cases"][2]["id"] = "no-failpoint-here";
  j["summary"].erase("p95CaseMs");
  auto violations = validateSchema(schema, j);
  std::string all;
  for (const auto& v : violations) all += v.path + ": " + v.message + "\n";
  EXPECT_NE(all.find("$.cases[0].verdict"), std::string::npos) << all;
  EXPECT_NE(all.find("missing required property V5"), std::string::npos) << all;
  EXPECT_NE(all.find("$.cases[2].id"), std::string::npos) << all;
  EXPECT_NE(all.find("missing required property p95CaseMs"), std::string::npos) << all;
}

// Numbers a merge cannot carry: an "integer" written as a float beyond the 64-bit range (the
// readers store counts as int64; a fuzzer found the old test cast it, undefined behaviour) and a
// duration so large that a sum or the three-decimal rounding of a merge gives infinity, which
// JSON writes as null (issue 45's `1e308`). The schema refuses both before anything reads them.
TEST(ReportJson, SchemaRefusesIntegersBeyondInt64AndDurationsAMergeCannotSum) {
  auto schema = loadSchema();
  auto j = toJson(makeReport());
  j["summary"]["total"] = 7.77778e+31;
  j["cases"][0]["durationMs"] = 1e308;
  j["summary"]["wallSeconds"] = 1e15;  // the bound itself is allowed
  auto violations = validateSchema(schema, j);
  std::string all;
  for (const auto& v : violations) all += v.path + ": " + v.message + "\n";
  EXPECT_NE(all.find("$.summary.total: expected type integer"), std::string::npos) << all;
  EXPECT_NE(all.find("$.cases[0].durationMs: value above maximum"), std::string::npos) << all;
  EXPECT_EQ(all.find("wallSeconds"), std::string::npos) << all;
  EXPECT_EQ(violations.size(), 2u) << all;
  j["summary"]["total"] = 3.0;  // an integral float within range is an integer (JSON Schema)
  j["cases"][0]["durationMs"] = 1.5;
  EXPECT_TRUE(validateSchema(schema, j).empty());
}

// The schemas compiled into the library are the ones in the source tree (a stale copy would
// let `report merge` accept what the published schema refuses).
TEST(ReportJson, CompiledInSchemasAreTheSourceTreesSchemas) {
  EXPECT_EQ(reportSchema(), loadSchema());
  std::ifstream in(std::filesystem::path(CRASHSIM_SOURCE_DIR) / "reports" /
                   "durability.schema.json");
  EXPECT_EQ(durabilitySchema(), Json::parse(in));
}

TEST(ReportJson, ValidatorRefusesUnsupportedKeywords) {
  Json schema = {{"type", "object"}, {"anyOf", Json::array()}};
  EXPECT_THROW(validateSchema(schema, Json::object()), std::invalid_argument);
}

TEST(ReportJson, RoundTripsThroughJson) {
  auto r = makeReport();
  auto back = reportFromJson(Json::parse(renderJson(r)));
  EXPECT_EQ(renderJson(back), renderJson(r));
}

// Found by report_merge_fuzz: a schema-valid row with run > planned merged into a report whose
// skipped count is negative. A row's counts must be what a sweep writes.
TEST(ReportJson, RefusesACoverageRowWhoseCountsASweepCannotWrite) {
  auto r = makeReport();
  r.coverage = {{"write-config-port", "P4", "agent", 2, 2, 2, 1, 1}};
  const Json good = toJson(r);
  EXPECT_NO_THROW(reportFromJson(good));
  auto with = [&](const char* key, Json value) {
    Json j = good;
    j["coverage"][0][key] = std::move(value);
    return j;
  };
  for (const Json& bad : {with("run", 3), with("passed", 2), with("failed", 0), with("skipped", 1),
                          with("planned", 1), with("predicted", -1),
                          with("planned", 3'000'000'000LL), with("run", 2.5)}) {
    try {
      reportFromJson(bad);
      ADD_FAILURE() << "accepted " << bad["coverage"][0].dump();
    } catch (const ReportError& e) {
      EXPECT_NE(std::string(e.what()).find("coverage"), std::string::npos) << e.what();
    }
  }
}

TEST(Merge, RefusesCoverageSumsBeyondTheCountLimit) {
  auto a = makeReport(), b = makeReport();
  a.shards = {{0, 2}};
  b.shards = {{1, 2}};
  a.cases.resize(1);
  b.cases.erase(b.cases.begin());
  a.coverage = {{"write-config-port", "P4", "agent", 1, 60'000'000, 0, 0, 0}};
  b.coverage = a.coverage;
  EXPECT_THROW(mergeReports({a, b}), ReportError);
  b.coverage[0].planned = 1;
  EXPECT_NO_THROW(mergeReports({a, b}));
}

TEST(ReportJson, SummaryCountsAndNearestRankTiming) {
  auto r = makeReport();
  EXPECT_EQ(r.summary.total, 3);
  EXPECT_EQ(r.summary.passed, 2);
  EXPECT_EQ(r.summary.failed, 1);
  EXPECT_DOUBLE_EQ(r.summary.medianCaseMs, 11.0);
  EXPECT_DOUBLE_EQ(r.summary.p95CaseMs, 11.0);
  EXPECT_DOUBLE_EQ(r.summary.casesPerSecond, 6.0);
  // Reasons are reported for every non-pass check.
  auto j = toJson(r);
  EXPECT_EQ(j["cases"][0]["reasons"]["V8"], "callId c1 executed 2 times");
  EXPECT_EQ(j["cases"][0]["reasons"]["V9"], "not sampled");
  EXPECT_FALSE(j["cases"][0]["reasons"].contains("V1"));
}

TEST(ReportJson, TimingStrippedReportsAreEqualForDifferentTimings) {
  auto a = makeReport();
  auto b = makeReport();
  for (auto& c : b.cases) c.durationMs *= 3;
  finalizeSummary(b, 7);
  b.platform.kernel = "other";
  EXPECT_NE(renderJson(a), renderJson(b));
  EXPECT_EQ(withoutTimingAndPlatform(toJson(a)).dump(), withoutTimingAndPlatform(toJson(b)).dump());
}

TEST(JunitXml, OneTestcasePerCaseFailureCarriesVerdictAndReproduce) {
  auto xml = renderJunit(makeReport());
  size_t n = 0;
  for (size_t p = xml.find("<testcase "); p != std::string::npos; p = xml.find("<testcase ", p + 1))
    ++n;
  EXPECT_EQ(n, 3u);
  EXPECT_NE(xml.find("<failure message=\"verdict fail: V8\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("reproduce: crashsim run bash-once/P2#1/kill --keep /tmp/x"),
            std::string::npos);
  EXPECT_NE(xml.find("tests=\"3\" failures=\"1\""), std::string::npos);
}

// An open sweep's case: O1..O5, no V check (crashsim sweep --runtime; kOpenCheckNames).
CaseRecord makeOpenCase(std::string point, std::string o2, std::optional<BaselineEntry> baseline) {
  CaseRecord c;
  c.scenario = "bash-touch-marker";
  c.failpoint = point;
  c.hit = 1;
  c.mode = "kill";
  c.id = "rt/bash-touch-marker/" + point + "#1/kill";
  for (auto n : kOpenCheckNames) c.checks[std::string(n)] = Check{"pass", ""};
  if (!o2.empty()) c.checks["O2"] = Check{"fail", o2};
  c.verdict = o2.empty() ? "pass" : "fail";
  c.reproduce = "crashsim run '" + c.id + "' --runtime rt.json";
  c.baseline = std::move(baseline);
  return c;
}

TEST(JunitXml, AnOpenSweepsKnownFindingIsSkippedAndABaselineChangeFails) {
  Report r;
  r.runtime = "rt";
  r.cases = {
      makeOpenCase("MQ", "", std::nullopt),
      makeOpenCase("TR", "call-1 ran 2 times", BaselineEntry{"re-runs a Bash", "", {"O2"}}),
      makeOpenCase("TE", "",
                   BaselineEntry{"re-runs a Bash", "baseline finding O2 no longer fails", {"O2"}}),
      makeOpenCase("TC", "call-1 ran 2 times", std::nullopt)};
  finalizeSummary(r, 1.0, 1);
  const std::string xml = renderJunit(r);
  EXPECT_NE(xml.find("tests=\"4\" failures=\"2\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"known finding (baseline): O2: re-runs a Bash\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"baseline: baseline finding O2 no longer fails\""),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"verdict fail: O2\""), std::string::npos) << xml;
  // The HTML shows O1–O5 and the open crash points, no V column, no agent failpoint.
  const std::string html = renderHtml(r);
  EXPECT_NE(html.find("<th>O1</th><th>O2</th><th>O3</th><th>O4</th><th>O5</th>"),
            std::string::npos);
  EXPECT_EQ(html.find("<th>V1</th>"), std::string::npos);
  EXPECT_NE(html.find(">MQ</text>"), std::string::npos);
  EXPECT_EQ(html.find(">P0</text>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"known\">known</td>"), std::string::npos);
  EXPECT_NE(html.find("crashsim open sweep of rt: FAIL"), std::string::npos);
}

TEST(Markdown, ShowsVerdictMatrixAndFailureReproduceLine) {
  auto md = renderMarkdown(makeReport());
  EXPECT_NE(md.find("**FAIL**"), std::string::npos);
  EXPECT_NE(md.find("| write-config-port |"), std::string::npos);
  EXPECT_NE(md.find("crashsim run bash-once/P2#1/kill --keep /tmp/x"), std::string::npos);
}

TEST(Html, StaticSvgMatrixWithLegendAndCellLinksToCaseAnchors) {
  auto html = renderHtml(makeReport());
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("all cases pass"), std::string::npos);  // legend
  EXPECT_NE(html.find("not reached"), std::string::npos);
  // The failing cell links to the failing case's detail row.
  auto pos = html.find("href=\"#case-bash-once.2fP2.231.2fkill\"");
  EXPECT_NE(pos, std::string::npos);
  EXPECT_NE(html.find("id=\"case-bash-once.2fP2.231.2fkill\""), std::string::npos);
  // No network: no scripts, stylesheets or images fetched from anywhere.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
}

TEST(Merge, JoinsShardsIntoOneSortedReport) {
  auto full = makeReport();
  Report a = full, b = full;
  a.cases = {full.cases[0]};
  a.shards = {{0, 2}};
  b.cases = {full.cases[1], full.cases[2]};
  b.shards = {{1, 2}};
  finalizeSummary(a, 1.0);
  finalizeSummary(b, 2.0);
  auto m = mergeReports({b, a});
  ASSERT_EQ(m.cases.size(), 3u);
  EXPECT_EQ(m.cases, full.cases);
  EXPECT_EQ(m.summary.failed, 1);
  EXPECT_DOUBLE_EQ(m.summary.wallSeconds, 2.0);
  ASSERT_EQ(m.shards.size(), 2u);
  EXPECT_EQ(m.shards[0].index, 0);
  EXPECT_TRUE(validateSchema(loadSchema(), toJson(m)).empty());
}

TEST(Merge, RefusesDifferentCrashsimVersion) {
  auto a = makeReport(), b = makeReport();
  a.cases.resize(1);
  b.cases.erase(b.cases.begin());
  b.crashsimVersion = "9.9.9";
  b.shards = {{1, 2}};
  try {
    mergeReports({a, b});
    FAIL() << "merged reports of different versions";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("crashsim 9.9.9"), std::string::npos) << e.what();
  }
}

TEST(Merge, RefusesOverlappingCaseSets) {
  auto a = makeReport(), b = makeReport();
  a.shards = {{0, 2}};
  b.shards = {{1, 2}};
  try {
    mergeReports({a, b});
    FAIL() << "merged overlapping cases";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("overlapping"), std::string::npos) << e.what();
  }
}

TEST(Merge, RefusesDifferentSelectionsAndDuplicateShards) {
  auto a = makeReport(), b = makeReport();
  a.cases.resize(1);
  b.cases.erase(b.cases.begin());
  b.selection.mode = "powerloss";
  EXPECT_THROW(mergeReports({a, b}), ReportError);
  b.selection = a.selection;
  EXPECT_THROW(mergeReports({a, b}), ReportError);  // both shard 0/1
}

TEST(WriteAll, WritesFourFilesAndReadsBack) {
  auto dir = std::filesystem::temp_directory_path() /
             ("crashsim-report-test-" + std::to_string(::getpid()));
  auto r = makeReport();
  writeAll(r, dir);
  for (auto f : {"report.json", "junit.xml", "report.md", "report.html"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  EXPECT_EQ(readReportFile(dir / "report.json"), reportFromJson(toJson(r)));
  std::filesystem::remove_all(dir);
}

TEST(ReportJson, PowerlossCaseCarriesOptionalD1D2AndValidates) {
  auto schema = loadSchema();
  Report r = makeReport();
  r.selection.mode = "powerloss";
  for (auto& c : r.cases) {
    c.mode = "powerloss";
    c.id.replace(c.id.find("/kill"), 5, "/powerloss@17");
    c.reproduce = "crashsim run " + c.id;
    c.checks["D1"] = Check{"pass", ""};
    c.checks["D2"] = Check{"pass", ""};
  }
  r.cases[0].checks["D1"] = Check{"fail", "1 acknowledged fact(s) lost by the power cut"};
  r.cases[0].verdict = "fail";
  finalizeSummary(r, 0.5);
  Json j = toJson(r);
  auto violations = validateSchema(schema, j);
  for (const auto& v : violations) ADD_FAILURE() << v.path << ": " << v.message;
  EXPECT_EQ(j["cases"][0]["checks"]["D1"], "fail");
  EXPECT_EQ(j["cases"][0]["reasons"]["D1"], "1 acknowledged fact(s) lost by the power cut");
  EXPECT_EQ(reportFromJson(j), r);  // D1/D2 survive the round trip
  EXPECT_NE(renderHtml(r).find("<th>D1</th>"), std::string::npos);
  // A kill report has no D columns; a bad check status or a seedless powerloss id is rejected.
  EXPECT_EQ(renderHtml(makeReport()).find("<th>D1</th>"), std::string::npos);
  j["cases"][1]["checks"]["D2"] = "maybe";
  j["cases"][2]["id"] = "write-config-port/P4#1/powerloss";
  std::string all;
  for (const auto& v : validateSchema(schema, j)) all += v.path + ": " + v.message + "\n";
  EXPECT_NE(all.find("$.cases[1].checks.D2"), std::string::npos) << all;
  EXPECT_NE(all.find("$.cases[2].id"), std::string::npos) << all;
}

namespace {
// Shard i of n of makeReport()'s cases (by position), with coverage rows and the manifest.
Report shardOf(const Report& full, int i, int n) {
  Report r = full;
  r.cases.clear();
  std::vector<std::string> all, mine;
  for (size_t k = 0; k < full.cases.size(); ++k) {
    all.push_back(full.cases[k].id);
    if (static_cast<int>(k) % n == i) {
      r.cases.push_back(full.cases[k]);
      mine.push_back(full.cases[k].id);
    }
  }
  r.shards = {{i, n}};
  r.coverage = {{"write-config-port", "P4", "agent", 1, static_cast<int>(mine.size()),
                 static_cast<int>(mine.size()), static_cast<int>(mine.size()), 0}};
  r.manifest = Manifest{static_cast<int>(mine.size()), manifestDigest(mine),
                        static_cast<int>(all.size()), manifestDigest(all)};
  finalizeSummary(r, 1.0);
  return r;
}
}  // namespace

TEST(Coverage, RoundTripsAndValidatesAgainstTheSchema) {
  Report r = shardOf(makeReport(), 0, 1);
  r.selection.caseGlobs = {"write-config-port/P4#*"};
  auto j = toJson(r);
  EXPECT_TRUE(validateSchema(loadSchema(), j).empty());
  EXPECT_EQ(j["coverage"][0]["skipped"], 0);
  EXPECT_EQ(reportFromJson(j), r);
  // The digest is order-independent and changes with the case set.
  EXPECT_EQ(manifestDigest({"a", "b"}), manifestDigest({"b", "a"}));
  EXPECT_NE(manifestDigest({"a", "b"}), manifestDigest({"a"}));
  EXPECT_EQ(manifestDigest({}).rfind("sha256:", 0), 0u);
}

TEST(Merge, RefusesAMissingShardAndNamesIt) {
  const Report full = makeReport();
  try {
    mergeReports({shardOf(full, 0, 3), shardOf(full, 2, 3)});
    FAIL() << "merged shards 0 and 2 of 3";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("shard(s) 1/3 missing"), std::string::npos) << e.what();
  }
  auto m = mergeReports({shardOf(full, 0, 3), shardOf(full, 1, 3), shardOf(full, 2, 3)});
  EXPECT_EQ(m.cases.size(), full.cases.size());
  ASSERT_TRUE(m.manifest);
  EXPECT_EQ(m.manifest->digest, m.manifest->sweepDigest);
  ASSERT_EQ(m.coverage.size(), 1u);
  EXPECT_EQ(m.coverage[0].run, static_cast<int>(full.cases.size()));
  EXPECT_TRUE(validateSchema(loadSchema(), toJson(m)).empty());
}

TEST(Merge, RefusesShardsWhoseCasesAreNotTheSweepManifest) {
  const Report full = makeReport();
  Report a = shardOf(full, 0, 2), b = shardOf(full, 1, 2);
  b.cases.pop_back();  // a shard that lost a case it planned
  try {
    mergeReports({a, b});
    FAIL() << "merged a case set smaller than the manifest";
  } catch (const ReportError& e) {
    EXPECT_NE(std::string(e.what()).find("the sweep planned 3"), std::string::npos) << e.what();
  }
  Report c = shardOf(full, 1, 2);
  c.manifest->sweepDigest = manifestDigest({"other"});
  EXPECT_THROW(mergeReports({a, c}), ReportError);
}
