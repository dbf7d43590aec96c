// crash_property_test.cpp — issue #8 item 8: the stateful crash property.
//
// For a random scenario-like script (1–3 model steps of 1–2 Write/Edit/Read/Bash calls with
// simple valid arguments, then a final text step) written as a scenario file, the harness runs
// in-process: a reference run of the real crashsim-agent, then one case that kills a real
// child at a random (failpoint, hit) the reference reached, checks the crashed store against
// the oracle (V1–V7) and drives `crashsim-agent recover` to the end (V8). Every check must be
// `pass` or `n/a`. A failure shrinks to a minimal script (fewer steps, fewer calls, shorter
// texts, earlier failpoint) and logs the scenario JSON plus the equivalent `crashsim run` line;
// RapidCheck prints the RC_PARAMS that replay it.
//
// ctest runs it with CRASHSIM_CRASH_RC_PARAMS (default max_success=100; see CMakeLists.txt).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "crashsim/build_paths.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/scenario.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/json.h"

namespace crashsim {
namespace {

namespace fs = std::filesystem;
namespace h = harness;

constexpr const char* kScenarioId = "prop-crash";

enum class Tool { Write, Edit, Read, Bash };

const char* toolName(Tool t) {
  switch (t) {
    case Tool::Write:
      return "Write";
    case Tool::Edit:
      return "Edit";
    case Tool::Read:
      return "Read";
    case Tool::Bash:
      return "Bash";
  }
  return "?";
}

// One scripted call. Paths and ids are derived from the call's position in the script, so
// every Write creates a new file, every Edit/Read has its own seeded file, and every Bash
// writes its own f<n>.txt. `a` and `b` are free text: the Write content; the Edit file's text
// before the edited marker and the replacement; the Read file's content.
struct CallSpec {
  Tool tool = Tool::Write;
  std::string a, b;
};
using Step = std::vector<CallSpec>;
using Script = std::vector<Step>;

void showValue(const CallSpec& c, std::ostream& os) {
  os << toolName(c.tool) << "{" << Json(c.a).dump() << ", " << Json(c.b).dump() << "}";
}

// A value drawn from its whole range whatever the current size (inRange scales with the size,
// so the early cases would all be killed at P0 or P1). Still shrinks towards the minimum.
template <typename T>
rc::Gen<T> uniform(rc::Gen<T> g) {
  return rc::gen::resize(rc::kNominalSize, std::move(g));
}

// Text without '<', so the Edit marker below occurs exactly once in its seeded file.
rc::Gen<std::string> genText() {
  return rc::gen::mapcat(rc::gen::inRange<std::size_t>(0, 13), [](std::size_t n) {
    return rc::gen::container<std::string>(n, rc::gen::elementOf(std::string("abcxyz019 =\n")));
  });
}

rc::Gen<CallSpec> genCall() {
  return rc::gen::apply(
      [](Tool t, std::string a, std::string b) {
        return CallSpec{t, std::move(a), std::move(b)};
      },
      rc::gen::element(Tool::Write, Tool::Edit, Tool::Read, Tool::Bash), genText(), genText());
}

// 1..max elements of elementGen. The length is drawn from the whole range whatever the size,
// and the elements keep the current size; unlike a count chosen up front, this shrinks by
// removing any element (a failing [Write, Edit] shrinks to [Edit]).
template <typename Container, typename T>
rc::Gen<Container> someOf(int max, rc::Gen<T> elementGen) {
  return rc::gen::withSize([=](int size) {
    return rc::gen::suchThat(
        rc::gen::resize(max, rc::gen::container<Container>(rc::gen::resize(size, elementGen))),
        [](const Container& c) { return !c.empty(); });
  });
}

rc::Gen<Script> genScript() { return someOf<Script>(3, someOf<Step>(2, genCall())); }

constexpr const char* kEditMarker = "<edit-me>";

// The scenario file (scenarios/README.md) for a script, with the complete run's expectations.
Json scenarioJson(const Script& script) {
  Json files = Json::object(), expectFiles = Json::object(), model = Json::array();
  int n = 0;
  for (const Step& step : script) {
    Json calls = Json::array();
    for (const CallSpec& c : step) {
      ++n;
      Json args;
      switch (c.tool) {
        case Tool::Write: {
          const std::string path = fmt::format("w{}.txt", n);
          args = {{"path", path}, {"content", c.a}};
          expectFiles[path] = c.a;
          break;
        }
        case Tool::Edit: {
          const std::string path = fmt::format("e{}.txt", n);
          files[path] = c.a + kEditMarker + "\n";
          args = {{"path", path}, {"old_string", kEditMarker}, {"new_string", c.b}};
          expectFiles[path] = c.a + c.b + "\n";
          break;
        }
        case Tool::Read: {
          const std::string path = fmt::format("r{}.txt", n);
          files[path] = c.a;
          args = {{"path", path}};
          expectFiles[path] = c.a;
          break;
        }
        case Tool::Bash: {
          const std::string path = fmt::format("f{}.txt", n);
          args = {{"command", fmt::format("printf x > {}", path)}};
          expectFiles[path] = "x";
          break;
        }
      }
      calls.push_back(
          {{"id", fmt::format("call-{}", n)}, {"name", toolName(c.tool)}, {"args", args}});
    }
    model.push_back(
        {{"text", fmt::format("step with {} call(s)", calls.size())}, {"calls", calls}});
  }
  model.push_back({{"text", "done"}});
  return {{"id", kScenarioId},
          {"description", "generated by crash_property_test"},
          {"user", "Do the generated steps."},
          {"workspace", {{"files", files}}},
          {"tools", {"Read", "Write", "Edit", "Bash"}},
          {"model", model},
          {"expect", {{"files", expectFiles}, {"toolCalls", n}}}};
}

void writeFile(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

fs::path agentPath() {
  fs::path a = h::locateAgent();
  if (a.empty() || !fs::exists(a)) a = fs::path(CRASHSIM_BINARY_DIR) / "runtime" / "crashsim-agent";
  return a;
}

h::CaseId caseId(h::CrashPoint failpoint, int hit) {
  h::CaseId id;
  id.scenario = kScenarioId;
  id.failpoint = failpoint;
  id.hit = hit;
  id.mode = "kill";
  return id;
}

// Removes a directory tree when the property returns or throws (RC_ASSERT throws).
struct RemoveOnExit {
  fs::path dir;
  ~RemoveOnExit() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

RC_GTEST_PROP(CrashProperty, RandomScriptKilledAtRandomFailpointMeetsTheOracle, ()) {
  // This process only drives children; arming is for the children (as in crashsim's CLI).
  for (const char* v : {"CRASHSIM_ARM", "CRASHSIM_CONTROL_FD", "CRASHSIM_HITS_OUT",
                        "CRASHSIM_FAILPOINT_MODE", "CRASHSIM_POWERLOSS"})
    ::unsetenv(v);
  const Script script = *genScript();
  const std::string json = scenarioJson(script).dump(2) + "\n";

  static int counter = 0;
  const fs::path work =
      h::defaultWorkRoot("kill") / fmt::format("crash-prop-{}-{}", ::getpid(), ++counter);
  RemoveOnExit cleanup{work};
  fs::remove_all(work);
  const fs::path scenarioFile = work / "scenarios" / (std::string(kScenarioId) + ".json");
  writeFile(scenarioFile, json);

  // Where a failing script is kept for the reproduce line (overwritten by every failing run;
  // the last one RapidCheck runs is the shrunk counterexample).
  const fs::path keepDir =
      fs::temp_directory_path() / fmt::format("crashsim-crash-property-{}", ::getpid());
  auto reproduce = [&](const h::CaseId& id) {
    writeFile(keepDir / (std::string(kScenarioId) + ".json"), json);
    RC_LOG() << "scenario " << (keepDir / (std::string(kScenarioId) + ".json")).string() << ":\n"
             << json << "reproduce: crashsim --scenarios " << keepDir.string() << " run "
             << id.str() << "\n";
  };

  h::Scenario scenario;
  try {
    scenario = h::loadScenario(scenarioFile);
  } catch (const std::exception& e) {
    RC_LOG() << json;
    RC_FAIL(std::string("generated scenario rejected: ") + e.what());
  }

  h::RunOptions opts;
  opts.agent = agentPath();
  opts.crashsim = fs::path(CRASHSIM_BINARY_DIR) / "harness" / "crashsim";
  opts.workRoot = work;
  RC_ASSERT(fs::exists(opts.agent));
  const h::Reference ref = h::buildReference(scenario, opts);
  if (!ref.problem.empty()) {
    reproduce(caseId(h::points::P0, 1));  // any case of the scenario re-runs the reference
    RC_FAIL("reference run failed: " + ref.problem);
  }

  // A failpoint the complete run reached, then one of its hits (shrinks towards P0#1). Both
  // are uniform: RapidCheck's inRange scales with the size, which would favour P0 and P1.
  std::vector<h::CrashPoint> reached;
  for (h::CrashPoint fp : h::CrashPoint::all())
    if (ref.hits[fp] > 0) reached.push_back(fp);
  RC_ASSERT(!reached.empty());
  const h::CrashPoint fp = reached[static_cast<std::size_t>(
      *uniform(rc::gen::inRange<int>(0, static_cast<int>(reached.size()))))];
  const int hit = *uniform(rc::gen::inRange<int>(1, ref.hits[fp] + 1));

  const h::CaseId id = caseId(fp, hit);
  RC_TAG(id.failpointName());

  const h::CaseOutcome outcome = h::runCase(id, ref, opts);
  std::string failing;
  for (const auto& [name, check] : outcome.record.checks)
    if (check.status != "pass" && check.status != "n/a")
      failing += fmt::format("  {} {}: {}\n", name, check.status, check.reason);
  if (!failing.empty() || outcome.record.verdict != "pass") {
    reproduce(id);
    RC_FAIL(fmt::format("case {} verdict {}:\n{}", id.str(), outcome.record.verdict, failing));
  }
}

}  // namespace
}  // namespace crashsim
