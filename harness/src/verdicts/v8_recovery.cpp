// V8: recovery to the end (verdicts/v8_recovery.h).
#include "verdicts/v8_recovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "verdicts/coverage.h"
#include "verdicts/observed_store.h"
#include "verdicts/v3_durable_facts.h"
#include "verdicts/v4_decisions.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

// "" when `after` equals `before` but for tool temp files that disappeared; else the first change.
std::string workspaceChange(const WorkspaceSnapshot& before, const WorkspaceSnapshot& after) {
  for (const auto& [p, content] : before) {
    auto it = after.find(p);
    if (it == after.end()) {
      if (!workspace::isToolTempFile(p)) return p + " was removed";
    } else if (it->second != content) {
      return p + " was rewritten";
    }
  }
  for (const auto& [p, content] : after)
    if (!before.count(p)) return p + " was created";
  return "";
}

// The recover process's summary must park with the contract's reason (spec e.2 step 4): a
// replay gap parks provider_replay_non_suffix_gap, an unsettled segment runtime_ledger_unreadable
// naming tool_recovery_unsettled. `replayGap` nullopt (a barrier case): either is the contract's.
std::string parkProblem(const std::string& recoverStdout, std::optional<bool> replayGapOpt) {
  Json summary;
  try {
    auto nl = recoverStdout.find('\n');
    summary = Json::parse(recoverStdout.substr(0, nl));
  } catch (...) {
    return "recover printed no JSON summary";
  }
  const Json plan = summary.value("plan", Json());
  if (!plan.is_object() || plan.value("decision", "") != "park")
    return "recovery did not park the continuation: plan " + plan.dump().substr(0, 200);
  if (!summary.value("continuation", Json()).is_null())
    return "recovery parked but still ran a continuation";
  const Json reasons = plan.value("rejectionReasons", Json::array());
  const bool replayGap =
      replayGapOpt.value_or(std::find(reasons.begin(), reasons.end(),
                                      code::provider_replay_non_suffix_gap) != reasons.end());
  const std::string want = replayGap ? std::string(code::provider_replay_non_suffix_gap)
                                     : std::string(code::runtime_ledger_unreadable);
  if (std::find(reasons.begin(), reasons.end(), want) == reasons.end())
    return fmt::format("recovery parked with {}, the contract expects {}", reasons.dump(), want);
  if (!replayGap && plan.dump().find(code::tool_recovery_unsettled) == std::string::npos)
    return fmt::format("recovery parked without naming {}: {}", code::tool_recovery_unsettled,
                       plan.dump().substr(0, 200));
  return "";
}

// The session's history after recovery (spec e.9, d.8): every run but the first begins with its
// continuation-start, whose source is an earlier run of the session at that run's full ledger
// (high-water = its last event); the user message appears once (no duplicate on resume; none when
// the crash came before the task was accepted: `wantUserMessages` 0); no call
// is answered twice, and a call id is issued again only after its first call was never
// dispatched (trimmed and re-issued). "" when all hold.
std::string continuationHistoryProblem(const RuntimeStore& st, int wantUserMessages) {
  auto runs = st.listRuns();
  std::stable_sort(runs.begin(), runs.end(), [](const RunHeader& a, const RunHeader& b) {
    return a.createdAt < b.createdAt;
  });
  std::map<std::string, size_t> eventsPerRun;
  int userMessages = 0;
  std::map<std::string, int> calls, responses;
  std::set<std::string> dispatched;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto events = eventsOf(st, runs[i]);
    eventsPerRun[runs[i].runId] = events.size();
    if (i > 0) {
      if (events.empty() || !events.front().continuationStart)
        return fmt::format("continuation run {} does not begin with its continuation-start",
                           runs[i].runId);
      const ContinuationStart& cs = *events.front().continuationStart;
      auto src = eventsPerRun.find(cs.sourceRunId);
      if (src == eventsPerRun.end())
        return fmt::format("continuation run {} names source {}, no earlier run of the session",
                           runs[i].runId, cs.sourceRunId);
      if (cs.sourceHighWater != static_cast<int64_t>(src->second))
        return fmt::format("continuation run {} starts at high-water {} of {}, which has {} events",
                           runs[i].runId, cs.sourceHighWater, cs.sourceRunId, src->second);
    }
    for (const auto& e : events) {
      if (e.partial) continue;
      if (e.role == Role::user && e.contentKind == ContentKind::text) ++userMessages;
      if (e.contentKind == ContentKind::function_call) {
        if (calls[e.callId]++ > 0 && dispatched.count(e.callId))
          return fmt::format("call {} was issued again after it had been dispatched", e.callId);
      }
      if (e.toolDispatch) dispatched.insert(e.toolDispatch->providerToolCallId);
      if (e.contentKind == ContentKind::function_response && ++responses[e.callId] > 1)
        return fmt::format("call {} has {} responses in the session", e.callId,
                           responses[e.callId]);
    }
  }
  if (userMessages != wantUserMessages)
    return fmt::format("the session holds {} user message(s), the contract expects {}",
                       userMessages, wantUserMessages);
  return "";
}

