// Phase 4 c.4 check 8 from the scenario's own files: which path of L carries a conversion
// attribute (gitattributes(5) read here, never by the runtime's carrier or a git child).
#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "crashsim/harness/oracle.h"

namespace crashsim::harness {
namespace {

// The attributes check 8 asks about, in the order the runtime's check-attr reports them.
constexpr std::array<std::string_view, 5> kConversion = {"filter", "text", "eol", "ident",
                                                         "working-tree-encoding"};

// One attribute's state for one path: "unspecified", "set", "unset" or the value.
using AttributeStates = std::map<std::string, std::string, std::less<>>;

// gitattributes(5) pattern rules: a pattern without '/' matches the basename at any depth below
// the file's directory; with '/' (a leading one stripped) it matches the path relative to that
// directory, wildcards not crossing '/'.
bool patternMatches(std::string_view dir, std::string pattern, const std::string& path) {
  std::string rel = path;
  if (!dir.empty()) {
    if (path.size() <= dir.size() + 1 || path.compare(0, dir.size(), dir) != 0 ||
        path[dir.size()] != '/')
      return false;
    rel = path.substr(dir.size() + 1);
  }
  if (pattern.find('/') == std::string::npos) {
    const auto slash = rel.rfind('/');
    const std::string base = slash == std::string::npos ? rel : rel.substr(slash + 1);
    return ::fnmatch(pattern.c_str(), base.c_str(), 0) == 0;
  }
  if (pattern.front() == '/') pattern.erase(0, 1);
  return ::fnmatch(pattern.c_str(), rel.c_str(), FNM_PATHNAME) == 0;
}

// Applies one attribute token (`name`, `-name`, `!name`, `name=value`, the built-in macro
// `binary` = `-diff -merge -text`).
void applyToken(const std::string& token, AttributeStates& states) {
  if (token == "binary") {
    states["text"] = "unset";
    return;
  }
  if (token.front() == '-') {
    states[token.substr(1)] = "unset";
  } else if (token.front() == '!') {
    states[token.substr(1)] = "unspecified";
  } else if (auto eq = token.find('='); eq != std::string::npos) {
    states[token.substr(0, eq)] = token.substr(eq + 1);
  } else {
    states[token] = "set";
  }
}

// Every line of one .gitattributes file in `dir` that matches `path`, in order (later wins).
void applyFile(std::string_view dir, const std::string& text, const std::string& path,
               AttributeStates& states) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string pattern;
    // Comments, blank lines, macro definitions ([attr]; git allows them at the top level only)
    // and quoted patterns are not modelled: no built-in scenario uses them.
    if (!(words >> pattern) || pattern.front() == '#' || pattern.front() == '[' ||
        pattern.front() == '"' || !patternMatches(dir, pattern, path))
      continue;
    for (std::string token; words >> token;) applyToken(token, states);
  }
}

}  // namespace

std::optional<AttributeRefusal> conversionAttribute(const std::map<std::string, std::string>& files,
                                                    std::vector<std::string> snapshotPaths) {
  // The .gitattributes files, shallowest first: a deeper directory's lines override
  // (gitattributes(5)).
  std::vector<std::pair<std::string, const std::string*>> attributeFiles;
  for (const auto& [path, text] : files) {
    const auto slash = path.rfind('/');
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name != ".gitattributes") continue;
    attributeFiles.emplace_back(slash == std::string::npos ? "" : path.substr(0, slash), &text);
  }
  std::stable_sort(attributeFiles.begin(), attributeFiles.end(), [](const auto& a, const auto& b) {
    return std::count(a.first.begin(), a.first.end(), '/') + !a.first.empty() <
           std::count(b.first.begin(), b.first.end(), '/') + !b.first.empty();
  });
  std::sort(snapshotPaths.begin(), snapshotPaths.end());  // L's order (ls-files sorts)
  for (const std::string& path : snapshotPaths) {
    AttributeStates states;
    for (const auto& [dir, text] : attributeFiles) applyFile(dir, *text, path, states);
    for (std::string_view name : kConversion) {
      const auto it = states.find(name);
      if (it == states.end() || it->second == "unspecified") continue;
      if (name == "text" && it->second == "unset") continue;
      return AttributeRefusal{std::string(name), path};
    }
  }
  return std::nullopt;
}

}  // namespace crashsim::harness
