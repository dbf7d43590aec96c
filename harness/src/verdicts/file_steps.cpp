// The order of the file-replace durability steps (verdicts/file_steps.h).
#include "verdicts/file_steps.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace crashsim::harness {
namespace fs = std::filesystem;

namespace {

struct Step {
  std::string op, path, to;
};

std::string dirOf(const std::string& path) { return fs::path(path).parent_path().string(); }

}  // namespace

std::string fileReplaceOrderProblem(const fs::path& traceFile) {
  std::ifstream in(traceFile, std::ios::binary);
  if (!in) return "the agent wrote no file-step trace (" + traceFile.string() + ")";
  std::vector<Step> steps;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("op") || !j.contains("path"))
      return "unreadable file-step trace line: " + line.substr(0, 120);
    steps.push_back(
        {j["op"].get<std::string>(), j["path"].get<std::string>(), j.value("to", std::string())});
  }
  std::map<std::string, size_t> created;  // path → index of its latest create
  std::map<std::string, size_t> synced;   // path → index of its latest fsyncFile
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.op == "create") created[s.path] = i;
    if (s.op == "fsyncFile") synced[s.path] = i;
    if (s.op != "rename") continue;
    auto c = created.find(s.path);
    auto f = synced.find(s.path);
    if (c == created.end())
      return fmt::format("step {}: rename of {}, which this run never created", i + 1, s.path);
    if (f == synced.end() || f->second < c->second)
      return fmt::format(
          "step {}: rename {} → {} before the temp file's bytes were fsynced (a power cut may "
          "keep the new name over lost data)",
          i + 1, s.path, s.to);
    // The directories of both names, synced after the rename and before the next create.
    std::set<std::string> dirs = {dirOf(s.to), dirOf(s.path)};
    for (size_t k = i + 1; k < steps.size() && !dirs.empty(); ++k) {
      if (steps[k].op == "create") break;
      if (steps[k].op == "fsyncDir") dirs.erase(steps[k].path);
    }
    if (!dirs.empty())
      return fmt::format(
          "step {}: rename {} → {} is never made durable: no fsync of {} after it, before the "
          "next file is created or the run ends",
          i + 1, s.path, s.to, *dirs.begin());
  }
  return "";
}

}  // namespace crashsim::harness