// V8: executions per scenario call (the effects log) equal what the contract expects.
void checkExecutions(const Scenario& sc, const std::vector<int>& want,
                     const std::map<std::string, int>& effects, Checks& c) {
  std::set<std::string> scenarioCalls;
  for (size_t i = 0; i < sc.calls.size(); ++i) {
    scenarioCalls.insert(sc.calls[i].id);
    const int got = effects.count(sc.calls[i].id) ? effects.at(sc.calls[i].id) : 0;
    if (got != want[i])
      c.fail("V8", fmt::format("{} ({}) executed {} time(s), the contract expects {}",
                               sc.calls[i].id, sc.calls[i].name, got, want[i]));
  }
  for (const auto& [callId, n] : effects)
    if (!scenarioCalls.count(callId))
      c.fail("V8", fmt::format("{} executed {} time(s) but is no call of the scenario", callId, n));
}

// V8 when recovery finished the task: the workspace meets the scenario's expectations and
// equals the reference run's.
void checkFinishedWorkspace(const Scenario& sc, const Reference& ref, const fs::path& ws,
                            Checks& c) {
  auto snap = snapshotWorkspace(ws);
  if (snap != ref.finalWorkspace) {
    std::string diff;
    for (const auto& [p, content] : ref.finalWorkspace) {
      auto it = snap.find(p);
      if (it == snap.end())
        diff = p + " missing";
      else if (it->second != content)
        diff = p + " differs";
      if (!diff.empty()) break;
    }
    if (diff.empty())
      for (const auto& [p, content] : snap)
        if (!ref.finalWorkspace.count(p)) {
          diff = p + " is extra";
          break;
        }
    c.fail("V8", "final workspace differs from the reference run: " + diff);
  }
  for (const auto& line : workspace::expectedProblems(sc.spec, ws))
    c.fail("V8", "final workspace: " + line);
}

