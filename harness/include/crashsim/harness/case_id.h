// crashsim/harness/case_id.h — case names: "scenario/P4#2/kill", "scenario/P4#1/kill+R:P10#1",
// "scenario/P6#1/powerloss@17", "scenario/P6#1/corrupt@23", the unnamed barriers
// "scenario/S#7/kill", "scenario/F#3/kill" (the k-th store COMMIT / file-tool durability step the
// agent run reaches, crashsim/failpoints.h), and Stop cases "scenario/P4#1/stop" (a Stop delivered
// at the point instead of a kill) with their double faults "scenario/P4#1/stop+K:P12#1" (the
// stopping process then SIGKILLed at a Stop-path failpoint, P12 or P13, before restart recovery),
// and the legacy import's cases "scenario/P16#2/kill", "scenario/P17#1/kill+R:P16#3" (kill mode
// only, for a scenario whose store starts from a legacy JSONL: crashsim/scenario.h legacyStore),
// and the generated path-component mutations of a kill case,
// "scenario/P4#1/kill~path:src/app:symlink" (between the kill and the recovery one component of the
// armed Write/Edit target's path — the file, a parent directory, or the workspace root ".":
// "scenario/P4#1/kill~path:.:remove" — is replaced by a symlink, a directory, a regular file, or
// removed: verdicts/path_mutations.h).
// the recovery process killed at its own barriers "scenario/P0#1/kill+R:S#9", "…/kill+R:F#2"
// (verdicts/recovery_barrier.h),
// and the race of two hosts "scenario/P6#1/kill+H2" (kill mode: the primary's crash state
// recovered by two `crashsim-agent recover` processes released together, verdicts/h1_race.h).
//
// A case is (scenario, failpoint, hit, fault mode[@seed][, recovery failpoint, recovery hit]
// | [path mutation]).
// A powerloss case always names the seed of its crash state (crashsim/powerloss.h), a corrupt
// case the seed of its damage (crashsim/harness/corruption_injector.h): the same seed reproduces
// the same state; a kill case has none. The primary failpoint kills the agent run; the optional
// recovery failpoint kills the first recovery process (a double fault), after which recovery runs
// again. Case ids sort deterministically by (scenario, failpoint (crash_point.h order), hit, mode,
// recovery failpoint, hit).
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "crashsim/harness/crash_point.h"

namespace crashsim::harness {

// A generated afterCrash change of one component of the armed file tool's target path
// (verdicts/path_mutations.h). `component` is the component's workspace-relative path ("." is the
// workspace root); `mutation` is symlink | dir | file | remove.
struct PathMutation {
  std::string component;
  std::string mutation;
  auto operator<=>(const PathMutation&) const = default;
};

struct CaseId {
  std::string scenario;
  CrashPoint failpoint = points::P0;  // P0..P11, a barrier (S, F), or the import's P16, P17
  int hit = 1;                        // 1-based
  std::string mode = "kill";
  std::optional<uint64_t> seed;  // powerloss / corrupt: the state's seed (required); else none
  // P0..P11, P14, P15, P16, P17, or a barrier of the recovery process (S, F)
  std::optional<CrashPoint> recoveryFailpoint;
  std::optional<int> recoveryHit;
  std::optional<CrashPoint> stopKill;  // stop mode: P12 or P13, always hit 1
  // stop mode, "+grace": the watchdog case of the call armed at P2#hit, a Bash tool that
  // ignores cancellation (verdicts/stop.h expectStopGrace)
  bool stopGrace = false;
  // kill mode, primary named failpoint only: "~path:<component>:<mutation>"
  std::optional<PathMutation> pathMutation;
  // kill mode, "+H2": two recovery processes race on the primary's crash state (verdicts/h1_race.h)
  bool race = false;

  std::string str() const;
  std::string failpointName() const { return failpoint.str(); }  // "P4"
  bool isDoubleFault() const { return recoveryFailpoint.has_value(); }
  bool isStopDoubleFault() const { return stopKill.has_value(); }
  bool isBarrier() const { return failpoint.isBarrier(); }
  // "+R:S#k" / "+R:F#k": the recovery process killed at its own k-th store COMMIT or file step
  // (verdicts/recovery_barrier.h).
  bool isRecoveryBarrier() const { return recoveryFailpoint && recoveryFailpoint->isBarrier(); }
  // A kill inside the legacy JSONL import (P16, P17).
  bool isImport() const { return failpoint.group() == PointGroup::legacyImport; }
  // A kill inside a workspace checkpoint capture (P18–P22; kill mode, no double fault).
  bool isCapture() const { return failpoint.group() == PointGroup::workspaceCapture; }
  // An isolated restore killed in the recovery process (P23–P26; kill mode, no double fault):
  // the agent run is killed at the last capture's P22, the scenario's afterCrash drifts the
  // user's directory, the recovery that restores is killed at the point (oracle.h
  // predictedRestore).
  bool isRestore() const { return failpoint.group() == PointGroup::workspaceRestore; }
  // A confirmed rebaseline killed in the recovery process (P27–P29; kill mode, no double fault):
  // the agent run is killed at the first Write/Edit's P1, the scenario's afterCrash drifts the
  // user's directory, a recovery parks and names the boundary, the recovery the user confirms is
  // killed at the point (oracle.h predictedRebaseline).
  bool isRebaseline() const { return failpoint.group() == PointGroup::workspaceRebaseline; }
  // The carrier GC killed in the recovery process (P30; kill mode, no double fault): the agent
  // run is killed at the first capture's P20 (an orphan ref), the recovery ends with the GC of
  // the scenario's gcOrphanGraceMs and is killed at the point (oracle.h predictedGc).
  bool isGc() const { return failpoint.group() == PointGroup::workspaceGc; }
  bool isPathMutation() const { return pathMutation.has_value(); }
  // The case without its path mutation: the plain kill whose crash state it starts from.
  CaseId withoutPathMutation() const {
    CaseId p = *this;
    p.pathMutation.reset();
    return p;
  }
  bool isRace() const { return race; }
  // A case that starts from its primary's crash state: a double fault, a race or a path mutation.
  bool startsFromPrimary() const { return isDoubleFault() || race || pathMutation.has_value(); }
  // The primary case whose crash state this one starts from (itself for a primary).
  CaseId primary() const {
    CaseId p = *this;
    p.recoveryFailpoint.reset();
    p.recoveryHit.reset();
    p.race = false;
    p.pathMutation.reset();
    return p;
  }
  auto operator<=>(const CaseId&) const = default;
};

// Parses a case id. Throws std::invalid_argument with a one-line reason.
CaseId parseCaseId(std::string_view text);

}  // namespace crashsim::harness
