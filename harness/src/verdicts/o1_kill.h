// verdicts/o1_kill.h — O1: the runtime died by SIGKILL at the armed point, and nothing of it
// outlived the kill.
//
// Proves: the point was reached in the armed process (reported by the tool server or the
// interposer, or seen by the model server), the runtime's process was killed by SIGKILL (the
// native wait status, not an exit 137 or a timeout), no process of its group survived, and the
// process that reported the point — the runtime's own child — did not escape the group (a
// runtime that starts its tool server in a new session leaves it running after a crash).
// Cannot see: a grandchild that escaped the group without reaching any point.
#pragma once

#include "verdicts/open_evidence.h"

namespace crashsim::harness {
OpenVerdict judgeO1Kill(const OpenEvidence& ev);
}  // namespace crashsim::harness
