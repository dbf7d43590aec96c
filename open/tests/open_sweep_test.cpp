// `crashsim sweep|run --runtime FILE` end to end on the test subject (open/subject/subject.py):
// real processes, real HTTP, real files. Every expected value comes from the scenario files
// (their model steps and calls), the subject's documented checkpoint pattern (three barriers
// per save, subject_test.cpp) and the protocol's promises — never from a run of the sweep.
//
// Planted faults: each SUBJECT_BREAK switch breaks exactly one promise, at a case where the
// protocol says it shows; that case must turn exactly that verdict red and leave the other four
// green, and the unbroken subject must pass the same case.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "open_test_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using open_test::Child;

fs::path crashsimBinary() { return open_test::binaryDir().parent_path() / "harness" / "crashsim"; }
fs::path subjectProfile() { return open_test::sourceDir() / "open" / "subject" / "runtime.json"; }
// The same subject at level 1: its named failpoints `answered` and `saved` are swept too.
fs::path level1Profile() {
  return open_test::sourceDir() / "open" / "subject" / "runtime-level1.json";
}

struct CliRun {
  int rc = -1;
  std::string out, err;
};

// crashsim with `args` (the subject's profile and the built-in scenarios added), in `env`.
CliRun crashsim(std::vector<std::string> args, const std::map<std::string, std::string>& env = {},
                const fs::path& profile = subjectProfile()) {
  open_test::ScratchDir dir;
  args.insert(args.end(), {"--runtime", profile.string(), "--scenarios",
                           (open_test::sourceDir() / "scenarios").string()});
  std::string cmd = "'" + crashsimBinary().string() + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >'" + (dir.path / "out").string() + "' 2>'" + (dir.path / "err").string() + "'";
  Child child({"sh", "-c", cmd}, env, false);
  const auto status = child.waitFor(std::chrono::minutes(5));
  CliRun r;
  r.rc = status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
  r.out = open_test::readFile(dir.path / "out");
  r.err = open_test::readFile(dir.path / "err");
  return r;
}

// The verdict lines `crashsim run` prints: O1..O5 → "pass" or the reason.
std::map<std::string, std::string> verdictsOf(const std::string& out) {
  std::map<std::string, std::string> v;
  for (const auto& line : open_test::lines(out))
    if (line.size() > 4 && line[0] == 'O' && line[2] == ':') v[line.substr(0, 2)] = line.substr(4);
  return v;
}

TEST(OpenSweep, ListsEveryHitOfTheReferenceRun) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const CliRun r = crashsim({"sweep", "--scenario", "write-config-port", "--list"});
  ASSERT_EQ(r.rc, 0) << r.err;
  // write-config-port: 3 model steps (Read; Write; final), 2 calls, 9 saves of 3 barriers.
  const std::map<std::string, int> hits = {{"MQ", 3}, {"MA", 3}, {"TC", 2},
                                           {"TE", 2}, {"TR", 2}, {"S", 27}};
  std::set<std::string> expected;
  for (const auto& [point, n] : hits)
    for (int k = 1; k <= n; ++k)
      expected.insert("subject-py/write-config-port/" + point + "#" + std::to_string(k) + "/kill");
  const auto listed = open_test::lines(r.out);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), expected);
  EXPECT_EQ(listed.size(), expected.size()) << "a case listed twice";
  EXPECT_EQ(listed.front(), "subject-py/write-config-port/MQ#1/kill") << "MQ first";
}

TEST(OpenSweep, TheCorrectSubjectPassesEverySweptCase) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  open_test::ScratchDir out;
  // Every model and tool point of two scenarios, and the barriers of the first save of each
  // boundary (the subject's saves are all alike: three barriers each).
  const CliRun r = crashsim({"sweep", "--scenario", "write-config-port", "--scenario",
                             "bash-touch-marker", "--case", "*/M?#*", "--case", "*/T?#*", "--case",
                             "*/S#[1-3]/kill", "--out", out.path.string()});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  const json report = json::parse(open_test::readFile(out.path / "report.json"));
  // write-config-port: 12 model/tool cases + 3; bash-touch-marker (Bash; final): 2+2+1+1+1 + 3.
  EXPECT_EQ(report["summary"]["total"], 15 + 10);
  EXPECT_EQ(report["summary"]["failed"], 0);
  int determinism = 0;
  for (const json& c : report["cases"]) {
    for (const char* v : {"O1", "O2", "O3", "O4"})
      EXPECT_EQ(c["checks"][v], "pass") << c["id"] << " " << v;
    if (c["hit"] == 1) {
      EXPECT_EQ(c["checks"]["O5"], "pass") << c["id"];
      ++determinism;
    }
  }
  EXPECT_EQ(determinism, 12) << "O5 samples the first hit of each point of each scenario";
}

