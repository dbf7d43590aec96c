// The oracle table (DESIGN.md "Failpoints" + issue #5 recovery table), kept as data.
//
// Read a row as: "a kill at <failpoint> while a <recoveryMode> tool call is the armed
// operation leaves these durable facts, the resolver must decide <status>/<reason> for it,
// and recovery run to the end must reach <outcome> (armed op then <finalStatus>/<finalReason>)".
// P8/P9 are run-level (no armed operation): the rows repeat for every mode. P10/P11 describe
// the armed operation's state while a recovery process is killed there (double faults).
#include <stdexcept>

#include "crashsim/codes.h"
#include "crashsim/harness/oracle.h"

namespace crashsim::harness {
namespace {

namespace c = crashsim::code;
using O = Outcome;
constexpr std::string_view kNone = "";

std::vector<OracleRow> buildTable() {
  std::vector<OracleRow> t;
  for (std::string_view mode : kRecoveryModes) {
    const bool rec = mode == c::reconcile;
    // P0: no call committed; continuation lets the model issue it, it runs once.
    t.push_back({points::P0, mode, true, true, false, false, false, false, kNone, kNone, kNone,
                 O::call_made_once, c::completed, c::matching_response,
                 "no operation; plan safe_replay; the call is made once"});
    // P1: call committed, T1 not: definitely not dispatched; re-issued, runs once.
    t.push_back({points::P1, mode, true, true, true, false, false, false,
                 c::definitely_not_dispatched, c::new_protocol_before_dispatch, kNone,
                 O::reissued_runs_once, c::completed, c::matching_response,
                 "continuation trims the call; it is re-issued and runs once"});
    // P2, P3: dispatched, no side effect completed.
    for (CrashPoint fp : {points::P2, points::P3}) {
      t.push_back(
          {fp, mode, true, true, true, true, false, false, c::indeterminate,
           c::dispatch_without_response, kNone, rec ? O::parked_by_reconcile : O::parked_unsettled,
           rec ? c::parked : c::indeterminate,
           rec ? c::reconcile_matches_prior_state : c::dispatch_without_response,
           rec ? "reconcile observes matches_prior_state -> parked bundle"
               : "no reconciler for this mode: parked (stays indeterminate, never re-run)"});
    }
    // P4: side effect done, T2 not committed. P5: inside T2, rolled back — same state.
    for (CrashPoint fp : {points::P4, points::P5}) {
      t.push_back(
          {fp, mode, true, true, true, true, false, false, c::indeterminate,
           c::dispatch_without_response, kNone, rec ? O::completed_bundle : O::parked_unsettled,
           rec ? c::completed : c::indeterminate,
           rec ? c::recovery_bundle_completed : c::dispatch_without_response,
           rec ? "reconcile observes matches_expected_state -> completed bundle; ran once"
               : "no reconciler for this mode: parked (stays indeterminate, never re-run)"});
    }
    // P6, P7: T2 committed.
    for (CrashPoint fp : {points::P6, points::P7}) {
      t.push_back({fp, mode, true, true, true, true, true, false, c::completed,
                   c::matching_response, c::normal_t2, O::completed_ran_once, c::completed,
                   c::matching_response, "completed; continue; ran once"});
    }
    // P8: inside the terminal commit (rolled back). P9: terminal fact, header stale.
    t.push_back({points::P8, mode, true, true, false, false, false, false, kNone, kNone, kNone,
                 O::run_finished, kNone, kNone,
                 "run-level: every call completed; repair appends a recovered terminal"});
    t.push_back({points::P9, mode, true, true, false, false, false, true, kNone, kNone, kNone,
                 O::run_finished, kNone, kNone,
                 "run-level: terminal fact committed; repair fixes the header from it"});
    // P10: inside the recovery-bundle commit (reconcilers only): bundle rolled back.
    t.push_back({points::P10, mode, false, rec, true, true, false, false, c::indeterminate,
                 c::dispatch_without_response, kNone,
                 rec ? O::completed_bundle : O::parked_unsettled, kNone, kNone,
                 "recovery process: bundle rolled back, operation indeterminate again; the next "
                 "recovery commits the bundle once"});
    // P11: continuation claim without start: the source run is unchanged.
    t.push_back({points::P11, mode, false, true, false, false, false, false, kNone, kNone, kNone,
                 O::run_finished, kNone, kNone,
                 "recovery process: claim without start; claim repair, then a later "
                 "continuation resumes"});
  }
  return t;
}

}  // namespace

std::string_view toString(Outcome o) {
  switch (o) {
    case O::call_made_once:
      return "call_made_once";
    case O::reissued_runs_once:
      return "reissued_runs_once";
    case O::parked_by_reconcile:
      return "parked_by_reconcile";
    case O::parked_unsettled:
      return "parked_unsettled";
    case O::completed_bundle:
      return "completed_bundle";
    case O::completed_ran_once:
      return "completed_ran_once";
    case O::run_finished:
      return "run_finished";
    case O::parked_replay_gap:
      return "parked_replay_gap";
  }
  return "?";
}

const std::vector<OracleRow>& oracleTable() {
  static const std::vector<OracleRow> table = buildTable();
  return table;
}

const OracleRow& oracleRow(CrashPoint failpoint, std::string_view recoveryMode) {
  for (const auto& r : oracleTable())
    if (r.failpoint == failpoint && r.recoveryMode == recoveryMode) return r;
  throw std::out_of_range("no oracle row for " + failpoint.str() + " / " +
                          std::string(recoveryMode));
}

std::string_view recoveryModeOfTool(std::string_view tool) {
  if (tool == "Write" || tool == "Edit") return c::reconcile;
  if (tool == "Read") return c::replay_safe;
  return c::never_auto_retry;  // Bash and anything unknown: fail closed
}

}  // namespace crashsim::harness