namespace {
// What the recover process's summary (its first stdout line) says it did.
struct RecoverOutcome {
  Json plan;
  bool parked = false, continued = false;
};

std::optional<RecoverOutcome> recoverOutcome(const std::string& recoverStdout, Checks& c) {
  Json summary;
  try {
    summary = Json::parse(recoverStdout.substr(0, recoverStdout.find('\n')));
  } catch (...) {
    c.fail("V8", "recover printed no JSON summary");
    return std::nullopt;
  }
  RecoverOutcome o;
  o.plan = summary.value("plan", Json());
  o.parked = o.plan.is_object() && o.plan.value("decision", "") == "park";
  o.continued = !summary.value("continuation", Json()).is_null();
  return o;
}

// After a barrier kill (of the first run or of the recovery's continuation): the recovery parks
// when the crash facts demand it (`whose`: whose calls, for the message, "" for the first run's)
// and continues when they leave nothing unknown; the executions follow from that decision; a park
// leaves the workspace as the crash left it, a continuation the scenario's end state.
void checkParkOrContinue(const Scenario& sc, const barrier::RecoveryExpectation& want,
                         const std::string& whose, const RecoverOutcome& o,
                         const std::vector<int>& executions, const Reference& ref,
                         const std::map<std::string, int>& effects,
                         const std::string& recoverStdout, const WorkspaceSnapshot& atCrash,
                         const fs::path& ws, Checks& c) {
  if (want.mustPark && (!o.parked || o.continued))
    c.fail("V8",
           "recovery did not park although " + (whose.empty() ? "" : whose + "'s ") + want.why);
  else if (!want.mustPark && !want.mayPark && (o.parked || !o.continued))
    c.fail("V8", "recovery did not continue although every dispatched call" +
                     (whose.empty() ? "" : " of " + whose) +
                     " has its response: " + o.plan.dump().substr(0, 200));
  checkExecutions(sc, executions, effects, c);
  if (o.parked) {
    if (auto bad = parkProblem(recoverStdout, std::nullopt); !bad.empty()) c.fail("V8", bad);
    if (auto bad = workspaceChange(atCrash, snapshotWorkspace(ws)); !bad.empty())
      c.fail("V8", "recovery parked but changed the workspace: " + bad);
  } else {
    checkFinishedWorkspace(sc, ref, ws, c);
  }
}
}  // namespace

// V8 after recovering from an unnamed barrier (verdicts/barrier.h): the park decision the crash
// facts demand, the executions that follow from it, and an untouched workspace after a park or
// the scenario's end state after a continuation.
void checkBarrierRecovery(const Scenario& sc, const barrier::CrashFacts& facts,
                          const Reference& ref, const std::map<std::string, int>& effects,
                          const std::string& recoverStdout, const WorkspaceSnapshot& atCrash,
                          const fs::path& ws, Checks& c) {
  const auto o = recoverOutcome(recoverStdout, c);
  if (!o) return;
  const bool continued = o->continued;
  if (!facts.accepted || facts.finished) {
    // No task to continue: it was never accepted, or the run's terminal fact is durable.
    if (continued)
      c.fail("V8", std::string("recovery continued a task that ") +
                       (facts.finished ? "had already ended" : "was never accepted"));
    checkExecutions(sc, barrier::expectedExecutions(sc, facts, true), effects, c);
    if (facts.finished)
      checkFinishedWorkspace(sc, ref, ws, c);
    else if (auto bad = workspaceChange(atCrash, snapshotWorkspace(ws)); !bad.empty())
      c.fail("V8", "recovery had no task but changed the workspace: " + bad);
    return;
  }
  checkParkOrContinue(sc, barrier::expectRecovery(sc, facts), "", *o,
                      barrier::expectedExecutions(sc, facts, o->parked), ref, effects,
                      recoverStdout, atCrash, ws, c);
}

void checkRecoveryBarrierRecovery(const Scenario& sc, const recovery_barrier::Judged& judged,
                                  const Reference& ref, const std::map<std::string, int>& effects,
                                  const std::string& recoverStdout,
                                  const WorkspaceSnapshot& atCrash, const fs::path& ws, Checks& c) {
  const auto o = recoverOutcome(recoverStdout, c);
  if (!o) return;
  const auto& state = judged.state;
  if (state.continuation.finished) {
    // The continuation's terminal fact is durable: the task ended; only its header is left.
    if (o->continued)
      c.fail("V8", "recovery continued a task whose continuation had already ended");
    checkExecutions(sc,
                    recovery_barrier::expectedExecutions(sc, judged.firstCall,
                                                         judged.effectsAtPrimary, state, false),
                    effects, c);
    checkFinishedWorkspace(sc, ref, ws, c);
    return;
  }
  checkParkOrContinue(sc, recovery_barrier::expectRecovery(sc, judged.firstCall, state),
                      "the continuation", *o,
                      recovery_barrier::expectedExecutions(
                          sc, judged.firstCall, judged.effectsAtPrimary, state, o->parked),
                      ref, effects, recoverStdout, atCrash, ws, c);
}

