// refs.h — a checkpoint's ref in the carrier (workspace-continuity-contract.md d.2 step 7, f.2
// R3), internal to the checkpoint room: created create-only and made durable. One rule for the
// capture's and the restore's refs.
#pragma once

#include <string>

#include "crashsim/workspace_carrier.h"

namespace crashsim::checkpoint_detail {

// Create-only `update-ref` of c.carrier.refName at c.carrier.commitOid: an existing ref at that
// commit is an exact retry; at another commit workspace_fact_conflict (never overwritten); any
// other failure `failureCode`.
void createCheckpointRef(const WorkspaceCarrier& carrier, const CheckpointFact& c,
                         std::string_view failureCode);
// h.2 (c): `update-ref -d <refName> <oid>`, a compare-and-swap on the oid GC read; true when it
// deleted the ref, false when the ref is gone or names another commit (the CAS lost: kept). The
// nearest directory git left of the ref's chain is fsynced up to refs/.
bool deleteCheckpointRef(const WorkspaceCarrier& carrier, const std::string& refName,
                         const std::string& oid);
// git does not fsync directories (c.2): the ref's directory chain up to refs/.
void fsyncRefChain(const WorkspaceCarrier& carrier, const std::string& refName);

}  // namespace crashsim::checkpoint_detail
