// verdicts/v9_determinism.h — V9: the same case, run again, gives the same verdict record.
//
// Proves: a case's verdicts (status and reason of every other check) do not depend on timing,
// scheduling or leftovers of an earlier run, so a failure reproduces from its reproduce line.
// The sweep samples the first hit of every (scenario, failpoint); --verify-determinism runs all.
// Cannot see: nondeterminism that never changes a verdict or its reason.
#pragma once

#include <map>
#include <string>

#include "crashsim/reports/report.h"

namespace crashsim::harness {

// V9 from the check records of a case's first and second run (V9 itself is ignored in both).
reports::Check determinismCheck(const std::map<std::string, reports::Check>& first,
                                const std::map<std::string, reports::Check>& second);

}  // namespace crashsim::harness
