// The production runtime library and the production `crashsim` CLI contain no failpoint code:
// no crashsim::failpoints::hit symbol (defined or referenced), no trigger code and no
// CRASHSIM_ARM handling. The instrumented library does contain them (so this test can fail).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "crashsim/build_paths.h"

namespace fs = std::filesystem;

namespace {

const fs::path kBin = CRASHSIM_BINARY_DIR;

std::string nm(const fs::path& file) {
  const std::string cmd = "nm -C '" + file.string() + "' 2>/dev/null";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

std::string bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST(ProductionBuild, RuntimeLibraryHasNoFailpointSymbolsOrArmingCode) {
  const fs::path lib = kBin / "runtime" / "libcrashsim_runtime.a";
  ASSERT_TRUE(fs::exists(lib)) << lib;
  const std::string symbols = nm(lib);
  ASSERT_FALSE(symbols.empty());
  EXPECT_FALSE(contains(symbols, "crashsim::failpoints::hit"));
  EXPECT_FALSE(contains(symbols, "crashsim::failpoints::initFromEnvironment"));
  EXPECT_FALSE(contains(bytes(lib), "CRASHSIM_ARM"));
  EXPECT_FALSE(contains(bytes(lib), "crashsim failpoint trigger"));
  // Nor the power-loss VFS (issue 9): only the instrumented agent links crashsim_powerloss.
  EXPECT_FALSE(contains(symbols, "crashsim::powerloss::"));
  EXPECT_FALSE(contains(bytes(lib), "crashsim-powerloss"));
}

TEST(ProductionBuild, InstrumentedLibraryDoesContainFailpointCode) {
  const fs::path lib = kBin / "runtime" / "libcrashsim_runtime_fp.a";
  const fs::path trigger = kBin / "failpoints" / "libcrashsim_failpoint_trigger.a";
  ASSERT_TRUE(fs::exists(lib)) << lib;
  ASSERT_TRUE(fs::exists(trigger)) << trigger;
  EXPECT_TRUE(contains(nm(lib), "crashsim::failpoints::hit"));
  EXPECT_TRUE(contains(nm(trigger), "crashsim::failpoints::hit"));
  EXPECT_TRUE(contains(bytes(trigger), "CRASHSIM_ARM"));
  // The instrumented agent binary links the trigger.
  const fs::path agent = kBin / "runtime" / "crashsim-agent";
  ASSERT_TRUE(fs::exists(agent)) << agent;
  EXPECT_TRUE(contains(nm(agent), "crashsim::failpoints::hit"));
  EXPECT_TRUE(contains(bytes(agent), "crashsim failpoint trigger"));
  EXPECT_TRUE(contains(nm(agent), "crashsim::powerloss::installFromEnvironment"));
}

TEST(ProductionBuild, CrashsimCliHasNoTriggerCode) {
  // The CLI sets CRASHSIM_ARM for its children, so that string may appear; the trigger may not.
  const fs::path cli = kBin / "harness" / "crashsim";
  ASSERT_TRUE(fs::exists(cli)) << cli;
  const std::string symbols = nm(cli);
  ASSERT_FALSE(symbols.empty()) << "crashsim is stripped; cannot check symbols";
  EXPECT_FALSE(contains(symbols, "crashsim::failpoints::hit"));
  EXPECT_FALSE(contains(symbols, "crashsim::failpoints::initFromEnvironment"));
  EXPECT_FALSE(contains(bytes(cli), "crashsim failpoint trigger"));
  EXPECT_FALSE(contains(symbols, "crashsim::powerloss::"));
}
