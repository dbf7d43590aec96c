// verdicts/v4_decisions.h — V4: the RecoveryResolver's decisions.
//
// Proves: on a crashed ledger the resolver decides each operation as the oracle row says (status,
// reason, settlement origin, requiresReconciliation), and on every crashed, killed-recovery and
// recovered ledger it agrees with an independent model written from the contract
// (verdicts/resolver_model.h, no runtime code) that also judges bundle validity. Cannot see: a
// fact both the model and the resolver accept wrongly (V3 and V8 judge the facts and the end).
#pragma once

#include <string>
#include <vector>

#include "crashsim/harness/oracle.h"
#include "crashsim/recovery_resolver.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// "" when the independent model finds no corruption in `events` and agrees with `res`; else the
// first difference. `which` names the ledger in the reason.
std::string modelDisagreement(const std::vector<RuntimeEvent>& events,
                              const RecoveryResolution& res, const std::string& which);

// V4 on the crashed run's ledger against the oracle's expectation of the named failpoint.
void checkDecisions(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                    Checks& c);

}  // namespace crashsim::harness
