// The barrier interposer (open/interposer): counts the durability barriers of a real Python
// process tree under LD_PRELOAD, and when armed reports the n-th on the control fd and blocks
// until the test SIGKILLs the process group.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "open_test_support.h"

namespace {

using nlohmann::json;
using open_test::Child;

// Six barriers in two processes, in this order: fsync, fdatasync, msync(MS_SYNC) (mmap.flush),
// rename (os.replace), then the child's fsync, then the parent's fsync of the renamed file.
// An msync without MS_SYNC is not a barrier: mmap.flush is always MS_SYNC in CPython, so the
// script adds none.
const char* kScript = R"PY(
import mmap, os, subprocess, sys
d = sys.argv[1]
fd = os.open(d + "/a", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"x" * 4096)
os.fsync(fd)
os.fdatasync(fd)
m = mmap.mmap(fd, 4096)
m[0:1] = b"y"
m.flush()
m.close()
os.close(fd)
os.replace(d + "/a", d + "/b")
subprocess.run([sys.executable, "-c",
                "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)", d + "/b"],
               check=True)
fd = os.open(d + "/b", os.O_RDONLY)
os.fsync(fd)
open(d + "/finished", "w").close()
)PY";

std::map<std::string, std::string> preloadEnv(const open_test::ScratchDir& dir) {
  return {{"LD_PRELOAD", open_test::interposerLibrary().string()},
          {"CRASHSIM_BARRIER_COUNTER", (dir.path / "counter").string()},
          {"CRASHSIM_BARRIER_HITS_OUT", (dir.path / "hits.json").string()},
          {"PYTHONDONTWRITEBYTECODE", "1"}};  // no .pyc replace counted as a barrier
}

TEST(BarrierInterposer, CountsTheBarriersOfAProcessTree) {
  ASSERT_FALSE(open_test::python().empty())
      << "python3 is required (ci/install-deps.sh installs it)";
  open_test::ScratchDir dir;
  Child child({open_test::python(), "-c", kScript, dir.path.string()}, preloadEnv(dir), false);
  const auto status = child.waitFor(std::chrono::seconds(60));
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  const json hits = json::parse(open_test::readFile(dir.path / "hits.json"));
  EXPECT_EQ(hits["S"], 6);
  EXPECT_EQ(hits["processes"], 2);  // the interposer says it was loaded, in both processes
  EXPECT_EQ(hits["interposer"], "loaded");
}

TEST(BarrierInterposer, WithoutPreloadNothingIsCounted) {
  ASSERT_FALSE(open_test::python().empty())
      << "python3 is required (ci/install-deps.sh installs it)";
  open_test::ScratchDir dir;
  auto env = preloadEnv(dir);
  env.erase("LD_PRELOAD");
  Child child({open_test::python(), "-c", kScript, dir.path.string()}, env, false);
  ASSERT_TRUE(child.waitFor(std::chrono::seconds(60)).has_value());
  // No interposer, no report: a harness must flag "not loaded", never read it as zero barriers.
  EXPECT_FALSE(std::filesystem::exists(dir.path / "hits.json"));
}

// Arms hit `n`; returns the control line and leaves the tree blocked (checked) until killed.
struct Armed {
  open_test::ScratchDir dir;
  int control[2] = {-1, -1};
  std::unique_ptr<Child> child;
  explicit Armed(int n) {
    if (::pipe(control) != 0) throw std::runtime_error("pipe");
    auto env = preloadEnv(dir);
    env["CRASHSIM_ARM"] = "S:" + std::to_string(n);
    env["CRASHSIM_CONTROL_FD"] = std::to_string(control[1]);
    // Python's subprocess closes inherited fds: the child reports through the file instead.
    env["CRASHSIM_CONTROL_FILE"] = (dir.path / "control").string();
    child = std::make_unique<Child>(
        std::vector<std::string>{open_test::python(), "-c", kScript, dir.path.string()}, env,
        false);
    ::close(control[1]);
  }
  ~Armed() { ::close(control[0]); }
};

TEST(BarrierInterposer, ArmedItReportsTheHitBlocksAndDiesBySigkill) {
  ASSERT_FALSE(open_test::python().empty())
      << "python3 is required (ci/install-deps.sh installs it)";
  Armed armed(4);  // the rename
  const auto line = open_test::readLine(armed.control[0], std::chrono::seconds(60));
  ASSERT_TRUE(line.has_value());
  const json report = json::parse(*line);
  EXPECT_EQ(report["failpoint"], "S");
  EXPECT_EQ(report["hit"], 4);
  EXPECT_EQ(report["pid"], armed.child->pid);
  ::usleep(200000);
  EXPECT_TRUE(armed.child->running());  // blocked, not exited
  // Before the barrier: the rename has not happened.
  EXPECT_TRUE(std::filesystem::exists(armed.dir.path / "a"));
  EXPECT_FALSE(std::filesystem::exists(armed.dir.path / "b"));
  armed.child->killGroup();
  EXPECT_TRUE(WIFSIGNALED(*armed.child->status) && WTERMSIG(*armed.child->status) == SIGKILL);
  EXPECT_FALSE(std::filesystem::exists(armed.dir.path / "finished"));
}

TEST(BarrierInterposer, TheHitCanBeInAChildProcess) {
  ASSERT_FALSE(open_test::python().empty())
      << "python3 is required (ci/install-deps.sh installs it)";
  Armed armed(5);  // the child's fsync: counted on the tree's shared counter
  std::optional<std::string> line;
  for (int i = 0; i < 600 && !line; ++i) {
    const std::string text = open_test::readFile(armed.dir.path / "control");
    if (!text.empty() && text.back() == '\n') line = text.substr(0, text.size() - 1);
    ::usleep(100000);
  }
  ASSERT_TRUE(line.has_value());
  const json report = json::parse(*line);
  EXPECT_EQ(report["hit"], 5);
  EXPECT_NE(report["pid"], armed.child->pid);  // the grandchild's pid, not the root's
  EXPECT_TRUE(armed.child->running());         // the root waits for its blocked child
  armed.child->killGroup();
  EXPECT_TRUE(WIFSIGNALED(*armed.child->status));
  ::usleep(100000);
  // The whole group died: the blocked child cannot outlive the kill.
  const std::string stat =
      open_test::readFile("/proc/" + std::to_string(report["pid"].get<int>()) + "/stat");
  EXPECT_TRUE(stat.empty() || stat.find(") Z ") != std::string::npos) << stat;
  EXPECT_FALSE(std::filesystem::exists(armed.dir.path / "finished"));
}

}  // namespace
