// Oracle expectations for one case, from the table and the scenario's call list only.
#include "crashsim/harness/oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/harness/case_id.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace {

namespace c = crashsim::code;
using namespace points;

bool stepLevel(CrashPoint fp) { return fp == P0 || fp == P7; }

// Does this call pass the call-level failpoint fp (P1..P6)?
bool reaches(const ScenarioCall& call, CrashPoint fp) {
  if (fp == P1) return true;
  if (fp == P3) return call.writesFile();
  return call.dispatched();
}

// A call the crash state holds nothing of.
OpExpectation absentOp(const ScenarioCall& call) {
  OpExpectation e;
  e.callId = call.id;
  e.tool = call.name;
  e.responseIsError = call.refused || call.expectError;
  return e;
}

// A call that finished normally before the kill.
OpExpectation completedOp(const ScenarioCall& call) {
  OpExpectation e = absentOp(call);
  e.call = true;
  e.dispatch = call.dispatched();
  e.response = true;
  e.status = c::completed;
  e.reason = c::matching_response;
  e.settlementOrigin = call.dispatched() ? c::normal_t2 : c::pre_t1_synthetic;
  return e;
}

OpExpectation committedOnlyOp(const ScenarioCall& call) {
  OpExpectation e = absentOp(call);
  e.call = true;
  e.status = c::definitely_not_dispatched;
  e.reason = c::new_protocol_before_dispatch;
  return e;
}

// The model step index of the k-th (1-based) step that issues calls, if any.
std::optional<size_t> toolStep(const Scenario& s, int k) {
  int seen = 0;
  std::optional<size_t> last;
  for (const auto& call : s.calls) {
    if (last == call.step) continue;
    last = call.step;
    if (++seen == k) return call.step;
  }
  return std::nullopt;
}

}  // namespace

std::vector<CrashPoint> recoveryPoints() {
  std::vector<CrashPoint> out = pointRange(P8, P11);
  for (CrashPoint p : pointRange(P14, P17)) out.push_back(p);
  return out;
}

std::vector<CrashPoint> recoveryReachPoints() {
  std::vector<CrashPoint> out = pointRange(P0, P7);
  for (CrashPoint p : recoveryPoints()) out.push_back(p);
  return out;
}

PointCounts predictedHits(const Scenario& s) {
  PointCounts h;
  h[P0] = h[P7] = static_cast<int>(s.toolSteps);
  for (const auto& call : s.calls)
    for (CrashPoint fp : pointRange(P1, P6)) h[fp] += reaches(call, fp);
  h[P8] = 1;
  h[P9] = 1;
  const int captures = static_cast<int>(predictedCaptures(s).size());
  if (captures > 0)
    for (CrashPoint fp : pointRange(P18, P22)) h[fp] = captures;
  return h;
}

