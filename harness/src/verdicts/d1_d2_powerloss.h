// verdicts/d1_d2_powerloss.h — D1 (durability of acknowledged commits) and D2 (fail-closed
// recovery) of a power-loss case (crashsim/harness/powerloss_mode.h arms it).
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
//
// Proves: a commit the runtime acknowledged survives the power cut its synchronous setting
// promises to survive, and a damaged store is refused rather than repaired by guessing. Cannot
// see: what the page cache kept beyond the VFS model's crash kinds (drop, seeded subset, torn
// sector).
#pragma once

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "crashsim/harness/powerloss_mode.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {

using CheckMap = std::map<std::string, reports::Check>;

// What the crash-time checks learnt, for the after-recovery part.
struct PowerlossFindings {
  bool evaluated = false;
  std::vector<std::string> lostFacts;         // acknowledged rows missing after the power cut
  std::set<std::string> lostCallIds;          // tool calls those facts belonged to
  bool damaged = false;                       // the store no longer opens / integrity_check fails
  std::string damage;                         // why
  std::map<std::string, int> effectsAtCrash;  // effects log right after the crash
};

// D1 and the crash-time half of D2, on the crashed store (before recovery). Sets checks
// "D1" and "D2" (D2 may be failed again by checkPowerlossRecovery).
PowerlossFindings checkPowerlossCrash(const std::filesystem::path& caseDir,
                                      const std::filesystem::path& store,
                                      const std::string& synchronous, CheckMap& checks);

// The after-recovery half of D2 (and the NORMAL narrative of D1). `recover` is the result of
// the unarmed `crashsim-agent recover` run whose stdout is recoverStdout.
void checkPowerlossRecovery(const PowerlossFindings& findings, const std::filesystem::path& store,
                            const ChildResult& recover, const std::filesystem::path& recoverStdout,
                            CheckMap& checks);

}  // namespace crashsim::harness
