// The store's WAL write batching (store/wal_batch_vfs.h), observed from below: a counting VFS
// registered under the store records every write that reaches it. A tool commit must arrive
// as one WAL write per commit, hold every frame, be visible to an independent connection and
// survive reopen; a write that fails below the batch must fail the commit and leave no trace.
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

// A pass-through VFS over the default one that counts WAL writes and can fail them.
struct Counting {
  static inline sqlite3_vfs vfs{};
  static inline sqlite3_vfs* base = nullptr;
  static inline sqlite3_io_methods methods{};
  static inline const sqlite3_io_methods* baseMethods = nullptr;
  static inline std::atomic<int> walWrites{0};      // writes carrying frames
  static inline std::atomic<int> walZeroWrites{0};  // all-zero writes (growth steps)
  static inline std::atomic<long> walFrameBytes{0};
  static inline std::atomic<bool> failWalWrites{false};

  struct File {
    sqlite3_file f;
    bool wal;
    sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
  };

  // Forwards io method M of our file to the same method of the real file behind it.
  template <auto M>
  struct Fwd;
  template <typename R, typename... A, R (*sqlite3_io_methods::*M)(sqlite3_file*, A...)>
  struct Fwd<M> {
    static R call(sqlite3_file* f, A... a) {
      sqlite3_file* r = reinterpret_cast<File*>(f)->real();
      return (r->pMethods->*M)(r, a...);
    }
  };

  static int write(sqlite3_file* f, const void* b, int n, sqlite3_int64 off) {
    File* p = reinterpret_cast<File*>(f);
    if (p->wal) {
      if (failWalWrites) return SQLITE_IOERR_WRITE;
      const char* c = static_cast<const char*>(b);
      if (std::all_of(c, c + n, [](char x) { return x == 0; })) {
        ++walZeroWrites;
      } else {
        ++walWrites;
        walFrameBytes += n;
      }
    }
    return p->real()->pMethods->xWrite(p->real(), b, n, off);
  }
  static int open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out) {
    File* p = reinterpret_cast<File*>(f);
    p->wal = (flags & SQLITE_OPEN_WAL) != 0;
    p->f.pMethods = nullptr;
    int rc = base->xOpen(base, name, p->real(), flags, out);
    if (p->real()->pMethods == nullptr) return rc;
    if (baseMethods == nullptr) {
      baseMethods = p->real()->pMethods;
      methods = *baseMethods;
      methods.xWrite = write;
      // Every other method forwards to the real file, which follows our header.
      methods.xClose = Fwd<&sqlite3_io_methods::xClose>::call;
      methods.xRead = Fwd<&sqlite3_io_methods::xRead>::call;
      methods.xTruncate = Fwd<&sqlite3_io_methods::xTruncate>::call;
      methods.xSync = Fwd<&sqlite3_io_methods::xSync>::call;
      methods.xFileSize = Fwd<&sqlite3_io_methods::xFileSize>::call;
      methods.xLock = Fwd<&sqlite3_io_methods::xLock>::call;
      methods.xUnlock = Fwd<&sqlite3_io_methods::xUnlock>::call;
      methods.xCheckReservedLock = Fwd<&sqlite3_io_methods::xCheckReservedLock>::call;
      methods.xFileControl = Fwd<&sqlite3_io_methods::xFileControl>::call;
      methods.xSectorSize = Fwd<&sqlite3_io_methods::xSectorSize>::call;
      methods.xDeviceCharacteristics = Fwd<&sqlite3_io_methods::xDeviceCharacteristics>::call;
      methods.xShmMap = Fwd<&sqlite3_io_methods::xShmMap>::call;
      methods.xShmLock = Fwd<&sqlite3_io_methods::xShmLock>::call;
      methods.xShmBarrier = Fwd<&sqlite3_io_methods::xShmBarrier>::call;
      methods.xShmUnmap = Fwd<&sqlite3_io_methods::xShmUnmap>::call;
      methods.xFetch = Fwd<&sqlite3_io_methods::xFetch>::call;
      methods.xUnfetch = Fwd<&sqlite3_io_methods::xUnfetch>::call;
    }
    p->f.pMethods = &methods;
    return rc;
  }

  static const char* name() {
    if (base == nullptr) {
      base = sqlite3_vfs_find("unix");
      vfs = *base;
      vfs.zName = "crashsim-test-counting";
      vfs.szOsFile = static_cast<int>(sizeof(File)) + base->szOsFile;
      vfs.xOpen = open;
      vfs.pNext = nullptr;
      sqlite3_vfs_register(&vfs, 0);
    }
    return vfs.zName;
  }
};
static_assert(sizeof(Counting::File) % 8 == 0);

std::string vfsNameOf(sqlite3* db) {
  char* name = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFSNAME, &name) != SQLITE_OK || !name)
    return {};
  std::string s(name);
  sqlite3_free(name);
  return s;
}

