// The scenario "afterCrash" block: parser, the harness-side mutation and its check
// (crashsim/scenario.h, scenarios/README.md).
#include "agent/scenario_after_crash.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/workspace.h"

namespace crashsim {
namespace fs = std::filesystem;

namespace detail {
namespace {

struct Checker {
  std::string source;
  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw Error(code::scenario_invalid, source + ": " + path + ": " + why, path);
  }
  void keys(const Json& v, const std::string& path, std::initializer_list<std::string_view> req,
            std::initializer_list<std::string_view> opt) const {
    if (!v.is_object()) fail(path, "must be an object");
    for (auto k : req) {
      if (!v.contains(std::string(k))) fail(path, "missing key '" + std::string(k) + "'");
    }
    for (const auto& [k, _] : v.items()) {
      if (std::find(req.begin(), req.end(), k) == req.end() &&
          std::find(opt.begin(), opt.end(), k) == opt.end()) {
        fail(path + "." + k, "unknown key");
      }
    }
  }
  std::string str(const Json& v, const std::string& path, bool nonEmpty = true) const {
    if (!v.is_string()) fail(path, "must be a string");
    std::string s = v.get<std::string>();
    if (nonEmpty && s.empty()) fail(path, "must not be empty");
    return s;
  }
  std::string relative(const Json& v, const std::string& path) const {
    std::string p = str(v, path);
    if (p.front() == '/') fail(path, "must be a relative path");
    for (const auto& part : fs::path(p)) {
      if (part == "..") fail(path, "must not contain '..'");
    }
    if (fs::path(p).filename() == std::string(kWorkspaceMarkerName)) {
      fail(path, "must not name the workspace marker");
    }
    return p;
  }
};

}  // namespace

AfterCrash parseAfterCrash(const Json& v, const std::string& source) {
  Checker c{source};
  const std::string base = "$.afterCrash";
  c.keys(v, base, {"failpoints", "mutations", "expect"}, {});
  AfterCrash out;
  const Json& fps = v["failpoints"];
  if (!fps.is_array() || fps.empty()) c.fail(base + ".failpoints", "must be a non-empty array");
  static const std::regex fpRe("^P([0-9]|1[01])$");
  for (size_t i = 0; i < fps.size(); ++i) {
    const std::string p = base + ".failpoints[" + std::to_string(i) + "]";
    std::string fp = c.str(fps[i], p);
    if (!std::regex_match(fp, fpRe)) c.fail(p, "must be a failpoint id P0..P11");
    if (std::find(out.failpoints.begin(), out.failpoints.end(), fp) != out.failpoints.end()) {
      c.fail(p, "duplicate failpoint " + fp);
    }
    out.failpoints.push_back(fp);
  }
  const Json& muts = v["mutations"];
  if (!muts.is_array() || muts.empty()) c.fail(base + ".mutations", "must be a non-empty array");
  for (size_t i = 0; i < muts.size(); ++i) {
    const std::string p = base + ".mutations[" + std::to_string(i) + "]";
    if (!muts[i].is_object() || !muts[i].contains("op")) c.fail(p, "missing key 'op'");
    AfterCrashMutation m;
    m.op = c.str(muts[i]["op"], p + ".op");
    if (m.op == "write") {
      c.keys(muts[i], p, {"op", "path", "content"}, {});
      m.content = c.str(muts[i]["content"], p + ".content", false);
    } else if (m.op == "delete") {
      c.keys(muts[i], p, {"op", "path"}, {});
    } else if (m.op == "symlink") {
      c.keys(muts[i], p, {"op", "path", "target"}, {});
      m.target = c.str(muts[i]["target"], p + ".target");
    } else {
      c.fail(p + ".op", "must be write, delete or symlink");
    }
    m.path = c.relative(muts[i]["path"], p + ".path");
    out.mutations.push_back(std::move(m));
  }
  const std::string ep = base + ".expect";
  const Json& ex = v["expect"];
  c.keys(ex, ep, {"parkedReason"}, {"files", "absent", "symlinks"});
  out.parkedReason = c.str(ex["parkedReason"], ep + ".parkedReason");
  if (out.parkedReason != code::reconcile_matches_prior_state &&
      out.parkedReason != code::reconcile_diverged &&
      out.parkedReason != code::reconcile_unreadable) {
    c.fail(ep + ".parkedReason",
           "must be reconcile_matches_prior_state, reconcile_diverged or reconcile_unreadable");
  }
  if (ex.contains("files")) {
    if (!ex["files"].is_object()) c.fail(ep + ".files", "must be an object of path → content");
    for (const auto& [k, val] : ex["files"].items()) {
      c.relative(Json(k), ep + ".files." + k);
      out.files[k] = c.str(val, ep + ".files." + k, false);
    }
  }
  if (ex.contains("absent")) {
    if (!ex["absent"].is_array()) c.fail(ep + ".absent", "must be an array of paths");
    for (size_t i = 0; i < ex["absent"].size(); ++i) {
      out.absent.push_back(c.relative(ex["absent"][i], ep + ".absent[" + std::to_string(i) + "]"));
    }
  }
  if (ex.contains("symlinks")) {
    if (!ex["symlinks"].is_object()) c.fail(ep + ".symlinks", "must be an object of path → link");
    for (const auto& [k, val] : ex["symlinks"].items()) {
      c.relative(Json(k), ep + ".symlinks." + k);
      out.symlinks[k] = c.str(val, ep + ".symlinks." + k);
    }
  }
  return out;
}

}  // namespace detail

