// ledger_gen.h — RapidCheck generators of realistic RuntimeEvent ledgers (issue #8, item 1).
//
// A ledger is generated as an abstract script (LedgerSpec: protocol marker, provider steps,
// tool operations with a fate, optional terminal event) and then built deterministically
// into contract-shaped JSON events (spec a.1–a.5, a.8) which are decoded with
// decodeRuntimeEvent(). Generating the script instead of the events keeps shrinking
// meaningful: RapidCheck removes operations and steps, and simplifies fates, so a failing
// ledger shrinks to the handful of events that matter.
//
// Every built event records whether a committed prefix may end after it (the transaction
// groups of the writers: generic append, T1 = [call?, dispatch], T2 = [response],
// bundle = [reconcile, outcome?, decision]); `committedPrefixLengths()` lists them. On top of
// a ledger (or an arbitrary prefix of it) Corruption values damage the JSON the way the
// scanner must detect: duplicate ids, removed events (orphans, missing halves), swapped
// order, args-hash drift, identity drift, refs drift, late protocol marker, multi-lane
// events, operationId collisions, evidence tampering, duplicate calls, partial flags.
//
// The expected per-operation facts of a VALID prefix are derivable from the script alone
// (OpFacts), which the prefix properties use as an oracle independent of any model.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"

namespace crashsim::propgen {

// ---------------------------------------------------------------------------------------------
// Uniform choices. rc::gen::inRange scales its range with the generation size (small at the
// start of a run, and inside rc::gen::resize), which would starve the later fates and
// corruption kinds; these are uniform over [lo, hi) at any size and still shrink towards lo.
inline rc::Gen<int> uniform(int lo, int hi) {
  return rc::gen::resize(100, rc::gen::inRange(lo, hi));
}

// A vector of 0..maxCount elements (count uniform, shrinking towards fewer elements). The
// count and the elements are independent shrinkables (a pair, not a mapcat): with mapcat,
// shrinking the count would regenerate every element unshrunk, so a counterexample whose
// elements had already shrunk could never lose its trailing elements.
template <typename T>
rc::Gen<std::vector<T>> upTo(int maxCount, rc::Gen<T> g) {
  return rc::gen::map(
      rc::gen::pair(uniform(0, maxCount + 1),
                    rc::gen::container<std::vector<T>>(static_cast<size_t>(maxCount), g)),
      [](std::pair<int, std::vector<T>> p) {
        p.second.erase(p.second.begin() + p.first, p.second.end());
        return std::move(p.second);
      });
}

// ---------------------------------------------------------------------------------------------
// Free-form JSON values (tool args, results, codec inputs).

inline const std::vector<std::string>& keyAlphabet() {
  static const std::vector<std::string> keys = {"path",
                                                "content",
                                                "a",
                                                "b",
                                                "z",
                                                "A",
                                                "_",
                                                "required",
                                                "enum",
                                                "__proto__",
                                                "é",
                                                "\xF0\x9F\x98\x80" /* U+1F600 */,
                                                "\xEF\xBD\xA1" /* U+FF61 */,
                                                "k\x01",
                                                "",
                                                "10",
                                                "2",
                                                "0",
                                                "01",
                                                "4294967294",
                                                "4294967295"};
  return keys;
}

inline rc::Gen<std::string> genText() {
  // Mostly ASCII, with control characters, non-ASCII BMP, U+2028 and supplementary planes.
  return rc::gen::container<std::string>(rc::gen::weightedOneOf<char>({
      {8, rc::gen::inRange<char>('a', 'z' + 1)},
      {1, rc::gen::element<char>(' ', '"', '\\', '/', '\n', '\t', '\x01', '\x1f', '\x7f')},
  }));
}

inline rc::Gen<std::string> genUnicodeText() {
  return rc::gen::map(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 12)),
                      [](const std::vector<int>& v) {
                        static const char* pieces[] = {"a",
                                                       "Z",
                                                       "0",
                                                       " ",
                                                       "\"",
                                                       "\\",
                                                       "\n",
                                                       "\x02",
                                                       "\xC3\xA9" /*é*/,
                                                       "\xE2\x80\xA8" /*U+2028*/,
                                                       "\xF0\x9F\x98\x80",
                                                       "\xEF\xBF\xBF"};
                        std::string s;
                        for (int i : v) s += pieces[i];
                        return s;
                      });
}