TEST(StoreWalBatchTest, FullSyncWritersBatchOverTheRequestedVfsOthersDoNot) {
  TempDir dir;
  StoreOptions o;
  o.vfs = Counting::name();
  {
    auto s = RuntimeStore::open(dir.path, o);
    const std::string name = vfsNameOf(s->handle());
    EXPECT_NE(name.find("crashsim-walbatch:crashsim-test-counting"), std::string::npos) << name;
  }
  {
    StoreOptions normal = o;
    normal.synchronous = "NORMAL";  // no sync per commit: nothing may wait in a buffer
    auto s = RuntimeStore::open(dir.path, normal);
    EXPECT_EQ(vfsNameOf(s->handle()).find("crashsim-walbatch"), std::string::npos);
  }
  {
    StoreOptions ro = o;
    ro.readOnly = true;
    auto s = RuntimeStore::open(dir.path, ro);
    EXPECT_EQ(vfsNameOf(s->handle()).find("crashsim-walbatch"), std::string::npos);
  }
}

TEST(StoreWalBatchTest, ToolCommitReachesTheVfsAsOneWalWriteAndIsVisibleElsewhere) {
  TempDir dir;
  StoreOptions o;
  o.vfs = Counting::name();
  auto s = RuntimeStore::open(dir.path, o);
  Call c;
  s->append(userEvent(c.id));
  const long bytesBefore = Counting::walFrameBytes;
  const int writesBefore = Counting::walWrites;
  s->commitToolPrepared(t1(c));
  // Frames written: each is a 24-byte header and a page.
  const long frames = (Counting::walFrameBytes - bytesBefore) /
                      (std::stol(pragma(s->handle(), "PRAGMA page_size")) + 24);
  const int writes = Counting::walWrites - writesBefore;
  // T1 dirties a page in each of about ten B-trees; unbatched that is two writes per frame.
  EXPECT_GE(frames, 8);
  // One write per commit; a commit that restarts the WAL syncs the new WAL header before its
  // frames (synchronous=FULL), a second write. Unbatched it would be two per frame.
  EXPECT_LE(writes, 2) << frames << " frames";
  EXPECT_GT(frames, 4 * writes);

  // An independent connection on the default VFS reads the committed T1.
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open_v2(dir.db().c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT count(*) FROM tool_operations", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(h);

  s.reset();
  auto again = RuntimeStore::open(dir.path);
  EXPECT_EQ(again->readAllEvents().size(), 3u);
  EXPECT_EQ(again->integrityCheck(), "ok");
}

TEST(StoreWalBatchTest, WalGrowsInZeroFilledStepsNotPerCommit) {
  TempDir dir;
  StoreOptions o;
  o.vfs = Counting::name();
  auto s = RuntimeStore::open(dir.path, o);
  Ident id;
  s->append(userEvent(id));
  const int zerosBefore = Counting::walZeroWrites;
  const int writesBefore = Counting::walWrites;
  for (int i = 0; i < 40; ++i) {
    Call c;
    c.id = id;
    c.callId = "call-" + std::to_string(i);
    s->commitToolPrepared(t1(c));
    s->commitToolOutcome(t2(c));
  }
  // 40 calls of about 45 KB of frames: steps of 64, 64, 128, 256 and 512 KiB, then 1 MiB.
  const auto size = fs::file_size(fs::path(dir.db().string() + "-wal"));
  EXPECT_EQ(size % (64 << 10), 0u) << size;
  EXPECT_GE(size, 1u << 20);
  // 80 commits, one frame write each (see above); the file grew in a few whole steps, each at
  // most nine zero writes below the unix VFS's 128 KiB write cap.
  EXPECT_LE(Counting::walWrites - writesBefore, 81);
  EXPECT_LE(Counting::walZeroWrites - zerosBefore, 6 * 9);
  s.reset();
  auto again = RuntimeStore::open(dir.path);
  EXPECT_EQ(again->listToolOperations().size(), 40u);
  EXPECT_EQ(again->integrityCheck(), "ok");
}

TEST(StoreWalBatchTest, FailedBatchFailsTheCommitAndLeavesNoTrace) {
  TempDir dir;
  StoreOptions o;
  o.vfs = Counting::name();
  Call c;
  const std::string before = [&] {
    auto s = RuntimeStore::open(dir.path, o);
    s->append(userEvent(c.id));
    return s->ledgerHash();
  }();
  {
    auto s = RuntimeStore::open(dir.path, o);
    Counting::failWalWrites = true;
    expectCode([&] { s->commitToolPrepared(t1(c)); }, code::sqlite_error);
    Counting::failWalWrites = false;
  }
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(s->ledgerHash(), before);
  EXPECT_EQ(s->readAllEvents().size(), 1u);
  EXPECT_TRUE(s->listUnsettledToolOperations().empty());
  EXPECT_EQ(s->integrityCheck(), "ok");
}

}  // namespace
