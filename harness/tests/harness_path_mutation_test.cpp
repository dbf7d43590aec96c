// The generated path-component mutations (verdicts/path_mutations.h): the case-id grammar, the
// generator's cases and expectations (from the scenario and spec i/h alone), and V8's two new
// expectations turned red on hand-built observations.
#include <gtest/gtest.h>

#include <fstream>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/harness/plan.h"
#include "crashsim/harness/scenario.h"
#include "verdicts/path_mutations.h"
#include "verdicts/v8_recovery.h"

using namespace crashsim::harness;
using namespace crashsim::harness::points;
namespace fs = std::filesystem;
namespace code = crashsim::code;

namespace {

Scenario builtIn(const std::string& id) {
  return loadScenario(fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / (id + ".json"));
}

fs::path scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("crashsim-pathmut-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(PathMutationCaseId, RoundTripsAndRefusesWhatIsNoPrimaryKill) {
  for (const char* text :
       {"parent-deleted/P4#1/kill~path:src/app:symlink",
        "write-config-port/P4#2/kill~path:.:remove", "s/P3#2/kill~path:a+b/c@d.txt:dir"}) {
    const CaseId id = parseCaseId(text);
    EXPECT_TRUE(id.isPathMutation()) << text;
    EXPECT_EQ(id.str(), text);
  }
  const CaseId id = parseCaseId("parent-deleted/P4#1/kill~path:src/app:file");
  EXPECT_EQ(id.pathMutation->component, "src/app");
  EXPECT_EQ(id.pathMutation->mutation, "file");
  EXPECT_EQ(id.withoutPathMutation().str(), "parent-deleted/P4#1/kill");
  // Sorts right after its primary, before the primary's double faults.
  EXPECT_LT(id.withoutPathMutation(), id);
  EXPECT_LT(parseCaseId("s/P4#1/kill~path:a:remove"), parseCaseId("s/P4#1/kill+R:P8#1"));
  for (const char* bad :
       {"s/P4#1/kill~path:a:explode", "s/P4#1/kill~path::remove", "s/P4#1/kill~path:/a:remove",
        "s/P4#1/kill~path:../a:remove", "s/P4#1/kill~other:a:remove", "s/S#1/kill~path:a:remove",
        "s/P4#1/stop~path:a:remove", "s/P4#1/powerloss@3~path:a:remove",
        "s/P4#1/kill+R:P10#1~path:a:remove"})
    EXPECT_THROW(parseCaseId(bad), std::invalid_argument) << bad;
}

TEST(PathMutationGenerator, EveryComponentOfTheReconciledTargetAtP4) {
  const Scenario s = builtIn("parent-deleted");
  EXPECT_EQ(pathmut::mutationPoints(s, false), (std::vector<std::pair<CrashPoint, int>>{{P4, 1}}));
  EXPECT_EQ(pathmut::mutationPoints(s, true),
            (std::vector<std::pair<CrashPoint, int>>{{P2, 1}, {P3, 1}, {P4, 1}, {P5, 1}}));
  const auto v = pathmut::variantsAt(s, P4, 1, false);
  ASSERT_EQ(v.size(), 12u);  // file, src/app, src: 3 each; the root: 3
  EXPECT_EQ(v.front(), (PathMutation{"src/app/config.json", "symlink"}));
  EXPECT_EQ(v.back(), (PathMutation{".", "remove"}));
  EXPECT_TRUE(pathmut::variantsAt(s, P2, 1, false).empty());
  EXPECT_EQ(pathmut::variantsAt(s, P2, 1, true).size(), 9u);  // the root at P4 only
  EXPECT_TRUE(pathmut::variantsAt(s, P6, 1, true).empty());   // settled: no reconcile

  // A Bash-only scenario has no file target; a legacy store is swept at its import only.
  EXPECT_TRUE(pathmut::mutationPoints(builtIn("bash-touch-marker"), true).empty());
  EXPECT_TRUE(pathmut::mutationPoints(builtIn("legacy-import"), true).empty());
  // Two Edits in two steps: one point each, the root only at the first.
  const Scenario two = builtIn("edit-two-files");
  EXPECT_EQ(pathmut::mutationPoints(two, false),
            (std::vector<std::pair<CrashPoint, int>>{{P4, 1}, {P4, 2}}));
  EXPECT_EQ(pathmut::variantsAt(two, P4, 1, false).size(), 6u);
  EXPECT_EQ(pathmut::variantsAt(two, P4, 2, false).size(), 3u);
}

TEST(PathMutationGenerator, ExpectationsFollowSpecIAndH) {
  const Scenario s = builtIn("parent-deleted");
  auto at = [&](const char* tail) {
    return pathmut::expect(s, parseCaseId(std::string("parent-deleted/P4#1/kill~path:") + tail));
  };
  using K = pathmut::Expectation::Kind;
  EXPECT_EQ(at("src/app/config.json:symlink").code, code::reconcile_unreadable);
  EXPECT_EQ(at("src/app/config.json:symlink").symlinks.at("src/app/config.json"),
            "config.json.decoy");
  EXPECT_EQ(at("src/app/config.json:symlink").files.at("src/app/config.json.decoy"),
            "{\"name\":\"demo\",\"port\":4000}\n");
  EXPECT_EQ(at("src/app/config.json:dir").code, code::reconcile_unreadable);
  EXPECT_EQ(at("src/app:file").code, code::reconcile_unreadable);
  EXPECT_EQ(at("src:symlink").files.count("src.decoy/app/config.json"), 1u);
  // The seed holds the target: an absent target (the file or a parent removed) is diverged.
  EXPECT_EQ(at("src/app/config.json:remove").code, code::reconcile_diverged);
  EXPECT_EQ(at("src:remove").code, code::reconcile_diverged);
  EXPECT_EQ(at("src:remove").kind, K::park);
  EXPECT_EQ(at(".:remove").kind, K::gate);
  EXPECT_EQ(at(".:remove").code, code::workspace_not_found);
  EXPECT_EQ(at(".:file").code, code::invalid_workspace);
  EXPECT_EQ(at(".:symlink").kind, K::adopted);
  EXPECT_EQ(at(".:symlink").code, code::workspace_location_changed);
  // A Write that creates its file: its absence is the prior state.
  const Scenario rtw = builtIn("read-then-write");
  EXPECT_EQ(pathmut::expect(rtw, parseCaseId("read-then-write/P4#2/kill~path:archive:remove")).code,
            code::reconcile_matches_prior_state);
  // Not generated: a component off the path, a directory's mutation on the file, a root
  // mutation at a later point, a point where nothing is reconciled.
  for (const char* bad :
       {"parent-deleted/P4#1/kill~path:keep.txt:remove", "parent-deleted/P4#1/kill~path:src:dir",
        "parent-deleted/P4#1/kill~path:src/app/config.json:file",
        "parent-deleted/P3#1/kill~path:.:remove", "parent-deleted/P6#1/kill~path:src:remove"})
    EXPECT_THROW(pathmut::expect(s, parseCaseId(bad)), std::runtime_error) << bad;
}

TEST(PathMutationGenerator, TheSweepPlansThemWithTheirPrimaryAndOptsOut) {
  const std::vector<Scenario> sc = {builtIn("parent-deleted")};
  PlanSelection sel;
  sel.barriers = false;
  const SweepPlan on = planSweep(sc, sel);
  sel.pathMutations = "off";
  const SweepPlan off = planSweep(sc, sel);
  EXPECT_EQ(on.cases.size(), off.cases.size() + 12);
  sel.pathMutations = "all";
  EXPECT_EQ(planSweep(sc, sel).cases.size(), off.cases.size() + 12 + 3 * 9);
  sel.mode = "stop";  // kill mode only
  sel.pathMutations = "off";
  const size_t stopOff = planSweep(sc, sel).cases.size();
  sel.pathMutations = "p4";
  EXPECT_EQ(planSweep(sc, sel).cases.size(), stopOff);
  bool path = false;
  for (const auto& r : on.reach)
    if (r.process == "path") {
      path = true;
      EXPECT_EQ(r.failpoint, "P4");
      EXPECT_EQ(r.predicted, 12);
      EXPECT_EQ(r.planned, 12);
    }
  EXPECT_TRUE(path);
}

// V8's gate expectation, red on hand-built observations: a start-up that ran, one that refused
// with another code, one that wrote the store first, one that re-created the root.
TEST(PathMutationVerdict, TheGateRefusalFailsOnEveryWrongObservation) {
  const fs::path d = scratch("gate"), store = d / "store", ws = d / "ws";
  fs::create_directories(store);
  std::ofstream(store / "runtime.sqlite") << "db";
  const WorkspaceSnapshot before = snapshotWorkspace(store);
  pathmut::Expectation e;
  e.kind = pathmut::Expectation::Kind::gate;
  e.code = std::string(code::workspace_not_found);
  SpawnSpec recover;
  recover.stdoutFile = d / "recover.stdout";
  recover.stderrFile = d / "recover.stderr";
  auto judge = [&](int exitCode, const std::string& errorCode) {
    std::ofstream(recover.stdoutFile)
        << "{\"error\":{\"code\":\"" << errorCode << "\",\"message\":\"m\"}}\n";
    ChildResult r;
    r.exited = true;
    r.exitCode = exitCode;
    Checks c;
    checkGateRefusal(e, before, store, ws, d / "no-hits.json", r, recover, c);
    return c;
  };
  EXPECT_FALSE(judge(2, "workspace_not_found").failed("V8"));
  EXPECT_TRUE(judge(0, "workspace_not_found").failed("V8"));
  EXPECT_TRUE(judge(2, "workspace_unmarked").failed("V8"));
  std::ofstream(store / "runtime.sqlite-wal") << "frames";
  EXPECT_TRUE(judge(2, "workspace_not_found").failed("V8"));  // wrote the store
  fs::remove(store / "runtime.sqlite-wal");
  fs::create_directories(ws);
  EXPECT_TRUE(judge(2, "workspace_not_found").failed("V8"));  // re-created the root
  fs::remove_all(d);
}

// V8's adopted-root expectation: the path stays the link, a continuing plan names the move.
TEST(PathMutationVerdict, TheAdoptedRootFailsWithoutTheLinkOrTheDiagnostic) {
  const fs::path d = scratch("adopted"), ws = d / "ws";
  fs::create_directories(d / "ws.moved");
  fs::create_symlink("ws.moved", ws);
  pathmut::Expectation e;
  e.kind = pathmut::Expectation::Kind::adopted;
  e.code = std::string(code::workspace_location_changed);
  e.rootLink = "ws.moved";
  const std::string named =
      R"({"plan":{"decision":"continue","diagnostics":[{"code":"workspace_location_changed"}]}})";
  const std::string silent = R"({"plan":{"decision":"continue","diagnostics":[]}})";
  const std::string parked = R"({"plan":{"decision":"park","diagnostics":[]}})";
  auto judge = [&](const std::string& out) {
    Checks c;
    checkAdoptedRoot(e, ws, out + "\n", c);
    return c.failed("V8");
  };
  EXPECT_FALSE(judge(named));
  EXPECT_TRUE(judge(silent));
  EXPECT_FALSE(judge(parked));  // parked before the boundary gates: step 6 not reached
  fs::remove(ws);
  fs::create_directories(ws);
  EXPECT_TRUE(judge(named));  // the link is gone
  fs::remove_all(d);
}
