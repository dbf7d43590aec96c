#include "crashsim/harness/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "crashsim/build_paths.h"
#include "crashsim/error.h"

namespace crashsim::harness {
namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

Scenario fromSpec(crashsim::Scenario spec, const std::filesystem::path& file) {
  Scenario s;
  s.id = spec.id;
  s.description = spec.description;
  s.file = file;
  s.tools = spec.tools;
  for (size_t step = 0; step < spec.model.size(); ++step) {
    const auto& calls = spec.model[step].calls;
    if (!calls.empty()) ++s.toolSteps;
    for (size_t k = 0; k < calls.size(); ++k) {
      ScenarioCall call;
      call.id = calls[k].id;
      call.name = calls[k].name;
      call.step = step;
      call.indexInStep = k;
      call.expectError = contains(spec.expect.errorCalls, call.id);
      const bool fileTool = call.name == "Write" || call.name == "Edit";
      call.refused = !contains(spec.tools, call.name) || contains(spec.deny, call.name) ||
                     (fileTool && call.expectError);
      s.calls.push_back(std::move(call));
    }
  }
  s.spec = std::move(spec);
  return s;
}

}  // namespace

Scenario loadScenario(const std::filesystem::path& file) {
  try {
    return fromSpec(crashsim::loadScenario(file), file);
  } catch (const crashsim::Error& e) {
    throw std::runtime_error(e.code() + ": " + e.what() +
                             (e.path().empty() ? "" : " at " + e.path()));
  }
}

std::vector<Scenario> loadScenarioDir(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error("scenario directory " + dir.string() + " does not exist");
  try {
    std::vector<Scenario> out;
    for (auto& spec : crashsim::loadScenarioDirectory(dir)) {
      const std::filesystem::path file = spec.source;
      out.push_back(fromSpec(std::move(spec), file));
    }
    return out;
  } catch (const crashsim::Error& e) {
    throw std::runtime_error(e.code() + ": " + e.what() +
                             (e.path().empty() ? "" : " at " + e.path()));
  }
}

std::filesystem::path defaultScenarioDir() {
  if (const char* env = std::getenv("CRASHSIM_SCENARIOS"); env && *env) return env;
  return std::filesystem::path(CRASHSIM_SOURCE_DIR) / "scenarios";
}

}  // namespace crashsim::harness
