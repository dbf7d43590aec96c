// crashsim/scenario.h — scenario files (scenarios/*.json, format in scenarios/README.md).
//
// A scenario is data: the first user message, the workspace seed, the available tools and
// permission deny list, the scripted model turns, and the expected final workspace. The
// loader is strict: unknown keys, wrong types, empty ids, duplicate call ids, a non-final step
// without calls or a final step with calls → Error(code::scenario_invalid, "<file>: <reason>",
// JSON path such as "$.model[2].calls[0].id").
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/json.h"

namespace crashsim {

// One scripted tool call. `id` is the provider tool-call id (unique within the scenario).
struct ScriptedCall {
  std::string id;
  std::string name;
  Json args = Json::object();
};

// One scripted provider step: optional assistant text and zero or more calls. Every step but
// the last has at least one call; the last step has none and carries the final answer.
struct ScriptedStep {
  std::optional<std::string> text;
  std::vector<ScriptedCall> calls;
};

struct ScenarioExpectation {
  std::map<std::string, std::string> files;  // relative path → exact content
  std::vector<std::string> absent;           // relative paths that must not exist
  std::optional<size_t> toolCalls;           // number of function calls of a full run
  std::vector<std::string> errorCalls;       // call ids whose response is isError:true
};

// One external change applied by the harness to the workspace BETWEEN the kill and the
// recovery (another process touching the workspace while the agent is down):
//   write   → replace `path` with `content` (never through a symlink)
//   delete  → remove `path` (a file or a symlink)
//   symlink → replace `path` with a symbolic link whose link text is `target` (not resolved)
struct AfterCrashMutation {
  std::string op;  // write | delete | symlink
  std::string path;
  std::string content;  // write
  std::string target;   // symlink
};

// scenario.afterCrash (scenarios/README.md): applied only to cases killed at one of
// `failpoints` (where the scenario's file operation is indeterminate), then recovered; the
// recovery must park with `parkedReason` and leave the workspace as `files` / `absent` /
// `symlinks` say (external changes preserved byte for byte, no leftover temp file).
struct AfterCrash {
  std::vector<std::string> failpoints;  // "P2".."P5"
  std::vector<AfterCrashMutation> mutations;
  std::string
      parkedReason;  // reconcile_matches_prior_state | reconcile_diverged | reconcile_unreadable
  std::map<std::string, std::string> files;     // relative path → exact content (no symlink)
  std::vector<std::string> absent;              // relative paths that must not exist
  std::map<std::string, std::string> symlinks;  // relative path → exact link text
};

// scenario.legacyStore (scenarios/README.md): the store directory every agent process of the
// scenario starts from holds a legacy `runtime-events.jsonl` with these events, one per line in
// this order (the harness writes it before the first process). The first writable open imports
// it in transactions of `batchEvents` events (StoreOptions::legacyImportBatchEvents), so the
// import failpoints P16/P17 are reached ceil(events / batchEvents) times each. The events are
// decoded by the import, not by the scenario loader: a bad one fails the run closed.
struct LegacyStore {
  std::vector<Json> events;  // RuntimeEvent objects (non-empty)
  size_t batchEvents = 0;    // 1..256
};

// scenario.workspace.git.submodules.<path> (scenarios/README.md): a second repository at `path`
// of the seed — its own `git init` (its .git a directory inside it) and one commit of `files` by
// the seed's identity and date — recorded in the seed commit as a gitlink (mode 160000) of that
// commit. `edits` are written into it afterwards: a changed tracked file or a new untracked one,
// so `status --porcelain` in it is not empty (workspace-continuity-contract.md c.4 check 7: a
// dirty submodule). Without `edits` the gitlink is clean (c.3: captured as 160000).
struct WorkspaceSubmoduleSeed {
  std::map<std::string, std::string> files;  // relative path in the submodule → content
  std::map<std::string, std::string> edits;  // written after its commit (each a change)
  bool dirty() const { return !edits.empty(); }
};

// scenario.workspace.git (scenarios/README.md): the seed is a git repository — `git init` and
// one commit of `tracked` (seed files, by the fixed identity and date of the seed) and of the
// submodules' gitlinks, every other seed file left untracked (or ignored by a tracked .gitignore).
struct WorkspaceGitSeed {
  std::vector<std::string> tracked;  // relative paths of seed files or symlinks
  std::map<std::string, WorkspaceSubmoduleSeed> submodules;  // gitlink path → its repository
};

// scenario.workspacePolicy (workspace-continuity-contract.md e.3): the host's checkpoint
// requirement for this scenario's runs; `disabled` (the default) captures nothing.
struct ScenarioWorkspacePolicy {
  std::string checkpointRequirement = "disabled";  // disabled | optional_legacy | required
  std::string driftAction = "park";  // park | isolated_restore | offer_rebaseline (e.3)
  // h.5: a recovery (host start-up) ends with the carrier GC under this orphanGraceMs; unset
  // (the default): no GC, as before.
  std::optional<int64_t> gcOrphanGraceMs;
};

struct Scenario {
  std::string id;
  std::string description;
  std::string user;                             // first user message
  std::map<std::string, std::string> files;     // workspace seed: relative path → content
  std::map<std::string, std::string> symlinks;  // workspace seed: relative path → link text
  std::optional<WorkspaceGitSeed> git;          // the seed is a git repository (optional)
  ScenarioWorkspacePolicy workspacePolicy;
  std::vector<std::string> tools;  // available tool names
  std::vector<std::string> deny;   // permissions.deny
  std::vector<ScriptedStep> model;
  ScenarioExpectation expect;
  std::optional<AfterCrash> afterCrash;    // between-crash-and-recovery mutation (optional)
  std::optional<LegacyStore> legacyStore;  // the store starts from a legacy JSONL (optional)
  std::filesystem::path source;            // file it was loaded from (empty when parsed from JSON)

  // Total number of scripted function calls.
  size_t callCount() const;
};

// Parses and validates a scenario object. `source` names it in error messages. Every tool in
// $.tools and every call's name is a built-in tool (once each in $.tools), and every call's args
// fit that tool's closed schema (ToolRuntime::argsProblem); otherwise scenario_invalid.
Scenario parseScenario(const Json& value, const std::string& source = "<scenario>");
// A scenario file is at most this large.
inline constexpr size_t kMaxScenarioBytes = 4u << 20;
// Loads one file: strict JSON (scenario_invalid), at most kMaxScenarioBytes, no key twice in one
// object (scenario_invalid), nested at most kMaxJsonDepth (json_too_deep). I/O failures are
// scenario_invalid as well.
Scenario loadScenario(const std::filesystem::path& file);
// Loads every *.json file of a directory, sorted by scenario id. Each file is named <id>.json
// and no id appears twice (scenario_invalid).
std::vector<Scenario> loadScenarioDirectory(const std::filesystem::path& dir);

// Writes the seed files and symlinks into `workspace` (creating parent directories); with
// `git`, runs the real git CLI (no user or system config, a fixed identity and date): each
// submodule's init, add and commit in its directory; then init, add the tracked paths and the
// submodules (gitlinks), one commit; then each submodule's edits. Refuses paths that escape the
// workspace. Existing files are overwritten.
void seedWorkspace(const Scenario& scenario, const std::filesystem::path& workspace);

// The workspace expectations (expect.files / absent, afterCrash) are judged, and afterCrash is
// applied, by the harness itself: harness/src/verdicts/workspace_expect.h (no runtime code).

}  // namespace crashsim