namespace {

[[noreturn]] void ioFail(const std::string& what) {
  throw Error(code::workspace_io_failed, "afterCrash: " + what + ": " + std::strerror(errno));
}

void removeNonDirectory(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    ioFail("lstat " + p.string());
  }
  if (S_ISDIR(st.st_mode)) {
    throw Error(code::workspace_io_failed, "afterCrash: " + p.string() + " is a directory");
  }
  if (::unlink(p.c_str()) != 0) ioFail("unlink " + p.string());
}

void fsyncDir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::optional<std::string> readRegular(const fs::path& p, std::string& problem) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    problem = errno == ENOENT ? "missing" : errno == ELOOP ? "is a symlink" : "unreadable";
    return std::nullopt;
  }
  std::string bytes;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return bytes;
}

}  // namespace

bool afterCrashApplies(const Scenario& scenario, std::string_view failpoint) {
  if (!scenario.afterCrash) return false;
  const auto& fps = scenario.afterCrash->failpoints;
  return std::find(fps.begin(), fps.end(), failpoint) != fps.end();
}

void applyAfterCrash(const Scenario& scenario, const fs::path& workspace) {
  if (!scenario.afterCrash) return;
  for (const auto& m : scenario.afterCrash->mutations) {
    const fs::path target = workspace / m.path;
    if (m.op == "write") {
      const int fd =
          ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) ioFail("open " + target.string());
      size_t done = 0;
      while (done < m.content.size()) {
        const ssize_t n = ::write(fd, m.content.data() + done, m.content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          ::close(fd);
          ioFail("write " + target.string());
        }
        done += static_cast<size_t>(n);
      }
      ::fsync(fd);
      ::close(fd);
    } else if (m.op == "delete") {
      removeNonDirectory(target);
    } else if (m.op == "symlink") {
      removeNonDirectory(target);
      if (::symlink(m.target.c_str(), target.c_str()) != 0) ioFail("symlink " + target.string());
    } else {
      throw Error(code::scenario_invalid, "afterCrash: unknown op " + m.op);
    }
    fsyncDir(target.parent_path());
  }
}

std::vector<std::string> checkAfterCrashWorkspace(const Scenario& scenario,
                                                  const fs::path& workspace) {
  std::vector<std::string> problems;
  if (!scenario.afterCrash) return problems;
  const AfterCrash& ac = *scenario.afterCrash;
  for (const auto& [rel, content] : ac.files) {
    std::string problem;
    auto bytes = readRegular(workspace / rel, problem);
    if (!bytes) {
      problems.push_back(rel + ": " + problem);
    } else if (*bytes != content) {
      problems.push_back(rel + ": content differs (got " + Json(*bytes).dump() + ", expected " +
                         Json(content).dump() + ")");
    }
  }
  for (const auto& rel : ac.absent) {
    std::error_code ec;
    if (fs::symlink_status(workspace / rel, ec).type() != fs::file_type::not_found) {
      problems.push_back(rel + ": exists but is expected absent");
    }
  }
  for (const auto& [rel, link] : ac.symlinks) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(workspace / rel, ec))) {
      problems.push_back(rel + ": is not a symlink");
    } else if (fs::read_symlink(workspace / rel, ec).string() != link) {
      problems.push_back(rel + ": symlink text differs (expected " + link + ")");
    }
  }
  static const std::regex tempRe("^\\..+\\.toolop_[0-9a-f]+\\.tmp$");
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(workspace, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, tempRe)) {
      problems.push_back(fs::relative(it->path(), workspace).generic_string() +
                         ": leftover tool temp file");
    }
  }
  return problems;
}

}  // namespace crashsim
