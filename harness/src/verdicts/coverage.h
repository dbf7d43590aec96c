// verdicts/coverage.h — coverage is a verdict: the runtime reaches exactly the crash windows the
// scenario implies (the oracle's predictedHits / predictedRecoveryHits), and the unnamed barriers
// reach at least what the contract fixes.
//
// Proves: no crash window the contract names is left unplanned (a runtime that grew or lost a
// boundary crossing, a broken failpoint macro, an agent without failpoints: exit 2 before any
// case runs), and no store write bypasses the COMMIT barrier. Cannot see: a window that neither a
// named failpoint nor a barrier separates (inside one transaction, in memory).
#pragma once

#include <array>
#include <filesystem>
#include <optional>
#include <string>

#include "crashsim/harness/case_id.h"
#include "crashsim/harness/oracle.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// The hit counts an unarmed run wrote (CRASHSIM_HITS_OUT), one per crash point by its name
// (crash_point.h: P0–P17, the barriers S and F); nullopt when the file is missing or unreadable
// (an agent without failpoints, a failed write) or lacks a point: never a silent zero.
std::optional<PointCounts> readHits(const std::filesystem::path& p);

// "" when `reached` equals `predicted` over `points`; otherwise the first that differs, with
// `what` naming the process ("the reference run").
std::string reachDifference(const PointCounts& predicted, const PointCounts& reached,
                            const std::vector<CrashPoint>& points, const char* what);

// "" when the barriers reached at least the contract's lower bound for a run with `predicted`
// named hits: every T1 (P2), T2 (P5) and terminal fact (P8) is a store COMMIT (S), and every
// atomic file replace (P3) takes at least fsync, rename and fsync-dir (F), and every accepted
// workspace capture (P22) at least five git children (G).
std::string barrierBoundProblem(const PointCounts& predicted, const PointCounts& reached);

// V3 (the recovery's reach): the unarmed recovery of a primary case (or of a continuation killed
// inside its own calls) wrote hit counts to `hitsFile` that reach exactly the recovery points the
// oracle predicts for it (`want`, predictedRecoveryHits): P8–P11, P14–P17, and P0–P7 of the
// continuation's own calls — the double faults of that case are the recovery's real windows.
void checkRecoveryReach(const std::filesystem::path& hitsFile, const PointCounts& want, Checks& c);

}  // namespace crashsim::harness
