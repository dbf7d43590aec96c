// wal_batch_vfs.cpp — WAL write batching over a wrapped SQLite VFS (see wal_batch_vfs.h).
#include "store/wal_batch_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "crashsim/failpoints.h"
#include "crashsim/plant.h"

namespace crashsim::store_detail {
namespace {

// Largest batch handed on in one write. The unix VFS caps a single write at 128 KiB - 1 (its
// seekAndWrite masks the count with 0x1ffff), so a batch stays below that; a tool commit
// (about twenty frames of the store's 1 KiB pages) fits in one.
constexpr size_t kMaxBatch = 126 * 1024;

// A WAL file grows in zero-filled steps: the step doubles with the file from 64 KiB up to
// 1 MiB, so a small store writes few zeros and a busy one extends its WAL about once per MiB.
// Each extension of a file makes the next fdatasync write the inode too (ext4: a second,
// synchronous I/O); a WAL that grew by one commit's frames at a time paid that on every
// commit until it first wrapped, which for a store opened per run (the WAL is deleted at the
// last close) is every commit.
constexpr sqlite3_int64 kMinGrowStep = 64 * 1024;
constexpr sqlite3_int64 kMaxGrowStep = 1024 * 1024;

struct BatchVfs {
  sqlite3_vfs vfs{};
  sqlite3_vfs* base = nullptr;
  std::string name;
};

struct BatchFile {
  sqlite3_file base;
  sqlite3_file* real;  // the wrapped file, allocated right after this struct
  const char* vfsName;
  bool wal;
  // Buffered bytes for [pendingOff, pendingOff + pending->size()); only for WAL files.
  std::vector<char>* pending;
  sqlite3_int64 pendingOff;
  // First failed hand-over of a batch: every later operation on this WAL file fails with it,
  // so no commit can sync (and publish) over frames that never reached the wrapped VFS.
  int stickyRc;
  // End of the zero-filled or written region of the WAL as far as this handle knows (its size
  // at open, then every extension through it). Bytes past the frames being written are never
  // valid frames (SQLite trusts frames up to the committed mxFrame, salted per generation, and
  // only the holder of the WAL write lock writes frames), so filling them with zeros is safe
  // even when another connection extended the file meanwhile.
  sqlite3_int64 grownTo;
};
static_assert(sizeof(BatchFile) % 8 == 0);

// Every buffer operation runs under g_mu: a barrier on one connection's database file may
// flush the WAL buffer another thread's connection is filling.
std::mutex g_mu;
std::vector<BatchFile*> g_pendingFiles;  // files with a non-empty buffer
std::atomic<size_t> g_pendingCount{0};

BatchFile* bf(sqlite3_file* f) { return reinterpret_cast<BatchFile*>(f); }
sqlite3_file* real(sqlite3_file* f) { return bf(f)->real; }
BatchVfs* bv(sqlite3_vfs* v) { return static_cast<BatchVfs*>(v->pAppData); }

// Writes [off, off + n) through to the wrapped file; when that passes the grown region, the
// rest of the step after it is zero-filled in the same hand-over (before the sync).
int writeThrough(BatchFile* f, const char* data, size_t n, sqlite3_int64 off) {
  int rc = f->real->pMethods->xWrite(f->real, data, static_cast<int>(n), off);
  const sqlite3_int64 end = off + static_cast<sqlite3_int64>(n);
  if (rc != SQLITE_OK || end <= f->grownTo) return rc;
  static const std::vector<char> zeros(kMaxBatch, '\0');
  const sqlite3_int64 step = std::clamp(f->grownTo, kMinGrowStep, kMaxGrowStep);
  const sqlite3_int64 target = (end + step - 1) / step * step;
  for (sqlite3_int64 at = end; at < target && rc == SQLITE_OK;) {
    const auto len = static_cast<int>(std::min<sqlite3_int64>(target - at, kMaxBatch));
    rc = f->real->pMethods->xWrite(f->real, zeros.data(), len, at);
    at += len;
  }
  if (rc == SQLITE_OK) f->grownTo = target;
  return rc;
}

int flushLocked(BatchFile* f) {
  if (f->pending == nullptr || f->pending->empty()) return SQLITE_OK;
  int rc = writeThrough(f, f->pending->data(), f->pending->size(), f->pendingOff);
  if (rc != SQLITE_OK && f->stickyRc == SQLITE_OK) f->stickyRc = rc;
  f->pending->clear();
  for (size_t i = 0; i < g_pendingFiles.size(); ++i) {
    if (g_pendingFiles[i] == f) {
      g_pendingFiles[i] = g_pendingFiles.back();
      g_pendingFiles.pop_back();
      break;
    }
  }
  g_pendingCount.store(g_pendingFiles.size(), std::memory_order_release);
  return rc;
}

int flush(BatchFile* f) {
  if (!f->wal) return SQLITE_OK;
  std::lock_guard lk(g_mu);
  flushLocked(f);
  return f->stickyRc;
}

// Before any wal-index publication or lock change: every buffered frame reaches the wrapped
// VFS. A failed hand-over cannot fail the barrier; it is sticky on its file instead (above).
void flushAll() {
  if (g_pendingCount.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lk(g_mu);
  while (!g_pendingFiles.empty()) flushLocked(g_pendingFiles.back());
}

int bClose(sqlite3_file* f) {
  BatchFile* p = bf(f);
  int rc = flush(p);
  if (p->pending != nullptr) {
    delete p->pending;
    p->pending = nullptr;
  }
  sqlite3_file* r = real(f);
  int rc2 = r->pMethods != nullptr ? r->pMethods->xClose(r) : SQLITE_OK;
  return rc != SQLITE_OK ? rc : rc2;
}

int bRead(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  if (int rc = flush(bf(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xRead(real(f), buf, amt, off);
}

int bWrite(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  BatchFile* p = bf(f);
  if (!p->wal) return real(f)->pMethods->xWrite(real(f), buf, amt, off);
#if defined(CRASHSIM_ENABLE_FAILPOINTS)
  // Instrumented build: a full disk at this WAL write (CRASHSIM_FAULT_AFTER, failpoints.h).
  if (failpoints::consumeIoFault()) return SQLITE_FULL;
#endif
  const auto n = static_cast<size_t>(amt);
  const char* bytes = static_cast<const char*>(buf);
  std::lock_guard lk(g_mu);
  if (p->stickyRc != SQLITE_OK) return p->stickyRc;
  std::vector<char>& pending = *p->pending;
  if (!pending.empty()) {
    const sqlite3_int64 end = p->pendingOff + static_cast<sqlite3_int64>(pending.size());
    if (off >= p->pendingOff && off + amt <= end) {  // rewrite of a buffered frame
      std::memcpy(pending.data() + (off - p->pendingOff), bytes, n);
      return SQLITE_OK;
    }
    if (off == end && pending.size() + n <= kMaxBatch) {  // the next append
      pending.insert(pending.end(), bytes, bytes + n);
      return SQLITE_OK;
    }
    if (flushLocked(p) != SQLITE_OK) return p->stickyRc;
  }
  if (n >= kMaxBatch) {
    int rc = writeThrough(p, bytes, n, off);
    if (rc != SQLITE_OK && p->stickyRc == SQLITE_OK) p->stickyRc = rc;
    return rc;
  }
  pending.assign(bytes, bytes + n);
  p->pendingOff = off;
  g_pendingFiles.push_back(p);
  g_pendingCount.store(g_pendingFiles.size(), std::memory_order_release);
  return SQLITE_OK;
}

int bTruncate(sqlite3_file* f, sqlite3_int64 size) {
  if (int rc = flush(bf(f)); rc != SQLITE_OK) return rc;
  int rc = real(f)->pMethods->xTruncate(real(f), size);
  if (rc == SQLITE_OK) {
    std::lock_guard lk(g_mu);
    bf(f)->grownTo = size;
  }
  return rc;
}
int bSync(sqlite3_file* f, int flags) {
  if (planted("wal_batch_flush_after_sync")) {  // planted bug: the batch misses its own sync
    if (int rc = real(f)->pMethods->xSync(real(f), flags); rc != SQLITE_OK) return rc;
    return flush(bf(f));
  }
  if (int rc = flush(bf(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xSync(real(f), flags);
}
int bFileSize(sqlite3_file* f, sqlite3_int64* size) {
  if (int rc = flush(bf(f)); rc != SQLITE_OK) return rc;
  return real(f)->pMethods->xFileSize(real(f), size);
}
int bLock(sqlite3_file* f, int lock) { return real(f)->pMethods->xLock(real(f), lock); }
int bUnlock(sqlite3_file* f, int lock) { return real(f)->pMethods->xUnlock(real(f), lock); }
int bCheckReservedLock(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int bFileControl(sqlite3_file* f, int op, void* arg) {
  if (int rc = flush(bf(f)); rc != SQLITE_OK) return rc;
  int rc = real(f)->pMethods->xFileControl(real(f), op, arg);
  if (op == SQLITE_FCNTL_VFSNAME && rc == SQLITE_OK) {  // shims name the stack, outermost first
    char** name = static_cast<char**>(arg);
    *name = sqlite3_mprintf("%s/%z", bf(f)->vfsName, *name);
  }
  return rc;
}
int bSectorSize(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
int bDeviceCharacteristics(sqlite3_file* f) {
  return real(f)->pMethods->xDeviceCharacteristics(real(f));
}
int bShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** pp) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return r->pMethods->xShmMap(r, region, size, extend, pp);
}
int bShmLock(sqlite3_file* f, int offset, int n, int flags) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  flushAll();
  return r->pMethods->xShmLock(r, offset, n, flags);
}
void bShmBarrier(sqlite3_file* f) {
  flushAll();
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion >= 2) r->pMethods->xShmBarrier(r);
}
int bShmUnmap(sqlite3_file* f, int deleteFlag) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 2) return SQLITE_OK;
  flushAll();
  return r->pMethods->xShmUnmap(r, deleteFlag);
}
int bFetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** pp) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 3) {
    *pp = nullptr;
    return SQLITE_OK;
  }
  return r->pMethods->xFetch(r, off, amt, pp);
}
int bUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 3) return SQLITE_OK;
  return r->pMethods->xUnfetch(r, off, p);
}

