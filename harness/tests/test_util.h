// Helpers for harness tests that run the real binaries.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "crashsim/build_paths.h"

namespace crashsim::harness::test {

inline std::filesystem::path crashsimBinary() {
  return std::filesystem::path(CRASHSIM_BINARY_DIR) / "harness" / "crashsim";
}
// The harness linked with the instrumented runtime (planted-fault tests only).
inline std::filesystem::path plantedBinary() {
  return std::filesystem::path(CRASHSIM_BINARY_DIR) / "harness" / "crashsim-planted";
}
inline std::filesystem::path agentBinary() {
  return std::filesystem::path(CRASHSIM_BINARY_DIR) / "runtime" / "crashsim-agent";
}

struct Cmd {
  int exitCode = -1;
  std::string out;
};

// Runs a shell command line, capturing stdout; stderr goes to the test log.
inline Cmd sh(const std::string& line) {
  Cmd r;
  FILE* p = ::popen(line.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::filesystem::path freshDir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Seeds `dir`/ws and runs the built-in scenario `id` to the end with the real agent into
// `dir`/store; returns the store directory ("" when either step failed).
inline std::filesystem::path completedRun(const std::filesystem::path& dir, const std::string& id) {
  const auto file = std::filesystem::path(CRASHSIM_SOURCE_DIR) / "scenarios" / (id + ".json");
  const std::string agent = agentBinary().string();
  if (sh(agent + " seed --workspace " + (dir / "ws").string() + " --scenario " + file.string())
          .exitCode != 0)
    return {};
  if (sh(agent + " run --store " + (dir / "store").string() + " --workspace " +
         (dir / "ws").string() + " --scenario " + file.string() + " >/dev/null")
          .exitCode != 0)
    return {};
  return dir / "store";
}

// The crashsim binary as a shell command word.
inline std::string cs() { return crashsimBinary().string(); }

// A JSON file's document.
inline nlohmann::json loadJson(const std::filesystem::path& p) {
  return nlohmann::json::parse(slurp(p));
}

// Whether any of `lines` contains `text`.
inline bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& l) { return l.find(text) != std::string::npos; });
}

}  // namespace crashsim::harness::test