inline rc::Gen<double> genNumber() {
  return rc::gen::weightedOneOf<double>({
      {4, rc::gen::map(rc::gen::inRange(-1000, 1001), [](int i) { return double(i); })},
      {1, rc::gen::element(0.5, -0.0, 1.5, 1e21, 1e-7, 123456789.125, 9007199254740991.0, 0.1,
                           -2.5e-300, 5e-324)},
      {1, rc::gen::map(rc::gen::arbitrary<double>(),
                       [](double d) { return std::isfinite(d) ? d : 0.25; })},
  });
}

inline rc::Gen<Json> genJson(int depth = 3) {
  auto scalar = rc::gen::weightedOneOf<Json>({
      {1, rc::gen::just(Json(nullptr))},
      {1, rc::gen::map(rc::gen::arbitrary<bool>(), [](bool b) { return Json(b); })},
      {3, rc::gen::map(genNumber(),
                       [](double d) {
                         // keep integral values integral, like JSON.parse would hand them over;
                         // -0 becomes 0: an event holding -0 is not lossless (a.6), so the
                         // writers refuse it (unit tests cover that), and these are values of
                         // valid events
                         // (range first: casting 1e21 to int64_t is undefined, which clang's
                         // UBSan reports)
                         if (std::abs(d) < 9.0e15 && d == std::trunc(d))
                           return Json(static_cast<int64_t>(d));
                         return Json(d);
                       })},
      {3, rc::gen::map(genUnicodeText(), [](const std::string& s) { return Json(s); })},
  });
  if (depth <= 0) return scalar;
  auto inner = rc::gen::lazy([depth] { return genJson(depth - 1); });
  auto arr = rc::gen::map(upTo<Json>(4, inner), [](const std::vector<Json>& v) { return Json(v); });
  auto obj = rc::gen::map(upTo<std::pair<std::string, Json>>(
                              4, rc::gen::pair(rc::gen::elementOf(keyAlphabet()), inner)),
                          [](const std::vector<std::pair<std::string, Json>>& kvs) {
                            Json o = Json::object();
                            for (const auto& [k, v] : kvs) o[k] = v;
                            return o;
                          });
  return rc::gen::weightedOneOf<Json>({{3, scalar}, {1, arr}, {2, obj}});
}

// Tool args: always an object (what real tools receive), sometimes with required/enum arrays.
inline rc::Gen<Json> genArgs() {
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::pair(genText(), genText()),
                   [](const std::pair<std::string, std::string>& p) {
                     return Json{{"path", p.first + ".txt"}, {"content", p.second}};
                   }),
      rc::gen::map(rc::gen::container<std::vector<std::string>>(genText()),
                   [](const std::vector<std::string>& v) {
                     return Json{{"required", v}, {"nested", Json{{"enum", v}}}};
                   }),
      rc::gen::map(genJson(2), [](const Json& j) {
        return j.is_object() ? j : Json{{"value", j}};
      }));
}

// ---------------------------------------------------------------------------------------------
// Ledger scripts.

// What happened to one tool call. Ordered so that shrinking heads for the simplest fates.
enum class Fate {
  dispatched_pending = 0,  // call + dispatch (T1), no response: crash between T1 and T2
  dispatched_ok,           // call + dispatch + response (T2 success)
  dispatched_error,        // call + dispatch + response isError (thrown tool error)
  refused,                 // call + synthetic response before T1 (permission deny etc.)
  not_dispatched,          // call only (crash after the call was committed, before T1)
  bundle_completed,        // call + dispatch + reconcile(matches_expected) + outcome + decision
  bundle_parked,           // call + dispatch + reconcile(non-expected) + parked decision
};
inline constexpr int kFateCount = 7;

inline const char* fateName(Fate f) {
  static const char* names[] = {
      "dispatched_pending", "dispatched_ok",    "dispatched_error", "refused",
      "not_dispatched",     "bundle_completed", "bundle_parked"};
  return names[static_cast<int>(f)];
}

inline const std::vector<std::string>& toolNames() {
  static const std::vector<std::string> v = {"Write", "Edit", "Bash", "Read"};
  return v;
}
inline const std::vector<std::string>& recoveryModes() {
  static const std::vector<std::string> v = {"never_auto_retry", "replay_safe", "idempotent",
                                             "reconcile",        "reattach",    "outcome_unknown"};
  return v;
}
inline const std::vector<std::string>& parkedObservations() {
  static const std::vector<std::string> v = {"matches_prior_state", "diverged", "unreadable"};
  return v;
}

