#include "crashsim/harness/case_id.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

#include "crashsim/harness/fault_mode.h"

namespace crashsim::harness {
namespace {

// "P4#2" → (P4, 2); "P14#1" → (P14, 1); "S#7" → (S, 7). The Stop path's P12/P13 are named only
// after +K:.
std::pair<CrashPoint, int> parsePoint(std::string_view text, std::string_view whole) {
  auto hash = text.find('#');
  auto hitOf = [&](size_t from) {
    int hit = 0;
    auto b = std::from_chars(text.data() + from, text.data() + text.size(), hit);
    if (b.ec != std::errc() || b.ptr != text.data() + text.size() || hit < 1)
      throw std::invalid_argument(
          fmt::format("case id {}: hit must be a number >= 1 in '{}'", whole, text));
    return hit;
  };
  if (hash == 1) {
    if (auto barrier = CrashPoint::parse(text.substr(0, 1)); barrier && barrier->isBarrier())
      return {*barrier, hitOf(2)};
  }
  if (text.size() < 4 || text[0] != 'P' || hash == std::string_view::npos)
    throw std::invalid_argument(fmt::format(
        "case id {}: expected P<n>#<hit>, S#<hit>, F#<hit> or G#<hit>, got '{}'", whole, text));
  const auto fp = CrashPoint::parse(text.substr(0, hash));
  if (!fp || fp->isBarrier() || fp->group() == PointGroup::stopPath)
    throw std::invalid_argument(fmt::format("case id {}: unknown failpoint in '{}'", whole, text));
  return {*fp, hitOf(hash + 1)};
}

// "a, b, c or d".
std::string alternatives(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

bool isPathMutationName(std::string_view m) {
  return m == "symlink" || m == "dir" || m == "file" || m == "remove";
}

}  // namespace

std::string CaseId::str() const {
  std::string s = fmt::format("{}/{}#{}/{}", scenario, failpointName(), hit, mode);
  if (seed) s += fmt::format("@{}", *seed);
  if (recoveryFailpoint)
    s += fmt::format("+R:{}#{}", recoveryFailpoint->name(), recoveryHit.value_or(1));
  if (stopKill) s += fmt::format("+K:{}#1", stopKill->name());
  if (stopGrace) s += "+grace";
  if (pathMutation)
    s += fmt::format("~path:{}:{}", pathMutation->component, pathMutation->mutation);
  if (race) s += "+H2";
  return s;
}

namespace {

// "<primary kill>~path:<component>:<mutation>" (the path-mutation suffix is parsed first: the
// component may hold '/', '+' or '@' of a file name).
CaseId parsePathMutationCase(std::string_view text, size_t tilde) {
  const std::string_view whole = text, v = text.substr(tilde + 1);
  const auto last = v.rfind(':');
  if (v.substr(0, 5) != "path:" || last == std::string_view::npos || last < 5)
    throw std::invalid_argument(
        fmt::format("case id {}: expected ~path:<component>:<symlink|dir|file|remove>", whole));
  PathMutation m{std::string(v.substr(5, last - 5)), std::string(v.substr(last + 1))};
  if (m.component.empty() || !isPathMutationName(m.mutation))
    throw std::invalid_argument(
        fmt::format("case id {}: expected ~path:<component>:<symlink|dir|file|remove>", whole));
  if (m.component.front() == '/' || m.component.back() == '/' ||
      (m.component != "." &&
       (m.component.find("/./") != std::string::npos || m.component.substr(0, 2) == "./" ||
        m.component.find("..") != std::string::npos)))
    throw std::invalid_argument(fmt::format(
        "case id {}: the component is a workspace-relative path without . or .. (the root: .)",
        whole));
  CaseId id = parseCaseId(text.substr(0, tilde));
  if (!faultMode(id.mode).isProcessKill() || id.isDoubleFault() || id.isBarrier() || id.isImport())
    throw std::invalid_argument(
        fmt::format("case id {}: a path mutation follows a primary kill at a named failpoint "
                    "(P<n>#<hit>/kill)",
                    whole));
  id.pathMutation = std::move(m);
  return id;
}

// "<mode>[@<seed>]" of a primary `id` into id.mode and id.seed, checked against its point; `more`:
// a "+…" suffix follows.
const FaultMode& parseMode(CaseId& id, std::string_view mode, bool more, std::string_view text) {
  if (auto at = mode.find('@'); at != std::string_view::npos) {
    std::string_view seedText = mode.substr(at + 1);
    uint64_t seed = 0;
    auto r = std::from_chars(seedText.data(), seedText.data() + seedText.size(), seed);
    if (seedText.empty() || r.ec != std::errc() || r.ptr != seedText.data() + seedText.size())
      throw std::invalid_argument(
          fmt::format("case id {}: the seed after @ must be a decimal number", text));
    id.seed = seed;
    mode = mode.substr(0, at);
  }
  const FaultMode* fm = findFaultMode(mode);
  if (!fm)
    throw std::invalid_argument(
        fmt::format("case id {}: mode must be {}", text, alternatives(faultModeNames())));
  const bool seeded = fm->seeded();
  if (seeded && !id.seed)
    throw std::invalid_argument(
        fmt::format("case id {}: {} needs its seed, e.g. {}@17", text, mode, mode));
  if (seeded && more)
    throw std::invalid_argument(
        fmt::format("case id {}: {} cases have no double fault", text, mode));
  if (!seeded && id.seed)
    throw std::invalid_argument(fmt::format("case id {}: {} takes no @seed", text, mode));
  id.mode = std::string(mode);
  if (id.isBarrier() && !fm->crashesAtBarriers())
    throw std::invalid_argument(
        fmt::format("case id {}: barrier cases (S, F) are kill or powerloss mode only", text));
  if (id.failpoint == points::G && !fm->isProcessKill())
    throw std::invalid_argument(
        fmt::format("case id {}: git barrier cases (G) are kill mode only", text));
  if (id.isImport() && !fm->isProcessKill())
    throw std::invalid_argument(
        fmt::format("case id {}: legacy import cases (P16, P17) are kill mode only", text));
  if (id.isCapture() && (!fm->isProcessKill() || more))
    throw std::invalid_argument(fmt::format(
        "case id {}: workspace capture cases (P18..P22) are kill mode only, without a double "
        "fault",
        text));
  if (id.isRestore() && (!fm->isProcessKill() || more))
    throw std::invalid_argument(fmt::format(
        "case id {}: workspace restore cases (P23..P26) are kill mode only, without a double "
        "fault",
        text));
  if (id.isRebaseline() && (!fm->isProcessKill() || more))
    throw std::invalid_argument(fmt::format(
        "case id {}: workspace rebaseline cases (P27..P29) are kill mode only, without a double "
        "fault",
        text));
  if (id.isGc() && (!fm->isProcessKill() || more))
    throw std::invalid_argument(fmt::format(
        "case id {}: workspace GC cases (P30) are kill mode only, without a double fault", text));
  if (fm->deliversStop() && !isAgentRunPoint(id.failpoint))
    throw std::invalid_argument(
        fmt::format("case id {}: a Stop is delivered in the agent run, at P0..P9 (not {})", text,
                    id.failpointName()));
  return *fm;
}

// A Stop case's suffix `k` (after '+'): "grace", or the Stop path's kill "K:P12#1" / "K:P13#1".
void parseStopSuffix(CaseId& id, std::string_view k, std::string_view text) {
  if (k == "grace") {
    if (id.failpoint != points::P2)
      throw std::invalid_argument(
          fmt::format("case id {}: +grace names the running call by its P2 hit (P2#<hit>)", text));
    id.stopGrace = true;
    return;
  }
  if (k != "K:P12#1" && k != "K:P13#1")
    throw std::invalid_argument(fmt::format(
        "case id {}: a Stop double fault is +K:P12#1 or +K:P13#1, a watchdog case +grace", text));
  id.stopKill = k == "K:P12#1" ? points::P12 : points::P13;
}

// "+H2": the race of two hosts.
void parseRace(CaseId& id, const FaultMode& fm, std::string_view text) {
  if (!fm.isProcessKill() || id.isBarrier() || id.isImport())
    throw std::invalid_argument(fmt::format(
        "case id {}: the race of two hosts (+H2) follows a named kill of the agent run", text));
  id.race = true;
}

// "+R:<point>#<hit>" (`r` after '+'): the recovery process killed too.
void parseRecoveryKill(CaseId& id, const FaultMode& fm, std::string_view r, std::string_view text) {
  if (r.substr(0, 2) != "R:")
    throw std::invalid_argument(fmt::format("case id {}: expected +R:P<n>#<hit> or +H2", text));
  auto [fp, hit] = parsePoint(r.substr(2), text);
  // A barrier primary has no named state to recover from twice; a barrier of the recovery
  // process (+R:S#k, +R:F#k) follows a named kill of the agent run, kill mode only.
  if (id.isBarrier() || (fp.isBarrier() && (id.isImport() || !fm.isProcessKill())))
    throw std::invalid_argument(fmt::format(
        "case id {}: barrier cases (S, F) are primary kills, or recovery kills (+R:S#k, +R:F#k) "
        "after a named kill of the agent run",
        text));
  // An import kill's recovery reaches only the import (the scenario's run never started),
  // and only an import kill leaves the import pending for a recovery process.
  if (id.isImport() != (fp.group() == PointGroup::legacyImport))
    throw std::invalid_argument(fmt::format(
        "case id {}: a legacy import kill (P16, P17) pairs only with a recovery kill at P16 or "
        "P17, and those only with it",
        text));
  id.recoveryFailpoint = fp;
  id.recoveryHit = hit;
}

}  // namespace

CaseId parseCaseId(std::string_view text) {
  if (auto tilde = text.find('~'); tilde != std::string_view::npos)
    return parsePathMutationCase(text, tilde);
  CaseId id;
  auto s1 = text.find('/');
  auto s2 = s1 == std::string_view::npos ? s1 : text.find('/', s1 + 1);
  if (s1 == std::string_view::npos || s2 == std::string_view::npos || s1 == 0)
    throw std::invalid_argument(
        fmt::format("case id '{}' is not "
                    "scenario/<P<n>|S|F>#<hit>/<mode>[@<seed>][+R:P<n>#<hit>|+H2|+K:P12#1|"
                    "+K:P13#1]",
                    text));
  id.scenario = std::string(text.substr(0, s1));
  std::tie(id.failpoint, id.hit) = parsePoint(text.substr(s1 + 1, s2 - s1 - 1), text);
  if (id.failpoint.group() == PointGroup::admission)
    throw std::invalid_argument(
        fmt::format("case id {}: {} is reached only by a recovery process (+R:{}#1)", text,
                    id.failpointName(), id.failpointName()));
  std::string_view rest = text.substr(s2 + 1);
  auto plus = rest.find('+');
  const FaultMode& fm = parseMode(id, rest.substr(0, plus), plus != std::string_view::npos, text);
  if (plus == std::string_view::npos) return id;
  const std::string_view suffix = rest.substr(plus + 1);
  if (fm.deliversStop())
    parseStopSuffix(id, suffix, text);
  else if (suffix == "H2")
    parseRace(id, fm, text);
  else
    parseRecoveryKill(id, fm, suffix, text);
  return id;
}

}  // namespace crashsim::harness
