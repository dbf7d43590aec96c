// powerloss_vfs.cpp — the "crashsim-powerloss" SQLite VFS: a shim over the default (unix) VFS
// that reports every write, truncate, sync, create and delete of the main database, rollback
// journal, super-journal and WAL files to the durability model (powerloss_model.h). Data reaches
// the real file at once; the model keeps what is durable. Temp files, sub-journals and the -shm
// file pass through untouched (they are not durable by design).
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstring>

#include "powerloss_model.h"

namespace crashsim::powerloss::detail {
namespace {

struct PlFile {
  sqlite3_file base;
  sqlite3_file* real;   // the wrapped file, allocated right after this struct
  uint64_t generation;  // model generation at open
  uint64_t inode;       // 0: untracked
};
static_assert(sizeof(PlFile) % 8 == 0);

sqlite3_vfs* g_real = nullptr;
sqlite3_vfs g_vfs{};
bool g_registered = false;
std::mutex g_registerMu;

PlFile* pl(sqlite3_file* f) { return reinterpret_cast<PlFile*>(f); }
sqlite3_file* real(sqlite3_file* f) { return pl(f)->real; }

uint64_t liveInode(const State& s, const PlFile* p) {
  return (s.active && p->inode != 0 && p->generation == s.generation) ? p->inode : 0;
}

int plClose(sqlite3_file* f) {
  sqlite3_file* r = real(f);
  return r->pMethods != nullptr ? r->pMethods->xClose(r) : SQLITE_OK;
}

int plRead(sqlite3_file* f, void* buf, int amt, sqlite3_int64 off) {
  return real(f)->pMethods->xRead(real(f), buf, amt, off);
}

int plWrite(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 off) {
  State& s = state();
  std::lock_guard lk(s.mu);
  int rc = real(f)->pMethods->xWrite(real(f), buf, amt, off);
  if (rc == SQLITE_OK) {
    if (uint64_t id = liveInode(s, pl(f))) {
      recordWriteLocked(s, id, static_cast<uint64_t>(off), buf, static_cast<size_t>(amt));
    }
  }
  return rc;
}

int plTruncate(sqlite3_file* f, sqlite3_int64 size) {
  State& s = state();
  std::lock_guard lk(s.mu);
  int rc = real(f)->pMethods->xTruncate(real(f), size);
  if (rc == SQLITE_OK) {
    if (uint64_t id = liveInode(s, pl(f))) recordTruncateLocked(s, id, static_cast<uint64_t>(size));
  }
  return rc;
}

int plSync(sqlite3_file* f, int flags) {
  State& s = state();
  std::lock_guard lk(s.mu);
  int rc = real(f)->pMethods->xSync(real(f), flags);
  if (rc != SQLITE_OK) return rc;
  if (uint64_t id = liveInode(s, pl(f))) {
    syncInodeLocked(s, id);
    Inode& in = s.inodes.at(id);
    if (in.dirSyncOnFirstSync) {
      // What the unix VFS does for a new journal/WAL (and what we assume a store does for a new
      // database): fsync the directory once, after the first fsync of the file.
      const std::string dir = parentOf(in.path);
      try {
        realFsyncDir(dir);
      } catch (...) {
        return SQLITE_IOERR_DIR_FSYNC;
      }
      in.dirSyncOnFirstSync = false;
      syncDirLocked(s, dir);
    }
  }
  return SQLITE_OK;
}

int plFileSize(sqlite3_file* f, sqlite3_int64* size) {
  return real(f)->pMethods->xFileSize(real(f), size);
}
int plLock(sqlite3_file* f, int lock) { return real(f)->pMethods->xLock(real(f), lock); }
int plUnlock(sqlite3_file* f, int lock) { return real(f)->pMethods->xUnlock(real(f), lock); }
int plCheckReservedLock(sqlite3_file* f, int* out) {
  return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int plFileControl(sqlite3_file* f, int op, void* arg) {
  return real(f)->pMethods->xFileControl(real(f), op, arg);
}

int plSectorSize(sqlite3_file*) {
  State& s = state();
  std::lock_guard lk(s.mu);
  return s.cfg.sectorSize;
}

int plDeviceCharacteristics(sqlite3_file*) {
  State& s = state();
  std::lock_guard lk(s.mu);
  int flags = SQLITE_IOCAP_POWERSAFE_OVERWRITE;
  switch (s.cfg.device) {
    case Device::none:
      break;
    case Device::atomic_sector:
      flags |= s.cfg.sectorSize == 4096 ? SQLITE_IOCAP_ATOMIC4K : SQLITE_IOCAP_ATOMIC512;
      break;
    case Device::safe_append:
      flags |= SQLITE_IOCAP_SAFE_APPEND;
      break;
  }
  return flags;
}

int plShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** pp) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 2) return SQLITE_IOERR_SHMMAP;
  return r->pMethods->xShmMap(r, region, size, extend, pp);
}
int plShmLock(sqlite3_file* f, int offset, int n, int flags) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 2) return SQLITE_IOERR_SHMLOCK;
  return r->pMethods->xShmLock(r, offset, n, flags);
}
void plShmBarrier(sqlite3_file* f) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion >= 2) r->pMethods->xShmBarrier(r);
}
int plShmUnmap(sqlite3_file* f, int deleteFlag) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 2) return SQLITE_OK;
  return r->pMethods->xShmUnmap(r, deleteFlag);
}
int plFetch(sqlite3_file* f, sqlite3_int64 off, int amt, void** pp) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 3) {
    *pp = nullptr;
    return SQLITE_OK;
  }
  return r->pMethods->xFetch(r, off, amt, pp);
}
int plUnfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  sqlite3_file* r = real(f);
  if (r->pMethods->iVersion < 3) return SQLITE_OK;
  return r->pMethods->xUnfetch(r, off, p);
}

