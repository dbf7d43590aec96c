// store_property_test.cpp — store properties (issue #8 item 6) on a real SQLite store.
//
// A random sequence of writer calls — generic appends (user text, separately committed
// calls, a reserved bound response, the run's terminal event), T1, T2 (success, error,
// different outcome), recovery bundles (completed, parked), exact and conflicting retries,
// projection rebuilds and reopens — runs against a fresh store (on tmpfs when available).
// After every call:
//   * a rejected write throws crashsim::Error and leaves ledgerHash() and the projections
//     unchanged; an exact retry returns created=false and changes nothing;
//   * the online projections equal the projections rebuilt from runtime_events alone (f.8:
//     same rows, same journal ids/states/order per operation);
//   * operation states/versions/journal states follow f.9 and a small write model
//     (prepared 1, outcome 2, parked 3, completed 4), and agree with the resolver's decisions.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>

#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/store.h"
#include "ledger_gen.h"

namespace crashsim {
namespace {

namespace fs = std::filesystem;

fs::path tempRoot() {
  std::error_code ec;
  if (fs::is_directory("/dev/shm", ec)) return "/dev/shm";
  return fs::temp_directory_path();
}

struct StoreTempDir {
  fs::path path;
  StoreTempDir() {
    static std::atomic<int> counter{0};
    path = tempRoot() /
           ("crashsim-prop-store-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~StoreTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const propgen::Identity kId;
constexpr int kOps = 3;

enum class Kind {
  t1 = 0,
  t1_conflicting,  // same ids, different args (and matching hash)
  append_call,     // the call committed alone by the generic writer (permission wait)
  t2_ok,
  t2_error,  // same response id as t2_ok, different bytes
  t2_other,  // a different response id
  bundle_completed,
  bundle_parked,  // same reconcile/decision ids as the completed bundle, different bytes
  append_text,
  append_bound_response,  // reserved for T2: always rejected by the generic writer
  append_terminal,        // seals the run
  rebuild,
  reopen,
};
constexpr int kKinds = 13;
const char* kindName(Kind k) {
  static const char* n[] = {"t1",
                            "t1_conflicting",
                            "append_call",
                            "t2_ok",
                            "t2_error",
                            "t2_other",
                            "bundle_completed",
                            "bundle_parked",
                            "append_text",
                            "append_bound_response",
                            "append_terminal",
                            "rebuild",
                            "reopen"};
  return n[static_cast<int>(k)];
}

struct Action {
  Kind kind;
  int op;
};
void showValue(const Action& a, std::ostream& os) {
  os << kindName(a.kind) << "(op" << a.op << ")";
}

struct OpDef {
  std::string callId, opId, tool, mode;
  Json args;
};

Json baseEvent(const std::string& id, double ts, const char* role, const char* author) {
  return propgen::build::envelope(kId, id, ts, role, author);
}

RuntimeEvent callEvent(const OpDef& o, int variant) {
  Json e = baseEvent(o.opId + "_call", 10, "model", "agent");
  Json args = o.args;
  if (variant == 1) args["conflicting"] = true;
  e["content"] =
      Json{{"kind", "function_call"}, {"id", o.callId}, {"name", o.tool}, {"args", args}};
  return decodeRuntimeEvent(e);
}
RuntimeEvent dispatchEvent(const OpDef& o, int variant) {
  Json args = o.args;
  if (variant == 1) args["conflicting"] = true;
  Json e = baseEvent(o.opId + "_dispatch", 11, "system", "system");
  e["actions"] = Json{{"toolDispatch",
                       {{"protocol", "t1_after_preflight_v1"},
                        {"operationId", o.opId},
                        {"providerToolCallId", o.callId},
                        {"toolName", o.tool},
                        {"canonicalArgsHash", canonicalArgsHash(o.tool, args)},
                        {"recoveryMode", o.mode}}}};
  e["refs"] = Json{{"operationId", o.opId}, {"toolCallId", o.callId}};
  return decodeRuntimeEvent(e);
}
RuntimeEvent responseEvent(const OpDef& o, const std::string& id, bool isError) {
  Json e = baseEvent(id, 12, "tool", "tool");
  e["content"] = Json{{"kind", "function_response"},
                      {"id", o.callId},
                      {"name", o.tool},
                      {"result", isError ? Json{{"error", "boom"}} : Json{{"ok", true}}}};
  if (isError) e["content"]["isError"] = true;
  e["refs"] = Json{{"operationId", o.opId}, {"toolCallId", o.callId}};
  return decodeRuntimeEvent(e);
}
RecoveryBundle bundleFor(const OpDef& o, bool completed) {
  const std::string observation = completed ? "matches_expected_state" : "diverged";
  Json rec = baseEvent(o.opId + "_reconcile", 20, "system", "system");
  rec["actions"] = Json{{"toolRecovery",
                         {{"kind", "maka.tool.reconcile_result"},
                          {"version", 1},
                          {"payload",
                           {{"protocol", "tool_reconcile_v1"},
                            {"operationId", o.opId},
                            {"observation", observation},
                            {"observationSchema", "state_identity_v1"},
                            {"observationDigest", sha256Digest(observation)}}}}}};
  rec["refs"] = Json{{"operationId", o.opId}, {"toolCallId", o.callId}};
  RecoveryBundle b;
  b.operationId = o.opId;
  b.reconcile = decodeRuntimeEvent(rec);
  Json evidence = Json::array({o.opId + "_call", o.opId + "_dispatch", o.opId + "_reconcile"});
  Json payload = {{"protocol", "tool_recovery_v1"}, {"operationId", o.opId}};
  if (completed) {
    Json out = responseEvent(o, o.opId + "_recovered_outcome", false).json;
    out["ts"] = 21;
    b.outcome = decodeRuntimeEvent(out);
    evidence.push_back(o.opId + "_recovered_outcome");
    payload["disposition"] = "completed";
    payload["reasonCode"] = "reconcile_matches_expected_state";
    payload["outcomeEventId"] = o.opId + "_recovered_outcome";
  } else {
    payload["disposition"] = "parked";
    payload["reasonCode"] = "reconcile_diverged";
  }
  payload["evidenceEventIds"] = evidence;
  Json dec = baseEvent(o.opId + "_decision", 22, "system", "system");
  dec["actions"] =
      Json{{"toolRecovery",
            {{"kind", "maka.tool.recovery_decision"}, {"version", 1}, {"payload", payload}}}};
  dec["refs"] = Json{{"operationId", o.opId}, {"toolCallId", o.callId}};
  b.decision = decodeRuntimeEvent(dec);
  return b;
}

// The write model: what each call must do given what is stored.
struct OpModel {
  int callVariant = -1;  // stored call event variant (-1 none)
  int t1Variant = -1;    // operation created by T1 with this variant (-1 none)
  std::string state;     // "" | prepared | outcome_committed | recovery_completed | recovery_parked
  std::string resultId;
  int resultVariant = -1;  // 0 ok / 1 error (t2 ids), 2 other, 3 bundle outcome
  std::vector<std::string> journal;
};
enum class Expect { created, exact, rejected, any };

struct Projection {
  std::vector<ToolOperationRow> ops;
  std::map<std::string, std::vector<JournalRow>> journalByOp;
  bool operator==(const Projection&) const = default;
};
Projection projectionOf(const RuntimeStore& s) {
  Projection p;
  p.ops = s.listToolOperations();
  std::sort(p.ops.begin(), p.ops.end(),
            [](const auto& a, const auto& b) { return a.operationId < b.operationId; });
  for (auto& j : s.listJournal()) p.journalByOp[j.operationId].push_back(j);
  return p;
}

RC_GTEST_PROP(StoreProperties,
              OnlineProjectionsEqualRebuildAndRejectedWritesLeaveLedgerHashUnchanged, ()) {
  std::vector<OpDef> defs;
  for (int k = 0; k < kOps; ++k) {
    OpDef o;
    o.callId = "call-" + std::to_string(k);
    o.opId = deriveOperationId(kId.invocationId, o.callId);
    o.tool = propgen::toolNames()[static_cast<size_t>(k) % propgen::toolNames().size()];
    o.mode = *rc::gen::element<std::string>("reconcile", "reconcile", "never_auto_retry");
    o.args = *propgen::genArgs();
    defs.push_back(o);
  }
  const auto actions = *propgen::upTo<Action>(
      12, rc::gen::exec([] {
        return Action{static_cast<Kind>(*propgen::uniform(0, kKinds)), *propgen::uniform(0, kOps)};
      }));

  StoreTempDir dir;
  auto store = RuntimeStore::open(dir.path);
  {
    Json user = baseEvent("user-1", 1, "user", "user");
    user["content"] = Json{{"kind", "text"}, {"text", "go"}};
    user["actions"] = Json{{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
    RC_ASSERT(store->append(decodeRuntimeEvent(user)).created);
  }
  std::vector<OpModel> m(kOps);
  bool sealed = false;
  int textCounter = 0;

  for (const Action& a : actions) {
    const OpDef& o = defs[static_cast<size_t>(a.op)];
    OpModel& om = m[static_cast<size_t>(a.op)];
    const std::string hashBefore = store->ledgerHash();
    const Projection before = projectionOf(*store);
    Expect expect = Expect::any;
    std::function<WriteResult()> call;
    std::function<void()> onCreated = [] {};

    switch (a.kind) {
      case Kind::t1:
      case Kind::t1_conflicting: {
        const int v = a.kind == Kind::t1 ? 0 : 1;
        ToolPrepared in;
        in.operationId = o.opId;
        in.journalEventId = o.opId + "_prepared";
        in.call = callEvent(o, v);
        in.dispatch = dispatchEvent(o, v);
        in.providerToolCallId = o.callId;
        in.toolName = o.tool;
        in.canonicalArgsHash = *in.call.callArgsHash;
        in.recoveryMode = o.mode;
        in.committedAt = 100;
        call = [&store, in] { return store->commitToolPrepared(in); };
        if (om.t1Variant >= 0)
          expect = om.t1Variant == v ? Expect::exact : Expect::rejected;
        else if (sealed || (om.callVariant >= 0 && om.callVariant != v))
          expect = Expect::rejected;
        else
          expect = Expect::created;
        onCreated = [&om, v] {
          om.callVariant = v;
          om.t1Variant = v;
          om.state = "prepared";
          om.journal = {"prepared"};
        };
        break;
      }
      case Kind::append_call: {
        const RuntimeEvent ev = callEvent(o, 0);
        call = [&store, ev] { return store->append(ev); };
        if (om.callVariant >= 0)
          expect = om.callVariant == 0 ? Expect::exact : Expect::rejected;
        else
          expect = sealed ? Expect::rejected : Expect::created;
        onCreated = [&om] { om.callVariant = 0; };
        break;
      }
      case Kind::t2_ok:
      case Kind::t2_error:
      case Kind::t2_other: {
        const int v = a.kind == Kind::t2_ok ? 0 : a.kind == Kind::t2_error ? 1 : 2;
        ToolOutcome in;
        in.operationId = o.opId;
        in.journalEventId = o.opId + "_outcome";
        in.response =
            responseEvent(o, v == 2 ? o.opId + "_response2" : o.opId + "_response", v == 1);
        in.committedAt = 200;
        call = [&store, in] { return store->commitToolOutcome(in); };
        const bool sameIdStored = (v != 2 && (om.resultVariant == 0 || om.resultVariant == 1)) ||
                                  (v == 2 && om.resultVariant == 2);
        if (om.state.empty())
          expect = Expect::rejected;
        else if (om.state == "prepared")
          expect = sealed ? Expect::rejected : Expect::created;
        else if (om.state == "outcome_committed" && sameIdStored)
          expect = om.resultVariant == v ? Expect::exact : Expect::rejected;
        else
          expect = Expect::rejected;
        onCreated = [&om, v, id = in.response.id] {
          om.state = "outcome_committed";
          om.resultId = id;
          om.resultVariant = v;
          om.journal.push_back("outcome_committed");
        };
        break;
      }
      case Kind::bundle_completed:
      case Kind::bundle_parked: {
        const bool completed = a.kind == Kind::bundle_completed;
        const RecoveryBundle b = bundleFor(o, completed);
        call = [&store, b] { return store->commitToolRecoveryBundle(b); };
        if (om.state.empty() || o.mode != "reconcile")
          expect = Expect::rejected;
        else if (om.state == "prepared")
          expect = sealed ? Expect::rejected : Expect::created;
        else if (om.state == (completed ? "recovery_completed" : "recovery_parked"))
          expect = Expect::exact;
        else
          expect = Expect::rejected;
        onCreated = [&om, completed, b] {
          om.journal.push_back("reconcile_observed");
          if (completed) {
            om.journal.push_back("outcome_committed");
            om.journal.push_back("recovery_completed");
            om.state = "recovery_completed";
            om.resultId = b.outcome->id;
            om.resultVariant = 3;
          } else {
            om.journal.push_back("recovery_parked");
            om.state = "recovery_parked";
          }
        };
        break;
      }
      case Kind::append_text: {
        Json t = baseEvent("text-" + std::to_string(++textCounter), 30, "model", "agent");
        t["content"] = Json{{"kind", "text"}, {"text", "step"}};
        const RuntimeEvent ev = decodeRuntimeEvent(t);
        call = [&store, ev] { return store->append(ev); };
        expect = sealed ? Expect::rejected : Expect::created;
        break;
      }
      case Kind::append_bound_response: {
        const RuntimeEvent ev = responseEvent(o, o.opId + "_generic", false);
        call = [&store, ev] { return store->append(ev); };
        expect = Expect::rejected;
        break;
      }
      case Kind::append_terminal: {
        Json t = baseEvent("terminal-1", 40, "system", "system");
        t["status"] = "completed";
        const RuntimeEvent ev = decodeRuntimeEvent(t);
        call = [&store, ev] { return store->commitTerminalEvent(ev); };
        expect = sealed ? Expect::exact : Expect::created;
        onCreated = [&sealed] { sealed = true; };
        break;
      }
      case Kind::rebuild:
        store->rebuildProjections();
        RC_ASSERT(store->ledgerHash() == hashBefore);
        RC_ASSERT(projectionOf(*store) == before);
        continue;
      case Kind::reopen:
        store.reset();
        store = RuntimeStore::open(dir.path);
        RC_ASSERT(store->ledgerHash() == hashBefore);
        RC_ASSERT(projectionOf(*store) == before);
        continue;
    }

    std::optional<WriteResult> result;
    std::string error;
    try {
      result = call();
    } catch (const Error& e) {
      error = e.code() + ": " + e.what();
    }
    RC_LOG() << kindName(a.kind) << "(op" << a.op << ") -> "
             << (result ? (result->created ? "created" : "exact") : "rejected " + error) << "\n";
    if (!result) {
      // rejected writes leave the ledger and the projections unchanged
      RC_ASSERT(store->ledgerHash() == hashBefore);
      RC_ASSERT(projectionOf(*store) == before);
      RC_ASSERT(expect == Expect::rejected || expect == Expect::any);
    } else if (!result->created) {
      RC_ASSERT(store->ledgerHash() == hashBefore);
      RC_ASSERT(projectionOf(*store) == before);
      RC_ASSERT(expect == Expect::exact || expect == Expect::any);
    } else {
      RC_ASSERT(store->ledgerHash() != hashBefore);
      RC_ASSERT(expect == Expect::created || expect == Expect::any);
      onCreated();
    }

    // online projections == rebuild from runtime_events alone
    const Projection online = projectionOf(*store);
    const std::string hash = store->ledgerHash();
    store->rebuildProjections();
    RC_ASSERT(projectionOf(*store) == online);
    RC_ASSERT(store->ledgerHash() == hash);
  }

  // Final state: projections follow the write model (f.9) and agree with the resolver.
  const Projection p = projectionOf(*store);
  const auto events = store->readRunEvents(kId.sessionId, kId.runId);
  std::vector<RuntimeEvent> evs;
  for (const auto& se : events) evs.push_back(se.event);
  const RecoveryResolution r = resolveRecovery(evs);
  RC_ASSERT(!r.hasCorruption);
  std::vector<std::string> unsettled;
  for (int k = 0; k < kOps; ++k) {
    const OpModel& om = m[static_cast<size_t>(k)];
    const OpDef& o = defs[static_cast<size_t>(k)];
    const auto it = std::find_if(p.ops.begin(), p.ops.end(),
                                 [&](const auto& row) { return row.operationId == o.opId; });
    if (om.state.empty()) {
      RC_ASSERT(it == p.ops.end());
      continue;
    }
    RC_ASSERT(it != p.ops.end());
    RC_ASSERT(it->currentState == om.state);
    const std::map<std::string, int64_t> versions = {{"prepared", 1},
                                                     {"outcome_committed", 2},
                                                     {"recovery_parked", 3},
                                                     {"recovery_completed", 4}};
    RC_ASSERT(it->version == versions.at(om.state));
    std::vector<std::string> states;
    for (const auto& j : p.journalByOp.at(o.opId)) states.push_back(j.state);
    RC_ASSERT(states == om.journal);
    if (om.state == "prepared") unsettled.push_back(o.opId);
    const auto d = std::find_if(r.decisions.begin(), r.decisions.end(),
                                [&](const auto& x) { return x.operationId == o.opId; });
    RC_ASSERT(d != r.decisions.end());
    const std::map<std::string, std::string> statusOf = {{"prepared", "indeterminate"},
                                                         {"outcome_committed", "completed"},
                                                         {"recovery_parked", "parked"},
                                                         {"recovery_completed", "completed"}};
    RC_ASSERT(d->status == statusOf.at(om.state));
  }
  std::vector<std::string> listed;
  for (const auto& row : store->listUnsettledToolOperations()) listed.push_back(row.operationId);
  std::sort(unsettled.begin(), unsettled.end());
  std::sort(listed.begin(), listed.end());
  RC_ASSERT(listed == unsettled);
  RC_ASSERT(store->integrityCheck() == std::string("ok"));
}

}  // namespace
}  // namespace crashsim
