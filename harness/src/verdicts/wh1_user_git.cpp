// WH1: the user's .git byte-identical (wh1_user_git.h).
#include "verdicts/wh1_user_git.h"

#include <map>

#include "verdicts/wh1_user_dir.h"

namespace crashsim::harness::wh1 {
namespace fs = std::filesystem;

namespace {

std::map<std::string, std::string> gitBytes(const fs::path& ws) {
  const fs::path git = ws / ".git";
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(git, ec))) return {};
  return userDirBytes(git);  // every entry of the .git directory
}

}  // namespace

std::string userGitProblem(const fs::path& templateWs, const fs::path& ws) {
  std::map<std::string, std::string> want = gitBytes(templateWs), got = gitBytes(ws);
  if (want.empty()) return "the template workspace has no .git";
  // RC h's marker line, added once to info/exclude (the only write a run makes under .git).
  std::string& exclude = want["info/exclude"];
  if (!exclude.empty() && exclude.back() != '\n') exclude += '\n';
  exclude += ".maka-workspace.json\n";
  want["info/"] = "";
  for (const auto& [rel, bytes] : want) {
    auto it = got.find(rel);
    if (it == got.end()) return "the user's .git/" + rel + " is gone";
    if (it->second != bytes) return "the user's .git/" + rel + " changed";
  }
  for (const auto& [rel, bytes] : got)
    if (!want.count(rel)) return "the user's .git/" + rel + " appeared";
  return "";
}

}  // namespace crashsim::harness::wh1
