// crashsim/harness/corruption_injector.h — the corruption injector of the corrupt case (--mode
// corrupt, issue 22): a seeded damage to the store files of a crash state; C1 judges it
// (harness/src/verdicts/c1_corrupt.h).
//
// A corrupt case `scenario/P6#1/corrupt@23` kills the agent at its failpoint exactly as the kill
// case does (whose V2–V8 verify that crash state), then applies the one damage chosen by seed 23
// to the crashed store (<case>/corruption.json describes it), and judges what the host makes of
// it:
//
//   C1 fail closed or recover: `crashsim inspect` ends (no signal, no hang) with 0 or 2 and
//      leaves runtime.sqlite, its -wal and the manifest byte-identical; `crashsim-agent recover`
//      ends too, and either
//        - fails closed: a non-zero exit with a stable damage code (verdicts/fail_closed.h), no
//          tool run, the workspace and the store files unchanged; or
//        - recovers: exit 0, and V8 of the kill case holds on the result (every call executed as
//          the oracle expects for the undamaged crash state — never twice —, the workspace is the
//          reference's, the history and the model's inputs are the contract's); and on any
//          store that opens, `completed` only with a durable function_response.
//      A damage the runtime must detect (`detectable`) has to fail closed. A damage that is
//      undetectable by design (README "Damaged stores fail closed": a cut WAL, damage confined
//      to the WAL's last commit, a deleted -wal whose database already holds the schema, a
//      deleted last event, a duplicated event, a flipped bit the checksums do not cover) may
//      also recover to another outcome: the case passes, its `corruption.outcome` is
//      "undetectable", and the reason says what recovery did (the report's own column).
//
// Whether a damage is detectable is decided here from the damage and the store files as they
// were before it, by the rules the README states — never from what the runtime reports.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {

// The damage classes, in seed order (kind = seed % size). The last five are ledger edits that
// keep event_seq contiguous (the later events of the invocation renumbered), as a careless
// migration or a hand edit would: the ledger reaches the resolver with exactly the shape the
// runtime itself never writes — a call, dispatch or response deleted, a call's args changed
// after its dispatch hashed them, the first event's T1 marker removed. For each the contract
// names the decision (spec c.3, c.5: AppliedCorruption::expectedDecisions), and V4 judges the
// damaged ledger decision by decision.
// The three after them (issue #45) are the damages read-only commands once destroyed or a
// start-up once adopted: a zero-length database beside an intact WAL, a WAL cut exactly at a
// commit boundary with the crash's -shm kept, and recovery handed a directory that is not the
// store's workspace; each names its code (AppliedCorruption::expectedCode).
inline constexpr std::array<std::string_view, 19> kCorruptionKinds = {
    "db_bitflip",          "db_zero_page",      "db_truncate",      "wal_bitflip",
    "wal_zero_frame",      "wal_truncate",      "wal_delete",       "event_delete",
    "event_duplicate",     "event_seq_swap",    "header_delete",    "call_delete",
    "dispatch_delete",     "response_delete",   "call_args_change", "marker_delete",
    "db_empty_beside_wal", "wal_cut_at_commit", "workspace_wrong"};

// workspace_wrong: what recovery is given instead of the store's workspace.
enum class WrongWorkspace { none, unmarked, otherMarker };

// The contract's decision for one operation of a damaged ledger (spec c.3, c.5), derived from
// the facts the damage left: status and reason empty = no operation of that call id remains.
struct ExpectedDecision {
  std::string runId, toolCallId, status, reason;
};

// Seeds of the `states` damages of one (scenario, failpoint, hit): deterministic in the triple
// and the sweep seed, consecutive (so consecutive kinds), different start kinds per point.
std::vector<uint64_t> corruptSeeds(const CaseId& primary, uint64_t sweepSeed, int states);

// One applied damage. record.detectable: the runtime must refuse the store (fail closed).
// mayGoUnnoticed: undetectable by design, recovery may reach another outcome. Neither: the
// damage must be refused or change nothing (a page the WAL supersedes, a frame past the end).
struct AppliedCorruption {
  reports::Corruption record;  // kind, detail, detectable (outcome and code: not judged yet)
  bool mayGoUnnoticed = false;
  // Ledger edits: the operations the edit touched and the contract's decision for each.
  std::vector<ExpectedDecision> expectedDecisions;
  // The one code the README names for this damage ("": any stable damage code): recover must
  // refuse with it, and so must inspect when the damage is to the store.
  std::string expectedCode;
  WrongWorkspace wrongWorkspace = WrongWorkspace::none;
};

// Applies the damage of `seed` to the crashed store directory and returns what was done. Throws
// std::runtime_error when the damage cannot be applied (a harness problem, reported as V1).
AppliedCorruption applyCorruption(const std::filesystem::path& store, uint64_t seed);

}  // namespace crashsim::harness