namespace {

// The workspace a capture after call `upTo` (nullopt: the baseline) snapshots, from the seed and
// the Writes before it: its files (for their .gitattributes), its paths (L without ignore rules:
// an ignored path's attribute is predicted as a refusal; no built-in scenario has one) and
// whether a submodule is dirty. Edits keep their path's content here (an Edit of a
// .gitattributes is not modelled). A submodule's gitlink path is in L, the files inside it are
// not (they are its repository's): a Write or Edit there changes the submodule instead.
struct SnapshotModel {
  std::map<std::string, std::string> files;
  std::vector<std::string> paths;
  bool dirtySubmodule = false;
};

// The gitlink path `rel` lies in ("lib" for "lib/x.txt"), or "".
std::string submoduleOf(const Scenario& s, const std::string& rel) {
  if (!s.spec.git) return "";
  for (const auto& [path, sub] : s.spec.git->submodules)
    if (rel.rfind(path + "/", 0) == 0) return path;
  return "";
}

// c.4 check 7's "status --porcelain in it empty": every committed file keeps its bytes and no
// other file is there (`now`: the submodule's files as the seed's edits and the calls left them).
bool submoduleChanged(const WorkspaceSubmoduleSeed& sub,
                      const std::map<std::string, std::string>& now) {
  for (const auto& [rel, content] : now)
    if (auto it = sub.files.find(rel); it == sub.files.end() || it->second != content) return true;
  return false;
}

SnapshotModel snapshotAt(const Scenario& s, std::optional<size_t> upTo) {
  SnapshotModel m;
  m.files = s.spec.files;
  std::set<std::string> paths;
  for (const auto& [path, text] : s.spec.files) paths.insert(path);
  for (const auto& [path, link] : s.spec.symlinks) paths.insert(path);
  std::map<std::string, std::map<std::string, std::string>> inSubmodule;  // gitlink → rel → bytes
  if (s.spec.git)
    for (const auto& [path, sub] : s.spec.git->submodules) {
      paths.insert(path);  // the gitlink (c.3 step 3: 160000)
      auto& now = inSubmodule[path];
      now = sub.files;
      for (const auto& [rel, content] : sub.edits) now[rel] = content;
    }
  for (size_t i = 0; upTo && i <= *upTo; ++i) {
    const ScenarioCall& call = s.calls[i];
    if (!call.writesFile() || call.expectError) continue;
    const Json& args = s.spec.model[call.step].calls[call.indexInStep].args;
    if (!args.contains("path") || !args["path"].is_string()) continue;
    const std::string path = args["path"].get<std::string>();
    if (const std::string sub = submoduleOf(s, path); !sub.empty()) {
      std::string& bytes = inSubmodule[sub][path.substr(sub.size() + 1)];
      if (call.name == "Write" && args.contains("content") && args["content"].is_string())
        bytes = args["content"].get<std::string>();
      else if (call.name == "Edit" && args.contains("old_string") && args.contains("new_string"))
        if (const auto at = bytes.find(args["old_string"].get<std::string>());
            at != std::string::npos)
          bytes.replace(at, args["old_string"].get<std::string>().size(),
                        args["new_string"].get<std::string>());
      continue;
    }
    paths.insert(path);
    if (call.name == "Write" && args.contains("content") && args["content"].is_string())
      m.files[path] = args["content"].get<std::string>();
  }
  if (s.spec.git)
    for (const auto& [path, sub] : s.spec.git->submodules)
      m.dirtySubmodule = m.dirtySubmodule || submoduleChanged(sub, inSubmodule[path]);
  m.paths.assign(paths.begin(), paths.end());
  return m;
}

// c.4 checks 7 and 8 pass for the capture after `upTo` (checks 4–6 pass for a seeded git
// workspace: the scenario format has no nested repository outside a gitlink and no sparse
// checkout; a gitlink's HEAD is its seed commit, which no tool moves).
bool eligibleAt(const Scenario& s, std::optional<size_t> upTo) {
  const SnapshotModel m = snapshotAt(s, upTo);
  return !m.dirtySubmodule && !conversionAttribute(m.files, m.paths);
}

}  // namespace

std::vector<PredictedCapture> predictedCaptures(const Scenario& s) {
  std::vector<PredictedCapture> out;
  if (s.spec.workspacePolicy.checkpointRequirement == "disabled") return out;
  // d.1 (a): P0#1 = no step's event committed yet. A capture refused by c.4 check 7 or 8 never
  // reaches P18 (d.3 under optional_legacy: it fails alone), so it is not one of P18#k..P22#k.
  if (eligibleAt(s, std::nullopt)) out.push_back({P0, 1, std::nullopt});
  int p6 = 0;
  for (size_t i = 0; i < s.calls.size(); ++i) {
    if (!reaches(s.calls[i], P6)) continue;
    ++p6;
    if (s.calls[i].name != "Read" && eligibleAt(s, i))
      out.push_back({P6, p6, i});  // d.1 (b), e.1's effect
  }
  return out;
}

std::optional<PredictedCapture> captureAt(const Scenario& s, int hit) {
  const auto all = predictedCaptures(s);
  if (hit < 1 || static_cast<size_t>(hit) > all.size()) return std::nullopt;
  return all[static_cast<size_t>(hit) - 1];
}

std::optional<PredictedRestore> predictedRestore(const Scenario& s) {
  const auto& policy = s.spec.workspacePolicy;
  if (policy.checkpointRequirement == "disabled" || policy.driftAction != "isolated_restore" ||
      !s.spec.afterCrash)
    return std::nullopt;
  PredictedRestore out;
  for (const std::string& name : s.spec.afterCrash->failpoints)
    if (auto fp = CrashPoint::parse(name); fp && fp->group() == PointGroup::workspaceRestore)
      out.failpoints.push_back(*fp);
  const auto captures = predictedCaptures(s);
  if (out.failpoints.empty() || captures.empty() || !captures.back().call) return std::nullopt;
  out.captureHit = static_cast<int>(captures.size());
  out.ledgerPoint = captures.back().ledgerPoint;
  out.ledgerHit = captures.back().ledgerHit;
  out.checkpointsBefore = expectedCheckpointsAfterCaptureKill(P22, out.captureHit);
  return out;
}

