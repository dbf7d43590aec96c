// Scenario loader (scenarios/README.md).
#include "crashsim/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "agent/scenario_after_crash.h"
#include "crashsim/bounded_input.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/tools.h"
#include "crashsim/workspace.h"
#include "event/utf8.h"
#include "workspace/process.h"

namespace crashsim {
namespace fs = std::filesystem;

namespace {

class Validator {
 public:
  explicit Validator(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& why) const {
    throw Error(code::scenario_invalid, source_ + ": " + path + ": " + why, path);
  }

  const Json& object(const Json& v, const std::string& path,
                     std::initializer_list<std::string_view> required,
                     std::initializer_list<std::string_view> optional) const {
    if (!v.is_object()) fail(path, "must be an object");
    for (const auto& key : required) {
      if (!v.contains(std::string(key))) fail(path, "missing key '" + std::string(key) + "'");
    }
    for (const auto& [key, value] : v.items()) {
      (void)value;
      const bool known = std::find(required.begin(), required.end(), key) != required.end() ||
                         std::find(optional.begin(), optional.end(), key) != optional.end();
      if (!known) fail(path + "." + key, "unknown key");
    }
    return v;
  }

  std::string string(const Json& v, const std::string& path, bool nonEmpty = true) const {
    if (!v.is_string()) fail(path, "must be a string");
    std::string s = v.get<std::string>();
    if (nonEmpty && s.empty()) fail(path, "must not be empty");
    return s;
  }

