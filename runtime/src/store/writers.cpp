// writers.cpp — the dedicated writers (spec a.5, f.3–f.6): generic append, the terminal writer
// (commitTurnFinalize), T1 commitToolPrepared, T2 commitToolOutcome and the atomic recovery
// bundle.
#include <mutex>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "crashsim/store.h"
#include "crashsim/workspace_facts.h"
#include "ledger/ledger_scanner.h"
#include "store/store_internal.h"

namespace crashsim {

using store_detail::Candidate;
using store_detail::Connection;
using store_detail::ImmediateTx;
using store_detail::Writer;

namespace {

void rejectReservedForGeneric(const RuntimeEvent& e) {
  if (e.toolDispatch ||
      (e.contentKind == ContentKind::function_response && e.refOperationId.has_value())) {
    throw Error(code::reserved_tool_boundary_fact,
                "Durable tool facts require the atomic tool boundary writer");
  }
  if (e.toolRecovery) {
    throw Error(code::reserved_recovery_fact,
                "Tool recovery facts require the atomic recovery bundle writer");
  }
  if (e.hasContinuationStart) {
    throw Error(code::reserved_continuation_fact,
                "Continuation start facts require the continuation authority writer");
  }
  if (e.hasWorkspaceFact || e.sessionId == kWorkspaceAuthoritySession) {
    throw Error(code::reserved_workspace_fact,
                "Workspace facts and the authority session require commitWorkspaceFacts");
  }
}

std::optional<ToolOperationRow> loadOperation(Connection& c, const std::string& operationId) {
  auto st = c.prepare(
      "SELECT operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, tool_name, "
      "canonical_args_hash, recovery_mode, current_state, call_event_id, dispatch_event_id, "
      "result_event_id, version FROM tool_operations WHERE operation_id = ?1");
  st.bindRef(1, operationId);
  if (!st.step()) return std::nullopt;
  return store_detail::operationFromRow(st);
}

int changes(Connection& c) { return sqlite3_changes(c.db()); }

std::string recoveryMetadata(const RuntimeEvent& e) {
  return stableJson(e.json.at("actions").at("toolRecovery"));
}

WriteResult appendImpl(Connection& c, const RuntimeEvent& event) {
  rejectReservedForGeneric(event);
  ImmediateTx tx(c);
  if (event.partial) {
    // Partial events are mutable UI state (j.5): only the snapshot table, never the ledger.
    store_detail::checkRunNotSealed(c, event.sessionId, event.runId);
    auto st = c.prepare(
        "SELECT session_id, run_id, turn_id FROM runtime_events WHERE invocation_id = ?1 LIMIT 1");
    st.bind(1, event.invocationId);
    if (st.step() && (st.textView(0) != event.sessionId || st.textView(1) != event.runId ||
                      st.textView(2) != event.turnId)) {
      throw Error(code::runtime_identity_conflict,
                  "RuntimeEvent invocation identity conflict for " + event.invocationId);
    }
    const std::string payload = store_detail::canonicalPayload(event);
    auto up = c.prepare(
        "INSERT INTO runtime_partial_snapshots (stream_key, session_id, invocation_id, run_id, "
        "turn_id, after_event_id, payload_json, text_content, updated_at) VALUES (?1, ?2, ?3, "
        "?4, ?5, NULL, ?6, NULL, ?7) ON CONFLICT (stream_key) DO UPDATE SET payload_json = "
        "excluded.payload_json, updated_at = excluded.updated_at");
    up.bind(1, event.id)
        .bind(2, event.sessionId)
        .bind(3, event.invocationId)
        .bind(4, event.runId)
        .bind(5, event.turnId)
        .bind(6, payload)
        .bind(7, store_detail::nowMs());
    up.exec();
    tx.commit();
    return {true, 0};
  }
  auto r = store_detail::insertEvent(tx, event, Writer::generic, store_detail::nowMs());
  tx.commit();
  return {r.created, r.eventSeq};
}

}  // namespace

WriteResult RuntimeStore::append(const RuntimeEvent& event) {
  std::lock_guard lk(store_detail::mutexOf(*this));
  return appendImpl(store_detail::connectionOf(*this), event);
}

WriteResult RuntimeStore::commitTerminalEvent(const RuntimeEvent& event) {
  TurnFinalizeBatch batch;
  batch.terminal = event;
  return commitTurnFinalize(batch);
}

// ---------------------------------------------------------------------------------------
// T1 (f.4)

namespace {
// T1 is the dispatch fence: the implementation runs only after T1 is durable, so a power cut
// can never lose the dispatch of a tool that already ran (which recovery would then run
// again). On a connection opened with a weaker synchronous setting (NORMAL, for the power-loss
// study) T1 alone is committed with synchronous=FULL: WAL frames synced before COMMIT returns.
class DurableCommitScope {
 public:
  explicit DurableCommitScope(Connection& c) : c_(c) {
    auto st = c_.prepare("PRAGMA synchronous");
    if (st.step() && st.int64(0) < 2) {
      previous_ = st.int64(0);
      c_.execScript("PRAGMA synchronous = FULL");
    }
  }
  ~DurableCommitScope() {
    if (previous_ < 0) return;
    try {
      c_.execScript("PRAGMA synchronous = " + std::to_string(previous_));
    } catch (...) {  // the connection stays FULL: stronger, never weaker
    }
  }
  DurableCommitScope(const DurableCommitScope&) = delete;
  DurableCommitScope& operator=(const DurableCommitScope&) = delete;

