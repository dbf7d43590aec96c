// Reference runs and verified cases: V1–V8 per DESIGN.md "The harness".
#include "crashsim/harness/case_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/harness/oracle.h"
#include "crashsim/harness/powerloss_checks.h"
#include "crashsim/harness/supervisor.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"
#include "verdicts/barrier.h"
#include "verdicts/observed_store.h"
#include "verdicts/resolver_model.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using reports::Check;
using Json = nlohmann::json;

namespace {

constexpr const char* kMarkerFile = ".maka-workspace.json";

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sanitize(std::string_view id) {
  std::string out;
  for (char c : id)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return out;
}

std::string lastLine(const fs::path& p) {
  std::string s = readFile(p);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  auto nl = s.rfind('\n');
  std::string line = nl == std::string::npos ? s : s.substr(nl + 1);
  if (line.size() > 300) line = line.substr(0, 300) + "…";
  return line;
}

// The hit counts an unarmed run wrote (CRASHSIM_HITS_OUT), barriers S and F included; nullopt
// when the file is missing or unreadable (an agent without failpoints, a failed write): never a
// silent zero.
std::optional<std::array<int, 14>> readHits(const fs::path& p) {
  try {
    Json j = Json::parse(readFile(p));
    std::array<int, 14> h{};
    for (int i = 0; i < 14; ++i) h[static_cast<size_t>(i)] = j.at(failpointName(i)).get<int>();
    return h;
  } catch (...) {
    return std::nullopt;
  }
}

// "" when `reached` equals `predicted` over [from, to]; otherwise which failpoint differs.
std::string reachDifference(const std::array<int, 12>& predicted,
                            const std::array<int, 14>& reached, int from, int to,
                            const char* what) {
  for (int fp = from; fp <= to; ++fp)
    if (predicted[static_cast<size_t>(fp)] != reached[static_cast<size_t>(fp)])
      return fmt::format("{} reached P{} {} time(s), the oracle predicts {}", what, fp,
                         reached[static_cast<size_t>(fp)], predicted[static_cast<size_t>(fp)]);
  return "";
}

// The independent resolver model (verdicts/resolver_model.h: written from the contract, sharing
// no code with runtime/src/recovery) must agree with the runtime's resolution of a ledger, and a
// crash or a recovery never leaves a ledger the model calls corrupt. "" when both hold.
std::string modelDisagreement(const std::vector<RuntimeEvent>& events,
                              const RecoveryResolution& res, const std::string& which) {
  const model::Resolution m = model::resolve(events);
  if (m.hasCorruption) {
    std::string issues;
    for (const auto& i : m.issues) issues += " " + i.code + "@" + i.eventId;
    for (const auto& d : m.decisions)
      if (d.reason == std::string(code::recovery_fact_corruption) ||
          d.status == std::string(code::corruption))
        issues += " " + d.toolCallId + ":" + d.reason;
    return "the independent resolver model finds corruption in " + which + ":" + issues;
  }
  std::string diff = model::compare(m, res);
  if (diff.empty()) return "";
  if (auto nl = diff.find('\n'); nl != std::string::npos) diff.resize(nl);
  return "the resolver disagrees with the independent model on " + which + ": " + diff;
}

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

bool isTerminalStatus(const std::string& s) {
  return s == "completed" || s == "failed" || s == "cancelled";
}

std::string headerStatusOfTerminal(const RuntimeEvent& e) {
  if (!e.status) return "failed";
  switch (*e.status) {
    case EventStatus::completed:
      return "completed";
    case EventStatus::failed:
      return "failed";
    case EventStatus::aborted:
    case EventStatus::cancelled:
      return "cancelled";
    default:
      return "failed";
  }
}

std::vector<RuntimeEvent> eventsOf(const RuntimeStore& store, const RunHeader& h) {
  std::vector<RuntimeEvent> out;
  for (auto& se : store.readRunEvents(h.sessionId, h.runId)) out.push_back(std::move(se.event));
  return out;
}

// Per-call durable facts of one run.
struct CallFacts {
  bool call = false, dispatch = false, response = false;
};

struct Checks {
  std::map<std::string, Check> m;
  Checks() {
    for (auto n : reports::kCheckNames) m[std::string(n)] = Check{"n/a", "not evaluated"};
  }
  void pass(const char* v) { m[v] = Check{"pass", ""}; }
  void fail(const char* v, std::string reason) {
    // Keep the first failure reason for a check.
    if (m[v].status != "fail") m[v] = Check{"fail", std::move(reason)};
  }
  void na(const char* v, std::string reason) { m[v] = Check{"n/a", std::move(reason)}; }
  bool failed(const char* v) const { return m.at(v).status == "fail"; }
};

// Terminal fact before header: every terminal header has exactly one terminal RuntimeEvent
// whose status maps to the header's. Returns "" when the invariant holds.
std::string terminalInvariant(const RuntimeStore& store) {
  for (const auto& h : store.listRuns()) {
    if (!isTerminalStatus(h.status)) continue;
    auto events = eventsOf(store, h);
    std::vector<const RuntimeEvent*> terminals;
    for (const auto& e : events)
      if (!e.partial && e.isTerminal()) terminals.push_back(&e);
    if (terminals.empty())
      return fmt::format(
          "run {} header is {} but has no terminal RuntimeEvent (header before fact)", h.runId,
          h.status);
    if (terminals.size() > 1)
      return fmt::format("run {} has {} terminal RuntimeEvents", h.runId, terminals.size());
    if (headerStatusOfTerminal(*terminals[0]) != h.status)
      return fmt::format("run {} header {} disagrees with its terminal fact {}", h.runId, h.status,
                         headerStatusOfTerminal(*terminals[0]));
    if (&events.back() != terminals[0])
      return fmt::format("run {} terminal fact {} is not the ledger tail", h.runId,
                         terminals[0]->id);
  }
  return "";
}

// V5 over every run of an open store: the plan the harness computes (the span path) equals the
// plan a separate process prints for the exported run (`crashsim ledger resolve`, which plans a
// RuntimeLedger), and planning — Phase 0 and the store-reading Phase 1 planner — leaves every
// table of the store unchanged (observed::tableDigests, read outside the runtime).
void checkV5(RuntimeStore& store, const fs::path& storeDir, const fs::path& work,
             const fs::path& crashsim, Checks& c) {
  const auto tables0 = observed::tableDigests(storeDir);
  for (const auto& h : store.listRuns()) {
    auto events = eventsOf(store, h);
    const Json mine = toJson(buildResumePlan(events), events);
    if (crashsim.empty()) continue;
    const fs::path in = work / "v5-ledger.jsonl", outFile = work / "v5-plan.json";
    {
      std::ofstream f(in, std::ios::binary);
      for (const auto& e : events) f << encodeRuntimeEvent(e) << "\n";
    }
    SpawnSpec spec;
    spec.exe = crashsim;
    spec.args = {"ledger", "resolve", in.string()};
    spec.stdoutFile = outFile;
    spec.stderrFile = work / "v5.stderr";
    auto r = runToEnd(spec);
    Json theirs;
    try {
      theirs = Json::parse(readFile(outFile)).at("plan");
    } catch (const std::exception&) {
      c.fail("V5", fmt::format("run {}: crashsim ledger resolve {}: {}", h.runId, r.describe(),
                               lastLine(spec.stderrFile)));
      return;
    }
    if (theirs != mine) {
      c.fail("V5", fmt::format("run {}: the plan differs between this process and `crashsim "
                               "ledger resolve` (disposition {} vs {})",
                               h.runId, mine.value("disposition", "?"),
                               theirs.value("disposition", "?")));
      return;
    }
  }
  ContinuationHost host;  // the store-reading Phase 1 planner (e.1/e.2) must be read-only
  host.enabled = true;
  host.inspector = [] {
    SafetyFacts f;
    f.backgroundOperationsSettled = true;
    return f;
  };
  try {
    (void)planLatestContinuation(store, std::nullopt, host);
  } catch (const std::exception&) {
    // A refusal is a plan outcome; only a write to the store is a V5 failure.
  }
  if (auto t = observed::firstChangedTable(tables0, observed::tableDigests(storeDir)); !t.empty()) {
    c.fail("V5", "planning changed table " + t);
    return;
  }
  c.pass("V5");
}

// V6 on a copy of the store directory.
void checkV6(const fs::path& copy, Checks& c) {
  auto store = RuntimeStore::open(copy);
  auto ops0 = store->listToolOperations();
  auto j0 = store->listJournal();
  store->rebuildProjections();
  auto ops1 = store->listToolOperations();
  auto j1 = store->listJournal();
  if (ops0 != ops1) {
    std::string detail;
    for (size_t i = 0; i < std::max(ops0.size(), ops1.size()); ++i) {
      if (i >= ops0.size() || i >= ops1.size() || !(ops0[i] == ops1[i])) {
        detail = i < ops0.size() && i < ops1.size()
                     ? fmt::format("operation {}: online state {} v{}, rebuilt {} v{}",
                                   ops0[i].providerToolCallId, ops0[i].currentState,
                                   ops0[i].version, ops1[i].currentState, ops1[i].version)
                     : fmt::format("{} online operations, {} rebuilt", ops0.size(), ops1.size());
        break;
      }
    }
    c.fail("V6", "rebuilt tool_operations differ from the online projection: " + detail);
    return;
  }
  if (j0 != j1) {
    c.fail("V6", fmt::format("rebuilt tool_journal_events differ ({} online rows, {} rebuilt)",
                             j0.size(), j1.size()));
    return;
  }
  c.pass("V6");
}

void copyDir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

// V7 on a copy: repair (dry run first), invariant after, second repair changes nothing.
void checkV7(const fs::path& copy, Checks& c) {
  auto store = RuntimeStore::open(copy);
  if (auto bad = terminalInvariant(*store); !bad.empty()) {
    c.fail("V7", "crashed store: " + bad);
    return;
  }
  // Terminal facts that already exist must survive repair untouched (P9: header from fact).
  std::map<std::string, std::string> factsBefore;
  for (const auto& h : store->listRuns())
    for (const auto& e : eventsOf(*store, h))
      if (!e.partial && e.isTerminal()) factsBefore[h.runId] = encodeRuntimeEvent(e);
  const auto tables0 = observed::tableDigests(copy);
  startupRepair(*store, RepairMode::strict, true);
  if (auto t = observed::firstChangedTable(tables0, observed::tableDigests(copy)); !t.empty()) {
    c.fail("V7", "a dry-run repair changed table " + t);
    return;
  }
  startupRepair(*store, RepairMode::strict, false);
  if (auto bad = terminalInvariant(*store); !bad.empty()) {
    c.fail("V7", "after repair: " + bad);
    return;
  }
  for (const auto& h : store->listRuns()) {
    if (!isTerminalStatus(h.status)) {
      c.fail("V7", fmt::format("after repair run {} is still {}", h.runId, h.status));
      return;
    }
    if (!factsBefore.count(h.runId)) {
      // Repair classified an interrupted run (spec g, run recovery step 8–9): status failed,
      // failureClass app_restarted, a recovered terminal fact; the header mirrors it.
      const RuntimeEvent* fact = nullptr;
      const auto events = eventsOf(*store, h);
      for (const auto& e : events)
        if (!e.partial && e.isTerminal()) fact = &e;
      const Json delta =
          fact ? fact->json.value("actions", Json::object()).value("stateDelta", Json::object())
               : Json::object();
      if (!fact || fact->status != EventStatus::failed || delta.value("recovered", false) != true ||
          delta.value("failureClass", "") != std::string(code::app_restarted) ||
          h.status != "failed" || h.failureClass.value_or("") != std::string(code::app_restarted)) {
        c.fail("V7", fmt::format("repair sealed the interrupted run {} as {} (header failureClass "
                                 "{}, fact stateDelta {}); the contract classifies it failed / "
                                 "app_restarted with a recovered terminal fact",
                                 h.runId, h.status, h.failureClass.value_or("-"), delta.dump()));
        return;
      }
    }
    if (auto it = factsBefore.find(h.runId); it != factsBefore.end()) {
      std::string now;
      for (const auto& e : eventsOf(*store, h))
        if (!e.partial && e.isTerminal()) now = encodeRuntimeEvent(e);
      if (now != it->second) {
        c.fail("V7", fmt::format("repair rewrote the existing terminal fact of run {}", h.runId));
        return;
      }
    }
  }
  std::string h1 = store->ledgerHash();
  auto runs1 = store->listRuns();
  auto second = startupRepair(*store, RepairMode::strict, false);
  if (second.changed() || store->ledgerHash() != h1 || store->listRuns() != runs1) {
    c.fail("V7", "a second repair changed the store (not idempotent)");
    return;
  }
  c.pass("V7");
}

// V3/V4 on the state a killed recovery process left (double faults): expectRecoveryKill.
void checkRecoveryKillState(const CaseId& id, const Scenario& sc, const CaseExpectation& x,
                            const RuntimeStore& st, const fs::path& store, Checks& c) {
  const auto want = expectRecoveryKill(*id.recoveryFailpoint, id.recoveryHit.value_or(1));
  const std::string at =
      fmt::format("after the recovery kill at {}#{}", failpointName(*id.recoveryFailpoint),
                  id.recoveryHit.value_or(1));
  auto runs = st.listRuns();
  std::stable_sort(runs.begin(), runs.end(), [](const RunHeader& a, const RunHeader& b) {
    return a.createdAt < b.createdAt;
  });
  if (runs.size() < static_cast<size_t>(want.run) ||
      (want.exactlyThatManyRuns && runs.size() != static_cast<size_t>(want.run))) {
    c.fail("V3", fmt::format("{}: {} run(s) in the store, the contract expects {}{}", at,
                             runs.size(), want.exactlyThatManyRuns ? "" : "at least ", want.run));
    return;
  }
  const RunHeader& h = runs[static_cast<size_t>(want.run - 1)];
  const auto events = eventsOf(st, h);
  int facts = 0;
  for (const auto& e : events) facts += !e.partial && e.isTerminal();
  if (facts != (want.terminalFact ? 1 : 0))
    c.fail("V3", fmt::format("{}: run {} has {} terminal RuntimeEvent(s), the contract expects {}",
                             at, h.runId, facts, want.terminalFact ? 1 : 0));
  if (isTerminalStatus(h.status) != want.terminalHeader)
    c.fail("V3", fmt::format("{}: run {} header is {}, the contract expects it {}", at, h.runId,
                             h.status, want.terminalHeader ? "terminal" : "not terminal"));
  if (want.armedIndeterminate && x.armedCall) {
    const auto& armed = sc.calls[*x.armedCall];
    bool response = false;
    for (const auto& e : events)
      response = response || (!e.partial && e.contentKind == ContentKind::function_response &&
                              e.callId == armed.id);
    if (response)
      c.fail("V3", fmt::format("{}: {} has a durable response (the bundle was not rolled back)", at,
                               armed.id));
    const auto res = resolveRecovery(events);
    auto d = std::find_if(res.decisions.begin(), res.decisions.end(),
                          [&](const ToolDecision& t) { return t.toolCallId == armed.id; });
    if (d == res.decisions.end() || d->status != code::indeterminate ||
        d->reason != code::dispatch_without_response)
      c.fail("V4", fmt::format("{}: {} is {}, the contract expects {}/{}", at, armed.id,
                               d == res.decisions.end() ? "undecided" : d->status + "/" + d->reason,
                               code::indeterminate, code::dispatch_without_response));
    if (auto bad = modelDisagreement(events, res, "the ledger " + at); !bad.empty())
      c.fail("V4", bad);
  }
  if (want.claimWithoutStart) {
    const auto rows = observed::claims(store);
    const auto open = std::count_if(rows.begin(), rows.end(),
                                    [](const observed::ClaimRow& r) { return !r.startEventId; });
    if (rows.size() != 1 || open != 1)
      c.fail("V3", fmt::format("{}: {} claim row(s), {} without a start; the contract expects one "
                               "claim without a start",
                               at, rows.size(), open));
    else if (int n = observed::eventsOfRun(store, rows[0].targetRunId); n != 0)
      c.fail("V3", fmt::format("{}: the claimed target run {} has {} event(s), expected none", at,
                               rows[0].targetRunId, n));
  }
  if (!c.failed("V3")) c.pass("V3");
  if (!c.failed("V4") && want.armedIndeterminate) c.pass("V4");
}

// V5 on the open crashed store, then V6 and V7 on one copy of it (V6 rebuilds projections and
// leaves the ledger untouched, then V7 repairs). `fresh`: this case made the crash state (a
// double fault that starts from its primary's verified state runs V7 only).
void checkPlanRebuildRepair(std::unique_ptr<RuntimeStore> st, const fs::path& store,
                            const fs::path& dir, const RunOptions& opts, bool fresh, Checks& c) {
  if (fresh) checkV5(*st, store, dir, opts.crashsim, c);
  st.reset();
  copyDir(store, dir / "copy");
  if (fresh) checkV6(dir / "copy", c);
  checkV7(dir / "copy", c);
  fs::remove_all(dir / "copy");
}

// A store or runtime error on a crashed store is a contract violation, not a harness crash: it
// fails every check of V2–V7 not decided yet.
void failUndecided(Checks& c, const std::exception& e) {
  for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7"})
    if (c.m[v].status != "pass" && c.m[v].status != "fail")
      c.fail(v, std::string("error: ") + e.what());
}

// V2–V4 on the crash state of an unnamed barrier (verdicts/barrier.h): integrity, what must
// hold at any instant, and the resolver against the independent model (no oracle row here).
void checkBarrierCrash(const Scenario& sc, RuntimeStore& st, const fs::path& store,
                       barrier::CrashFacts& facts, Checks& c) {
  const auto integrity = st.integrityCheck();
  if (integrity != "ok")
    c.fail("V2", "PRAGMA integrity_check: " + integrity);
  else
    c.pass("V2");
  std::vector<std::vector<RuntimeEvent>> runs;
  for (const auto& h : st.listRuns()) runs.push_back(eventsOf(st, h));
  for (const auto& bad :
       barrier::crashStateProblems(sc, runs, readEffects(store / "effects.jsonl"), facts))
    c.fail("V3", bad);
  if (!c.failed("V3")) c.pass("V3");
  for (const auto& events : runs) {
    const auto res = resolveRecovery(events);
    if (res.hasCorruption) c.fail("V4", "resolver reports corruption on a crash-only ledger");
    if (auto bad = modelDisagreement(events, res, "the crashed ledger"); !bad.empty())
      c.fail("V4", bad);
  }
  if (!c.failed("V4")) c.pass("V4");
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

// V2–V7 on the crash state of an unnamed barrier: what must hold at any instant
// (verdicts/barrier.h), then V5–V7 as for a named failpoint. Fills `facts` for V8.
void checkBarrierCrashState(const Scenario& sc, const fs::path& store, const fs::path& dir,
                            const RunOptions& opts, barrier::CrashFacts& facts, Checks& c) {
  // An unnamed barrier: what must hold at any instant (verdicts/barrier.h), then V5–V7.
  try {
    auto st = RuntimeStore::open(store);
    checkBarrierCrash(sc, *st, store, facts, c);
    checkPlanRebuildRepair(std::move(st), store, dir, opts, true, c);
  } catch (const std::exception& e) {
    failUndecided(c, e);
  }
}

// V2–V7 on the crash state of a named failpoint, against the oracle's expectation `x`.
void checkNamedCrash(const CaseId& id, const CaseExpectation& x, const fs::path& store,
                     const fs::path& dir, const RunOptions& opts, Checks& c) {
  try {
    // --- V2: reopen + integrity ----------------------------------------------------------
    auto st = RuntimeStore::open(store);
    auto integrity = st->integrityCheck();
    if (integrity != "ok")
      c.fail("V2", "PRAGMA integrity_check: " + integrity);
    else
      c.pass("V2");
    auto runs = st->listRuns();

    // --- V3: durable event kinds vs the oracle ------------------------------------------
    if (!x.ok) c.fail("V3", "oracle: " + x.whyNot);
    std::vector<RuntimeEvent> runEvents;
    if (runs.size() != 1) {
      c.fail("V3",
             fmt::format("expected exactly one run in the crashed store, found {}", runs.size()));
    } else {
      runEvents = eventsOf(*st, runs[0]);
    }
    if (x.ok && runs.size() == 1) {
      std::map<std::string, CallFacts> facts;
      bool terminal = false;
      for (const auto& e : runEvents) {
        if (e.partial) continue;
        if (e.contentKind == ContentKind::function_call) facts[e.callId].call = true;
        if (e.toolDispatch) facts[e.toolDispatch->providerToolCallId].dispatch = true;
        if (e.contentKind == ContentKind::function_response) facts[e.callId].response = true;
        if (e.isTerminal()) terminal = true;
      }
      if (runEvents.empty() || runEvents[0].role != Role::user ||
          runEvents[0].runtimeProtocol !=
              std::optional<std::string>(std::string(code::t1_after_preflight_v1)))
        c.fail("V3", "first event is not the user event carrying the t1_after_preflight_v1 marker");
      std::set<std::string> known;
      for (const auto& op : x.ops) {
        known.insert(op.callId);
        CallFacts f = facts.count(op.callId) ? facts[op.callId] : CallFacts{};
        if (f.call != op.call || f.dispatch != op.dispatch || f.response != op.response)
          c.fail("V3",
                 fmt::format(
                     "{}{}: durable call/dispatch/response = {}/{}/{}, oracle expects {}/{}/{}",
                     op.callId, op.armed ? " (armed)" : "", f.call, f.dispatch, f.response, op.call,
                     op.dispatch, op.response));
      }
      for (const auto& [callId, f] : facts)
        if (!known.count(callId)) c.fail("V3", "unexpected tool call " + callId + " in the ledger");
      if (terminal != x.terminalEvent)
        c.fail("V3", fmt::format("terminal RuntimeEvent {} but the oracle expects it {}",
                                 terminal ? "committed" : "absent",
                                 x.terminalEvent ? "committed" : "absent"));
      if (!c.failed("V3")) c.pass("V3");

      // --- V4: resolver decisions vs the oracle ---------------------------------------------
      auto res = resolveRecovery(runEvents);
      if (res.hasCorruption) c.fail("V4", "resolver reports corruption on a crash-only ledger");
      if (auto bad = modelDisagreement(runEvents, res, "the crashed ledger"); !bad.empty())
        c.fail("V4", bad);
      bool expectIndeterminate = false;
      for (const auto& op : x.ops) {
        expectIndeterminate = expectIndeterminate || op.status == code::indeterminate;
        auto it = std::find_if(res.decisions.begin(), res.decisions.end(),
                               [&](const ToolDecision& d) { return d.toolCallId == op.callId; });
        if (op.status.empty()) {
          if (it != res.decisions.end())
            c.fail("V4",
                   fmt::format("{}: resolver decided {}/{} but the oracle expects no operation",
                               op.callId, it->status, it->reason));
          continue;
        }
        if (it == res.decisions.end()) {
          c.fail("V4", fmt::format("{}: no resolver decision, oracle expects {}/{}", op.callId,
                                   op.status, op.reason));
          continue;
        }
        std::string origin = it->settlementOrigin.value_or("");
        if (it->status != op.status || it->reason != op.reason ||
            (!op.settlementOrigin.empty() && origin != op.settlementOrigin))
          c.fail("V4",
                 fmt::format("{}{}: resolver {}/{}{}, oracle expects {}/{}{}", op.callId,
                             op.armed ? " (armed)" : "", it->status, it->reason,
                             origin.empty() ? "" : " (" + origin + ")", op.status, op.reason,
                             op.settlementOrigin.empty() ? "" : " (" + op.settlementOrigin + ")"));
      }
      if (!res.hasCorruption && res.requiresReconciliation != expectIndeterminate)
        c.fail("V4", fmt::format("requiresReconciliation is {}, oracle expects {}",
                                 res.requiresReconciliation, expectIndeterminate));
      if (!c.failed("V4")) c.pass("V4");
    } else {
      c.na("V4", "no oracle placement or run for this case");
    }

    checkPlanRebuildRepair(std::move(st), store, dir, opts, !id.isDoubleFault(), c);
  } catch (const std::exception& e) {
    failUndecided(c, e);
  }
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

// V8 after recovering from an unnamed barrier (verdicts/barrier.h): the park decision the crash
// facts demand, the executions that follow from it, and an untouched workspace after a park or
// the scenario's end state after a continuation.
void checkBarrierRecovery(const Scenario& sc, const barrier::CrashFacts& facts,
                          const Reference& ref, const std::map<std::string, int>& effects,
                          const std::string& recoverStdout, const WorkspaceSnapshot& atCrash,
                          const fs::path& ws, Checks& c) {
  Json summary;
  try {
    summary = Json::parse(recoverStdout.substr(0, recoverStdout.find('\n')));
  } catch (...) {
    c.fail("V8", "recover printed no JSON summary");
    return;
  }
  const Json plan = summary.value("plan", Json());
  const bool parked = plan.is_object() && plan.value("decision", "") == "park";
  const bool continued = !summary.value("continuation", Json()).is_null();
  const auto want = barrier::expectRecovery(sc, facts);
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
  if (want.mustPark && (!parked || continued))
    c.fail("V8", "recovery did not park although " + want.why);
  else if (!want.mustPark && !want.mayPark && (parked || !continued))
    c.fail("V8", "recovery did not continue although every dispatched call has its response: " +
                     plan.dump().substr(0, 200));
  checkExecutions(sc, barrier::expectedExecutions(sc, facts, parked), effects, c);
  if (parked) {
    if (auto bad = parkProblem(recoverStdout, std::nullopt); !bad.empty()) c.fail("V8", bad);
    if (auto bad = workspaceChange(atCrash, snapshotWorkspace(ws)); !bad.empty())
      c.fail("V8", "recovery parked but changed the workspace: " + bad);
  } else {
    checkFinishedWorkspace(sc, ref, ws, c);
  }
}

}  // namespace

fs::path crashStateDir(const RunOptions& opts, const CaseId& primary) {
  return opts.workRoot / ("crash-" + sanitize(primary.str()));
}

WorkspaceSnapshot snapshotWorkspace(const fs::path& dir) {
  WorkspaceSnapshot snap;
  if (!fs::exists(dir)) return snap;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    auto rel = fs::relative(e.path(), dir).generic_string();
    if (rel == kMarkerFile) continue;
    snap[rel] = readFile(e.path());
  }
  return snap;
}

std::map<std::string, int> readEffects(const fs::path& file) {
  std::map<std::string, int> counts;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = Json::parse(line);
      counts[j.value("callId", std::string("?"))]++;
    } catch (...) {
      counts["<unparseable effects line>"]++;
    }
  }
  return counts;
}

