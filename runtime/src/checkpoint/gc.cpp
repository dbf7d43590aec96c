// gc.cpp — retention and GC of the carrier (workspace-continuity-contract.md h.1–h.3, h.5): the
// orphan refs no accepted fact names, older than the grace, deleted by CAS after a read
// transaction begun after they were listed ([P30] after the first), then `git prune
// --expire=<now − grace>` and the old quarantine entries. No fact, no SQLite write.
#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <mutex>
#include <set>

#include "checkpoint/git_cli.h"
#include "checkpoint/refs.h"
#include "crashsim/codes.h"
#include "crashsim/durable_fs.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "crashsim/workspace_gc.h"
#include "store/workspace_reads.h"

namespace crashsim {

namespace fs = std::filesystem;
using checkpoint_detail::carrierCall;

namespace {

constexpr std::string_view kCheckpointRefs = "refs/crashsim/checkpoints/";
constexpr std::string_view kGcDeleting = ".gc-deleting";

[[noreturn]] void gcFailed(std::string_view step, const std::string& message) {
  throw CarrierError(code::workspace_carrier_damaged, "gc:" + std::string(step), message);
}

// Nanoseconds since the epoch of `path`'s mtime (lstat: a symlink is judged itself); nullopt when
// it does not exist.
std::optional<int64_t> mtimeNs(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

int64_t nowNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// (a): every ref under refs/crashsim/checkpoints/ with its oid (porcelain: NUL-separated fields).
std::vector<GcRef> listCheckpointRefs(const WorkspaceCarrier& carrier) {
  const std::string out = checkpoint_detail::gitOk(
      code::workspace_carrier_damaged, "gc:for-each-ref", carrier.git(), carrier.gitHome(),
      carrierCall(carrier, {"for-each-ref", "--format=%(refname)%00%(objectname)",
                            std::string(kCheckpointRefs)}));
  std::vector<GcRef> refs;
  size_t at = 0;
  while (at < out.size()) {
    const size_t nl = out.find('\n', at);
    const std::string line = out.substr(at, nl == std::string::npos ? nl : nl - at);
    at = nl == std::string::npos ? out.size() : nl + 1;
    if (line.empty()) continue;
    const size_t nul = line.find('\0');
    if (nul == std::string::npos) gcFailed("for-each-ref", "unparsable line: " + line);
    refs.push_back({line.substr(0, nul), line.substr(nul + 1), {}});
  }
  std::sort(refs.begin(), refs.end(),
            [](const GcRef& a, const GcRef& b) { return a.refName < b.refName; });
  return refs;
}

// (b): every refName an accepted checkpoint names — stored in its fact, derived from its ids
// (b.3), or held by a projection row — read in one read transaction through THE scanner.
std::set<std::string> namedRefs(RuntimeStore& store) {
  std::lock_guard lk(store_detail::mutexOf(store));
  auto& c = store_detail::connectionOf(store);
  c.execScript("BEGIN");
  std::set<std::string> named;
  try {
    const detail::WorkspaceScan scan = store_detail::scanWorkspaceAuthority(c, {});
    if (!scan.issues.empty())
      throw Error(code::workspace_fact_corruption,
                  "gc refused: the workspace facts do not scan clean (" + scan.issues[0].code +
                      " at " + scan.issues[0].eventId + "); nothing was deleted");
    for (const detail::ScannedLineage& ln : scan.lineages)
      for (const detail::ScannedEpoch& ep : ln.epochs)
        for (const detail::ScannedCheckpoint& cp : ep.checkpoints) {
          named.insert(cp.fact.carrier.refName);
          named.insert(checkpointRefName(cp.fact.workspaceId, cp.fact.epoch, cp.fact.checkpointId));
        }
    auto st = c.prepare("SELECT ref_name FROM runtime_workspace_checkpoints");
    while (st.step()) named.insert(st.text(0));
  } catch (...) {
    c.execScript("ROLLBACK");
    throw;
  }
  c.execScript("COMMIT");
  return named;
}

// "YYYY-MM-DD HH:MM:SS +0000" for git's --expire (approxidate), from nanoseconds since the epoch.
std::string gitDate(int64_t ns) {
  // Rounded up: with grace 0 an object written in this second is expired too.
  const std::time_t t = static_cast<std::time_t>((ns + 999999999) / 1000000000);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S +0000", &tm);
  return buf;
}

// h.3: quarantine/<name>.<k> entries (not a pending quarantine's <name>.intent.json, nor an
// entry whose intent is pending) older than the grace. Intent first: renamed to
// <entry>.gc-deleting (fsync), then removed; a leftover .gc-deleting is removed at once.
void sweepQuarantine(const WorkspaceCarrier& carrier, int64_t cutoffNs, bool dryRun,
                     WorkspaceGcReport& report) {
  const fs::path q = carrier.dir() / "quarantine";
  std::error_code ec;
  if (!fs::is_directory(q, ec)) return;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(q, ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  const std::string intentSuffix = ".intent.json";
  std::set<std::string> pending;  // <name> of each pending quarantine intent
  for (const auto& n : names)
    if (n.ends_with(intentSuffix)) pending.insert(n.substr(0, n.size() - intentSuffix.size()));
  for (const auto& n : names) {
    if (n.ends_with(intentSuffix)) continue;
    const bool leftover = n.ends_with(kGcDeleting);
    if (!leftover) {
      const size_t dot = n.rfind('.');
      if (dot == std::string::npos || pending.count(n.substr(0, dot))) continue;
      const auto m = mtimeNs(q / n);
      if (!m || *m > cutoffNs) continue;
    }
    if (dryRun) {
      report.wouldDelete.push_back("quarantine/" + n);
      continue;
    }
    fs::path victim = q / n;
    if (!leftover) {
      const fs::path intent = q / (n + std::string(kGcDeleting));
      fs::rename(victim, intent);
      posixDurableFs().fsyncDir(q);
      victim = intent;
    }
    fs::remove_all(victim);
    posixDurableFs().fsyncDir(q);
    report.quarantineDeleted.push_back(n);
  }
}

// The persistent capture indexes (c.1 index/<uuid>.index, a stat cache only) name blobs that
// `git prune` does not keep (they are not git's index): a cache naming a pruned blob would make
// the next capture's write-tree — or a drift check's scratch copy — fail. They are deleted before
// the prune (a kill in between leaves no stale cache); the next capture hashes the files again.
size_t dropCaptureIndexes(const WorkspaceCarrier& carrier) {
  const fs::path dir = carrier.dir() / "index";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  std::vector<fs::path> caches;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".index") caches.push_back(e.path());
  for (const auto& p : caches) fs::remove(p);
  if (!caches.empty()) posixDurableFs().fsyncDir(dir);
  return caches.size();
}

}  // namespace

Json WorkspaceGcReport::toJson() const {
  auto refs = [](const std::vector<GcRef>& v) {
    Json a = Json::array();
    for (const GcRef& r : v) {
      Json o{{"ref", r.refName}, {"oid", r.oid}};
      if (!r.reason.empty()) o["reason"] = r.reason;
      a.push_back(std::move(o));
    }
    return a;
  };
  Json j{{"carrier", carrier}, {"dryRun", dryRun}, {"namedRefs", namedRefs}, {"kept", refs(kept)}};
  if (dryRun) {
    j["would_delete"] = wouldDelete;
  } else {
    j["deleted"] = refs(deleted);
    j["quarantineDeleted"] = quarantineDeleted;
    j["pruned"] = pruned;
    j["indexCachesDropped"] = indexCachesDropped;
  }
  return j;
}

WorkspaceGcReport collectWorkspaceGarbage(RuntimeStore& store, const GitRuntime& git,
                                          const WorkspaceGcOptions& options) {
  WorkspaceGcReport report;
  report.dryRun = options.dryRun;
  const std::optional<WorkspaceCarrier> carrier =
      WorkspaceCarrier::openExisting(options.storeDir, git);
  if (!carrier) return report;
  report.carrier = true;
  const int64_t graceNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(options.orphanGrace).count();
  // (a) the refs, their oids and their files' mtimes.
  const int64_t listedAt = nowNs();
  const int64_t cutoff = listedAt - graceNs;
  std::vector<GcRef> candidates;
  for (GcRef& r : listCheckpointRefs(*carrier)) {
    const auto m = mtimeNs(carrier->gitDir() / r.refName);
    if (!m) {
      r.reason = "not_loose";  // the carrier never packs refs (h.2): not ours to judge
      report.kept.push_back(std::move(r));
    } else if (*m > cutoff) {
      r.reason = "within_grace";
      report.kept.push_back(std::move(r));
    } else {
      candidates.push_back(std::move(r));
    }
  }
  // (b) a read transaction begun after (a): what accepted facts name is never deleted (h.1).
  const std::set<std::string> named = namedRefs(store);
  report.namedRefs = named.size();
  // `kept` reports orphans only: a named ref young or not loose was never one.
  std::erase_if(report.kept, [&](const GcRef& r) { return named.count(r.refName) > 0; });
  // Planted bug (gc_deletes_referenced_ref): GC ignores the facts and deletes every old ref.
  const bool ignoreFacts = planted("gc_deletes_referenced_ref");
  std::vector<GcRef> orphans;
  for (GcRef& r : candidates)
    if (ignoreFacts || !named.count(r.refName)) orphans.push_back(std::move(r));
  if (options.dryRun) {
    for (const GcRef& r : orphans) report.wouldDelete.push_back(r.refName);
    sweepQuarantine(*carrier, cutoff, true, report);
    return report;
  }
  // (c) each orphan by CAS on the oid read in (a); [P30] after the first deletion.
  for (GcRef& r : orphans) {
    if (!checkpoint_detail::deleteCheckpointRef(*carrier, r.refName, r.oid)) {
      r.reason = "cas_lost";
      report.kept.push_back(std::move(r));
      continue;
    }
    report.deleted.push_back(std::move(r));
    if (report.deleted.size() == 1) CRASHSIM_FAILPOINT(P30);
  }
  // h.3: the unreachable loose objects older than the grace, through the hermetic runner (c.2),
  // after the capture index caches that would name them are gone.
  report.indexCachesDropped = dropCaptureIndexes(*carrier);
  checkpoint_detail::gitOk(code::workspace_carrier_damaged, "gc:prune", git, carrier->gitHome(),
                           carrierCall(*carrier, {"prune", "--expire=" + gitDate(cutoff)}));
  report.pruned = true;
  sweepQuarantine(*carrier, cutoff, false, report);
  return report;
}

}  // namespace crashsim
