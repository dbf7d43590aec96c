// verdicts/file_steps.h — the durability steps of every atomic file replace, named and ordered.
//
// The barrier F counts the steps a file replace reaches (coverage.h barrierBoundProblem); it does
// not say which step each guards, so a Write that drops one fsync only shrank the sweep. The
// instrumented agent writes every DurableFs step of a run, in order, when CRASHSIM_FS_TRACE names
// a file (the harness asks for it in each reference run); this check reads that trace, never the
// runtime's code, and requires of every rename(from → to) what a power cut allows (ALICE's
// rules for ext4/xfs-like file systems: unsynced bytes may be lost or torn, a rename may persist
// before the data it names unless the data was synced first, and a name is durable only after its
// directory is synced):
//   - `from` was created and then fsynced before the rename (the bytes the new name publishes
//     are durable before the name is);
//   - the directory of `to` (and of `from`, when another) is fsynced after the rename, before
//     the next file is created and before the run ends (the replace is durable before the tool
//     reports it and before the next one starts).
// Cannot see: steps outside DurableFs (SQLite's own I/O is judged by the power-loss VFS, D1).
#pragma once

#include <filesystem>
#include <string>

namespace crashsim::harness {

// "" when every replace in the trace file keeps the order above; else the first violation, naming
// the step. A missing or unreadable trace is a problem too (the agent did not trace).
std::string fileReplaceOrderProblem(const std::filesystem::path& traceFile);

}  // namespace crashsim::harness