std::string replayProblem(const std::string& modelLog,
                          const std::optional<std::set<std::string>>& firstReplay) {
  size_t lineNo = 0;
  std::istringstream in(modelLog);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++lineNo;
    Json step;
    try {
      step = Json::parse(line);
    } catch (...) {
      return fmt::format("model log line {} is not JSON", lineNo);
    }
    const std::string at =
        fmt::format("provider step {} of run {}", step.value("step", 0), step.value("runId", "?"));
    const Json items = step.value("history", Json::array());
    int users = 0;
    std::set<std::string> calls, answered;
    for (size_t i = 0; i < items.size(); ++i) {
      const Json& it = items[i];
      const std::string kind = it.value("kind", ""), id = it.value("callId", "");
      if (it.value("role", "") == "user" && kind == "text") {
        if (i != 0) return at + ": the user message is not the first item of the history";
        ++users;
      }
      if (kind == "function_call" && !calls.insert(id).second)
        return fmt::format("{}: call {} appears twice in the history", at, id);
      if (kind == "function_response") {
        if (!calls.count(id))
          return fmt::format("{}: the response of {} comes before its call", at, id);
        if (!answered.insert(id).second)
          return fmt::format("{}: call {} is answered twice in the history", at, id);
      }
    }
    if (users != 1) return fmt::format("{}: {} user message(s) in the history", at, users);
    for (const auto& id : calls)
      if (!answered.count(id))
        return fmt::format("{}: call {} is in the history without its response", at, id);
    if (lineNo == 1 && firstReplay && calls != *firstReplay) {
      auto list = [](const std::set<std::string>& s) {
        std::string out;
        for (const auto& c : s) out += (out.empty() ? "" : ",") + c;
        return "{" + out + "}";
      };
      return fmt::format("{}: the continuation replays calls {}, the oracle expects {}", at,
                         list(calls), list(*firstReplay));
    }
  }
  return "";
}

std::string claimSettlementProblem(const fs::path& store, const ClaimSettlement& want) {
  const auto claims = observed::claims(store);  // in claim order: the killed one is the first
  if (claims.empty()) return "no continuation claim after recovery";
  const auto& claim = claims.front();
  if (claim.startKind != want.startKind)
    return fmt::format("the killed continuation's claim {} has start {}, the contract expects {}",
                       claim.claimId, claim.startKind.value_or("none"), want.startKind);
  for (const auto& run : observed::runs(store)) {
    if (run.runId != claim.targetRunId) continue;
    const std::string failureClass = run.header.value("failureClass", "");
    const bool abandoned = failureClass == code::continuation_abandoned_before_provider_dispatch;
    if (run.status != code::failed || abandoned != want.abandoned)
      return fmt::format(
          "the killed continuation's target {} is {} ({}), the contract expects "
          "failed {} {}",
          run.runId, run.status, failureClass.empty() ? "-" : failureClass,
          want.abandoned ? "with" : "without",
          code::continuation_abandoned_before_provider_dispatch);
    return "";
  }
  return fmt::format("the killed continuation's target {} has no header after recovery",
                     claim.targetRunId);
}

