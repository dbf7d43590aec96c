// The report model: JSON round trip, summary statistics, merge.
#include "crashsim/reports/report.h"

#include <fmt/format.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <span>
#include <sstream>
#include <tuple>

#include "crashsim/json_limits.h"

namespace crashsim::reports {

std::string_view crashsimVersion() { return CRASHSIM_VERSION; }

std::string sha256Digest(std::string_view bytes) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
  std::string out = "sha256:";
  for (unsigned char b : md) out += fmt::format("{:02x}", b);
  return out;
}

std::string manifestDigest(std::vector<std::string> caseIds) {
  std::sort(caseIds.begin(), caseIds.end());
  std::string text;
  for (const auto& id : caseIds) text.append(id).append("\n");
  return sha256Digest(text);
}

bool failsGate(const CaseRecord& c) {
  if (c.baseline) return !c.baseline->change.empty();
  return c.verdict == "fail";
}

namespace {

// An open sweep's platform: the machine and crashsim's build, no SQLite (openPlatform).
Json openPlatformJson(const Platform& p) {
  return {{"os", p.os},         {"kernel", p.kernel},     {"arch", p.arch},
          {"fsType", p.fsType}, {"compiler", p.compiler}, {"buildType", p.buildType}};
}

Platform openPlatformFromJson(const Json& j) {
  Platform p;
  p.os = j.at("os").get<std::string>();
  p.kernel = j.at("kernel").get<std::string>();
  p.arch = j.at("arch").get<std::string>();
  p.fsType = j.at("fsType").get<std::string>();
  p.compiler = j.at("compiler").get<std::string>();
  p.buildType = j.at("buildType").get<std::string>();
  return p;
}

Json platformJson(const Platform& p) {
  Json j = {{"os", p.os},
            {"kernel", p.kernel},
            {"arch", p.arch},
            {"fsType", p.fsType},
            {"sqliteVersion", p.sqliteVersion},
            {"sqliteCompileOptions", p.sqliteCompileOptions},
            {"journalMode", p.journalMode},
            {"synchronous", p.synchronous},
            {"compiler", p.compiler},
            {"buildType", p.buildType}};
  if (p.fsyncLatencyUs) j["fsyncLatencyUs"] = *p.fsyncLatencyUs;
  return j;
}

Platform platformFromJson(const Json& j) {
  Platform p = openPlatformFromJson(j);
  p.sqliteVersion = j.at("sqliteVersion").get<std::string>();
  p.sqliteCompileOptions = j.at("sqliteCompileOptions").get<std::vector<std::string>>();
  p.journalMode = j.at("journalMode").get<std::string>();
  p.synchronous = j.at("synchronous").get<std::string>();
  if (j.contains("fsyncLatencyUs")) p.fsyncLatencyUs = j.at("fsyncLatencyUs").get<double>();
  return p;
}

// Rounds timing numbers so report.json does not carry meaningless digits.
double round3(double v) { return std::round(v * 1000.0) / 1000.0; }

double nearestRank(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  if (rank == 0) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

}  // namespace

void sortCases(Report& report) {
  // Natural order: scenario, failpoint number (P2 before P10, the barriers S and F after P11),
  // hit, mode, recovery point. An open sweep's plan order: MQ MA TC TE TR S, then a level-1
  // runtime's named points by name (the id breaks their tie).
  static const std::vector<std::string> kOpenOrder = {"MQ", "MA", "TC", "TE", "TR", "S"};
  const bool open = !report.runtime.empty();
  auto num = [&](const std::string& fp) {
    if (open) {
      const auto it = std::find(kOpenOrder.begin(), kOpenOrder.end(), fp);
      return static_cast<int>(it - kOpenOrder.begin());
    }
    if (fp == "S") return 12;
    if (fp == "F") return 13;
    return fp.size() > 1 ? std::atoi(fp.c_str() + 1) : -1;
  };
  auto key = [&](const CaseRecord& c) {
    return std::make_tuple(c.scenario, num(c.failpoint), c.hit, c.mode,
                           c.recoveryFailpoint ? num(*c.recoveryFailpoint) : -1,
                           c.recoveryHit.value_or(0), c.id);
  };
  std::sort(report.cases.begin(), report.cases.end(),
            [&](const CaseRecord& a, const CaseRecord& b) { return key(a) < key(b); });
}

void finalizeSummary(Report& report, double wallSeconds, int workers) {
  Summary s;
  s.workers = workers > 0 ? workers : report.summary.workers;
  std::vector<double> durations;
  for (const auto& c : report.cases) {
    for (const auto& [phase, ms] : c.phasesMs) s.phasesMs[phase] += ms;
    ++s.total;
    if (c.verdict == "pass")
      ++s.passed;
    else
      ++s.failed;
    durations.push_back(c.durationMs);
  }
  s.wallSeconds = round3(wallSeconds);
  s.casesPerSecond = wallSeconds > 0 ? round3(s.total / wallSeconds) : 0;
  s.medianCaseMs = round3(nearestRank(durations, 0.5));
  s.p95CaseMs = round3(nearestRank(durations, 0.95));
  s.casesPerSecondPerCore = s.workers > 0 ? round3(s.casesPerSecond / s.workers) : 0;
  const int space = report.manifest ? report.manifest->sweepCases : 0;
  s.fractionRun = space > 0 ? round3(static_cast<double>(s.total) / space) : 1;
  for (auto& [phase, ms] : s.phasesMs) ms = round3(ms);
  report.summary = s;
}

Json toJson(const Report& r) {
  const bool open = !r.runtime.empty();
  Json cases = Json::array();
  for (const auto& c : r.cases) {
    Json checks = Json::object();
    Json reasons = Json::object();
    // An open case carries O1..O5 and nothing else (openCase); others V1..V9 and what they ran.
    for (auto name : open ? std::span<const std::string_view>(kOpenCheckNames)
                          : std::span<const std::string_view>(kCheckNames)) {
      std::string key(name);
      auto it = c.checks.find(key);
      Check ch = it == c.checks.end() ? Check{"n/a", "not evaluated"} : it->second;
      checks[key] = ch.status;
      if (ch.status != "pass") reasons[key] = ch.reason;
    }
    for (auto name : kOptionalCheckNames) {
      auto it = open ? c.checks.end() : c.checks.find(std::string(name));
      if (it == c.checks.end()) continue;
      checks[it->first] = it->second.status;
      if (it->second.status != "pass") reasons[it->first] = it->second.reason;
    }
    Json j = {{"id", c.id},
              {"scenario", c.scenario},
              {"failpoint", c.failpoint},
              {"hit", c.hit},
              {"mode", c.mode},
              {"verdict", c.verdict},
              {"checks", checks},
              {"reasons", reasons},
              {"reproduce", c.reproduce},
              {"durationMs", round3(c.durationMs)}};
    if (!c.phasesMs.empty()) {
      Json ph = Json::object();
      for (const auto& [phase, ms] : c.phasesMs) ph[phase] = round3(ms);
      j["phasesMs"] = ph;
    }
    if (c.corruption)
      j["corruption"] = {{"kind", c.corruption->kind},
                         {"detail", c.corruption->detail},
                         {"detectable", c.corruption->detectable},
                         {"outcome", c.corruption->outcome},
                         {"code", c.corruption->code},
                         {"recovery", c.corruption->recovery}};
    if (c.recoveryFailpoint) j["recoveryFailpoint"] = *c.recoveryFailpoint;
    if (c.recoveryHit) j["recoveryHit"] = *c.recoveryHit;
    if (c.baseline) {
      j["baseline"] = c.baseline->verdicts;
      j["baselineReason"] = c.baseline->reason;
      if (!c.baseline->change.empty()) j["baselineChange"] = c.baseline->change;
    }
    cases.push_back(std::move(j));
  }
  Json shards = Json::array();
  for (const auto& s : r.shards) shards.push_back({{"index", s.index}, {"total", s.total}});
  Json j = {{"formatVersion", r.formatVersion},
            {"crashsimVersion", r.crashsimVersion},
            {"platform", open ? openPlatformJson(r.platform) : platformJson(r.platform)},
            {"selection",
             {{"scenarios", r.selection.scenarios},
              {"failpoints", r.selection.failpoints},
              {"mode", r.selection.mode},
              {"doubleFaults", r.selection.doubleFaults},
              {"seed", r.selection.seed}}},
            {"shards", shards},
            {"summary",
             {{"total", r.summary.total},
              {"passed", r.summary.passed},
              {"failed", r.summary.failed},
              {"casesPerSecond", r.summary.casesPerSecond},
              {"medianCaseMs", r.summary.medianCaseMs},
              {"p95CaseMs", r.summary.p95CaseMs},
              {"wallSeconds", r.summary.wallSeconds},
              {"budget",
               {{"workers", r.summary.workers},
                {"casesPerSecondPerCore", r.summary.casesPerSecondPerCore},
                {"fractionRun", r.summary.fractionRun},
                {"phasesMs", r.summary.phasesMs}}}}},
            {"cases", cases}};
  if (!r.platforms.empty()) {
    Json ps = Json::array();
    for (const auto& p : r.platforms) ps.push_back(open ? openPlatformJson(p) : platformJson(p));
    j["platforms"] = ps;
  }
  if (open) {
    // openReport: the runtime, the interposer, the reference runs; no seed (the open harness
    // draws nothing), the O5 sample instead.
    j["runtime"] = {
        {"name", r.runtime}, {"level", r.runtimeLevel}, {"profileDigest", r.profileDigest}};
    j["interposer"] = {{"preloaded", r.interposerPreloaded}};
    Json scenarios = Json::object();
    for (const auto& [id, s] : r.scenarioRuns)
      scenarios[id] = {{"hits", s.hits},
                       {"referenceMs", round3(s.referenceMs)},
                       {"interposerLoaded", s.interposerLoaded}};
    j["scenarios"] = scenarios;
    j["selection"].erase("seed");
    j["selection"]["determinism"] = r.selection.determinism;
  }
  if (!r.selection.caseGlobs.empty()) j["selection"]["caseGlobs"] = r.selection.caseGlobs;
  if (!r.coverage.empty()) {
    Json rows = Json::array();
    for (const auto& c : r.coverage)
      rows.push_back({{"scenario", c.scenario},
                      {"failpoint", c.failpoint},
                      {"process", c.process},
                      {"predicted", c.predicted},
                      {"planned", c.planned},
                      {"run", c.run},
                      {"passed", c.passed},
                      {"failed", c.failed},
                      {"skipped", c.skipped()}});
    j["coverage"] = rows;
  }
  if (r.manifest)
    j["manifest"] = {{"cases", r.manifest->cases},
                     {"digest", r.manifest->digest},
                     {"sweepCases", r.manifest->sweepCases},
                     {"sweepDigest", r.manifest->sweepDigest}};
  return j;
}

namespace {
// One count of a coverage row: an integer in 0..kMaxCoverageCount, in every input and in the
// merge's sums over shards, so that no sum leaves int.
constexpr int64_t kMaxCoverageCount = 100'000'000;
int coverageCount(const Json& row, const char* key) {
  const Json& v = row.at(key);
  const bool ok = v.is_number_unsigned() ? v.get<uint64_t>() <= kMaxCoverageCount
                  : v.is_number_integer()
                      ? v.get<int64_t>() >= 0 && v.get<int64_t>() <= kMaxCoverageCount
                      : false;
  if (!ok)
    throw ReportError(
        fmt::format("coverage {} is {}, not a count in 0..{}", key, v.dump(), kMaxCoverageCount));
  return static_cast<int>(v.get<int64_t>());
}
}  // namespace

Report reportFromJson(const Json& j) {
  try {
    Report r;
    r.formatVersion = j.at("formatVersion").get<int>();
    if (r.formatVersion != kReportFormatVersion)
      throw ReportError(
          fmt::format("report formatVersion {} is not supported (this build reads {})",
                      r.formatVersion, kReportFormatVersion));
    r.crashsimVersion = j.at("crashsimVersion").get<std::string>();
    const bool open = j.contains("runtime");
    const auto platform = open ? openPlatformFromJson : platformFromJson;
    r.platform = platform(j.at("platform"));
    if (j.contains("platforms"))
      for (const auto& p : j.at("platforms")) r.platforms.push_back(platform(p));
    const auto& sel = j.at("selection");
    r.selection.scenarios = sel.at("scenarios").get<std::vector<std::string>>();
    r.selection.failpoints = sel.at("failpoints").get<std::vector<std::string>>();
    r.selection.mode = sel.at("mode").get<std::string>();
    r.selection.doubleFaults = sel.at("doubleFaults").get<bool>();
    if (open) {
      const auto& rt = j.at("runtime");
      r.runtime = rt.at("name").get<std::string>();
      if (r.runtime.empty()) throw ReportError("an open sweep's runtime has no name");
      r.runtimeLevel = rt.at("level").get<int>();
      r.profileDigest = rt.at("profileDigest").get<std::string>();
      r.interposerPreloaded = j.at("interposer").at("preloaded").get<bool>();
      for (const auto& [id, s] : j.at("scenarios").items())
        r.scenarioRuns[id] =
            OpenScenario{s.at("hits").get<std::map<std::string, int>>(),
                         s.at("referenceMs").get<double>(), s.at("interposerLoaded").get<bool>()};
      r.selection.determinism = sel.at("determinism").get<std::string>();
    } else {
      r.selection.seed = sel.at("seed").get<uint64_t>();
    }
    if (sel.contains("caseGlobs"))
      r.selection.caseGlobs = sel.at("caseGlobs").get<std::vector<std::string>>();
    if (j.contains("coverage"))
      for (const auto& c : j.at("coverage")) {
        CoverageRow row{c.at("scenario"),
                        c.at("failpoint"),
                        c.at("process"),
                        coverageCount(c, "predicted"),
                        coverageCount(c, "planned"),
                        coverageCount(c, "run"),
                        coverageCount(c, "passed"),
                        coverageCount(c, "failed")};
        // The counts a sweep writes: every case run passed or failed, and ran only if planned.
        if (row.passed + row.failed != row.run || row.run > row.planned ||
            coverageCount(c, "skipped") != row.skipped())
          throw ReportError(fmt::format(
              "coverage row {}/{}/{} is inconsistent: planned {}, run {}, passed {}, failed {}, "
              "skipped {} (a sweep writes passed + failed = run <= planned, skipped = planned - "
              "run)",
              row.scenario, row.failpoint, row.process, row.planned, row.run, row.passed,
              row.failed, coverageCount(c, "skipped")));
        r.coverage.push_back(row);
      }
    if (j.contains("manifest")) {
      const auto& m = j.at("manifest");
      r.manifest = Manifest{m.at("cases"), m.at("digest"), m.at("sweepCases"), m.at("sweepDigest")};
    }
    for (const auto& s : j.at("shards")) r.shards.push_back({s.at("index"), s.at("total")});
    const auto& s = j.at("summary");
    r.summary.total = s.at("total");
    r.summary.passed = s.at("passed");
    r.summary.failed = s.at("failed");
    r.summary.casesPerSecond = s.at("casesPerSecond");
    r.summary.medianCaseMs = s.at("medianCaseMs");
    r.summary.p95CaseMs = s.at("p95CaseMs");
    r.summary.wallSeconds = s.at("wallSeconds");
    if (s.contains("budget")) {
      const auto& b = s.at("budget");
      r.summary.workers = b.at("workers");
      r.summary.casesPerSecondPerCore = b.at("casesPerSecondPerCore");
      r.summary.fractionRun = b.at("fractionRun");
      for (const auto& [phase, ms] : b.at("phasesMs").items()) r.summary.phasesMs[phase] = ms;
    }
    for (const auto& c : j.at("cases")) {
      CaseRecord cr;
      cr.id = c.at("id");
      cr.scenario = c.at("scenario");
      cr.failpoint = c.at("failpoint");
      cr.hit = c.at("hit");
      cr.mode = c.at("mode");
      if (c.contains("recoveryFailpoint")) cr.recoveryFailpoint = c.at("recoveryFailpoint");
      if (c.contains("recoveryHit")) cr.recoveryHit = c.at("recoveryHit").get<int>();
      cr.verdict = c.at("verdict");
      for (auto name : open ? std::span<const std::string_view>(kOpenCheckNames)
                            : std::span<const std::string_view>(kCheckNames)) {
        std::string key(name);
        Check ch;
        ch.status = c.at("checks").at(key).get<std::string>();
        if (c.at("reasons").contains(key)) ch.reason = c.at("reasons").at(key).get<std::string>();
        cr.checks[key] = ch;
      }
      for (auto name : kOptionalCheckNames) {
        std::string key(name);
        if (open || !c.at("checks").contains(key)) continue;
        Check ch;
        ch.status = c.at("checks").at(key).get<std::string>();
        if (c.at("reasons").contains(key)) ch.reason = c.at("reasons").at(key).get<std::string>();
        cr.checks[key] = ch;
      }
      cr.reproduce = c.at("reproduce");
      cr.durationMs = c.at("durationMs");
      if (c.contains("phasesMs"))
        for (const auto& [phase, ms] : c.at("phasesMs").items()) cr.phasesMs[phase] = ms;
      if (c.contains("corruption")) {
        const auto& k = c.at("corruption");
        cr.corruption = Corruption{k.at("kind"),    k.at("detail"), k.at("detectable"),
                                   k.at("outcome"), k.at("code"),   k.at("recovery")};
      }
      if (c.contains("baseline"))
        cr.baseline = BaselineEntry{c.at("baselineReason").get<std::string>(),
                                    c.value("baselineChange", std::string()),
                                    c.at("baseline").get<std::vector<std::string>>()};
      r.cases.push_back(std::move(cr));
    }
    return r;
  } catch (const Json::exception& e) {
    throw ReportError(std::string("malformed report: ") + e.what());
  }
}

std::string renderJson(const Report& report) { return toJson(report).dump(2) + "\n"; }

Report readReportFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ReportError("cannot read " + file.string());
  std::stringstream ss;
  ss << in.rdbuf();
  Json j;
  try {
    const std::string text = ss.str();
    if (jsonTextDepth(text) > kMaxJsonDepth)
      throw ReportError(file.string() + ": json_too_deep: nests deeper than " +
                        std::to_string(kMaxJsonDepth) + " levels");
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw ReportError(file.string() + " is not JSON: " + e.what());
  }
  try {
    return reportFromJson(j);
  } catch (const ReportError& e) {
    throw ReportError(file.string() + ": " + e.what());
  }
}

