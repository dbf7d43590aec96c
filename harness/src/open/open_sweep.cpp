// `crashsim sweep|run --runtime FILE` (crashsim/harness/open_sweep.h).
#include "crashsim/harness/open_sweep.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "crashsim/error.h"
#include "crashsim/harness/open_driver.h"
#include "crashsim/harness/scenario.h"
#include "open/open_case.h"
#include "open/open_report.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Error caseInvalid(const std::string& text, const std::string& why) {
  return Error(std::string(open_code::case_invalid), fmt::format("{}: {}", text, why));
}

// "TE#1" → (TE, 1).
bool parsePointHit(std::string_view text, std::string& point, int& hit) {
  const auto hash = text.find('#');
  if (hash == std::string_view::npos) return false;
  point = std::string(text.substr(0, hash));
  const auto digits = text.substr(hash + 1);
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), hit);
  return (isOpenPoint(point) || isNamedPoint(point)) && !digits.empty() && digits[0] != '0' &&
         r.ec == std::errc() && r.ptr == digits.data() + digits.size() && hit >= 1;
}

OpenDriver makeDriver(const OpenSweepOptions& opts) {
  open::RuntimeProfile profile = open::loadRuntimeProfile(opts.runtime);
  for (const auto& p : opts.points)
    if (!isOpenPoint(p) && profile.level < 1)
      throw Error(std::string(open_code::selection_empty),
                  fmt::format("--failpoint {}: the open points are MQ, MA, TC, TE, TR, S; {} is a "
                              "level-0 runtime, without named failpoints",
                              p, profile.name));
  fs::path toolServer = locateToolServer();
  if (toolServer.empty())
    throw Error(std::string(open_code::setup_missing),
                "crashsim-tool-server not found beside crashsim (set CRASHSIM_TOOL_SERVER)");
  return OpenDriver(std::move(profile), std::move(toolServer), locateInterposer());
}

std::vector<Scenario> selectScenarios(const OpenSweepOptions& opts) {
  std::vector<Scenario> out;
  if (opts.scenarios.empty()) {
    out = loadScenarioDir(opts.scenarioDir);
  } else {
    for (const auto& id : opts.scenarios) {
      const fs::path file = opts.scenarioDir / (id + ".json");
      std::error_code ec;
      if (!fs::is_regular_file(file, ec))
        throw Error(
            std::string(open_code::selection_empty),
            fmt::format("--scenario {}: no such scenario in {}", id, opts.scenarioDir.string()));
      out.push_back(loadScenario(file));
    }
  }
  for (auto& s : out) s.file = fs::absolute(s.file);
  return out;
}

bool selected(const OpenSweepOptions& opts, const OpenCaseId& id) {
  const std::string& p = id.resumePoint ? *id.resumePoint : id.point;
  if (!opts.points.empty() &&
      std::find(opts.points.begin(), opts.points.end(), id.point) == opts.points.end() &&
      std::find(opts.points.begin(), opts.points.end(), p) == opts.points.end())
    return false;
  if (opts.caseGlobs.empty()) return true;
  const std::string text = id.str();
  return std::any_of(opts.caseGlobs.begin(), opts.caseGlobs.end(), [&](const std::string& g) {
    return ::fnmatch(g.c_str(), text.c_str(), 0) == 0;
  });
}

