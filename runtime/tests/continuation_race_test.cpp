// Multi-process claim races (spec j.8): real fork(), a new SQLite connection per process, both
// released together from a pipe barrier.
#include <sys/wait.h>

#include <functional>
#include <set>

#include "continuation_test_util.h"

using namespace crashsim;
using namespace ctest;

namespace {

constexpr int kAcquired = 10, kExisting = 11, kConflict = 12, kFailed = 13, kOk = 0;

struct Barrier {
  int fds[2];
  Barrier() { EXPECT_EQ(::pipe(fds), 0); }
  ~Barrier() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  void wait() {
    char c;
    (void)!::read(fds[0], &c, 1);
  }
  void release(int n) {
    for (int i = 0; i < n; ++i) (void)!::write(fds[1], "g", 1);
  }
};

pid_t spawn(Barrier& b, const std::function<int()>& fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 98;
    try {
      b.wait();
      rc = fn();
    } catch (...) {
      rc = kFailed;
    }
    ::_exit(rc);
  }
  return pid;
}

int reap(pid_t pid) {
  int st = 0;
  EXPECT_EQ(::waitpid(pid, &st, 0), pid);
  EXPECT_TRUE(WIFEXITED(st));
  return WEXITSTATUS(st);
}

int claimCode(const std::filesystem::path& dir, const ContinuationClaim& c) {
  auto s = RuntimeStore::open(dir);
  ClaimResult r = claimContinuation(*s, c);
  if (r.result == "acquired") return kAcquired;
  if (r.result == "existing") return kExisting;
  return kConflict;
}

}  // namespace

TEST(ContinuationRace, TwoProcessesClaimingSameBoundaryOneAcquiredOneExisting) {
  TempStore ts("race-same");
  Host h;
  for (int i = 0; i < 5; ++i) {
    const std::string run = "r" + std::to_string(i);
    makeFailedRun(*ts, "s" + std::to_string(i), run, 10);
    ContinuationPlan p = planContinuation(*ts, "s" + std::to_string(i), run, h.host());
    ASSERT_EQ(p.decision, "continue");
    ContinuationClaim c = claimFor(p, 5000);
    Barrier b;
    pid_t a = spawn(b, [&] { return claimCode(ts.dir, c); });
    pid_t d = spawn(b, [&] { return claimCode(ts.dir, c); });
    b.release(2);
    std::multiset<int> got{reap(a), reap(d)};
    EXPECT_EQ(got, (std::multiset<int>{kAcquired, kExisting})) << "iteration " << i;
  }
  EXPECT_EQ(listClaims(*ts).size(), 5u);
}

TEST(ContinuationRace, ClaimRacingSourceTerminalAppendAppendWinsClaimFailsNoClaimRow) {
  TempStore ts("race-terminal");
  for (int i = 0; i < 5; ++i) {
    RunIds r = ids("s1", "live" + std::to_string(i));
    r.ts = 100 * (i + 1);
    RunHeader hd = header(r, r.ts);
    ts->createRun(hd);
    ts->append(r.user("still running"));
    ImmutablePrefix p = readImmutablePrefix(*ts, {r.session, r.invocation, r.run, r.turn});
    const ImmutablePrefix* segs[] = {&p};
    ContinuationPlan plan;
    plan.sessionId = "s1";
    plan.sourceRunId = r.run;
    plan.sourceInvocationId = r.invocation;
    plan.sourceTurnId = r.turn;
    plan.sourceRuntimeEventHighWater = 1;
    plan.sourcePrefixDigest = p.prefixDigest;
    plan.boundary = buildBoundaryCursor(segs);
    plan.providerReplayDigest = providerReplayDigest(Json::array());
    plan.claimId = "claim-" + r.run;
    plan.invocationId = "inv-t-" + r.run;
    plan.runId = "t-" + r.run;
    plan.turnId = "turn-t-" + r.run;
    ContinuationClaim c = claimFor(plan, 5000);
    RuntimeEvent terminal = r.failedTerminal();
    Barrier b;
    pid_t appender = spawn(b, [&] {
      auto s = RuntimeStore::open(ts.dir);
      s->append(terminal);
      return kOk;
    });
    pid_t claimer = spawn(b, [&] { return claimCode(ts.dir, c); });
    b.release(2);
    EXPECT_EQ(reap(appender), kOk) << "iteration " << i;
    EXPECT_EQ(reap(claimer), kFailed) << "iteration " << i;
  }
  EXPECT_TRUE(listClaims(*ts).empty());  // no claim row, hence no seal
}

TEST(ContinuationRace, ClaimRacingOrdinaryFirstTargetEventExactlyOneWins) {
  TempStore ts("race-target");
  Host h;
  int claimsWon = 0, appendsWon = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string sid = "s" + std::to_string(i);
    makeFailedRun(*ts, sid, "r" + std::to_string(i), 10);
    ContinuationPlan p = planContinuation(*ts, sid, "r" + std::to_string(i), h.host());
    ASSERT_EQ(p.decision, "continue");
    ContinuationClaim c = claimFor(p, 5000);
    RunIds t{sid, p.invocationId, p.runId, p.turnId};
    RuntimeEvent first = t.user("ordinary first event");
    Barrier b;
    pid_t claimer = spawn(b, [&] { return claimCode(ts.dir, c); });
    pid_t appender = spawn(b, [&] {
      auto s = RuntimeStore::open(ts.dir);
      s->append(first);
      return kOk;
    });
    b.release(2);
    const int cr = reap(claimer), ar = reap(appender);
    const bool claimWon = cr == kAcquired, appendWon = ar == kOk;
    EXPECT_NE(claimWon, appendWon) << "iteration " << i << " claim=" << cr << " append=" << ar;
    if (claimWon) {
      ++claimsWon;
      EXPECT_TRUE(ts->readRunEvents(sid, p.runId).empty());
      EXPECT_TRUE(readClaimById(*ts, p.claimId));
    } else {
      ++appendsWon;
      EXPECT_FALSE(readClaimById(*ts, p.claimId));
      EXPECT_EQ(ts->readRunEvents(sid, p.runId).size(), 1u);
    }
  }
  EXPECT_EQ(claimsWon + appendsWon, 6);
}
