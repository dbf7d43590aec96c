// verdicts/ancestor_tamper.h — an afterCrash store mutation: another process edits an ancestor
// run's event while the agent is down, and V5 judges what recovery then plans.
//
// Applied to the state a recovery killed at P11 left (the +R:P11 double faults of kill mode: the
// claim is durable, its target run not yet created) when that state holds continuation claims the
// next start-up settles itself — no start, or a claim_repair start (spec g: the saga gives such a
// target its repair start and fails it). That target is then the newest
// failed session-inline run, so it is the next plan's source (e.1) and every run of the claim's
// boundary is an ANCESTOR of that plan (e.4). The mutation rewrites, with plain SQLite, the
// failure message of the oldest boundary run's terminal event (its last event): bytes no
// projection reads (e.3: terminal facts and error content are diagnostics only), so only the
// prefix digest covers them. The payload stays the stable JSON of a valid event.
//
// Expected, from the contract alone: the traversal finds the ancestor's prefix digest differs
// from its edge's sourcePrefixDigest (e.4) and the plan parks with that lineage code (e.2 step 2:
// source_prefix_digest_mismatch); no continuation starts, no claim is added. Not applied (nullopt)
// to a state without such claims, or whose oldest boundary run does not end with an error fact
// carrying a message (spec g step 9 gives every repaired failed terminal one).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>

namespace crashsim::harness {

struct AncestorTamper {
  std::string runId, eventId;  // the edited ancestor event
  size_t claims = 0;           // claim rows in the state, before recovery
};

// Applies the mutation to the store at `storeDir` when the state qualifies (above); nullopt,
// having written nothing, otherwise. Throws std::runtime_error when the store cannot be edited.
std::optional<AncestorTamper> tamperAncestor(const std::filesystem::path& storeDir);

// What the recovery of a tampered store did against the contract ("" when it parked with
// source_prefix_digest_mismatch, ran no continuation and added no claim): `recoverStdout` is
// `crashsim-agent recover`'s output, `claimsAfter` the claim rows after it.
std::string tamperedRecoveryProblem(const AncestorTamper& t, const std::string& recoverStdout,
                                    size_t claimsAfter);

}  // namespace crashsim::harness
