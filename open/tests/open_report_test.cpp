// An open sweep's report.json in the shared report schema (reports/report.schema.json's
// openReport), end to end on the test subject, and `crashsim report merge` of its shards (an open
// sweep is split by scenario). Expected values come from the scenario files, the subject's
// documented checkpoint pattern (three barriers per save), the profile file and the schema's
// contract — never from a run of the sweep. Refusals use hand-built bad inputs.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"
#include "open_test_support.h"

// A named namespace: the unity build joins this file with open_sweep_test.cpp's helpers.
namespace open_report_test {

namespace fs = std::filesystem;
using nlohmann::json;
namespace reports = crashsim::reports;

fs::path crashsimBinary() { return open_test::binaryDir().parent_path() / "harness" / "crashsim"; }
fs::path subjectProfile() { return open_test::sourceDir() / "open" / "subject" / "runtime.json"; }

struct CliResult {
  int rc = -1;
  std::string out;  // stdout and stderr
};

// A shell command (crashsim's path first), stdout and stderr together.
CliResult shell(const std::string& args, const std::map<std::string, std::string>& env = {}) {
  open_test::ScratchDir dir;
  const std::string cmd = "'" + crashsimBinary().string() + "' " + args + " >'" +
                          (dir.path / "out").string() + "' 2>&1";
  open_test::Child child({"sh", "-c", cmd}, env, false);
  const auto status = child.waitFor(std::chrono::minutes(5));
  return {status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1,
          open_test::readFile(dir.path / "out")};
}

// `crashsim sweep` of the subject on one scenario, the given cases, into out.
CliResult sweep(const std::string& scenario, const std::vector<std::string>& cases,
                const fs::path& out, const std::string& extra = "",
                const std::map<std::string, std::string>& env = {}) {
  std::string args = "sweep --runtime '" + subjectProfile().string() + "' --scenarios '" +
                     (open_test::sourceDir() / "scenarios").string() + "' --scenario " + scenario +
                     " --out '" + out.string() + "' " + extra;
  for (const auto& c : cases) args += " --case '" + c + "'";
  return shell(args, env);
}

std::string violationsOf(const json& report) {
  std::string all;
  for (const auto& v : reports::validateSchema(reports::reportSchema(), report))
    all += v.path + ": " + v.message + "\n";
  return all;
}

json load(const fs::path& file) { return json::parse(open_test::readFile(file)); }

void save(const fs::path& file, const json& j) { std::ofstream(file) << j.dump(2); }

// The profile file's sha256 by sha256sum, not by the code under test.
std::string sha256sumOf(const fs::path& file) {
  open_test::ScratchDir dir;
  const std::string cmd =
      "sha256sum '" + file.string() + "' | cut -c1-64 >'" + (dir.path / "sum").string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::string sum = open_test::readFile(dir.path / "sum");
  while (!sum.empty() && sum.back() == '\n') sum.pop_back();
  return "sha256:" + sum;
}

// report.json of an open sweep is the shared schema's openReport: the runtime's identity, the
// interposer, the reference run's hits, O1..O5 on each case and a known finding's baseline fields.
TEST(OpenReport, AnOpenSweepsReportJsonFollowsTheSharedSchema) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  open_test::ScratchDir dir;
  const std::string known = "subject-py/bash-touch-marker/TR#1/kill";
  const std::string reason = "the runtime re-runs a finished Bash on resume";
  std::ofstream(dir.path / "baseline.json")
      << json{{"baselineVersion", 1},
              {"findings", {{{"case", known}, {"verdicts", {"O2"}}, {"reason", reason}}}}}
             .dump();
  const std::vector<std::string> cases = {"*/MQ#1/kill", "*/TR#1/kill", "*/S#1/kill"};
  const CliResult r = sweep("bash-touch-marker", cases, dir.path / "out",
                            "--baseline '" + (dir.path / "baseline.json").string() + "'",
                            {{"SUBJECT_BREAK", "rerun_finished"}});
  EXPECT_EQ(r.rc, 0) << r.out;  // the one failure is the baseline's known finding
  const json report = load(dir.path / "out" / "report.json");
  EXPECT_EQ(violationsOf(report), "");
  EXPECT_EQ(report["formatVersion"], 1);
  EXPECT_EQ(report["runtime"], (json{{"name", "subject-py"},
                                     {"level", 0},
                                     {"profileDigest", sha256sumOf(subjectProfile())}}));
  EXPECT_EQ(report["interposer"], (json{{"preloaded", true}}));
  // bash-touch-marker (Bash; final): 2 model requests and answers, 1 call, 6 saves of 3 barriers.
  ASSERT_EQ(report["scenarios"].size(), 1u) << report["scenarios"];
  const json& ref = report["scenarios"]["bash-touch-marker"];
  EXPECT_EQ(ref["hits"], (json{{"MQ", 2}, {"MA", 2}, {"TC", 1}, {"TE", 1}, {"TR", 1}, {"S", 18}}));
  EXPECT_EQ(ref["interposerLoaded"], true);
  EXPECT_EQ(report["selection"]["determinism"], "first-hit");
  EXPECT_EQ(report["selection"]["caseGlobs"], json(cases));
  EXPECT_EQ(report["summary"]["total"], 3);
  EXPECT_EQ(report["summary"]["failed"], 1);
  std::vector<std::string> ids;
  for (const json& c : report["cases"]) {
    ids.push_back(c["id"]);
    EXPECT_EQ(c["checks"].size(), 5u) << c["id"];
  }
  // Plan order: MQ MA TC TE TR S.
  EXPECT_EQ(ids, (std::vector<std::string>{"subject-py/bash-touch-marker/MQ#1/kill", known,
                                           "subject-py/bash-touch-marker/S#1/kill"}));
  const json& finding = report["cases"][1];
  EXPECT_EQ(finding["verdict"], "fail");
  EXPECT_EQ(finding["checks"]["O2"], "fail");
  EXPECT_FALSE(finding["reasons"]["O2"].get<std::string>().empty());
  EXPECT_EQ(finding["baseline"], json::array({"O2"}));
  EXPECT_EQ(finding["baselineReason"], reason);
  EXPECT_FALSE(finding.contains("baselineChange")) << finding;
  const std::string md = open_test::readFile(dir.path / "out" / "report.md");
  EXPECT_NE(md.find("# crashsim open sweep of subject-py\n"), std::string::npos) << md;
  EXPECT_NE(md.find("### `" + known + "` (known finding)"), std::string::npos) << md;
}