const sqlite3_io_methods kMethods = {
    3,
    bClose,
    bRead,
    bWrite,
    bTruncate,
    bSync,
    bFileSize,
    bLock,
    bUnlock,
    bCheckReservedLock,
    bFileControl,
    bSectorSize,
    bDeviceCharacteristics,
    bShmMap,
    bShmLock,
    bShmBarrier,
    bShmUnmap,
    bFetch,
    bUnfetch,
};

int bOpen(sqlite3_vfs* v, const char* name, sqlite3_file* f, int flags, int* outFlags) {
  sqlite3_vfs* base = bv(v)->base;
  BatchFile* p = bf(f);
  p->base.pMethods = nullptr;
  p->real = reinterpret_cast<sqlite3_file*>(p + 1);
  p->real->pMethods = nullptr;
  p->vfsName = v->zName;
  p->wal = (flags & SQLITE_OPEN_WAL) != 0;
  p->pending = nullptr;
  p->pendingOff = 0;
  p->stickyRc = SQLITE_OK;
  if (p->wal) {
    p->pending = new (std::nothrow) std::vector<char>();
    if (p->pending == nullptr) return SQLITE_NOMEM;
  }
  p->grownTo = 0;
  int rc = base->xOpen(base, name, p->real, flags, outFlags);
  if (p->real->pMethods != nullptr) {
    p->base.pMethods = &kMethods;  // SQLite calls xClose, which frees the buffer
    sqlite3_int64 size = 0;
    if (p->wal && p->real->pMethods->xFileSize(p->real, &size) == SQLITE_OK) p->grownTo = size;
  } else {
    delete p->pending;
    p->pending = nullptr;
  }
  return rc;
}