  std::vector<std::string> strings(const Json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, "must be an array of strings");
    std::vector<std::string> out;
    for (size_t i = 0; i < v.size(); ++i) {
      out.push_back(string(v[i], path + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  std::map<std::string, std::string> fileMap(const Json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, "must be an object of path → content");
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : v.items()) {
      relativePath(key, path + "." + key);
      if (fs::path(key).begin()->string() == kWorkspaceMarkerName)
        fail(path + "." + key, "is the workspace marker, which only the runtime writes");
      out[key] = string(value, path + "." + key, false);
    }
    // A file cannot also be a directory of another ("a" beside "a/b"): no workspace holds both.
    for (const auto& [key, value] : out) {
      const auto next = out.lower_bound(key + "/");
      if (next != out.end() && next->first.rfind(key + "/", 0) == 0)
        fail(path + "." + key, "is a file and the directory of " + next->first);
    }
    return out;
  }

  // A path a workspace can hold: relative, no NUL, every component a name (no "", ".", "..":
  // "sub/", "a//b" and "./a" name no file of their own).
  void relativePath(const std::string& p, const std::string& path) const {
    if (p.empty() || p.front() == '/') fail(path, "must be a non-empty relative path");
    if (p.find('\0') != std::string::npos) fail(path, "must not contain a NUL byte");
    size_t start = 0;
    while (true) {
      const size_t slash = p.find('/', start);
      const std::string part = p.substr(start, slash - start);
      if (part == "..") fail(path, "must not contain '..'");
      if (part.empty() || part == ".") fail(path, "must name a file: an empty or '.' component");
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
  }

 private:
  std::string source_;
};

// The path of the first string (key or value) that holds a lone UTF-16 surrogate, or "".
// parseJson decodes an escaped one ("\ud800") to its WTF-8 bytes, which a RuntimeEvent may carry
// (spec a.6) but a scenario may not: its texts become file names, file contents and report text.
// The legacy store's events are RuntimeEvents, which may (they are written back as escapes).
std::string loneSurrogateAt(const Json& v, const std::string& path) {
  if (path == "$.legacyStore.events") return "";
  auto lone = [](std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      const int32_t cp = detail::decodeUtf8(s, i);
      if (cp < 0) ++i;  // not WTF-8 at all: parseJson never yields it; the writers refuse it
      if (detail::isSurrogate(cp)) return true;
    }
    return false;
  };
  if (v.is_string()) return lone(v.get_ref<const std::string&>()) ? path : "";
  if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      if (auto at = loneSurrogateAt(v[i], path + "[" + std::to_string(i) + "]"); !at.empty())
        return at;
  } else if (v.is_object()) {
    for (const auto& [key, value] : v.items()) {
      if (lone(key)) return path + "." + printableUtf8(key);
      if (auto at = loneSurrogateAt(value, path + "." + key); !at.empty()) return at;
    }
  }
  return "";
}

}  // namespace

size_t Scenario::callCount() const {
  size_t n = 0;
  for (const auto& step : model) n += step.calls.size();
  return n;
}

namespace {

bool isBuiltinTool(const std::string& name) {
  static const std::vector<std::string> builtins = ToolRuntime::builtinTools();
  return std::find(builtins.begin(), builtins.end(), name) != builtins.end();
}

// $.tools: built-in tools, each once (default: all four).
std::vector<std::string> parseTools(Validator& val, const Json& v) {
  if (!v.contains("tools")) return {"Read", "Write", "Edit", "Bash"};
  std::vector<std::string> tools = val.strings(v["tools"], "$.tools");
  std::set<std::string> seen;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string tp = "$.tools[" + std::to_string(i) + "]";
    if (!isBuiltinTool(tools[i]))
      val.fail(tp, "unknown tool " + tools[i] + " (Bash, Edit, Read, Write)");
    if (!seen.insert(tools[i]).second) val.fail(tp, "duplicate tool " + tools[i]);
  }
  return tools;
}

// One scripted call: a built-in tool with args of its closed schema (a tool refused as
// unavailable is one left out of $.tools, not a name nothing implements), an id used once.
ScriptedCall parseCall(Validator& val, const Json& j, const std::string& cp,
                       std::set<std::string>& callIds) {
  val.object(j, cp, {"id", "name", "args"}, {});
  ScriptedCall call;
  call.id = val.string(j["id"], cp + ".id");
  call.name = val.string(j["name"], cp + ".name");
  call.args = j["args"];
  if (!isBuiltinTool(call.name))
    val.fail(cp + ".name", "unknown tool " + call.name + " (Bash, Edit, Read, Write)");
  if (auto bad = ToolRuntime::argsProblem(call.name, call.args)) val.fail(cp + ".args", *bad);
  if (!callIds.insert(call.id).second) val.fail(cp + ".id", "duplicate call id " + call.id);
  return call;
}

// $.model: the provider steps; every step but the last makes calls, the last is the final
// answer (text, no calls). `callIds` gets every call id.
std::vector<ScriptedStep> parseModel(Validator& val, const Json& model,
                                     std::set<std::string>& callIds) {
  if (!model.is_array() || model.empty()) val.fail("$.model", "must be a non-empty array");
  std::vector<ScriptedStep> steps;
  for (size_t i = 0; i < model.size(); ++i) {
    const std::string p = "$.model[" + std::to_string(i) + "]";
    val.object(model[i], p, {}, {"text", "calls"});
    ScriptedStep step;
    if (model[i].contains("text")) step.text = val.string(model[i]["text"], p + ".text", false);
    if (model[i].contains("calls")) {
      const Json& calls = model[i]["calls"];
      if (!calls.is_array()) val.fail(p + ".calls", "must be an array");
      for (size_t k = 0; k < calls.size(); ++k)
        step.calls.push_back(
            parseCall(val, calls[k], p + ".calls[" + std::to_string(k) + "]", callIds));
    }
    const bool last = i + 1 == model.size();
    if (last && !step.calls.empty()) val.fail(p, "the last step is the final answer: no calls");
    if (last && !step.text) val.fail(p, "the last step must have text (the final answer)");
    if (!last && step.calls.empty()) val.fail(p, "every step but the last needs at least one call");
    steps.push_back(std::move(step));
  }
  return steps;
}

// $.expect: files, absent paths, the call count (the script's) and the calls that end in error
// (scripted ones).
void parseExpect(Validator& val, const Json& expect, const std::set<std::string>& callIds,
                 Scenario& s) {
  val.object(expect, "$.expect", {}, {"files", "absent", "toolCalls", "errorCalls"});
  if (expect.contains("files")) s.expect.files = val.fileMap(expect["files"], "$.expect.files");
  if (expect.contains("absent")) {
    s.expect.absent = val.strings(expect["absent"], "$.expect.absent");
    for (size_t i = 0; i < s.expect.absent.size(); ++i) {
      val.relativePath(s.expect.absent[i], "$.expect.absent[" + std::to_string(i) + "]");
    }
  }
  if (expect.contains("toolCalls")) {
    const Json& n = expect["toolCalls"];
    if (!n.is_number_unsigned()) val.fail("$.expect.toolCalls", "must be a non-negative integer");
    s.expect.toolCalls = n.get<size_t>();
    if (*s.expect.toolCalls != s.callCount()) {
      val.fail("$.expect.toolCalls", "is " + std::to_string(*s.expect.toolCalls) +
                                         " but the model script has " +
                                         std::to_string(s.callCount()) + " calls");
    }
  }
  if (expect.contains("errorCalls")) {
    s.expect.errorCalls = val.strings(expect["errorCalls"], "$.expect.errorCalls");
    for (size_t i = 0; i < s.expect.errorCalls.size(); ++i) {
      if (!callIds.count(s.expect.errorCalls[i])) {
        val.fail("$.expect.errorCalls[" + std::to_string(i) + "]", "names no scripted call");
      }
    }
  }
}

// "a" is "b" or one of them is a directory of the other ("lib" and "lib/x").
bool pathsOverlap(const std::string& a, const std::string& b) {
  return a == b || a.rfind(b + "/", 0) == 0 || b.rfind(a + "/", 0) == 0;
}

// A path with a ".git" component: a repository's own directory, which no seed writes.
bool namesGitDir(const std::string& p) {
  return p == ".git" || p.rfind(".git/", 0) == 0 || p.find("/.git/") != std::string::npos ||
         (p.size() > 5 && p.compare(p.size() - 5, 5, "/.git") == 0);
}

// $.workspace.git.submodules: gitlink path → {files, edits?}. A path is no seed file or symlink,
// none of their directories, not inside another submodule; its files are non-empty; each edit
// changes the submodule (a new file or other bytes than the committed ones).
std::map<std::string, WorkspaceSubmoduleSeed> parseSubmodules(Validator& val, const Json& subs,
                                                              const Scenario& s) {
  const std::string at = "$.workspace.git.submodules";
  if (!subs.is_object()) val.fail(at, "must be an object of path → submodule");
  std::map<std::string, WorkspaceSubmoduleSeed> out;
  for (const auto& [path, v] : subs.items()) {
    const std::string here = at + "." + path;
    val.relativePath(path, here);
    if (path == kWorkspaceMarkerName || namesGitDir(path))
      val.fail(here, "must not be the workspace marker or a .git directory");
    for (const auto* seeded : {&s.files, &s.symlinks})
      for (const auto& [rel, content] : *seeded)
        if (pathsOverlap(path, rel)) val.fail(here, "overlaps the seed path " + rel);
    for (const auto& [other, sub] : out)
      if (pathsOverlap(path, other)) val.fail(here, "overlaps the submodule " + other);
    val.object(v, here, {"files"}, {"edits"});
    WorkspaceSubmoduleSeed sub;
    sub.files = val.fileMap(v["files"], here + ".files");
    if (sub.files.empty()) val.fail(here + ".files", "must not be empty (one commit of them)");
    if (v.contains("edits")) sub.edits = val.fileMap(v["edits"], here + ".edits");
    for (const auto* m : {&sub.files, &sub.edits})
      for (const auto& [rel, content] : *m)
        if (namesGitDir(rel))
          val.fail(here + (m == &sub.files ? ".files." : ".edits.") + rel,
                   "must not name the submodule's .git");
    for (const auto& [rel, content] : sub.edits) {
      const auto f = sub.files.find(rel);
      if (f != sub.files.end() && f->second == content)
        val.fail(here + ".edits." + rel, "changes nothing: the committed content");
      for (const auto& [file, text] : sub.files)
        if (rel != file && pathsOverlap(rel, file))
          val.fail(here + ".edits." + rel, "is a file and a directory of the submodule's " + file);
    }
    out.emplace(path, std::move(sub));
  }
  return out;
}

// $.workspace: seed files, symlinks, and a git repository over them (tracked: the seed commit's).
void parseWorkspace(Validator& val, const Json& w, Scenario& s) {
  val.object(w, "$.workspace", {}, {"files", "symlinks", "git"});
  if (w.contains("files")) s.files = val.fileMap(w["files"], "$.workspace.files");
  if (w.contains("symlinks")) {
    s.symlinks = val.fileMap(w["symlinks"], "$.workspace.symlinks");
    for (const auto& [rel, target] : s.symlinks) {
      if (target.empty()) val.fail("$.workspace.symlinks." + rel, "must not be empty");
      if (s.files.count(rel)) val.fail("$.workspace.symlinks." + rel, "is also a seed file");
    }
  }
  if (w.contains("git")) {
    const Json& g = w["git"];
    val.object(g, "$.workspace.git", {"tracked"}, {"submodules"});
    WorkspaceGitSeed seed;
    seed.tracked = val.strings(g["tracked"], "$.workspace.git.tracked");
    for (size_t i = 0; i < seed.tracked.size(); ++i)
      if (!s.files.count(seed.tracked[i]) && !s.symlinks.count(seed.tracked[i]))
        val.fail("$.workspace.git.tracked[" + std::to_string(i) + "]",
                 "names no seed file or symlink");
    if (g.contains("submodules")) seed.submodules = parseSubmodules(val, g["submodules"], s);
    s.git = std::move(seed);
  }
}

// $.workspacePolicy.checkpointRequirement (contract d.3); any but disabled needs $.workspace.git.
// $.workspacePolicy.driftAction (e.3, optional, default park).
// $.workspacePolicy.gcOrphanGraceMs (h.5, optional): the recovery ends with the carrier GC.
ScenarioWorkspacePolicy parseWorkspacePolicy(Validator& val, const Json& wp, const Scenario& s) {
  val.object(wp, "$.workspacePolicy", {"checkpointRequirement"},
             {"driftAction", "gcOrphanGraceMs"});
  ScenarioWorkspacePolicy out;
  const std::string r =
      val.string(wp["checkpointRequirement"], "$.workspacePolicy.checkpointRequirement");
  if (r != "disabled" && r != "optional_legacy" && r != "required")
    val.fail("$.workspacePolicy.checkpointRequirement",
             "must be disabled, optional_legacy or required");
  if (r != "disabled" && !s.git)
    val.fail("$.workspacePolicy.checkpointRequirement",
             "a checkpoint policy needs a git workspace ($.workspace.git)");
  out.checkpointRequirement = r;
  if (wp.contains("driftAction")) {
    out.driftAction = val.string(wp["driftAction"], "$.workspacePolicy.driftAction");
    if (out.driftAction != "park" && out.driftAction != "isolated_restore" &&
        out.driftAction != "offer_rebaseline")
      val.fail("$.workspacePolicy.driftAction",
               "must be park, isolated_restore or offer_rebaseline");
  }
  if (wp.contains("gcOrphanGraceMs")) {
    const Json& g = wp["gcOrphanGraceMs"];
    if (!g.is_number_integer() || g.get<int64_t>() < 0 || g.get<int64_t>() > (int64_t{1} << 40))
      val.fail("$.workspacePolicy.gcOrphanGraceMs", "must be an integer from 0 to 2^40");
    else
      out.gcOrphanGraceMs = g.get<int64_t>();
  }
  return out;
}

// $.legacyStore: a legacy JSONL store's events and its import batch size (1–256).
LegacyStore parseLegacyStore(Validator& val, const Json& l) {
  val.object(l, "$.legacyStore", {"batchEvents", "events"}, {});
  const Json& b = l["batchEvents"];
  if (!b.is_number_unsigned() || b.get<uint64_t>() < 1 || b.get<uint64_t>() > 256)
    val.fail("$.legacyStore.batchEvents", "must be an integer from 1 to 256");
  const Json& events = l["events"];
  if (!events.is_array() || events.empty())
    val.fail("$.legacyStore.events", "must be a non-empty array of RuntimeEvent objects");
  LegacyStore legacy;
  legacy.batchEvents = b.get<size_t>();
  for (size_t i = 0; i < events.size(); ++i) {
    if (!events[i].is_object())
      val.fail("$.legacyStore.events[" + std::to_string(i) + "]", "must be an object");
    legacy.events.push_back(events[i]);
  }
  return legacy;
}

}  // namespace