fs::path makeWorkRoot() {
  std::string tmpl = (fs::temp_directory_path() / "crashsim-open-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw Error(std::string(open_code::setup_missing), "cannot create a work directory");
  return tmpl;
}

struct OpenPlannedCase {
  const Scenario* scenario;
  OpenCaseId id;
};

struct OpenSweepPlan {
  std::vector<Scenario> scenarios;
  std::map<std::string, OpenReference> references;
  std::vector<OpenPlannedCase> cases;
};

// The points of a process's hits in plan order: MQ MA TC TE TR S, then a level-1 runtime's
// names (sorted).
std::vector<std::string> pointsInPlanOrder(const std::map<std::string, int>& hits) {
  std::vector<std::string> out(kOpenPoints.begin(), kOpenPoints.end());
  for (const auto& [name, n] : hits)
    if (isNamedPoint(name)) out.push_back(name);
  return out;
}

// The primaries of one scenario from its reference run's hits.
void planScenario(const OpenDriver& driver, const Scenario& s, const OpenReference& ref,
                  std::vector<OpenPlannedCase>& out) {
  for (const std::string& point : pointsInPlanOrder(ref.hits)) {
    const auto it = ref.hits.find(point);
    for (int k = 1; it != ref.hits.end() && k <= it->second; ++k)
      out.push_back({&s, OpenCaseId{std::string(driver.name()), s.id, point, k, std::nullopt, 0}});
  }
}

OpenSweepPlan planOpenSweep(const OpenDriver& driver, const OpenSweepOptions& opts,
                            const fs::path& work) {
  OpenSweepPlan plan;
  plan.scenarios = selectScenarios(opts);
  for (const Scenario& s : plan.scenarios) {
    const OpenReference ref = openReference(driver, s, work / ("ref-" + s.id));
    plan.references[s.id] = ref;
    std::vector<OpenPlannedCase> primaries;
    planScenario(driver, s, ref, primaries);
    for (const OpenPlannedCase& pc : primaries) {
      if (!selected(opts, pc.id)) continue;  // follow-ups come with their primary only
      plan.cases.push_back(pc);
      if (!opts.doubleFaults) continue;
      const auto hits = openResumeHits(driver, s, pc.id, work / "resume-ref");
      for (const std::string& point : pointsInPlanOrder(hits))
        for (int k = 1; hits.count(point) && k <= hits.at(point); ++k) {
          OpenCaseId follow = pc.id;
          follow.resumePoint = point;
          follow.resumeHit = k;
          if (selected(opts, follow)) plan.cases.push_back({&s, follow});
        }
    }
  }
  if (plan.cases.empty())
    throw Error(std::string(open_code::selection_empty),
                "the selection plans no case (check --scenario, --failpoint, --case)");
  return plan;
}

// O5's default sample: the first hit of each point (primaries only).
bool sampled(const OpenSweepOptions& opts, const OpenCaseId& id) {
  if (opts.noDeterminism) return false;
  return opts.verifyAll || (id.hit == 1 && !id.resumePoint);
}

// A baseline entry: the verdicts it expects to fail, and why.
struct KnownFinding {
  std::set<std::string> verdicts;
  std::string reason;
};
// case id → its entry.
using Baseline = std::map<std::string, KnownFinding>;

Baseline loadBaseline(const fs::path& file) {
  Baseline b;
  if (file.empty()) return b;
  const auto bad = [&](const std::string& why) {
    return Error(std::string(open_code::baseline_invalid), file.string() + ": " + why);
  };
  std::ifstream in(file);
  if (!in) throw bad("cannot be read");
  const json doc = json::parse(in, nullptr, false);
  if (!doc.is_object() || doc.size() != 2 || doc.value("baselineVersion", 0) != 1 ||
      !doc.contains("findings") || !doc["findings"].is_array())
    throw bad("must be {\"baselineVersion\": 1, \"findings\": [...]}");
  for (const json& f : doc["findings"]) {
    if (!f.is_object() || !f.contains("case") || !f["case"].is_string() ||
        !f.contains("verdicts") || !f["verdicts"].is_array() || f["verdicts"].empty() ||
        !f.contains("reason") || !f["reason"].is_string() ||
        f["reason"].get<std::string>().empty() || f.size() != 3)
      throw bad(
          "a finding is {\"case\", \"verdicts\": [\"O1\"..\"O5\"], \"reason\"} and nothing else");
    const std::string id = f["case"].get<std::string>();
    OpenCaseId::parse(id);
    b[id].reason = f["reason"].get<std::string>();
    for (const json& v : f["verdicts"]) {
      const std::string name = v.is_string() ? v.get<std::string>() : "";
      if (name.size() != 2 || name[0] != 'O' || name[1] < '1' || name[1] > '5')
        throw bad(id + ": verdicts are O1..O5");
      b[id].verdicts.insert(name);
    }
  }
  return b;
}

// Compares a case's failures with the baseline: "" when they agree, else why (new, or fixed).
std::string againstBaseline(const OpenCaseResult& r, const Baseline& baseline) {
  std::set<std::string> failing;
  for (const auto& [name, reason] : r.verdicts)
    if (!reason.empty() && !reason.starts_with("n/a")) failing.insert(name);
  const auto it = baseline.find(r.id.str());
  const std::set<std::string> known =
      it == baseline.end() ? std::set<std::string>{} : it->second.verdicts;
  std::string why;
  for (const auto& v : failing)
    if (!known.count(v)) why += " new failure " + v + ";";
  for (const auto& v : known)
    if (!failing.count(v) && !r.verdicts.at(v).starts_with("n/a"))
      why += " baseline finding " + v + " no longer fails;";
  return why;
}

std::string reproduceLine(const OpenCaseId& id, const OpenSweepOptions& opts) {
  return fmt::format("crashsim run '{}' --runtime {} --scenarios {}", id.str(),
                     fs::absolute(opts.runtime).string(), opts.scenarioDir.string());
}

}  // namespace