struct Planted {
  const char* brk;      // SUBJECT_BREAK
  const char* caseId;   // where the broken promise shows
  const char* verdict;  // the one verdict that must turn red
};

// write-config-port: call-1 Read, call-2 Write; bash-touch-marker: call-1 Bash.
const Planted kPlanted[] = {
    // The tool server that reported TE#2 lives in its own session: it outlives the group kill.
    {"detach_tools", "subject-py/write-config-port/TE#2/kill", "O1"},
    // The Bash finished and its result was saved; the resume runs it again.
    {"rerun_finished", "subject-py/bash-touch-marker/TR#1/kill", "O2"},
    // Killed before the Write's effect; the resume exits 0 without it.
    {"exit0_unfinished", "subject-py/write-config-port/TC#2/kill", "O3"},
    // The Write's effect ran, its result never came back; the resume tells the model it was
    // not executed.
    {"unknown_as_not_executed", "subject-py/write-config-port/TE#2/kill", "O4"},
    // The Write's effect ran; the resume tells the model the call was cancelled.
    {"unknown_as_cancelled", "subject-py/write-config-port/TE#2/kill", "O4"},
    // The Bash's effect ran, its result never came back; the resume sends it again with its
    // command re-encoded: the tool server matches no scenario call and runs it unscripted.
    {"retry_reencoded", "subject-py/bash-touch-marker/TE#1/kill", "O2"},
    // Killed at the first model request: the resume stops though nothing can be unknown.
    {"stop_always", "subject-py/write-config-port/MQ#1/kill", "O3"},
    // parallel-calls: the three results saved, the next request killed; the resume re-attaches
    // them to the calls in reverse order (the Bash's result under the Write's id).
    {"results_reversed", "subject-py/parallel-calls/MQ#2/kill", "O4"},
    // Every second resume stops (declared, exit 3) instead of finishing: each run is allowed,
    // the two runs of the case differ.
    {"flaky_resume", "subject-py/write-config-port/MQ#2/kill", "O5"},
};

// gtest prints the parameter in test names' comments: the switch and the case, not bytes.
void PrintTo(const Planted& p, std::ostream* os) { *os << p.brk << " at " << p.caseId; }

class OpenPlantedFault : public ::testing::TestWithParam<Planted> {};

TEST_P(OpenPlantedFault, TurnsExactlyItsVerdictRed) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const Planted& p = GetParam();
  open_test::ScratchDir scratch;
  const std::map<std::string, std::string> broken = {
      {"SUBJECT_BREAK", p.brk}, {"SUBJECT_FLAKY_FILE", (scratch.path / "flaky").string()}};
  const CliRun bad = crashsim({"run", p.caseId}, broken);
  EXPECT_EQ(bad.rc, 1) << bad.out << bad.err;
  const auto verdicts = verdictsOf(bad.out);
  ASSERT_EQ(verdicts.size(), 5u) << bad.out << bad.err;
  for (const auto& [name, result] : verdicts) {
    if (name == p.verdict)
      EXPECT_NE(result, "pass") << p.brk << " must turn " << name << " red";
    else
      EXPECT_EQ(result, "pass") << p.brk << " must leave " << name << " green";
  }
  const CliRun good = crashsim({"run", p.caseId});
  EXPECT_EQ(good.rc, 0) << good.out << good.err;
  for (const auto& [name, result] : verdictsOf(good.out))
    EXPECT_EQ(result, "pass") << "the unbroken subject at " << p.caseId << ": " << name;
}