// Shards of one open sweep, one per scenario, merge into one report; an open shard never merges
// with a built-in sweep's report nor with another runtime's or profile's shard (exit 2).
TEST(OpenReport, ReportMergeJoinsScenarioShardsAndRefusesOtherSweeps) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  open_test::ScratchDir dir;
  const fs::path a = dir.path / "a", b = dir.path / "b";
  ASSERT_EQ(sweep("bash-touch-marker", {"*/MQ#1/kill"}, a, "--no-determinism").rc, 0);
  ASSERT_EQ(sweep("write-config-port", {"*/MQ#1/kill"}, b, "--no-determinism").rc, 0);
  const auto merge = [&](const fs::path& x, const fs::path& y, const fs::path& out) {
    return shell("report merge '" + x.string() + "' '" + y.string() + "' --out '" + out.string() +
                 "'");
  };
  const CliResult m = merge(a / "report.json", b / "report.json", dir.path / "merged");
  ASSERT_EQ(m.rc, 0) << m.out;
  const json merged = load(dir.path / "merged" / "report.json");
  EXPECT_EQ(violationsOf(merged), "");
  std::vector<std::string> ids;
  for (const json& c : merged["cases"]) ids.push_back(c["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"subject-py/bash-touch-marker/MQ#1/kill",
                                           "subject-py/write-config-port/MQ#1/kill"}));
  EXPECT_EQ(merged["selection"]["scenarios"], (json{"bash-touch-marker", "write-config-port"}));
  EXPECT_EQ(merged["scenarios"].size(), 2u);
  EXPECT_EQ(merged["runtime"], load(a / "report.json")["runtime"]);
  for (const char* f : {"junit.xml", "report.md", "report.html"})
    EXPECT_TRUE(fs::is_regular_file(dir.path / "merged" / f)) << f;

  // Refusals: the code, exit 2, nothing written.
  int n = 0;
  const auto refused = [&](const fs::path& x, const fs::path& y, const std::string& code,
                           const std::string& why) {
    const fs::path out = dir.path / ("refused-" + std::to_string(n++));
    const CliResult r = merge(x, y, out);
    EXPECT_EQ(r.rc, 2) << why << ": " << r.out;
    EXPECT_NE(r.out.find(code), std::string::npos) << why << ": " << r.out;
    EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out / "report.json")) << why;
  };
  // The same scenario twice.
  refused(a / "report.json", a / "report.json", "report_merge_refused",
          "scenario bash-touch-marker was swept by more than one report");
  // Another runtime, another level, another profile.
  json other = load(b / "report.json");
  other["runtime"]["name"] = "langgraph-js";
  save(dir.path / "other.json", other);
  refused(a / "report.json", dir.path / "other.json", "report_merge_refused",
          "swept runtime langgraph-js");
  json level = load(b / "report.json");
  level["runtime"]["level"] = 1;
  save(dir.path / "level.json", level);
  refused(a / "report.json", dir.path / "level.json", "report_merge_refused", "(level 1,");
  json profile = load(b / "report.json");
  profile["runtime"]["profileDigest"] = "sha256:" + std::string(64, '0');
  save(dir.path / "profile.json", profile);
  refused(a / "report.json", dir.path / "profile.json", "report_merge_refused",
          "share one profile");
  // A built-in sweep's report (hand-built, valid in its own branch of the schema), either order.
  reports::Report builtin;
  builtin.crashsimVersion = load(a / "report.json")["crashsimVersion"];
  builtin.platform = {"Linux", "6.1", "x86_64", "ext4", "3.40.1",    "GCC 12",
                      "Debug", {},    "wal",    "FULL", std::nullopt};
  builtin.shards = {{0, 1}};
  reports::CaseRecord c;
  c.id = "bash-once/P2#1/kill";
  c.scenario = "bash-once";
  c.failpoint = "P2";
  c.hit = 1;
  c.mode = "kill";
  for (auto v : reports::kCheckNames) c.checks[std::string(v)] = {"pass", ""};
  c.verdict = "pass";
  c.reproduce = "crashsim run bash-once/P2#1/kill --keep /tmp/x";
  builtin.cases = {c};
  reports::finalizeSummary(builtin, 1.0, 1);
  ASSERT_EQ(violationsOf(reports::toJson(builtin)), "");
  save(dir.path / "builtin.json", reports::toJson(builtin));
  refused(a / "report.json", dir.path / "builtin.json", "report_merge_refused",
          "report 0 is an open sweep of runtime subject-py, report 1 a sweep of crashsim's own");
  refused(dir.path / "builtin.json", a / "report.json", "report_merge_refused",
          "report 1 is an open sweep of runtime subject-py, report 0 a sweep of crashsim's own");
  // An open case without O3 breaks the schema: refused before the merge.
  json noO3 = load(b / "report.json");
  noO3["cases"][0]["checks"].erase("O3");
  save(dir.path / "no-o3.json", noO3);
  refused(a / "report.json", dir.path / "no-o3.json", "report_schema_violation",
          "missing required property O3");
}

}  // namespace open_report_test