std::string OpenCaseId::str() const {
  std::string s = fmt::format("{}/{}/{}#{}/kill", runtime, scenario, point, hit);
  if (resumePoint) s += fmt::format("+R:{}#{}", *resumePoint, resumeHit);
  return s;
}

OpenCaseId OpenCaseId::parse(const std::string& text) {
  OpenCaseId id;
  const auto a = text.find('/');
  const auto b = a == std::string::npos ? a : text.find('/', a + 1);
  const auto c = b == std::string::npos ? b : text.find('/', b + 1);
  if (c == std::string::npos)
    throw caseInvalid(text, "a case id is <runtime>/<scenario>/<POINT>#<n>/kill[+R:<POINT>#<n>]");
  id.runtime = text.substr(0, a);
  id.scenario = text.substr(a + 1, b - a - 1);
  if (!parsePointHit(std::string_view(text).substr(b + 1, c - b - 1), id.point, id.hit))
    throw caseInvalid(text, "the crash point must be MQ|MA|TC|TE|TR|S|<NAME>#<n>, n >= 1");
  std::string mode = text.substr(c + 1);
  if (mode.starts_with("kill+R:")) {
    std::string rp;
    if (!parsePointHit(std::string_view(mode).substr(7), rp, id.resumeHit))
      throw caseInvalid(text, "the resume's crash point must be +R:MQ|MA|TC|TE|TR|S|<NAME>#<n>");
    id.resumePoint = rp;
    mode = "kill";
  }
  if (mode != "kill") throw caseInvalid(text, "the open harness's one mode is kill");
  if (id.runtime.empty() || id.scenario.empty())
    throw caseInvalid(text, "empty runtime or scenario");
  return id;
}

