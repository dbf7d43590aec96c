// modes/crash_state.h — V2–V7 on the crash state of an unnamed barrier and of a killed recovery
// process (crash_case.cpp's steps; internal to the modes room).
#pragma once

#include <filesystem>
#include <optional>

#include "modes/case_run.h"
#include "verdicts/barrier.h"
#include "verdicts/recovery_barrier.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// V2–V7 on the crash state of an unnamed barrier: integrity, what must hold at any instant
// (verdicts/barrier.h), then V5–V7 as for a named failpoint. Fills `facts` for V8.
void checkBarrierCrashState(const Scenario& sc, const std::filesystem::path& store,
                            const std::filesystem::path& dir, const RunOptions& opts,
                            barrier::CrashFacts& facts, Checks& c);

// V2–V7 on the state a killed recovery process left (double faults): integrity, the state that
// recovery failpoint defines (verdicts/recovery_kill_state.h) or, at a barrier of the recovery
// process, what must hold at every instant (verdicts/recovery_barrier.h), fact before header,
// read-only planning, rebuildable projections.
void checkRecoveryKilledState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                              const std::filesystem::path& store, const std::filesystem::path& dir,
                              const RunOptions& opts, Checks& c,
                              recovery_barrier::Judged* judged = nullptr,
                              const recovery_barrier::Run* atPrimary = nullptr);

}  // namespace crashsim::harness