 private:
  Connection& c_;
  int64_t previous_ = -1;
};
}  // namespace

WriteResult RuntimeStore::commitToolPrepared(const ToolPrepared& in) {
  std::lock_guard lk(store_detail::mutexOf(*this));
  Connection& c = store_detail::connectionOf(*this);
  const RuntimeEvent& call = in.call;
  const RuntimeEvent& dispatch = in.dispatch;
  if (in.journalEventId != in.operationId + "_prepared") {
    throw Error(code::t1_invalid, "T1 journal identity must be derived from the tool operation");
  }
  if (call.toolRecovery || dispatch.toolRecovery) {
    throw Error(code::t1_invalid, "T1 events must not carry tool recovery facts");
  }
  if (call.contentKind != ContentKind::function_call || call.lane != Lane::function_call ||
      call.partial || call.callId != in.providerToolCallId || call.toolName != in.toolName) {
    throw Error(code::t1_invalid, "T1 requires a matching function_call RuntimeEvent");
  }
  if (!call.callArgsHash || *call.callArgsHash != in.canonicalArgsHash) {
    throw Error(code::t1_invalid, "T1 argument hash does not match its canonical function call");
  }
  const auto& d = dispatch.toolDispatch;
  if (!d || dispatch.contentKind != ContentKind::none || dispatch.partial ||
      dispatch.lane != Lane::tool_dispatch || d->protocol != code::t1_after_preflight_v1 ||
      d->operationId != in.operationId || d->providerToolCallId != in.providerToolCallId ||
      d->toolName != in.toolName || d->canonicalArgsHash != in.canonicalArgsHash ||
      d->recoveryMode != in.recoveryMode || dispatch.refOperationId != in.operationId ||
      dispatch.refToolCallId != in.providerToolCallId) {
    throw Error(code::t1_invalid, "T1 requires a matching tool-dispatch RuntimeEvent");
  }
  if (!store_detail::sameExecutionIdentity(call, dispatch)) {
    throw Error(code::t1_invalid, "T1 call and dispatch must share one execution identity");
  }

  DurableCommitScope fence(c);
  ImmediateTx tx(c);
  auto cands = store_detail::checkCandidates(tx, Writer::t1, {&call, &dispatch});
  if (auto op = loadOperation(c, in.operationId)) {
    if (op->invocationId != call.invocationId || op->runId != call.runId ||
        op->turnId != call.turnId || op->providerToolCallId != in.providerToolCallId ||
        op->toolName != in.toolName || op->canonicalArgsHash != in.canonicalArgsHash ||
        op->recoveryMode != in.recoveryMode || op->callEventId != call.id ||
        op->dispatchEventId != dispatch.id || !cands[0].exists || !cands[1].exists) {
      throw Error(code::tool_operation_identity_conflict,
                  "Tool operation identity conflict for " + in.operationId);
    }
    return {false, cands[1].existingSeq};
  }
  if (cands[1].exists) {
    throw Error(code::tool_operation_identity_conflict,
                "Tool operation identity conflict for " + in.operationId +
                    ": dispatch is stored without its operation");
  }
  store_detail::insertChecked(tx, cands[0], in.committedAt);
  const int64_t seq = store_detail::insertChecked(tx, cands[1], in.committedAt);
  ToolOperationRow op;
  op.operationId = in.operationId;
  op.invocationId = call.invocationId;
  op.runId = call.runId;
  op.turnId = call.turnId;
  op.canonicalArgsHash = in.canonicalArgsHash;
  op.recoveryMode = in.recoveryMode;
  store_detail::insertJournal(c, in.journalEventId, op, code::prepared, dispatch.id, std::nullopt,
                              in.committedAt);
  op.providerToolCallId = in.providerToolCallId;
  op.toolName = in.toolName;
  op.currentState = code::prepared;
  op.callEventId = call.id;
  op.dispatchEventId = dispatch.id;
  op.version = 1;
  store_detail::insertOperationRow(c, op);
  tx.commit();
  return {true, seq};
}

// ---------------------------------------------------------------------------------------
// T2 (f.5)

namespace {
void checkT2Input(const std::string& operationId, const std::string& journalEventId,
                  const RuntimeEvent& r) {
  if (journalEventId != operationId + "_outcome") {
    throw Error(code::t2_invalid, "T2 journal identity must be derived from the tool operation");
  }
  if (r.toolRecovery) throw Error(code::t2_invalid, "T2 outcome must not carry a recovery fact");
  if (r.contentKind != ContentKind::function_response || r.lane != Lane::function_response ||
      r.partial || r.refOperationId != operationId || r.refToolCallId != r.callId) {
    throw Error(code::t2_invalid,
                "T2 requires a function_response RuntimeEvent bound to its tool operation");
  }
}

void checkOutcomeIdentity(const ToolOperationRow& op, const RuntimeEvent& r) {
  if (r.invocationId != op.invocationId || r.runId != op.runId || r.turnId != op.turnId ||
      r.callId != op.providerToolCallId || r.toolName != op.toolName) {
    throw Error(code::tool_operation_identity_conflict,
                "Tool operation identity conflict for " + op.operationId);
  }
}

// Inserts the outcome (already checked), its journal and the CAS prepared→outcome_committed.
int64_t writeOutcome(ImmediateTx& tx, ToolOperationRow& op, Candidate& cand,
                     const std::string& journalId, double committedAt, bool failpoint) {
  Connection& c = tx.conn();
  const int64_t seq = store_detail::insertChecked(tx, cand, committedAt);
  if (failpoint) CRASHSIM_FAILPOINT(P5);
  if (planted("t2_split_commit")) {
    // Planted bug: T2 in two transactions (the response, then journal + CAS). No named
    // failpoint falls between them; the unnamed barrier S does (V6 must catch it).
    tx.commit();
    c.prepare("BEGIN IMMEDIATE").exec();
  }
  store_detail::insertJournal(c, journalId, op, code::outcome_committed, cand.event->id,
                              std::nullopt, committedAt);
  auto cas = c.prepare(
      "UPDATE tool_operations SET current_state = 'outcome_committed', result_event_id = ?2, "
      "version = version + 1 WHERE operation_id = ?1 AND current_state = 'prepared' AND "
      "result_event_id IS NULL");
  cas.bindRef(1, op.operationId).bindRef(2, cand.event->id);
  if (planted("t2_skip_operation_update")) return seq;  // planted bug: projection left stale
  cas.exec();
  if (changes(c) != 1) {
    throw Error(code::compare_and_set_failed, "Tool operation " + op.operationId +
                                                  " outcome compare-and-set failed (state " +
                                                  op.currentState + ")");
  }
  op.currentState = code::outcome_committed;
  op.resultEventId = cand.event->id;
  op.version += 1;
  return seq;
}
}  // namespace

WriteResult RuntimeStore::commitToolOutcome(const ToolOutcome& in) {
  std::lock_guard lk(store_detail::mutexOf(*this));
  Connection& c = store_detail::connectionOf(*this);
  checkT2Input(in.operationId, in.journalEventId, in.response);
  ImmediateTx tx(c);
  auto op = loadOperation(c, in.operationId);
  if (!op) throw Error(code::unknown_tool_operation, "Unknown tool operation " + in.operationId);
  checkOutcomeIdentity(*op, in.response);
  auto cands = store_detail::checkCandidates(tx, Writer::t2, {&in.response});
  if (op->resultEventId || cands[0].exists) {
    if (op->resultEventId == in.response.id && cands[0].exists) {
      return {false, cands[0].existingSeq};
    }
    throw Error(code::tool_operation_outcome_conflict,
                "Tool operation outcome conflict for " + in.operationId);
  }
  const int64_t seq = writeOutcome(tx, *op, cands[0], in.journalEventId, in.committedAt, true);
  tx.commit();
  return {true, seq};
}

// ---------------------------------------------------------------------------------------
// The terminal writer (termination contract section 6)

std::string RuntimeStore::turnFinalizeKey(const std::string& turnId) {
  std::string key = "turn-finalize:";
  key += turnId;
  return key;
}

namespace {
// The batch's identity: sha256 over its canonical events in batch order (outcomes with their
// journal ids), so an exact retry of the same logical batch has the same digest.
std::string batchDigest(const TurnFinalizeBatch& b) {
  Json items = Json::array();
  for (const auto& r : b.syntheticResponses)
    items.push_back(Json{{"event", store_detail::canonicalPayload(r)}});
  for (const auto& o : b.outcomes)
    items.push_back(Json{{"event", store_detail::canonicalPayload(o.response)},
                         {"journalEventId", o.journalEventId},
                         {"operationId", o.operationId}});
  items.push_back(Json{{"event", store_detail::canonicalPayload(b.terminal)}});
  return sha256Digest(stableJson(Json{{"events", std::move(items)},
                                      {"sessionId", b.terminal.sessionId},
                                      {"turnId", b.terminal.turnId}}));
}

void checkBatchShape(const TurnFinalizeBatch& b) {
  const RuntimeEvent& t = b.terminal;
  if (!t.isTerminal() || t.partial)
    throw Error(code::terminal_event_required,
                "the terminal writer requires a terminal RuntimeEvent, got " + t.id);
  rejectReservedForGeneric(t);
  auto sameRun = [&](const RuntimeEvent& e) {
    if (!store_detail::sameExecutionIdentity(e, t))
      throw Error(code::termination_batch_invalid,
                  "closure " + e.id + " does not belong to the terminal's run " + t.runId);
    if (e.isTerminal())
      throw Error(code::termination_batch_invalid, "closure " + e.id + " is itself terminal");
  };
  for (const auto& r : b.syntheticResponses) {
    rejectReservedForGeneric(r);
    if (r.contentKind != ContentKind::function_response || r.partial)
      throw Error(code::termination_batch_invalid,
                  "pre-T1 closure " + r.id + " is not an unbound function_response");
    sameRun(r);
  }
  for (const auto& o : b.outcomes) {
    checkT2Input(o.operationId, o.journalEventId, o.response);
    sameRun(o.response);
  }
}
}  // namespace

WriteResult RuntimeStore::commitTurnFinalize(const TurnFinalizeBatch& b) {
  std::lock_guard lk(store_detail::mutexOf(*this));
  Connection& c = store_detail::connectionOf(*this);
  checkBatchShape(b);
  const RuntimeEvent& t = b.terminal;
  const std::string key = turnFinalizeKey(t.turnId);
  const std::string digest = batchDigest(b);
  ImmediateTx tx(c);
  {
    auto st = c.prepare(
        "SELECT batch_digest, terminal_event_id FROM runtime_turn_finalize WHERE operation_id = "
        "?1");
    st.bind(1, key);
    if (st.step()) {
      if (st.textView(0) != digest || st.textView(1) != t.id)
        throw Error(code::termination_batch_conflict,
                    key + " already holds another termination batch (terminal " +
                        std::string(st.textView(1)) + ")");
      auto stored = store_detail::readEventById(c, t.id);
      return {false, stored ? stored->eventSeq : 0};
    }
  }
  const double now = store_detail::nowMs();
  bool created = false;
  for (const auto& r : b.syntheticResponses)
    created = store_detail::insertEvent(tx, r, Writer::generic, now).created || created;
  for (const auto& o : b.outcomes) {
    auto op = loadOperation(c, o.operationId);
    if (!op) throw Error(code::unknown_tool_operation, "Unknown tool operation " + o.operationId);
    checkOutcomeIdentity(*op, o.response);
    auto cands = store_detail::checkCandidates(tx, Writer::t2, {&o.response});
    if (op->resultEventId || cands[0].exists) {
      if (op->resultEventId == o.response.id && cands[0].exists) continue;
      throw Error(code::tool_operation_outcome_conflict,
                  "Tool operation outcome conflict for " + o.operationId);
    }
    writeOutcome(tx, *op, cands[0], o.journalEventId, now, false);  // one commit time per batch
    created = true;
  }
  const auto terminal = store_detail::insertEvent(tx, t, Writer::generic, now);
  created = terminal.created || created;
  if (!created) return {false, terminal.eventSeq};  // every event already stored (no key row)
  auto ins = c.prepare(
      "INSERT INTO runtime_turn_finalize (operation_id, session_id, run_id, turn_id, "
      "batch_digest, terminal_event_id, event_count, committed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8)");
  ins.bind(1, key)
      .bind(2, t.sessionId)
      .bind(3, t.runId)
      .bind(4, t.turnId)
      .bind(5, digest)
      .bind(6, t.id)
      .bind(7, static_cast<int64_t>(b.syntheticResponses.size() + b.outcomes.size() + 1))
      .bind(8, now);
  ins.exec();
  if (b.stop)
    CRASHSIM_FAILPOINT(P12);
  else
    CRASHSIM_FAILPOINT(P8);
  tx.commit();
  return {true, terminal.eventSeq};
}

// ---------------------------------------------------------------------------------------
// Recovery bundle (f.6)

namespace {

// Steps 1–3: the operation exists with a durable dispatch, the bundle is valid against the stored
// call and dispatch (the shared validator), and the stored call precedes its dispatch.
ToolOperationRow bundleOperation(Connection& c, const RecoveryBundle& in) {
  auto op = loadOperation(c, in.operationId);
  if (!op) throw Error(code::unknown_tool_operation, "Unknown tool operation " + in.operationId);
  if (!op->dispatchEventId) {
    throw Error(code::recovery_bundle_requires_dispatch,
                "Recovery bundle requires a durable dispatch RuntimeEvent");
  }
  auto call = store_detail::readEventById(c, op->callEventId);
  auto dispatch = store_detail::readEventById(c, *op->dispatchEventId);
  if (!call || !dispatch) {
    throw Error(code::store_corrupt,
                "Tool operation " + in.operationId + " references a missing RuntimeEvent");
  }
  detail::RecoveryOperationIdentity ident;
  ident.operationId = op->operationId;
  ident.invocationId = op->invocationId;
  ident.runId = op->runId;
  ident.turnId = op->turnId;
  ident.providerToolCallId = op->providerToolCallId;
  ident.toolName = op->toolName;
  ident.canonicalArgsHash = op->canonicalArgsHash;
  ident.recoveryMode = op->recoveryMode;
  ident.callEventId = op->callEventId;
  ident.dispatchEventId = *op->dispatchEventId;
  const RuntimeEvent* outcome = in.outcome ? &*in.outcome : nullptr;
  std::string v = detail::validateRecoveryBundle(ident, call->event, dispatch->event, in.reconcile,
                                                 outcome, in.decision);
  if (!v.empty()) {
    throw Error(v, "Recovery bundle for " + in.operationId + " is invalid: " + v);
  }
  if (!(call->eventSeq < dispatch->eventSeq)) {
    throw Error(code::event_order_conflict,
                "Recovery bundle call must precede its dispatch for " + in.operationId);
  }
  return *op;
}

// Step 5: a settled operation converges only on an exact retry (its result); an unsettled one
// must not hold the whole bundle already. nullopt: write the bundle.
std::optional<WriteResult> settledBundle(const RecoveryBundle& in, const ToolOperationRow& op,
                                         const std::vector<Candidate>& cands, bool completed) {
  bool allExist = true;
  for (auto& cd : cands) allExist = allExist && cd.exists;
  if (op.currentState != code::prepared || op.resultEventId) {
    const bool exact =
        allExist && (completed ? (op.currentState == code::recovery_completed && in.outcome &&
                                  op.resultEventId == in.outcome->id)
                               : (op.currentState == code::recovery_parked && !op.resultEventId));
    if (exact) return WriteResult{false, cands.back().existingSeq};
    throw Error(
        code::recovery_bundle_already_settled,
        "Tool operation " + in.operationId + " is already settled (" + op.currentState + ")");
  }
  if (allExist) {
    throw Error(code::recovery_bundle_already_settled,
                "Recovery bundle for " + in.operationId + " is incomplete");
  }
  return std::nullopt;
}

// Step 6: the reconcile fact and its journal row; the operation's version compare-and-set.
void writeReconcile(ImmediateTx& tx, Connection& c, const RecoveryBundle& in, ToolOperationRow& op,
                    Candidate& rc) {
  store_detail::insertChecked(tx, rc, in.reconcile.ts);
  store_detail::insertJournal(c, in.reconcile.id + "_journal", op, "reconcile_observed",
                              in.reconcile.id, recoveryMetadata(in.reconcile), in.reconcile.ts);
  auto up = c.prepare(
      "UPDATE tool_operations SET version = version + 1 WHERE operation_id = ?1 AND "
      "current_state = 'prepared' AND result_event_id IS NULL");
  up.bind(1, op.operationId);
  up.exec();
  if (changes(c) != 1) {
    throw Error(code::compare_and_set_failed,
                "Tool operation " + op.operationId + " reconcile compare-and-set failed");
  }
  op.version += 1;
}

// Step 8: the decision fact and its journal row; compare-and-set to the settled state.
int64_t writeDecision(ImmediateTx& tx, Connection& c, const RecoveryBundle& in,
                      const ToolOperationRow& op, Candidate& dc, bool completed) {
  const int64_t seq = store_detail::insertChecked(tx, dc, in.decision.ts);
  store_detail::insertJournal(c, in.decision.id + "_journal", op,
                              completed ? code::recovery_completed : code::recovery_parked,
                              in.decision.id, recoveryMetadata(in.decision), in.decision.ts);
  if (completed) {
    auto cas = c.prepare(
        "UPDATE tool_operations SET current_state = 'recovery_completed', version = version + 1 "
        "WHERE operation_id = ?1 AND current_state = 'outcome_committed' AND result_event_id = ?2");
    cas.bind(1, op.operationId).bind(2, in.outcome->id);
    cas.exec();
  } else {
    auto cas = c.prepare(
        "UPDATE tool_operations SET current_state = 'recovery_parked', version = version + 1 "
        "WHERE operation_id = ?1 AND current_state = 'prepared' AND result_event_id IS NULL");
    cas.bind(1, op.operationId);
    cas.exec();
  }
  if (changes(c) != 1) {
    throw Error(code::compare_and_set_failed,
                "Tool operation " + op.operationId + " recovery decision compare-and-set failed");
  }
  return seq;
}

}  // namespace

WriteResult RuntimeStore::commitToolRecoveryBundle(const RecoveryBundle& in) {
  std::lock_guard lk(store_detail::mutexOf(*this));
  Connection& c = store_detail::connectionOf(*this);
  if (in.outcome && in.outcome->toolRecovery) {
    throw Error(code::outcome_identity_conflict,
                "Recovery bundle outcome must not carry a tool recovery fact");
  }
  ImmediateTx tx(c);
  ToolOperationRow op = bundleOperation(c, in);
  // 4. prospective transition check.
  const RuntimeEvent* outcome = in.outcome ? &*in.outcome : nullptr;
  std::vector<const RuntimeEvent*> evs{&in.reconcile};
  if (outcome) evs.push_back(outcome);
  evs.push_back(&in.decision);
  auto cands = store_detail::checkCandidates(tx, Writer::bundle, evs);
  const bool completed = in.decision.toolRecovery->disposition == code::completed;
  if (auto settled = settledBundle(in, op, cands, completed)) return *settled;
  writeReconcile(tx, c, in, op, cands.front());
  // 7. completed: the outcome through the T2 path.
  if (completed) {
    writeOutcome(tx, op, cands[1], op.operationId + "_outcome", outcome->ts, false);
  }
  const int64_t seq = writeDecision(tx, c, in, op, cands.back(), completed);
  if (planted("bundle_commits_early")) {  // planted: the bundle is durable before P10's window
    tx.commit();
    CRASHSIM_FAILPOINT(P10);
    return {true, seq};
  }
  CRASHSIM_FAILPOINT(P10);
  // 9. commit.
  tx.commit();
  return {true, seq};
}

}  // namespace crashsim