INSTANTIATE_TEST_SUITE_P(Subject, OpenPlantedFault, ::testing::ValuesIn(kPlanted),
                         [](const auto& info) {
                           return std::string(info.param.verdict) + "_" + info.param.brk;
                         });

TEST(OpenSweep, DoubleFaultsKillTheResumeAtEveryPointItReaches) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const std::string primary = "subject-py/bash-touch-marker/MQ#1/kill";
  const CliRun r = crashsim({"sweep", "--scenario", "bash-touch-marker", "--double-faults",
                             "--case", primary + "*", "--list"});
  ASSERT_EQ(r.rc, 0) << r.err;
  // Killed before the first answer, the resume does the whole task from the saved start:
  // 2 model requests and answers (Bash; final), 1 call, and 5 saves of 3 barriers (answer,
  // started, result, final answer, done).
  const std::map<std::string, int> hits = {{"MQ", 2}, {"MA", 2}, {"TC", 1},
                                           {"TE", 1}, {"TR", 1}, {"S", 15}};
  std::set<std::string> expected = {primary};
  for (const auto& [point, n] : hits)
    for (int k = 1; k <= n; ++k) expected.insert(primary + "+R:" + point + "#" + std::to_string(k));
  const auto listed = open_test::lines(r.out);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), expected);
  // One of them run: the resume killed after the Bash's effect parks the call (exit 3).
  const CliRun one = crashsim({"run", primary + "+R:TE#1"});
  EXPECT_EQ(one.rc, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("resume2: exited with code 3"), std::string::npos) << one.out;
  // A resume point the resume does not reach is refused, not run.
  const CliRun unreachable = crashsim({"run", "subject-py/bash-touch-marker/TE#1/kill+R:MQ#1"});
  EXPECT_EQ(unreachable.rc, 2) << unreachable.out;
  EXPECT_NE(unreachable.err.find("open_case_invalid"), std::string::npos) << unreachable.err;
}

TEST(OpenSweep, ABaselineGatesOnChangesOnly) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  open_test::ScratchDir dir;
  const std::string id = "subject-py/bash-touch-marker/TR#1/kill";
  const fs::path known = dir.path / "known.json";
  std::ofstream(known) << json{{"baselineVersion", 1},
                               {"findings",
                                {{{"case", id},
                                  {"verdicts", {"O2"}},
                                  {"reason", "the runtime re-runs a finished Bash on resume"}}}}}
                              .dump();
  const std::vector<std::string> sweep = {
      "sweep", "--scenario", "bash-touch-marker", "--case", id, "--no-determinism", "--baseline"};
  auto with = [&](const fs::path& baseline) {
    auto args = sweep;
    args.push_back(baseline.string());
    return args;
  };
  const std::map<std::string, std::string> broken = {{"SUBJECT_BREAK", "rerun_finished"}};
  // The known finding: exit 0, listed as known.
  const CliRun r1 = crashsim(with(known), broken);
  EXPECT_EQ(r1.rc, 0) << r1.out << r1.err;
  EXPECT_NE(r1.out.find("known " + id), std::string::npos) << r1.out;
  // The same finding without a baseline entry is new: exit 1.
  const fs::path empty = dir.path / "empty.json";
  std::ofstream(empty) << R"({"baselineVersion": 1, "findings": []})";
  EXPECT_EQ(crashsim(with(empty), broken).rc, 1);
  // The runtime fixed: the known finding no longer fails, exit 1.
  const CliRun r3 = crashsim(with(known));
  EXPECT_EQ(r3.rc, 1) << r3.out;
  EXPECT_NE(r3.out.find("no longer fails"), std::string::npos) << r3.out;
  // A malformed baseline is refused before anything runs.
  const fs::path bad = dir.path / "bad.json";
  std::ofstream(bad) << R"({"baselineVersion": 1, "findings": [{"case": ")" << id
                     << R"(", "verdicts": ["V2"], "reason": "x"}]})";
  const CliRun r4 = crashsim(with(bad));
  EXPECT_EQ(r4.rc, 2);
  EXPECT_NE(r4.err.find("open_baseline_invalid"), std::string::npos) << r4.err;
}