int openSweepCommand(const OpenSweepOptions& opts, bool listOnly) {
  const Baseline baseline = loadBaseline(opts.baseline);  // refused before anything runs
  const OpenDriver driver = makeDriver(opts);
  const fs::path work = makeWorkRoot();
  const OpenSweepPlan plan = planOpenSweep(driver, opts, work);
  if (listOnly) {
    for (const auto& pc : plan.cases) std::cout << pc.id.str() << "\n";
    std::cerr << fmt::format("crashsim sweep --runtime: {} case(s)\n", plan.cases.size());
    fs::remove_all(work);
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<reports::CaseRecord> records;  // the reports' model (open/open_report.h)
  int failed = 0, index = 0, gate = 0, known = 0;
  // --jobs: workers run the cases (each its own directory, model server and process group);
  // this thread consumes their results in plan order.
  const size_t n = plan.cases.size();
  std::vector<std::optional<OpenCaseResult>> results(n);
  std::vector<std::exception_ptr> errors(n);
  std::mutex mutex;
  std::condition_variable ready;
  std::atomic<size_t> next{0};
  std::vector<std::jthread> workers;
  for (int w = 0; w < std::max(1, opts.jobs); ++w)
    workers.emplace_back([&] {
      for (size_t i; (i = next++) < n;) {
        const auto& pc = plan.cases[i];
        std::optional<OpenCaseResult> r;
        std::exception_ptr e;
        try {
          r = runOpenCase(driver, *pc.scenario, pc.id, work / fmt::format("case-{}", i),
                          sampled(opts, pc.id));
        } catch (...) {
          e = std::current_exception();
        }
        std::lock_guard lock(mutex);
        results[i] = std::move(r);
        errors[i] = e;
        ready.notify_all();
      }
    });
  for (const auto& pc : plan.cases) {
    const size_t i = static_cast<size_t>(index++);
    const fs::path dir = work / fmt::format("case-{}", i);
    {
      std::unique_lock lock(mutex);
      ready.wait(lock, [&] { return results[i] || errors[i]; });
      if (errors[i]) {
        next = n;  // no further case starts
        std::rethrow_exception(errors[i]);
      }
    }
    const OpenCaseResult r = std::move(*results[i]);
    results[i].reset();
    const std::string reproduce = reproduceLine(pc.id, opts);
    const std::string change = againstBaseline(r, baseline);
    std::optional<reports::BaselineEntry> entry;
    if (const auto it = baseline.find(pc.id.str()); it != baseline.end()) {
      entry = reports::BaselineEntry{
          it->second.reason, change.empty() ? "" : change.substr(1, change.size() - 2),
          std::vector<std::string>(it->second.verdicts.begin(), it->second.verdicts.end())};
      ++known;
    }
    records.push_back(openCaseRecord(r, reproduce, entry));
    std::cout << (!change.empty() ? "FAIL " : r.failed ? "known " : "ok   ") << pc.id.str();
    for (const auto& [name, reason] : r.verdicts)
      if (!reason.empty() && !reason.starts_with("n/a"))
        std::cout << "\n     " << name << ": " << reason;
    if (!change.empty()) std::cout << "\n     baseline:" << change;
    if (r.failed) std::cout << "\n     reproduce: " << reproduce;
    std::cout << std::endl;
    failed += r.failed ? 1 : 0;
    gate += change.empty() ? 0 : 1;
    if (!(r.failed && opts.keepFailures)) fs::remove_all(dir);
  }
  std::cout << fmt::format(
      "crashsim sweep --runtime {}: {} case(s), {} failed, {} in the baseline, {} differ from "
      "it\n",
      driver.name(), plan.cases.size(), failed, known, gate);
  if (!opts.out.empty())
    writeOpenReports(
        opts.out,
        openReport(driver, opts, plan.references, std::move(records),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                   work));
  if (!opts.keepFailures || failed == 0) fs::remove_all(work);
  return gate == 0 ? 0 : 1;
}

int openRunCommand(const std::string& caseText, const OpenSweepOptions& opts,
                   const std::string& keep) {
  const OpenCaseId id = OpenCaseId::parse(caseText);
  const OpenDriver driver = makeDriver(opts);
  if (id.runtime != driver.name())
    throw caseInvalid(caseText, fmt::format("the profile's runtime is {}", driver.name()));
  for (const std::string* p : {&id.point, id.resumePoint ? &*id.resumePoint : &id.point})
    if (!isOpenPoint(*p) && driver.profile().level < 1)
      throw caseInvalid(caseText, fmt::format("{} is a level-0 runtime: its points are MQ, MA, "
                                              "TC, TE, TR, S",
                                              driver.name()));
  OpenSweepOptions one = opts;
  one.scenarios = {id.scenario};
  const std::vector<Scenario> scenarios = selectScenarios(one);
  const fs::path dir = keep.empty() ? makeWorkRoot() : fs::path(keep);
  const OpenReference ref = openReference(driver, scenarios[0], dir / "reference");
  const auto it = ref.hits.find(id.point);
  if (it == ref.hits.end() || it->second < id.hit)
    throw caseInvalid(caseText, fmt::format("the reference run reaches {} {} time(s)", id.point,
                                            it == ref.hits.end() ? 0 : it->second));
  if (id.resumePoint) {
    OpenCaseId primary = id;
    primary.resumePoint.reset();
    const auto hits = openResumeHits(driver, scenarios[0], primary, dir / "resume-reference");
    const auto at = hits.find(*id.resumePoint);
    if (at == hits.end() || at->second < id.resumeHit)
      throw caseInvalid(
          caseText, fmt::format("the resume after {}#{} reaches {} {} time(s)", id.point, id.hit,
                                *id.resumePoint, at == hits.end() ? 0 : at->second));
  }
  const OpenCaseResult r = runOpenCase(driver, scenarios[0], id, dir, !opts.noDeterminism);
  for (const auto& line : r.log) std::cout << line << "\n";
  for (const auto& [name, reason] : r.verdicts)
    std::cout << name << ": " << (reason.empty() ? "pass" : reason) << "\n";
  std::cout << (r.failed ? "FAIL " : "PASS ") << id.str() << " (kept at " << dir.string() << ")\n";
  return r.failed ? 1 : 0;
}

}  // namespace crashsim::harness
