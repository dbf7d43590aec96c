// crashsim/harness/oracle.h — the oracle: what the contract says a crash must leave behind.
//
// Independent of the code under test: every expectation comes from the data table in
// oracle_table.cpp (failpoint × tool recoveryMode, DESIGN.md "Failpoints" and issue #5's
// recovery table) and from the scenario's list of tool calls. The oracle never runs the
// resolver, the planner or the store; the verifier compares what those produced with it.
//
// Where each failpoint sits in a run, per the scenario alone (DESIGN.md "Failpoints"):
//   P0, P7  once per model step that issues calls: P0 after the step decided its calls and
//           before any is committed; P7 after the step's results were delivered, before the
//           next provider step. The "armed" unit is that step.
//   P1      once per call, after it is committed, before preflight (refused calls too).
//   P2, P4, P5, P6  once per dispatched call (passes preflight: T1, implementation, T2).
//   P3      once per dispatched Write/Edit (temp file written and synced, not renamed).
//   P8, P9  once per run. P10, P11, P14, P15 only in a recovery process (double faults).
// For P1–P6 the armed operation is the k-th call (scenario order) that reaches the failpoint.
//
// Documented choice for replay_safe tools (Read) at P2–P5: parked without a bundle (the
// operation stays indeterminate / dispatch_without_response and the run is not continued).
// The contract's resolver has no replay-by-policy path, and re-running would need one.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/scenario.h"