// junit.xml and report.html of a sweep in `dir`, read by Python's XML and HTML parsers
// (report_views.py): a malformed file fails the parse.
json reportViews(const fs::path& dir) {
  open_test::ScratchDir tmp;
  const fs::path out = tmp.path / "views.json";
  const std::string cmd = "'" + open_test::python() + "' '" +
                          (open_test::sourceDir() / "open" / "tests" / "report_views.py").string() +
                          "' '" + (dir / "junit.xml").string() + "' '" +
                          (dir / "report.html").string() + "' >'" + out.string() + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return json::parse(open_test::readFile(out), nullptr, false);
}

// --out writes the CI views of the one report model beside the open report: a failing verdict
// is a JUnit <failure> naming it, a baseline's known finding <skipped> with the entry's reason
// (not a failure), a finding gone from the runtime a <failure>; the HTML table has O1–O5.
TEST(OpenSweep, TheReportsOfAnOpenSweepAreJunitAndHtml) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  open_test::ScratchDir dir;
  // bash-touch-marker's one call is a Bash; rerun_finished runs it again after TR#1 (O2), and
  // has nothing to re-run when the kill lands before the first answer (MQ#1).
  const std::string broken = "subject-py/bash-touch-marker/TR#1/kill";
  const std::string clean = "subject-py/bash-touch-marker/MQ#1/kill";
  const std::string reason = "the runtime re-runs a finished Bash on resume";
  const fs::path known = dir.path / "known.json", empty = dir.path / "empty.json";
  std::ofstream(known) << json{{"baselineVersion", 1},
                               {"findings",
                                {{{"case", broken}, {"verdicts", {"O2"}}, {"reason", reason}}}}}
                              .dump();
  std::ofstream(empty) << R"({"baselineVersion": 1, "findings": []})";
  auto sweep = [&](const fs::path& baseline, const fs::path& out,
                   const std::map<std::string, std::string>& env) {
    return crashsim({"sweep", "--scenario", "bash-touch-marker", "--case", broken, "--case", clean,
                     "--no-determinism", "--baseline", baseline.string(), "--out", out.string()},
                    env);
  };
  const std::map<std::string, std::string> rerun = {{"SUBJECT_BREAK", "rerun_finished"}};
  const std::vector<std::string> columns = {"case", "verdict", "O1",      "O2",       "O3",
                                            "O4",   "O5",      "reasons", "reproduce"};

  // A new finding: TR#1 fails O2 and no entry lists it.
  const CliRun r1 = sweep(empty, dir.path / "new", rerun);
  EXPECT_EQ(r1.rc, 1) << r1.out << r1.err;
  for (const char* f : {"report.json", "report.md", "junit.xml", "report.html"})
    EXPECT_TRUE(fs::is_regular_file(dir.path / "new" / f)) << f;
  const json v1 = reportViews(dir.path / "new");
  ASSERT_FALSE(v1.is_discarded()) << "junit.xml or report.html did not parse";
  EXPECT_EQ(v1["junit"]["counts"], (json{{"tests", 2}, {"failures", 1}, {"skipped", 0}}));
  EXPECT_EQ(v1["junit"]["cases"][clean]["status"], "pass");
  EXPECT_EQ(v1["junit"]["cases"][broken]["status"], "failure");
  EXPECT_EQ(v1["junit"]["cases"][broken]["message"], "verdict fail: O2");
  EXPECT_EQ(v1["html"]["errors"], json::array());
  EXPECT_EQ(v1["html"]["header"], json(columns));
  const json row = v1["html"]["rows"][broken];
  ASSERT_EQ(row.size(), columns.size()) << v1["html"];
  EXPECT_EQ(row[1], "fail");
  EXPECT_EQ(json({row[2], row[3], row[4], row[5], row[6]}),
            json({"pass", "fail", "pass", "pass", "n/a"}));

  // The same finding, known: skipped with the entry's reason, no failure.
  const CliRun r2 = sweep(known, dir.path / "known", rerun);
  EXPECT_EQ(r2.rc, 0) << r2.out << r2.err;
  const json v2 = reportViews(dir.path / "known");
  ASSERT_FALSE(v2.is_discarded());
  EXPECT_EQ(v2["junit"]["counts"], (json{{"tests", 2}, {"failures", 0}, {"skipped", 1}}));
  EXPECT_EQ(v2["junit"]["cases"][broken]["status"], "skipped");
  EXPECT_NE(v2["junit"]["cases"][broken]["message"].get<std::string>().find(reason),
            std::string::npos)
      << v2["junit"];
  EXPECT_EQ(v2["junit"]["cases"][clean]["status"], "pass");
  EXPECT_EQ(v2["html"]["rows"][broken][1], "known");

  // The runtime fixed: the entry no longer matches, a failure that says so.
  const CliRun r3 = sweep(known, dir.path / "fixed", {});
  EXPECT_EQ(r3.rc, 1) << r3.out << r3.err;
  const json v3 = reportViews(dir.path / "fixed");
  ASSERT_FALSE(v3.is_discarded());
  EXPECT_EQ(v3["junit"]["counts"], (json{{"tests", 2}, {"failures", 1}, {"skipped", 0}}));
  EXPECT_EQ(v3["junit"]["cases"][broken]["status"], "failure");
  EXPECT_EQ(v3["junit"]["cases"][broken]["message"],
            "baseline: baseline finding O2 no longer fails");
}

