// workspace_writer.cpp — the one writer of workspace facts (workspace-continuity-contract.md
// b.5), their projections (b.6) and the rebuild from the authority stream (b.7). Every decision
// about the stream goes through ledger/workspace_scanner.h; this file adds the ledger reads
// (boundaries, the workspace's stored facts) and the SQLite rows.
#include <algorithm>
#include <map>
#include <mutex>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/workspace_facts.h"
#include "ledger/workspace_scanner.h"
#include "store/store_internal.h"
#include "store/workspace_reads.h"

namespace crashsim {

using store_detail::Connection;
using store_detail::ImmediateTx;

namespace {

[[noreturn]] void refuse(std::string_view code, const std::string& message) {
  throw Error(code, message);
}

// "" when the RC e.7 segment matches runtime_events rows 1..p of its run (b.5 step 4).
std::string boundaryProblem(Connection& c, const Json& segment) {
  const Json& id = segment.at("identity");
  const PrefixIdentity identity{
      id.at("sessionId").get<std::string>(), id.at("invocationId").get<std::string>(),
      id.at("runId").get<std::string>(), id.at("turnId").get<std::string>()};
  const int64_t p = segment.at("position").at("lastEventSeq").get<int64_t>();
  const std::string where =
      "boundary " + identity.sessionId + "/" + identity.runId + "@" + std::to_string(p);
  std::vector<StoredEvent> rows;
  try {
    rows = store_detail::readRunEvents(c, identity.sessionId, identity.runId);
  } catch (const Error& e) {
    return where + ": its rows do not read: " + e.what();
  }
  if (static_cast<int64_t>(rows.size()) < p) return where + ": the run holds fewer rows";
  std::vector<RuntimeEvent> events;
  events.reserve(static_cast<size_t>(p));
  for (int64_t i = 0; i < p; ++i) {
    const StoredEvent& r = rows[static_cast<size_t>(i)];
    if (r.eventSeq != i + 1 || r.event.invocationId != identity.invocationId ||
        r.event.turnId != identity.turnId)
      return where + ": row " + std::to_string(i + 1) + " has another identity or position";
    events.push_back(r.event);
  }
  if (events.back().id != segment.at("position").at("lastEventId").get<std::string>())
    return where + ": lastEventId is " + events.back().id;
  try {
    if (prefixDigest(identity, events) != segment.at("prefixDigest").get<std::string>())
      return where + ": the prefix digest differs from the rows'";
  } catch (const Error& e) {
    return where + ": " + e.what();
  }
  return {};
}

// The stored authority events of one workspace (every workspace when empty), decoded and
// checked by the store's readers, in (invocation_id, event_seq) order.
std::vector<StoredEvent> readAuthorityEvents(Connection& c, std::string_view workspaceId) {
  std::vector<std::string> invocations;
  {
    auto st = c.prepare(
        "SELECT DISTINCT invocation_id FROM runtime_events WHERE session_id = ?1 "
        "ORDER BY invocation_id");
    st.bind(1, kWorkspaceAuthoritySession);
    while (st.step()) {
      std::string inv = st.text(0);
      if (workspaceId.empty() || detail::workspaceOfInvocation(inv) == workspaceId)
        invocations.push_back(std::move(inv));
    }
  }
  std::vector<StoredEvent> out;
  for (const auto& inv : invocations)
    for (auto& e : store_detail::readInvocationEvents(c, inv)) out.push_back(std::move(e));
  return out;
}

detail::WorkspaceScan scan(Connection& c, std::string_view workspaceId) {
  const auto stored = readAuthorityEvents(c, workspaceId);
  std::vector<detail::AuthorityEvent> events;
  events.reserve(stored.size());
  for (const auto& s : stored) events.push_back({s.eventSeq, &s.event});
  return detail::scanWorkspaceFacts(
      events, [&c](const Json& segment) { return boundaryProblem(c, segment); });
}

std::string describe(const detail::WorkspaceIssue& i) {
  return i.code + " at " + i.eventId + ": " + i.detail;
}

// --- projection rows: one definition for the writer, the rebuild and checkIntact ---

WorkspaceEpochRow epochRow(const EpochOpenedFact& f, const std::string& eventId) {
  return WorkspaceEpochRow{f.workspaceId,
                           f.epoch,
                           f.sessionId,
                           f.instance.identity,
                           f.instance.canonicalRoot,
                           f.instance.origin,
                           f.reason,
                           stableJson(f.readSet),
                           eventId,
                           std::nullopt};
}

WorkspaceCheckpointRow checkpointRow(const CheckpointFact& f, const std::string& eventId) {
  const Json& id = f.coveredBoundary.at("identity");
  return WorkspaceCheckpointRow{f.checkpointId,
                                f.workspaceId,
                                f.epoch,
                                f.kind,
                                id.at("sessionId").get<std::string>(),
                                id.at("invocationId").get<std::string>(),
                                id.at("runId").get<std::string>(),
                                f.coveredBoundary.at("position").at("lastEventSeq").get<int64_t>(),
                                f.coveredBoundary.at("prefixDigest").get<std::string>(),
                                f.instanceIdentity,
                                f.carrier.commitOid,
                                f.carrier.treeOid,
                                f.carrier.refName,
                                f.policyVersion,
                                f.policyHash,
                                f.derivedFrom,
                                eventId};
}

WorkspaceTransitionRow transitionRow(const TransitionFact& f, const std::string& eventId) {
  return WorkspaceTransitionRow{
      f.workspaceId, f.fromEpoch,          f.toEpoch, f.reason, f.fromInstance,
      f.toInstance,  f.sourceCheckpointId, eventId};
}

struct WorkspaceRows {
  std::vector<WorkspaceEpochRow> epochs;
  std::vector<WorkspaceCheckpointRow> checkpoints;
  std::vector<WorkspaceTransitionRow> transitions;
};

WorkspaceRows rowsOf(const detail::WorkspaceScan& s) {
  WorkspaceRows out;
  for (const auto& l : s.lineages) {
    for (const auto& ep : l.epochs) {
      out.epochs.push_back(epochRow(ep.opened, ep.openedEventId));
      if (ep.transition) {
        out.epochs.back().sealedByEventId = ep.transitionEventId;
        out.transitions.push_back(transitionRow(*ep.transition, ep.transitionEventId));
      }
      for (const auto& c : ep.checkpoints)
        out.checkpoints.push_back(checkpointRow(c.fact, c.eventId));
    }
  }
  return out;
}

void insertRow(Connection& c, const WorkspaceEpochRow& r) {
  auto st = c.prepare(
      "INSERT INTO runtime_workspace_epochs (workspace_id, epoch, session_id, instance_identity, "
      "canonical_root, instance_origin, opened_reason, read_set_json, opened_event_id, "
      "sealed_by_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  st.bind(1, r.workspaceId)
      .bind(2, r.epoch)
      .bind(3, r.sessionId)
      .bind(4, r.instanceIdentity)
      .bind(5, r.canonicalRoot)
      .bind(6, r.instanceOrigin)
      .bind(7, r.openedReason)
      .bind(8, r.readSetJson)
      .bind(9, r.openedEventId)
      .bind(10, r.sealedByEventId);
  st.exec();
}

void insertRow(Connection& c, const WorkspaceCheckpointRow& r) {
  auto st = c.prepare(
      "INSERT INTO runtime_workspace_checkpoints (checkpoint_id, workspace_id, epoch, kind, "
      "covered_session_id, covered_invocation_id, covered_run_id, covered_event_seq, "
      "covered_prefix_digest, instance_identity, commit_oid, tree_oid, ref_name, policy_version, "
      "policy_hash, derived_from, accepted_event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
      "?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)");
  st.bind(1, r.checkpointId)
      .bind(2, r.workspaceId)
      .bind(3, r.epoch)
      .bind(4, r.kind)
      .bind(5, r.coveredSessionId)
      .bind(6, r.coveredInvocationId)
      .bind(7, r.coveredRunId)
      .bind(8, r.coveredEventSeq)
      .bind(9, r.coveredPrefixDigest)
      .bind(10, r.instanceIdentity)
      .bind(11, r.commitOid)
      .bind(12, r.treeOid)
      .bind(13, r.refName)
      .bind(14, r.policyVersion)
      .bind(15, r.policyHash)
      .bind(16, r.derivedFrom)
      .bind(17, r.acceptedEventId);
  st.exec();
}

void insertRow(Connection& c, const WorkspaceTransitionRow& r) {
  auto st = c.prepare(
      "INSERT INTO runtime_workspace_transitions (workspace_id, from_epoch, to_epoch, reason, "
      "from_instance, to_instance, source_checkpoint_id, event_id) VALUES (?1, ?2, ?3, ?4, ?5, "
      "?6, ?7, ?8)");
  st.bind(1, r.workspaceId)
      .bind(2, r.fromEpoch)
      .bind(3, r.toEpoch)
      .bind(4, r.reason)
      .bind(5, r.fromInstance)
      .bind(6, r.toInstance)
      .bind(7, r.sourceCheckpointId)
      .bind(8, r.eventId);
  st.exec();
  auto seal = c.prepare(
      "UPDATE runtime_workspace_epochs SET sealed_by_event_id = ?1 WHERE workspace_id = ?2 AND "
      "epoch = ?3");
  seal.bind(1, r.eventId).bind(2, r.workspaceId).bind(3, r.fromEpoch);
  seal.exec();
}

WorkspaceRows readRows(Connection& c) {
  WorkspaceRows out;
  {
    auto st = c.prepare(
        "SELECT workspace_id, epoch, session_id, instance_identity, canonical_root, "
        "instance_origin, opened_reason, read_set_json, opened_event_id, sealed_by_event_id FROM "
        "runtime_workspace_epochs ORDER BY workspace_id, epoch");
    while (st.step())
      out.epochs.push_back({st.text(0), st.int64(1), st.text(2), st.text(3), st.text(4), st.text(5),
                            st.text(6), st.text(7), st.text(8), st.optText(9)});
  }
  {
    auto st = c.prepare(
        "SELECT checkpoint_id, workspace_id, epoch, kind, covered_session_id, "
        "covered_invocation_id, covered_run_id, covered_event_seq, covered_prefix_digest, "
        "instance_identity, commit_oid, tree_oid, ref_name, policy_version, policy_hash, "
        "derived_from, accepted_event_id FROM runtime_workspace_checkpoints ORDER BY "
        "workspace_id, epoch, rowid");
    while (st.step())
      out.checkpoints.push_back({st.text(0), st.text(1), st.int64(2), st.text(3), st.text(4),
                                 st.text(5), st.text(6), st.int64(7), st.text(8), st.text(9),
                                 st.text(10), st.text(11), st.text(12), st.int64(13), st.text(14),
                                 st.optText(15), st.text(16)});
  }
  {
    auto st = c.prepare(
        "SELECT workspace_id, from_epoch, to_epoch, reason, from_instance, to_instance, "
        "source_checkpoint_id, event_id FROM runtime_workspace_transitions ORDER BY "
        "workspace_id, from_epoch");
    while (st.step())
      out.transitions.push_back({st.text(0), st.int64(1), st.int64(2), st.text(3), st.text(4),
                                 st.text(5), st.optText(6), st.text(7)});
  }
  return out;
}

template <class Row>
std::string firstDifference(const char* table, const std::vector<Row>& online,
                            const std::vector<Row>& rebuilt, std::string (*name)(const Row&)) {
  for (size_t i = 0; i < std::max(online.size(), rebuilt.size()); ++i) {
    if (i >= online.size())
      return std::string(table) + " lacks " + name(rebuilt[i]) + ", which the facts imply";
    if (i >= rebuilt.size() || !(online[i] == rebuilt[i]))
      return std::string(table) + " row " + name(online[i]) + " differs from the facts";
  }
  return {};
}

// --- the writer's shape (b.5 table) ---

enum class Shape { open, append, transition };

struct Batch {
  Shape shape = Shape::append;
  std::vector<WorkspaceFact> facts;  // parallel to the events
  const EpochOpenedFact* opened = nullptr;
  const CheckpointFact* checkpoint = nullptr;
  const TransitionFact* transition = nullptr;
};

// b.5 step 1: every event decodes, its ids and spine are derived, the events form a shape.
Batch decodeBatch(const std::vector<RuntimeEvent>& events) {
  Batch b;
  for (const auto& e : events) {
    b.facts.push_back(decodeWorkspaceFact(e));  // throws workspace_fact_invalid
    const WorkspaceFact& f = b.facts.back();
    for (const std::string& p : {detail::factSpineProblem(e, f), detail::factDerivationProblem(f)})
      if (!p.empty()) refuse(code::workspace_fact_invalid, "workspace fact " + e.id + ": " + p);
  }
  auto at = [&](size_t i) -> const WorkspaceFact& { return b.facts[i]; };
  const size_t n = b.facts.size();
  if (n == 1 && std::holds_alternative<CheckpointFact>(at(0))) {
    b.shape = Shape::append;
    b.checkpoint = &std::get<CheckpointFact>(at(0));
  } else if (n == 2 && std::holds_alternative<EpochOpenedFact>(at(0)) &&
             std::holds_alternative<CheckpointFact>(at(1))) {
    b.shape = Shape::open;
    b.opened = &std::get<EpochOpenedFact>(at(0));
    b.checkpoint = &std::get<CheckpointFact>(at(1));
  } else if (n == 3 && std::holds_alternative<TransitionFact>(at(0)) &&
             std::holds_alternative<EpochOpenedFact>(at(1)) &&
             std::holds_alternative<CheckpointFact>(at(2))) {
    b.shape = Shape::transition;
    b.transition = &std::get<TransitionFact>(at(0));
    b.opened = &std::get<EpochOpenedFact>(at(1));
    b.checkpoint = &std::get<CheckpointFact>(at(2));
  } else {
    refuse(code::workspace_fact_invalid,
           "workspace facts form no shape (open, append or transition): " + std::to_string(n) +
               " events");
  }
  const CheckpointFact& c = *b.checkpoint;
  std::string bad;
  if (c.policyVersion != 1)
    bad = "policy version " + std::to_string(c.policyVersion) + " is unknown";
  for (const auto& f : b.facts)
    if (detail::factWorkspace(f) != c.workspaceId) bad = "the events name two workspaces";
  switch (b.shape) {
    case Shape::append:
      if (c.kind != "captured") bad = "an append carries a captured checkpoint";
      break;
    case Shape::open:
      if (b.opened->epoch != 1 || c.epoch != 1)
        bad = "an open is epoch 1";
      else if (c.kind != (b.opened->reason == "user_rebaseline" ? "rebased" : "captured"))
        bad = "an open's checkpoint kind does not match its reason";
      break;
    case Shape::transition: {
      const TransitionFact& t = *b.transition;
      const std::string_view kind = t.reason == "isolated_restore" ? "restored" : "rebased";
      if (b.opened->epoch != t.toEpoch || c.epoch != t.toEpoch)
        bad = "the transition opens another epoch than its epoch_opened";
      else if (b.opened->reason != t.reason || c.kind != kind)
        bad = "the reason, epoch_opened and checkpoint kind disagree";
      else if (b.opened->transitionEventId != workspaceFactEventId(t))
        bad = "epoch_opened does not name its transition";
      else if (b.opened->instance.identity != t.toInstance)
        bad = "epoch_opened's instance is not the transition's toInstance";
      else if (t.reason == "isolated_restore" && c.derivedFrom != t.sourceCheckpointId)
        bad = "a restored checkpoint derives from the checkpoint restored";
      break;
    }
  }
  if (b.opened && b.opened->instance.identity != c.instanceIdentity)
    bad = "epoch_opened's instance is not the checkpoint's";
  if (!bad.empty()) refuse(code::workspace_fact_invalid, "workspace facts: " + bad);
  return b;
}

std::optional<std::string> storedPayload(Connection& c, const std::string& eventId) {
  auto st = c.prepare("SELECT payload_json FROM runtime_events WHERE event_id = ?1");
  st.bind(1, eventId);
  if (!st.step()) return std::nullopt;
  return st.text(0);
}

}  // namespace

namespace store_detail {

// b.5 step 7: no non-terminal run header, no claim whose target lacks a terminal fact.
void requireQuiescent(Connection& c, const std::string& sessionId) {
  {
    auto st = c.prepare(
        "SELECT run_id FROM agent_runs WHERE session_id = ?1 AND status NOT IN ('completed', "
        "'failed', 'cancelled') LIMIT 1");
    st.bind(1, sessionId);
    if (st.step())
      refuse(code::workspace_transition_busy,
             "session " + sessionId + " is busy: run " + st.text(0) + " is not terminal");
  }
  auto st = c.prepare(
      "SELECT claim_id FROM runtime_continuation_claims c WHERE c.target_session_id = ?1 AND "
      "NOT EXISTS (SELECT 1 FROM runtime_events e WHERE e.session_id = c.target_session_id AND "
      "e.run_id = c.target_run_id AND e.is_terminal = 1) LIMIT 1");
  st.bind(1, sessionId);
  if (st.step())
    refuse(code::workspace_transition_busy,
           "session " + sessionId + " is busy: claim " + st.text(0) + " has no terminal target");
}

std::string workspaceProjectionDifference(Connection& c) {
  const auto s = scan(c, {});
  if (!s.issues.empty()) return {};
  const WorkspaceRows want = rowsOf(s);
  const WorkspaceRows have = readRows(c);
  if (auto d = firstDifference<WorkspaceEpochRow>(
          "runtime_workspace_epochs", have.epochs, want.epochs,
          [](const WorkspaceEpochRow& r) { return r.workspaceId + "@" + std::to_string(r.epoch); });
      !d.empty())
    return d;
  if (auto d = firstDifference<WorkspaceCheckpointRow>(
          "runtime_workspace_checkpoints", have.checkpoints, want.checkpoints,
          [](const WorkspaceCheckpointRow& r) { return r.checkpointId; });
      !d.empty())
    return d;
  return firstDifference<WorkspaceTransitionRow>(
      "runtime_workspace_transitions", have.transitions, want.transitions,
      [](const WorkspaceTransitionRow& r) {
        return r.workspaceId + "@" + std::to_string(r.fromEpoch);
      });
}

}  // namespace store_detail

WorkspaceCommitResult commitWorkspaceFacts(RuntimeStore& store,
                                           const std::vector<RuntimeEvent>& events) {
  std::lock_guard lk(store_detail::mutexOf(store));
  Connection& c = store_detail::connectionOf(store);
  const Batch b = decodeBatch(events);  // step 1
  const std::string& ws = b.checkpoint->workspaceId;
  WorkspaceCommitResult result;
  for (const auto& e : events) result.eventIds.push_back(e.id);

  ImmediateTx tx(c);
  // Step 2: the workspace's stored facts scan clean.
  const auto existing = scan(c, ws);
  if (!existing.issues.empty())
    refuse(code::workspace_fact_corruption,
           "the workspace facts of " + ws + " do not scan clean: " + describe(existing.issues[0]));
  // Step 3: exact retry.
  std::vector<std::optional<std::string>> stored;
  bool allStored = true;
  for (const auto& e : events) {
    stored.push_back(storedPayload(c, e.id));
    allStored = allStored && stored.back() == store_detail::canonicalPayload(e);
  }
  if (allStored) return result;
  // Step 4: each boundary against the ledger.
  for (const auto& f : b.facts) {
    const Json* segment = nullptr;
    if (const auto* cp = std::get_if<CheckpointFact>(&f)) segment = &cp->coveredBoundary;
    if (const auto* t = std::get_if<TransitionFact>(&f)) segment = &t->boundary;
    if (segment != nullptr)
      if (auto p = boundaryProblem(c, *segment); !p.empty())
        refuse(code::workspace_boundary_mismatch, "workspace fact " + ws + ": " + p);
  }
  // Step 5: the epoch rules.
  const detail::ScannedLineage* lineage = existing.find(ws);
  const detail::ScannedEpoch* current =
      lineage && !lineage->epochs.empty() ? &lineage->epochs.back() : nullptr;
  const int64_t currentEpoch = current ? current->opened.epoch : 0;
  switch (b.shape) {
    case Shape::open:
      if (current)
        refuse(code::workspace_epoch_conflict,
               "workspace " + ws + " already has epoch " + std::to_string(currentEpoch));
      break;
    case Shape::append:
      if (lineage)
        for (const auto& ep : lineage->epochs)
          if (ep.opened.epoch == b.checkpoint->epoch && ep.transition)
            refuse(code::workspace_epoch_sealed, "epoch " + std::to_string(ep.opened.epoch) +
                                                     " of " + ws + " is sealed by its transition");
      if (b.checkpoint->epoch != currentEpoch)
        refuse(code::workspace_epoch_conflict,
               "an append into epoch " + std::to_string(b.checkpoint->epoch) + " of " + ws +
                   ", whose current epoch is " + std::to_string(currentEpoch));
      break;
    case Shape::transition:
      if (b.transition->fromEpoch != currentEpoch)
        refuse(code::workspace_epoch_conflict,
               "a transition from epoch " + std::to_string(b.transition->fromEpoch) + " of " + ws +
                   ", whose current epoch is " + std::to_string(currentEpoch));
      break;
  }
  // Step 6: instances.
  {
    std::string bad;
    const std::string currentInstance = current ? current->opened.instance.identity : "";
    if (b.shape == Shape::append && b.checkpoint->instanceIdentity != currentInstance)
      bad = "an append on another instance than its epoch's";
    if (b.shape == Shape::transition) {
      const TransitionFact& t = *b.transition;
      if (t.fromInstance != currentInstance) bad = "fromInstance is not the current instance";
      if (t.reason == "user_rebaseline" && b.checkpoint->instanceIdentity != currentInstance)
        bad = "a rebaseline keeps the epoch's instance";
      if (t.reason == "isolated_restore") {
        for (const auto& ep : lineage->epochs)
          if (ep.opened.instance.identity == t.toInstance)
            bad = "toInstance " + t.toInstance + " is already epoch " +
                  std::to_string(ep.opened.epoch) + "'s";
        if (b.opened->instance.origin != "restored")
          bad = "a restored instance has origin restored";
        const CheckpointFact* source = nullptr;
        for (const auto& cp : current->checkpoints)
          if (b.checkpoint->derivedFrom == cp.fact.checkpointId) source = &cp.fact;
        if (!source || source->carrier.commitOid != b.checkpoint->carrier.commitOid ||
            source->carrier.treeOid != b.checkpoint->carrier.treeOid ||
            source->policyHash != b.checkpoint->policyHash ||
            source->fileCount != b.checkpoint->fileCount ||
            source->totalBytes != b.checkpoint->totalBytes)
          bad = "the restored checkpoint is not the one of epoch " + std::to_string(currentEpoch) +
                " it restores";
      }
    }
    if (!bad.empty()) refuse(code::workspace_fact_invalid, "workspace facts of " + ws + ": " + bad);
  }
  // Step 7: quiescence.
  const std::string sessionId =
      b.checkpoint->coveredBoundary.at("identity").at("sessionId").get<std::string>();
  if (b.shape == Shape::transition || (b.shape == Shape::open && b.checkpoint->kind == "rebased"))
    store_detail::requireQuiescent(c, sessionId);
  // Step 8: ids and refNames held by other facts.
  for (size_t i = 0; i < events.size(); ++i)
    if (stored[i] && *stored[i] != store_detail::canonicalPayload(events[i]))
      refuse(code::workspace_fact_conflict,
             "workspace fact " + events[i].id + " is stored with other bytes");
  {
    auto st = c.prepare(
        "SELECT checkpoint_id FROM runtime_workspace_checkpoints WHERE ref_name = ?1 AND "
        "checkpoint_id <> ?2");
    st.bind(1, b.checkpoint->carrier.refName).bind(2, b.checkpoint->checkpointId);
    if (st.step())
      refuse(code::workspace_fact_conflict,
             "ref " + b.checkpoint->carrier.refName + " is held by checkpoint " + st.text(0));
  }
  const double now = store_detail::nowMs();
  for (size_t i = 0; i < events.size(); ++i) {
    if (stored[i]) continue;
    store_detail::insertEvent(tx, events[i], store_detail::Writer::workspace, now);
    const WorkspaceFact& f = b.facts[i];
    if (const auto* o = std::get_if<EpochOpenedFact>(&f)) insertRow(c, epochRow(*o, events[i].id));
    if (const auto* cp = std::get_if<CheckpointFact>(&f))
      insertRow(c, checkpointRow(*cp, events[i].id));
    if (const auto* t = std::get_if<TransitionFact>(&f))
      insertRow(c, transitionRow(*t, events[i].id));
  }
  if (b.checkpoint->kind == "rebased") {
    CRASHSIM_FAILPOINT(P27);  // a rebaseline's transition (or open) transaction (g.2 B5)
  } else if (b.shape != Shape::transition) {
    CRASHSIM_FAILPOINT(P21);
  }
  // Isolated restore (f.2 R4): [P25] inside the transition transaction, before COMMIT.
  if (b.shape == Shape::transition && b.transition->reason == "isolated_restore")
    CRASHSIM_FAILPOINT(P25);
  tx.commit();
  result.created = true;
  return result;
}

size_t rebuildWorkspaceProjections(RuntimeStore& store) {
  std::lock_guard lk(store_detail::mutexOf(store));
  Connection& c = store_detail::connectionOf(store);
  ImmediateTx tx(c);
  const auto s = scan(c, {});
  if (!s.issues.empty())
    refuse(code::workspace_fact_corruption,
           "the workspace facts do not scan clean: " + describe(s.issues[0]));
  const WorkspaceRows rows = rowsOf(s);
  c.execScript(
      "DELETE FROM runtime_workspace_transitions; DELETE FROM runtime_workspace_checkpoints; "
      "DELETE FROM runtime_workspace_epochs;");
  for (auto r : rows.epochs) {
    r.sealedByEventId.reset();  // set by the transition row below, as online
    insertRow(c, r);
  }
  for (const auto& r : rows.checkpoints) insertRow(c, r);
  for (const auto& r : rows.transitions) insertRow(c, r);
  tx.commit();
  return rows.checkpoints.size();
}

std::vector<WorkspaceEpochRow> listWorkspaceEpochs(const RuntimeStore& store) {
  auto& s = const_cast<RuntimeStore&>(store);
  std::lock_guard lk(store_detail::mutexOf(s));
  return readRows(store_detail::connectionOf(s)).epochs;
}
std::vector<WorkspaceCheckpointRow> listWorkspaceCheckpoints(const RuntimeStore& store) {
  auto& s = const_cast<RuntimeStore&>(store);
  std::lock_guard lk(store_detail::mutexOf(s));
  return readRows(store_detail::connectionOf(s)).checkpoints;
}
std::vector<WorkspaceTransitionRow> listWorkspaceTransitions(const RuntimeStore& store) {
  auto& s = const_cast<RuntimeStore&>(store);
  std::lock_guard lk(store_detail::mutexOf(s));
  return readRows(store_detail::connectionOf(s)).transitions;
}

std::string store_detail::workspaceTransitionBusy(Connection& c, const std::string& sessionId) {
  try {
    requireQuiescent(c, sessionId);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

detail::WorkspaceScan store_detail::scanWorkspaceAuthority(Connection& c,
                                                           std::string_view workspaceId) {
  return scan(c, workspaceId);
}

std::string scanWorkspaceLineage(const RuntimeStore& store, std::string_view workspaceId) {
  auto& s = const_cast<RuntimeStore&>(store);
  std::lock_guard lk(store_detail::mutexOf(s));
  const auto result = scan(store_detail::connectionOf(s), workspaceId);
  return result.issues.empty() ? std::string() : describe(result.issues[0]);
}

}  // namespace crashsim
