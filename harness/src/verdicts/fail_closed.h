// verdicts/fail_closed.h — what "fails closed" means for a damaged store, shared by the
// power-loss check D2 (d1_d2_powerloss.h) and the corruption check C1 (corruption_injector.h).
//
// A host that meets a store it cannot trust exits non-zero and prints one JSON error line
// {"error":{"code":…}} whose code is one of the contract's stable damage codes; it runs no tool
// and writes nothing. And on any store that opens, the resolver reports `completed` only for an
// operation whose function_response is in the ledger.
#pragma once

#include <filesystem>
#include <string>

#include "crashsim/store.h"

namespace crashsim::harness {

// Whether `code` is a stable code for a store the runtime refuses to trust: one the contract
// spells (crashsim/codes.h: store_corrupt, store_event_seq_gap, json_too_deep,
// termination_batch_conflict, ...), and not one of the two that say the runtime did not
// recognise the damage itself: sqlite_error (SQLite's error passed through) and internal_error.
bool isStableFailClosedCode(const std::string& code);

// The code of the last {"error":{"code":…}} line a host printed to `stdoutFile` ("" if none).
std::string failClosedCodeOf(const std::filesystem::path& stdoutFile);

// Completed-implies-response over every run of an open store: "" when it holds, else which run
// and call break it.
std::string completedWithoutResponse(const RuntimeStore& store);

}  // namespace crashsim::harness
