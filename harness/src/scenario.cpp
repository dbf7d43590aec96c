#include "crashsim/harness/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace crashsim::harness {

Scenario loadScenario(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read scenario " + file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  Scenario s;
  s.file = file;
  try {
    s.json = nlohmann::json::parse(ss.str());
    s.id = s.json.at("id").get<std::string>();
    s.description = s.json.value("description", "");
    if (s.json.contains("tools"))
      for (const auto& t : s.json.at("tools"))
        s.tools.push_back(t.is_string() ? t.get<std::string>() : t.at("name").get<std::string>());
    if (s.json.contains("permissions") && s.json.at("permissions").contains("deny"))
      s.deny = s.json.at("permissions").at("deny").get<std::vector<std::string>>();
    size_t step = 0;
    for (const auto& m : s.json.at("model")) {
      size_t k = 0;
      if (m.contains("calls")) {
        for (const auto& c : m.at("calls")) {
          ScenarioCall call;
          call.id = c.at("id").get<std::string>();
          call.name = c.at("name").get<std::string>();
          call.args = c.value("args", nlohmann::json::object());
          call.step = step;
          call.indexInStep = k++;
          bool offered = std::find(s.tools.begin(), s.tools.end(), call.name) != s.tools.end();
          bool denied = std::find(s.deny.begin(), s.deny.end(), call.name) != s.deny.end();
          call.refused = !offered || denied;
          s.calls.push_back(std::move(call));
        }
      }
      ++step;
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("scenario " + file.string() + ": " + e.what());
  }
  if (s.id.empty() || s.id.find('/') != std::string::npos)
    throw std::runtime_error("scenario " + file.string() + ": id must be non-empty without '/'");
  return s;
}

std::vector<Scenario> loadScenarioDir(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error("scenario directory " + dir.string() + " does not exist");
  std::vector<Scenario> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json")
      out.push_back(loadScenario(e.path()));
  std::sort(out.begin(), out.end(),
            [](const Scenario& a, const Scenario& b) { return a.id < b.id; });
  return out;
}

std::filesystem::path defaultScenarioDir() {
  if (const char* env = std::getenv("CRASHSIM_SCENARIOS"); env && *env) return env;
  return std::filesystem::path(CRASHSIM_SOURCE_DIR) / "scenarios";
}

}  // namespace crashsim::harness