struct OpSpec {
  Fate fate = Fate::dispatched_pending;
  int tool = 0;
  Json args = Json::object();
  bool callSeparate = false;  // call committed by the generic writer at the end of the step
  bool hidden = false;        // modelVisibility hidden on call and response
  int recoveryMode = 0;       // index into recoveryModes() (bundles force "reconcile")
  int parkedObservation = 0;  // index into parkedObservations()
};

struct StepSpec {
  bool text = false;         // model text before the calls
  bool partialText = false;  // a transient partial chunk (skipped by scanner and replay)
  std::vector<OpSpec> ops;
  std::vector<int> schedule;  // interleaving of the ops' later transactions
};

struct LedgerSpec {
  bool marker = true;  // runtimeProtocol t1_after_preflight_v1 on event #1
  std::vector<StepSpec> steps;
  int terminal = 0;  // 0 none, 1 completed, 2 failed, 3 cancelled, 4 endInvocation only
};

inline rc::Gen<OpSpec> genOpSpec() {
  return rc::gen::exec([] {
    OpSpec op;
    op.fate = static_cast<Fate>(*uniform(0, kFateCount));
    op.tool = *uniform(0, static_cast<int>(toolNames().size()));
    op.args = *genArgs();
    op.callSeparate = *rc::gen::arbitrary<bool>();
    op.hidden =
        *rc::gen::weightedOneOf<bool>({{9, rc::gen::just(false)}, {1, rc::gen::just(true)}});
    op.recoveryMode = *uniform(0, static_cast<int>(recoveryModes().size()));
    op.parkedObservation = *uniform(0, 3);
    return op;
  });
}

inline rc::Gen<LedgerSpec> genLedgerSpec() {
  return rc::gen::exec([] {
    LedgerSpec spec;
    spec.marker =
        *rc::gen::weightedOneOf<bool>({{3, rc::gen::just(true)}, {1, rc::gen::just(false)}});
    spec.steps = *upTo<StepSpec>(
        4, rc::gen::exec([] {
          StepSpec s;
          s.text = *rc::gen::arbitrary<bool>();
          s.partialText =
              *rc::gen::weightedOneOf<bool>({{5, rc::gen::just(false)}, {1, rc::gen::just(true)}});
          s.ops = *upTo<OpSpec>(3, genOpSpec());
          s.schedule = *rc::gen::container<std::vector<int>>(12, uniform(0, 3));
          return s;
        }));
    spec.terminal = *uniform(0, 5);
    return spec;
  });
}

// ---------------------------------------------------------------------------------------------
// Building events.

struct Identity {
  std::string sessionId = "session-1";
  std::string invocationId = "invocation-1";
  std::string runId = "run-1";
  std::string turnId = "turn-1";
};

// Expected facts of one operation in the full (uncut) ledger, from the script.
struct OpFacts {
  std::string callId, toolName, operationId;
  Fate fate = Fate::dispatched_pending;
  bool hidden = false;
  std::string callEventId, dispatchEventId, responseEventId;
  std::string reconcileEventId, decisionEventId;
  std::string parkedReason;  // bundle_parked
  bool responseIsError = false;
};

struct BuiltLedger {
  std::vector<Json> events;
  std::vector<bool> cutAfter;  // a committed prefix may end after events[i]
  std::vector<OpFacts> ops;    // in call-creation order
  bool marker = false;

  std::vector<size_t> committedPrefixLengths() const {
    std::vector<size_t> out;
    for (size_t i = 0; i < events.size(); ++i)
      if (cutAfter[i]) out.push_back(i + 1);
    return out;
  }
};

namespace build {

inline Json envelope(const Identity& id, const std::string& eventId, double ts, const char* role,
                     const char* author) {
  return Json{{"id", eventId},       {"invocationId", id.invocationId},
              {"runId", id.runId},   {"sessionId", id.sessionId},
              {"turnId", id.turnId}, {"ts", ts},
              {"partial", false},    {"role", role},
              {"author", author}};
}

inline std::string digestOf(const std::string& s) { return sha256Digest(s); }

}  // namespace build

