// WH7: an isolated restore's durable state and the continuation in it (wh7_restore.h).
#include "verdicts/wh7_restore.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "crashsim/continuation.h"
#include "crashsim/store.h"
#include "crashsim/workspace.h"
#include "crashsim/workspace_facts.h"
#include "verdicts/system_git.h"

namespace crashsim::harness::wh7 {
namespace fs = std::filesystem;

namespace {

using verdict_detail::carrierGit;
using verdict_detail::shellQuote;

std::string fileBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// What b.3 and the store's epoch 1 name (C, the instance, its reason, R and its ref); the facts
// after the restore.
struct Restore {
  std::string problem;  // non-empty: the expectation itself cannot be derived
  fs::path carrier, instance;
  std::string name, lockReason, workspaceId, sourceInstance, restoredId, restoredRef;
  WorkspaceCheckpointRow c;
  std::vector<WorkspaceEpochRow> epochs;
  std::vector<WorkspaceCheckpointRow> checkpoints;
  std::vector<WorkspaceTransitionRow> transitions;
  std::vector<RunHeader> runs;
  std::string scan;
};

Restore derive(const fs::path& store, int checkpointsBefore) {
  Restore r;
  try {
    StoreOptions ro;
    ro.readOnly = true;
    auto st = RuntimeStore::open(store, ro);
    r.epochs = listWorkspaceEpochs(*st);
    r.checkpoints = listWorkspaceCheckpoints(*st);
    r.transitions = listWorkspaceTransitions(*st);
    r.runs = st->listRuns();
    r.scan = scanWorkspaceLineage(*st);
    // The source run: the scenario's fresh run (no continuation source).
    const RunHeader* source = nullptr;
    for (const RunHeader& h : r.runs)
      if (!h.continuationSource) source = &h;
    if (!source) {
      r.problem = "the store holds no fresh run";
      return r;
    }
    r.sourceInstance = source->workspaceIdentity.value_or("");
    r.workspaceId = workspaceIdForSession(source->sessionId);
    int inEpoch1 = 0;
    for (const auto& c : r.checkpoints)
      if (c.epoch == 1 && c.workspaceId == r.workspaceId) {
        ++inEpoch1;
        if (c.coveredEventSeq >= r.c.coveredEventSeq) r.c = c;
      }
    if (inEpoch1 != checkpointsBefore) {
      r.problem = fmt::format("epoch 1 holds {} checkpoint(s), expected {} (table W6)", inEpoch1,
                              checkpointsBefore);
      return r;
    }
    const ImmutablePrefix sn = readImmutablePrefix(
        *st,
        PrefixIdentity{source->sessionId, source->invocationId, source->runId, source->turnId});
    r.restoredId = checkpointIdFor(r.workspaceId, 2, "restored", sn.segmentJson());
    r.restoredRef = checkpointRefName(r.workspaceId, 2, r.restoredId);
  } catch (const std::exception& e) {
    r.problem = std::string("the store cannot be read: ") + e.what();
    return r;
  }
  const fs::path canonical = fs::weakly_canonical(fs::absolute(store));
  r.carrier = canonical / "workspace" / "carrier.git";
  r.name = r.workspaceId.substr(4) + "-e2";
  r.instance = canonical / "workspace" / "instances" / r.name;
  r.lockReason = "crashsim checkpoint " + r.c.checkpointId + " epoch 2";
  return r;
}

// The instance's registration: detached at C's commit, locked with the reason.
std::string registrationProblem(const Restore& r) {
  const auto list = carrierGit(r.carrier, "worktree list --porcelain");
  const std::string head = "worktree " + r.instance.string() + "\n";
  const auto at = list.second.find(head);
  if (!list.first || at == std::string::npos)
    return r.instance.string() + " is not registered in the carrier";
  const auto end = list.second.find("\n\n", at);
  const std::string rec = list.second.substr(at, end == std::string::npos ? end : end - at) + "\n";
  if (rec.find("\nHEAD " + r.c.commitOid + "\n") == std::string::npos ||
      rec.find("\ndetached\n") == std::string::npos)
    return "the instance is not registered detached at C's commit " + r.c.commitOid;
  if (rec.find("\nlocked " + r.lockReason + "\n") == std::string::npos)
    return "the instance is not locked with the reason '" + r.lockReason + "'";
  return "";
}

std::string refAt(const Restore& r, const std::string& ref) {
  const auto got = carrierGit(r.carrier, "rev-parse --verify -q " + shellQuote(ref));
  return got.first ? got.second : std::string();
}

// Table R row R5: the transition, epoch 2 and R, the marker = toInstance.
std::string committedProblem(const Restore& r) {
  if (r.transitions.size() != 1 || r.epochs.size() != 2)
    return fmt::format("{} transition(s) and {} epoch(s), expected 1 and 2", r.transitions.size(),
                       r.epochs.size());
  const auto& t = r.transitions[0];
  if (t.fromEpoch != 1 || t.toEpoch != 2 || t.reason != "isolated_restore" ||
      t.sourceCheckpointId != r.c.checkpointId || t.fromInstance != r.sourceInstance)
    return fmt::format(
        "the transition is {}→{} {} from {} (source {}), expected 1→2 "
        "isolated_restore from {} (source {})",
        t.fromEpoch, t.toEpoch, t.reason, t.fromInstance, t.sourceCheckpointId.value_or("none"),
        r.sourceInstance, r.c.checkpointId);
  const auto& e = r.epochs[1];
  if (e.instanceOrigin != "restored" || e.canonicalRoot != r.instance.string() ||
      e.instanceIdentity != t.toInstance)
    return "epoch 2 is " + e.instanceOrigin + " at " + e.canonicalRoot + ", expected restored at " +
           r.instance.string();
  const WorkspaceCheckpointRow* restored = nullptr;
  for (const auto& c : r.checkpoints)
    if (c.checkpointId == r.restoredId) restored = &c;
  if (!restored) return "no restored checkpoint " + r.restoredId + " (b.3 over Sn)";
  if (restored->kind != "restored" || restored->epoch != 2 ||
      restored->commitOid != r.c.commitOid || restored->treeOid != r.c.treeOid ||
      restored->derivedFrom != r.c.checkpointId || restored->refName != r.restoredRef ||
      restored->instanceIdentity != t.toInstance)
    return "checkpoint " + r.restoredId + " is not C restored into epoch 2 at the instance";
  if (refAt(r, r.restoredRef) != r.c.commitOid)
    return "R's ref " + r.restoredRef + " does not name C's commit (a fact before its ref)";
  std::optional<WorkspaceIdentity> marked;
  try {
    marked = readWorkspaceIdentity(r.instance);
  } catch (const std::exception& ex) {
    return std::string("the instance's marker does not read: ") + ex.what();
  }
  if (!marked || marked->identity != t.toInstance)
    return "the instance's marker is not the transition's toInstance " + t.toInstance;
  return "";
}

}  // namespace

std::string restoreKillProblem(const fs::path& store, CrashPoint fp, int checkpointsBefore) {
  const Restore r = derive(store, checkpointsBefore);
  if (!r.problem.empty()) return r.problem;
  if (!r.scan.empty()) return "the workspace facts do not scan clean: " + r.scan;
  if (auto bad = registrationProblem(r); !bad.empty()) return "after " + fp.str() + ": " + bad;
  if (fp == points::P26) {
    if (auto bad = committedProblem(r); !bad.empty()) return "after P26: " + bad;
    return "";
  }
  if (!r.transitions.empty() || r.epochs.size() != 1)
    return fmt::format(
        "after {}: {} transition(s), {} epoch(s): nothing commits before P25's "
        "COMMIT",
        fp.str(), r.transitions.size(), r.epochs.size());
  std::error_code ec;
  const bool marker = fs::exists(r.instance / ".maka-workspace.json", ec);
  const std::string ref = refAt(r, r.restoredRef);
  if (fp == points::P23 && (marker || !ref.empty()))
    return "after P23: the marker or ref R exists before R3";
  if (fp != points::P23 && (!marker || ref != r.c.commitOid))
    return "after " + fp.str() + ": the marker or ref R at C's commit is missing (R3)";
  return "";
}

std::string restoredContinuationProblem(const fs::path& store, const crashsim::Scenario& sc,
                                        int checkpointsBefore) {
  const Restore r = derive(store, checkpointsBefore);
  if (!r.problem.empty()) return r.problem;
  if (!r.scan.empty()) return "the workspace facts do not scan clean: " + r.scan;
  if (auto bad = registrationProblem(r); !bad.empty()) return bad;
  if (auto bad = committedProblem(r); !bad.empty()) return bad;
  if (refAt(r, r.c.refName) != r.c.commitOid)
    return "C's ref " + r.c.refName + " changed (the source is untouched)";
  // f.3: the only instance left is the one a fact names; no intent pending.
  const fs::path ws = r.instance.parent_path().parent_path();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(ws / "instances", ec))
    if (e.path() != r.instance)
      return "instances/" + e.path().filename().string() + " is residue left unquarantined";
  for (const auto& e : fs::directory_iterator(ws / "quarantine", ec))
    if (e.path().filename().string().ends_with(".intent.json"))
      return "quarantine intent " + e.path().filename().string() + " left pending";
  // The instance holds C's tree: the tracked files as the scenario's expect.files.
  if (sc.git)
    for (const std::string& rel : sc.git->tracked)
      if (auto it = sc.expect.files.find(rel);
          it != sc.expect.files.end() && fileBytes(r.instance / rel) != it->second)
        return "the instance's " + rel + " is not C's (the scenario's expect.files)";
  // One continuation, completed, bound to (epoch 2, R), in the restored instance.
  const std::string iPrime = r.transitions[0].toInstance;
  int bound = 0;
  for (const RunHeader& h : r.runs) {
    if (!h.continuationSource) continue;
    if (!h.workspaceBoundary) return "continuation " + h.runId + " carries no workspaceBoundary";
    const Json& b = *h.workspaceBoundary;
    if (b.value("epoch", 0) != 2 || b.value("checkpointId", "") != r.restoredId ||
        h.workspaceIdentity != iPrime)
      return fmt::format("continuation {} is bound to {} in {}, expected epoch 2 / {} in {}",
                         h.runId, b.dump(), h.workspaceIdentity.value_or("-"), r.restoredId,
                         iPrime);
    if (h.status != "completed") return "continuation " + h.runId + " is " + h.status;
    ++bound;
  }
  if (bound != 1) return fmt::format("{} continuation run(s), expected 1", bound);
  return "";
}

}  // namespace crashsim::harness::wh7
