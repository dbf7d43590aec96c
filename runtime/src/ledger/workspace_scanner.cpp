// workspace_scanner.cpp — THE scanner of the workspace authority stream (b.7) and the per-fact
// rules the writer shares (b.5 step 1): workspace_scanner.h.
#include "ledger/workspace_scanner.h"

#include <algorithm>
#include <map>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"

namespace crashsim {

namespace detail {

const std::string& factWorkspace(const WorkspaceFact& fact) {
  return std::visit([](const auto& f) -> const std::string& { return f.workspaceId; }, fact);
}

int64_t factSpineEpoch(const WorkspaceFact& fact) {
  if (const auto* t = std::get_if<TransitionFact>(&fact)) return t->fromEpoch;
  if (const auto* o = std::get_if<EpochOpenedFact>(&fact)) return o->epoch;
  return std::get<CheckpointFact>(fact).epoch;
}

std::string workspaceOfInvocation(std::string_view invocationId) {
  constexpr std::string_view kPrefix = "workspace_inv_";
  if (invocationId.substr(0, kPrefix.size()) != kPrefix) return {};
  const auto rest = invocationId.substr(kPrefix.size());
  if (rest.size() < 34 || !isLowerHex(rest.substr(0, 32), 32) || rest[32] != '_') return {};
  return "wsp_" + std::string(rest.substr(0, 32));
}

std::string factSpineProblem(const RuntimeEvent& e, const WorkspaceFact& fact) {
  const PrefixIdentity spine = workspaceSpine(factWorkspace(fact), factSpineEpoch(fact));
  if (e.sessionId != kWorkspaceAuthoritySession)
    return "session " + e.sessionId + " is not " + std::string(kWorkspaceAuthoritySession);
  if (e.invocationId != spine.invocationId || e.runId != spine.runId || e.turnId != spine.turnId)
    return "spine " + e.invocationId + " is not " + spine.invocationId + " of its payload";
  if (const std::string id = workspaceFactEventId(fact); e.id != id)
    return "event id " + e.id + " is not the derived " + id;
  return {};
}

namespace {

std::string instanceProblem(const std::string& identity) {
  return identity.rfind("workspace:v1:", 0) == 0
             ? ""
             : "instance " + identity + " is not workspace:v1:<uuid>";
}

struct DerivationProblem {
  std::string operator()(const EpochOpenedFact& f) const {
    if (f.sessionId == kWorkspaceAuthoritySession) return "the authority session has no workspace";
    if (f.workspaceId != workspaceIdForSession(f.sessionId))
      return "workspaceId " + f.workspaceId + " is not derived from session " + f.sessionId;
    if (auto p = instanceProblem(f.instance.identity); !p.empty()) return p;
    if (f.instance.origin != "user" && f.instance.origin != "restored")
      return "instance origin " + f.instance.origin + " is not user or restored";
    const bool rebaseline = f.reason == "user_rebaseline";
    if (f.epoch == 1) {
      if (f.reason != "first_checkpoint" && !rebaseline)
        return "epoch 1 opens by first_checkpoint or user_rebaseline, not " + f.reason;
      if (f.instance.origin != "user") return "epoch 1 opens on the user's instance";
      if (f.transitionEventId) return "epoch 1 has no transition";
    } else {
      if (f.reason != "isolated_restore" && !rebaseline)
        return "epoch > 1 opens by isolated_restore or user_rebaseline, not " + f.reason;
      const std::string want = f.workspaceId + ":e" + std::to_string(f.epoch - 1) + ":transition";
      if (f.transitionEventId != want) return "openedBy.transitionEventId must be " + want;
      if (f.reason == "isolated_restore" && f.instance.origin != "restored")
        return "an isolated restore opens a restored instance";
    }
    if (rebaseline != f.confirmationId.has_value())
      return "confirmationId is a string iff the reason is user_rebaseline";
    if (f.confirmationId && !isPrefixedHex(*f.confirmationId, "rbc_", 32))
      return "confirmationId " + *f.confirmationId + " is not rbc_<32 hex>";
    if (!rebaseline && f.readSet != Json{{"kind", "none"}})
      return "readSet is {kind:none} unless user_rebaseline";
    if (rebaseline && f.readSet.at("kind") == "none")
      return "a rebaseline's readSet is paths or all";
    return {};
  }
  std::string operator()(const CheckpointFact& f) const {
    if (f.kind != "captured" && f.kind != "restored" && f.kind != "rebased")
      return "kind " + f.kind + " is not captured, restored or rebased";
    const std::string session = segmentSession(f.coveredBoundary);
    if (f.workspaceId != workspaceIdForSession(session))
      return "workspaceId " + f.workspaceId + " is not derived from the boundary's session " +
             session;
    if (const auto id = checkpointIdFor(f.workspaceId, f.epoch, f.kind, f.coveredBoundary);
        f.checkpointId != id)
      return "checkpointId " + f.checkpointId + " is not the derived " + id;
    if (const auto ref = checkpointRefName(f.workspaceId, f.epoch, f.checkpointId);
        f.carrier.refName != ref)
      return "refName " + f.carrier.refName + " is not the derived " + ref;
    if (auto p = instanceProblem(f.instanceIdentity); !p.empty()) return p;
    if (!isOid(f.carrier.commitOid) || !isOid(f.carrier.treeOid))
      return "commitOid and treeOid must be 40 lower-case hex digits";
    if (!isDigest(f.carrier.gitBinarySha256)) return "gitBinarySha256 is not a digest";
    // A version this runtime does not know is a newer writer's: its hash cannot be checked here,
    // and the planner parks it (checkpoint_policy_mismatch); the writer refuses to write one.
    if (f.policyVersion == 1 && f.policyHash != snapshotPolicyHash(f.limits))
      return "policy hash " + f.policyHash + " is not the hash of its version-1 limits";
    if (!isDigest(f.policyHash)) return "policy hash is not a digest";
    if (f.kind == "captured" && f.derivedFrom) return "a captured checkpoint derives from nothing";
    if (f.kind == "restored" && !f.derivedFrom) return "a restored checkpoint names its source";
    if (f.derivedFrom && !isPrefixedHex(*f.derivedFrom, "ckpt_", 32))
      return "derivedFrom " + *f.derivedFrom + " is not ckpt_<32 hex>";
    return {};
  }
  std::string operator()(const TransitionFact& f) const {
    if (f.toEpoch != f.fromEpoch + 1) return "toEpoch must be fromEpoch + 1";
    if (f.workspaceId != workspaceIdForSession(segmentSession(f.boundary)))
      return "the boundary lies outside the workspace's session";
    if (auto p = instanceProblem(f.fromInstance); !p.empty()) return p;
    if (auto p = instanceProblem(f.toInstance); !p.empty()) return p;
    if (f.reason == "isolated_restore") {
      if (f.toInstance == f.fromInstance) return "an isolated restore opens a new instance";
      if (!f.sourceCheckpointId) return "an isolated restore names the checkpoint it restored";
    } else if (f.reason == "user_rebaseline") {
      if (f.toInstance != f.fromInstance) return "a rebaseline keeps its instance";
    } else {
      return "reason " + f.reason + " is reserved or unknown";
    }
    if (f.sourceCheckpointId && !isPrefixedHex(*f.sourceCheckpointId, "ckpt_", 32))
      return "sourceCheckpointId is not ckpt_<32 hex>";
    return {};
  }
};

// A spine under construction.
struct Spine {
  std::string workspaceId;
  int64_t epoch = 0;
  std::optional<ScannedEpoch> epochState;
  bool sealed = false;
};

}  // namespace

std::string factDerivationProblem(const WorkspaceFact& fact) {
  return std::visit(DerivationProblem{}, fact);
}

const ScannedLineage* WorkspaceScan::find(std::string_view workspaceId) const {
  for (const auto& l : lineages)
    if (l.workspaceId == workspaceId) return &l;
  return nullptr;
}

namespace {

// A problem the scan reports: a j.1 code, the event, what is wrong.
struct ScanProblem {
  std::string_view code;
  std::string eventId;
  std::string detail;
};

std::string_view firstCheckpointKind(const EpochOpenedFact& o) {
  if (o.reason == "isolated_restore") return "restored";
  if (o.reason == "user_rebaseline") return "rebased";
  return "captured";
}

// Adds the event at `position` (1-based) of its invocation to `spine`; the problem that breaks
// the spine there, if any (b.7: contiguity, the fact's own rules, the epoch's shape).
std::optional<ScanProblem> addToSpine(Spine& spine, const AuthorityEvent& a, int64_t position) {
  const RuntimeEvent& e = *a.event;
  auto problem = [&](std::string_view code, std::string detail) {
    return ScanProblem{code, e.id, std::move(detail)};
  };
  if (a.eventSeq != position)
    return problem(code::workspace_spine_conflict, "event_seq " + std::to_string(a.eventSeq) +
                                                       " is not " + std::to_string(position));
  WorkspaceFact fact;
  try {
    fact = decodeWorkspaceFact(e);
  } catch (const Error& err) {
    return problem(code::workspace_fact_invalid, err.what());
  }
  if (auto p = factSpineProblem(e, fact); !p.empty())
    return problem(code::workspace_spine_conflict, p);
  spine.workspaceId = factWorkspace(fact);
  if (auto p = factDerivationProblem(fact); !p.empty())
    return problem(code::workspace_fact_invalid, p);
  if (spine.sealed)
    return problem(code::workspace_epoch_sealed, "an event after its spine's transition");
  if (auto* o = std::get_if<EpochOpenedFact>(&fact)) {
    if (position != 1)
      return problem(code::workspace_epoch_gap, "epoch_opened is not at event_seq 1");
    spine.epoch = o->epoch;
    spine.epochState = ScannedEpoch{std::move(*o), e.id, {}, std::nullopt, {}};
    return std::nullopt;
  }
  if (!spine.epochState)
    return problem(code::workspace_epoch_gap, "the spine does not open with epoch_opened");
  ScannedEpoch& ep = *spine.epochState;
  if (auto* c = std::get_if<CheckpointFact>(&fact)) {
    const std::string_view want =
        ep.checkpoints.empty() ? firstCheckpointKind(ep.opened) : "captured";
    if (c->kind != want || c->instanceIdentity != ep.opened.instance.identity)
      return problem(code::workspace_fact_invalid,
                     "checkpoint " + c->checkpointId + " (" + c->kind + ", instance " +
                         c->instanceIdentity + ") breaks its epoch's shape: want " +
                         std::string(want) + " on " + ep.opened.instance.identity);
    ep.checkpoints.push_back({std::move(*c), e.id});
    return std::nullopt;
  }
  auto& t = std::get<TransitionFact>(fact);
  if (ep.checkpoints.empty() || t.fromInstance != ep.opened.instance.identity)
    return problem(code::workspace_fact_invalid,
                   "the transition does not follow its epoch's checkpoint on its instance");
  ep.transition = std::move(t);
  ep.transitionEventId = e.id;
  spine.sealed = true;
  return std::nullopt;
}

// Epoch n (> 1) against epoch n-1, `prev`: the transition that seals prev opens ep with its
// reason and instance; its source and ep's first checkpoint's derivedFrom are prev's checkpoints;
// a restored checkpoint equals the one it restored.
std::optional<ScanProblem> epochLinkProblem(const ScannedEpoch& prev, const ScannedEpoch& ep,
                                            int64_t n) {
  if (!prev.transition || prev.transitionEventId != ep.opened.transitionEventId)
    return ScanProblem{code::workspace_epoch_gap, ep.openedEventId,
                       "epoch " + std::to_string(n) + " has no transition from epoch " +
                           std::to_string(n - 1) + " that it names"};
  const TransitionFact& t = *prev.transition;
  auto inPrev = [&](const std::optional<std::string>& id) -> const CheckpointFact* {
    if (!id) return nullptr;
    for (const auto& c : prev.checkpoints)
      if (c.fact.checkpointId == *id) return &c.fact;
    return nullptr;
  };
  const CheckpointFact& first = ep.checkpoints.front().fact;
  const CheckpointFact* source = inPrev(t.sourceCheckpointId);
  const CheckpointFact* derived = inPrev(first.derivedFrom);
  std::string bad;
  if (t.reason != ep.opened.reason || t.toInstance != ep.opened.instance.identity)
    bad = "the transition's reason or toInstance differs from the epoch it opens";
  else if (t.sourceCheckpointId && !source)
    bad = "the transition's source is no checkpoint of epoch " + std::to_string(n - 1);
  else if (first.derivedFrom && !derived)
    bad = "derivedFrom is no checkpoint of epoch " + std::to_string(n - 1);
  else if (first.kind == "restored" &&
           (derived != source || derived->carrier.commitOid != first.carrier.commitOid ||
            derived->carrier.treeOid != first.carrier.treeOid ||
            derived->policyHash != first.policyHash || derived->fileCount != first.fileCount ||
            derived->totalBytes != first.totalBytes))
    bad = "a restored checkpoint differs from the checkpoint it restored";
  if (bad.empty()) return std::nullopt;
  return ScanProblem{code::workspace_fact_invalid, ep.checkpoints.front().eventId, bad};
}

}  // namespace

WorkspaceScan scanWorkspaceFacts(std::span<const AuthorityEvent> events,
                                 const BoundaryCheck& boundaryCheck) {
  WorkspaceScan out;
  std::map<std::string, std::map<int64_t, ScannedEpoch>> byWorkspace;
  auto issue = [&](std::string_view code, const std::string& eventId, std::string detail,
                   std::string workspaceId) {
    out.issues.push_back({std::string(code), eventId, std::move(detail), std::move(workspaceId)});
  };
  // One spine = one invocation, contiguous in the input.
  for (size_t i = 0; i < events.size();) {
    size_t end = i;
    while (end < events.size() && events[end].event->invocationId == events[i].event->invocationId)
      ++end;
    Spine spine;
    spine.workspaceId = workspaceOfInvocation(events[i].event->invocationId);
    bool broken = false;
    for (size_t k = i; k < end && !broken; ++k) {
      if (auto p = addToSpine(spine, events[k], static_cast<int64_t>(k - i + 1))) {
        issue(p->code, p->eventId, std::move(p->detail), spine.workspaceId);
        broken = true;
      }
    }
    if (!broken && spine.epochState) {
      if (spine.epochState->checkpoints.empty()) {
        issue(code::workspace_fact_invalid, spine.epochState->openedEventId,
              "an epoch without its checkpoint", spine.workspaceId);
      } else {
        byWorkspace[spine.workspaceId][spine.epoch] = std::move(*spine.epochState);
      }
    }
    i = end;
  }
  std::set<std::string> checkpointIds, refNames;
  for (auto& [ws, epochs] : byWorkspace) {
    ScannedLineage lineage;
    lineage.workspaceId = ws;
    int64_t expect = 1;
    for (auto& [n, ep] : epochs) {
      if (n != expect) {
        issue(code::workspace_epoch_gap, ep.openedEventId,
              "epoch " + std::to_string(n) + " follows epoch " + std::to_string(expect - 1), ws);
        break;
      }
      ++expect;
      if (n > 1) {
        if (auto p = epochLinkProblem(lineage.epochs.back(), ep, n)) {
          issue(p->code, p->eventId, std::move(p->detail), ws);
          break;
        }
      }
      for (const auto& c : ep.checkpoints) {
        if (!checkpointIds.insert(c.fact.checkpointId).second ||
            !refNames.insert(c.fact.carrier.refName).second)
          issue(code::workspace_fact_conflict, c.eventId,
                "checkpointId or refName of " + c.fact.checkpointId + " is used twice", ws);
        if (auto p = boundaryCheck(c.fact.coveredBoundary); !p.empty())
          issue(code::workspace_boundary_mismatch, c.eventId, p, ws);
      }
      if (ep.transition) {
        if (auto p = boundaryCheck(ep.transition->boundary); !p.empty())
          issue(code::workspace_boundary_mismatch, ep.transitionEventId, p, ws);
      }
      lineage.epochs.push_back(std::move(ep));
    }
    if (!lineage.epochs.empty() && lineage.epochs.back().transition)
      issue(code::workspace_epoch_gap, lineage.epochs.back().transitionEventId,
            "a transition without the epoch it opens", ws);
    out.lineages.push_back(std::move(lineage));
  }
  return out;
}

}  // namespace detail

}  // namespace crashsim
