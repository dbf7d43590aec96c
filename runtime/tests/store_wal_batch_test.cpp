// The store's WAL write batching (store/wal_batch_vfs.h), observed from below: a counting VFS
// registered under the store records every write that reaches it. A tool commit must arrive
// as one WAL write per commit, hold every frame, be visible to an independent connection and
// survive reopen; a write that fails below the batch must fail the commit and leave no trace.
#include <sqlite3.h>

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
  static inline std::atomic<int> walWrites{0};
  static inline std::atomic<long> walBytes{0};
  static inline std::atomic<bool> failWalWrites{false};

  struct File {
    sqlite3_file f;
    bool wal;
    sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
  };

  static int write(sqlite3_file* f, const void* b, int n, sqlite3_int64 off) {
    File* p = reinterpret_cast<File*>(f);
    if (p->wal) {
      if (failWalWrites) return SQLITE_IOERR_WRITE;
      ++walWrites;
      walBytes += n;
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
      methods.xClose = [](sqlite3_file* x) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xClose(q->real());
      };
      methods.xRead = [](sqlite3_file* x, void* b, int n, sqlite3_int64 o) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xRead(q->real(), b, n, o);
      };
      methods.xTruncate = [](sqlite3_file* x, sqlite3_int64 s) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xTruncate(q->real(), s);
      };
      methods.xSync = [](sqlite3_file* x, int fl) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xSync(q->real(), fl);
      };
      methods.xFileSize = [](sqlite3_file* x, sqlite3_int64* s) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xFileSize(q->real(), s);
      };
      methods.xLock = [](sqlite3_file* x, int l) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xLock(q->real(), l);
      };
      methods.xUnlock = [](sqlite3_file* x, int l) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xUnlock(q->real(), l);
      };
      methods.xCheckReservedLock = [](sqlite3_file* x, int* r) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xCheckReservedLock(q->real(), r);
      };
      methods.xFileControl = [](sqlite3_file* x, int op, void* a) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xFileControl(q->real(), op, a);
      };
      methods.xSectorSize = [](sqlite3_file* x) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xSectorSize(q->real());
      };
      methods.xDeviceCharacteristics = [](sqlite3_file* x) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xDeviceCharacteristics(q->real());
      };
      methods.xShmMap = [](sqlite3_file* x, int r, int s, int e, void volatile** pp) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xShmMap(q->real(), r, s, e, pp);
      };
      methods.xShmLock = [](sqlite3_file* x, int o, int n, int fl) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xShmLock(q->real(), o, n, fl);
      };
      methods.xShmBarrier = [](sqlite3_file* x) {
        auto* q = reinterpret_cast<File*>(x);
        q->real()->pMethods->xShmBarrier(q->real());
      };
      methods.xShmUnmap = [](sqlite3_file* x, int d) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xShmUnmap(q->real(), d);
      };
      methods.xFetch = [](sqlite3_file* x, sqlite3_int64 o, int n, void** pp) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xFetch(q->real(), o, n, pp);
      };
      methods.xUnfetch = [](sqlite3_file* x, sqlite3_int64 o, void* pp) {
        auto* q = reinterpret_cast<File*>(x);
        return q->real()->pMethods->xUnfetch(q->real(), o, pp);
      };
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

// Frames in the WAL file: a 32-byte header, then (24-byte frame header + page) each.
int64_t walFrames(sqlite3* db, const fs::path& file) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, nullptr);
  const int64_t page = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
  sqlite3_finalize(st);
  std::error_code ec;
  auto size = static_cast<int64_t>(fs::file_size(fs::path(file.string() + "-wal"), ec));
  return ec || size < 32 || page == 0 ? 0 : (size - 32) / (page + 24);
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
  const int64_t framesBefore = walFrames(s->handle(), dir.db());
  const int writesBefore = Counting::walWrites;
  s->commitToolPrepared(t1(c));
  const int64_t frames = walFrames(s->handle(), dir.db()) - framesBefore;
  const int writes = Counting::walWrites - writesBefore;
  // T1 dirties a page in each of about ten B-trees; unbatched that is two writes per frame.
  EXPECT_GE(frames, 8);
  EXPECT_EQ(writes, 1) << frames << " frames";

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
