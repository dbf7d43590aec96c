// verdicts/wh1_user_dir.h — WH1's work-tree half (workspace-continuity-contract.md i.3 H1, f.2:
// "the user's directory is not read after the drift check and never written"): in a restore case
// the user's whole directory — work tree and .git, every entry by relative path, bytes, link text
// and directory — is byte-identical from the moment the scenario's afterCrash edit left it to
// after the restore's kill and after the recovery that continues in the restored instance.
//
// Expected, from the contract alone: nothing after the crash writes the user's directory (no tool
// call of the continuation runs there; a restore materialises only under the store). Cannot see:
// a write undone before the check.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace crashsim::harness::wh1 {

// Every entry under `dir` ("rel" → bytes, "rel" → "-> link" for a symlink, "rel/" → "" for a
// directory).
std::map<std::string, std::string> userDirBytes(const std::filesystem::path& dir);

// "" when `dir` equals `before`; else the first difference, one line ("the user's a.txt changed").
std::string userDirProblem(const std::map<std::string, std::string>& before,
                           const std::filesystem::path& dir);

}  // namespace crashsim::harness::wh1
