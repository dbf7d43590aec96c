// verdicts/path_mutations.h — the generated afterCrash changes of a file target's path (issue #44
// §3: "file reconcile sees only the swaps the scenarios name").
//
// For every kill at which recovery reconciles a Write/Edit (the armed call is a file tool the
// crash leaves indeterminate: expectCase + predictedRecoveryHits reach P10), the sweep derives —
// from the scenario alone — one case per component of the armed target's path and per change
// another process can make to it while the agent is down:
//
// - the file: `symlink` (a link to <name>.decoy holding the expected-after bytes) → unreadable,
//   never followed; `dir` (a directory with kept.txt in its place) → unreadable, not a regular
//   file; `remove` → absent: diverged, or matches_prior_state when the call created the file.
// - each parent directory: `symlink` (a link to <dir>.decoy, whose copy of the rest of the path
//   holds the expected bytes) → unreadable, no component of the path is followed; `file` (a
//   regular file in the directory's place) → unreadable, unsafe, not absent; `remove` (the
//   directory tree deleted) → absent, as for the file.
// - the workspace root ".": `remove` → refused at host start-up, workspace_not_found; `file` (a
//   regular file in its place) → refused, invalid_workspace; `symlink` (moved to ../ws.moved, a
//   full copy, marker too, and linked from its path) → adopted (spec h: realpath, the marker is
//   the identity): the plan says workspace_location_changed (e.6 step 6) and recovery goes on as
//   without the change.
//
// The expected observation follows from the rule table (README "File recovery after a crash"),
// the file's before-state (the seed and the earlier Write/Edit calls of the scenario, replayed
// here — never read from a run) and the gate codes of spec h; nothing runs the code under test.
// Every park leaves the change in place (the link and its decoy, the directory, the file, the
// absence) and no tool temp file. Where: P4 of every such call (the file holds the expected bytes,
// so a walk that follows a link or guesses through a missing or wrong-typed component reports a
// match), or P2–P5 with `allPoints`; the root's three only at the scenario's first such point
// (they do not depend on the call). Case ids: "scenario/P4#1/kill~path:src/app:symlink",
// "scenario/P4#1/kill~path:.:remove" (case_id.h).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/scenario.h"

namespace crashsim::harness::pathmut {

// The (failpoint, hit) kills that get generated mutations, in case-id order.
std::vector<std::pair<CrashPoint, int>> mutationPoints(const Scenario& scenario, bool allPoints);

// The mutations generated for the kill (failpoint, hit): none when it is not a mutation point.
std::vector<PathMutation> variantsAt(const Scenario& scenario, CrashPoint failpoint, int hit,
                                     bool allPoints);

struct Expectation {
  enum class Kind { park, gate, adopted };
  Kind kind = Kind::park;
  std::string code;  // park: the armed call's reconcile_* reason; gate: the start-up's error code
  std::string rule;  // the contract's rule, one line (for failure messages)
  // The workspace after recovery (park): exact regular files, absent paths, link texts. For the
  // root: `rootLink` (adopted: the workspace path stays a link with this text), `rootFile`
  // (gate, file: the path stays a regular file holding these bytes), or neither (removed).
  std::map<std::string, std::string> files;
  std::vector<std::string> absent;
  std::map<std::string, std::string> symlinks;
  std::optional<std::string> rootLink, rootFile;
};

// What the contract says of case `id` (a path-mutation case of `scenario`). Throws
// std::runtime_error when `id` names no generated mutation of the scenario, or when the
// scenario does not determine the target's before-state (an Edit of a file no seed or earlier
// Write/Edit of the scenario holds).
Expectation expect(const Scenario& scenario, const CaseId& id);

// Applies the change of `id` to the crashed workspace `ws` (the root's moved copy goes beside
// it). Throws std::runtime_error naming the path.
void apply(const Scenario& scenario, const CaseId& id, const std::filesystem::path& ws);

// The scenario as the case's recovery is judged: its own afterCrash replaced by the generated
// change (a park at the case's failpoint, with `e`'s reason and workspace), or removed (adopted
// root, gate).
Scenario judgedScenario(const Scenario& scenario, const CaseId& id, const Expectation& e);

}  // namespace crashsim::harness::pathmut
