// verdicts/t1_exists.h — T1 says the operation already exists (spec f.4), and V8 judges what the
// agent does then.
//
// The probe, on every kill-mode P2#1 case (the first dispatched call of the scenario): the same run
// request delivered twice, as an at-least-once job queue delivers it, to a host whose clock the
// harness drives (crashsim-agent's CRASHSIM_CLOCK_START_MS), so both deliveries write
// byte-identical facts. The first delivery is killed at P2#1: T1 of that call committed, its
// implementation not started. The second one re-prepares exactly those facts: the store answers
// every write as an exact retry (f.3) and T1 returns `created: false` for the call. Recovery then
// runs on the store the second delivery left.
//
// Expected, from the contract alone (f.4: "the operation is already claimed and the
// implementation must not run"; j.2: a missing result is never "not executed", nothing re-runs):
// the second delivery ends by itself, re-prepares the calls up to that one (P1 reached once per
// call up to it) and never passes its T1 (no P2–P6: the implementation never starts, no result is
// committed); the call has no function_response in the ledger; the effects log has no line after
// the first delivery's kill, nor after recovery; recovery parks with the contract's reason (the
// operation's outcome is unknown to the store) and exits 0.
//
// Cannot see: a refusal that happens for another reason before T1 (the hits and the plant test in
// harness_planted_fault_test show the path is T1's); a second host racing in another process
// (every writer holds the host lock).
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/harness/supervisor.h"

namespace crashsim::harness {

// What the probe observed.
struct T1ExistsRun {
  std::string callId;    // the call whose T1 already exists (the first dispatched call)
  size_t callIndex = 0;  // its index in the scenario
  ChildResult second;    // the second delivery
  std::optional<PointCounts> secondHits;  // its failpoint hits
  std::map<std::string, int> effectsAtKill, effectsAfterSecond, effectsAfterRecovery;
  bool responseAfterSecond = false;  // a function_response of callId in any run after it
  ChildResult recovery;
  std::string recoverStdout;
};

// The contract's violations in `r` ("T1 exists: …" lines for V8); empty when it holds.
std::vector<std::string> t1ExistsProblems(const T1ExistsRun& r);

// Whether the store's ledger (plain SQLite) holds a function_response for `callId` in any run.
bool ledgerHoldsResponse(const std::filesystem::path& storeDir, const std::string& callId);

}  // namespace crashsim::harness