Scenario parseScenario(const Json& v, const std::string& source) {
  Validator val(source);
  if (const std::string at = loneSurrogateAt(v, "$"); !at.empty())
    val.fail(printableUtf8(at),
             "holds an escaped lone UTF-16 surrogate; a scenario's texts become file names, file "
             "contents and report text, which hold Unicode only");
  val.object(v, "$", {"id", "user", "model", "expect"},
             {"description", "workspace", "tools", "permissions", "afterCrash", "legacyStore",
              "workspacePolicy"});
  Scenario s;
  s.id = val.string(v["id"], "$.id");
  static const std::regex idRe("^[a-z0-9][a-z0-9-]*$");
  if (!std::regex_match(s.id, idRe)) val.fail("$.id", "must match [a-z0-9][a-z0-9-]*");
  if (v.contains("description"))
    s.description = val.string(v["description"], "$.description", false);
  s.user = val.string(v["user"], "$.user");
  if (v.contains("workspace")) {
    parseWorkspace(val, v["workspace"], s);
  }
  if (v.contains("workspacePolicy"))
    s.workspacePolicy = parseWorkspacePolicy(val, v["workspacePolicy"], s);
  s.tools = parseTools(val, v);
  if (v.contains("permissions")) {
    val.object(v["permissions"], "$.permissions", {}, {"deny"});
    if (v["permissions"].contains("deny")) {
      s.deny = val.strings(v["permissions"]["deny"], "$.permissions.deny");
    }
  }
  std::set<std::string> callIds;
  s.model = parseModel(val, v["model"], callIds);
  parseExpect(val, v["expect"], callIds, s);
  if (v.contains("afterCrash")) s.afterCrash = detail::parseAfterCrash(v["afterCrash"], source);
  if (v.contains("legacyStore")) s.legacyStore = parseLegacyStore(val, v["legacyStore"]);
  return s;
}

