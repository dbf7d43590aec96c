// crashsim/reports/report.h — the one report model of a crash sweep and its four writers.
//
// JSON is the source of truth (report.json, versioned by kReportFormatVersion, described by
// reports/report.schema.json). JUnit XML, Markdown and HTML are derived views of the same
// model. A report is deterministic: the same build and the same seed give byte-identical
// report.json apart from the timing fields (summary.casesPerSecond, medianCaseMs, p95CaseMs,
// wallSeconds, budget, cases[].durationMs, cases[].phasesMs) and the platform object.
//
// This library knows nothing about the runtime or the harness: it is data in, files out.
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace crashsim::reports {

using Json = nlohmann::json;

// Bumped whenever a field changes meaning or is removed (adding optional fields is compatible).
inline constexpr int kReportFormatVersion = 1;

// The crashsim version compiled into this library (CMake PROJECT_VERSION).
std::string_view crashsimVersion();

// Verdict checks, in report order (DESIGN.md "The harness").
inline constexpr std::array<std::string_view, 9> kCheckNames = {"V1", "V2", "V3", "V4", "V5",
                                                                "V6", "V7", "V8", "V9"};
// Optional checks, reported after V1–V9 only by the cases that evaluate them: the power-loss
// durability checks (--mode powerloss; harness/src/verdicts/d1_d2_powerloss.h).
//   D1 every commit acknowledged before the crash is present after reopen
//   D2 fail-closed: no `completed` without a durable response, no tool run twice, a damaged
//      store refused with a stable code
//   D3 every file a Write/Edit replaces is its old or its complete new content, an acknowledged
//      replace durable (harness/src/verdicts/durable_replace.h)
// and the corruption check (--mode corrupt; harness/src/verdicts/c1_corrupt.h):
//   C1 a damaged store fails closed with a stable code, or recovers to the contract's outcome;
//      inspect never writes; nothing crashes or hangs
// and the race of two hosts (the "+H2" cases; harness/src/verdicts/h1_race.h):
//   H1 two recovery processes released together on one crash state: one recovers, the other is
//      refused (host_already_active) or finds nothing to do; one claim acquired, one
//      continuation, one bundle per operation, no call twice
// (every optional check a case evaluated is in `checks` beside V1..V9)
//   WH1, WH2 a kill inside a workspace checkpoint capture (P18–P22; harness/src/verdicts/
//      wh1_user_git.h, wh2_capture_artifacts.h): the user's .git byte-identical; table W's
//      checkpoints, each with its artifact
//   WH7 a kill inside an isolated restore (P23–P26; harness/src/verdicts/wh7_restore.h): table
//      R's row after the kill, the restored epoch and the continuation bound to it after
//      recovery (WH1 there also judges the user's whole directory: wh1_user_dir.h)
//   WH5 every kill of a Phase 4 scenario's agent (harness/src/verdicts/wh5_git_children.h): no
//      child it had running (a hermetic git) outlives it
//   WH4, WH8 a kill inside a confirmed rebaseline (P27–P29; harness/src/verdicts/
//      wh4_rebaseline_notice.h, wh8_rebaseline_gate.h): table B's row after the kill and one
//      replay notice after recovery; the gated Edit refused pre-T1 with g.4's answer
//   WH3 a kill inside the carrier GC (P30; harness/src/verdicts/wh3_gc_retention.h): every
//      accepted checkpoint's ref and commit kept after the kill and after recovery, no orphan
//      ref left by the GC that ran to its end, and the dry-run plans unchanged by the kill
inline constexpr std::array<std::string_view, 12> kOptionalCheckNames = {
    "D1", "D2", "D3", "C1", "H1", "WH1", "WH2", "WH3", "WH4", "WH5", "WH7", "WH8"};

// The open harness's verdicts (crashsim sweep --runtime FILE; docs/open-harness.md): a case of a
// runtime crashsim did not build carries O1..O5 and no V check (report.schema.json's openCase;
// a report whose `runtime` is set holds only such cases).
//   O1 kill: the runtime died by SIGKILL at the armed point, its whole process group with it
//   O2 at most once: no scenario call's effect ran more often than its tool allows
//   O3 recovery: resume ends in time, the task done or stopped with a declared code
//   O4 history: every request after the crash is a history the contract allows
//   O5 determinism: the same case twice gives the same verdict record
inline constexpr std::array<std::string_view, 5> kOpenCheckNames = {"O1", "O2", "O3", "O4", "O5"};

// One check result: status is "pass" | "fail" | "n/a"; reason explains every fail and n/a.
struct Check {
  std::string status = "n/a";
  std::string reason;
  bool operator==(const Check&) const = default;
};

// The damage of a corrupt case (--mode corrupt) and what the host made of it.
struct Corruption {
  std::string kind;         // one of crashsim::harness::kCorruptionKinds ("wal_bitflip", …)
  std::string detail;       // what exactly was damaged ("WAL frame 7 of 12, byte 30, bit 3")
  bool detectable = false;  // the README's rules say the runtime must refuse this store
  // "failed_closed" | "recovered" (the kill case's V8 outcome) | "undetectable" (a damage
  // undetectable by design, recovered to another outcome) | "unsafe" (C1 failed) | "" (not judged)
  std::string outcome;
  std::string code;      // the stable code of a fail-closed refusal
  std::string recovery;  // "undetectable": what recovery did instead of the contract's outcome
  bool operator==(const Corruption&) const = default;
};

// The crash budget's phases of a case, in the order a case runs them (milliseconds each):
// setup (case folder, workspace seed or the primary's crash state), spawn (until each agent
// child's pid is known), run (armed children until their failpoint), kill (SIGKILL and reaping),
// verify (reopen + V2–V7), recovery (the recovery run to its end), v8 (its checks), report
// (the case record and removing the case folder), determinism (V9's second run, when sampled).
inline constexpr std::array<std::string_view, 9> kPhaseNames = {
    "setup", "spawn", "run", "kill", "verify", "recovery", "v8", "report", "determinism"};

// A case of an open sweep that a --baseline file lists (a known finding of the runtime): the
// entry's reason, how the case's failures differ from the entry ("" when they match, else
// "new failure O3; baseline finding O2 no longer fails") and the verdicts the entry lists. A
// matching known finding is JUnit <skipped> with the reason, a difference a <failure>. In
// report.json: the case's `baselineReason`, `baselineChange` (when not "") and `baseline`.
struct BaselineEntry {
  std::string reason;
  std::string change;
  std::vector<std::string> verdicts;  // "O2", ... as the entry lists them, sorted
  bool operator==(const BaselineEntry&) const = default;
};

// One case: (scenario, failpoint, hit, mode[, recovery failpoint and hit for double faults]).
struct CaseRecord {
  std::string id;         // "write-config-port/P4#1/kill" or ".../kill+R:P10#1"
  std::string scenario;   // scenario id
  std::string failpoint;  // "P4"
  int hit = 0;            // 1-based
  std::string mode;       // "kill" | "powerloss" | "stop" | "corrupt"
  // double fault: the recovery kill point (kill), or the Stop-path kill point P12/P13 (stop)
  std::optional<std::string> recoveryFailpoint;
  std::optional<int> recoveryHit;
  std::string verdict;                     // "pass" | "fail"
  std::map<std::string, Check> checks;     // V1..V9, every one present; D1, D2, C1 when evaluated
  std::optional<Corruption> corruption;    // corrupt mode: the damage and its outcome
  std::string reproduce;                   // one shell line that reproduces the case
  double durationMs = 0;                   // timing (excluded from determinism)
  std::map<std::string, double> phasesMs;  // timing: ms per kPhaseNames entry the case ran
  std::optional<BaselineEntry> baseline;   // open sweep: the --baseline entry listing the case
  bool operator==(const CaseRecord&) const = default;
};

// A case that fails the sweep's gate (a <failure> in JUnit, exit 1 of `report merge`): a failed
// verdict that no baseline entry lists, or a case whose failures differ from its entry. A known
// finding failing exactly as its entry says does not.
bool failsGate(const CaseRecord& c);

struct Platform {
  std::string os, kernel, arch, fsType, sqliteVersion, compiler, buildType;
  std::vector<std::string> sqliteCompileOptions;  // durability-relevant subset
  std::string journalMode, synchronous;           // the store's settings
  std::optional<double> fsyncLatencyUs;           // median fsync on the store dir
  bool operator==(const Platform&) const = default;
};

struct Summary {
  int total = 0, passed = 0, failed = 0;
  double casesPerSecond = 0, medianCaseMs = 0, p95CaseMs = 0, wallSeconds = 0;
  // The crash budget (report.json summary.budget): parallel workers, cases/s per worker, the
  // fraction of the selection's case space (manifest.sweepCases) this report ran, and the sum of
  // every case's phasesMs.
  int workers = 0;
  double casesPerSecondPerCore = 0, fractionRun = 0;
  std::map<std::string, double> phasesMs;
  bool operator==(const Summary&) const = default;
};

// What was selected, so shards of one sweep can be recognised and merged.
struct Selection {
  std::vector<std::string> scenarios;   // empty = all
  std::vector<std::string> failpoints;  // empty = all
  std::vector<std::string> caseGlobs;   // --case GLOB (fnmatch on the case id); empty = all
  std::string mode = "kill";
  bool doubleFaults = false;
  uint64_t seed = 0;  // crashsim's own runtime only
  // An open sweep's O5 sample: "first-hit" | "all" (--verify-determinism) | "none"
  // (--no-determinism); "" for crashsim's own runtime.
  std::string determinism;
  bool operator==(const Selection&) const = default;
};

struct Shard {
  int index = 0, total = 1;
  bool operator==(const Shard&) const = default;
};

// Coverage (the sweep's reach, checked before and while cases run): one row per (scenario,
// failpoint, process) the oracle predicts is reached — process "agent" for P0–P9 in the agent
// run, "recovery" for P8–P11 in the primaries' recovery processes (double faults), "path" for
// the generated path-component mutations of a kill (predicted: the mutations generated there).
//   predicted  hits the oracle predicts from the scenario alone (recovery: summed over the
//              scenario's primary cases), whatever the selection
//   planned    selected cases of this report that kill there
//   run, passed, failed  of those; skipped = planned - run (a skip is a finding, never a pass)
struct CoverageRow {
  std::string scenario, failpoint, process;
  int predicted = 0, planned = 0, run = 0, passed = 0, failed = 0;
  int skipped() const { return planned - run; }
  bool operator==(const CoverageRow&) const = default;
};

// The planned case list, so a CI can lock it (crashsim sweep --expect-cases N /
// --expect-manifest FILE). Digests are manifestDigest() of the case ids.
struct Manifest {
  int cases = 0;            // cases planned for this report (its shards)
  std::string digest;       // of those case ids
  int sweepCases = 0;       // cases of the whole selection, every shard
  std::string sweepDigest;  // of those case ids
  bool operator==(const Manifest&) const = default;
};

// "sha256:<hex>" of bytes (a runtime profile's file).
std::string sha256Digest(std::string_view bytes);

// "sha256:<hex>" of the case ids sorted bytewise, each followed by "\n" (order-independent, so
// a shard's, a merged report's and `crashsim sweep --list`'s digests compare directly).
std::string manifestDigest(std::vector<std::string> caseIds);

// The reference run of one scenario of an open sweep (unarmed, to its end): the hits per crash
// point (each hit is one case), its duration (timing), and whether its processes reported the
// barrier interposer loaded.
struct OpenScenario {
  std::map<std::string, int> hits;
  double referenceMs = 0;
  bool interposerLoaded = false;
  bool operator==(const OpenScenario&) const = default;
};

struct Report {
  int formatVersion = kReportFormatVersion;
  std::string crashsimVersion;
  Platform platform;
  std::vector<Platform> platforms;  // only in merged reports from more than one platform
  Selection selection;
  std::vector<Shard> shards;  // shards this report covers (one for a sweep; several merged)
  Summary summary;
  std::vector<CaseRecord> cases;      // sortCases() order
  std::vector<CoverageRow> coverage;  // empty only in reports of builds before coverage
  std::optional<Manifest> manifest;
  // An open sweep (crashsim sweep --runtime; report.schema.json's openReport) when `runtime`, the
  // runtime profile's name, is set: its cases carry O1–O5, the views show the open crash points
  // (MQ MA TC TE TR S). "" for crashsim's own runtime, and the fields below are then unused.
  std::string runtime;
  int runtimeLevel = 0;       // the profile's level
  std::string profileDigest;  // sha256Digest of the profile file: one sweep, one profile
  bool interposerPreloaded = false;
  std::map<std::string, OpenScenario> scenarioRuns;  // per selected scenario (`scenarios`)
  bool operator==(const Report&) const = default;
};

// A report file or merge request that cannot be honoured; message says why (one line).
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Recomputes summary.total/passed/failed and the per-case timing statistics from cases
// (median and p95 of durationMs, nearest-rank); wallSeconds/casesPerSecond from wallSeconds.
// `workers` 0 keeps report.summary.workers (a merge passes the sum of its shards').
void finalizeSummary(Report& report, double wallSeconds, int workers = 0);

// Sorts cases in natural order (scenario, failpoint number, hit, mode, recovery point).
void sortCases(Report& report);

Json toJson(const Report& report);
Report reportFromJson(const Json& json);  // throws ReportError on a malformed report

// Writers. Each returns the full document text; writeAll writes report.json, junit.xml,
// report.md and report.html into dir (created if missing).
// The crash budget in one line (the sweep's terminal summary, the Markdown and the HTML): cases,
// wall, workers, cases/s per core, the fraction of the selection that ran, then each phase's
// mean ms per case and share of the summed phase time, largest first.
std::string budgetLine(const Report& report);

std::string renderJson(const Report& report);  // pretty (2 spaces), trailing newline
// JUnit: one testcase per case; a failing case (or a baseline difference) is a <failure> naming
// its failed checks, a known baseline finding <skipped> with the entry's reason.
std::string renderJunit(const Report& report);
std::string renderMarkdown(const Report& report);
std::string renderHtml(const Report& report);
void writeAll(const Report& report, const std::filesystem::path& dir);

Report readReportFile(const std::filesystem::path& file);  // throws ReportError

// Joins shard (or platform) reports into one. Refuses, with the reason, reports of different
// crashsimVersion or formatVersion, different selections, a shard index that appears twice,
// different shard totals, shard indices that are not exactly 0..N-1 (naming the missing
// ones), case sets that overlap, or a merged case list that is not the sweep's manifest.
// Open sweeps are split by scenario: their reports join when they are of one runtime (name,
// level, profile digest), one interposer setting and one selection apart from the scenarios,
// each scenario in one report; an open report and one of crashsim's own runtime never join.
Report mergeReports(const std::vector<Report>& reports);

// The timing fields removed (for determinism comparisons).
Json withoutTimingAndPlatform(const Json& reportJson);

}  // namespace crashsim::reports
