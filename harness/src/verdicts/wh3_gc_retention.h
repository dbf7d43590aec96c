// verdicts/wh3_gc_retention.h — WH3 (workspace-continuity-contract.md i.3 H2–H3 after a GC, h.1,
// h.2): the carrier GC never deletes a ref or commit an accepted fact names, and collects the
// refs no fact names.
//
// Expected, from the contract alone: every accepted checkpoint (runtime_workspace_checkpoints,
// read from a read-only open of the store) has its ref under refs/crashsim/checkpoints/ naming its
// commitOid and that commit present in the carrier — after a kill inside the GC (P30) and after
// the recovery to the end (h.1: "never deleted in v1"). After a GC that ran to its end with
// orphanGraceMs 0, no ref under refs/crashsim/checkpoints/ is unnamed (h.2: each orphan is
// collectable; H3). Read with the system git CLI, never with the runtime's own code.
//
// Cannot see: a deleted object the fact's commit does not reach (WH2 walks the reachable
// objects after a capture kill), nor a GC that deletes a named ref and a later step re-creates it.
#pragma once

#include <filesystem>
#include <string>

namespace crashsim::harness::wh3 {

// "" when every accepted checkpoint's ref names its commit and the commit is present, and (with
// `noOrphans`) no ref under refs/crashsim/checkpoints/ is unnamed; else the first problem.
std::string gcRetentionProblem(const std::filesystem::path& store, bool noOrphans);

}  // namespace crashsim::harness::wh3
