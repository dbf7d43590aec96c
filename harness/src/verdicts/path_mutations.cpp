// The generated path-component mutations (path_mutations.h).
#include "verdicts/path_mutations.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "crashsim/codes.h"
#include "crashsim/harness/oracle.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness::pathmut {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kDecoySuffix = ".decoy";
constexpr std::string_view kKeptName = "kept.txt";
constexpr std::string_view kKeptBytes = "a directory in the file's place\n";
constexpr std::string_view kFileBytes = "a file in the directory's place\n";
constexpr std::string_view kMovedRoot = "ws.moved";

// The armed file call of a kill, with its target's states from the scenario alone.
struct Target {
  size_t call = 0;
  std::string path;                   // workspace-relative, '/' separated
  std::optional<std::string> before;  // nullopt: the call creates the file
  std::string after;                  // the expected-after bytes
};

const ScriptedCall& scriptedCall(const Scenario& s, size_t i) {
  return s.spec.model[s.calls[i].step].calls[s.calls[i].indexInStep];
}

// Replays the seed and the scenario's Write/Edit calls before call `k` (Bash calls are not
// modelled: a target they touch is refused by the Edit check below, or would show as a V8
// failure of the reference-equal finish, never as a silently weaker expectation).
Target targetOf(const Scenario& s, size_t k) {
  Target t;
  t.call = k;
  t.path = scriptedCall(s, k).args.value("path", "");
  std::map<std::string, std::string> files = s.spec.files;
  auto step = [&](size_t i, std::map<std::string, std::string>& fsState) {
    const ScriptedCall& c = scriptedCall(s, i);
    const std::string path = c.args.value("path", "");
    if (c.name == "Write") {
      fsState[path] = c.args.value("content", "");
      return;
    }
    const std::string oldS = c.args.value("old_string", ""), newS = c.args.value("new_string", "");
    auto it = fsState.find(path);
    const size_t at = it == fsState.end() ? std::string::npos : it->second.find(oldS);
    if (at == std::string::npos || oldS.empty() ||
        it->second.find(oldS, at + oldS.size()) != std::string::npos)
      throw std::runtime_error(fmt::format(
          "path mutations: scenario {} call {}: the scenario does not determine the bytes the "
          "Edit of {} starts from (no seed or earlier Write/Edit holds old_string once); sweep it "
          "with --path-mutations off",
          s.id, c.id, path));
    it->second.replace(at, oldS.size(), newS);
  };
  for (size_t i = 0; i < k; ++i)
    if (s.calls[i].writesFile()) step(i, files);
  if (auto it = files.find(t.path); it != files.end()) t.before = it->second;
  step(k, files);
  t.after = files[t.path];
  return t;
}

// The armed Write/Edit of the kill (failpoint, hit) when recovery reconciles it.
std::optional<Target> reconciledTarget(const Scenario& s, CrashPoint fp, int hit) {
  if (fp < points::P2 || fp > points::P5 || s.spec.legacyStore) return std::nullopt;
  const CaseExpectation x = expectCase(s, fp, hit);
  if (!x.ok || !x.armedCall || !s.calls[*x.armedCall].writesFile()) return std::nullopt;
  if (predictedRecoveryHits(s, fp, hit)[points::P10] != 1)
    return std::nullopt;  // no bundle: no reconcile
  return targetOf(s, *x.armedCall);
}

// The target's components, innermost first, without the root.
std::vector<std::string> componentsOf(const std::string& path) {
  std::vector<std::string> out;
  for (std::string p = path; !p.empty();) {
    out.push_back(p);
    const auto slash = p.rfind('/');
    p = slash == std::string::npos ? "" : p.substr(0, slash);
  }
  return out;
}

std::string baseName(const std::string& rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

std::string decoyOf(const std::string& component) { return component + std::string(kDecoySuffix); }

void writeFile(const fs::path& p, std::string_view bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("path mutation: cannot write " + p.string());
}

bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

}  // namespace

std::vector<std::pair<CrashPoint, int>> mutationPoints(const Scenario& s, bool allPoints) {
  std::vector<std::pair<CrashPoint, int>> out;
  if (s.spec.legacyStore) return out;  // swept at its import only (plan.cpp)
  const auto hits = predictedHits(s);
  for (CrashPoint fp : pointRange(points::P2, points::P5)) {
    if (!allPoints && fp != points::P4) continue;
    for (int h = 1; h <= hits[fp]; ++h)
      if (reconciledTarget(s, fp, h)) out.emplace_back(fp, h);
  }
  return out;
}

std::vector<PathMutation> variantsAt(const Scenario& s, CrashPoint fp, int hit, bool allPoints) {
  std::vector<PathMutation> out;
  if (!allPoints && fp != points::P4) return out;
  const auto t = reconciledTarget(s, fp, hit);
  if (!t) return out;
  const auto comps = componentsOf(t->path);
  for (size_t i = 0; i < comps.size(); ++i)
    for (const char* m : {"symlink", i == 0 ? "dir" : "file", "remove"})
      out.push_back({comps[i], m});
  const auto at = mutationPoints(s, false);  // the root: at the first P4 point only
  if (!at.empty() && at.front() == std::make_pair(fp, hit))
    for (const char* m : {"symlink", "file", "remove"}) out.push_back({".", m});
  return out;
}