int expectedCheckpointsAfterCaptureKill(CrashPoint fp, int hit) {
  return fp == P22 ? hit : hit - 1;
}

namespace {

// P8/P9: the run's end; every call finished.
CaseExpectation expectRunLevel(const Scenario& s, CrashPoint fp, int hit) {
  CaseExpectation x;
  if (hit != 1) {
    x.whyNot = fmt::format("{} is reached once per run; hit {} is not", fp.name(), hit);
    return x;
  }
  x.row = &oracleRow(fp, c::reconcile);  // run-level rows are identical for every mode
  for (const auto& call : s.calls) x.ops.push_back(completedOp(call));
  x.terminalEvent = x.row->terminalEvent;
  x.outcome = x.row->outcome;
  x.ok = true;
  return x;
}

// P0/P7: a provider step with calls; P0: its calls are not committed, P7: they all finished.
CaseExpectation expectStepLevel(const Scenario& s, CrashPoint fp, int hit) {
  CaseExpectation x;
  x.armedStep = toolStep(s, hit);
  if (!x.armedStep) {
    x.whyNot = fmt::format("scenario {} has {} step(s) with calls; {} hit {} names none", s.id,
                           s.toolSteps, fp.name(), hit);
    return x;
  }
  x.row = &oracleRow(fp, c::reconcile);  // step-level rows are identical for every mode
  x.outcome = x.row->outcome;
  for (const auto& call : s.calls) {
    const bool done = call.step < *x.armedStep || (fp == P7 && call.step == *x.armedStep);
    x.ops.push_back(done ? completedOp(call) : absentOp(call));
  }
  x.ok = true;
  return x;
}

// Spec e.3 step 4 on a parallel step: the step's calls are all committed before the first
// runs, and results follow the calls. If recovery would continue but a call of the step
// stays unanswered (the armed one at P1, later siblings) while some result of the step
// exists (an earlier sibling's, or the armed one's own at P4/P5 bundle or P6), the
// unanswered call is not a suffix: the continuation parks instead of re-issuing it.
void applyReplayGap(const Scenario& s, CaseExpectation& x) {
  const bool wouldContinue = x.outcome == Outcome::reissued_runs_once ||
                             x.outcome == Outcome::completed_bundle ||
                             x.outcome == Outcome::completed_ran_once;
  if (!wouldContinue) return;
  const ScenarioCall& armed = s.calls[*x.armedCall];
  const bool armedAnswered = x.outcome != Outcome::reissued_runs_once;
  bool earlierSibling = false, laterSibling = false;
  for (size_t i = 0; i < s.calls.size(); ++i) {
    if (s.calls[i].step != armed.step || i == *x.armedCall) continue;
    (i < *x.armedCall ? earlierSibling : laterSibling) = true;
  }
  const bool unanswered = !armedAnswered || laterSibling;
  if (unanswered && (earlierSibling || armedAnswered)) {
    x.outcome = Outcome::parked_replay_gap;
    if (!armedAnswered) {  // P1: stays committed-only, never dispatched
      x.finalStatus = x.row->status;
      x.finalReason = x.row->reason;
    }
  }
}

// Every call's durable facts around the armed one: the armed call as its row says, earlier
// calls finished, its step's later calls committed only, later steps' calls absent.
void placeCalls(const Scenario& s, CaseExpectation& x) {
  const ScenarioCall& armed = s.calls[*x.armedCall];
  for (size_t i = 0; i < s.calls.size(); ++i) {
    const ScenarioCall& call = s.calls[i];
    if (i == *x.armedCall) {
      OpExpectation e = absentOp(call);
      e.armed = true;
      e.call = x.row->call;
      e.dispatch = x.row->dispatch;
      e.response = x.row->response;
      e.status = x.row->status;
      e.reason = x.row->reason;
      e.settlementOrigin = x.row->settlementOrigin;
      x.ops.push_back(e);
    } else if (i < *x.armedCall) {
      x.ops.push_back(completedOp(call));  // earlier calls (and earlier siblings) finished
    } else if (call.step == armed.step) {
      // The step's calls are committed together; later siblings are committed, not dispatched.
      x.ops.push_back(committedOnlyOp(call));
    } else {
      x.ops.push_back(absentOp(call));
    }
  }
}

// P1–P6: the hit-th call that reaches the point is armed; its tool's recovery mode picks the row.
CaseExpectation expectCallLevel(const Scenario& s, CrashPoint fp, int hit) {
  CaseExpectation x;
  int seen = 0;
  for (size_t i = 0; i < s.calls.size(); ++i) {
    if (!reaches(s.calls[i], fp)) continue;
    if (++seen == hit) {
      x.armedCall = i;
      break;
    }
  }
  if (!x.armedCall) {
    x.whyNot = fmt::format("scenario {} has {} call(s) reaching {}; hit {} names none", s.id, seen,
                           fp.name(), hit);
    return x;
  }
  x.row = &oracleRow(fp, recoveryModeOfTool(s.calls[*x.armedCall].name));
  x.outcome = x.row->outcome;
  x.finalStatus = x.row->finalStatus;
  x.finalReason = x.row->finalReason;
  applyReplayGap(s, x);
  placeCalls(s, x);
  x.ok = true;
  return x;
}

}  // namespace

