// Crash atomicity with SIGKILL (spec j.9), against the instrumented library.
//
// A fork()ed child opens its OWN store connection and is killed inside a transaction:
//   * at the failpoints the runtime carries inside transactions — P5 (inside T2, after the
//     response insert), P10 (inside the recovery bundle, before COMMIT), P8 (inside the
//     terminal RuntimeEvent commit) — armed through CRASHSIM_ARM with
//     CRASHSIM_FAILPOINT_MODE=self, so the child SIGKILLs itself on the armed hit;
//   * "inside T1" and "inside each step" of T1/T2/bundle have no catalogue failpoint: the
//     child installs a P-less test hook, sqlite3_update_hook on its own connection, and
//     SIGKILLs itself on the k-th row change of the transaction (k = every row the writer
//     inserts or updates), i.e. after that step ran and before COMMIT.
// The parent confirms death by signal 9, reopens the store through a new instance and checks
// PRAGMA integrity_check, the durable state j.9 names, and projections == rebuild.
#include <signal.h>
#include <sys/wait.h>

#include <functional>

#include "../store_test_util.h"
#include "crashsim/failpoints.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/startup_repair.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

int gKillAt = 0;
int gRowChanges = 0;
void killOnRowChange(void*, int, const char*, const char*, sqlite3_int64) {
  if (++gRowChanges == gKillAt) ::raise(SIGKILL);
}

struct Crash {
  std::string arm;  // "P5:1" or empty
  int killAtRowChange = 0;
};

