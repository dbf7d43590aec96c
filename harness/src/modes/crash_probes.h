// modes/crash_probes.h — the probes and the race a kill case runs beside its recovery
// (crash_case.cpp's steps; internal to the modes room).
#pragma once

#include <filesystem>
#include <optional>

#include "modes/case_run.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// The ancestor-tamper mutation (verdicts/ancestor_tamper.h) on a copy of the state a killed
// recovery left, then recovery of that copy to its end, judged by V5. Returns the recovery's
// result, or nullopt when the state does not qualify (nothing ran).
std::optional<ChildResult> probeAncestorTamper(const RunOptions& opts, const Scenario& sc,
                                               const std::filesystem::path& store,
                                               const std::filesystem::path& ws,
                                               const std::filesystem::path& dir, Checks& c);

// The T1-exists probe (verdicts/t1_exists.h) of a kill-mode P2#1 case: the run request
// delivered twice to a host whose clock the harness drives, the first delivery killed at P2#1,
// then recovery; judged by V8.
void probeT1Exists(const RunOptions& opts, const Scenario& sc, const Reference& ref,
                   const std::filesystem::path& dir, Checks& c);

// The race of two hosts (+H2, verdicts/h1_race.h): two `crashsim-agent recover` released
// together on the crash state; H1 judges the race, then V8 (and V3's recovery reach) the task's
// end from the racer that recovered, as for the primary's single recovery.
void runRaceRecovery(CaseRun& cr, const CaseExpectation& x, bool afterCrash,
                     const WorkspaceSnapshot& atCrash);

}  // namespace crashsim::harness
