// crashsim/powerloss.h — power-loss simulation for the instrumented child: a fault-injecting
// SQLite VFS ("crashsim-powerloss") and a file model for workspace side effects, both backed by
// one in-process model of what the disk has made durable.
//
// FAULT MODEL (what a verdict under --mode powerloss does and does not prove)
//
//   Data. Every write/truncate is performed on the real file at once (so reads, mmap, other
//   processes and SQLite's own readers see it, like the OS page cache). The model records it as
//   PENDING for that file (an inode: content follows renames) and keeps the file's DURABLE
//   image: its content at the last fsync. An fsync (SQLite xSync, fsyncFile) makes all of that
//   file's pending writes durable. A file that already exists when the model first touches it is
//   assumed durable as it is.
//
//   Names. Creating, removing or renaming a file changes the directory entry at once on disk,
//   but the model keeps the DURABLE name table (path -> file) as of the last directory fsync of
//   the path's directory. fsyncDir(dir) makes every name in dir durable. SQLite's unix VFS
//   fsyncs the directory on the first xSync of a journal or WAL file it opened with
//   SQLITE_OPEN_CREATE, and xDelete(dirSync=1) syncs the directory after the unlink; the VFS
//   models both. A main database file the VFS created becomes durable at its first xSync (the
//   VFS then fsyncs its directory, as a careful store would), unless Config::strictDirSync,
//   where only an explicit fsyncDir makes it durable. A rename across directories is durable per
//   directory (both may have to be synced). Directories themselves are not modelled (creating a
//   directory is durable at once).
//
//   Crash. At the crash the child materialises ONE crash state, chosen by a seed:
//     drop_all     every pending write is lost;
//     keep_prefix  a seeded prefix (length uniform in 0..n) of the pending writes, in global issue
//                  order across all files, is kept, the rest is lost;
//     keep_subset  each pending write is kept or lost independently (seeded coin);
//     tear_last    all pending writes but the last are kept; the last (if a write) is torn at a
//                  sector boundary: its sector-aligned pieces [0,c) are kept, piece c is lost —
//                  or, on Device::none (and on safe_append for a write that is not an append),
//                  may be garbage — and pieces after c are lost (c uniform in 0..pieces-1, so
//                  something is always torn). Device::atomic_sector never leaves garbage and
//                  never tears inside a sector; Device::safe_append never leaves garbage in an
//                  append (a write starting at or after the file's end). A torn truncate is lost.
//   Names at the crash (since #44). Every name change not made durable by a directory fsync
//   (create, unlink, rename) is PENDING; the same crash kind decides which of them persist,
//   drawn after the data choices (so a seed keeps the data fates it had before):
//     drop_all     none persists: files created since are removed, removed files reappear with
//                  their durable content, renames are reverted (the only behaviour before #44);
//     keep_prefix  a seeded prefix of the pending name changes, in issue order, persists;
//     keep_subset  each persists on a seeded coin, except that a name change persists only if
//                  every earlier pending change of one of its names persisted;
//     tear_last    every name change persists.
//   A persisted name names its inode, whose bytes follow that inode's own data fate: a rename
//   persisted over a file whose writes were not synced publishes lost or torn bytes (ALICE's
//   "rename before data" state, e.g. ext4 delayed allocation, xfs, btrfs), and a persisted create
//   over lost data leaves an empty file. Why this model: POSIX makes a name durable only after an
//   fsync of its directory and orders nothing before it; ALICE (Pillai et al., OSDI '14) found
//   file systems (ext4 writeback and delayed allocation, xfs, btrfs) on which a rename reaches
//   the disk before the data it names, and LazyFS likewise drops unsynced data at its simulated
//   crash. Journaling file systems (ext4, xfs) commit directory operations in order: keep_prefix
//   is that file system. keep_subset is one that orders only the changes of one name (a create
//   before the rename of that name, an unlink before a later create of it), so a rename
//   never persists without the create of the file it moves. A name change persisting never
//   depends on a data write persisting, in either direction. A rename across directories that
//   persists changes only the names in directories not synced since (as before).
//   The result is written to disk (fsynced), then the process is SIGKILLed. Garbage bytes are
//   chosen to differ from both the old and the new byte. A write that extends past the end of the
//   file leaves zeros in any gap; the file size after a crash is the size implied by the kept
//   operations (no zero-extended tails from lost appends).
//
//   Not simulated: a pulled plug (real controller caches, firmware reordering beyond the above,
//   metadata journaling modes of a real file system); bit rot or damage to synced sectors; lost
//   writes of other processes or of files this process did not open through the VFS / file model;
//   garbage outside the byte range of the torn write (the VFS reports
//   SQLITE_IOCAP_POWERSAFE_OVERWRITE); SQLite temp files and the -shm file (not durable by
//   design). Size hints/chunk extensions SQLite performs through xFileControl are not recorded.
//
// The production runtime never calls this API; only the instrumented agent links
// crashsim_powerloss. Errors are crashsim::Error with code powerloss_config_invalid or
// powerloss_io_failed (crashsim/codes.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace crashsim::powerloss {

// Name under which the VFS is registered (and made the default VFS while active).
inline constexpr std::string_view kVfsName = "crashsim-powerloss";

// Simulated device characteristics (reported through xDeviceCharacteristics):
//   none           -> POWERSAFE_OVERWRITE only; a torn sector may hold garbage
//   atomic_sector  -> ATOMIC512 / ATOMIC4K by sector size; sectors are all-or-nothing
//   safe_append    -> SAFE_APPEND; an append never leaves garbage
enum class Device : uint8_t { none, atomic_sector, safe_append };
// Names: "none", "atomic", "safe_append".
std::string_view deviceName(Device d);
std::optional<Device> parseDevice(std::string_view s);