Scenario loadScenario(const fs::path& file) {
  // A scenario is a hand-written file: a regular file of bounded size, checked before it is read
  // (a FIFO named <id>.json never blocks the loader), parsed once with the limits every reader
  // enforces (depth, WTF-8), and a key given twice in one object is refused instead of silently
  // taking the last. Every failure is scenario_invalid naming the file (json_too_deep keeps its
  // own code).
  ParsedJson parsed;
  try {
    parsed = parseJsonFindingDuplicateKeys(readBoundedFile(file, kMaxScenarioBytes));
  } catch (const Error& e) {
    if (e.code() == code::json_too_deep) throw;
    throw Error(code::scenario_invalid, file.string() + ": " + e.code() + ": " + e.what(), "$");
  }
  if (parsed.duplicateKey)
    throw Error(code::scenario_invalid,
                file.string() + ": the key \"" + printableUtf8(*parsed.duplicateKey) +
                    "\" is given twice in one object",
                "$");
  Scenario s = parseScenario(parsed.value, file.string());
  s.source = file;
  return s;
}

std::vector<Scenario> loadScenarioDirectory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw Error(code::scenario_invalid, dir.string() + ": not a scenario directory");
  }
  std::vector<Scenario> out;
  std::set<std::string> ids;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    Scenario s = loadScenario(entry.path());
    if (entry.path().filename() != s.id + ".json")
      throw Error(
          code::scenario_invalid,
          entry.path().string() + ": a scenario file is named <id>.json (" + s.id + ".json)",
          "$.id");
    if (!ids.insert(s.id).second) {
      throw Error(code::scenario_invalid,
                  entry.path().string() + ": duplicate scenario id " + s.id);
    }
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