namespace {

// One run after recovery, resolved once.
struct ResolvedRun {
  RunHeader header;
  std::vector<RuntimeEvent> events;
  RecoveryResolution resolution;
};

std::vector<ResolvedRun> resolveRuns(RuntimeStore& st) {
  std::vector<ResolvedRun> resolved;
  for (auto& h : st.listRuns()) {
    auto ev = eventsOf(st, h);
    auto res = resolveRecovery(ev);
    resolved.push_back({std::move(h), std::move(ev), std::move(res)});
  }
  return resolved;
}

// The decision of a call after recovery: a completed decision in any run wins.
std::optional<ToolDecision> finalDecision(const std::vector<ResolvedRun>& resolved,
                                          const std::string& callId) {
  std::optional<ToolDecision> first;
  for (const auto& r : resolved)
    for (const auto& d : r.resolution.decisions) {
      if (d.toolCallId != callId) continue;
      if (d.status == code::completed) return d;
      if (!first) first = d;
    }
  return first;
}

// Every run is terminal, agrees with the independent model and carries its markers.
void checkRecoveredRuns(const std::vector<ResolvedRun>& resolved, Checks& c) {
  for (const auto& r : resolved) {
    if (!isTerminalStatus(r.header.status))
      c.fail("V8",
             fmt::format("run {} is still {} after recovery", r.header.runId, r.header.status));
    if (auto bad = modelDisagreement(r.events, r.resolution, "recovered run " + r.header.runId);
        !bad.empty())
      c.fail("V4", bad);
    if (auto bad = runMarkerProblem(r.events); !bad.empty()) c.fail("V3", "after recovery: " + bad);
  }
}

// The calls the continuation's first provider step must be handed (the oracle's, for a single
// named kill); nullopt where the oracle does not fix them.
std::optional<std::set<std::string>> expectedFirstReplay(const CaseId& id,
                                                         const CaseExpectation& x) {
  if (id.isBarrier() || id.isDoubleFault() || !x.ok) return std::nullopt;
  std::set<std::string> calls;
  for (const auto& op : x.ops)
    if (op.response || (op.armed && x.outcome == Outcome::completed_bundle))
      calls.insert(op.callId);
  return calls;
}

// What the provider was handed after the crash, the claim saga, the history and the recovery's
// exit.
void checkContinuationAfterRecovery(const CaseId& id, const CaseExpectation& x,
                                    const barrier::CrashFacts& barrierFacts, const fs::path& store,
                                    RuntimeStore& st, int exitCode, const SpawnSpec& recover,
                                    Checks& c, const recovery_barrier::Judged* recoveryBarrier) {
  if (!recover.modelInputsFile.empty())
    if (auto bad = replayProblem(readFile(recover.modelInputsFile), expectedFirstReplay(id, x));
        !bad.empty())
      c.fail("V8", "replay: " + bad);
  if (auto want = expectClaimSettlement(id))
    if (auto bad = claimSettlementProblem(store, *want); !bad.empty())
      c.fail("V8", "claim saga: " + bad);
  if (recoveryBarrier && recoveryBarrier->state.settle)
    if (auto bad = claimSettlementProblem(store, *recoveryBarrier->state.settle); !bad.empty())
      c.fail("V8", "claim saga: " + bad);
  const int wantUserMessages = id.isBarrier() && !barrierFacts.accepted ? 0 : 1;
  if (auto bad = continuationHistoryProblem(st, wantUserMessages); !bad.empty())
    c.fail("V8", "history after recovery: " + bad);
  if (exitCode != 0)
    c.fail("V8", fmt::format("crashsim-agent recover exited {}: {}", exitCode,
                             lastLine(recover.stderrFile)));
}

// A named crash the contract parks: the armed call parked with the oracle's (or the external
// change's) reason, the plan's park reason, the workspace as the crash left it.
void checkParkedAfterRecovery(const Scenario& sc, const CaseExpectation& x, bool afterCrash,
                              const std::vector<ResolvedRun>& resolved, const fs::path& ws,
                              const WorkspaceSnapshot& atCrash, const SpawnSpec& recover,
                              Checks& c) {
  const auto& armed = sc.calls[*x.armedCall];
  auto d = finalDecision(resolved, armed.id);
  // afterCrash: the external change decides the park reason (scenario data).
  const std::string wantStatus = afterCrash ? std::string(code::parked) : x.finalStatus;
  const std::string wantReason = afterCrash ? sc.spec.afterCrash->parkedReason : x.finalReason;
  if (!d || d->status != wantStatus || d->reason != wantReason)
    c.fail("V8",
           fmt::format("{} after recovery is {}/{}, expected parked as {}/{}", armed.id,
                       d ? d->status : "absent", d ? d->reason : "-", wantStatus, wantReason));
  if (afterCrash)
    for (const auto& line : workspace::afterCrashProblems(sc.spec, ws))
      c.fail("V8", "workspace after recovery: " + line);
  // The continuation parks with the contract's reason (spec e.2 step 4): a replay gap is
  // provider_replay_non_suffix_gap; an unsettled segment is runtime_ledger_unreadable.
  // An external change that parks the armed call of a step with a replay gap: either reason.
  const std::optional<bool> gap = x.outcome != Outcome::parked_replay_gap
                                      ? std::optional<bool>(false)
                                  : afterCrash ? std::nullopt
                                               : std::optional<bool>(true);
  if (auto bad = parkProblem(readFile(recover.stdoutFile), gap); !bad.empty()) c.fail("V8", bad);
  // A park changes nothing in the workspace: every file is as the crash (and the external
  // change) left it; only the tool's own temp file of the interrupted call may be gone.
  if (auto bad = workspaceChange(atCrash, snapshotWorkspace(ws)); !bad.empty())
    c.fail("V8", "recovery parked but changed the workspace: " + bad);
}

// A named crash the contract continues: the reference's workspace and the armed call's final
// decision.
void checkFinishedAfterRecovery(const Scenario& sc, const CaseExpectation& x, const Reference& ref,
                                const std::vector<ResolvedRun>& resolved, const fs::path& ws,
                                Checks& c) {
  checkFinishedWorkspace(sc, ref, ws, c);
  if (!x.armedCall || x.finalStatus.empty()) return;
  const auto& armed = sc.calls[*x.armedCall];
  auto d = finalDecision(resolved, armed.id);
  if (!d || d->status != x.finalStatus || d->reason != x.finalReason)
    c.fail("V8", fmt::format("{} after recovery is {}/{}, expected {}/{}", armed.id,
                             d ? d->status : "absent", d ? d->reason : "-", x.finalStatus,
                             x.finalReason));
}

// The end of a named crash's recovery: parked or finished, as the oracle says.
void checkNamedCrashEnd(const Scenario& sc, const CaseExpectation& x, CrashPoint endFp,
                        bool afterCrash, const Reference& ref,
                        const std::vector<ResolvedRun>& resolved, const fs::path& ws,
                        const WorkspaceSnapshot& atCrash, const SpawnSpec& recover, Checks& c) {
  const bool parked = expectParked(sc, x, endFp);
  if (!x.ok)
    c.fail("V8", "oracle: " + x.whyNot);
  else if (parked && !x.armedCall)
    c.fail("V8", "oracle: scenario afterCrash names " + endFp.str() +
                     ", which has no armed operation to park");
  else if (parked)
    checkParkedAfterRecovery(sc, x, afterCrash, resolved, ws, atCrash, recover, c);
  else
    checkFinishedAfterRecovery(sc, x, ref, resolved, ws, c);
}

}  // namespace

