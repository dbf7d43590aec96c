// The test subject (open/subject/subject.py) run end to end through the open harness's pieces:
// its profile (open/subject/runtime.json) substituted for a case, the scripted model server,
// the tool server over MCP, and the barrier interposer as the crash point. Each promise-breaking
// switch leaves the evidence its verdict (O2-O4, with the sweep) will judge.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crashsim/open/model_server.h"
#include "crashsim/open/profile.h"
#include "crashsim/scenario.h"
#include "crashsim/tools.h"
#include "open_test_support.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using open_test::Child;

// The subject saves its checkpoint with three barriers (fsync of the temp file, rename, fsync
// of the directory), so save k (1-based) is barriers 3k-2 .. 3k. Its saves for a scenario whose
// steps have c1, c2, ... calls: the start, then per step the model's answer and, per call, the
// "started" mark and the result; then the final answer and "done". write-config-port
// (Read; Write; final):
//   1 start  2 step 0  3 call-1 started  4 call-1 result  5 step 1  6 call-2 started
//   7 call-2 result  8 final answer  9 done                                      = 27 barriers
// bash-touch-marker (Bash; final):
//   1 start  2 step 0  3 call-1 started  4 call-1 result  5 final  6 done       = 18 barriers
constexpr int firstBarrierOfSave(int save) { return 3 * save - 2; }

struct Case {
  open_test::ScratchDir dir;
  crashsim::Scenario scenario;
  crashsim::open::RuntimeProfile profile;
  std::unique_ptr<crashsim::open::ModelServer> model;
  crashsim::open::CaseBindings bindings;

  explicit Case(const std::string& id,
                const std::string& profileFile = "open/subject/runtime.json") {
    scenario = crashsim::loadScenario(open_test::scenarioFile(id));
    profile = crashsim::open::loadRuntimeProfile(open_test::sourceDir() / profileFile);
    fs::create_directories(dir.path / "ws");
    crashsim::seedWorkspace(scenario, dir.path / "ws");
    model = std::make_unique<crashsim::open::ModelServer>(
        scenario, crashsim::open::ModelServerOptions{dir.path / "model.jsonl", 0, {}});
    model->start();
    bindings.workspace = dir.path / "ws";
    bindings.stateDir = dir.path / "state";
    bindings.scenario = open_test::scenarioFile(id);
    bindings.modelUrl = model->baseUrl();
    // The tool server runs without the interposer: its own barriers (the effects log, the file
    // tools) are crashsim's, not the runtime's.
    bindings.toolServer = {
        "env",         "-u",
        "LD_PRELOAD",  (open_test::binaryDir() / "crashsim-tool-server").string(),
        "--scenario",  bindings.scenario.string(),
        "--workspace", bindings.workspace.string(),
        "--effects",   (dir.path / "effects.jsonl").string()};
  }

  std::unique_ptr<Child> start(const crashsim::open::ProfileCommand& command,
                               std::map<std::string, std::string> env) {
    const auto c = crashsim::open::substitute(command, bindings);
    env["PYTHONDONTWRITEBYTECODE"] = "1";  // a .pyc written by os.replace would be a barrier
    for (const auto& [k, v] : c.env) env[k] = v;
    return std::make_unique<Child>(c.argv, env, true, c.cwd);
  }

