// Multi-process concurrency on one WAL database (spec j.8), with real fork()ed processes.
// Every child opens its OWN connection after fork (never shares the parent's).
#include <sys/wait.h>

#include <functional>

#include "crashsim/recovery_resolver.h"
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

constexpr int kCreated = 10;
constexpr int kConverged = 11;  // exact retry, nothing written
constexpr int kRejected = 12;   // failed with an expected stable code
constexpr int kUnexpected = 13;

// Forks `n` children that block on a start pipe, runs `body(i)` in each, returns exit codes.
std::vector<int> race(int n, const std::function<int(int)>& body) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      char b;
      (void)!::read(fds[0], &b, 1);  // wait for the start signal
      int rc = kUnexpected;
      try {
        rc = body(i);
      } catch (...) {
        rc = kUnexpected;
      }
      ::_exit(rc);
    }
    pids.push_back(pid);
  }
  ::close(fds[0]);
  ::close(fds[1]);  // EOF releases every child at once
  std::vector<int> codes;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

int countOf(const std::vector<int>& v, int x) {
  return static_cast<int>(std::count(v.begin(), v.end(), x));
}

struct MultiProcessTest : ::testing::Test {
  TempDir dir;
  Ident id;
  Call call;
  void SetUp() override {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(id));
    s->commitToolPrepared(t1(call));
  }
  int bundleChild(const RecoveryBundle& b) {
    auto s = RuntimeStore::open(dir.path);
    try {
      return s->commitToolRecoveryBundle(b).created ? kCreated : kConverged;
    } catch (const Error& e) {
      if (e.code() == code::recovery_bundle_already_settled ||
          e.code() == code::tool_ledger_rejection) {
        return kRejected;
      }
      return kUnexpected;
    }
  }
  void expectHealthy() {
    auto s = RuntimeStore::open(dir.path);
    EXPECT_EQ(s->integrityCheck(), "ok");
    std::vector<RuntimeEvent> evs;
    for (auto& e : s->readRunEvents(id.session, id.run)) evs.push_back(e.event);
    EXPECT_FALSE(resolveRecovery(evs).hasCorruption);
    auto ops = s->listToolOperations();
    auto journal = s->listJournal();
    s->rebuildProjections();
    EXPECT_EQ(s->listToolOperations(), ops);
    EXPECT_EQ(s->listJournal(), journal);
  }
};

TEST_F(MultiProcessTest, TwoIdenticalBundlesOneEffectBothSucceed) {
  auto b = completedBundle(call);
  auto codes = race(2, [&](int) { return bundleChild(b); });
  EXPECT_EQ(countOf(codes, kCreated), 1);
  EXPECT_EQ(countOf(codes, kConverged), 1);
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(s->readRunEvents(id.session, id.run).size(), 6u);
  EXPECT_EQ(s->listJournal().size(), 4u);
  EXPECT_EQ(s->listToolOperations()[0].currentState, "recovery_completed");
  s.reset();
  expectHealthy();
}

TEST_F(MultiProcessTest, CompletedVersusParkedExactlyOneWins) {
  auto completed = completedBundle(call);
  auto parked = parkedBundle(call);
  auto codes = race(2, [&](int i) { return bundleChild(i == 0 ? completed : parked); });
  EXPECT_EQ(countOf(codes, kCreated), 1);
  EXPECT_EQ(countOf(codes, kRejected), 1);
  auto s = RuntimeStore::open(dir.path);
  auto state = s->listToolOperations()[0].currentState;
  EXPECT_TRUE(state == "recovery_completed" || state == "recovery_parked") << state;
  EXPECT_EQ(state, codes[0] == kCreated ? "recovery_completed" : "recovery_parked");
  s.reset();
  expectHealthy();
}

TEST_F(MultiProcessTest, RebuildRacingBundleIsSerialised) {
  auto b = completedBundle(call);
  auto codes = race(2, [&](int i) {
    auto s = RuntimeStore::open(dir.path);
    if (i == 0) {
      for (int k = 0; k < 20; ++k) s->rebuildProjections();
      return kCreated;
    }
    return s->commitToolRecoveryBundle(b).created ? kCreated : kConverged;
  });
  EXPECT_EQ(codes, (std::vector<int>{kCreated, kCreated}));
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(s->listToolOperations()[0].currentState, "recovery_completed");
  EXPECT_EQ(s->listJournal().size(), 4u);
  s.reset();
  expectHealthy();
}

TEST(MultiProcessOpenTest, ConcurrentMigrationOfFreshDatabase) {
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    auto codes = race(4, [&](int i) {
      auto s = RuntimeStore::open(dir.path);
      Ident id{"s-" + std::to_string(i), "inv-" + std::to_string(i), "run", "turn"};
      s->append(userEvent(id, "user-" + std::to_string(i)));
      return kCreated;
    });
    EXPECT_EQ(countOf(codes, kCreated), 4) << "round " << round;
    auto s = RuntimeStore::open(dir.path);
    EXPECT_EQ(s->readAllEvents().size(), 4u);
    EXPECT_EQ(s->integrityCheck(), "ok");
  }
}

TEST(MultiProcessOpenTest, ConcurrentT1FromTwoProcessesClaimsOnce) {
  TempDir dir;
  Ident id;
  Call call;
  { RuntimeStore::open(dir.path)->append(userEvent(id)); }
  auto codes = race(2, [&](int) {
    auto s = RuntimeStore::open(dir.path);
    return s->commitToolPrepared(t1(call)).created ? kCreated : kConverged;
  });
  EXPECT_EQ(countOf(codes, kCreated), 1);
  EXPECT_EQ(countOf(codes, kConverged), 1);
}

}  // namespace
