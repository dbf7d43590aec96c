// V5's second process asked once per distinct exported ledger (verdicts/v5_second_process.h):
// real agent runs, real `crashsim ledger resolve` processes, one harness process.
#include <gtest/gtest.h>

#include "crashsim/store.h"
#include "test_util.h"
#include "verdicts/v5_plan.h"
#include "verdicts/v5_second_process.h"

using namespace crashsim;
using namespace crashsim::harness;
using namespace crashsim::harness::test;
namespace fs = std::filesystem;

namespace {

// V5 on the store at `store` with the real crashsim as the second process.
Checks v5Of(const fs::path& store, const fs::path& work) {
  Checks c;
  auto st = RuntimeStore::open(store);
  checkV5(*st, store, work, crashsimBinary(), c);
  return c;
}

}  // namespace

// Two scenarios' ledgers in one harness process: each is judged against its own second process's
// plan (an answer remembered under a key that ignored the bytes would hand the second store the
// first one's plan and fail V5), and asking again for the same bytes reuses the answer.
TEST(V5SecondProcess, EachLedgerGetsItsOwnPlanAndTheSameBytesReuseIt) {
  const auto d = freshDir("v5-second-process");
  const auto a = completedRun(d / "a", "write-config-port");
  const auto b = completedRun(d / "b", "bash-touch-marker");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  const auto s0 = secondProcessStats();
  const Checks ca = v5Of(a, d / "a");
  EXPECT_EQ(ca.m.at("V5").status, "pass") << ca.m.at("V5").reason;
  const Checks cb = v5Of(b, d / "b");
  EXPECT_EQ(cb.m.at("V5").status, "pass") << cb.m.at("V5").reason;
  const auto s1 = secondProcessStats();
  EXPECT_EQ(s1.spawned - s0.spawned, 2u) << "one second process per distinct ledger";
  EXPECT_EQ(s1.reused, s0.reused);
  const Checks again = v5Of(a, d / "a");
  EXPECT_EQ(again.m.at("V5").status, "pass") << again.m.at("V5").reason;
  const auto s2 = secondProcessStats();
  EXPECT_EQ(s2.spawned, s1.spawned);
  EXPECT_EQ(s2.reused - s1.reused, 1u);
  fs::remove_all(d);
}
