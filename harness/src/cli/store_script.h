// Internal: store scripts — `crashsim store exec SCRIPT` and the store part of
// `crashsim ledger plan-continuation FILE` (used by cli.cpp).
//
// A script is {"ops": [{"op": NAME, "input": {...}}, ...]}: each op is one call of the store's
// public API (crashsim/store.h, crashsim/continuation.h) with the spec's input field names, run
// in order on one RuntimeStore. Ops and inputs are listed in README.md ("Store scripts").
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/store.h"

namespace crashsim::harness {

// One op of a script, its shape checked (a known op name, an object input).
struct StoreOp {
  std::string op;
  Json input;
};

// Parses a script document. Throws Error naming the first op that is not {"op": known name,
// "input"?: object} (code::missing_field, code::wrong_type, code::invalid_enum for an unknown
// op, code::unknown_key); nothing runs then.
std::vector<StoreOp> parseStoreScript(const Json& doc);

// Runs one op and returns its result object, or throws the store's Error (LedgerError for
// tool-ledger refusals). An input that does not decode (a RuntimeEvent, run header or claim)
// throws its decoder's Error: that is the op's result too, as the writer never sees it.
Json runStoreOp(RuntimeStore& store, const StoreOp& op);

// {"code", "message"} of an Error, plus "ledgerCode" and "eventId" for a LedgerError.
Json errorJson(const Error& e);

struct StoreExecArgs {
  std::string scriptFile;
  std::optional<std::string> storeDir;  // absent: a fresh store in a private temporary dir
  std::optional<std::string> barrier;   // wait until this file exists before opening the store
  int lockTimeoutSeconds = 0;           // wait this long for another host to release the store
};
// `crashsim store exec`: prints one line per op, {"index","op","result"} or
// {"index","op","error":{code,message[,ledgerCode,eventId]}}, and runs every op whatever the
// earlier ones returned. Like every writer it holds the store's host lock (crashsim/host.h
// HostLock) from before the open to the end: a store another live host owns is refused with
// code::host_already_active (after lockTimeoutSeconds) and nothing is opened or written.
// Exit 0 when the script ran (op errors are results), 2 when the script is unreadable or
// malformed, the store is owned or cannot be opened, or the barrier never appears (30 s).
int storeExec(const StoreExecArgs& args);

// `crashsim ledger plan-continuation FILE`: builds a fresh private store from the document's
// "store" script (run headers, ledgers through their writers, claims), then runs the host's
// planner (crashsim/continuation.h planContinuation, or planLatestContinuation without a
// "sourceRunId") with the document's host facts, and prints the Phase 1 plan as one line of
// stable JSON (ContinuationPlan::toJson). Document keys: "store" (a script), "sessionId",
// "sourceRunId", "expectedRuntimeEventHighWater", "host" {"safeBoundaryResumeEnabled",
// "currentCwd", "safety" {workspaceIdentity, workspacePath, backgroundOperationsSettled,
// availableToolNames, workspaceCheckpoint{ref, restored, runtimeEventHighWater}},
// "inspectorFailure" (the inspector throws this message), "ids" (fresh ids in allocation
// order), "now"}. Exit 0 continue, 1 park, 2 when the document is malformed or an op of its
// store script fails (the error line names the op).
int planContinuationCommand(const std::string& file);

}  // namespace crashsim::harness