CaseExpectation expectCase(const Scenario& s, CrashPoint fp, int hit) {
  if (fp.group() != PointGroup::crashPath || hit < 1) {
    CaseExpectation x;
    x.whyNot = fmt::format("no failpoint {} hit {}", fp.name(), hit);
    return x;
  }
  if (fp >= P10) {
    CaseExpectation x;
    x.whyNot = fmt::format("{} is reached only by a recovery process", fp.name());
    return x;
  }
  if (fp >= P8) return expectRunLevel(s, fp, hit);
  if (stepLevel(fp)) return expectStepLevel(s, fp, hit);
  return expectCallLevel(s, fp, hit);
}

bool expectParked(const Scenario& s, const CaseExpectation& x, CrashPoint fp) {
  return workspace::afterCrashApplies(s.spec, fp.str()) ||
         x.outcome == Outcome::parked_by_reconcile || x.outcome == Outcome::parked_unsettled ||
         x.outcome == Outcome::parked_replay_gap;
}

std::vector<int> expectedExecutions(const Scenario& s, const CaseExpectation& x, CrashPoint fp) {
  std::vector<int> n(s.calls.size(), 0);
  const bool parked = expectParked(s, x, fp) && x.armedCall;
  for (size_t i = 0; i < s.calls.size(); ++i) {
    if (!s.calls[i].dispatched()) continue;
    if (!parked || i < *x.armedCall)
      n[i] = 1;
    else if (i == *x.armedCall)
      n[i] = fp >= P3 ? 1 : 0;
  }
  return n;
}

RecoveryKillExpectation expectRecoveryKill(CrashPoint rfp, int rhit) {
  RecoveryKillExpectation e;
  e.run = rhit;
  if (rfp == P8) {
    e.runs = rhit == 1 ? 1 : 0;
  } else if (rfp == P9) {
    e.terminalFact = true;
  } else if (rfp == P10) {
    e.run = 1;
    e.runs = 1;
    e.armedIndeterminate = true;
  } else {  // P11, P14, P15: the crashed run is sealed before any claim
    e.run = 1;
    e.runs = rfp == P11 ? 1 : 2;  // P14, P15: the target run exists too
    e.terminalFact = e.terminalHeader = true;
    e.claim = true;
    e.targetHeader = rfp != P11;
    e.claimStart = rfp == P15 ? std::string(c::runtime_admission) : "";
    e.targetEvents = rfp == P15 ? 1 : 0;
  }
  return e;
}

std::optional<ClaimSettlement> expectClaimSettlement(const CaseId& id) {
  if (id.recoveryFailpoint == P11 || id.recoveryFailpoint == P14)
    return ClaimSettlement{std::string(c::claim_repair), true};
  if (id.recoveryFailpoint == P15 || isContinuationKill(id))
    return ClaimSettlement{std::string(c::runtime_admission), false};
  return std::nullopt;
}

std::vector<Json> importedLegacyEvents(const Scenario& s) {
  std::vector<Json> out;
  if (!s.spec.legacyStore) return out;
  for (const Json& e : s.spec.legacyStore->events)
    if (!(e.contains("partial") && e["partial"] == true)) out.push_back(e);
  return out;
}