namespace crashsim::harness {

// Expected end state after `crashsim-agent recover` runs to the end.
enum class Outcome {
  call_made_once,       // P0: the call was never committed; continuation issues it once
  reissued_runs_once,   // P1: not dispatched; continuation trims it, re-issues, runs once
  parked_by_reconcile,  // reconcile observed prior state → parked bundle, never re-run
  parked_unsettled,     // no reconciler: stays indeterminate, run not continued
  completed_bundle,     // reconcile observed expected state → completed bundle, ran once
  completed_ran_once,   // T2 committed; continue; ran once
  run_finished,         // P8/P9: every call done; repair makes fact and header agree
  // A parallel step left an unanswered call followed by a sibling's result: the continuation
  // parks `provider_replay_non_suffix_gap` (spec e.3 step 4); nothing after it runs.
  parked_replay_gap,
};
std::string_view toString(Outcome);

// One row of the oracle table.
struct OracleRow {
  CrashPoint failpoint;           // P0..P11
  std::string_view recoveryMode;  // reconcile | never_auto_retry | replay_safe
  bool reachedByAgentRun;         // hit by the agent run (false: P10, P11)
  bool reachedByMode;  // can a call of this mode reach it at all (P10 needs a reconciler)
  // Durable tool-ledger facts of the armed operation right after the kill.
  bool call, dispatch, response;
  bool terminalEvent;  // the run's terminal RuntimeEvent is committed
  // Resolver decision for the armed operation ("" status = no operation exists).
  std::string_view status, reason, settlementOrigin;
  Outcome outcome;
  // Armed operation's decision after recovery ran to the end ("" = operation not re-checked).
  std::string_view finalStatus, finalReason;
  std::string_view note;
};

const std::vector<OracleRow>& oracleTable();
// Throws std::out_of_range if the (failpoint, mode) row is missing.
const OracleRow& oracleRow(CrashPoint failpoint, std::string_view recoveryMode);
// The oracle's own tool → recoveryMode table (Write/Edit reconcile, Bash never_auto_retry,
// Read replay_safe). Unknown tools → "never_auto_retry" (fail closed).
std::string_view recoveryModeOfTool(std::string_view tool);
inline constexpr std::array<std::string_view, 3> kRecoveryModes = {"reconcile", "never_auto_retry",
                                                                   "replay_safe"};

// Expected durable state of one scenario call after the kill.
struct OpExpectation {
  std::string callId, tool;
  bool call = false, dispatch = false, response = false;
  std::string status, reason;  // "" = no operation expected
  std::string settlementOrigin;
  bool armed = false;
  bool responseIsError = false;  // a completed call's response is an error (refused, errorCalls)
};

struct CaseExpectation {
  bool ok = false;                  // false: the oracle cannot place this (failpoint, hit)
  std::string whyNot;               // reason when !ok
  std::optional<size_t> armedCall;  // index into scenario.calls (P1–P6)
  std::optional<size_t> armedStep;  // model step index (P0, P7)
  const OracleRow* row = nullptr;
  std::vector<OpExpectation> ops;  // one per scenario call, scenario order
  bool terminalEvent = false;
  Outcome outcome = Outcome::run_finished;
  // Armed operation's decision after recovery ("" = not checked): the row's final decision,
  // or for parked_replay_gap whatever the armed operation had settled to.
  std::string finalStatus, finalReason;
};

// Hits per failpoint (P0–P11) a complete, unarmed agent run must reach, from the scenario alone.
PointCounts predictedHits(const Scenario& scenario);

// Phase 4 (workspace-continuity-contract.md d.1, i.2): the checkpoint captures of a complete,
// unarmed agent run under the scenario's workspacePolicy, in order — the baseline (after user
// event #1, before the first provider step), then one after the T2 of each dispatched call whose
// tool's effect is not `none` (e.1: every tool but Read). Each capture reaches P18–P22 once, so
// P18#k..P22#k is the k-th capture. None under `disabled`. A capture writes no row of the run: a
// kill inside the k-th capture leaves the run's ledger as a kill at `ledgerPoint`#`ledgerHit`
// does (the baseline: P0#1, before the first step's text; after call c's T2: P6 at c's hit), and
// `checkpointsBefore` accepted checkpoints (k-1; P22 adds its own). A capture whose snapshot c.4
// refuses — check 7, a dirty submodule (the seed's edits in it, or a Write/Edit into it before the
// capture), or check 8 (conversionAttribute) — fails before P18 and is left out.
struct PredictedCapture {
  CrashPoint ledgerPoint = points::P0;
  int ledgerHit = 1;
  std::optional<size_t> call;  // index into scenario.calls (nullopt: the baseline)
};
std::vector<PredictedCapture> predictedCaptures(const Scenario& scenario);
// c.4 check 8 (snapshot policy v1, `attributes:'reject_conversion_v1'`): the first path of L
// (sorted) on which a `.gitattributes` among `files` (relative path → content, read per
// gitattributes(5): deeper files and later lines win) leaves one of filter, text, eol, ident,
// working-tree-encoding other than unspecified (`text` may be unset, as `-text` and `binary`
// leave it), and that attribute's name; nullopt when every path passes. The capture of such a
// snapshot fails with `checkpoint_policy_unsupported` (`attribute:<name>`) before P18, so
// predictedCaptures leaves it out: under optional_legacy it fails alone (d.3) and the run goes on.
struct AttributeRefusal {
  std::string attribute;
  std::string path;
};
std::optional<AttributeRefusal> conversionAttribute(const std::map<std::string, std::string>& files,
                                                    std::vector<std::string> snapshotPaths);
// The k-th capture (1-based) of predictedCaptures, nullopt when the run makes fewer.
std::optional<PredictedCapture> captureAt(const Scenario& scenario, int hit);
// Accepted checkpoints right after a kill at capture failpoint `fp` (P18–P22) hit k: k-1, or k
// at P22 (table W: W1–W5 hold no fact of this capture, W6 holds it).
int expectedCheckpointsAfterCaptureKill(CrashPoint fp, int hit);

// Phase 4 f (workspace-continuity-contract.md f.1, i.2): the isolated restore a scenario's drift
// after the crash causes. Present when the policy captures, driftAction is `isolated_restore`, the
// scenario's afterCrash names restore failpoints (P23–P26) and the run makes a capture after an
// effectful call. The agent run is killed at that last capture's P22 (`captureHit`): its checkpoint
// C is accepted and covers the crashed boundary (only neutral events follow: e.1), so after the
// afterCrash edit the plan parks exactly [workspace_drifted] and the recovery process restores C
// into epoch 2, reaching P23–P26 once each (the armed unit: the restore). A kill there leaves the
// run's ledger as the crash-path kill at `ledgerPoint`#`ledgerHit` (P6 at the call's hit).
struct PredictedRestore {
  int captureHit = 0;  // k of the last capture (P22#k kills the agent run)
  CrashPoint ledgerPoint = points::P6;
  int ledgerHit = 1;
  int checkpointsBefore = 0;           // accepted in epoch 1 after that kill (= k, table W6)
  std::vector<CrashPoint> failpoints;  // the afterCrash's P23..P26, in order
};
std::optional<PredictedRestore> predictedRestore(const Scenario& scenario);

// Phase 4 g (workspace-continuity-contract.md g.1–g.5, i.2): the durable rebaseline a user
// confirms after the scenario's drift. Present when the policy captures, driftAction is
// `offer_rebaseline`, the scenario's afterCrash names rebaseline failpoints (P27–P29) and writes
// only tracked seed files with new content, and some call is a Write/Edit of a tool the scenario
// offers before which every call is a Read. The agent run is killed at that call's P1 (`ledgerHit`;
// its call committed, never dispatched): the baseline is the only checkpoint and covers the crash
// (the suffix is neutral: e.1), so after the afterCrash edit the plan parks exactly
// [workspace_drifted] and names the boundary the user confirms; the confirmed recovery rebaselines
// into epoch 2 (B4: readSet = the paths the edit modified, `M` against the baseline's tree),
// reaching P27 and P28 once, and its continuation commits the notice and reaches P29 once. The
// continuation re-issues the armed call and every later one; each Write/Edit of a readSet path is
// gated (g.4: no Read of it follows in the scenario) — `gatedCalls`, refused pre-T1.
struct PredictedRebaseline {
  int ledgerHit = 1;                    // the agent run is killed at P1#ledgerHit
  int checkpointsBefore = 1;            // the baseline (d.1 a), epoch 1
  std::vector<CrashPoint> failpoints;   // the afterCrash's P27..P29, in order
  std::vector<std::string> readSet;     // B4 `paths`, bytewise sorted
  std::vector<std::string> gatedCalls;  // call ids the gate refuses in epoch 2 (g.4)
};
std::optional<PredictedRebaseline> predictedRebaseline(const Scenario& scenario);

// Table B (g.5, i.1) after the kill at `fp` (P27–P29) of the confirmed recovery, for the
// scenario's one session: the epochs, whether the user_rebaseline transition is committed, the
// session's runs (the source run; at P29 also the continuation, not terminal, whose event #2 is
// the notice and which holds no provider step), and whether the next start-up needs the
// confirmation again (B4: only after P27; after P28/P29 epoch 2 is current).
struct RebaselineKillState {
  int epochs = 1;
  bool transition = false;
  int runs = 1;
  bool noticeInContinuation = false;
  bool confirmAgain = true;
};
RebaselineKillState expectedRebaselineKill(CrashPoint fp);

// Phase 4 h (workspace-continuity-contract.md h.2, h.5, i.2 P30): the carrier GC at the end of a
// recovery. Present when the policy captures, the scenario's workspacePolicy.gcOrphanGraceMs is 0
// (an orphan is older than the grace as soon as GC looks) and the run makes a capture. The agent
// run is killed at the first capture's P20 (table W4: its ref created and verified, no fact — one
// orphan ref, the baseline's), leaving the run's ledger as the kill at `ledgerPoint`#`ledgerHit`
// does (captureAt(1)); the recovery continues (the crashed boundary uncovered under
// optional_legacy, or parks under required) and ends with the GC, which deletes that orphan and
// reaches P30 once (the armed unit: the GC).
struct PredictedGc {
  int captureHit = 1;  // P20#captureHit kills the agent run
  CrashPoint ledgerPoint = points::P0;
  int ledgerHit = 1;
};
std::optional<PredictedGc> predictedGc(const Scenario& scenario);

// Expectation for killing the agent run at (failpoint, hit) of scenario.
CaseExpectation expectCase(const Scenario& scenario, CrashPoint failpoint, int hit);

// Whether recovery of this case must park instead of finishing the task: the outcome parks
// (reconcile observed the prior state, no reconciler, replay gap) or the scenario's afterCrash
// change applies at this failpoint (the external change decides the park).
bool expectParked(const Scenario& scenario, const CaseExpectation& x, CrashPoint failpoint);

// Executions of each scenario call (scenario order; effects-log lines) after recovery ran to the
// end, from the scenario and the contract alone — never from a run: a refused call never runs;
// when recovery finishes the task every dispatched call runs exactly once; when it parks, the
// calls before the armed one ran once, the armed one ran once if its implementation had started
// (P3 and later; at P1/P2 it never did) and nothing after it ran.
std::vector<int> expectedExecutions(const Scenario& scenario, const CaseExpectation& x,
                                    CrashPoint failpoint);

// What the store must hold right after a recovery process was killed at (rfp, rhit), from the
// catalogue's boundary text alone (DESIGN.md "Failpoints"); it holds whatever order the host
// runs repair, reconcile and continuation in. Runs are counted in creation order, 1-based.
//   P8#k   inside a terminal commit: run k has no terminal RuntimeEvent (rolled back), its
//          header is not terminal; k = 1 (the crashed run) means no other run exists yet.
//   P9#k   terminal fact committed, header not yet: run k has exactly one terminal fact and a
//          non-terminal header.
//   P10#1  inside the recovery-bundle commit (rolled back): no bundle, the armed operation is
//          still indeterminate / dispatch_without_response, no continuation exists.
//   P11#1  claim committed, continuation-start not: the crashed run is sealed (fact and
//          header), one claim row has no start and its target run has no events (and no header).
//   P14#1  target run created, continuation-start not: as P11, but the claim's target run
//          header exists (not terminal) — still no events.
//   P15#1  continuation-start committed, provider not called: the claim's start is
//          runtime_admission and is the target run's only event; the target is not terminal.
struct RecoveryKillExpectation {
  int run = 1;                      // the run the kill concerns
  int runs = 0;                     // runs the store holds (0: at least `run`)
  bool terminalFact = false;        // P9 (and P11, P14, P15: the crashed run is sealed)
  bool terminalHeader = false;      // P11, P14, P15
  bool armedIndeterminate = false;  // P10
  // P11, P14, P15: exactly one claim row, whose start kind is `claimStart` ("" = no start yet),
  // and whose target run holds `targetEvents` events (its continuation-start, if any, only) and
  // has a non-terminal header (`targetHeader`) or none.
  bool claim = false;
  std::string claimStart;
  int targetEvents = 0;  // -1: not fixed (a continuation killed inside its own calls)
  bool targetHeader = false;
};
RecoveryKillExpectation expectRecoveryKill(CrashPoint recoveryFailpoint, int recoveryHit);

// The failpoints a recovery process can be killed at (double faults), in case-id order: P8–P11,
// P14–P17.
std::vector<CrashPoint> recoveryPoints();
// The points a recovery's reach is checked over: P0–P7 (the continuation's own calls), then
// recoveryPoints().
std::vector<CrashPoint> recoveryReachPoints();

// The imported legacy runs whose JSONL events hold no terminal fact: interrupted runs that
// startup repair seals after the import (spec g), each with a recovered terminal fact and header.
int interruptedLegacyRuns(const Scenario& s);

// The legacy JSONL import (scenario legacyStore), from the scenario and spec j alone: partial
// events are never imported; the rest are imported in file order, `batchEvents` per
// transaction, so every writable open of a pending store runs ceil(imported / batchEvents)
// transactions and reaches P16 (inside each, before its COMMIT) and P17 (after each COMMIT) once
// per transaction — a re-run after a crash re-runs every batch, the stored events as exact
// retries. 0 for a scenario without a legacy store.
int predictedImportBatches(const Scenario& scenario);
// The legacy lines the import stores (partial events left out), file order.
std::vector<Json> importedLegacyEvents(const Scenario& scenario);
// How many of those events the store must hold after a kill at `id`'s import point (and, for a
// double fault, the recovery's): batches before P16#k are committed ((k-1)·batch events), P17#k
// is after batch k (k·batch, at most all); a recovery kill keeps what the agent run committed and
// adds its own batches the same way. The manifest is never written before the last batch.
size_t expectImportStoredEvents(const Scenario& scenario, const CaseId& id);

// How recovery must settle the continuation claim a recovery kill left (spec g's claim saga),
// for a recovery killed at P11, P14, P15 or inside the continuation's own calls (P0–P7; nullopt
// for the other points):
//   P11, P14  no start: the saga commits the claim_repair start and the deterministic failed
//             terminal (failureClass continuation_abandoned_before_provider_dispatch);
//   P15, P0–P7  a runtime_admission start: the saga leaves it alone; the target is then a crashed
//             run like any other (README "Deviations": this host holds the store's process lock,
//             so no provider call of it can be live elsewhere): run recovery seals it, never with
//             the saga's abandoned terminal.
struct ClaimSettlement {
  std::string startKind;  // claim_repair | runtime_admission
  bool abandoned;         // the target's failed header carries the saga's failure class
};
std::optional<ClaimSettlement> expectClaimSettlement(const CaseId& id);

// Hits of the recovery-side failpoints P8–P11, P14, P15 the first, unarmed recovery process of the
// primary case (failpoint, hit) must reach, from the contract's recovery order alone (spec g,
// c, i, e; DESIGN.md "Failpoints"): the double faults the sweep plans for that case.
//   - the crashed run has no terminal fact (every kill but P9): startup repair seals it — one
//     terminal commit (P8) and then its header (P9); at P9 the fact exists and repair only
//     fixes the header, which commits no fact (no hit);
//   - the armed call is a reconcile tool (Write/Edit) left indeterminate (P2–P5): one
//     recovery bundle (P10);
//   - recovery continues (the outcome re-issues or goes on: P0, P1, completed bundle, P6, P7,
//     and P8, whose sealed run ended without its final answer) and nothing parks it (afterCrash,
//     replay gap): one continuation claim (P11), its target run (P14) and start (P15), and the
//     continuation run commits its own terminal fact (P8) and header (P9).
// After a kill at an import point (P16, P17) the scenario's run never started: recovery re-runs
// every import batch (P16 and P17 predictedImportBatches() times each) and nothing else.
//   - the continuation run makes the scenario's calls the crashed run left unanswered (the
//     continuation's own tool calls: continuationFirstCall) and reaches P0–P7 for them exactly as
//     a first run of those calls would (predictedHits of continuationScenario).
PointCounts predictedRecoveryHits(const Scenario& scenario, CrashPoint failpoint, int hit);

// The continuation's own tool calls (issue #44 §3: a continuation killed inside its own calls).
// When recovery from a kill at (failpoint, hit) continues the task, the scripted model goes on
// from the first step whose calls are not all answered (scenarios/README.md): the index of the
// first scenario call the continuation run issues — the armed step's first call at P0, the
// re-issued armed call at P1, the call after the settled step at P4/P5 (completed bundle), P6
// and P7. nullopt when recovery parks, or continues without a call (P8: every call answered).
std::optional<size_t> continuationFirstCall(const Scenario& scenario, CrashPoint failpoint,
                                            int hit);
// The scenario as the continuation run plays it: the calls from `firstCall` on (their steps, ids
// and preflight as in the scenario), so expectCase/predictedHits of it place a kill inside the
// continuation's own calls the way they place one in a first run.
Scenario continuationScenario(const Scenario& scenario, size_t firstCall);
// Whether a recovery kill at (recoveryFailpoint) is inside the continuation's own tool calls
// (P0–P7 of the continuation run).
inline bool isContinuationKill(const CaseId& id) {
  return id.recoveryFailpoint && isToolCallPoint(*id.recoveryFailpoint);
}
// The continuation kills the double-fault sweep plans after the primary (failpoint, hit): hits
// 1..n of P0–P7 in the continuation run, n per point (the others' continuation reach is still
// checked, V3). After P0#1 — nothing settled, the continuation makes every call of the task —
// every hit; after P7#1 — the first step settled, the continuation's replay holds it — the hits
// of the continuation's first step; none after the other primaries. Keeps the added cases
// linear in the scenario's length.
PointCounts sweptContinuationKills(const Scenario& scenario, CrashPoint failpoint, int hit);
// The recovery process killed at its own unnamed barriers (+R:S#k, +R:F#k; issue #44 §3,
// verdicts/recovery_barrier.h): whether the double-fault sweep kills the recovery of the primary
// (failpoint, hit) at every store COMMIT and file step it reaches. Only primaries whose recovery
// continues (a claim: P11 in predictedRecoveryHits), and of those two per scenario, each a
// different kind of recovery: P0#1 (nothing settled: the recovery seals the crashed run, claims,
// starts the continuation and makes every call of the task — every transaction kind a
// continuation commits) and one (failpoint, hit) whose recovery commits a recovery bundle before
// it continues (the bundle's own transaction): of those, the one whose continuation makes the
// fewest calls itself (P0#1 already kills inside every call), the first in case-id order among
// equals. The other primaries' recoveries run the same transactions over other calls. The hit
// counts are not predicted (the contract does not fix a run's number of transactions): they come
// from the reference recovery of each such primary (buildReference), like the first run's barrier
// counts.
bool sweptRecoveryBarriers(const Scenario& scenario, CrashPoint failpoint, int hit);
// The first scenario call the continuation of the primary (failpoint, hit) makes itself, or the
// scenario's call count when it makes none (P8: it gives the final answer only); nullopt when
// recovery does not continue.
std::optional<size_t> continuationCallsFrom(const Scenario& scenario, CrashPoint failpoint,
                                            int hit);
// The race of two hosts (verdicts/h1_race.h): whether the sweep races two recovery processes on
// the crash state of the primary (failpoint, hit). Only where recovery has work a second host
// could do twice — it continues (a claim: P11 in predictedRecoveryHits) or commits a recovery
// bundle (P10) — and only at the first such hit of each agent failpoint of a scenario: a linear
// number of cases, each a kind of work at a kind of crash point.
bool racedPrimary(const Scenario& scenario, CrashPoint failpoint, int hit);
// The expectation of a continuation kill `id` (isContinuationKill), in the whole scenario's
// terms: expectCase(continuationScenario, rfp, rhit) places the kill among the continuation's
// calls; the calls before them were answered in the crashed run (completed). `ops` and
// `armedCall` index the whole scenario. `run2`, when given, receives the expectation of the
// continuation run alone (its calls only), for its durable facts and decisions.
CaseExpectation expectContinuationKill(const Scenario& scenario, const CaseId& id,
                                       CaseExpectation* run2 = nullptr);

}  // namespace crashsim::harness
