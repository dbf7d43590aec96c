// verdicts/workspace_expect.h — what the workspace must hold, judged by the harness itself.
//
// Expected values are the scenario's data (expect.files / expect.absent, afterCrash.expect) and
// the tools' temp-file naming rule (scenarios/README.md "What each call does"); the observed
// values are read with plain file-system calls. Nothing here calls the runtime, so a bug in the
// runtime's own workspace helpers cannot make a workspace verdict pass. The harness also applies
// the afterCrash mutations itself: it is "another process" changing the workspace while the
// agent is down.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/scenario.h"

namespace crashsim::harness::workspace {

// A tool's temp file `.<name>.toolop_<hex>.tmp` (relative path, any depth).
bool isToolTempFile(const std::string& relPath);

// One line per mismatch with expect.files (regular file, exact bytes) and expect.absent.
std::vector<std::string> expectedProblems(const crashsim::Scenario& scenario,
                                          const std::filesystem::path& workspace);

// True when a case killed at `failpoint` ("P3") gets the scenario's afterCrash mutations.
bool afterCrashApplies(const crashsim::Scenario& scenario, std::string_view failpoint);

// Applies afterCrash.mutations in order (write: replace the file, never through a symlink;
// delete: a file, a symlink or a whole directory; symlink: replace with a link). Throws
// std::runtime_error naming the path.
void applyAfterCrash(const crashsim::Scenario& scenario, const std::filesystem::path& workspace);

// One line per mismatch with afterCrash.expect (files, absent, symlinks) and per leftover tool
// temp file: the external change must survive recovery byte for byte.
std::vector<std::string> afterCrashProblems(const crashsim::Scenario& scenario,
                                            const std::filesystem::path& workspace);

}  // namespace crashsim::harness::workspace