  // Runs a command to its end; returns the exit status and its stdout's first line.
  std::pair<int, std::string> complete(const crashsim::open::ProfileCommand& command,
                                       std::map<std::string, std::string> env = {}) {
    auto child = start(command, std::move(env));
    const auto line = open_test::readLine(child->out, std::chrono::seconds(120));
    const auto status = child->waitFor(std::chrono::seconds(120));
    if (!status) return {-1, "timed out"};
    return {WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status), line.value_or("")};
  }

  // `run` under the interposer armed at barrier `hit`: waits for the report, then SIGKILLs the
  // runtime's process group (the tool server with it).
  void crashRunAt(int hit, std::map<std::string, std::string> env = {}) {
    int control[2];
    ASSERT_EQ(::pipe(control), 0);
    env["LD_PRELOAD"] = open_test::interposerLibrary().string();
    env["CRASHSIM_ARM"] = "S:" + std::to_string(hit);
    env["CRASHSIM_CONTROL_FD"] = std::to_string(control[1]);
    env["CRASHSIM_BARRIER_COUNTER"] = (dir.path / "counter").string();
    auto child = start(profile.run, env);
    ::close(control[1]);
    const auto line = open_test::readLine(control[0], std::chrono::seconds(120));
    ::close(control[0]);
    ASSERT_TRUE(line.has_value()) << "barrier " << hit << " was not reached";
    EXPECT_EQ(json::parse(*line)["hit"], hit);
    child->killGroup();
    EXPECT_TRUE(WIFSIGNALED(*child->status) && WTERMSIG(*child->status) == SIGKILL);
  }

  // Effect runs per scenario call id, from the effects log.
  std::map<std::string, int> effects() const {
    std::map<std::string, int> runs;
    for (const auto& line : crashsim::EffectsLog::read(dir.path / "effects.jsonl"))
      ++runs[line["callId"].get<std::string>()];
    return runs;
  }

  // Every regular file of the workspace but the identity marker, with its content.
  std::map<std::string, std::string> workspace() const {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(dir.path / "ws"))
      if (e.is_regular_file() && e.path().filename() != ".maka-workspace.json")
        files[fs::relative(e.path(), dir.path / "ws").string()] = open_test::readFile(e.path());
    return files;
  }

  std::vector<json> modelLog() const {
    std::vector<json> out;
    for (const auto& line : open_test::lines(open_test::readFile(dir.path / "model.jsonl")))
      out.push_back(json::parse(line));
    return out;
  }
};

bool havePython() { return !open_test::python().empty(); }

TEST(TestSubject, RunsWriteConfigPortToTheReferenceWorkspace) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  const auto [status, line] = c.complete(c.profile.run);
  EXPECT_EQ(status, 0) << line;
  EXPECT_EQ(c.workspace(), c.scenario.expect.files);
  EXPECT_EQ(c.effects(), (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}}));
  EXPECT_EQ(c.modelLog().size(), c.scenario.model.size());  // one request per step
  EXPECT_TRUE(c.model->findings().empty());
}

TEST(TestSubject, StreamsParallelCallsToTheReferenceWorkspace) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("parallel-calls");
  const auto [status, line] = c.complete(c.profile.run, {{"SUBJECT_STREAM", "1"}});
  EXPECT_EQ(status, 0) << line;
  EXPECT_EQ(c.workspace(), c.scenario.expect.files);
  EXPECT_EQ(c.effects(), (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}, {"call-3", 1}}));
  for (const json& request : c.modelLog()) EXPECT_EQ(request["stream"], true);
  EXPECT_TRUE(c.model->findings().empty());
}

TEST(TestSubject, TheReferenceRunReachesEveryCheckpointBarrier) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  const auto [status, line] = c.complete(
      c.profile.run, {{"LD_PRELOAD", open_test::interposerLibrary().string()},
                      {"CRASHSIM_BARRIER_COUNTER", (c.dir.path / "counter").string()},
                      {"CRASHSIM_BARRIER_HITS_OUT", (c.dir.path / "hits.json").string()}});
  ASSERT_EQ(status, 0) << line;
  EXPECT_EQ(json::parse(open_test::readFile(c.dir.path / "hits.json"))["S"], 27);
}

TEST(TestSubject, ResumeAfterACrashBeforeTheWriteFinishesOnce) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  c.crashRunAt(firstBarrierOfSave(6));  // call-2 not marked started: the Write never ran
  EXPECT_EQ(c.effects(), (std::map<std::string, int>{{"call-1", 1}}));
  const auto [status, line] = c.complete(c.profile.resume);
  EXPECT_EQ(status, 0) << line;
  EXPECT_EQ(c.workspace(), c.scenario.expect.files);
  EXPECT_EQ(c.effects(), (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}}));
  EXPECT_TRUE(c.model->findings().empty());
}

