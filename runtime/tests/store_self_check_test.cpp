// Damaged stores fail closed (issue #22): the store manifest (a lost database is never
// re-created empty) and RuntimeStore::checkIntact's self-checks, each on a hand-damaged copy of
// a real store: the expected code comes from store.h's contract, the damage from the issue's
// list (a deleted event, swapped event_seq, a deleted dispatch, a missing header, a projection
// edited alone).
#include <map>

#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

// A store as a crashed tool run leaves it: the user event, a completed call (T1 + T2), a text
// event and a prepared-only call (T1), seq 1..7 of one invocation.
struct ToolStore {
  TempDir dir;
  Ident id;
  Call done, open;
  ToolStore() {
    done.callId = "call-done";
    open.callId = "call-open";
    auto s = RuntimeStore::open(dir.path);
    s->createRun(header(id));
    s->append(userEvent(id));
    s->commitToolPrepared(t1(done));
    s->commitToolOutcome(t2(done));
    s->append(textEvent(id, "text-1", 3500));
    s->commitToolPrepared(t1(open, 3600));
  }
  void check(bool readOnly = false) const {
    StoreOptions o;
    o.readOnly = readOnly;
    RuntimeStore::open(dir.path, o)->checkIntact();
  }
  // checkIntact must fail with `code` in a read-only open that leaves every byte as it was,
  // and in a writable open (host start-up).
  std::string expectFailClosed(std::string_view code) const {
    const auto before = snapshot(dir.path);
    std::string m = expectCode([&] { check(true); }, code);
    EXPECT_EQ(snapshot(dir.path), before) << "a read-only check wrote to the store";
    expectCode([&] { check(false); }, code);
    return m;
  }
};

TEST(StoreSelfCheck, AnIntactStorePassesEveryCheckAlsoAfterARebuild) {
  ToolStore t;
  t.check(true);
  t.check(false);
  RuntimeStore::open(t.dir.path)->rebuildProjections();
  t.check(false);
  // A continuation target's header before its start holds no events: legal (spec e.8).
  Ident target;
  target.run = "run-2";
  target.invocation = "invocation-2";
  RuntimeStore::open(t.dir.path)->createRun(header(target));
  t.check(false);
}

TEST(StoreSelfCheck, ADeletedEventIsAnEventSeqGap) {
  ToolStore t;
  rawSql(t.dir.db(), "DELETE FROM runtime_events WHERE event_id = 'text-1'");
  const std::string m = t.expectFailClosed(code::store_event_seq_gap);
  EXPECT_NE(m.find("invocation-1 holds 6 events numbered 1..7"), std::string::npos) << m;
}

TEST(StoreSelfCheck, ADeletedFirstEventIsAnEventSeqGap) {
  ToolStore t;
  rawSql(t.dir.db(), "DELETE FROM runtime_events WHERE event_id = 'user-1'");
  t.expectFailClosed(code::store_event_seq_gap);
}

TEST(StoreSelfCheck, SwappedEventSeqIsAnOrderConflict) {
  ToolStore t;
  // Seq: user 1, done call 2, dispatch 3, response 4, text 5, open call 6, dispatch 7. The text
  // event and the open call trade numbers; the set stays 1..7, so only the order check sees it.
  rawSql(t.dir.db(),
         "UPDATE runtime_events SET event_seq = 1000 WHERE event_seq = 5;"
         "UPDATE runtime_events SET event_seq = 5 WHERE event_seq = 6;"
         "UPDATE runtime_events SET event_seq = 6 WHERE event_seq = 1000;");
  const std::string m = t.expectFailClosed(code::store_event_order_conflict);
  EXPECT_NE(m.find("invocation-1"), std::string::npos) << m;
}

TEST(StoreSelfCheck, ADeletedDispatchStillReferencedIsAForeignKeyViolation) {
  ToolStore t;
  rawSql(t.dir.db(),
         "DELETE FROM runtime_events WHERE event_id = " + sqlQuote(t.done.dispatchEvent()));
  const std::string m = t.expectFailClosed(code::store_foreign_key_violation);
  EXPECT_NE(m.find("references a missing runtime_events row"), std::string::npos) << m;
}