const sqlite3_io_methods kMethods = {
    3,
    plClose,
    plRead,
    plWrite,
    plTruncate,
    plSync,
    plFileSize,
    plLock,
    plUnlock,
    plCheckReservedLock,
    plFileControl,
    plSectorSize,
    plDeviceCharacteristics,
    plShmMap,
    plShmLock,
    plShmBarrier,
    plShmUnmap,
    plFetch,
    plUnfetch,
};

bool modelledType(int flags) {
  const int type = flags & 0x0FFFFF00;
  return type == SQLITE_OPEN_MAIN_DB || type == SQLITE_OPEN_MAIN_JOURNAL ||
         type == SQLITE_OPEN_WAL || type == SQLITE_OPEN_SUPER_JOURNAL;
}

bool exists(const std::string& key) {
  struct stat st {};
  return ::stat(key.c_str(), &st) == 0;
}

int plOpen(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* outFlags) {
  PlFile* p = pl(f);
  p->base.pMethods = nullptr;
  p->real = reinterpret_cast<sqlite3_file*>(p + 1);
  p->real->pMethods = nullptr;
  p->generation = 0;
  p->inode = 0;
  if (name == nullptr || !modelledType(flags)) {
    int rc = g_real->xOpen(g_real, name, p->real, flags, outFlags);
    if (p->real->pMethods != nullptr) p->base.pMethods = &kMethods;
    return rc;
  }
  State& s = state();
  std::lock_guard lk(s.mu);
  const std::string key = normalise(name);
  const bool existed = exists(key);
  try {
    if (s.active) trackLocked(s, key);  // snapshot a pre-existing file before it changes
  } catch (...) {
    return SQLITE_IOERR_READ;
  }
  int rc = g_real->xOpen(g_real, name, p->real, flags, outFlags);
  if (p->real->pMethods != nullptr) p->base.pMethods = &kMethods;
  if (rc != SQLITE_OK || !s.active) return rc;
  const uint64_t id = createLocked(s, key);
  p->inode = id;
  p->generation = s.generation;
  const int type = flags & 0x0FFFFF00;
  const bool create = (flags & SQLITE_OPEN_CREATE) != 0;
  Inode& in = s.inodes.at(id);
  if (create && type != SQLITE_OPEN_MAIN_DB) in.dirSyncOnFirstSync = true;  // as unixOpen does
  if (create && !existed && type == SQLITE_OPEN_MAIN_DB && !s.cfg.strictDirSync) {
    in.dirSyncOnFirstSync = true;
  }
  return SQLITE_OK;
}

