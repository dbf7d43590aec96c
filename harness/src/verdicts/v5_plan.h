// verdicts/v5_plan.h — V5: the resume plan, computed twice, and planning that writes nothing.
//
// Proves: the plan this process computes for every run of a store (read through the store)
// equals the plan a separate process prints for the run exported as JSON (`crashsim ledger
// resolve`: the export, the decoder and the planner's determinism), and Phase 0 and the
// store-reading Phase 1 planner change no table (every table digested with plain SQLite, outside
// the runtime). Cannot see: a plan that is wrong the same way in both processes (V4 and V8 judge
// what it leads to).
#pragma once

#include <filesystem>

#include "crashsim/store.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// V5 over every run of the open store at `storeDir`; `work` holds the exported ledger and the
// second process's output; `crashsim` empty = no second process (the plan comparison is skipped).
void checkV5(RuntimeStore& store, const std::filesystem::path& storeDir,
             const std::filesystem::path& work, const std::filesystem::path& crashsim, Checks& c);

}  // namespace crashsim::harness