inline BuiltLedger buildLedger(const LedgerSpec& spec, const Identity& id = {}) {
  using build::envelope;
  BuiltLedger out;
  out.marker = spec.marker;
  double ts = 1000;
  auto push = [&](Json ev, bool cut) {
    out.events.push_back(std::move(ev));
    out.cutAfter.push_back(cut);
  };

  Json user = envelope(id, "user-1", ts++, "user", "user");
  user["content"] = Json{{"kind", "text"}, {"text", "do the task"}};
  if (spec.marker)
    user["actions"] = Json{{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  push(user, true);

  int opCounter = 0;
  for (size_t si = 0; si < spec.steps.size(); ++si) {
    const StepSpec& step = spec.steps[si];
    const std::string stepTag = "s" + std::to_string(si);
    if (step.partialText) {
      Json p = envelope(id, stepTag + "-partial", ts++, "model", "agent");
      p["partial"] = true;
      p["content"] = Json{{"kind", "text"}, {"text", "thinking aloud"}};
      push(p, true);
    }
    if (step.text) {
      Json t = envelope(id, stepTag + "-text", ts++, "model", "agent");
      t["content"] = Json{{"kind", "text"}, {"text", "working on it " + stepTag}};
      push(t, true);
    }
    // Per-op event groups: first group = T1 (or the refused/not-dispatched call), rest later.
    struct Group {
      std::vector<Json> evs;
    };
    std::vector<std::vector<Group>> pending(step.ops.size());
    std::vector<Json> separateCalls;
    for (size_t oi = 0; oi < step.ops.size(); ++oi) {
      const OpSpec& o = step.ops[oi];
      OpFacts f;
      f.callId = "call-" + std::to_string(++opCounter);
      f.toolName = toolNames()[o.tool];
      f.operationId = deriveOperationId(id.invocationId, f.callId);
      f.fate = o.fate;
      f.hidden = o.hidden;
      const bool bundle = o.fate == Fate::bundle_completed || o.fate == Fate::bundle_parked;
      const bool dispatched = o.fate != Fate::refused && o.fate != Fate::not_dispatched;
      const std::string mode = bundle ? "reconcile" : recoveryModes()[o.recoveryMode];

      Json call = envelope(id, f.operationId + "_call", 0, "model", "agent");
      call["content"] =
          Json{{"kind", "function_call"}, {"id", f.callId}, {"name", f.toolName}, {"args", o.args}};
      if (o.hidden) call["modelVisibility"] = "hidden";
      f.callEventId = call["id"];
      // Refused and not-dispatched calls are always committed by the generic writer first.
      const bool separate = o.callSeparate || !dispatched;
      if (separate) separateCalls.push_back(call);

      auto response = [&](const std::string& eventId, bool isError, bool bound) {
        Json r = envelope(id, eventId, 0, "tool", "tool");
        r["content"] = Json{{"kind", "function_response"},
                            {"id", f.callId},
                            {"name", f.toolName},
                            {"result", isError ? Json{{"error", "tool failed"}}
                                               : Json{{"ok", true}, {"path", "out.txt"}}}};
        if (isError) r["content"]["isError"] = true;
        if (o.hidden) r["modelVisibility"] = "hidden";
        if (bound) r["refs"] = Json{{"operationId", f.operationId}, {"toolCallId", f.callId}};
        return r;
      };

      if (dispatched) {
        Json d = envelope(id, f.operationId + "_dispatch", 0, "system", "system");
        d["actions"] = Json{{"toolDispatch",
                             {{"protocol", "t1_after_preflight_v1"},
                              {"operationId", f.operationId},
                              {"providerToolCallId", f.callId},
                              {"toolName", f.toolName},
                              {"canonicalArgsHash", canonicalArgsHash(f.toolName, o.args)},
                              {"recoveryMode", mode}}}};
        d["refs"] = Json{{"operationId", f.operationId}, {"toolCallId", f.callId}};
        f.dispatchEventId = d["id"];
        Group t1;
        if (!separate) t1.evs.push_back(call);
        t1.evs.push_back(d);
        pending[oi].push_back(t1);
        if (o.fate == Fate::dispatched_ok || o.fate == Fate::dispatched_error) {
          Json r = response(f.operationId + "_response", o.fate == Fate::dispatched_error, true);
          f.responseEventId = r["id"];
          f.responseIsError = o.fate == Fate::dispatched_error;
          pending[oi].push_back(Group{{r}});
        } else if (bundle) {
          const bool completed = o.fate == Fate::bundle_completed;
          const std::string observation =
              completed ? "matches_expected_state" : parkedObservations()[o.parkedObservation];
          Json rec = envelope(id, f.operationId + "_reconcile", 0, "system", "system");
          rec["actions"] =
              Json{{"toolRecovery",
                    {{"kind", "maka.tool.reconcile_result"},
                     {"version", 1},
                     {"payload",
                      {{"protocol", "tool_reconcile_v1"},
                       {"operationId", f.operationId},
                       {"observation", observation},
                       {"observationSchema", "state_identity_v1"},
                       {"observationDigest", build::digestOf(observation + f.operationId)}}}}}};
          rec["refs"] = Json{{"operationId", f.operationId}, {"toolCallId", f.callId}};
          f.reconcileEventId = rec["id"];
          Group g;
          g.evs.push_back(rec);
          Json evidence = Json::array({f.callEventId, f.dispatchEventId, f.reconcileEventId});
          Json payload = {{"protocol", "tool_recovery_v1"}, {"operationId", f.operationId}};
          if (completed) {
            Json r = response(f.operationId + "_recovered_outcome", false, true);
            f.responseEventId = r["id"];
            g.evs.push_back(r);
            evidence.push_back(f.responseEventId);
            payload["disposition"] = "completed";
            payload["reasonCode"] = "reconcile_matches_expected_state";
            payload["outcomeEventId"] = f.responseEventId;
          } else {
            payload["disposition"] = "parked";
            payload["reasonCode"] = "reconcile_" + observation;
            f.parkedReason = "reconcile_" + observation;
          }
          payload["evidenceEventIds"] = evidence;
          Json dec = envelope(id, f.operationId + "_decision", 0, "system", "system");
          dec["actions"] = Json{
              {"toolRecovery",
               {{"kind", "maka.tool.recovery_decision"}, {"version", 1}, {"payload", payload}}}};
          dec["refs"] = Json{{"operationId", f.operationId}, {"toolCallId", f.callId}};
          f.decisionEventId = dec["id"];
          g.evs.push_back(dec);
          pending[oi].push_back(g);
        }
      } else if (o.fate == Fate::refused) {
        Json r = response(f.operationId + "_response", true, false);
        r["content"]["result"] = Json{{"error", "permission denied"}};
        f.responseEventId = r["id"];
        f.responseIsError = true;
        pending[oi].push_back(Group{{r}});
      }
      out.ops.push_back(f);
    }
    // Model output first: the separately committed calls (generic append, one txn each).
    for (auto& c : separateCalls) {
      c["ts"] = ts++;
      push(c, true);
    }
    // Then the ops' transactions, interleaved by the schedule (each op's groups stay ordered).
    std::vector<size_t> next(step.ops.size(), 0);
    size_t sched = 0;
    for (;;) {
      std::vector<size_t> ready;
      for (size_t oi = 0; oi < pending.size(); ++oi)
        if (next[oi] < pending[oi].size()) ready.push_back(oi);
      if (ready.empty()) break;
      const int pick = sched < step.schedule.size() ? step.schedule[sched] : 0;
      ++sched;
      const size_t oi = ready[static_cast<size_t>(pick) % ready.size()];
      Group& g = pending[oi][next[oi]++];
      for (size_t k = 0; k < g.evs.size(); ++k) {
        g.evs[k]["ts"] = ts++;
        push(g.evs[k], k + 1 == g.evs.size());
      }
    }
  }

  if (spec.terminal != 0) {
    Json t = envelope(id, "terminal-1", ts++, spec.terminal == 1 ? "model" : "system",
                      spec.terminal == 1 ? "agent" : "system");
    switch (spec.terminal) {
      case 1:
        t["status"] = "completed";
        t["content"] = Json{{"kind", "text"}, {"text", "all done"}};
        break;
      case 2:
        t["status"] = "failed";
        t["content"] = Json{{"kind", "error"}, {"message", "provider failed"}};
        t["actions"] = Json{{"endInvocation", true}};
        break;
      case 3:
        t["status"] = "cancelled";
        break;
      default:
        t["actions"] = Json{{"endInvocation", true}};
        break;
    }
    push(t, true);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Corruptions.

enum class CorruptionKind {
  duplicate_event = 0,  // a copy of an event inserted later (duplicate_event_id)
  duplicate_id,         // a later event takes an earlier event's id
  remove_event,         // orphan dispatch/response, missing bundle half, ...
  swap_adjacent,        // swapped order
  hash_drift,           // dispatch canonicalArgsHash no longer matches the call
  args_drift,           // call args changed after the dispatch hashed them
  identity_drift,       // session/run/turn of one event changed (spine / execution identity)
  tool_name_drift,      // tool name changed on a call, dispatch or response
  refs_drift,           // refs.operationId / refs.toolCallId of a bound fact changed
  late_marker,          // runtimeProtocol on an event other than #1
  multi_lane,           // one event carrying two tool-ledger lanes
  operation_collision,  // a dispatch claims another operation's operationId
  evidence_tamper,      // recovery decision evidence / outcome reference changed
  duplicate_call,       // a second call event for the same (invocation, call id)
  partial_flag,         // an event flipped to partial
};
inline constexpr int kCorruptionKinds = 15;

inline const char* corruptionName(CorruptionKind k) {
  static const char* names[] = {"duplicate_event", "duplicate_id",    "remove_event",
                                "swap_adjacent",   "hash_drift",      "args_drift",
                                "identity_drift",  "tool_name_drift", "refs_drift",
                                "late_marker",     "multi_lane",      "operation_collision",
                                "evidence_tamper", "duplicate_call",  "partial_flag"};
  return names[static_cast<int>(k)];
}

struct Corruption {
  CorruptionKind kind = CorruptionKind::duplicate_event;
  int a = 0;  // selectors, taken modulo the number of candidates
  int b = 0;
};

inline rc::Gen<Corruption> genCorruption() {
  return rc::gen::exec([] {
    Corruption c;
    c.kind = static_cast<CorruptionKind>(*uniform(0, kCorruptionKinds));
    c.a = *uniform(0, 64);
    c.b = *uniform(0, 64);
    return c;
  });
}

namespace detail {
inline bool hasContentKind(const Json& e, const char* kind) {
  return e.contains("content") && e["content"].value("kind", "") == kind;
}
inline bool isDispatch(const Json& e) {
  return e.contains("actions") && e["actions"].contains("toolDispatch");
}
inline bool isRecovery(const Json& e) {
  return e.contains("actions") && e["actions"].contains("toolRecovery");
}
inline bool isDecision(const Json& e) {
  return isRecovery(e) && e["actions"]["toolRecovery"]["kind"] == "maka.tool.recovery_decision";
}
template <typename Pred>
std::vector<size_t> indexesWhere(const std::vector<Json>& evs, Pred p) {
  std::vector<size_t> v;
  for (size_t i = 0; i < evs.size(); ++i)
    if (p(evs[i])) v.push_back(i);
  return v;
}
inline size_t pick(const std::vector<size_t>& v, int sel) {
  return v[static_cast<size_t>(sel) % v.size()];
}
}  // namespace detail

// Applies one corruption in place. No-op when no candidate event exists.
inline void applyCorruption(std::vector<Json>& evs, const Corruption& c) {
  using namespace detail;
  if (evs.empty()) return;
  const size_t n = evs.size();
  const auto any = [](const Json&) { return true; };
  switch (c.kind) {
    case CorruptionKind::duplicate_event: {
      const size_t a = static_cast<size_t>(c.a) % n;
      const size_t at = a + 1 + static_cast<size_t>(c.b) % (n - a);
      evs.insert(evs.begin() + static_cast<std::ptrdiff_t>(at), evs[a]);
      break;
    }
    case CorruptionKind::duplicate_id: {
      if (n < 2) return;
      const size_t a = static_cast<size_t>(c.a) % (n - 1);
      const size_t b = a + 1 + static_cast<size_t>(c.b) % (n - a - 1);
      evs[b]["id"] = evs[a]["id"];
      break;
    }
    case CorruptionKind::remove_event: {
      const auto tool = indexesWhere(evs, [](const Json& e) {
        return hasContentKind(e, "function_call") || hasContentKind(e, "function_response") ||
               isDispatch(e) || isRecovery(e);
      });
      const size_t i = tool.empty() ? static_cast<size_t>(c.a) % n : pick(tool, c.a);
      evs.erase(evs.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
    case CorruptionKind::swap_adjacent: {
      if (n < 2) return;
      const size_t a = static_cast<size_t>(c.a) % (n - 1);
      std::swap(evs[a], evs[a + 1]);
      break;
    }
    case CorruptionKind::hash_drift: {
      const auto d = indexesWhere(evs, isDispatch);
      if (d.empty()) return;
      evs[pick(d, c.a)]["actions"]["toolDispatch"]["canonicalArgsHash"] =
          sha256Digest("drift" + std::to_string(c.b));
      break;
    }
    case CorruptionKind::args_drift: {
      const auto calls =
          indexesWhere(evs, [](const Json& e) { return hasContentKind(e, "function_call"); });
      if (calls.empty()) return;
      Json& args = evs[pick(calls, c.a)]["content"]["args"];
      if (!args.is_object()) args = Json::object();
      args["drift" + std::to_string(c.b % 3)] = c.b;
      break;
    }
    case CorruptionKind::identity_drift: {
      const size_t i = static_cast<size_t>(c.a) % n;
      static const char* fields[] = {"sessionId", "runId", "turnId"};
      evs[i][fields[c.b % 3]] = std::string("drifted-") + fields[c.b % 3];
      break;
    }
    case CorruptionKind::tool_name_drift: {
      const auto t = indexesWhere(evs, [](const Json& e) {
        return hasContentKind(e, "function_call") || hasContentKind(e, "function_response") ||
               isDispatch(e);
      });
      if (t.empty()) return;
      Json& e = evs[pick(t, c.a)];
      if (isDispatch(e))
        e["actions"]["toolDispatch"]["toolName"] = "Drifted";
      else
        e["content"]["name"] = "Drifted";
      break;
    }
    case CorruptionKind::refs_drift: {
      const auto t = indexesWhere(evs, [](const Json& e) {
        return e.contains("refs") && e["refs"].contains("operationId");
      });
      if (t.empty()) return;
      Json& e = evs[pick(t, c.a)];
      if (c.b % 2 == 0)
        e["refs"]["toolCallId"] = "call-drifted";
      else
        e["refs"]["operationId"] = "toolop_drifted";
      break;
    }
    case CorruptionKind::late_marker: {
      if (n < 2) return;
      Json& e = evs[1 + static_cast<size_t>(c.a) % (n - 1)];
      if (!e.contains("actions")) e["actions"] = Json::object();
      e["actions"]["runtimeProtocol"] = Json{{"toolBoundary", "t1_after_preflight_v1"}};
      break;
    }
    case CorruptionKind::multi_lane: {
      const auto t = indexesWhere(evs, [](const Json& e) {
        return hasContentKind(e, "function_call") || isDispatch(e) || isRecovery(e);
      });
      if (t.empty()) return;
      Json& e = evs[pick(t, c.a)];
      if (hasContentKind(e, "function_call")) {
        const std::string cid = e["content"]["id"];
        const std::string name = e["content"]["name"];
        e["actions"] =
            Json{{"toolDispatch",
                  {{"protocol", "t1_after_preflight_v1"},
                   {"operationId", deriveOperationId(e["invocationId"].get<std::string>(), cid)},
                   {"providerToolCallId", cid},
                   {"toolName", name},
                   {"canonicalArgsHash", canonicalArgsHash(name, e["content"]["args"])},
                   {"recoveryMode", "never_auto_retry"}}}};
      } else {
        // dispatch / recovery fact gaining a function_response content
        std::string cid = e.contains("refs") ? e["refs"].value("toolCallId", "x") : "x";
        e["content"] = Json{
            {"kind", "function_response"}, {"id", cid}, {"name", "Write"}, {"result", nullptr}};
      }
      break;
    }
    case CorruptionKind::operation_collision: {
      const auto d = indexesWhere(evs, isDispatch);
      if (d.size() < 2) return;
      const size_t a = pick(d, c.a);
      const size_t b = pick(d, c.b);
      if (a == b) return;
      const Json other = evs[b]["actions"]["toolDispatch"]["operationId"];
      evs[a]["actions"]["toolDispatch"]["operationId"] = other;
      evs[a]["refs"]["operationId"] = other;
      break;
    }
    case CorruptionKind::evidence_tamper: {
      const auto d = indexesWhere(evs, isDecision);
      if (d.empty()) return;
      Json& p = evs[pick(d, c.a)]["actions"]["toolRecovery"]["payload"];
      Json& ev = p["evidenceEventIds"];
      switch (c.b % 3) {
        case 0:
          if (ev.size() >= 2) std::swap(ev[0], ev[1]);
          break;
        case 1:
          ev.push_back("unrelated-evidence");
          break;
        default:
          if (p.contains("outcomeEventId"))
            p["outcomeEventId"] = "other-outcome";
          else
            ev.erase(ev.begin());
          break;
      }
      break;
    }
    case CorruptionKind::duplicate_call: {
      const auto calls =
          indexesWhere(evs, [](const Json& e) { return hasContentKind(e, "function_call"); });
      if (calls.empty()) return;
      const size_t a = pick(calls, c.a);
      Json copy = evs[a];
      copy["id"] = copy["id"].get<std::string>() + "_again";
      const size_t at = a + 1 + static_cast<size_t>(c.b) % (evs.size() - a);
      evs.insert(evs.begin() + static_cast<std::ptrdiff_t>(at), copy);
      break;
    }
    case CorruptionKind::partial_flag: {
      evs[static_cast<size_t>(c.a) % n]["partial"] = true;
      break;
    }
  }
  (void)any;
}

// ---------------------------------------------------------------------------------------------
// Cases: a ledger, an arbitrary prefix of it, and corruptions of that prefix.

struct LedgerCase {
  LedgerSpec spec;
  int dropFromEnd = 0;  // prefix = all events but the last dropFromEnd (at least one kept)
  std::vector<Corruption> corruptions;
};

inline rc::Gen<LedgerCase> genLedgerCase(bool withCorruptions = true) {
  return rc::gen::exec([withCorruptions] {
    LedgerCase c;
    c.spec = *genLedgerSpec();
    c.dropFromEnd = *rc::gen::weightedOneOf<int>({{2, rc::gen::just(0)}, {3, uniform(0, 40)}});
    if (withCorruptions)
      c.corruptions = *rc::gen::weightedOneOf<std::vector<Corruption>>(
          {{2, rc::gen::just(std::vector<Corruption>{})},
           {3, upTo<Corruption>(3, genCorruption())}});
    return c;
  });
}

inline std::vector<Json> caseEvents(const LedgerCase& c) {
  BuiltLedger l = buildLedger(c.spec);
  std::vector<Json> evs = l.events;
  const size_t keep =
      evs.size() > static_cast<size_t>(c.dropFromEnd) ? evs.size() - c.dropFromEnd : 1;
  evs.resize(std::min(keep, evs.size()));
  for (const auto& k : c.corruptions) applyCorruption(evs, k);
  return evs;
}

// Decodes every event; nullopt when the (corrupted) JSON is not a decodable RuntimeEvent.
inline std::optional<std::vector<RuntimeEvent>> decodeAll(const std::vector<Json>& evs) {
  std::vector<RuntimeEvent> out;
  out.reserve(evs.size());
  try {
    for (const auto& e : evs) out.push_back(decodeRuntimeEvent(e));
  } catch (const Error&) {
    return std::nullopt;
  }
  return out;
}

// Decodes events that the generator built to be valid; a decode failure is a codec bug and
// fails the property with the decoder's message.
inline std::vector<RuntimeEvent> decodeValid(const std::vector<Json>& evs) {
  std::vector<RuntimeEvent> out;
  out.reserve(evs.size());
  for (const auto& e : evs) {
    try {
      out.push_back(decodeRuntimeEvent(e));
    } catch (const Error& err) {
      RC_FAIL("generated event does not decode: " + err.code() + " " + err.what() + " at " +
              err.path() + " in " + e.dump());
    }
  }
  return out;
}

inline std::string showLedger(const std::vector<Json>& evs) {
  std::string s;
  for (size_t i = 0; i < evs.size(); ++i)
    s += "  [" + std::to_string(i) + "] " + stableJson(evs[i]) + "\n";
  return s;
}

inline void showValue(const OpSpec& o, std::ostream& os) {
  os << "{" << fateName(o.fate) << " " << toolNames()[o.tool] << " args=" << o.args.dump()
     << (o.callSeparate ? " callSeparate" : "") << (o.hidden ? " hidden" : "") << "}";
}
inline void showValue(const Corruption& c, std::ostream& os) {
  os << corruptionName(c.kind) << "(" << c.a << "," << c.b << ")";
}
inline void showSpecFields(const LedgerSpec& spec, std::ostream& os) {
  os << "marker=" << spec.marker << " terminal=" << spec.terminal << " steps=[";
  for (const auto& s : spec.steps) {
    os << "{text=" << s.text << " partialText=" << s.partialText << " ops=[";
    for (const auto& o : s.ops) showValue(o, os);
    os << "]}";
  }
  os << "]";
}
inline void showValue(const LedgerSpec& spec, std::ostream& os) {
  os << "LedgerSpec{";
  showSpecFields(spec, os);
  os << "}\n" << showLedger(buildLedger(spec).events);
}
inline void showValue(const LedgerCase& c, std::ostream& os) {
  os << "LedgerCase{dropFromEnd=" << c.dropFromEnd << " ";
  showSpecFields(c.spec, os);
  os << " corruptions=[";
  for (const auto& k : c.corruptions) {
    showValue(k, os);
    os << " ";
  }
  os << "]}\n" << showLedger(caseEvents(c));
}

// The workspace identity of the continuation properties' runs, and another one.
inline const std::string kWs = "workspace:v1:2b1c8a9e-3d4f-4a5b-8c6d-7e8f9a0b1c2d";
inline const std::string kOtherWs = "workspace:v1:9f8e7d6c-5b4a-4c3d-9e2f-1a0b9c8d7e6f";

}  // namespace crashsim::propgen
