// WH1's work-tree half: the user's whole directory byte-identical (wh1_user_dir.h).
#include "verdicts/wh1_user_dir.h"

#include <fstream>
#include <sstream>

namespace crashsim::harness::wh1 {
namespace fs = std::filesystem;

std::map<std::string, std::string> userDirBytes(const fs::path& dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), dir).string();
    if (it->is_symlink()) {
      out[rel] = "-> " + fs::read_symlink(it->path()).string();
    } else if (it->is_regular_file()) {
      std::ifstream in(it->path(), std::ios::binary);
      std::ostringstream s;
      s << in.rdbuf();
      out[rel] = s.str();
    } else if (it->is_directory()) {
      out[rel + "/"] = "";
    }
  }
  return out;
}

std::string userDirProblem(const std::map<std::string, std::string>& before, const fs::path& dir) {
  const auto now = userDirBytes(dir);
  for (const auto& [rel, bytes] : before) {
    auto it = now.find(rel);
    if (it == now.end()) return "the user's " + rel + " is gone";
    if (it->second != bytes) return "the user's " + rel + " changed";
  }
  for (const auto& [rel, bytes] : now)
    if (!before.count(rel)) return "the user's " + rel + " appeared";
  return "";
}

}  // namespace crashsim::harness::wh1