enum class CrashKind : uint8_t { drop_all, keep_prefix, keep_subset, tear_last };
// Names: "drop_all", "keep_prefix", "keep_subset", "tear_last".
std::string_view crashKindName(CrashKind k);
std::optional<CrashKind> parseCrashKind(std::string_view s);
// The kind a seed selects when none is given: seed % 4 in the order above.
CrashKind kindForSeed(uint64_t seed);

struct Config {
  Device device = Device::none;
  int sectorSize = 512;           // 512 or 4096 (xSectorSize)
  bool strictDirSync = false;     // main db creation durable only after fsyncDir
  uint64_t seed = 0;              // crash state used by crashNow()
  std::optional<CrashKind> kind;  // nullopt: kindForSeed(seed)
  std::filesystem::path logPath;  // crashNow() writes the crash description here
};

// Resets the model, enables it and registers the VFS as the default SQLite VFS. Throws
// Error(powerloss_config_invalid) for a sector size other than 512/4096.
void activate(const Config& config);
// Forgets the model, unregisters the VFS (the previous default VFS is default again) and clears
// the crash hook if it is crashNow. Close every connection opened through the VFS first.
void deactivate();
// Whether the model is active (activate / installFromEnvironment succeeded).
bool active();

// Child start-up. Reads CRASHSIM_POWERLOSS (must be "1" to activate; unset/other = inactive,
// nothing registered, returns false), CRASHSIM_POWERLOSS_SEED (decimal uint64, default 0),
// CRASHSIM_POWERLOSS_DEVICE (atomic|safe_append|none, default none),
// CRASHSIM_POWERLOSS_LOG (path of the crash description), and optionally
// CRASHSIM_POWERLOSS_KIND (a CrashKind name, default kindForSeed(seed)),
// CRASHSIM_POWERLOSS_SECTOR (512|4096) and CRASHSIM_POWERLOSS_STRICT_DIRSYNC (0|1).
// Activates, registers crashNow as the failpoint trigger's power-loss crash hook
// (crashsim::failpoints::setPowerlossCrashHook) and returns true. Call it before the first
// SQLite open. A malformed value throws Error(powerloss_config_invalid).
bool installFromEnvironment();

// --- File model: the one API tools use for durable file effects, in both modes. ---------------
// Inactive: each call performs the real POSIX operation directly (open/write/fsync/rename/unlink,
// fsync of the directory). Active: the same real operation, recorded in the model as above.
// I/O failures throw Error(powerloss_io_failed) naming the path and errno text.
struct WriteOptions {
  unsigned mode = 0644;    // permission bits for a created file
  bool exclusive = false;  // O_EXCL: fail (return false) if the path exists
};
// Creates or truncates `path` and writes `bytes` (pending until fsyncFile; a new name is pending
// until fsyncDir). Returns false only when exclusive and the path exists (nothing changed).
bool writeFile(const std::filesystem::path& path, std::string_view bytes, WriteOptions opts = {});
// Appends `bytes` to `path` (created if absent); pending until fsyncFile.
void appendFile(const std::filesystem::path& path, std::string_view bytes);
// fsync(2) of the file: its pending writes become durable (its name does not).
void fsyncFile(const std::filesystem::path& path);
// rename(2): pending until the directories of both names are fsynced.
void rename(const std::filesystem::path& from, const std::filesystem::path& to);
// unlink(2): pending until the directory is fsynced.
void removeFile(const std::filesystem::path& path);
// fsync(2) of a directory: every name in it becomes durable.
void fsyncDir(const std::filesystem::path& dir);

// --- Crash ------------------------------------------------------------------------------------
// Writes the crash state `kind` chosen by `seed` (std::mt19937_64, draws documented in
// powerloss_fs.cpp; the same seed and the same pending history give the same state) to disk,
// fsyncs it, and returns its description:
//   {"seed","kind","device","sectorSize","pendingWrites",
//    "writes":[{"seq","file","op":"write"|"truncate","offset","length",
//               "fate":"kept"|"lost"|"garbage","torn"?:true}],   // a torn write: several pieces
//    "namespace":[{"op":"create"|"delete"|"rename","file","to"?,"fate":"persisted"|"undone"}],
//    "files":[{"file","state":"written"|"removed","size"?}]}
// "seq" is the write's index among the pending writes in issue order; for a truncate "offset" is
// the new size and "length" 0. Afterwards the model is reset (what is on disk is the durable
// state). Inactive: returns {"active":false} and changes nothing.
nlohmann::json materialiseCrashState(uint64_t seed, CrashKind kind);
nlohmann::json materialiseCrashState(uint64_t seed);  // kind = kindForSeed(seed)

// What a crash now could lose (for the D1 check and reports):
//   {"active","pendingWrites","pendingBytes",
//    "files":[{"file","pendingWrites","pendingBytes","nameDurable"}],   // only files at risk
//    "namespace":[{"op","file","to"?}]}
nlohmann::json pendingSummary();

// The power-loss crash: if active, materialises Config::seed/kind, writes the description (plus
// "pendingBefore": pendingSummary()) as one JSON line to Config::logPath (if set), fsyncs it, and
// never lets another VFS or file-model write through; then raise(SIGKILL). Inactive: SIGKILL.
[[noreturn]] void crashNow();

}  // namespace crashsim::powerloss
