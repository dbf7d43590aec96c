// verdicts/v4_decisions.h — V4: the RecoveryResolver's decisions.
//
// Proves: on a crashed ledger the resolver decides each operation as the oracle row says (status,
// reason, settlement origin, requiresReconciliation), and on every crashed, killed-recovery and
// recovered ledger it agrees with an independent model written from the contract
// (verdicts/resolver_model.h, no runtime code) that also judges bundle validity. Cannot see: a
// fact both the model and the resolver accept wrongly (V3 and V8 judge the facts and the end).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "crashsim/harness/corruption_injector.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/recovery_resolver.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// "" when the independent model finds no corruption in `events` and agrees with `res`; else the
// first difference. `which` names the ledger in the reason. The model decides under the protocol
// the agent wrote the run with (agentWroteUnderT1), not the marker the resolver reads.
std::string modelDisagreement(const std::vector<RuntimeEvent>& events,
                              const RecoveryResolution& res, const std::string& which);

// V4 on a damaged ledger (--mode corrupt, crashsim/harness/corruption_injector.h). `storeCopy` is a
// copy of the damaged store (read with plain SQLite, so the original stays as the damage left
// it). Every run whose events decode goes through the resolver and the independent model —
// which here reads the marker from the ledger, since the ledger itself is the input judged —
// and they must agree decision by decision, corruption included; each operation a ledger edit
// touched must be decided as the contract says (`expected`). n/a when the damaged database does
// not open or no run decodes and nothing was expected.
void checkDamagedLedgerDecisions(const std::filesystem::path& storeCopy,
                                 const std::vector<ExpectedDecision>& expected, Checks& c);

// V4 on the runs a legacy import brought in (a scenario with legacyStore, after the import has
// ended): each imported run, read from the store with plain SQLite, is resolved by the runtime
// and must agree decision by decision with the independent model resolving the scenario's own
// events of that run (the expectation comes from the scenario, not from the imported ledger).
void checkImportedDecisions(const Scenario& scenario, const std::filesystem::path& store,
                            Checks& c);

// V4 on the crashed run's ledger against the oracle's expectation of the named failpoint.
void checkDecisions(const CaseExpectation& x, const std::vector<RuntimeEvent>& runEvents,
                    Checks& c);

}  // namespace crashsim::harness
