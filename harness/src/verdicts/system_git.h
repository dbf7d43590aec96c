// system_git.h — the harness's own reader of a store's carrier (workspace-continuity-contract.md
// i.3): the system git CLI, never the runtime's hermetic git code, so a verdict does not trust
// what it judges. Internal to the verdict rooms (WH2, WH7).
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

namespace crashsim::harness::verdict_detail {

// `s` as one single-quoted shell word.
inline std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `git --git-dir=<carrier> <args>` (args already shell words) without any user or system
// configuration: whether it exited 0, and its stdout without trailing newlines.
inline std::pair<bool, std::string> carrierGit(const std::filesystem::path& carrier,
                                               const std::string& args) {
  const std::string cmd =
      "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent "
      "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git --git-dir=" +
      shellQuote(carrier.string()) + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  if (!p) return {false, ""};
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
  const int rc = ::pclose(p.release());
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return {rc == 0, out};
}

}  // namespace crashsim::harness::verdict_detail