TEST(TestSubject, AnUnknownOutcomeParksWithADeclaredStop) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  c.crashRunAt(firstBarrierOfSave(7));  // the Write ran, its result is not durable
  const auto [status, line] = c.complete(c.profile.resume);
  EXPECT_EQ(status, 3);  // the profile's stopExitCodes
  EXPECT_EQ(c.profile.stopExitCodes, std::vector<int>{3});
  EXPECT_EQ(json::parse(line), (json{{"stopped", "unknown_outcome"}, {"callId", "call-2"}}));
  EXPECT_EQ(c.effects(), (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}}));
}

TEST(TestSubject, BreakUnknownAsNotExecutedTellsTheModelARunCallNeverRan) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  c.crashRunAt(firstBarrierOfSave(7));
  const auto [status, line] =
      c.complete(c.profile.resume, {{"SUBJECT_BREAK", "unknown_as_not_executed"}});
  EXPECT_EQ(status, 0) << line;
  EXPECT_EQ(c.effects().at("call-2"), 1);  // the effect ran ...
  bool presentedAsNotExecuted = false;     // ... and the model was told it did not (O4)
  for (const json& request : c.modelLog())
    for (const json& m : request["messages"])
      if (m.value("tool_call_id", "") == "call-2" &&
          m["content"].get<std::string>().find("not_executed") != std::string::npos)
        presentedAsNotExecuted = true;
  EXPECT_TRUE(presentedAsNotExecuted);
}

TEST(TestSubject, BreakHalfHistoryIsRefusedByTheModelServer) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  c.crashRunAt(firstBarrierOfSave(8));  // both results durable, the final answer not
  const auto [status, line] = c.complete(c.profile.resume, {{"SUBJECT_BREAK", "half_history"}});
  EXPECT_EQ(status, 1);  // the HTTP error stops it
  const auto findings = c.model->findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0]["finding"], "missing_tool_result");
  EXPECT_EQ(c.modelLog().back()["status"], 400);
}

TEST(TestSubject, BreakRerunFinishedRunsABashTwice) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  for (const bool broken : {false, true}) {
    Case c("bash-touch-marker");
    c.crashRunAt(firstBarrierOfSave(5));  // the Bash's result is durable, the final answer not
    std::map<std::string, std::string> env;
    if (broken) env["SUBJECT_BREAK"] = "rerun_finished";
    const auto [status, line] = c.complete(c.profile.resume, env);
    EXPECT_EQ(status, 0) << line;
    EXPECT_EQ(c.effects().at("call-1"), broken ? 2 : 1) << "broken=" << broken;  // O2
    EXPECT_EQ(c.workspace(), c.scenario.expect.files);
  }
}

TEST(TestSubject, BreakExit0UnfinishedLeavesTheTaskUndone) {
  ASSERT_TRUE(havePython()) << "python3 is required (ci/install-deps.sh installs it)";
  Case c("write-config-port");
  c.crashRunAt(firstBarrierOfSave(6));
  const auto [status, line] = c.complete(c.profile.resume, {{"SUBJECT_BREAK", "exit0_unfinished"}});
  EXPECT_EQ(status, 0);                               // a silent exit 0 ...
  EXPECT_NE(c.workspace(), c.scenario.expect.files);  // ... with the task unfinished (O3)
  EXPECT_EQ(c.workspace().at("config.json"), c.scenario.files.at("config.json"));
}

// The proof on a runtime nobody here wrote (examples/langgraph-js): run only where its npm
// packages are installed (`npm ci` in that folder, docs/open-harness.md), skipped elsewhere.
TEST(LangGraphJs, RunsWriteConfigPortThroughTheServers) {
  const fs::path example = open_test::sourceDir() / "examples/langgraph-js";
  if (!fs::exists(example / "node_modules/@langchain/langgraph"))
    GTEST_SKIP() << "examples/langgraph-js has no node_modules (npm ci there)";
  Case c("write-config-port", "examples/langgraph-js/runtime.json");
  const auto [status, line] = c.complete(c.profile.run);
  EXPECT_EQ(status, 0) << line;
  EXPECT_EQ(c.workspace(), c.scenario.expect.files);
  EXPECT_EQ(c.effects(), (std::map<std::string, int>{{"call-1", 1}, {"call-2", 1}}));
  EXPECT_EQ(c.modelLog().size(), c.scenario.model.size());
  EXPECT_TRUE(c.model->findings().empty());
}

}  // namespace
