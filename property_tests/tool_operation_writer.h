// tool_operation_writer.h — one tool operation written through the RuntimeStore's dedicated
// writers the way the runtime writes it (spec f.4–f.6), shared by the continuation properties
// that build real source runs.
#pragma once

#include <rapidcheck.h>

#include <string>

#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "ledger_gen.h"

namespace crashsim::propgen {

// How far an operation got before the crash.
//   settled: call + dispatch (T1), then the response (T2)
//   refused: the call and an unbound error response (refused before T1)
//   unsettled: T1 only (dispatched, no outcome)
//   parked: T1, then a parked recovery bundle (reconcile diverged)
//   not_dispatched: the call only
enum class ToolOpFate { settled = 0, refused, unsettled, parked, not_dispatched };

// Writes call k ("call-<k>", the k-th tool of propgen::toolNames()) of run `r` with `fate`.
// `r` provides invocation, ts, seq and base(id, role, author) (an envelope, advancing ts);
// `append(Json)` commits an ordinary event through the generic writer and counts it in
// r.seq. T1, T2 and the bundle are committed here and counted in r.seq too.
template <class Run, class Append>
void writeToolOperation(RuntimeStore& store, Run& r, Append&& append, int k, size_t toolIndex,
                        ToolOpFate fate) {
  const std::string callId = "call-" + std::to_string(k);
  const std::string tool = toolNames()[toolIndex];
  const std::string opId = deriveOperationId(r.invocation, callId);
  const std::string mode = fate == ToolOpFate::parked ? "reconcile" : "never_auto_retry";
  const Json args = Json{{"path", "f" + std::to_string(k) + ".txt"}};
  Json call = r.base(opId + "_call", "model", "agent");
  call["content"] = Json{{"kind", "function_call"}, {"id", callId}, {"name", tool}, {"args", args}};
  auto response = [&](bool bound, bool isError) {
    Json x = r.base(opId + "_response", "tool", "tool");
    x["content"] = Json{{"kind", "function_response"},
                        {"id", callId},
                        {"name", tool},
                        {"result", Json{{"ok", !isError}}}};
    if (isError) x["content"]["isError"] = true;
    if (bound) x["refs"] = Json{{"operationId", opId}, {"toolCallId", callId}};
    return x;
  };
  if (fate == ToolOpFate::refused || fate == ToolOpFate::not_dispatched) {
    append(call);
    if (fate == ToolOpFate::refused) append(response(false, true));
    return;
  }
  Json disp = r.base(opId + "_dispatch", "system", "system");
  disp["actions"] = Json{{"toolDispatch",
                          {{"protocol", "t1_after_preflight_v1"},
                           {"operationId", opId},
                           {"providerToolCallId", callId},
                           {"toolName", tool},
                           {"canonicalArgsHash", canonicalArgsHash(tool, args)},
                           {"recoveryMode", mode}}}};
  disp["refs"] = Json{{"operationId", opId}, {"toolCallId", callId}};
  ToolPrepared t1;
  t1.operationId = opId;
  t1.journalEventId = opId + "_prepared";
  t1.call = decodeRuntimeEvent(call);
  t1.dispatch = decodeRuntimeEvent(disp);
  t1.providerToolCallId = callId;
  t1.toolName = tool;
  t1.canonicalArgsHash = canonicalArgsHash(tool, args);
  t1.recoveryMode = mode;
  t1.committedAt = r.ts;
  RC_ASSERT(store.commitToolPrepared(t1).created);
  r.seq += 2;
  if (fate == ToolOpFate::settled) {
    ToolOutcome t2;
    t2.operationId = opId;
    t2.journalEventId = opId + "_outcome";
    t2.response = decodeRuntimeEvent(response(true, false));
    t2.committedAt = r.ts;
    RC_ASSERT(store.commitToolOutcome(t2).created);
    r.seq += 1;
  } else if (fate == ToolOpFate::parked) {
    Json rec = r.base(opId + "_reconcile", "system", "system");
    rec["actions"] = Json{{"toolRecovery",
                           {{"kind", "maka.tool.reconcile_result"},
                            {"version", 1},
                            {"payload",
                             {{"protocol", "tool_reconcile_v1"},
                              {"operationId", opId},
                              {"observation", "diverged"},
                              {"observationSchema", "state_identity_v1"},
                              {"observationDigest", sha256Digest("diverged")}}}}}};
    rec["refs"] = Json{{"operationId", opId}, {"toolCallId", callId}};
    Json dec = r.base(opId + "_decision", "system", "system");
    dec["actions"] =
        Json{{"toolRecovery",
              {{"kind", "maka.tool.recovery_decision"},
               {"version", 1},
               {"payload",
                {{"protocol", "tool_recovery_v1"},
                 {"operationId", opId},
                 {"disposition", "parked"},
                 {"reasonCode", "reconcile_diverged"},
                 {"evidenceEventIds",
                  Json::array({opId + "_call", opId + "_dispatch", opId + "_reconcile"})}}}}}};
    dec["refs"] = Json{{"operationId", opId}, {"toolCallId", callId}};
    RecoveryBundle b;
    b.operationId = opId;
    b.reconcile = decodeRuntimeEvent(rec);
    b.decision = decodeRuntimeEvent(dec);
    RC_ASSERT(store.commitToolRecoveryBundle(b).created);
    r.seq += 2;
  }
}

}  // namespace crashsim::propgen
