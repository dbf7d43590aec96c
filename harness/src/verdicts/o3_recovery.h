// verdicts/o3_recovery.h — O3: recovery finishes the task, or stops with a reason the profile
// declares.
//
// Proves: the resume ended within its limit (the profile's resumeSeconds) and either exited 0
// with the task done — the workspace holds the scenario's expected files (expect.files, exact
// bytes), none of expect.absent, and every dispatched Write, Edit and Bash call of the scenario
// ran — or exited with one of the profile's semantics.stopExitCodes (a declared stop). A silent
// exit 0 with the task unfinished fails, and so does any other exit. A stop is a reason only
// when an outcome can be unknown: if the model had asked for no Write, Edit or Bash before the
// crash (Read is replay-safe), nothing the runtime did can be in doubt and a stop fails — a
// runtime that gives up on every resume would otherwise pass every case. "Ran more than once" is
// O2's alone (the protocol's "exactly once" is split so each promise has one judge).
#pragma once

#include "verdicts/open_evidence.h"

namespace crashsim::harness {
OpenVerdict judgeO3Recovery(const OpenEvidence& ev);
// The outcome class O5 compares: "finished", "stopped:<code>", "exit:<code>", "timeout", …
std::string recoveryOutcome(const OpenEvidence& ev);
}  // namespace crashsim::harness