std::string reproduceLine(const CaseId& id, const RunOptions& opts) {
  auto keep = fs::temp_directory_path() / ("crashsim-" + sanitize(id.str()));
  // What reproduces it as printed: the environment that changes the agent or plants a fault,
  // and this crashsim binary (crashsim-planted for planted faults) by its path.
  std::string env;
  for (const char* v : {"CRASHSIM_PLANT", "CRASHSIM_AGENT"})
    if (const char* val = std::getenv(v); val && *val) env += fmt::format("{}={} ", v, val);
  const fs::path self = locateCrashsim();
  const std::string exe = self.empty() ? std::string("crashsim") : self.string();
  return fmt::format("{}{} run '{}' --keep {}{}", env, exe, id.str(), keep.string(),
                     opts.reproduceExtra);
}

fs::path defaultWorkRoot(const std::string& mode) {
  if (mode == "kill" && fs::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return fs::temp_directory_path();
}

Reference buildReference(const Scenario& scenario, const RunOptions& opts) {
  Reference ref;
  ref.scenario = scenario;
  fs::path dir = opts.workRoot / ("ref-" + sanitize(scenario.id));
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  ref.templateWorkspace = dir / "template";
  SpawnSpec seed;
  seed.exe = opts.agent;
  seed.args = {"seed", "--workspace", ref.templateWorkspace.string(), "--scenario",
               scenario.file.string()};
  seed.stderrFile = dir / "seed.stderr";
  auto s = runToEnd(seed);
  if (!s.exited || s.exitCode != 0) {
    ref.problem =
        fmt::format("crashsim-agent seed {}: {}", s.describe(), lastLine(seed.stderrFile));
    return ref;
  }
  if (!fs::is_directory(ref.templateWorkspace)) {
    ref.problem = "crashsim-agent seed exited 0 but wrote no workspace (is CRASHSIM_AGENT " +
                  opts.agent.string() + " a crashsim-agent?)";
    return ref;
  }
  copyDir(ref.templateWorkspace, dir / "ws");
  SpawnSpec run;
  run.exe = opts.agent;
  run.args = {"run",
              "--store",
              (dir / "store").string(),
              "--workspace",
              (dir / "ws").string(),
              "--scenario",
              scenario.file.string()};
  run.env["CRASHSIM_HITS_OUT"] = (dir / "hits.json").string();
  run.stderrFile = dir / "run.stderr";
  run.stdoutFile = dir / "run.stdout";
  auto r = runToEnd(run);
  if (!r.exited || r.exitCode != 0) {
    ref.problem = fmt::format("reference run {}: {}", r.describe(), lastLine(run.stderrFile));
    return ref;
  }
  if (!fs::exists(dir / "store" / "agent-exit.json")) {
    ref.problem = "reference run exited 0 without its normal-exit marker agent-exit.json";
    return ref;
  }
  try {
    const Json marker = Json::parse(readFile(dir / "store" / "agent-exit.json"));
    ref.journalMode = marker.at("summary").value("journalMode", "");
    ref.synchronous = marker.at("summary").value("synchronous", "");
  } catch (const std::exception& e) {
    ref.problem = std::string("reference run: unreadable agent-exit.json: ") + e.what();
    return ref;
  }
  ref.finalWorkspace = snapshotWorkspace(dir / "ws");
  ref.executionsPerCall = readEffects(dir / "store" / "effects.jsonl");
  if (auto hits = readHits(dir / "hits.json")) {
    ref.hits = *hits;
  } else {
    ref.problem = "the reference run wrote no readable failpoint hit counts (" +
                  (dir / "hits.json").string() +
                  "): is CRASHSIM_AGENT an instrumented crashsim-agent?";
    return ref;
  }
  // The plan comes from the oracle's prediction; a reference run that reaches other hits means
  // the plan is not the runtime's set of crash windows (an error, never a smaller sweep).
  if (auto bad = reachDifference(predictedHits(scenario), ref.hits, 0, 11, "the reference run");
      !bad.empty()) {
    ref.problem = bad;
    return ref;
  }
  // The barriers have no prediction (the contract does not fix a run's number of transactions
  // or file steps), only a lower bound: every T1 (P2), T2 (P5) and terminal fact (P8) is a store
  // COMMIT, and every atomic replace of a file (P3) takes at least fsync, rename and fsync-dir.
  {
    const auto p = predictedHits(scenario);
    const int minS = p[2] + p[5] + p[8], minF = 3 * p[3];
    if (ref.hits[kBarrierS] < minS || ref.hits[kBarrierF] < minF) {
      ref.problem = fmt::format(
          "the reference run reached {} store COMMIT barrier(s) S and {} file-step barrier(s) F; "
          "its named commits and file replaces alone need at least {} and {}",
          ref.hits[kBarrierS], ref.hits[kBarrierF], minS, minF);
      return ref;
    }
  }
  // Sanity: the reference must meet the scenario's own expectations.
  if (auto bad = workspace::expectedProblems(scenario.spec, dir / "ws"); !bad.empty())
    ref.problem = "reference run: " + bad.front();
  for (const auto& [call, n] : ref.executionsPerCall)
    if (n != 1) ref.problem = fmt::format("reference run executed {} {} times", call, n);
  if (!opts.keepFailures) fs::remove_all(dir / "store"), fs::remove_all(dir / "ws");
  return ref;
}

CaseOutcome runCase(const CaseId& id, const Reference& ref, const RunOptions& opts) {
  auto started = std::chrono::steady_clock::now();
  CaseOutcome out;
  Checks c;
  auto& rec = out.record;
  rec.id = id.str();
  rec.scenario = id.scenario;
  rec.failpoint = id.failpointName();
  rec.hit = id.hit;
  rec.mode = id.mode;
  if (id.recoveryFailpoint) {
    rec.recoveryFailpoint = failpointName(*id.recoveryFailpoint);
    rec.recoveryHit = id.recoveryHit.value_or(1);
  }
  rec.reproduce = reproduceLine(id, opts);
  auto say = [&](std::string s) {
    if (opts.verbose) out.log.push_back(std::move(s));
  };

  fs::path dir = opts.keepDir
                     ? *opts.keepDir
                     : opts.workRoot / fmt::format("case-{}-{}", ::getpid(), sanitize(id.str()));
  fs::remove_all(dir);
  fs::create_directories(dir / "store");
  fs::path store = dir / "store", ws = dir / "ws";
  const Scenario& sc = ref.scenario;

  auto finish = [&]() -> CaseOutcome {
    if (c.m["V9"].reason == "not evaluated") c.na("V9", "not sampled (see --verify-determinism)");
    rec.checks = c.m;
    bool anyFail = false;
    for (const auto& [k, v] : rec.checks) anyFail = anyFail || v.status == "fail";
    rec.verdict = anyFail ? "fail" : "pass";
    rec.durationMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (opts.keepDir || (anyFail && opts.keepFailures)) {
      out.keptAt = dir;
    } else {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
    return out;
  };

  if (!ref.problem.empty()) {
    c.fail("V1", "reference run failed: " + ref.problem);
    return finish();
  }
  if (id.mode != "kill" && id.mode != "powerloss") {
    c.fail("V1", "fault mode " + id.mode + " is not available in this build");
    return finish();
  }
  const bool powerloss = id.mode == "powerloss";
  PowerlossFindings plFindings;  // D1 and D2 (powerloss_checks.h)
  if (powerloss) c.m["D1"] = c.m["D2"] = Check{"n/a", "no power-loss crash state was checked"};
  // A barrier has no oracle row: its expectation follows from the crash state (barrierFacts).
  const CaseExpectation x =
      id.isBarrier() ? CaseExpectation{} : expectCase(sc, id.failpoint, id.hit);
  barrier::CrashFacts barrierFacts;
  CaseId primary = id;
  primary.recoveryFailpoint.reset();
  primary.recoveryHit.reset();
  const fs::path snapshot = crashStateDir(opts, primary);
  if (id.isDoubleFault() && fs::exists(snapshot / "complete")) {
    // The primary case already killed the agent here and verified V1–V7 on this state.
    copyDir(snapshot / "store", store);
    copyDir(snapshot / "ws", ws);
    say("started from the crash state of " + primary.str());
    for (auto v : {"V3", "V4"}) c.na(v, "crash state verified by case " + primary.str());
  } else {
    copyDir(ref.templateWorkspace, ws);

    // --- the armed agent run -------------------------------------------------------------
    SpawnSpec run;
    run.exe = opts.agent;
    run.args = {"run",       "--store",    store.string(),  "--workspace",
                ws.string(), "--scenario", sc.file.string()};
    run.stderrFile = dir / "run.stderr";
    run.stdoutFile = dir / "run.stdout";
    run.timeout = std::chrono::milliseconds(15000);
    if (powerloss) armPowerloss(run, id, dir, opts.synchronous);
    auto child = runArmed(run, id.failpointName(), id.hit);
    say(fmt::format("agent run armed at {}#{}: control '{}', {}", id.failpointName(), id.hit,
                    child.controlLine, child.describe()));
    std::string v1 = [&]() -> std::string {
      if (!child.error.empty()) return child.error;
      if (child.timedOut)
        return fmt::format("agent hung: no control record for {}#{} within {} ms",
                           id.failpointName(), id.hit, run.timeout.count());
      if (child.controlLine.empty())
        return fmt::format("agent {} before reaching {}#{} ({})", child.describe(),
                           id.failpointName(), id.hit, lastLine(run.stderrFile));
      Json ctl;
      try {
        ctl = Json::parse(child.controlLine);
      } catch (...) {
        return "unparseable control record: " + child.controlLine;
      }
      if (ctl.value("failpoint", "") != id.failpointName() || ctl.value("hit", 0) != id.hit)
        return fmt::format("agent reported {}#{} instead of {}#{}", ctl.value("failpoint", "?"),
                           ctl.value("hit", 0), id.failpointName(), id.hit);
      if (!child.killedBySigkill()) return "agent was not killed by SIGKILL: " + child.describe();
      if (fs::exists(store / "agent-exit.json")) return "normal-exit marker agent-exit.json exists";
      return powerloss ? powerlossCrashProblem(id, dir) : "";
    }();
    if (!v1.empty()) {
      c.fail("V1", v1);
      for (auto v : {"V2", "V3", "V4", "V5", "V6", "V7", "V8"})
        c.na(v, "no crash state (V1 failed)");
      return finish();
    }
    if (opts.keepDir) {
      // crashsim run --keep: the state recovery started from, beside the recovered one.
      copyDir(store, dir / "crashed" / "store");
      copyDir(ws, dir / "crashed" / "ws");
    }
    if (opts.keepCrashStates && !id.isDoubleFault()) {
      // The double-fault cases of this primary start from exactly this crashed state.
      const fs::path snap = crashStateDir(opts, id);
      copyDir(store, snap / "store");
      copyDir(ws, snap / "ws");
      std::ofstream(snap / "complete") << id.str() << "\n";
    }

    if (id.isBarrier())
      checkBarrierCrashState(sc, store, dir, opts, barrierFacts, c);
    else
      checkNamedCrash(id, x, store, dir, opts, c);
    if (powerloss) plFindings = checkPowerlossCrash(dir, store, opts.synchronous, c.m);
  }

  // Another process changes the workspace while the agent is down (scenario afterCrash).
  const bool afterCrash = workspace::afterCrashApplies(sc.spec, id.failpointName());
  if (afterCrash) {
    workspace::applyAfterCrash(sc.spec, ws);
    say("applied the scenario's afterCrash mutations");
  }
  const WorkspaceSnapshot atCrash = snapshotWorkspace(ws);

  SpawnSpec recover;
  recover.exe = opts.agent;
  recover.args = {"recover",   "--store",    store.string(),  "--workspace",
                  ws.string(), "--scenario", sc.file.string()};
  recover.timeout = std::chrono::milliseconds(20000);

  // --- double fault: kill the recovery process, then check the intermediate state --------
  if (id.isDoubleFault()) {
    recover.stderrFile = dir / "recover1.stderr";
    recover.stdoutFile = dir / "recover1.stdout";
    auto rfp = failpointName(*id.recoveryFailpoint);
    int rhit = id.recoveryHit.value_or(1);
    auto r1 = runArmed(recover, rfp, rhit);
    say(fmt::format("recovery armed at {}#{}: control '{}', {}", rfp, rhit, r1.controlLine,
                    r1.describe()));
    Json ctl = Json::object();
    try {
      ctl = Json::parse(r1.controlLine);
    } catch (...) {
    }
    if (r1.timedOut || ctl.value("failpoint", "") != rfp || ctl.value("hit", 0) != rhit ||
        !r1.killedBySigkill()) {
      c.fail("V1", fmt::format("recovery process did not die at {}#{}: {} (control '{}')", rfp,
                               rhit, r1.describe(), r1.controlLine));
    } else {
      if (!c.failed("V1")) c.pass("V1");
    }
    try {
      auto st = RuntimeStore::open(store);
      auto integrity = st->integrityCheck();
      if (integrity != "ok")
        c.fail("V2", "after the recovery kill: PRAGMA integrity_check: " + integrity);
      if (integrity == "ok" && !c.failed("V2")) c.pass("V2");
      checkRecoveryKillState(id, sc, x, *st, store, c);
      if (auto bad = terminalInvariant(*st); !bad.empty())
        c.fail("V7", "after the recovery kill: " + bad);
      else if (!c.failed("V7"))
        c.pass("V7");
      checkV5(*st, store, dir, opts.crashsim, c);
      st.reset();
      copyDir(store, dir / "v6");
      checkV6(dir / "v6", c);
      fs::remove_all(dir / "v6");
    } catch (const std::exception& e) {
      c.fail("V2", std::string("after the recovery kill: ") + e.what());
    }
  } else {
    c.pass("V1");
  }

  // --- V8: recovery to the end ----------------------------------------------------------
  recover.stderrFile = dir / "recover.stderr";
  recover.stdoutFile = dir / "recover.stdout";
  recover.env["CRASHSIM_HITS_OUT"] = (dir / "recover-hits.json").string();
  auto r = runToEnd(recover);
  say(fmt::format("recovery to the end: {}", r.describe()));
  if (powerloss) checkPowerlossRecovery(plFindings, store, r, recover.stdoutFile, c.m);
  if (!id.isDoubleFault() && !id.isBarrier() && !powerloss && !c.failed("V1")) {
    // The recovery reaches exactly the recovery kills the oracle planned for this case.
    auto hits = readHits(dir / "recover-hits.json");
    const auto want = predictedRecoveryHits(sc, id.failpoint, id.hit);
    if (!hits)
      c.fail("V3", "the unarmed recovery wrote no readable failpoint hit counts");
    else if (auto bad = reachDifference(want, *hits, 8, 11, "the unarmed recovery"); !bad.empty())
      c.fail("V3", bad + " (the double faults planned for this case)");
  }
  if (!r.exited) {
    c.fail("V8", "crashsim-agent recover " + r.describe());
    return finish();
  }
  try {
    auto effects = readEffects(store / "effects.jsonl");
    // Executions per call come from the scenario and the contract (oracle), never from a run.
    if (!id.isBarrier()) checkExecutions(sc, expectedExecutions(sc, x, id.failpoint), effects, c);
    auto st = RuntimeStore::open(store);
    // Every run resolved once: the armed call's final decision, the model check, the headers.
    struct Resolved {
      RunHeader header;
      std::vector<RuntimeEvent> events;
      RecoveryResolution resolution;
    };
    std::vector<Resolved> resolved;
    for (auto& h : st->listRuns()) {
      auto ev = eventsOf(*st, h);
      auto res = resolveRecovery(ev);
      resolved.push_back({std::move(h), std::move(ev), std::move(res)});
    }
    // Decision of the armed call after recovery: a completed decision in any run wins.
    auto finalDecision = [&](const std::string& callId) -> std::optional<ToolDecision> {
      std::optional<ToolDecision> first;
      for (const auto& r : resolved)
        for (const auto& d : r.resolution.decisions) {
          if (d.toolCallId != callId) continue;
          if (d.status == code::completed) return d;
          if (!first) first = d;
        }
      return first;
    };
    for (const auto& r : resolved) {
      if (!isTerminalStatus(r.header.status))
        c.fail("V8",
               fmt::format("run {} is still {} after recovery", r.header.runId, r.header.status));
      if (auto bad = modelDisagreement(r.events, r.resolution, "recovered run " + r.header.runId);
          !bad.empty())
        c.fail("V4", bad);
    }
    const int wantUserMessages = id.isBarrier() && !barrierFacts.accepted ? 0 : 1;
    if (auto bad = continuationHistoryProblem(*st, wantUserMessages); !bad.empty())
      c.fail("V8", "history after recovery: " + bad);
    if (r.exitCode != 0)
      c.fail("V8", fmt::format("crashsim-agent recover exited {}: {}", r.exitCode,
                               lastLine(recover.stderrFile)));
    if (id.isBarrier()) {
      checkBarrierRecovery(sc, barrierFacts, ref, effects, readFile(recover.stdoutFile), atCrash,
                           ws, c);
      if (!c.failed("V8")) c.pass("V8");
      return finish();
    }
    const bool parked = expectParked(sc, x, id.failpoint);
    if (!x.ok) {
      c.fail("V8", "oracle: " + x.whyNot);
    } else if (parked && !x.armedCall) {
      c.fail("V8", "oracle: scenario afterCrash names " + id.failpointName() +
                       ", which has no armed operation to park");
    } else if (parked) {
      const auto& armed = sc.calls[*x.armedCall];
      auto d = finalDecision(armed.id);
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
      if (auto bad =
              parkProblem(readFile(recover.stdoutFile), x.outcome == Outcome::parked_replay_gap);
          !bad.empty())
        c.fail("V8", bad);
      // A park changes nothing in the workspace: every file is as the crash (and the external
      // change) left it; only the tool's own temp file of the interrupted call may be gone.
      if (auto bad = workspaceChange(atCrash, snapshotWorkspace(ws)); !bad.empty())
        c.fail("V8", "recovery parked but changed the workspace: " + bad);
    } else {
      checkFinishedWorkspace(sc, ref, ws, c);
      if (x.armedCall && !x.finalStatus.empty()) {
        const auto& armed = sc.calls[*x.armedCall];
        auto d = finalDecision(armed.id);
        if (!d || d->status != x.finalStatus || d->reason != x.finalReason)
          c.fail("V8", fmt::format("{} after recovery is {}/{}, expected {}/{}", armed.id,
                                   d ? d->status : "absent", d ? d->reason : "-", x.finalStatus,
                                   x.finalReason));
      }
    }
    if (!c.failed("V8")) c.pass("V8");
  } catch (const std::exception& e) {
    c.fail("V8", std::string("error after recovery: ") + e.what());
  }
  return finish();
}

}  // namespace crashsim::harness
