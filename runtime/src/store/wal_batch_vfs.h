// wal_batch_vfs.h — the store's WAL write-batching SQLite VFS.
//
// SQLite appends a WAL frame as two write calls (24-byte header, then the page), so a commit
// that dirties n pages costs 2n pwrite(2) calls before its one fsync. The store's tool commits
// (T1, T2, recovery bundles) touch about a dozen B-tree pages each (runtime_events and its
// four indexes, tool_journal_events, tool_operations, sqlite_sequence), so on a virtual
// machine the write calls cost as much as the page transfer. This shim keeps a WAL file's
// contiguous appends in memory and hands them to the wrapped VFS as one write.
//
// Contract (what makes the batching invisible to SQLite, to other connections and to crashes):
//  * Only files opened as SQLITE_OPEN_WAL are batched; the database, journals and -shm pass
//    through untouched.
//  * Buffered bytes reach the wrapped VFS, in order and before the operation proceeds, on the
//    WAL file's xSync, xRead, xTruncate, xFileSize, xFileControl and xClose, and on every
//    xShmBarrier / xShmLock / xShmUnmap of any file of this VFS in the process. SQLite
//    publishes a commit (the wal-index header) only after xSync (synchronous=FULL) or behind an
//    xShmBarrier (NORMAL), so no reader in any process can see a frame that is still buffered.
//  * A process killed with frames still buffered loses only frames of a transaction that was
//    not yet published: exactly what a kill before those write calls would leave. The
//    durability point is unchanged: the wrapped VFS sees the same bytes at the same offsets
//    before the same xSync (so the power-loss model below it sees them too).
//  * Used only on connections with synchronous=FULL or EXTRA: every commit syncs the WAL before
//    it publishes, so a batch that fails to reach the wrapped VFS fails that commit, as the
//    unbatched write would have. A failed hand-over is sticky on its file (every later
//    operation on that WAL fails), so no later sync can publish over lost frames.
#pragma once

#include <string>

namespace crashsim::store_detail {

// Name of the batching VFS layered over the VFS named `base` (empty: the process's default VFS
// now, e.g. the power-loss VFS while a study is active). One batching VFS per wrapped VFS,
// registered on first use (thread-safe; never unregistered, never made the default). Returns
// nullptr when `base` names no registered VFS.
const char* walBatchVfsName(const std::string& base);

}  // namespace crashsim::store_detail