TEST(StoreSelfCheck, AMissingHeaderIsReported) {
  ToolStore t;
  rawSql(t.dir.db(), "DELETE FROM agent_runs");
  const std::string m = t.expectFailClosed(code::store_run_header_missing);
  EXPECT_NE(m.find("run session-1/run-1 (invocation invocation-1)"), std::string::npos) << m;
}

TEST(StoreSelfCheck, AHeaderOfAnotherInvocationIsReported) {
  ToolStore t;
  rawSql(t.dir.db(), "UPDATE agent_runs SET invocation_id = 'invocation-9'");
  t.expectFailClosed(code::store_run_header_missing);
}

TEST(StoreSelfCheck, AnOperationRowEditedAloneIsAProjectionMismatch) {
  ToolStore t;
  rawSql(t.dir.db(),
         "UPDATE tool_operations SET current_state = 'prepared', version = 1, "
         "result_event_id = NULL WHERE operation_id = " +
             sqlQuote(t.done.op()));
  const std::string m = t.expectFailClosed(code::store_projection_mismatch);
  EXPECT_NE(m.find("is prepared v1 (result none), the ledger implies outcome_committed v2"),
            std::string::npos)
      << m;
}

// The projection check reads every event in place (pointers into the connection's decode
// cache, issue #49): a cache bounded below the ledger's size must not drop the decodes the
// check still reads (under ASan a dropped one is a use after free), and the check still judges
// the whole ledger.
TEST(StoreSelfCheck, ADecodeCacheSmallerThanTheLedgerStillChecksEveryEvent) {
  ToolStore t;
  StoreOptions o;
  o.decodeCacheEvents = 2;  // the store holds 7 events
  RuntimeStore::open(t.dir.path, o)->checkIntact();
  EXPECT_EQ(RuntimeStore::open(t.dir.path, o)->rebuildProjections().operations, 2u);
  rawSql(t.dir.db(),
         "UPDATE tool_operations SET current_state = 'prepared', version = 1, "
         "result_event_id = NULL WHERE operation_id = " +
             sqlQuote(t.done.op()));
  const std::string m = expectCode([&] { RuntimeStore::open(t.dir.path, o)->checkIntact(); },
                                   code::store_projection_mismatch);
  EXPECT_NE(m.find("the ledger implies outcome_committed v2"), std::string::npos) << m;
}

TEST(StoreSelfCheck, AMissingOrExtraProjectionRowIsAProjectionMismatch) {
  {
    ToolStore t;
    rawSql(t.dir.db(), "DELETE FROM tool_journal_events WHERE journal_event_id = " +
                           sqlQuote(t.done.op() + "_outcome"));
    t.expectFailClosed(code::store_projection_mismatch);
  }
  {
    ToolStore t;
    rawSql(t.dir.db(),
           "DELETE FROM tool_journal_events WHERE operation_id = " + sqlQuote(t.open.op()) +
               "; DELETE FROM tool_operations WHERE operation_id = " + sqlQuote(t.open.op()));
    const std::string m = t.expectFailClosed(code::store_projection_mismatch);
    EXPECT_NE(m.find("tool_operations lacks " + t.open.op()), std::string::npos) << m;
  }
}

// --- the store manifest ---

