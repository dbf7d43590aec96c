// crashsim/workspace_gc.h — retention and GC of the store-owned carrier
// (workspace-continuity-contract.md h).
//
// Retention (h.1): a ref or commit an accepted checkpoint fact names (any epoch, stored or derived
// refName), an instance an epoch_opened fact names and the carrier itself are never deleted. GC
// collects only what no accepted fact names: orphan refs under refs/crashsim/checkpoints/ (a
// capture or restore killed between its ref and its fact, tables W4/W5 and R3/R4), the
// unreachable loose objects (W1–W3, W6′) and old quarantine entries (f.3).
//
// GC writes no fact and touches nothing else: not the user's repository, not SQLite, no
// registration or directory a fact names. Each step is idempotent, so a kill (P30, or the git
// barrier G during the prune) leaves a subset done and changes no reopen decision; the next GC
// finishes (h.5). The caller holds the host lock (crashsim/host.h HostLock): GC never runs beside
// a capture or a restore.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/store.h"
#include "crashsim/workspace_carrier.h"

namespace crashsim {

struct WorkspaceGcOptions {
  std::filesystem::path storeDir;
  // h.2 orphanGraceMs: an orphan ref (by its file's mtime) and a quarantine entry (by its mtime)
  // younger than this are kept; the prune expires loose objects older than now − grace.
  std::chrono::milliseconds orphanGrace{std::chrono::hours(24)};
  // h.5: list `would_delete` and write nothing (no ref, object, quarantine entry or SQLite byte).
  bool dryRun = false;
};

// One orphan ref GC looked at (h.2).
struct GcRef {
  std::string refName;
  std::string oid;     // the oid read in step (a), the CAS's expected value
  std::string reason;  // kept: "within_grace" | "cas_lost" | "not_loose"; deleted: ""
};

struct WorkspaceGcReport {
  bool carrier = false;  // false: the store has no carrier, nothing to do
  bool dryRun = false;
  size_t namedRefs = 0;                        // refs accepted facts name (h.1, never deleted)
  std::vector<GcRef> deleted;                  // orphan refs deleted (update-ref -d CAS)
  std::vector<GcRef> kept;                     // orphan refs kept, with the reason
  std::vector<std::string> wouldDelete;        // dry run: orphan refs and quarantine entries
  std::vector<std::string> quarantineDeleted;  // quarantine/ entries deleted (h.3)
  bool pruned = false;                         // `git prune --expire` ran (h.3)
  size_t indexCachesDropped = 0;               // index/<uuid>.index caches deleted first
  Json toJson() const;
};

// h.2–h.3 in order, under the caller's host lock:
//  (a) every ref under refs/crashsim/checkpoints/ with its oid and its loose file's mtime; a ref
//      younger than the grace (or not loose) is kept;
//  (b) one read transaction begun after (a): THE scanner over every workspace's facts (b.7);
//      a ref that an accepted checkpoint names by its stored or derived refName, or a projection
//      row names, is never deleted; facts that do not scan clean → workspace_fact_corruption,
//      nothing deleted;
//  (c) each remaining orphan, in refName order: `update-ref -d <ref> <oid of (a)>` (a lost CAS
//      keeps it), the ref's directory fsynced; [P30] after the first deletion;
//  then the capture index caches (c.1 index/*.index: they name blobs git prune does not keep)
//  deleted, `git prune --expire=<now − grace>` through the hermetic runner (c.2; barrier G at its
//  spawn) and quarantine/ entries older than the grace deleted, intent first (renamed to
//  `<entry>.gc-deleting`, then removed; a leftover `.gc-deleting` is removed first).
// A dry run does (a) and (b) and lists the refs and quarantine entries it would delete; it opens
// the carrier read-only (WorkspaceCarrier::openExisting) and writes nothing. Without a carrier
// the report is empty. A failing git step → workspace_carrier_damaged (detail gc:<step>).
WorkspaceGcReport collectWorkspaceGarbage(RuntimeStore& store, const GitRuntime& git,
                                          const WorkspaceGcOptions& options);

}  // namespace crashsim
