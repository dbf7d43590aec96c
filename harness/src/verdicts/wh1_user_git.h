// verdicts/wh1_user_git.h — WH1 (workspace-continuity-contract.md i.3 H1): the user's `.git` is
// byte-identical before the run, after every kill inside a checkpoint capture and after recovery;
// so is each submodule's own `.git` (its directory or gitfile), which c.4 check 7's `status` in
// the submodule reads (c.5: read only, GIT_OPTIONAL_LOCKS=0).
//
// Expected, from the contract alone: Phase 4 only reads the user's repository (c.2: the capture
// index is the carrier's own, GIT_OPTIONAL_LOCKS=0), and the only write a run makes under `.git`
// is RC h's marker line in `info/exclude` (".maka-workspace.json", added once). So every file
// under `.git` (by relative name and bytes; symlinks by link text) equals the seeded template's,
// except `info/exclude`, which is the template's content followed by that one line only.
//
// Cannot see: a write that is undone before the check (a changed-then-restored index); the
// contract's "user's work tree is what the oracle's tool calls produce" is V8's (expect.files).
#pragma once

#include <filesystem>
#include <string>

namespace crashsim::harness::wh1 {

// "" when `ws`/.git and every `ws`/<path>/.git match `templateWs`'s as above; else the first
// difference, one line ("the user's .git/index changed", "the user's lib/.git/index changed").
std::string userGitProblem(const std::filesystem::path& templateWs,
                           const std::filesystem::path& ws);

}  // namespace crashsim::harness::wh1
