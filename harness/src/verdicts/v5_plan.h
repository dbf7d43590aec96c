// verdicts/v5_plan.h — V5: the resume plan, computed twice, and planning that writes nothing.
//
// Proves: the plan this process computes for every run of a store (read through the store)
// equals the plan a separate process prints for the run exported as JSON (`crashsim ledger
// resolve`: the export, the decoder and the planner's determinism; one fresh process per
// distinct export, v5_second_process.h), and Phase 0 and the store-reading Phase 1 planner
// change no table (every table digested with plain SQLite, outside the runtime); and, for a
// named failpoint, that the Phase-0 plan of the crashed run is the one the contract's mapping
// (spec b "required results", d.3, d.4) gives for the oracle's expected decisions, so a plan
// that is wrong the same way in both processes is seen too; and every lineage digest of the
// store and of a plan that continues is the contract's (v5_lineage.h).
#pragma once

#include <filesystem>

#include "crashsim/harness/oracle.h"
#include "crashsim/store.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// V5 over every run of the open store at `storeDir`; `work` holds the exported ledger and the
// second process's output; `crashsim` empty = no second process (the plan comparison is skipped).
void checkV5(RuntimeStore& store, const std::filesystem::path& storeDir,
             const std::filesystem::path& work, const std::filesystem::path& crashsim, Checks& c);

// V5 against the oracle, on the crashed run's ledger: per scenario call, the plan holds an
// operation iff the oracle expects one, with the status the contract maps the expected decision
// to (completed → succeeded, or failed when the call's response is an error;
// definitely_not_dispatched → not_dispatched; indeterminate unchanged); one pending_tool_result
// diagnostic per indeterminate and one tool_not_dispatched per not-dispatched operation; the
// plan is blocked with dangling_tool_state exactly when one of those exists, and requires
// verification exactly when an operation is indeterminate. Fails V5 only (never passes it).
void checkPlanAgainstOracle(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                            Checks& c);

}  // namespace crashsim::harness
