// ToolRuntime: preflight refusals (tool_unavailable, tool_permission_denied, tool_args_invalid,
// invalid_workspace_path, tool_precondition_failed), the Write no-op rule, file evidence,
// real side effects, effects log lines, Bash bounded time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/tools.h"
#include "crashsim/workspace.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    base_ = fs::temp_directory_path() /
            ("crashsim-tools-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(base_ / "ws");
    ws_ = ensureWorkspaceIdentity(base_ / "ws");
    effects_ = std::make_unique<EffectsLog>(base_ / "effects.jsonl");
    policy_.available = {"Read", "Write", "Edit", "Bash"};
    policy_.bashTimeout = std::chrono::milliseconds(1500);
    tools_ = std::make_unique<ToolRuntime>(ws_, policy_, *effects_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_, ec);
  }
  void write(const std::string& rel, const std::string& content) {
    std::ofstream out(ws_.root / rel, std::ios::binary);
    out << content;
  }
  std::string read(const std::string& rel) {
    std::ifstream in(ws_.root / rel, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string refusalCode(const PreflightDecision& d) {
    EXPECT_EQ(d.kind, PreflightDecision::Kind::refuse);
    EXPECT_TRUE(d.syntheticIsError);
    return d.syntheticResult.at("error").at("code").get<std::string>();
  }
  ToolResult run(const ToolCallRequest& call, const std::string& op = "toolop_test") {
    auto d = tools_->preflight(call);
    EXPECT_EQ(d.kind, PreflightDecision::Kind::dispatch);
    return tools_->execute(call, d, ToolExecution{op, call.callId, "inv-1"}, cancel_);
  }

  fs::path base_;
  WorkspaceIdentity ws_;
  ToolPolicy policy_;
  std::unique_ptr<EffectsLog> effects_;
  std::unique_ptr<ToolRuntime> tools_;
  CancellationToken cancel_;
};

}  // namespace

TEST_F(ToolsTest, RecoveryModesPerTool) {
  EXPECT_EQ(ToolRuntime::recoveryModeOf("Read"), "replay_safe");
  EXPECT_EQ(ToolRuntime::recoveryModeOf("Write"), "reconcile");
  EXPECT_EQ(ToolRuntime::recoveryModeOf("Edit"), "reconcile");
  EXPECT_EQ(ToolRuntime::recoveryModeOf("Bash"), "never_auto_retry");
  EXPECT_EQ(ToolRuntime::recoveryModeOf("Unknown"), "never_auto_retry");
}

TEST_F(ToolsTest, PreflightRefusalCodes) {
  EXPECT_EQ(refusalCode(tools_->preflight({"c", "Delete", Json{{"path", "x"}}})),
            "tool_unavailable");
  ToolPolicy denied = policy_;
  denied.denied = {"Bash"};
  ToolRuntime deny(ws_, denied, *effects_);
  EXPECT_EQ(refusalCode(deny.preflight({"c", "Bash", Json{{"command", "touch x"}}})),
            "tool_permission_denied");
  EXPECT_EQ(refusalCode(tools_->preflight({"c", "Write", Json{{"path", "x"}}})),
            "tool_args_invalid");
  EXPECT_EQ(refusalCode(tools_->preflight({"c", "Write", Json{{"path", "x"}, {"content", 1}}})),
            "tool_args_invalid");
  EXPECT_EQ(refusalCode(tools_->preflight({"c", "Read", Json{{"path", "x"}, {"extra", "y"}}})),
            "tool_args_invalid");
  EXPECT_EQ(refusalCode(tools_->preflight({"c", "Write", Json{{"path", "../x"}, {"content", ""}}})),
            "invalid_workspace_path");
  EXPECT_EQ(refusalCode(tools_->preflight({"c", "Read", Json{{"path", "/etc/passwd"}}})),
            "invalid_workspace_path");
  write("e.txt", "aa aa");
  EXPECT_EQ(refusalCode(tools_->preflight(
                {"c", "Edit", Json{{"path", "e.txt"}, {"old_string", "aa"}, {"new_string", "b"}}})),
            "tool_precondition_failed");
  EXPECT_EQ(
      refusalCode(tools_->preflight(
          {"c", "Edit", Json{{"path", "none.txt"}, {"old_string", "a"}, {"new_string", "b"}}})),
      "tool_precondition_failed");
  // Nothing executed: the effects log is empty.
  EXPECT_TRUE(EffectsLog::read(effects_->path()).empty());
}

TEST_F(ToolsTest, WriteWhoseBeforeEqualsExpectedAfterIsNoOpBeforeT1) {
  write("same.txt", "content\n");
  const auto d =
      tools_->preflight({"c", "Write", Json{{"path", "same.txt"}, {"content", "content\n"}}});
  EXPECT_EQ(d.kind, PreflightDecision::Kind::no_op);
  EXPECT_FALSE(d.syntheticIsError);
  EXPECT_EQ(d.syntheticResult, (Json{{"path", "same.txt"}, {"bytesWritten", 8}}));
}