int bDelete(sqlite3_vfs* v, const char* name, int dirSync) {
  return bv(v)->base->xDelete(bv(v)->base, name, dirSync);
}
int bAccess(sqlite3_vfs* v, const char* name, int flags, int* out) {
  return bv(v)->base->xAccess(bv(v)->base, name, flags, out);
}
int bFullPathname(sqlite3_vfs* v, const char* name, int n, char* out) {
  return bv(v)->base->xFullPathname(bv(v)->base, name, n, out);
}
void* bDlOpen(sqlite3_vfs* v, const char* name) { return bv(v)->base->xDlOpen(bv(v)->base, name); }
void bDlError(sqlite3_vfs* v, int n, char* msg) { bv(v)->base->xDlError(bv(v)->base, n, msg); }
void (*bDlSym(sqlite3_vfs* v, void* h, const char* sym))(void) {
  return bv(v)->base->xDlSym(bv(v)->base, h, sym);
}
void bDlClose(sqlite3_vfs* v, void* h) { bv(v)->base->xDlClose(bv(v)->base, h); }
int bRandomness(sqlite3_vfs* v, int n, char* out) {
  return bv(v)->base->xRandomness(bv(v)->base, n, out);
}
int bSleep(sqlite3_vfs* v, int us) { return bv(v)->base->xSleep(bv(v)->base, us); }
int bCurrentTime(sqlite3_vfs* v, double* t) { return bv(v)->base->xCurrentTime(bv(v)->base, t); }
int bGetLastError(sqlite3_vfs* v, int n, char* msg) {
  sqlite3_vfs* b = bv(v)->base;
  return b->xGetLastError != nullptr ? b->xGetLastError(b, n, msg) : 0;
}
int bCurrentTimeInt64(sqlite3_vfs* v, sqlite3_int64* t) {
  return bv(v)->base->xCurrentTimeInt64(bv(v)->base, t);
}
int bSetSystemCall(sqlite3_vfs* v, const char* name, sqlite3_syscall_ptr p) {
  return bv(v)->base->xSetSystemCall(bv(v)->base, name, p);
}
sqlite3_syscall_ptr bGetSystemCall(sqlite3_vfs* v, const char* name) {
  return bv(v)->base->xGetSystemCall(bv(v)->base, name);
}
const char* bNextSystemCall(sqlite3_vfs* v, const char* name) {
  return bv(v)->base->xNextSystemCall(bv(v)->base, name);
}