// --jobs 2: two cases at once, each in its own directory, model server and process group; the
// records come out in plan order (the --list order) and each case's verdicts are its own: the
// planted O2 fault (rerun_finished re-runs a Bash whose result was saved) shows exactly at the
// kills after the result was saved — TR#1 (the next request), MQ#2 (the request carrying the
// result), MA#2 (the final answer) — and not before the Bash ran (MQ#1, MA#1, TC#1) or while its
// outcome is unknown (TE#1: the result never saved).
TEST(OpenSweep, JobsRunCasesAtOnceAndReportInPlanOrder) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  open_test::ScratchDir out;
  const std::vector<std::string> select = {"sweep",  "--scenario",      "bash-touch-marker",
                                           "--case", "*/M?#*",          "--case",
                                           "*/T?#*", "--no-determinism"};
  const CliRun list = crashsim([&] {
    auto a = select;
    a.push_back("--list");
    return a;
  }());
  ASSERT_EQ(list.rc, 0) << list.err;
  const std::vector<std::string> planned = open_test::lines(list.out);
  // bash-touch-marker (Bash; final): MQ 2, MA 2, TC 1, TE 1, TR 1.
  ASSERT_EQ(planned.size(), 7u) << list.out;
  auto args = select;
  args.insert(args.end(), {"--jobs", "2", "--out", out.path.string()});
  const CliRun r = crashsim(args, {{"SUBJECT_BREAK", "rerun_finished"}});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  const json report = json::parse(open_test::readFile(out.path / "report.json"));
  std::vector<std::string> ids;
  for (const json& c : report["cases"]) {
    ids.push_back(c["id"]);
    const std::string id = c["id"];
    const bool planted =
        id.ends_with("/TR#1/kill") || id.ends_with("/MQ#2/kill") || id.ends_with("/MA#2/kill");
    for (const char* v : {"O1", "O2", "O3", "O4"})
      EXPECT_EQ(c["checks"][v], planted && std::string(v) == "O2" ? "fail" : "pass")
          << c["id"] << " " << v;
  }
  EXPECT_EQ(ids, planned);
}

// O2 judges the runtime, not the tool: a runtime that sends its finished Write again is caught
// although the tool server's Write finds its content in place and does not run (no second
// effects line). write-config-port killed at MQ#3 (the final request: the Write finished and its
// result saved); SUBJECT_BREAK=rerun_finished sends the Write again on resume. Without the
// re-sent log this case passed every verdict (seen: O2 green before the tool server kept it).
TEST(OpenSweep, AFinishedWriteSentAgainFailsO2ThoughTheToolDidNotRunIt) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const std::string id = "subject-py/write-config-port/MQ#3/kill";
  const CliRun bad = crashsim({"run", id}, {{"SUBJECT_BREAK", "rerun_finished"}});
  EXPECT_EQ(bad.rc, 1) << bad.out << bad.err;
  const auto verdicts = verdictsOf(bad.out);
  ASSERT_EQ(verdicts.size(), 5u) << bad.out << bad.err;
  EXPECT_NE(verdicts.at("O2").find("call-2 (Write) was sent again 1 time(s)"), std::string::npos)
      << verdicts.at("O2");
  for (const char* v : {"O1", "O3", "O4", "O5"}) EXPECT_EQ(verdicts.at(v), "pass") << v;
  const CliRun good = crashsim({"run", id});
  EXPECT_EQ(good.rc, 0) << good.out << good.err;
}

