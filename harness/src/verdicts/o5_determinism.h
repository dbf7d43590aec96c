// verdicts/o5_determinism.h — O5: the same case twice gives the same verdict record.
//
// The record is what the case decided, not its timing: O1–O4's results (pass, or the first words
// of the failure), the recovery's outcome class (finished, a declared stop and its code, …) and
// the executions per scenario call. Proves: the runtime's crash behaviour at this point does not
// depend on timing or on state outside the case (a cache, a global file). Cannot see: a
// difference neither run showed.
#pragma once

#include "verdicts/open_evidence.h"

namespace crashsim::harness {
// The record O5 compares.
nlohmann::json openVerdictRecord(const OpenEvidence& ev,
                                 const std::map<std::string, std::string>& verdicts);
// "" when equal, else the first difference.
OpenVerdict judgeO5Determinism(const nlohmann::json& first, const nlohmann::json& second);
}  // namespace crashsim::harness
