// git_cli.cpp — the hermetic git invocation and the git runtime (workspace-continuity-contract.md
// c.2).
#include "checkpoint/git_cli.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/hashing.h"
#include "crashsim/plant.h"
#include "workspace/process.h"

namespace crashsim {

namespace fs = std::filesystem;

namespace checkpoint_detail {

namespace {

constexpr const char* kIdentityName = "crashsim checkpoint";
constexpr const char* kIdentityEmail = "checkpoint@crashsim.invalid";
constexpr const char* kIdentityDate = "946684800 +0000";

std::vector<std::string> configArgs(const fs::path& home) {
  const std::string h =
      home.empty() ? std::string("/nonexistent-crashsim-git-home") : home.string();
  std::vector<std::string> out;
  for (const std::string& kv : {"core.hooksPath=" + h + "/hooks",
                                std::string("core.fsmonitor=false"),
                                std::string("core.untrackedCache=false"),
                                std::string("core.autocrlf=false"),
                                "core.attributesFile=" + h + "/attributes",
                                "core.excludesFile=" + h + "/ignore",
                                std::string("core.filemode=true"),
                                std::string("core.symlinks=true"),
                                std::string("core.ignorecase=false"),
                                std::string("core.trustctime=true"),
                                std::string("core.checkStat=default"),
                                std::string("core.fsync=all"),
                                std::string("core.fsyncMethod=fsync"),
                                std::string("core.logAllRefUpdates=false"),
                                std::string("gc.auto=0"),
                                std::string("maintenance.auto=false"),
                                std::string("protocol.allow=never"),
                                std::string("submodule.recurse=false"),
                                std::string("credential.helper="),
                                std::string("core.sshCommand=")}) {
    out.push_back("-c");
    out.push_back(kv);
  }
  return out;
}

}  // namespace

GitCall carrierCall(const WorkspaceCarrier& carrier, std::vector<std::string> args,
                    std::string stdinData) {
  GitCall c;
  c.args = std::move(args);
  c.env = GitEnv{carrier.gitDir(), {}, {}, {}, {}};
  c.stdinData = std::move(stdinData);
  return c;
}

GitOutput runGit(const GitRuntime& git, const fs::path& gitHome, const GitCall& call) {
  detail::ProcessSpec spec;
  spec.executable = git.binary.string();
  spec.args = configArgs(gitHome);
  spec.args.insert(spec.args.end(), call.args.begin(), call.args.end());
  spec.cwd = !call.cwd.empty() ? call.cwd : !gitHome.empty() ? gitHome : fs::path("/");
  spec.timeout = call.timeout;
  spec.maxOutputBytes = size_t{1} << 30;
  spec.stdinData = call.stdinData;
  // Planted bug git_child_outlives_agent: the child is not tied to its parent's life, so a git
  // killed with the agent's process group spared (its own group) works on (i.3 H5).
  spec.dieWithParent = !planted("git_child_outlives_agent");
  spec.afterSpawn = [] { CRASHSIM_BARRIER(G); };
  const std::string home =
      gitHome.empty() ? std::string("/nonexistent-crashsim-git-home") : gitHome.string();
  std::map<std::string, std::string> env{
      {"PATH", git.binary.parent_path().string()},
      {"HOME", home},
      {"XDG_CONFIG_HOME", home},
      {"GIT_CONFIG_NOSYSTEM", "1"},
      {"GIT_CONFIG_GLOBAL", gitHome.empty() ? "/dev/null" : (gitHome / "gitconfig").string()},
      {"GIT_TERMINAL_PROMPT", "0"},
      {"GIT_OPTIONAL_LOCKS", "0"},
      {"GIT_NO_REPLACE_OBJECTS", "1"},
      {"LANG", "C"},
      {"LC_ALL", "C"},
      {"TZ", "UTC"},
      {"GIT_AUTHOR_NAME", kIdentityName},
      {"GIT_AUTHOR_EMAIL", kIdentityEmail},
      {"GIT_AUTHOR_DATE", kIdentityDate},
      {"GIT_COMMITTER_NAME", kIdentityName},
      {"GIT_COMMITTER_EMAIL", kIdentityEmail},
      {"GIT_COMMITTER_DATE", kIdentityDate}};
  auto set = [&env](const char* name, const fs::path& value) {
    if (!value.empty()) env[name] = fs::absolute(value).string();
  };
  set("GIT_DIR", call.env.gitDir);
  set("GIT_WORK_TREE", call.env.workTree);
  set("GIT_INDEX_FILE", call.env.indexFile);
  set("GIT_OBJECT_DIRECTORY", call.env.objectDir);
  set("GIT_ALTERNATE_OBJECT_DIRECTORIES", call.env.alternates);
  spec.env = std::move(env);
  const detail::ProcessResult r = detail::runProcess(spec);
  GitOutput out;
  out.exitCode = r.exitCode;
  out.out = r.out;
  out.err = r.err;
  const std::string sub = call.args.empty() ? "" : call.args.front();
  if (!r.started) {
    out.failure = "git " + sub + " did not start: " + r.spawnError;
  } else if (r.timedOut) {
    out.failure = "git " + sub + " did not finish within " + std::to_string(call.timeout.count()) +
                  " ms (its process group was killed)";
  } else if (r.exitCode != 0) {
    std::string err = r.err.substr(0, r.err.find('\n'));
    out.failure = "git " + sub + " exited " + std::to_string(r.exitCode) + ": " + err;
  } else {
    out.ok = true;
  }
  return out;
}

std::string gitOk(std::string_view code, std::string_view detail, const GitRuntime& git,
                  const fs::path& gitHome, const GitCall& call) {
  GitOutput r = runGit(git, gitHome, call);
  if (!r.ok) throw CarrierError(code, std::string(detail), r.failure);
  return std::move(r.out);
}

std::vector<std::string> splitNul(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const auto at = text.find('\0');
    out.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return out;
}

}  // namespace checkpoint_detail

std::optional<std::array<int, 3>> parseGitVersion(std::string_view text) {
  constexpr std::string_view kPrefix = "git version ";
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  text.remove_prefix(kPrefix.size());
  std::array<int, 3> v{};
  for (int i = 0; i < 3; ++i) {
    size_t n = 0;
    while (n < text.size() && text[n] >= '0' && text[n] <= '9' && n < 6) ++n;
    if (n == 0) return std::nullopt;
    v[static_cast<size_t>(i)] = std::stoi(std::string(text.substr(0, n)));
    text.remove_prefix(n);
    if (i < 2) {
      if (text.empty() || text.front() != '.') return std::nullopt;
      text.remove_prefix(1);
    }
  }
  return v;
}

GitRuntime resolveGitRuntime(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, GitRuntime> resolved;  // once per host process (c.2)
  std::lock_guard lk(mu);
  if (auto it = resolved.find(name); it != resolved.end()) return it->second;
  fs::path binary;
  if (name.find('/') != std::string::npos) {
    binary = fs::absolute(name);
  } else if (const char* path = std::getenv("PATH")) {
    std::string_view rest(path);
    while (binary.empty() && !rest.empty()) {
      const auto colon = rest.find(':');
      const fs::path dir(std::string(rest.substr(0, colon)));
      if (!dir.empty() && ::access((dir / name).c_str(), X_OK) == 0) binary = dir / name;
      if (colon == std::string_view::npos) break;
      rest.remove_prefix(colon + 1);
    }
  }
  std::error_code ec;
  if (binary.empty() || !fs::is_regular_file(binary, ec) || ::access(binary.c_str(), X_OK) != 0)
    throw CarrierError(code::git_binary_unavailable, "",
                       "no git executable named " + name + " was found");
  binary = fs::canonical(binary, ec);
  GitRuntime rt{binary, "", ""};
  checkpoint_detail::GitCall call;
  call.args = {"version"};
  call.timeout = std::chrono::seconds(10);
  const auto r = checkpoint_detail::runGit(rt, {}, call);
  if (!r.ok) throw CarrierError(code::git_binary_unavailable, "", r.failure);
  std::string text = r.out.substr(0, r.out.find('\n'));
  const auto v = parseGitVersion(text);
  if (!v || *v < std::array<int, 3>{2, 36, 0})
    throw CarrierError(code::git_version_unsupported, "",
                       "'" + text + "' is not git 2.36.0 or later (core.fsync)");
  rt.version = text.substr(std::string_view("git version ").size());
  std::ifstream in(binary, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  rt.binarySha256 = sha256Digest(bytes.str());
  resolved[name] = rt;
  return rt;
}

}  // namespace crashsim