// Level 1: the runtime's own named failpoints, planned from the counts its reference run writes
// (CRASHSIM_HITS_OUT) after the open points. The subject's documented boundaries for
// write-config-port: `answered` once per model answer (3 steps), `saved` once per checkpoint save
// (the nine saves of subject_test.cpp's table).
TEST(OpenSweep, ALevel1ProfileListsItsNamedPointsAfterTheOpenOnes) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const CliRun r =
      crashsim({"sweep", "--scenario", "write-config-port", "--list"}, {}, level1Profile());
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::vector<std::pair<std::string, int>> hits = {{"MQ", 3},       {"MA", 3},   {"TC", 2},
                                                         {"TE", 2},       {"TR", 2},   {"S", 27},
                                                         {"answered", 3}, {"saved", 9}};
  std::vector<std::string> expected;
  for (const auto& [point, n] : hits)
    for (int k = 1; k <= n; ++k)
      expected.push_back("subject-py-level1/write-config-port/" + point + "#" + std::to_string(k) +
                         "/kill");
  EXPECT_EQ(open_test::lines(r.out), expected);
  // The resume is swept at its named points too: after TE#2 (the Write done, its result lost)
  // the resume parks the Write with a declared stop before any save; after TE#1 (the Read) it
  // re-runs the Read and goes on: its saves and answers are double faults.
  const CliRun d = crashsim({"sweep", "--scenario", "write-config-port", "--double-faults",
                             "--case", "*/TE#1/kill*", "--list"},
                            {}, level1Profile());
  ASSERT_EQ(d.rc, 0) << d.err;
  EXPECT_NE(d.out.find("/TE#1/kill+R:saved#1\n"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("/TE#1/kill+R:answered#1\n"), std::string::npos) << d.out;
}

// The window level 1 exists for: a runtime that persists without barriers
// (SUBJECT_DURABILITY=plain: no fsync, no rename, so no S) and records a call finished before its
// result, in a save of its own (SUBJECT_BREAK=finished_before_result). No model or tool point lies
// between the two saves, so the level-0 sweep passes; the level-1 sweep fails exactly at the saves
// that record a call finished without its result (saves 4 and 8 of the eleven with the break:
// start, answer, call-1 started, finished, result, answer, call-2 started, finished, result, final
// answer, done) with O4 (the history the resume sends lacks that result). The unbroken subject
// passes the same cases.
TEST(OpenSweep, ANamedPointSeesAWindowNoLevel0PointReaches) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const std::map<std::string, std::string> plain = {{"SUBJECT_DURABILITY", "plain"}};
  std::map<std::string, std::string> broken = plain;
  broken["SUBJECT_BREAK"] = "finished_before_result";
  const std::vector<std::string> sweep = {
      "sweep", "--scenario", "write-config-port", "--no-determinism", "--jobs", "2"};
  const CliRun level0 = crashsim(sweep, broken);
  EXPECT_EQ(level0.rc, 0) << level0.out << level0.err;
  EXPECT_NE(level0.out.find("12 case(s), 0 failed"), std::string::npos) << level0.out;

  std::vector<std::string> named = sweep;
  named.insert(named.end(), {"--failpoint", "saved", "--failpoint", "answered"});
  const CliRun level1 = crashsim(named, broken, level1Profile());
  EXPECT_EQ(level1.rc, 1) << level1.out << level1.err;
  std::set<std::string> failing;
  for (const auto& line : open_test::lines(level1.out))
    if (line.starts_with("FAIL ")) failing.insert(line.substr(5));
  EXPECT_EQ(failing, (std::set<std::string>{"subject-py-level1/write-config-port/saved#4/kill",
                                            "subject-py-level1/write-config-port/saved#8/kill"}))
      << level1.out;
  EXPECT_NE(level1.out.find("O4: "), std::string::npos) << level1.out;
  EXPECT_NE(level1.out.find("14 case(s), 2 failed"), std::string::npos) << level1.out;

  const CliRun control = crashsim(named, plain, level1Profile());
  EXPECT_EQ(control.rc, 0) << control.out << control.err;
  EXPECT_NE(control.out.find("12 case(s), 0 failed"), std::string::npos) << control.out;
}