namespace {

// One git command of the seed: the real git CLI, no user or system configuration, the fixed
// identity and date of the seed commit (so every seed of a scenario is the same commit).
void seedGit(const fs::path& workspace, const std::vector<std::string>& args) {
  detail::ProcessSpec spec;
  spec.executable = "git";
  spec.args = args;
  spec.cwd = workspace;
  spec.timeout = std::chrono::milliseconds(30000);
  const char* path = std::getenv("PATH");
  spec.env = std::map<std::string, std::string>{{"PATH", path ? path : "/usr/bin:/bin"},
                                                {"HOME", "/nonexistent"},
                                                {"GIT_CONFIG_NOSYSTEM", "1"},
                                                {"GIT_CONFIG_GLOBAL", "/dev/null"},
                                                {"GIT_AUTHOR_NAME", "crashsim seed"},
                                                {"GIT_AUTHOR_EMAIL", "seed@crashsim.invalid"},
                                                {"GIT_AUTHOR_DATE", "1700000000 +0000"},
                                                {"GIT_COMMITTER_NAME", "crashsim seed"},
                                                {"GIT_COMMITTER_EMAIL", "seed@crashsim.invalid"},
                                                {"GIT_COMMITTER_DATE", "1700000000 +0000"},
                                                {"LC_ALL", "C"}};
  const detail::ProcessResult r = detail::runProcess(spec);
  if (!r.started || r.timedOut || r.exitCode != 0)
    throw Error(code::workspace_io_failed,
                "cannot seed the git repository " + workspace.string() + ": git " +
                    (args.empty() ? std::string() : args.front()) +
                    " failed: " + (r.started ? r.err.substr(0, r.err.find('\n')) : r.spawnError));
}

// Writes each relative path → content under `dir` (creating parent directories).
void writeSeedFiles(const std::map<std::string, std::string>& files, const fs::path& dir) {
  for (const auto& [rel, content] : files) {
    const fs::path target = dir / rel;
    fs::create_directories(target.parent_path());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw Error(code::workspace_io_failed, "cannot seed " + target.string());
  }
}

}  // namespace