void checkRecovery(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                   const barrier::CrashFacts& barrierFacts, bool afterCrash, const Reference& ref,
                   const fs::path& store, const fs::path& ws, const WorkspaceSnapshot& atCrash,
                   int exitCode, const SpawnSpec& recover, Checks& c,
                   const recovery_barrier::Judged* recoveryBarrier) {
  const observed::ReadScope reads(store);
  try {
    auto effects = readEffects(store / "effects.jsonl");
    // The kill the task's end follows from: the agent run's, or the continuation's inside its own
    // calls (then `x` is expectContinuationKill's, in the whole scenario's terms).
    const CrashPoint endFp = isContinuationKill(id) ? *id.recoveryFailpoint : id.failpoint;
    // Executions per call come from the scenario and the contract (oracle), never from a run.
    if (!id.isBarrier() && !id.isRecoveryBarrier())
      checkExecutions(sc, expectedExecutions(sc, x, endFp), effects, c);
    auto st = RuntimeStore::open(store);
    const std::vector<ResolvedRun> resolved = resolveRuns(*st);
    checkRecoveredRuns(resolved, c);
    checkContinuationAfterRecovery(id, x, barrierFacts, store, *st, exitCode, recover, c,
                                   recoveryBarrier);
    if (id.isRecoveryBarrier()) {
      if (!recoveryBarrier)
        c.fail("V8", "no state of the recovery barrier kill to judge (V3 could not read it)");
      else
        checkRecoveryBarrierRecovery(sc, *recoveryBarrier, ref, effects,
                                     readFile(recover.stdoutFile), atCrash, ws, c);
    } else if (id.isBarrier()) {
      checkBarrierRecovery(sc, barrierFacts, ref, effects, readFile(recover.stdoutFile), atCrash,
                           ws, c);
    } else {
      checkNamedCrashEnd(sc, x, endFp, afterCrash, ref, resolved, ws, atCrash, recover, c);
    }
    if (!c.failed("V8")) c.pass("V8");
  } catch (const std::exception& e) {
    c.fail("V8", std::string("error after recovery: ") + e.what());
  }
}