int interruptedLegacyRuns(const Scenario& s) {
  std::map<std::string, bool> terminal;  // run → its terminal fact is in the JSONL
  for (const Json& e : importedLegacyEvents(s)) {
    bool& t = terminal[e.value("runId", "")];
    t = t || decodeRuntimeEvent(e).isTerminal();
  }
  return static_cast<int>(
      std::count_if(terminal.begin(), terminal.end(), [](const auto& r) { return !r.second; }));
}

int predictedImportBatches(const Scenario& s) {
  if (!s.spec.legacyStore) return 0;
  const size_t n = importedLegacyEvents(s).size(), b = s.spec.legacyStore->batchEvents;
  return static_cast<int>((n + b - 1) / b);
}

size_t expectImportStoredEvents(const Scenario& s, const CaseId& id) {
  if (!s.spec.legacyStore) return 0;
  const size_t n = importedLegacyEvents(s).size(), b = s.spec.legacyStore->batchEvents;
  auto committed = [&](CrashPoint fp, int hit) {
    const size_t batches = static_cast<size_t>(fp == P16 ? hit - 1 : hit);
    return std::min(n, batches * b);
  };
  size_t stored = id.isImport() ? committed(id.failpoint, id.hit) : n;
  if (id.recoveryFailpoint && id.recoveryFailpoint->group() == PointGroup::legacyImport)
    stored = std::max(stored, committed(*id.recoveryFailpoint, id.recoveryHit.value_or(1)));
  return stored;
}

PointCounts predictedRecoveryHits(const Scenario& s, CrashPoint fp, int hit) {
  PointCounts h;
  if (fp.group() == PointGroup::legacyImport) {
    h[P16] = h[P17] = predictedImportBatches(s);
    // Then startup repair seals every imported run the JSONL left without a terminal fact
    // (spec g): its recovered terminal fact (P8) and its header (P9), once per such run.
    h[P8] = h[P9] = interruptedLegacyRuns(s);
    return h;
  }
  const CaseExpectation x = expectCase(s, fp, hit);
  if (!x.ok || fp == P9) return h;
  h[P8] = h[P9] = 1;  // repair: recovered terminal fact, then the header
  const bool indeterminateReconcile =
      x.armedCall && fp >= P2 && fp <= P5 &&
      recoveryModeOfTool(s.calls[*x.armedCall].name) == c::reconcile;
  if (indeterminateReconcile) h[P10] = 1;
  const bool parked =
      workspace::afterCrashApplies(s.spec, fp.str()) || x.outcome == Outcome::parked_by_reconcile ||
      x.outcome == Outcome::parked_unsettled || x.outcome == Outcome::parked_replay_gap;
  const bool continues = !parked && (x.outcome == Outcome::call_made_once ||
                                     x.outcome == Outcome::reissued_runs_once ||
                                     x.outcome == Outcome::completed_bundle ||
                                     x.outcome == Outcome::completed_ran_once || fp == P8);
  if (continues) {
    h[P11] = h[P14] = h[P15] = 1;
    h[P8] += 1;
    h[P9] += 1;
    if (auto first = continuationFirstCall(s, fp, hit)) {
      const auto own = predictedHits(continuationScenario(s, *first));
      for (CrashPoint p : pointRange(P0, P7)) h[p] = own[p];
    }
  }
  return h;
}

std::optional<size_t> continuationFirstCall(const Scenario& s, CrashPoint fp, int hit) {
  const CaseExpectation x = expectCase(s, fp, hit);
  if (!x.ok || expectParked(s, x, fp)) return std::nullopt;
  std::optional<size_t> first;
  switch (x.outcome) {
    case Outcome::call_made_once:  // P0: the armed step's calls were never committed
      for (size_t i = 0; i < s.calls.size() && !first; ++i)
        if (s.calls[i].step == *x.armedStep) first = i;
      break;
    case Outcome::reissued_runs_once:  // P1: trimmed, re-issued (first of its step, else a gap)
      first = *x.armedCall;
      break;
    case Outcome::completed_bundle:  // P4, P5 (bundle), P6: the armed call was the step's last
    case Outcome::completed_ran_once:
      if (x.armedCall) {
        first = *x.armedCall + 1;
      } else {  // P7: the armed step is answered
        for (size_t i = 0; i < s.calls.size() && !first; ++i)
          if (s.calls[i].step > *x.armedStep) first = i;
      }
      break;
    default:  // P8: every call answered, the continuation gives the final answer only
      break;
  }
  if (first && *first >= s.calls.size()) first.reset();
  return first;
}