std::mutex g_registerMu;
std::map<sqlite3_vfs*, std::unique_ptr<BatchVfs>> g_vfses;  // by wrapped VFS; never freed

}  // namespace

const char* walBatchVfsName(const std::string& base) {
  sqlite3_vfs* b = sqlite3_vfs_find(base.empty() ? nullptr : base.c_str());
  if (b == nullptr) return nullptr;
  std::lock_guard lk(g_registerMu);
  auto& slot = g_vfses[b];
  if (!slot) {
    auto w = std::make_unique<BatchVfs>();
    w->base = b;
    w->name = std::string("crashsim-walbatch:") + b->zName;
    sqlite3_vfs& v = w->vfs;
    // Version 3 needs the wrapped VFS's version-3 system-call hooks; cap at what it has.
    v.iVersion = b->iVersion < 3 ? b->iVersion : 3;
    v.szOsFile = static_cast<int>(sizeof(BatchFile)) + b->szOsFile;
    v.mxPathname = b->mxPathname;
    v.zName = w->name.c_str();
    v.pAppData = w.get();
    v.xOpen = bOpen;
    v.xDelete = bDelete;
    v.xAccess = bAccess;
    v.xFullPathname = bFullPathname;
    v.xDlOpen = bDlOpen;
    v.xDlError = bDlError;
    v.xDlSym = bDlSym;
    v.xDlClose = bDlClose;
    v.xRandomness = bRandomness;
    v.xSleep = bSleep;
    v.xCurrentTime = bCurrentTime;
    v.xGetLastError = bGetLastError;
    v.xCurrentTimeInt64 = bCurrentTimeInt64;
    v.xSetSystemCall = bSetSystemCall;
    v.xGetSystemCall = bGetSystemCall;
    v.xNextSystemCall = bNextSystemCall;
    if (sqlite3_vfs_register(&v, 0) != SQLITE_OK) return nullptr;
    slot = std::move(w);
  }
  return slot->name.c_str();
}

}  // namespace crashsim::store_detail