Report mergeReports(const std::vector<Report>& reports) {
  if (reports.empty()) throw ReportError("nothing to merge");
  const Report& first = reports.front();
  Report out;
  out.crashsimVersion = first.crashsimVersion;
  out.platform = first.platform;
  out.selection = first.selection;
  const bool open = !first.runtime.empty();
  if (open) {
    out.runtime = first.runtime;
    out.runtimeLevel = first.runtimeLevel;
    out.profileDigest = first.profileDigest;
    out.interposerPreloaded = first.interposerPreloaded;
    out.selection.scenarios.clear();
  }
  // An open sweep is split by scenario: one selection apart from its scenarios.
  const auto sameSelection = [&](const Selection& a) {
    if (!open) return a == first.selection;
    Selection x = a, y = first.selection;
    x.scenarios.clear();
    y.scenarios.clear();
    return x == y;
  };
  bool allScenarios = false;
  std::set<std::string> ids;
  std::set<int> shardIndexes;
  double wall = 0;
  int workers = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    const Report& r = reports[i];
    if (r.crashsimVersion != first.crashsimVersion)
      throw ReportError(
          fmt::format("refusing to merge: report {} is crashsim {}, report 0 is crashsim {}", i,
                      r.crashsimVersion, first.crashsimVersion));
    if (r.runtime.empty() != first.runtime.empty()) {
      throw ReportError(fmt::format(
          "refusing to merge: report {} is an open sweep of runtime {}, report {} a sweep of "
          "crashsim's own runtime (the two kinds are never parts of one sweep)",
          open ? 0 : i, open ? first.runtime : r.runtime, open ? i : 0));
    }
    if (open && (r.runtime != first.runtime || r.runtimeLevel != first.runtimeLevel ||
                 r.profileDigest != first.profileDigest))
      throw ReportError(fmt::format(
          "refusing to merge: report {} swept runtime {} (level {}, profile {}), report 0 "
          "runtime {} (level {}, profile {}): shards of one open sweep share one profile",
          i, r.runtime, r.runtimeLevel, r.profileDigest, first.runtime, first.runtimeLevel,
          first.profileDigest));
    if (open && r.interposerPreloaded != first.interposerPreloaded)
      throw ReportError(
          fmt::format("refusing to merge: report {} ran {} the barrier interposer, report 0 {} it",
                      i, r.interposerPreloaded ? "with" : "without",
                      first.interposerPreloaded ? "with" : "without"));
    if (!sameSelection(r.selection))
      throw ReportError(fmt::format(
          "refusing to merge: report {} selected a different case set ({} differ from report 0)", i,
          open ? "failpoints, double faults, O5's sample or case globs"
               : "scenarios, failpoints, mode, double faults or seed"));
    if (open) {
      allScenarios = allScenarios || r.selection.scenarios.empty();
      for (const auto& sc : r.selection.scenarios)
        if (std::find(out.selection.scenarios.begin(), out.selection.scenarios.end(), sc) ==
            out.selection.scenarios.end())
          out.selection.scenarios.push_back(sc);
      for (const auto& [id, run] : r.scenarioRuns)
        if (!out.scenarioRuns.emplace(id, run).second)
          throw ReportError(fmt::format(
              "refusing to merge: scenario {} was swept by more than one report (an open sweep "
              "is split by scenario)",
              id));
    }
    for (const auto& s : r.shards) {
      if (!first.shards.empty() && s.total != first.shards.front().total)
        throw ReportError(fmt::format(
            "refusing to merge: report {} is shard {}/{}, report 0 splits into {} shards", i,
            s.index, s.total, first.shards.front().total));
      if (s.index < 0 || s.index >= s.total)
        throw ReportError(
            fmt::format("refusing to merge: report {} names shard {}/{}", i, s.index, s.total));
      if (!shardIndexes.insert(s.index).second)
        throw ReportError(
            fmt::format("refusing to merge: shard {}/{} appears twice", s.index, s.total));
      out.shards.push_back(s);
    }
    for (const auto& c : r.cases) {
      if (!ids.insert(c.id).second)
        throw ReportError(
            fmt::format("refusing to merge: case {} appears in more than one report "
                        "(overlapping case sets)",
                        c.id));
      out.cases.push_back(c);
    }
    bool knownPlatform = r.platform == first.platform;
    for (const auto& p : out.platforms) knownPlatform = knownPlatform || p == r.platform;
    if (!knownPlatform) {
      if (out.platforms.empty()) out.platforms.push_back(first.platform);
      out.platforms.push_back(r.platform);
    }
    wall = std::max(wall, r.summary.wallSeconds);  // shards run side by side
    workers += r.summary.workers;
  }
  if (open) {
    std::sort(out.selection.scenarios.begin(), out.selection.scenarios.end());
    if (allScenarios) out.selection.scenarios.clear();  // every scenario of the directory
  }
  std::sort(out.shards.begin(), out.shards.end(),
            [](const Shard& a, const Shard& b) { return a.index < b.index; });
  // Every shard of the split must be there: a missing shard is a missing part of the gate.
  if (!out.shards.empty()) {
    const int total = out.shards.front().total;
    std::string missing;
    for (int i = 0; i < total; ++i)
      if (!shardIndexes.count(i))
        missing += fmt::format("{}{}/{}", missing.empty() ? "" : ", ", i, total);
    if (!missing.empty())
      throw ReportError("refusing to merge: shard(s) " + missing + " missing (every shard 0.." +
                        std::to_string(total - 1) + " must be merged)");
  }
  // Coverage rows add up over shards (the prediction is the same in each).
  for (const auto& r : reports)
    for (const auto& row : r.coverage) {
      auto it = std::find_if(out.coverage.begin(), out.coverage.end(), [&](const CoverageRow& o) {
        return o.scenario == row.scenario && o.failpoint == row.failpoint &&
               o.process == row.process;
      });
      if (it == out.coverage.end()) {
        out.coverage.push_back(row);
        continue;
      }
      if (int64_t{it->planned} + row.planned > kMaxCoverageCount)
        throw ReportError(
            fmt::format("refusing to merge: coverage {}/{}/{} plans more than {} cases",
                        row.scenario, row.failpoint, row.process, kMaxCoverageCount));
      it->planned += row.planned;
      it->run += row.run;
      it->passed += row.passed;
      it->failed += row.failed;
    }
  // The merged case list must be exactly the sweep's manifest.
  if (first.manifest) {
    Manifest m = *first.manifest;
    std::vector<std::string> all(ids.begin(), ids.end());
    for (size_t i = 0; i < reports.size(); ++i)
      if (!reports[i].manifest || reports[i].manifest->sweepDigest != m.sweepDigest)
        throw ReportError(fmt::format(
            "refusing to merge: report {} was planned from a different case list than report 0",
            i));
    m.cases = static_cast<int>(all.size());
    m.digest = manifestDigest(all);
    if (m.cases != m.sweepCases || m.digest != m.sweepDigest)
      throw ReportError(fmt::format(
          "refusing to merge: the shards hold {} case(s), the sweep planned {} (digest {} != {})",
          m.cases, m.sweepCases, m.digest, m.sweepDigest));
    out.manifest = m;
  }
  sortCases(out);
  finalizeSummary(out, wall, workers);
  return out;
}

Json withoutTimingAndPlatform(const Json& reportJson) {
  Json j = reportJson;
  j.erase("platform");
  j.erase("platforms");
  for (auto k : {"casesPerSecond", "medianCaseMs", "p95CaseMs", "wallSeconds", "budget"})
    j["summary"].erase(k);
  for (auto& c : j["cases"]) c.erase("durationMs"), c.erase("phasesMs");
  if (j.contains("scenarios") && j["scenarios"].is_object())
    for (auto& s : j["scenarios"]) s.erase("referenceMs");
  return j;
}

}  // namespace crashsim::reports
