// The scenario "afterCrash" block: its strict parser (crashsim/scenario.h, scenarios/README.md).
// Applying it and checking the workspace after recovery are the harness's
// (harness/src/verdicts/workspace_expect.h).
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
  // Workspace continuity f / g: the drift before an isolated restore's recovery (P23..P26) or
  // before the recovery the user confirms a rebaseline in (P27..P29): all or none of the list, one
  // kind, expect.parkedReason workspace_drifted.
  static const std::regex restoreRe("^P2[3-6]$");
  static const std::regex rebaselineRe("^P2[7-9]$");
  size_t restorePoints = 0, rebaselinePoints = 0;
  for (size_t i = 0; i < fps.size(); ++i) {
    const std::string p = base + ".failpoints[" + std::to_string(i) + "]";
    std::string fp = c.str(fps[i], p);
    if (std::regex_match(fp, restoreRe))
      ++restorePoints;
    else if (std::regex_match(fp, rebaselineRe))
      ++rebaselinePoints;
    else if (!std::regex_match(fp, fpRe))
      c.fail(p,
             "must be a failpoint id P0..P11, P23..P26 (an isolated restore) or P27..P29 (a "
             "confirmed rebaseline)");
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
  if (restorePoints > 0 && restorePoints != out.failpoints.size())
    c.fail(base + ".failpoints", "P23..P26 (an isolated restore) cannot mix with other points");
  if (rebaselinePoints > 0 && rebaselinePoints != out.failpoints.size())
    c.fail(base + ".failpoints", "P27..P29 (a confirmed rebaseline) cannot mix with other points");
  const bool workspacePoints = restorePoints + rebaselinePoints > 0;
  if (workspacePoints && out.parkedReason != code::workspace_drifted)
    c.fail(ep + ".parkedReason",
           "must be workspace_drifted before an isolated restore (P23..P26) or a confirmed "
           "rebaseline (P27..P29)");
  if (!workspacePoints && out.parkedReason != code::reconcile_matches_prior_state &&
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

}  // namespace crashsim
