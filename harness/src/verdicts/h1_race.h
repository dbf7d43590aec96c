// verdicts/h1_race.h — H1: two hosts race on one crash state (issue #44 §3; spec e.8, f.6, j.8).
//
// A race case ("scenario/P6#1/kill+H2") hands its primary's crash state to two `crashsim-agent
// recover` processes that wait at a barrier before host start-up and are released by one write
// (CRASHSIM_RACE_BARRIER, crashsim/failpoints.h). Every writer holds the store's host lock, so
// they serialise: one recovers, the other is refused, or — when it reached the lock only after
// the first had let go — finds nothing left to do. H1 judges that from the durable facts (plain
// SQLite, the effects log), the hosts' lifecycle log and both processes' exit codes, stdout
// reports, model logs and hit counts. Proves:
//   - each racer either ran host start-up (exit 0 or 1, a start-up report) or was refused with
//     host_already_active (exit 2, README "Host start-up"), reaching no failpoint and committing
//     no store transaction (its hit counts: no P-point, no S barrier); any other answer — a
//     continuation_claim_conflict, a run_active, a plan parked as
//     continuation_started_indeterminate — is a host that worked beside a live owner;
//   - at most one recovered: when both ran, the later found nothing to do (no claim repaired, no
//     bundle, no run repaired, no continuation, no provider call) and parked as nothing to continue
//     or with the first's own park reasons;
//   - claims (spec e.8, j.8): at most one `acquired` per boundary among the claim results the hosts
//     logged (lifecycle `continuation_claim`), every other one `existing`; the race adds exactly
//     one claim when recovery continues and none when it parks; per boundary digest one claim row
//     and one continuation run (a run whose continuationSource names the claim), begun by its
//     runtime_admission start;
//   - recovery bundles (spec f.6, j.8): per operation at most one reconcile fact and one decision
//     fact are stored; two processes that report a bundle for one operation report the same
//     decision (an exact retry converges) and only one of them created it (completed against
//     parked: exactly one wins);
//   - no call ran twice: no effects-log line of a call beyond its first (the reference runs each
//     once), and at most one racer handed the provider anything. V8 then judges the task's end
//     from the racer that recovered (executions per call, workspace, history, park reason).
// Cannot see: a host that lets its lock go early, while the other racer was already refused (both
// start at the same instant, so a lock held for a moment still refuses the second); a second host
// that starts after the first let go but before it exited (the same as a late start-up).
#pragma once

#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/case_id.h"
#include "verdicts/observed_store.h"

namespace crashsim::harness::race {

// What the oracle says recovery of the crash state does (oracle.h predictedRecoveryHits).
struct Expectation {
  bool continues = false;  // a continuation is claimed (P11 predicted)
};

// One racing process, as the harness saw it.
struct Host {
  std::string name;        // "a", "b"
  bool atBarrier = false;  // it reported the race barrier before the release
  bool exited = false;
  int exitCode = -1;
  std::string describe;             // "exited with code 2", "killed by signal 9", …
  std::string stdoutText;           // its one JSON line: a start-up report or an error
  std::string modelLog;             // RuntimeDriver::logModelInputs: the provider steps it sent
  std::optional<PointCounts> hits;  // RuntimeDriver::reportHits, when it wrote them
};

// One stored recovery fact (spec f.6): the event id and its payload's stable text.
struct StoredFact {
  std::string eventId, payload;
};

// The durable facts H1 reads: plain SQLite, the effects log and the lifecycle log.
struct Facts {
  std::vector<observed::ClaimBoundaryRow> claims;
  std::vector<observed::RunRow> runs;
  // continuation run id → provenance of its first event's continuationStart ("" none)
  std::map<std::string, std::string> startProvenance;
  // operation id → reconcile facts / decision facts stored for it
  std::map<std::string, std::vector<StoredFact>> reconcileFacts, decisionFacts;
  std::map<std::string, int> effects;     // callId → effects-log lines
  std::vector<nlohmann::json> lifecycle;  // lifecycle.jsonl, one object per line
};

// Reads Facts from a store directory (read-only).
Facts observe(const std::filesystem::path& storeDir);

struct Judgement {
  std::vector<std::string> problems;  // empty: H1 passes
  std::optional<size_t> recovered;    // the racer whose run V8 judges (index into hosts)
};

// H1 on the crash state's facts `before`, the facts after the race and the racers.
Judgement judge(const Expectation& want, const Facts& before, const Facts& after,
                const std::vector<Host>& hosts);

}  // namespace crashsim::harness::race