// Runs `action` in a forked child armed per `crash`; returns true when it died by SIGKILL.
bool runKilled(const fs::path& storeDir, const Crash& crash,
               const std::function<void(RuntimeStore&)>& action, StoreOptions options = {}) {
  pid_t pid = ::fork();
  if (pid == 0) {
    failpoints::resetForTesting();
    if (!crash.arm.empty()) {
      ::setenv("CRASHSIM_ARM", crash.arm.c_str(), 1);
      ::setenv("CRASHSIM_FAILPOINT_MODE", "self", 1);
    }
    try {
      auto s = RuntimeStore::open(storeDir, options);
      if (crash.killAtRowChange > 0) {
        gKillAt = crash.killAtRowChange;
        gRowChanges = 0;
        sqlite3_update_hook(s->handle(), killOnRowChange, nullptr);
      }
      action(*s);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(0);  // normal exit: the kill point was never reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

struct Durable {
  std::vector<std::string> eventIds;
  std::vector<ToolOperationRow> ops;
  std::vector<JournalRow> journal;
};

struct StoreCrashTest : ::testing::Test {
  TempDir dir;
  Ident id;
  Call call;

  Durable reopenAndCheck() {
    auto s = RuntimeStore::open(dir.path);
    EXPECT_EQ(s->integrityCheck(), "ok");
    Durable d;
    for (auto& e : s->readRunEvents(id.session, id.run)) d.eventIds.push_back(e.event.id);
    d.ops = s->listToolOperations();
    d.journal = s->listJournal();
    const std::string ledger = s->ledgerHash();
    s->rebuildProjections();
    EXPECT_EQ(s->listToolOperations(), d.ops) << "projections differ from a rebuild";
    EXPECT_EQ(s->listJournal(), d.journal) << "journal differs from a rebuild";
    EXPECT_EQ(s->ledgerHash(), ledger);
    return d;
  }
  std::vector<ToolDecision> decisions() {
    auto s = RuntimeStore::open(dir.path);
    std::vector<RuntimeEvent> evs;
    for (auto& e : s->readRunEvents(id.session, id.run)) evs.push_back(e.event);
    return resolveRecovery(evs).decisions;
  }
  void setupPrepared() {
    auto s = RuntimeStore::open(dir.path);
    s->createRun(header(id));
    s->append(userEvent(id));
    s->commitToolPrepared(t1(call));
  }
  void expectPrepared(const Durable& d) {
    EXPECT_EQ(d.eventIds,
              (std::vector<std::string>{"user-1", call.callEvent(), call.dispatchEvent()}));
    ASSERT_EQ(d.ops.size(), 1u);
    EXPECT_EQ(d.ops[0].currentState, "prepared");
    EXPECT_EQ(d.ops[0].version, 1);
    ASSERT_EQ(d.journal.size(), 1u);
    EXPECT_EQ(d.journal[0].state, "prepared");
    auto s = RuntimeStore::open(dir.path);
    EXPECT_EQ(s->listUnsettledToolOperations().size(), 1u);
    auto ds = decisions();
    ASSERT_EQ(ds.size(), 1u);
    EXPECT_EQ(ds[0].status, code::indeterminate);
    EXPECT_EQ(ds[0].reason, code::dispatch_without_response);
  }
};

// --- inside T1: nothing ---

class KilledInsideT1 : public StoreCrashTest, public ::testing::WithParamInterface<int> {};

TEST_P(KilledInsideT1, LeavesNothing) {
  {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(id));
  }
  ASSERT_TRUE(runKilled(dir.path, {"", GetParam()},
                        [&](RuntimeStore& s) { s.commitToolPrepared(t1(call)); }));
  auto d = reopenAndCheck();
  EXPECT_EQ(d.eventIds, (std::vector<std::string>{"user-1"}));
  EXPECT_TRUE(d.ops.empty());
  EXPECT_TRUE(d.journal.empty());
  // The retried T1 commits exactly once.
  auto s = RuntimeStore::open(dir.path);
  EXPECT_TRUE(s->commitToolPrepared(t1(call)).created);
}
// T1 row changes: call, dispatch, journal, operation.
INSTANTIATE_TEST_SUITE_P(EveryStep, KilledInsideT1, ::testing::Values(1, 2, 3, 4));

// --- after T1 (+ side effect): call + dispatch kept, operation prepared/unsettled ---

TEST_F(StoreCrashTest, KilledAfterT1KeepsCallAndDispatchPrepared) {
  {
    auto s = RuntimeStore::open(dir.path);
    s->append(userEvent(id));
  }
  ASSERT_TRUE(runKilled(dir.path, {"", 0}, [&](RuntimeStore& s) {
    s.commitToolPrepared(t1(call));
    ::raise(SIGKILL);  // the side effect ran; T2 never started
  }));
  expectPrepared(reopenAndCheck());
}

// --- inside T2: T1 kept, state prepared ---

TEST_F(StoreCrashTest, KilledAtP5InsideT2KeepsT1Prepared) {
  setupPrepared();
  ASSERT_TRUE(
      runKilled(dir.path, {"P5:1", 0}, [&](RuntimeStore& s) { s.commitToolOutcome(t2(call)); }));
  expectPrepared(reopenAndCheck());
  auto s = RuntimeStore::open(dir.path);
  EXPECT_TRUE(s->commitToolOutcome(t2(call)).created);  // T2 retried once
}

class KilledInsideT2 : public StoreCrashTest, public ::testing::WithParamInterface<int> {};
TEST_P(KilledInsideT2, KeepsT1Prepared) {
  setupPrepared();
  ASSERT_TRUE(runKilled(dir.path, {"", GetParam()},
                        [&](RuntimeStore& s) { s.commitToolOutcome(t2(call)); }));
  expectPrepared(reopenAndCheck());
}
// T2 row changes: response, journal, CAS.
INSTANTIATE_TEST_SUITE_P(EveryStep, KilledInsideT2, ::testing::Values(1, 2, 3));

// --- after T2: outcome kept ---

TEST_F(StoreCrashTest, KilledAfterT2KeepsOutcome) {
  setupPrepared();
  ASSERT_TRUE(runKilled(dir.path, {"", 0}, [&](RuntimeStore& s) {
    s.commitToolOutcome(t2(call));
    ::raise(SIGKILL);
  }));
  auto d = reopenAndCheck();
  EXPECT_EQ(d.eventIds.size(), 4u);
  EXPECT_EQ(d.ops[0].currentState, "outcome_committed");
  auto ds = decisions();
  EXPECT_EQ(ds[0].status, code::completed);
  EXPECT_EQ(ds[0].settlementOrigin, code::normal_t2);
}

// --- inside the recovery bundle: absent, prepared; the next recovery commits it once ---

TEST_F(StoreCrashTest, KilledAtP10InsideBundleLeavesBundleAbsent) {
  setupPrepared();
  auto b = completedBundle(call);
  ASSERT_TRUE(
      runKilled(dir.path, {"P10:1", 0}, [&](RuntimeStore& s) { s.commitToolRecoveryBundle(b); }));
  expectPrepared(reopenAndCheck());
  // Double fault: the recovery process itself dies again, then recovery completes once.
  ASSERT_TRUE(
      runKilled(dir.path, {"P10:1", 0}, [&](RuntimeStore& s) { s.commitToolRecoveryBundle(b); }));
  expectPrepared(reopenAndCheck());
  auto s = RuntimeStore::open(dir.path);
  EXPECT_TRUE(s->commitToolRecoveryBundle(b).created);
  EXPECT_FALSE(s->commitToolRecoveryBundle(b).created);
}

class KilledInsideBundle : public StoreCrashTest, public ::testing::WithParamInterface<int> {};
TEST_P(KilledInsideBundle, EveryStepRollsBack) {
  setupPrepared();
  auto b = completedBundle(call);
  ASSERT_TRUE(runKilled(dir.path, {"", GetParam()},
                        [&](RuntimeStore& s) { s.commitToolRecoveryBundle(b); }));
  expectPrepared(reopenAndCheck());
}
// Completed bundle row changes: reconcile, journal, version, outcome, journal, CAS, decision,
// journal, CAS.
INSTANTIATE_TEST_SUITE_P(EveryStep, KilledInsideBundle, ::testing::Range(1, 10));

TEST_F(StoreCrashTest, KilledAfterBundleCommitKeepsAllFiveEvents) {
  setupPrepared();
  auto b = completedBundle(call);
  ASSERT_TRUE(runKilled(dir.path, {"", 0}, [&](RuntimeStore& s) {
    s.commitToolRecoveryBundle(b);
    ::raise(SIGKILL);
  }));
  auto d = reopenAndCheck();
  EXPECT_EQ(d.eventIds.size(), 6u);  // user + call, dispatch, reconcile, outcome, decision
  EXPECT_EQ(d.ops[0].currentState, "recovery_completed");
  EXPECT_EQ(d.ops[0].version, 4);
  auto ds = decisions();
  EXPECT_EQ(ds[0].reason, code::recovery_bundle_completed);
}

// --- inside the terminal commit (P8): no terminal; repair appends a recovered terminal ---

TEST_F(StoreCrashTest, KilledAtP8InsideTerminalCommitLeavesNoTerminal) {
  setupPrepared();
  {
    auto s = RuntimeStore::open(dir.path);
    s->commitToolOutcome(t2(call));
  }
  ASSERT_TRUE(runKilled(dir.path, {"P8:1", 0}, [&](RuntimeStore& s) {
    s.commitTerminalEvent(terminalEvent(id, "terminal-1", 9000));
  }));
  auto d = reopenAndCheck();
  EXPECT_EQ(d.eventIds.size(), 4u);
  auto s = RuntimeStore::open(dir.path);
  auto rep = startupRepair(*s, RepairMode::strict);
  ASSERT_EQ(rep.runs.size(), 1u);
  EXPECT_EQ(rep.runs[0].action, "recover_terminal");
  EXPECT_EQ(s->readRun(id.session, id.run)->status, "failed");
  EXPECT_FALSE(startupRepair(*s, RepairMode::strict).changed());
}

// --- repair-time P9: recovered terminal committed, header not; next repair fixes header ---

TEST_F(StoreCrashTest, RepairKilledAtP9IsRepairedFromTheFact) {
  setupPrepared();
  ASSERT_TRUE(runKilled(dir.path, {"P9:1", 0},
                        [&](RuntimeStore& s) { startupRepair(s, RepairMode::strict); }));
  auto d = reopenAndCheck();
  EXPECT_EQ(d.eventIds.back(), recoveredTerminalEventId(id.session, id.run));
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(s->readRun(id.session, id.run)->status, "running");
  auto rep = startupRepair(*s, RepairMode::strict);
  EXPECT_EQ(rep.runs[0].action, "repair_header");
  auto h = s->readRun(id.session, id.run);
  EXPECT_EQ(h->status, "failed");
  EXPECT_EQ(h->failureClass, "app_restarted");
  EXPECT_FALSE(startupRepair(*s, RepairMode::strict).changed());
}

// --- the legacy JSONL import (P16 inside a batch, P17 after a batch's COMMIT) ---
//
// 12 legacy events in batches of 5: three batches, so P16 and P17 are each hit exactly three
// times (ceil(12 / 5), from the batch size alone). The kill state the catalogue names: at P16#k
// the first k-1 batches, at P17#k the first k; no manifest, the JSONL unchanged. The next open
// imports the rest once: the ledger of an uninterrupted import, every event exactly once.
// Returns "" when all of that holds, else the first difference.
std::string legacyImportCrashProblem(const std::string& arm, const char* plant = nullptr) {
  const Legacy l = legacyLedger(3);
  const std::string bytes = jsonl(l.lines);
  constexpr size_t kBatch = 5;
  StoreOptions o;
  o.legacyImportBatchEvents = kBatch;
  TempDir reference, dir;
  writeFile(reference.path / kLegacyJsonlName, bytes);
  writeFile(dir.path / kLegacyJsonlName, bytes);
  const std::string whole = RuntimeStore::open(reference.path, o)->ledgerHash();
  if (plant) ::setenv("CRASHSIM_PLANT", plant, 1);
  const bool killed = runKilled(
      dir.path, {arm, 0}, [](RuntimeStore&) {}, o);
  ::unsetenv("CRASHSIM_PLANT");
  if (!killed) return arm + " was not reached";
  const auto colon = arm.find(':');
  const size_t k = std::stoul(arm.substr(colon + 1));
  const size_t batches = arm.substr(0, colon) == "P16" ? k - 1 : k;
  const size_t kept = std::min(l.lines.size(), batches * kBatch);
  if (readBytes(dir.path / kLegacyJsonlName) != bytes) return "the JSONL changed";
  if (!legacyImportPending(dir.path)) return "the import is recorded complete after the kill";
  if (fs::exists(dir.db())) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(dir.db().c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    const std::string n = pragma(db, "SELECT COUNT(*) FROM runtime_events");
    sqlite3_close(db);
    if (n != std::to_string(kept))
      return "the kill left " + n + " events, the batches before it hold " + std::to_string(kept);
  } else if (kept != 0) {
    return "the kill left no database";
  }
  auto s = RuntimeStore::open(dir.path, o);
  s->checkIntact();
  if (legacyImportPending(dir.path)) return "the second import did not complete";
  if (s->ledgerHash() != whole) return "the resumed import differs from an uninterrupted one";
  if (s->readAllEvents().size() != l.lines.size()) return "events imported twice or lost";
  return "";
}

TEST(LegacyImportCrash, EveryBatchHitLeavesItsBatchesAndTheNextOpenImportsTheRestOnce) {
  for (const char* id : {"P16", "P17"}) {
    for (int k = 1; k <= 3; ++k) {
      const std::string arm = std::string(id) + ":" + std::to_string(k);
      EXPECT_EQ(legacyImportCrashProblem(arm), "") << arm;
    }
    // A fourth hit does not exist: three batches, one hit each.
    EXPECT_EQ(legacyImportCrashProblem(std::string(id) + ":4"),
              std::string(id) + ":4 was not reached");
  }
}

// Planted bug: the manifest written before the batches ends the import at the first crash.
TEST(LegacyImportCrash, AManifestWrittenBeforeTheBatchesIsCaught) {
  EXPECT_EQ(legacyImportCrashProblem("P16:2", "legacy_manifest_first"),
            "the import is recorded complete after the kill");
  EXPECT_EQ(legacyImportCrashProblem("P17:3", "legacy_manifest_first"),
            "the import is recorded complete after the kill");
}

}  // namespace
