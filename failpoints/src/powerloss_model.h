// powerloss_model.h — internal: the durability model shared by the VFS (powerloss_vfs.cpp) and
// the file model / crash materialisation (powerloss_fs.cpp). See crashsim/powerloss.h for the
// fault model. Every function here requires State::mu held.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "crashsim/powerloss.h"

namespace crashsim::powerloss::detail {

// One file (content identity; follows renames).
struct Inode {
  std::string durable;  // content as of the last fsync
  std::string path;     // last known name (for descriptions and directory syncs)
  bool dirSyncOnFirstSync = false;
};

// One pending (unsynced) data operation, in global issue order.
struct PendingOp {
  uint64_t inode = 0;
  bool truncate = false;
  uint64_t offset = 0;  // write offset, or the new size for a truncate
  std::string bytes;    // written bytes (empty for a truncate)
  std::string path;     // the file's name when issued
};

// One name change not yet made durable; `dirs` are the directories still to be fsynced. `sets`
// are the directory entries it changes (name -> inode it names afterwards, 0 = absent): a
// create {file -> new}, a delete {file -> 0}, a rename {file -> 0, to -> the renamed inode}. A
// crash that persists the op applies the entries whose directory is still in `dirs`.
struct NsOp {
  std::string op;  // create | delete | rename
  std::string file;
  std::string to;
  std::set<std::string> dirs;
  std::vector<std::pair<std::string, uint64_t>> sets;
};

// Which pending name changes a crash of `kind` persists, in issue order (powerloss.h FAULT MODEL
// "Names at the crash"): drop_all none; keep_prefix a prefix (one draw, r % (m + 1)); keep_subset
// a coin per op (r & 1) in issue order, an op persisting only if every earlier pending op on one
// of its names persisted; tear_last all. Draws continue `rng` after the data draws.
std::vector<bool> namespaceFates(const std::vector<NsOp>& ops, CrashKind kind,
                                 std::mt19937_64& rng);

struct State {
  std::mutex mu;
  bool active = false;
  Config cfg;
  uint64_t generation = 1;  // bumped on every reset; VFS handles from older generations are inert
  uint64_t nextInode = 1;
  std::map<uint64_t, Inode> inodes;
  std::map<std::string, uint64_t> current;  // path -> inode now (0 = absent)
  std::map<std::string, uint64_t> durable;  // path -> inode after the last dir sync (0 = absent)
  std::vector<PendingOp> pending;
  std::vector<NsOp> nsOps;
};

State& state();

// Absolute, symlink-resolved (where it exists), lexically normal key for a path.
std::string normalise(const std::string& path);
std::string parentOf(const std::string& key);

void resetLocked(State& s);
// Ensures `key` is tracked: an existing regular file becomes a durable inode with its current
// content; a missing path is tracked as durably absent. Returns the current inode (0 = absent).
uint64_t trackLocked(State& s, const std::string& key);
// The path now names a file: returns its inode, creating one (and a pending "create") if absent.
uint64_t createLocked(State& s, const std::string& key);
void recordWriteLocked(State& s, uint64_t inode, uint64_t offset, const void* data, size_t n);
void recordTruncateLocked(State& s, uint64_t inode, uint64_t size);
// fsync of a file: its pending operations become durable.
void syncInodeLocked(State& s, uint64_t inode);
// fsync of a directory: every tracked name in it becomes durable.
void syncDirLocked(State& s, const std::string& dirKey);
void removeLocked(State& s, const std::string& key);
void renameLocked(State& s, const std::string& fromKey, const std::string& toKey);

// Real directory fsync (throws Error(powerloss_io_failed)).
void realFsyncDir(const std::string& dir);

// VFS registration (powerloss_vfs.cpp).
void registerVfs();
void unregisterVfs();

}  // namespace crashsim::powerloss::detail