int plDelete(sqlite3_vfs*, const char* name, int dirSync) {
  State& s = state();
  std::lock_guard lk(s.mu);
  const std::string key = normalise(name);
  try {
    if (s.active) trackLocked(s, key);  // keep the durable content of what is unlinked
  } catch (...) {
    return SQLITE_IOERR_DELETE;
  }
  int rc = g_real->xDelete(g_real, name, dirSync);
  if (rc != SQLITE_OK || !s.active) return rc;
  removeLocked(s, key);
  if (dirSync) syncDirLocked(s, parentOf(key));  // the unix VFS fsynced the directory
  return rc;
}

int plAccess(sqlite3_vfs*, const char* name, int flags, int* out) {
  return g_real->xAccess(g_real, name, flags, out);
}
int plFullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_real->xFullPathname(g_real, name, n, out);
}
void* plDlOpen(sqlite3_vfs*, const char* name) { return g_real->xDlOpen(g_real, name); }
void plDlError(sqlite3_vfs*, int n, char* msg) { g_real->xDlError(g_real, n, msg); }
void (*plDlSym(sqlite3_vfs*, void* h, const char* sym))(void) {
  return g_real->xDlSym(g_real, h, sym);
}
void plDlClose(sqlite3_vfs*, void* h) { g_real->xDlClose(g_real, h); }
int plRandomness(sqlite3_vfs*, int n, char* out) { return g_real->xRandomness(g_real, n, out); }
int plSleep(sqlite3_vfs*, int us) { return g_real->xSleep(g_real, us); }
int plCurrentTime(sqlite3_vfs*, double* t) { return g_real->xCurrentTime(g_real, t); }
int plGetLastError(sqlite3_vfs*, int n, char* msg) {
  return g_real->xGetLastError != nullptr ? g_real->xGetLastError(g_real, n, msg) : 0;
}
int plCurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* t) {
  return g_real->xCurrentTimeInt64(g_real, t);
}
int plSetSystemCall(sqlite3_vfs*, const char* name, sqlite3_syscall_ptr p) {
  return g_real->xSetSystemCall(g_real, name, p);
}
sqlite3_syscall_ptr plGetSystemCall(sqlite3_vfs*, const char* name) {
  return g_real->xGetSystemCall(g_real, name);
}
const char* plNextSystemCall(sqlite3_vfs*, const char* name) {
  return g_real->xNextSystemCall(g_real, name);
}

}  // namespace

void registerVfs() {
  std::lock_guard lk(g_registerMu);
  if (!g_registered) {
    if (g_real == nullptr) {
      sqlite3_vfs* def = sqlite3_vfs_find(nullptr);
      g_real = (def != nullptr && std::strcmp(def->zName, kVfsName.data()) != 0)
                   ? def
                   : sqlite3_vfs_find("unix");
    }
    g_vfs.iVersion = g_real->iVersion < 3 ? g_real->iVersion : 3;
    g_vfs.szOsFile = static_cast<int>(sizeof(PlFile)) + g_real->szOsFile;
    g_vfs.mxPathname = g_real->mxPathname;
    g_vfs.zName = kVfsName.data();
    g_vfs.pAppData = nullptr;
    g_vfs.xOpen = plOpen;
    g_vfs.xDelete = plDelete;
    g_vfs.xAccess = plAccess;
    g_vfs.xFullPathname = plFullPathname;
    g_vfs.xDlOpen = plDlOpen;
    g_vfs.xDlError = plDlError;
    g_vfs.xDlSym = plDlSym;
    g_vfs.xDlClose = plDlClose;
    g_vfs.xRandomness = plRandomness;
    g_vfs.xSleep = plSleep;
    g_vfs.xCurrentTime = plCurrentTime;
    g_vfs.xGetLastError = plGetLastError;
    g_vfs.xCurrentTimeInt64 = plCurrentTimeInt64;
    g_vfs.xSetSystemCall = plSetSystemCall;
    g_vfs.xGetSystemCall = plGetSystemCall;
    g_vfs.xNextSystemCall = plNextSystemCall;
    g_registered = true;
  }
  sqlite3_vfs_register(&g_vfs, 1);  // (re)registering makes it the default
}

void unregisterVfs() {
  std::lock_guard lk(g_registerMu);
  if (!g_registered) return;
  sqlite3_vfs_unregister(&g_vfs);
  g_registered = false;
}

}  // namespace crashsim::powerloss::detail
