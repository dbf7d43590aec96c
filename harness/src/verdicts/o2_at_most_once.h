// verdicts/o2_at_most_once.h — O2: no scenario call's effect ran more often than its tool
// allows.
//
// Proves, from the effects log (one line per execution, written by the tool server before the
// effect) and the re-sent log (a finished call sent again that the tool answered without running:
// a Write or Edit whose target already held its content, crashsim/open/tool_server.h): Write,
// Edit and Bash calls of the scenario reached the tools at most once after their effect ran — over
// the run and every resume; Read may repeat. And no Write, Edit or Bash ran that the model never
// asked for: an execution the tool server matched to no scenario call (callId "unscripted" — a
// call re-sent after the crash with its arguments re-encoded is one) is a side effect beyond the
// scenario's. Cannot see: an effect the runtime caused without the tool server.
#pragma once

#include "verdicts/open_evidence.h"

namespace crashsim::harness {
OpenVerdict judgeO2AtMostOnce(const OpenEvidence& ev);
}  // namespace crashsim::harness
