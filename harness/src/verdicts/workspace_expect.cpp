// The harness's own workspace expectations (workspace_expect.h).
#include "verdicts/workspace_expect.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace crashsim::harness::workspace {
namespace fs = std::filesystem;
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "" when `rel` is a regular file (not a symlink) holding exactly `bytes`.
std::string fileProblem(const fs::path& root, const std::string& rel, const std::string& bytes) {
  std::error_code ec;
  const auto st = fs::symlink_status(root / rel, ec);
  if (ec || !fs::exists(st)) return rel + " is missing";
  if (fs::is_symlink(st)) return rel + " is a symlink, expected a regular file";
  if (!fs::is_regular_file(st)) return rel + " is not a regular file";
  if (slurp(root / rel) != bytes) return rel + " differs from the expected content";
  return "";
}

std::string absentProblem(const fs::path& root, const std::string& rel) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(root / rel, ec)) ? rel + " exists, expected absent" : "";
}

}  // namespace

bool isToolTempFile(const std::string& relPath) {
  static const std::regex re(R"((^|/)\.[^/]+\.toolop_[0-9a-f]+\.tmp$)");
  return std::regex_search(relPath, re);
}

std::vector<std::string> expectedProblems(const crashsim::Scenario& s, const fs::path& ws) {
  std::vector<std::string> out;
  for (const auto& [rel, bytes] : s.expect.files)
    if (auto p = fileProblem(ws, rel, bytes); !p.empty()) out.push_back(p);
  for (const auto& rel : s.expect.absent)
    if (auto p = absentProblem(ws, rel); !p.empty()) out.push_back(p);
  return out;
}

bool afterCrashApplies(const crashsim::Scenario& s, std::string_view failpoint) {
  if (!s.afterCrash) return false;
  const auto& fps = s.afterCrash->failpoints;
  return std::find(fps.begin(), fps.end(), failpoint) != fps.end();
}

void applyAfterCrash(const crashsim::Scenario& s, const fs::path& ws) {
  if (!s.afterCrash) return;
  for (const auto& m : s.afterCrash->mutations) {
    const fs::path p = ws / m.path;
    std::error_code ec;
    if (m.op == "delete") {  // a file, a symlink (not what it names) or a directory tree
      fs::remove_all(p, ec);
      if (ec)
        throw std::runtime_error(fmt::format("afterCrash delete {}: {}", m.path, ec.message()));
    } else if (m.op == "write") {
      fs::remove(p, ec);  // replace, never write through a symlink
      fs::create_directories(p.parent_path());
      std::ofstream out(p, std::ios::binary | std::ios::trunc);
      out << m.content;
      if (!out) throw std::runtime_error("afterCrash write " + m.path + " failed");
    } else if (m.op == "symlink") {
      fs::remove(p, ec);
      fs::create_directories(p.parent_path());
      fs::create_symlink(m.target, p, ec);
      if (ec)
        throw std::runtime_error(fmt::format("afterCrash symlink {}: {}", m.path, ec.message()));
    } else {
      throw std::runtime_error("afterCrash: unknown op " + m.op);
    }
  }
}

std::vector<std::string> afterCrashProblems(const crashsim::Scenario& s, const fs::path& ws) {
  std::vector<std::string> out;
  if (!s.afterCrash) return out;
  for (const auto& [rel, bytes] : s.afterCrash->files)
    if (auto p = fileProblem(ws, rel, bytes); !p.empty()) out.push_back(p);
  for (const auto& rel : s.afterCrash->absent)
    if (auto p = absentProblem(ws, rel); !p.empty()) out.push_back(p);
  for (const auto& [rel, target] : s.afterCrash->symlinks) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(ws / rel, ec)))
      out.push_back(rel + " is not a symlink");
    else if (fs::read_symlink(ws / rel, ec).string() != target)
      out.push_back(rel + " links elsewhere than " + target);
  }
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(ws, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const std::string rel = fs::relative(it->path(), ws).generic_string();
    if (isToolTempFile(rel)) out.push_back("leftover tool temp file " + rel);
  }
  return out;
}

}  // namespace crashsim::harness::workspace
