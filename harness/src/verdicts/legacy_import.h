// verdicts/legacy_import.h — the legacy JSONL import's crash states (P16, P17) and its end.
//
// A scenario with a legacy store (crashsim/scenario.h legacyStore) starts from a store directory
// holding only runtime-events.jsonl; the first writable open imports it in batches, and the sweep
// kills that open inside a batch (P16) and between batches (P17). The expectations come from the
// scenario's events and the oracle's batch arithmetic (oracle.h expectImportStoredEvents), and
// the store is read with plain SQLite (observed_store.h), never through the runtime.
//
// Proves, for a store directory after a kill (complete = false) or after recovery (complete):
//   - the JSONL is byte-identical to what the harness wrote (never rewritten or deleted);
//   - the manifest is absent until the import ends, present after (a crash never ends it early);
//   - runtime_events holds exactly the first `stored` imported events, each once: per run in file
//     order with event_seq 1..k, committed_at = the event's ts, content as in the file; no
//     partial event; no other event;
//   - every run named by a stored event has one header, terminal exactly when its terminal fact
//     is stored (with the contract's header status), and no other header exists (the scenario's
//     own run never started); once the import ended (complete), a legacy run the JSONL left
//     without a terminal fact is either as imported (`running`) or sealed `failed` by startup
//     repair with exactly one terminal fact appended after its imported events.
// Cannot see: an import that reads other files than the JSONL.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "crashsim/harness/scenario.h"

namespace crashsim::harness {

// The bytes of runtime-events.jsonl the harness writes for the scenario: each legacyStore event,
// partial ones included, as one JSON line in scenario order.
std::string legacyJsonlBytes(const Scenario& scenario);
// Writes them into <storeDir>/runtime-events.jsonl (creating the directory); nothing for a
// scenario without a legacy store.
void writeLegacyJsonl(const Scenario& scenario, const std::filesystem::path& storeDir);

std::vector<std::string> importStateProblems(const Scenario& scenario,
                                             const std::filesystem::path& storeDir, size_t stored,
                                             bool complete);

}  // namespace crashsim::harness