void seedWorkspace(const Scenario& scenario, const fs::path& workspace) {
  writeSeedFiles(scenario.files, workspace);
  for (const auto& [rel, linkText] : scenario.symlinks) {
    const fs::path target = workspace / rel;
    fs::create_directories(target.parent_path());
    std::error_code ec;
    fs::remove(target, ec);
    fs::create_symlink(linkText, target, ec);
    if (ec) throw Error(code::workspace_io_failed, "cannot seed " + target.string());
  }
  if (!scenario.git) return;
  // Each submodule: its own repository in place (its .git a directory inside it, as a clone
  // leaves it), one commit of its files. `git add` of that directory in the seed records the
  // gitlink at its HEAD; no `submodule add`, so no URL, clone or file transport (docs/phase4.md).
  for (const auto& [path, sub] : scenario.git->submodules) {
    const fs::path dir = workspace / path;
    writeSeedFiles(sub.files, dir);
    seedGit(dir, {"-c", "init.defaultBranch=main", "init", "-q"});
    seedGit(dir, {"add", "--all"});
    seedGit(dir, {"commit", "-q", "--no-verify", "-m", "crashsim seed submodule"});
  }
  seedGit(workspace, {"-c", "init.defaultBranch=main", "init", "-q"});
  std::vector<std::string> add = {"-c", "advice.addEmbeddedRepo=false", "add", "--"};
  add.insert(add.end(), scenario.git->tracked.begin(), scenario.git->tracked.end());
  for (const auto& [path, sub] : scenario.git->submodules) add.push_back(path);
  seedGit(workspace, add);
  seedGit(workspace, {"commit", "-q", "--no-verify", "-m", "crashsim seed"});
  // c.4 check 7's dirty submodule: a tracked file changed or an untracked one added after both
  // commits.
  for (const auto& [path, sub] : scenario.git->submodules)
    writeSeedFiles(sub.edits, workspace / path);
}

}  // namespace crashsim