// A level-1 runtime owes its counts: none at the end of an unarmed run, or a name that is not a
// safe failpoint name (one of the open points), is a sweep that cannot be planned.
TEST(OpenSweep, ALevel1RuntimeThatBreaksTheCountsProtocolIsAnError) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  for (const std::string how : {"none", "bad"}) {
    const CliRun r = crashsim({"sweep", "--scenario", "write-config-port", "--list"},
                              {{"SUBJECT_HITS", how}}, level1Profile());
    EXPECT_EQ(r.rc, 2) << how << ": " << r.out;
    EXPECT_NE(r.err.find("open_reference_failed"), std::string::npos) << how << ": " << r.err;
    EXPECT_NE(r.err.find("named-failpoint counts"), std::string::npos) << how << ": " << r.err;
    EXPECT_EQ(open_test::lines(r.err).size(), 1u) << r.err;
  }
  // The unbroken level-1 subject (above) plans; a level-0 profile never asks for the counts.
  const CliRun r =
      crashsim({"sweep", "--scenario", "write-config-port", "--list"}, {{"SUBJECT_HITS", "none"}});
  EXPECT_EQ(r.rc, 0) << r.err;
}

TEST(OpenSweep, ASelectionThatRunsNothingIsAnError) {
  ASSERT_FALSE(open_test::python().empty()) << "python3 is required";
  const CliRun r = crashsim({"sweep", "--scenario", "write-config-port", "--case", "nothing*"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("open_selection_empty"), std::string::npos) << r.err;
  EXPECT_EQ(open_test::lines(r.err).size(), 1u) << r.err;
}

TEST(OpenSweep, AReferenceRunThatReachesNoCrashPointIsAnError) {
  open_test::ScratchDir dir;
  const fs::path profile = dir.path / "runtime.json";
  std::ofstream(profile) << R"({"profileVersion": 1, "name": "does-nothing", "level": 0,
    "commands": {"run": {"argv": ["true"]}, "resume": {"argv": ["true"]}},
    "model": {"api": "openai-chat-completions"}, "tools": {"via": "mcp-stdio"},
    "state": {"paths": []}, "limits": {"runSeconds": 10, "resumeSeconds": 10},
    "semantics": {"unknownOutcome": "park", "stopExitCodes": []}})";
  const CliRun r = crashsim({"sweep", "--scenario", "write-config-port"}, {}, profile);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.err.find("open_no_crash_point"), std::string::npos) << r.err;
  EXPECT_EQ(open_test::lines(r.err).size(), 1u) << r.err;
}

TEST(OpenSweep, BadInputIsOneLineWithAStableCode) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"run", "subject-py/write-config-port/P4#1/kill"}, "open_case_invalid"},
      {{"run", "subject-py/write-config-port/TE#0/kill"}, "open_case_invalid"},
      {{"run", "subject-py/write-config-port/TE#1/stop"}, "open_case_invalid"},
      {{"run", "other/write-config-port/TE#1/kill"}, "open_case_invalid"},
      {{"sweep", "--failpoint", "P4", "--list"}, "open points"},
      {{"sweep", "--failpoint", "P#4", "--list"}, "open points"},
  };
  for (const auto& [args, code] : cases) {
    const CliRun r = crashsim(args);
    EXPECT_EQ(r.rc, 2) << args[1];
    EXPECT_NE(r.err.find(code), std::string::npos) << args[1] << ": " << r.err;
    EXPECT_EQ(open_test::lines(r.err).size(), 1u) << r.err;
  }
  open_test::ScratchDir dir;
  std::ofstream(dir.path / "bad.json") << R"({"profileVersion": 1, "name": "x", "bogus": 1})";
  const CliRun r = crashsim({"sweep", "--list"}, {}, dir.path / "bad.json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("runtime_profile_invalid"), std::string::npos) << r.err;
}

}  // namespace