void checkGateRefusal(const pathmut::Expectation& e, const WorkspaceSnapshot& storeBefore,
                      const fs::path& store, const fs::path& ws, const fs::path& hitsFile,
                      const ChildResult& r, const SpawnSpec& recover, Checks& c) {
  const std::string what =
      fmt::format("a workspace root that is {} ", e.rootFile ? "a file" : "gone");
  if (!r.exited) {
    c.fail("V8", what + "must be refused at start-up; crashsim-agent recover " + r.describe());
    return;
  }
  std::string gotCode;
  try {
    const std::string out = readFile(recover.stdoutFile);
    gotCode = Json::parse(out.substr(0, out.find('\n')))["error"].value("code", "");
  } catch (...) {
  }
  if (r.exitCode != 2 || gotCode != e.code)
    c.fail("V8",
           fmt::format("{}must be refused at start-up with {} (exit 2; {}); recover exited {} "
                       "with code '{}': {}",
                       what, e.code, e.rule, r.exitCode, gotCode, lastLine(recover.stderrFile)));
  WorkspaceSnapshot after = snapshotWorkspace(store), before = storeBefore;
  for (auto* snap : {&after, &before}) snap->erase("agent-exit.json");
  if (after != before) {
    std::string diff;
    for (const auto& [k, v] : after)
      if (!before.count(k) || before.at(k) != v) diff += (diff.empty() ? "" : ", ") + k;
    for (const auto& [k, v] : before)
      if (!after.count(k)) diff += (diff.empty() ? "" : ", ") + k + " (removed)";
    c.fail("V8", "start-up refused the workspace root but wrote the store first: " + diff);
  }
  if (const auto hits = readHits(hitsFile))
    for (CrashPoint fp : CrashPoint::all())  // S: a read-only open may commit in a private copy
      if (fp != points::S && (*hits)[fp] != 0) {
        c.fail("V8",
               fmt::format("a refused start-up reached {} {} time(s)", fp.name(), (*hits)[fp]));
        break;
      }
  std::error_code ec;
  const auto st = fs::symlink_status(ws, ec);
  if (!e.rootFile && fs::exists(st))
    c.fail("V8", "the removed workspace root exists again after the refused start-up");
  if (e.rootFile && (!fs::is_regular_file(st) || readFile(ws) != *e.rootFile))
    c.fail("V8", "the file in the workspace root's place was changed by the refused start-up");
  if (!c.failed("V8")) c.pass("V8");
}

void checkAdoptedRoot(const pathmut::Expectation& e, const fs::path& ws,
                      const std::string& recoverStdout, Checks& c) {
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(ws, ec)) ||
      fs::read_symlink(ws, ec).string() != e.rootLink.value_or(""))
    c.fail("V8", "the workspace root's path is no longer the link to its moved copy");
  // A plan that continues passed every boundary gate, step 6 included; one that parked earlier
  // (a replay gap, an unsettled call: e.2) need not have reached it.
  bool named = false, continues = false;
  try {
    const Json plan = Json::parse(recoverStdout.substr(0, recoverStdout.find('\n')))["plan"];
    continues = plan.value("decision", "") == "continue";
    for (const Json& d : plan.value("diagnostics", Json::array()))
      named = named || d.value("code", "") == e.code;
  } catch (...) {
  }
  if (continues && !named)
    c.fail("V8", fmt::format("the workspace was moved behind a symlink, but the plan does not name "
                             "{} ({})",
                             e.code, e.rule));
}

}  // namespace crashsim::harness
