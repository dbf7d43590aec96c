// verdicts/o2_at_most_once.h — O2: no scenario call's effect ran more often than its tool
// allows.
//
// Proves, from the effects log (one line per execution, written by the tool server before the
// effect): Write, Edit and Bash calls of the scenario ran at most once over the run and every
// resume; Read may repeat. Cannot see: a re-run Write or Edit whose target already held the
// expected content (a deterministic no-op of the tools' preflight, no effects line), or an
// effect the runtime caused without the tool server.
#pragma once

#include "verdicts/open_evidence.h"

namespace crashsim::harness {
OpenVerdict judgeO2AtMostOnce(const OpenEvidence& ev);
}  // namespace crashsim::harness
