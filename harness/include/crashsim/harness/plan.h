// crashsim/harness/plan.h — the sweep's case plan, made from the oracle's prediction alone.
//
// Planning never runs the code under test: the primary cases are every (failpoint, hit) the
// oracle predicts a complete agent run reaches (predictedHits), and with double faults each
// primary's recovery kills are the hits the oracle predicts its recovery process reaches
// (predictedRecoveryHits). The reference runs and the recovery runs are then *checked* against
// this prediction (a disagreement is an error or a failed check, never a silently smaller
// sweep). Selections narrow the plan: --scenario, --failpoint (a case is selected when its
// agent failpoint or its recovery failpoint is listed), --case GLOB (fnmatch on the case id),
// then --shard I/N (primary cases by position ≡ I mod N; a double fault goes with its primary,
// so shards are disjoint and their union is the whole selection).
//
// Stop mode (--mode stop): the primaries are the same agent-run points P0–P9 with a Stop instead
// of the kill; with double faults each primary whose Stop reaches a termination batch (P0–P7)
// also gets +K:P12#1 and +K:P13#1 (process "stop" in `reach`). No barrier and no recovery-process
// point is stopped.
//
// Path-mutation cases ("…/P4#1/kill~path:src:symlink", verdicts/path_mutations.h) go with their
// primary like its double faults (same shard; they start from its crash state). Their reach rows
// are process "path": predicted = the mutations generated at that failpoint.
// The race of two hosts (kill mode, with double faults): each primary oracle.h racedPrimary
// names also gets "+H2", two recovery processes released together on its crash state (process
// "race" in `reach`, by the primary's failpoint).
//
// Barrier cases (S#k, F#k, G#k: crash points nobody named, crashsim/failpoints.h) have no
// prediction: the contract does not fix how many transactions or file steps a run takes. They are
// planned from the counts the scenario's reference run reached (`barrierHits`), which
// buildReference has checked against the contract's lower bound. With double faults (kill mode) the
// recovery process of the primaries oracle.h sweptRecoveryBarriers names is killed at each of its
// own barriers too
// ("…/P0#1/kill+R:S#9", process "recovery" in `reach`), planned from the counts of that primary's
// reference recovery (`barrierHits[i].recovery`, checked against the contract's lower bound).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/scenario.h"

namespace crashsim::harness {

struct PlanSelection {
  std::vector<std::string> failpoints;  // empty = all ("P4", "P10", "S", "F")
  std::vector<std::string> caseGlobs;   // empty = all
  std::string mode = "kill";            // kill | powerloss | stop | corrupt
  int states = 2;     // powerloss / corrupt: seeded states per (scenario, failpoint, hit)
  uint64_t seed = 0;  // powerloss / corrupt: mixed into the state seeds
  bool doubleFaults = false;
  bool barriers = true;  // kill mode: plan the S/F barrier cases too
  // kill mode: the generated path-component mutations (verdicts/path_mutations.h) — "off", "p4"
  // (at P4 of every reconciled Write/Edit: the default) or "all" (at P2–P5)
  std::string pathMutations = "p4";
  int shardIndex = 0, shardTotal = 1;
};

// One selected case, in plan order (CaseId order).
struct PlannedCase {
  CaseId id;
  size_t scenario = 0;  // index into the scenarios planSweep was given
};

// Predicted reach of one (scenario, failpoint) — "agent" rows for P0–P9 in the agent run,
// "recovery" rows for P8–P11, P14, P15 (and the continuation's P0–P7) in the recovery processes
// of the primary cases (double faults), and for S and F in the reference recoveries of the
// primaries oracle.h sweptRecoveryBarriers names.
struct PlannedReach {
  // process: "agent" | "recovery" | "stop" | "race" (the +H2 cases of racedPrimary, by the
  // primary's failpoint)
  std::string scenario, failpoint, process;
  int predicted = 0;  // predicted hits (recovery: summed over primaries; S/F: the reference run)
  int planned = 0;    // selected cases that kill there (this shard)
};

struct SweepPlan {
  std::vector<PlannedCase> cases;   // this shard's selected cases
  std::vector<PlannedReach> reach;  // every (scenario, failpoint, process) the oracle predicts
  size_t sweepCases = 0;            // selected cases over all shards
  std::string manifestDigest;       // reports::manifestDigest of this shard's case ids
  std::string sweepManifestDigest;  // the same over all shards
};

// The barriers S and F the reference recovery of one primary (failpoint, hit) reached: the
// primary's crash state recovered by one unarmed `crashsim-agent recover` (buildReference, for the
// primaries oracle.h sweptRecoveryBarriers names).
struct RecoveryBarrierHits {
  CrashPoint failpoint = points::P0;
  int hit = 1;
  int s = 0, f = 0;
};

// Reached counts of the barriers S, F and G in one scenario's reference run, and of S and F in
// its reference recoveries (the +R:S#k / +R:F#k double faults are planned from those). G, the git
// barrier of Phase 4 (crashsim/failpoints.h), is planned in the process-kill modes only: a power
// cut's file model does not hold git's writes (workspace contract i.3 H9).
struct BarrierHits {
  int s = 0, f = 0, g = 0;
  std::vector<RecoveryBarrierHits> recovery;
};

// Plans the sweep over `scenarios` (already filtered by --scenario). `barrierHits` holds one
// entry per scenario (the reference runs' counts), or is empty when no barrier case is planned.
// Throws std::runtime_error for a malformed selection (unknown failpoint, P10/P11 without
// double faults, …).
SweepPlan planSweep(const std::vector<Scenario>& scenarios, const PlanSelection& sel,
                    const std::vector<BarrierHits>& barrierHits = {});

// Whether the selection plans barrier cases (kill mode, barriers on, S or F selected by
// --failpoint when it is given, and some --case glob whose failpoint part does not start with
// 'P'): the sweep then needs the reference runs before planning, `--list` included.
bool plansBarriers(const PlanSelection& sel);

}  // namespace crashsim::harness