TEST_F(ToolsTest, WriteBindsFileEvidenceAndRunsAtomically) {
  write("config.json", "{\"port\":3000}\n");
  const ToolCallRequest call{"call-1", "Write",
                             Json{{"path", "config.json"}, {"content", "{\"port\":4000}\n"}}};
  const auto d = tools_->preflight(call);
  ASSERT_EQ(d.kind, PreflightDecision::Kind::dispatch);
  EXPECT_EQ(d.recoveryMode, "reconcile");
  ASSERT_TRUE(d.fileEvidence.has_value());
  const Json& e = *d.fileEvidence;
  EXPECT_EQ(e["kind"], "file_state_v1");
  EXPECT_EQ(e["version"], 1);
  EXPECT_EQ(e["workspaceIdentity"], ws_.identity);
  EXPECT_EQ(e["targetPath"], "config.json");
  EXPECT_EQ(e["before"], toJson(fileStateOf("{\"port\":3000}\n")));
  EXPECT_EQ(e["expectedAfter"], toJson(fileStateOf("{\"port\":4000}\n")));
  EXPECT_EQ(e["transformVersion"], "write_v1");
  const ToolResult r = tools_->execute(call, d, {"toolop_a", "call-1", "inv-1"}, cancel_);
  EXPECT_FALSE(r.isError);
  EXPECT_EQ(r.result, e["result"]) << "the evidence binds exactly the result the tool returns";
  EXPECT_EQ(read("config.json"), "{\"port\":4000}\n");
  for (const auto& entry : fs::directory_iterator(ws_.root)) {
    EXPECT_EQ(entry.path().extension() == ".tmp", false) << entry.path();
  }
  const auto lines = EffectsLog::read(effects_->path());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], (Json{{"operationId", "toolop_a"},
                            {"callId", "call-1"},
                            {"invocationId", "inv-1"},
                            {"tool", "Write"},
                            {"attempt", 1}}));
}

TEST_F(ToolsTest, EditReplacesTheUniqueOccurrence) {
  write("g.txt", "hello world\n");
  const ToolCallRequest call{"call-1", "Edit",
                             Json{{"path", "g.txt"}, {"old_string", "world"}, {"new_string", "x"}}};
  const auto d = tools_->preflight(call);
  ASSERT_TRUE(d.fileEvidence);
  EXPECT_EQ((*d.fileEvidence)["transformVersion"], "edit_v1");
  const auto r = tools_->execute(call, d, {"toolop_e", "call-1", "inv-1"}, cancel_);
  EXPECT_FALSE(r.isError);
  EXPECT_EQ(read("g.txt"), "hello x\n");
}

TEST_F(ToolsTest, FileChangedAfterPreflightIsIsErrorNotOverwritten) {
  write("g.txt", "v1");
  const ToolCallRequest call{"call-1", "Write", Json{{"path", "g.txt"}, {"content", "v2"}}};
  const auto d = tools_->preflight(call);
  write("g.txt", "external");
  const auto r = tools_->execute(call, d, {"toolop_x", "call-1", "inv-1"}, cancel_);
  EXPECT_TRUE(r.isError);
  EXPECT_EQ(r.result["error"]["code"], "tool_precondition_failed");
  EXPECT_EQ(read("g.txt"), "external");
}

TEST_F(ToolsTest, ReadMissingFileFailsAtExecutionAsIsError) {
  const auto r = run({"call-1", "Read", Json{{"path", "missing.txt"}}});
  EXPECT_TRUE(r.isError);
  EXPECT_EQ(r.result["error"]["code"], "tool_execution_failed");
  EXPECT_EQ(EffectsLog::read(effects_->path()).size(), 1u) << "the attempt is logged";
}

TEST_F(ToolsTest, BashRunsInWorkspaceAndReportsExitCode) {
  auto r = run({"c1", "Bash", Json{{"command", "touch marker && echo out && echo err >&2"}}});
  EXPECT_FALSE(r.isError);
  EXPECT_EQ(r.result["exitCode"], 0);
  EXPECT_EQ(r.result["stdout"], "out\n");
  EXPECT_EQ(r.result["stderr"], "err\n");
  EXPECT_TRUE(fs::exists(ws_.root / "marker"));
  r = run({"c2", "Bash", Json{{"command", "exit 3"}}}, "toolop_b");
  EXPECT_TRUE(r.isError);
  EXPECT_EQ(r.result["exitCode"], 3);
}

TEST_F(ToolsTest, BashIsBoundedInTime) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run({"c1", "Bash", Json{{"command", "sleep 30"}}});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.isError);
  EXPECT_EQ(r.result["error"]["code"], "tool_timeout");
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

TEST_F(ToolsTest, EffectsLogCountsAttemptsPerOperation) {
  EXPECT_EQ(effects_->recordExecution("op1", "c", "i", "Bash"), 1);
  EXPECT_EQ(effects_->recordExecution("op2", "c", "i", "Bash"), 1);
  EXPECT_EQ(effects_->recordExecution("op1", "c", "i", "Bash"), 2);
  EXPECT_EQ(EffectsLog::read(effects_->path()).size(), 3u);
}
