// Issue #45: hostile inputs and outputs of `crashsim` and `crashsim-agent`, run as real
// processes. Every input is a regular file of bounded size, checked before it is read (a real
// FIFO, /dev/zero, a file past 64 MiB); every output is checked before the work and every short
// write fails the command (/dev/full, a closed stdout, an --out nothing can be written to). Bad
// input is always one line with a stable code and exit 2 — never a hang, a crash or an abort.
// Each command runs under `timeout`, so a hang shows as exit 124 instead of a stuck test.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "test_util.h"

using namespace crashsim::harness::test;
namespace fs = std::filesystem;
namespace code = crashsim::code;

namespace {

std::string csWithTimeout() { return "timeout 60 " + crashsimBinary().string(); }
std::string agent() { return "timeout 60 " + agentBinary().string(); }
std::string scenarioFile(const std::string& id) {
  return (fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / (id + ".json")).string();
}
bool has(const std::string& text, std::string_view what) {
  return text.find(what) != std::string::npos;
}
size_t lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

class HostileInput : public ::testing::Test {
 protected:
  void SetUp() override { dir = freshDir("crashsim-hostile-input"); }
  void TearDown() override { fs::remove_all(dir); }
  fs::path fifo(const std::string& name) {
    const fs::path p = dir / name;
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  fs::path dir;
};

// (7) A FIFO named <id>.json: the scenario loader refuses it at once (no writer ever comes), in
// `crashsim scenarios`, `crashsim resume --scenario` and `crashsim-agent seed|run`.
TEST_F(HostileInput, AFifoNamedLikeAScenarioIsRefusedNotWaitedFor) {
  const fs::path scenarios = dir / "scenarios";
  fs::create_directories(scenarios);
  fs::copy_file(scenarioFile("write-config-port"), scenarios / "write-config-port.json");
  const fs::path pipe = scenarios / "stalled.json";
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const Cmd list = sh(csWithTimeout() + " scenarios --scenarios " + scenarios.string() + " 2>&1");
  EXPECT_EQ(list.exitCode, 2) << list.out;
  EXPECT_TRUE(has(list.out, code::scenario_invalid) && has(list.out, pipe.string()) &&
              has(list.out, "FIFO"))
      << list.out;
  EXPECT_EQ(lines(list.out), 1u) << list.out;
  for (const std::string& command :
       {agent() + " seed --workspace " + (dir / "ws").string() + " --scenario " + pipe.string(),
        agent() + " run --store " + (dir / "store").string() + " --workspace " +
            (dir / "ws").string() + " --scenario " + pipe.string(),
        csWithTimeout() + " resume " + (dir / "store").string() + " --scenario " + pipe.string()}) {
    const Cmd r = sh(command + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << command << "\n" << r.out;
    EXPECT_TRUE(has(r.out, code::scenario_invalid) && has(r.out, pipe.string())) << r.out;
  }
  EXPECT_FALSE(fs::exists(dir / "store"));
}

// (7) --expect-manifest /dev/zero (or a FIFO) is refused before a byte is read, instead of
// growing memory without bound (or waiting for a writer).
TEST_F(HostileInput, AnExpectManifestThatIsADeviceOrAFifoIsRefused) {
  for (const std::string& manifest : {std::string("/dev/zero"), fifo("cases.txt").string()}) {
    const Cmd r =
        sh(csWithTimeout() + " sweep --scenario write-config-port --no-barriers --case " +
           "'write-config-port/P1#1/kill' --list --expect-manifest " + manifest + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << manifest << "\n" << r.out;
    EXPECT_TRUE(has(r.out, code::input_unreadable) && has(r.out, manifest)) << r.out;
  }
}

// (7) `ledger resolve --jsonl` honours the 64 MiB input limit like every ledger input: a larger
// file (sparse: nothing is written to disk) or stream is refused whole, before any line is
// judged; a FIFO is refused without waiting.
TEST_F(HostileInput, ABatchInputPast64MiBIsRefusedBeforeAnyLine) {
  const fs::path big = dir / "big.jsonl";
  std::ofstream(big) << "[]\n";
  fs::resize_file(big, (size_t{64} << 20) + 1);
  const Cmd file = sh(csWithTimeout() + " ledger resolve --jsonl " + big.string() + " 2>&1");
  EXPECT_EQ(file.exitCode, 2) << file.out.substr(0, 400);
  EXPECT_TRUE(has(file.out, code::input_too_large)) << file.out.substr(0, 400);
  EXPECT_EQ(lines(file.out), 1u) << file.out.substr(0, 400);
  const Cmd stream =
      sh("cat " + big.string() + " | " + csWithTimeout() + " ledger resolve --jsonl - 2>&1");
  EXPECT_EQ(stream.exitCode, 2);
  EXPECT_TRUE(has(stream.out, code::input_too_large)) << stream.out.substr(0, 400);
  EXPECT_EQ(lines(stream.out), 1u) << stream.out.substr(0, 400);
  const fs::path pipe = fifo("batch.jsonl");
  const Cmd p = sh(csWithTimeout() + " ledger resolve --jsonl " + pipe.string() + " 2>&1");
  EXPECT_EQ(p.exitCode, 2) << p.out;
  EXPECT_TRUE(has(p.out, code::input_unreadable)) << p.out;
}

// (3) A scenario holding an escaped lone surrogate: one parse, then one line naming the code,
// the file and the JSON path, exit 2 — from crashsim-agent seed and run (which aborted on an
// uncaught parser exception) and from crashsim scenarios (which printed raw parser text).
TEST_F(HostileInput, AScenarioWithALoneSurrogateIsOneLineWithCodeAndFile) {
  const fs::path scenarios = dir / "scenarios";
  fs::create_directories(scenarios);
  nlohmann::json scenario = nlohmann::json::parse(slurp(scenarioFile("write-config-port")));
  scenario["user"] = "LONE " + scenario["user"].get<std::string>();
  std::string text = scenario.dump();
  text.replace(text.find("LONE"), 4, "\\ud800");  // an escaped lone surrogate in $.user
  const fs::path file = scenarios / "write-config-port.json";
  std::ofstream(file) << text;
  for (const std::string& command :
       {agent() + " seed --workspace " + (dir / "ws").string() + " --scenario " + file.string(),
        agent() + " run --store " + (dir / "store").string() + " --workspace " +
            (dir / "ws").string() + " --scenario " + file.string(),
        csWithTimeout() + " scenarios --scenarios " + scenarios.string()}) {
    const Cmd r = sh(command + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << command << "\n" << r.out;
    EXPECT_TRUE(has(r.out, code::scenario_invalid) && has(r.out, file.string()) &&
                has(r.out, "$.user"))
        << command << "\n"
        << r.out;
    EXPECT_EQ(lines(r.out), 1u) << command << "\n" << r.out;
  }
}

// Workspace file names no workspace can hold were accepted and failed later while seeding (or
// seeded something else): the marker itself, a NUL, a trailing slash, "./", and a file that is
// also another file's directory. Each is scenario_invalid on one line, naming the path.
TEST_F(HostileInput, WorkspaceFileNamesThatCannotBeSeededAreScenarioInvalid) {
  const fs::path scenarios = dir / "scenarios";
  fs::create_directories(scenarios);
  const nlohmann::json base = nlohmann::json::parse(slurp(scenarioFile("write-config-port")));
  for (const std::string& name :
       {std::string(".maka-workspace.json"), std::string("a\0b", 3), std::string("sub/"),
        std::string("./x"), std::string("a//b"), std::string("a")}) {
    nlohmann::json scenario = base;
    scenario["workspace"]["files"][name] = "x";
    if (name == "a") scenario["workspace"]["files"]["a/b"] = "y";
    const fs::path file = scenarios / "write-config-port.json";
    std::ofstream(file, std::ios::trunc) << scenario.dump();
    const Cmd r = sh(agent() + " seed --workspace " + (dir / "ws").string() + " --scenario " +
                     file.string() + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << name << "\n" << r.out;
    EXPECT_TRUE(has(r.out, code::scenario_invalid) && has(r.out, "$.workspace.files"))
        << name << "\n"
        << r.out;
    EXPECT_EQ(lines(r.out), 1u) << name << "\n" << r.out;
    EXPECT_FALSE(fs::exists(dir / "ws" / "a")) << name;
  }
}

// (8) Outputs: a full disk or a closed standard output is exit 2 with output_unwritable, never
// exit 0 with a truncated output (`sweep --list > cases.txt` on a full disk gave a truncated
// manifest and exit 0). A closed stdout is refused before the work: the first file the command
// opened would otherwise become fd 1.
TEST_F(HostileInput, AFullDiskOrAClosedStdoutIsExitTwo) {
  const fs::path store = completedRun(dir, "write-config-port");
  ASSERT_FALSE(store.empty());
  std::ofstream(dir / "ledger.json") << "[]";
  for (const std::string& args :
       {std::string(" sweep --scenario write-config-port --no-barriers --list"),
        std::string(" failpoints --json"), " ledger export " + store.string(),
        " inspect --json " + store.string(), " ledger resolve " + (dir / "ledger.json").string()}) {
    const Cmd full = sh(csWithTimeout() + args + " 2>&1 >/dev/full");
    EXPECT_EQ(full.exitCode, 2) << args << "\n" << full.out;
    EXPECT_TRUE(has(full.out, code::output_unwritable)) << args << "\n" << full.out;
    const Cmd closed = sh(csWithTimeout() + args + " 2>&1 >&-");
    EXPECT_EQ(closed.exitCode, 2) << args << "\n" << closed.out;
    EXPECT_TRUE(has(closed.out, code::output_unwritable)) << args << "\n" << closed.out;
  }
}

// (8) --out is checked before the work: a directory that cannot be created or written (under
// /proc, under a regular file) fails at once, and no case runs.
TEST_F(HostileInput, AnOutThatCannotBeWrittenFailsBeforeTheWork) {
  std::ofstream(dir / "file") << "x";
  for (const std::string& out :
       {std::string("/proc/crashsim-no-such-dir/out"), (dir / "file" / "out").string()}) {
    const Cmd r = sh(csWithTimeout() + " sweep --scenario write-config-port --no-barriers --case " +
                     "'write-config-port/P1#1/kill' --out " + out + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << out << "\n" << r.out;
    EXPECT_TRUE(has(r.out, code::output_unwritable)) << out << "\n" << r.out;
    EXPECT_FALSE(has(r.out, "crash budget")) << "the sweep ran before --out was checked\n" << r.out;
  }
}

// A `run` that fails (a --keep that is not a case directory, refused after the scratch was
// made) leaves no crashsim-run-* scratch behind (TMPDIR holds a powerloss case's scratch).
TEST_F(HostileInput, AFailedRunLeavesNoScratchBehind) {
  const fs::path tmp = dir / "tmp", notACase = dir / "not-a-case";
  fs::create_directories(tmp);
  fs::create_directories(notACase);
  std::ofstream(notACase / "precious") << "x";
  const Cmd r =
      sh("TMPDIR=" + tmp.string() + " " + csWithTimeout() +
         " run 'write-config-port/P6#1/powerloss@17' --keep " + notACase.string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_EQ(lines(r.out), 1u) << r.out;
  EXPECT_TRUE(fs::is_empty(tmp)) << fs::directory_iterator(tmp)->path();
  EXPECT_TRUE(fs::exists(notACase / "precious"));
}

// Numeric options are plain decimal: 0x4, +5 and 2^64 are one-line usage errors (exit 2), not
// 4, 5 or a wrapped value.
TEST_F(HostileInput, NumericOptionsAreDecimalOnly) {
  const std::string sweep =
      csWithTimeout() + " sweep --scenario write-config-port --no-barriers --list";
  for (const std::string& option :
       {std::string("--jobs 0x4"), std::string("--jobs +5"), std::string("--states 0x2"),
        std::string("--seed 18446744073709551616"), std::string("--expect-cases +17")}) {
    const Cmd r = sh(sweep + " " + option + " 2>&1 >/dev/null");
    EXPECT_EQ(r.exitCode, 2) << option << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << option << "\n" << r.out;
  }
  EXPECT_EQ(sh(sweep + " --jobs 4 >/dev/null 2>&1").exitCode, 0);
}

// Smaller items: the agent's usage errors are one line with a code, and `durability
// --store-dir` never creates a missing directory or its parents.
TEST_F(HostileInput, AgentUsageIsOneLineAndDurabilityCreatesNoStoreDir) {
  for (const std::string& args :
       {std::string(" run"), std::string(" run --store"), std::string(" fly --store x")}) {
    const Cmd r = sh(agent() + args + " 2>&1");
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out;
    EXPECT_EQ(lines(r.out), 1u) << args << "\n" << r.out;
    EXPECT_TRUE(has(r.out, code::agent_usage)) << args << "\n" << r.out;
  }
  const fs::path missing = dir / "no" / "such" / "dir";
  const Cmd r = sh(csWithTimeout() + " durability --store-dir " + missing.string() + " --out " +
                   (dir / "out").string() + " 2>&1");
  EXPECT_EQ(r.exitCode, 2) << r.out;
  EXPECT_TRUE(has(r.out, code::input_unreadable)) << r.out;
  EXPECT_FALSE(fs::exists(dir / "no"));
}

}  // namespace