Expectation expect(const Scenario& s, const CaseId& id) {
  if (!id.pathMutation) throw std::runtime_error("path mutations: " + id.str() + " names none");
  const PathMutation& m = *id.pathMutation;
  const auto variants = variantsAt(s, id.failpoint, id.hit, true);
  if (std::find(variants.begin(), variants.end(), m) == variants.end())
    throw std::runtime_error(fmt::format(
        "path mutations: {} is not a generated mutation of scenario {} (the component must be on "
        "the path of the Write/Edit the kill leaves to reconcile; the root . only at the first "
        "such kill; a file takes symlink|dir|remove, a directory symlink|file|remove)",
        id.str(), s.id));
  const Target t = *reconciledTarget(s, id.failpoint, id.hit);
  Expectation e;
  if (m.component == ".") {
    if (m.mutation == "remove") {
      e.kind = Expectation::Kind::gate;
      e.code = std::string(code::workspace_not_found);
      e.rule = "spec h: a missing workspace root is workspace_not_found, refused before any write";
    } else if (m.mutation == "file") {
      e.kind = Expectation::Kind::gate;
      e.code = std::string(code::invalid_workspace);
      e.rule = "spec h: a workspace root that is not a directory is invalid_workspace, refused";
      e.rootFile = std::string(kFileBytes);
    } else {
      e.kind = Expectation::Kind::adopted;
      e.code = std::string(code::workspace_location_changed);
      e.rule =
          "spec h: the root is realpath'd and the moved copy's marker is the workspace's identity; "
          "e.6 step 6: a changed location is the diagnostic workspace_location_changed only";
      e.rootLink = std::string(kMovedRoot);
    }
    return e;
  }
  e.kind = Expectation::Kind::park;
  const bool isFile = m.component == t.path;
  if (m.mutation == "remove") {
    e.code = std::string(t.before ? code::reconcile_diverged : code::reconcile_matches_prior_state);
    e.rule = t.before ? "spec i: an absent target whose before-state existed is diverged"
                      : "spec i: an absent target of a Write that created it matches the prior "
                        "state";
    e.absent = {m.component};
    if (!isFile) e.absent.push_back(t.path);
  } else if (m.mutation == "symlink") {
    e.code = std::string(code::reconcile_unreadable);
    e.rule = "spec i: a symlink on the target's path is never followed: unreadable";
    e.symlinks[m.component] = baseName(m.component) + std::string(kDecoySuffix);
    e.files[decoyOf(m.component) + t.path.substr(m.component.size())] = t.after;
  } else if (m.mutation == "dir") {
    e.code = std::string(code::reconcile_unreadable);
    e.rule = "spec i: a target that is not a regular file is unreadable";
    e.files[t.path + "/" + std::string(kKeptName)] = std::string(kKeptBytes);
  } else {  // file in a directory's place
    e.code = std::string(code::reconcile_unreadable);
    e.rule = "spec i: a non-directory on the target's path is unsafe, unreadable (not an absence)";
    e.files[m.component] = std::string(kFileBytes);
  }
  return e;
}

void apply(const Scenario& s, const CaseId& id, const fs::path& ws) {
  const Expectation e = expect(s, id);
  const PathMutation& m = *id.pathMutation;
  std::error_code ec;
  if (m.component == ".") {
    const fs::path moved = ws.parent_path() / std::string(kMovedRoot);
    if (m.mutation == "symlink") {
      fs::remove_all(moved, ec);
      fs::copy(ws, moved, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    }
    fs::remove_all(ws, ec);
    if (ec) throw std::runtime_error("path mutation: remove " + ws.string() + ": " + ec.message());
    if (m.mutation == "file") writeFile(ws, *e.rootFile);
    if (m.mutation == "symlink") fs::create_symlink(*e.rootLink, ws);
    return;
  }
  const Target t = *reconciledTarget(s, id.failpoint, id.hit);
  const fs::path p = ws / m.component;
  fs::remove_all(p, ec);
  if (ec) throw std::runtime_error("path mutation: remove " + p.string() + ": " + ec.message());
  if (m.mutation == "symlink") {
    const fs::path decoy = ws / decoyOf(m.component);
    if (present(decoy))
      throw std::runtime_error("path mutation: the decoy " + decoy.string() + " already exists");
    writeFile(ws / (decoyOf(m.component) + t.path.substr(m.component.size())), t.after);
    fs::create_symlink(baseName(m.component) + std::string(kDecoySuffix), p, ec);
  } else if (m.mutation == "dir") {
    writeFile(p / std::string(kKeptName), kKeptBytes);
  } else if (m.mutation == "file") {
    writeFile(p, kFileBytes);
  }
  if (ec) throw std::runtime_error("path mutation: " + p.string() + ": " + ec.message());
}

Scenario judgedScenario(const Scenario& s, const CaseId& id, const Expectation& e) {
  Scenario j = s;
  j.spec.afterCrash.reset();
  if (e.kind != Expectation::Kind::park) return j;
  AfterCrash a;
  a.failpoints = {id.failpointName()};
  a.parkedReason = e.code;
  a.files = e.files;
  a.absent = e.absent;
  a.symlinks = e.symlinks;
  j.spec.afterCrash = std::move(a);
  return j;
}

}  // namespace crashsim::harness::pathmut
