// The verdict record and the shared readers (verdicts/verdict.h).
#include "verdicts/verdict.h"

#include <fstream>
#include <sstream>

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string lastLine(const fs::path& p) {
  std::string s = readFile(p);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  auto nl = s.rfind('\n');
  std::string line = nl == std::string::npos ? s : s.substr(nl + 1);
  if (line.size() > 300) line = line.substr(0, 300) + "…";
  return line;
}

bool isTerminalStatus(const std::string& s) {
  return s == "completed" || s == "failed" || s == "cancelled";
}

std::string headerStatusOfTerminal(const RuntimeEvent& e) {
  if (!e.status) return "failed";
  switch (*e.status) {
    case EventStatus::completed:
      return "completed";
    case EventStatus::failed:
      return "failed";
    case EventStatus::aborted:
    case EventStatus::cancelled:
      return "cancelled";
    default:
      return "failed";
  }
}

std::vector<RuntimeEvent> eventsOf(const RuntimeStore& store, const RunHeader& h) {
  std::vector<RuntimeEvent> out;
  for (auto& se : store.readRunEvents(h.sessionId, h.runId)) out.push_back(std::move(se.event));
  return out;
}

void copyDir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

}  // namespace crashsim::harness
