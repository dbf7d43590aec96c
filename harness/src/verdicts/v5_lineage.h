// verdicts/v5_lineage.h — V5: every lineage digest a continuation carries, computed again from the
// contract's byte rules (spec e.7) over the rows plain SQLite reads.
//
// Proves: for every continuation claim row and every run header naming a continuation_source_v2,
// the boundary the runtime recorded is the one the contract defines for its immediate source —
// its segments are the source's lineage (e.4: the source pinned at its high-water, then each
// continuationSource edge's run pinned at that edge's high-water, oldest first), each segment's
// identity and position are its rows', each prefixDigest is the e.7 digest of those rows, and
// manifestDigest, boundary_digest, boundaryDigest and replayManifestDigest are the e.7 manifest
// digest of those segments; source_prefix_digest, sourcePrefixDigest and the continuation-start's
// immediateSource.prefixDigest are the immediate source's prefix digest. A Phase-1 plan that
// continues is held to the same (its boundary and sourcePrefixDigest). The digests come from
// verdicts/lineage_digest.h, which shares no code with the runtime.
// Cannot see: providerReplayDigest (a digest of the provider projection, e.3, which the harness
// does not re-implement); an ancestor edited after its digest was recorded — the digests then
// disagree with the rows, which this check reports, but whether the runtime notices is the
// ancestor-tamper probe's question (verdicts/ancestor_tamper.h).
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/continuation.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// Fails V5 (each reason prefixed with `when`) at the first digest of the store at `storeDir` that
// is not the contract's, or when the store cannot be read; never passes V5.
void checkLineageDigests(const std::filesystem::path& storeDir, const std::string& when, Checks& c);

// Fails V5 when `plan` continues with a boundary or sourcePrefixDigest other than the contract's
// for its source run in the store at `storeDir` (a parked plan carries none); never passes V5.
void checkPlanDigests(const ContinuationPlan& plan, const std::filesystem::path& storeDir,
                      Checks& c);

}  // namespace crashsim::harness
