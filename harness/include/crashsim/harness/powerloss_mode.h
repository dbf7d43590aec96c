// crashsim/harness/powerloss_mode.h — the power-loss case (--mode powerloss): arming the child
// (issue 9, DESIGN.md "Fault modes"); its durability checks D1 and D2 are verdicts
// (harness/src/verdicts/d1_d2_powerloss.h).
//
// A powerloss case `scenario/P6#1/powerloss@17` runs the agent with the power-loss VFS
// (crashsim/powerloss.h) as SQLite's default VFS. At the armed failpoint the child writes its
// control line, copies the store's database and WAL as the page cache holds them (every commit
// the runtime was acknowledged: the state a process kill would leave) into <case>/acked with
// plain I/O, materialises the crash state chosen by seed 17 on disk (<case>/powerloss.json
// describes it) and SIGKILLs itself. Then the same V1–V9 checks run on the crashed store, plus:
//
//   D1 durability: every row of every table of the acknowledged copy (run headers, events —
//      T1, T2, terminal, bundle —, projections, continuation claims) is present, unchanged, in
//      the store reopened after the power cut, and nothing appears that was never acknowledged.
//      The same at a barrier (S, F): the acknowledged copy is taken there too, so what must be
//      durable follows from what the runtime had committed when the power went, never from an
//      oracle row (a barrier has none). Just before a COMMIT (S) that transaction was not
//      acknowledged and a power cut cannot keep it either (its commit frame was never written).
//      With synchronous=FULL this must hold; with NORMAL the check lists the lost facts, and,
//      once recovery ran, what recovery decided for the tool calls they belonged to.
//   D2 fail-closed: on the crashed ledger and after recovery, the resolver reports `completed`
//      only for an operation whose function_response is in the ledger; recovery runs no tool
//      twice (effects log, which lives outside the model); a store that no longer opens or
//      fails PRAGMA integrity_check makes `crashsim-agent recover` fail with a stable code
//      (store_*, schema_*, *corruption*) and run no tool, instead of repairing by guessing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/runtime_driver.h"
#include "crashsim/harness/supervisor.h"

namespace crashsim::harness {

// A power-loss case's folder: the child's description of the crash state it materialised, the
// acknowledged copy of the store it took at the point, and the store's files as the power cut
// left them (keepPowerlossCrashCopy).
inline constexpr const char* kPowerlossCrashLog = "powerloss.json";
inline constexpr const char* kPowerlossAckedDir = "acked";
inline constexpr const char* kPowerlossCrashCopyDir = "crash-copy";
inline constexpr const char* kStoreDbFiles[] = {"runtime.sqlite", "runtime.sqlite-wal",
                                                "runtime.sqlite-journal"};

// Seeds of the `states` crash states of one (scenario, failpoint, hit): deterministic in the
// triple and the sweep seed, consecutive (so kindForSeed visits consecutive crash kinds).
std::vector<uint64_t> powerlossSeeds(const CaseId& primary, uint64_t sweepSeed, int states);

// Arms the agent run of `id` (which has a seed) in caseDir for a power cut through `driver`.
// synchronous: "FULL" | "NORMAL" (the store's PRAGMA synchronous in the child).
void armPowerloss(const RuntimeDriver& driver, SpawnSpec& run, const CaseId& id,
                  const std::filesystem::path& caseDir, const std::string& synchronous);

// V1 addendum: "" when <caseDir>/powerloss.json describes a materialised crash state of the
// case's seed, otherwise why not.
std::string powerlossCrashProblem(const CaseId& id, const std::filesystem::path& caseDir);

// Copies the store's database, -wal and -journal files as the power cut left them into
// <caseDir>/crash-copy, before any check opens the store: D1 compares that copy (opened read-write,
// so SQLite recovers it as the runtime's first open would) with the acknowledged one. A check that
// opens the store itself may write to it (RuntimeStore::open creates the schema of a store whose
// creation never committed — a power cut at the first COMMIT barrier, S#1): those rows were
// never in the crash state and must not count as "durable but never acknowledged".
void keepPowerlossCrashCopy(const std::filesystem::path& store,
                            const std::filesystem::path& caseDir);

}  // namespace crashsim::harness
