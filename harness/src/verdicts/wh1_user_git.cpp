// WH1: the user's .git byte-identical (wh1_user_git.h).
#include "verdicts/wh1_user_git.h"

#include <fstream>
#include <map>
#include <sstream>

#include "verdicts/wh1_user_dir.h"

namespace crashsim::harness::wh1 {
namespace fs = std::filesystem;

namespace {

// Every entry of the repository directories of `ws`, keyed by its path from `ws`: the user's
// `.git/…` and each submodule's `<path>/.git/…` (its directory's entries, or a gitfile's bytes).
// The walk does not descend into a `.git`.
std::map<std::string, std::string> gitBytes(const fs::path& ws) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(ws / ".git", ec))) return out;
  for (auto it = fs::recursive_directory_iterator(ws, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->path().filename() != ".git") continue;
    const std::string rel = fs::relative(it->path(), ws).string();
    if (it->is_symlink()) {
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
    } else if (it->is_directory()) {
      it.disable_recursion_pending();
      out[rel + "/"] = "";
      for (auto& [inner, bytes] : userDirBytes(it->path())) out[rel + "/" + inner] = bytes;
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      out[rel] = s.str();
    }
  }
  return out;
}

}  // namespace

std::string userGitProblem(const fs::path& templateWs, const fs::path& ws) {
  std::map<std::string, std::string> want = gitBytes(templateWs), got = gitBytes(ws);
  if (want.empty()) return "the template workspace has no .git";
  // RC h's marker line, added once to info/exclude (the only write a run makes under .git).
  std::string& exclude = want[".git/info/exclude"];
  if (!exclude.empty() && exclude.back() != '\n') exclude += '\n';
  exclude += ".maka-workspace.json\n";
  want[".git/info/"] = "";
  for (const auto& [rel, bytes] : want) {
    auto it = got.find(rel);
    if (it == got.end()) return "the user's " + rel + " is gone";
    if (it->second != bytes) return "the user's " + rel + " changed";
  }
  for (const auto& [rel, bytes] : got)
    if (!want.count(rel)) return "the user's " + rel + " appeared";
  return "";
}

}  // namespace crashsim::harness::wh1