TEST(StoreManifest, ANewStoreRecordsItselfDurably) {
  TempDir dir;
  RuntimeStore::open(dir.path);
  EXPECT_EQ(readBytes(dir.path / "runtime.manifest"),
            "{\"format\":\"crashsim-runtime-store\",\"schemaVersion\":" +
                std::to_string(kSchemaVersion) + "}\n");
  EXPECT_EQ(readStoreManifest(dir.path), kSchemaVersion);
  for (const auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

TEST(StoreManifest, AStoreWithoutOneGetsItAtItsFirstWritableOpenNeverAtARead) {
  ToolStore t;
  fs::remove(t.dir.path / "runtime.manifest");
  const auto before = snapshot(t.dir.path);
  t.check(true);
  EXPECT_EQ(snapshot(t.dir.path), before);
  EXPECT_FALSE(readStoreManifest(t.dir.path));
  RuntimeStore::open(t.dir.path);
  EXPECT_EQ(readStoreManifest(t.dir.path), kSchemaVersion);
}

TEST(StoreManifest, ADeletedDatabaseFailsClosedAndIsNeverRecreated) {
  ToolStore t;
  for (const char* f : {"runtime.sqlite", "runtime.sqlite-wal", "runtime.sqlite-shm"})
    fs::remove(t.dir.path / f);
  const auto before = snapshot(t.dir.path);
  StoreOptions ro;
  ro.readOnly = true;
  expectCode([&] { RuntimeStore::open(t.dir.path, ro); }, code::store_data_lost);
  const std::string m = expectCode([&] { RuntimeStore::open(t.dir.path); }, code::store_data_lost);
  EXPECT_NE(m.find("is missing"), std::string::npos) << m;
  expectCode([&] { requireRuntimeStore(t.dir.path); }, code::store_data_lost);
  EXPECT_EQ(snapshot(t.dir.path), before);
}

// A small store with one run, copied into `copy` while its writer is live (as a SIGKILL leaves
// it): the database file and the manifest, and the -wal that holds all of its data if withWal.
void copyLiveStore(const TempDir& copy, bool withWal) {
  TempDir dir;
  auto live = RuntimeStore::open(dir.path);
  live->createRun(header(Ident{}));
  live->append(userEvent(Ident{}));
  fs::copy_file(dir.db(), copy.db());
  if (withWal) fs::copy_file(dir.path / "runtime.sqlite-wal", copy.path / "runtime.sqlite-wal");
  fs::copy_file(dir.path / "runtime.manifest", copy.path / "runtime.manifest");
}

TEST(StoreManifest, ADatabaseThatLostItsSchemaFailsClosed) {
  // The data of a small store lives in its WAL until a checkpoint: the database file alone,
  // copied while the writer is live (as a SIGKILL leaves it when the -wal is then deleted),
  // holds no schema.
  TempDir copy;
  copyLiveStore(copy, /*withWal=*/false);
  const auto lostWal = snapshot(copy.path);
  const std::string m = expectCode([&] { RuntimeStore::open(copy.path); }, code::store_data_lost);
  EXPECT_NE(m.find("runtime.sqlite has version 0"), std::string::npos) << m;
  EXPECT_EQ(snapshot(copy.path), lostWal) << "the refused open left a -wal or -shm behind";
  // A truncated database: the same.
  std::filesystem::resize_file(copy.db(), 0);
  for (const auto& e : fs::directory_iterator(copy.path))
    if (e.path().filename() != "runtime.sqlite" && e.path().filename() != "runtime.manifest")
      fs::remove(e.path());
  const auto before = snapshot(copy.path);
  StoreOptions ro;
  ro.readOnly = true;
  expectCode([&] { RuntimeStore::open(copy.path, ro); }, code::store_data_lost);
  expectCode([&] { RuntimeStore::open(copy.path); }, code::store_data_lost);
  EXPECT_EQ(snapshot(copy.path), before);
}

TEST(StoreManifest, AWalThatKeptNoCommitFailsClosedAndIsNotDeleted) {
  // The WAL cut inside its first frame: SQLite's recovery finds no commit, so the database
  // shows no schema. Refusing it must not checkpoint on close, which would delete the -wal.
  TempDir copy;
  copyLiveStore(copy, /*withWal=*/true);
  fs::resize_file(copy.path / "runtime.sqlite-wal", 32 + 24 + 100);
  const auto before = snapshot(copy.path);
  expectCode([&] { RuntimeStore::open(copy.path); }, code::store_data_lost);
  EXPECT_EQ(snapshot(copy.path), before);
}

// A flipped bit in sqlite_master's SQL text renames a column: SQLite still opens the file and
// quick_check passes, so only a comparison with the schema the migrations build sees it.
TEST(StoreSchema, ARenamedColumnFailsClosedAtEveryOpen) {
  ToolStore t;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(t.dir.db().c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    const char* sql =
        "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = replace(sql, "
        "'runtime_event_id', 'runtime_event_iD') WHERE sql LIKE '%runtime_event_id%'; "
        "PRAGMA writable_schema = OFF;";
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_close(db);
  }
  StoreOptions ro;
  ro.readOnly = true;
  const auto before = snapshot(t.dir.path);
  const std::string m =
      expectCode([&] { RuntimeStore::open(t.dir.path, ro); }, code::store_schema_damaged);
  EXPECT_NE(m.find("differs from the schema"), std::string::npos) << m;
  EXPECT_EQ(snapshot(t.dir.path), before);
  expectCode([&] { RuntimeStore::open(t.dir.path); }, code::store_schema_damaged);
}

TEST(StoreManifest, AnUnreadableManifestFailsClosed) {
  for (const std::string& bad : std::vector<std::string>{
           "", "{}", "not json", "{\"format\":\"crashsim-runtime-store\",\"schemaVersion\":0}",
           "{\"format\":\"other\",\"schemaVersion\":4}",
           "{\"format\":\"crashsim-runtime-store\",\"schemaVersion\":4,\"x\":1}",
           std::string(5000, ' ')}) {
    ToolStore t;
    {
      std::ofstream out(t.dir.path / "runtime.manifest", std::ios::binary | std::ios::trunc);
      out << bad;
    }
    expectCode([&] { RuntimeStore::open(t.dir.path); }, code::store_manifest_invalid);
  }
}

}  // namespace

// --- lost WAL frames ---

// A copy of a live store (as a kill leaves it: every commit still in its WAL) after 12 appends.
// withShm: the -shm too, as a kill leaves it (its index vouching for every commit);
// checkpointed: after a checkpoint copied every frame into the database file first.
struct LiveCopy {
  TempDir copy;
  static constexpr size_t kFrame = 24 + 1024;  // frame header + the store's 1 KiB page
  explicit LiveCopy(bool withShm = false, bool checkpointed = false) {
    TempDir dir;
    auto live = RuntimeStore::open(dir.path);
    live->createRun(header(Ident{}));
    live->append(userEvent(Ident{}));
    for (int i = 0; i < 11; ++i) live->append(textEvent(Ident{}, "text-" + std::to_string(i), i));
    if (checkpointed) {
      sqlite3* db = nullptr;
      EXPECT_EQ(sqlite3_open((dir.path / "runtime.sqlite").c_str(), &db), SQLITE_OK);
      EXPECT_EQ(sqlite3_exec(db, "PRAGMA wal_checkpoint(PASSIVE)", nullptr, nullptr, nullptr),
                SQLITE_OK);
      sqlite3_close(db);  // not the last connection: the WAL and the -shm stay
    }
    for (const char* f : {"runtime.sqlite", "runtime.sqlite-wal", "runtime.manifest"})
      fs::copy_file(dir.path / f, copy.path / f);
    if (withShm) fs::copy_file(dir.path / "runtime.sqlite-shm", copy.path / "runtime.sqlite-shm");
  }
  // Cuts the WAL at the end of its second-to-last commit: the last commit's frames are gone.
  void cutLastCommit() const {
    const std::string wal = readBytes(this->wal());
    std::vector<size_t> commitEnds;  // byte offsets just past each commit frame
    for (size_t at = 32; at + kFrame <= wal.size(); at += kFrame)
      if (wal.compare(at + 4, 4, std::string(4, '\0')) != 0) commitEnds.push_back(at + kFrame);
    ASSERT_GE(commitEnds.size(), 2u);
    fs::resize_file(this->wal(), commitEnds[commitEnds.size() - 2]);
  }
  fs::path wal() const { return copy.path / "runtime.sqlite-wal"; }
  void patch(size_t offset, const std::string& bytes) const {
    std::fstream f(wal(), std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  char byteAt(size_t offset) const { return readBytes(wal()).at(offset); }
  size_t events(bool readOnly) const {
    StoreOptions o;
    o.readOnly = readOnly;
    return RuntimeStore::open(copy.path, o)->readAllEvents().size();
  }
  std::string expectLost() const {
    const auto before = snapshot(copy.path);
    StoreOptions ro;
    ro.readOnly = true;
    expectCode([&] { RuntimeStore::open(copy.path, ro); }, code::store_wal_frames_lost);
    std::string m = expectCode([&] { RuntimeStore::open(copy.path); }, code::store_wal_frames_lost);
    EXPECT_EQ(snapshot(copy.path), before) << "a store with lost frames was written";
    return m;
  }
};

TEST(StoreWalLoss, AnIntactWalOfALiveStoreOpensWithEveryCommit) {
  LiveCopy c;
  EXPECT_EQ(c.events(true), 12u);
  EXPECT_EQ(c.events(false), 12u);
}

TEST(StoreWalLoss, AFlippedBitOrAZeroedFrameInTheMiddleFailsClosed) {
  {
    LiveCopy c;
    const size_t at = 32 + 5 * LiveCopy::kFrame + 24 + 100;  // page data of frame 6
    c.patch(at, std::string(1, static_cast<char>(c.byteAt(at) ^ 0x10)));
    const std::string m = c.expectLost();
    EXPECT_NE(m.find("follow frame 6 of"), std::string::npos) << m;
  }
  {
    LiveCopy c;
    c.patch(32 + 5 * LiveCopy::kFrame, std::string(LiveCopy::kFrame, '\0'));
    c.expectLost();
  }
  {
    LiveCopy c;  // a damaged WAL header: SQLite would ignore the whole log
    c.patch(12, std::string(1, static_cast<char>(c.byteAt(12) ^ 0x01)));
    c.expectLost();
  }
}

// Issue #45 §9: the -shm a crash leaves records the last commit (mxFrame); a WAL cut short of
// it lost committed transactions, even at a frame boundary where the WAL alone looks like a
// crash before them.
TEST(StoreWalLoss, AWalCutShortOfTheShmIndexFailsClosed) {
  // After a checkpoint too: the replay of the shorter log reads its older frames over the pages
  // the checkpoint copied, so the store would open regressed to the earlier commit.
  for (const bool checkpointed : {false, true}) {
    LiveCopy c(/*withShm=*/true, checkpointed);
    EXPECT_EQ(c.events(true), 12u);  // the intact -shm agrees with the WAL
    c.cutLastCommit();
    const std::string m = c.expectLost();
    EXPECT_NE(m.find("the -shm vouches for"), std::string::npos) << m;
  }
}

TEST(StoreWalLoss, WithoutTheShmTheCutIsNotDetectable) {
  // The documented limit: the WAL alone looks like a crash before its last commit.
  LiveCopy c;
  c.cutLastCommit();
  EXPECT_EQ(c.events(true), 11u);
}

TEST(StoreWalLoss, DamageToTheLastCommitIsNotDetectableAndDropsOnlyIt) {
  // Documented limit (README, fault model): a damaged last commit looks like a torn in-flight
  // one, which no acknowledgement covered. The store opens without that commit.
  LiveCopy c;
  const std::string wal = readBytes(c.wal());
  size_t last = 0;  // the last frame with a non-zero page number
  for (size_t i = 0; 32 + (i + 1) * LiveCopy::kFrame <= wal.size(); ++i)
    if (wal.compare(32 + i * LiveCopy::kFrame, 4, std::string(4, '\0')) != 0) last = i;
  c.patch(32 + last * LiveCopy::kFrame + 24 + 10,
          std::string(1, static_cast<char>(c.byteAt(32 + last * LiveCopy::kFrame + 34) ^ 1)));
  EXPECT_EQ(c.events(true), 11u);
}
