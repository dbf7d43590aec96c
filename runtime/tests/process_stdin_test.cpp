// The runtime's child processes (workspace/process.h): stdin data a child never reads.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "workspace/process.h"

namespace {

using crashsim::detail::ProcessSpec;
using crashsim::detail::runProcess;

// A child that exits before it reads its stdin (a git that refuses its arguments) leaves the
// writer a pipe without a reader. The write must fail (EPIPE) and the child's result be returned:
// with SIGPIPE's default disposition the host process itself died of SIGPIPE (as this test
// process did before runProcess blocked it around the child's I/O).
TEST(ProcessStdin, AChildThatNeverReadsItsStdinDoesNotKillTheParent) {
  struct sigaction current {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &current), 0);
  ASSERT_EQ(current.sa_handler, SIG_DFL) << "the test needs SIGPIPE's default disposition";
  ProcessSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", "exec 0<&-; exit 7"};
  spec.cwd = ".";
  spec.stdinData.assign(4u << 20, 'x');  // far beyond a pipe's buffer
  for (int i = 0; i < 3; ++i) {
    const auto r = runProcess(spec);
    EXPECT_TRUE(r.started) << r.spawnError;
    EXPECT_EQ(r.exitCode, 7);
  }
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0) << "the SIGPIPE the writes raised is consumed";
}

// The child starts with SIGPIPE neither blocked nor ignored (both survive exec): the parent's
// blocking of it around the child's I/O is the parent's alone.
TEST(ProcessStdin, TheChildStartsWithTheDefaultSigpipe) {
  ProcessSpec spec;
  spec.executable = "grep";  // not a shell: dash clears its signal mask when it starts
  spec.args = {"-E", "^Sig(Blk|Ign)", "/proc/self/status"};
  spec.cwd = ".";
  spec.stdinData = "unread";
  const auto r = runProcess(spec);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  for (const char* field : {"SigBlk:", "SigIgn:"}) {
    const auto at = r.out.find(field);
    ASSERT_NE(at, std::string::npos) << r.out;
    const unsigned long long mask = std::stoull(r.out.substr(at + 7), nullptr, 16);
    EXPECT_EQ(mask & (1ull << (SIGPIPE - 1)), 0u) << field << " " << r.out;
  }
}

// A host that ignores SIGPIPE (crashsim-agent) still starts its children with the default: SIG_IGN
// would survive exec.
TEST(ProcessStdin, AHostIgnoringSigpipeStartsItsChildrenWithTheDefault) {
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &previous), 0);
  ProcessSpec spec;
  spec.executable = "grep";
  spec.args = {"-E", "^SigIgn", "/proc/self/status"};
  spec.cwd = ".";
  const auto r = runProcess(spec);
  ::sigaction(SIGPIPE, &previous, nullptr);
  ASSERT_EQ(r.exitCode, 0) << r.err;
  const auto at = r.out.find("SigIgn:");
  ASSERT_NE(at, std::string::npos) << r.out;
  const unsigned long long mask = std::stoull(r.out.substr(at + 7), nullptr, 16);
  EXPECT_EQ(mask & (1ull << (SIGPIPE - 1)), 0u) << r.out;
}

}  // namespace
