// git_cli.h — one hermetic git invocation (workspace-continuity-contract.md c.2), internal to
// the checkpoint room. The environment is cleared and rebuilt (PATH = the binary's directory,
// HOME = XDG_CONFIG_HOME = the carrier's git-home, GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL, the b.3
// author/committer identity and date, and per call GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
// GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES, always absolute); every call passes
// c.2's -c options before its subcommand; the child runs in its own process group, is killed
// with it at its deadline and dies with its parent.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/workspace_carrier.h"

namespace crashsim::checkpoint_detail {

struct GitEnv {
  std::filesystem::path gitDir, workTree, indexFile, objectDir, alternates;
};

struct GitCall {
  std::vector<std::string> args;
  GitEnv env;
  std::filesystem::path cwd;  // empty: the git-home (never the user's directory by accident)
  std::string stdinData;
  std::chrono::milliseconds timeout{30000};
};

struct GitOutput {
  bool ok = false;  // started, not timed out, exit status 0
  int exitCode = -1;
  std::string out, err;
  std::string failure;  // why !ok, one line
};

// A call in the store's carrier repository alone (GIT_DIR = carrier.git; no work tree, index,
// object directory or alternates).
GitCall carrierCall(const WorkspaceCarrier& carrier, std::vector<std::string> args,
                    std::string stdinData = {});

// `gitHome` empty: HOME and XDG_CONFIG_HOME are a path that does not exist and
// GIT_CONFIG_GLOBAL is /dev/null (resolving the binary, before a carrier exists).
GitOutput runGit(const GitRuntime& git, const std::filesystem::path& gitHome, const GitCall& call);
// runGit, or CarrierError(code, detail, "git <subcommand> failed: ...") when it is not ok.
std::string gitOk(std::string_view code, std::string_view detail, const GitRuntime& git,
                  const std::filesystem::path& gitHome, const GitCall& call);
// The first line of git's output (without its newline).
inline std::string firstLineOf(const std::string& s) { return s.substr(0, s.find('\n')); }
// NUL-separated records (a trailing NUL ends the last one).
std::vector<std::string> splitNul(std::string_view text);

}  // namespace crashsim::checkpoint_detail