Scenario continuationScenario(const Scenario& s, size_t firstCall) {
  Scenario c = s;
  c.calls.assign(s.calls.begin() + static_cast<std::ptrdiff_t>(std::min(firstCall, s.calls.size())),
                 s.calls.end());
  std::set<size_t> steps;
  for (const auto& call : c.calls) steps.insert(call.step);
  c.toolSteps = steps.size();
  return c;
}

PointCounts sweptContinuationKills(const Scenario& s, CrashPoint fp, int hit) {
  PointCounts n;
  const auto first =
      (fp == P0 || fp == P7) && hit == 1 ? continuationFirstCall(s, fp, hit) : std::nullopt;
  if (!first) return n;
  Scenario cont = continuationScenario(s, *first);
  if (fp == P7) {  // the continuation's first step only (its hits come first in the run)
    const size_t step = cont.calls.front().step;
    std::erase_if(cont.calls, [&](const ScenarioCall& c) { return c.step != step; });
    cont.toolSteps = 1;
  }
  const auto h = predictedHits(cont);
  for (CrashPoint p : pointRange(P0, P7)) n[p] = h[p];
  return n;
}

std::optional<size_t> continuationCallsFrom(const Scenario& s, CrashPoint fp, int hit) {
  if (!isAgentRunPoint(fp) || predictedRecoveryHits(s, fp, hit)[P11] == 0) return std::nullopt;
  return continuationFirstCall(s, fp, hit).value_or(s.calls.size());
}

bool sweptRecoveryBarriers(const Scenario& s, CrashPoint fp, int hit) {
  if (s.spec.legacyStore || !continuationCallsFrom(s, fp, hit)) return false;
  if (fp == P0 && hit == 1) return true;
  auto bundleThenContinue = [&](CrashPoint f, int h) {
    const auto r = predictedRecoveryHits(s, f, h);
    return r[P10] > 0 && r[P11] > 0;
  };
  if (!bundleThenContinue(fp, hit)) return false;
  // Of those, the one whose continuation makes the fewest calls itself (the continuation's calls
  // are P0#1's already), the first in case-id order among equals.
  const size_t from = *continuationCallsFrom(s, fp, hit);
  const auto hits = predictedHits(s);
  for (CrashPoint f : pointRange(P0, P9))
    for (int h = 1; h <= hits[f]; ++h) {
      if ((f == fp && h == hit) || !bundleThenContinue(f, h)) continue;
      const size_t other = *continuationCallsFrom(s, f, h);
      if (other > from || (other == from && std::make_pair(f, h) < std::make_pair(fp, hit)))
        return false;
    }
  return true;
}

bool racedPrimary(const Scenario& s, CrashPoint fp, int hit) {
  auto work = [&](int h) {
    const auto r = predictedRecoveryHits(s, fp, h);
    return r[P10] > 0 || r[P11] > 0;
  };
  if (!isAgentRunPoint(fp) || !work(hit)) return false;
  for (int h = 1; h < hit; ++h)
    if (work(h)) return false;
  return true;
}

CaseExpectation expectContinuationKill(const Scenario& s, const CaseId& id, CaseExpectation* run2) {
  CaseExpectation x;
  const auto first = continuationFirstCall(s, id.failpoint, id.hit);
  if (!isContinuationKill(id) || !first) {
    x.whyNot = fmt::format("the recovery of {}/{}#{} makes no tool call of its own", s.id,
                           id.failpoint.name(), id.hit);
    return x;
  }
  const Scenario cont = continuationScenario(s, *first);
  const CaseExpectation own = expectCase(cont, *id.recoveryFailpoint, id.recoveryHit.value_or(1));
  if (run2) *run2 = own;
  x = own;
  if (!own.ok) return x;
  x.ops.clear();
  for (size_t i = 0; i < *first; ++i) x.ops.push_back(completedOp(s.calls[i]));
  x.ops.insert(x.ops.end(), own.ops.begin(), own.ops.end());
  if (own.armedCall) x.armedCall = *own.armedCall + *first;
  return x;
}

}  // namespace crashsim::harness
