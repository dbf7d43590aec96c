// Store scripts: one op = one call of the store's public API (see store_script.h).
#include "cli/store_script.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <thread>

#include "cli/ledger_commands.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/host.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

namespace {

constexpr std::array<std::string_view, 17> kOps{"createRun",
                                                "updateRunHeader",
                                                "markRunTerminal",
                                                "append",
                                                "commitTerminalEvent",
                                                "commitToolPrepared",
                                                "commitToolOutcome",
                                                "commitToolRecoveryBundle",
                                                "claimContinuation",
                                                "commitContinuationStart",
                                                "commitContinuationRepairStart",
                                                "rebuildProjections",
                                                "readRunEvents",
                                                "listRuns",
                                                "listToolOperations",
                                                "listJournal",
                                                "listClaims"};

const Json& field(const Json& input, const char* key) {
  if (!input.contains(key)) throw Error(code::missing_field, std::string("input lacks ") + key);
  return input[key];
}
std::string str(const Json& input, const char* key) {
  const Json& v = field(input, key);
  if (!v.is_string()) throw Error(code::wrong_type, std::string(key) + " must be a string");
  return v.get<std::string>();
}
double num(const Json& input, const char* key) {
  const Json& v = field(input, key);
  if (!v.is_number()) throw Error(code::wrong_type, std::string(key) + " must be a number");
  return v.get<double>();
}
RuntimeEvent event(const Json& input, const char* key) {
  return decodeRuntimeEvent(field(input, key));
}

Json writeResult(const WriteResult& r) {
  return Json{{"created", r.created}, {"runtimeEventSeq", r.runtimeEventSeq}};
}

Json operationJson(const ToolOperationRow& r) {
  Json j = {{"operationId", r.operationId},
            {"invocationId", r.invocationId},
            {"runId", r.runId},
            {"turnId", r.turnId},
            {"providerToolCallId", r.providerToolCallId},
            {"toolName", r.toolName},
            {"canonicalArgsHash", r.canonicalArgsHash},
            {"recoveryMode", r.recoveryMode},
            {"currentState", r.currentState},
            {"callEventId", r.callEventId},
            {"version", r.version}};
  if (r.dispatchEventId) j["dispatchEventId"] = *r.dispatchEventId;
  if (r.resultEventId) j["resultEventId"] = *r.resultEventId;
  return j;
}

Json journalJson(const JournalRow& r) {
  Json j = {{"journalEventId", r.journalEventId},
            {"operationId", r.operationId},
            {"state", r.state},
            {"runtimeEventId", r.runtimeEventId},
            {"committedAt", r.committedAt}};
  if (r.metadataJson) j["metadataJson"] = *r.metadataJson;
  return j;
}

Json claimStateJson(const ClaimState& s) {
  Json j = {{"claimId", s.claim.claimId}, {"boundaryDigest", s.claim.boundaryDigest}};
  if (s.startEventId) j["startEventId"] = *s.startEventId;
  if (s.startKind) j["startKind"] = *s.startKind;
  return j;
}

}  // namespace

Json errorJson(const Error& e) {
  Json j = {{"code", std::string(e.code())}, {"message", std::string(e.what())}};
  if (const auto* le = dynamic_cast<const LedgerError*>(&e)) {
    j["ledgerCode"] = le->ledgerCode();
    j["eventId"] = le->eventId();
  }
  return j;
}

std::vector<StoreOp> parseStoreScript(const Json& doc) {
  if (!doc.is_object() || !doc.contains("ops") || !doc["ops"].is_array())
    throw Error(code::missing_field, "a store script is {\"ops\": [{\"op\", \"input\"}, ...]}");
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() != "ops") throw Error(code::unknown_key, "unknown script key " + it.key());
  }
  std::vector<StoreOp> ops;
  for (size_t i = 0; i < doc["ops"].size(); ++i) {
    const Json& o = doc["ops"][i];
    const std::string where = "ops[" + std::to_string(i) + "]";
    if (!o.is_object() || !o.contains("op") || !o["op"].is_string())
      throw Error(code::missing_field, where + " must be {\"op\": name, \"input\": {...}}");
    for (auto it = o.begin(); it != o.end(); ++it) {
      if (it.key() != "op" && it.key() != "input")
        throw Error(code::unknown_key, where + " has an unknown key " + it.key());
    }
    StoreOp op{o["op"].get<std::string>(), o.value("input", Json::object())};
    if (std::find(kOps.begin(), kOps.end(), op.op) == kOps.end())
      throw Error(code::invalid_enum, where + ": unknown op " + op.op);
    if (!op.input.is_object()) throw Error(code::wrong_type, where + ".input must be an object");
    ops.push_back(std::move(op));
  }
  return ops;
}

namespace {

// The writers' inputs, decoded from an op's input object.
ToolPrepared toolPreparedOf(const Json& in) {
  ToolPrepared t;
  t.operationId = str(in, "operationId");
  t.journalEventId = str(in, "journalEventId");
  t.call = event(in, "runtimeEvent");
  t.dispatch = event(in, "dispatchRuntimeEvent");
  t.providerToolCallId = str(in, "providerToolCallId");
  t.toolName = str(in, "toolName");
  t.canonicalArgsHash = str(in, "canonicalArgsHash");
  t.recoveryMode = str(in, "recoveryMode");
  t.committedAt = num(in, "committedAt");
  return t;
}

ToolOutcome toolOutcomeOf(const Json& in) {
  ToolOutcome t;
  t.operationId = str(in, "operationId");
  t.journalEventId = str(in, "journalEventId");
  t.response = event(in, "runtimeEvent");
  t.committedAt = num(in, "committedAt");
  return t;
}

RecoveryBundle recoveryBundleOf(const Json& in) {
  RecoveryBundle b;
  b.operationId = str(in, "operationId");
  b.reconcile = event(in, "reconcileRuntimeEvent");
  if (in.contains("outcomeRuntimeEvent")) b.outcome = event(in, "outcomeRuntimeEvent");
  b.decision = event(in, "decisionRuntimeEvent");
  return b;
}

// The read ops (rebuildProjections, readRunEvents, the listings): what they return.
Json runReadOp(RuntimeStore& store, const std::string& name, const Json& in) {
  if (name == "rebuildProjections") {
    const RuntimeStore::RebuildResult r = store.rebuildProjections();
    return Json{{"operations", r.operations}, {"journalEvents", r.journalEvents}};
  }
  if (name == "readRunEvents") {
    Json events = Json::array();
    for (const StoredEvent& e : store.readRunEvents(str(in, "sessionId"), str(in, "runId")))
      events.push_back(Json{{"eventId", e.event.id}, {"eventSeq", e.eventSeq}});
    return Json{{"events", std::move(events)}};
  }
  if (name == "listRuns") {
    Json runs = Json::array();
    for (const RunHeader& h : store.listRuns()) runs.push_back(h.toJson());
    return Json{{"runs", std::move(runs)}};
  }
  if (name == "listToolOperations") {
    Json rows = Json::array();
    for (const ToolOperationRow& r : store.listToolOperations()) rows.push_back(operationJson(r));
    return Json{{"operations", std::move(rows)}};
  }
  if (name == "listJournal") {
    Json rows = Json::array();
    for (const JournalRow& r : store.listJournal()) rows.push_back(journalJson(r));
    return Json{{"journal", std::move(rows)}};
  }
  Json claims = Json::array();  // listClaims (parseStoreScript admits only kOps)
  for (const ClaimState& s : listClaims(store)) claims.push_back(claimStateJson(s));
  return Json{{"claims", std::move(claims)}};
}

}  // namespace

Json runStoreOp(RuntimeStore& store, const StoreOp& op) {
  const std::string& name = op.op;
  const Json& in = op.input;
  if (name == "createRun" || name == "updateRunHeader" || name == "markRunTerminal") {
    const RunHeader h = RunHeader::fromJson(in);
    if (name == "createRun") store.createRun(h);
    if (name == "updateRunHeader") store.updateRunHeader(h);
    if (name == "markRunTerminal") store.markRunTerminal(h);
    return Json::object();
  }
  if (name == "append") return writeResult(store.append(event(in, "runtimeEvent")));
  if (name == "commitTerminalEvent")
    return writeResult(store.commitTerminalEvent(event(in, "runtimeEvent")));
  if (name == "commitToolPrepared")
    return writeResult(store.commitToolPrepared(toolPreparedOf(in)));
  if (name == "commitToolOutcome") return writeResult(store.commitToolOutcome(toolOutcomeOf(in)));
  if (name == "commitToolRecoveryBundle")
    return writeResult(store.commitToolRecoveryBundle(recoveryBundleOf(in)));
  if (name == "claimContinuation") {
    const ClaimResult r = claimContinuation(store, ContinuationClaim::fromJson(field(in, "claim")));
    Json j = {{"result", r.result}};
    if (r.existing) j["existing"] = claimStateJson(*r.existing);
    if (!r.conflictDetail.empty()) j["conflictDetail"] = r.conflictDetail;
    return j;
  }
  if (name == "commitContinuationStart" || name == "commitContinuationRepairStart") {
    const ContinuationClaim claim = ContinuationClaim::fromJson(field(in, "claim"));
    const RuntimeEvent start = event(in, "runtimeEvent");
    return writeResult(name == "commitContinuationStart"
                           ? commitContinuationStart(store, claim, start)
                           : commitContinuationRepairStart(store, claim, start));
  }
  return runReadOp(store, name, in);
}

int storeExec(const StoreExecArgs& args) {
  const std::vector<StoreOp> ops = parseStoreScript(parseJson(readInput(args.scriptFile)));
  fs::path dir;
  bool temporary = false;
  if (args.storeDir) {
    dir = *args.storeDir;
  } else {
    std::string tmpl = (fs::temp_directory_path() / "crashsim-store-exec-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      throw Error(code::input_unreadable, "cannot create a temporary store directory");
    dir = tmpl;
    temporary = true;
  }
  if (args.barrier) {
    // Two processes started behind one barrier open and write the same store together.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::error_code ec;
    while (!fs::exists(*args.barrier, ec)) {
      if (std::chrono::steady_clock::now() > deadline)
        throw Error(code::input_unreadable, "barrier " + *args.barrier + " never appeared");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  int rc = 0;
  try {
    const HostLock lock(dir, std::chrono::seconds(args.lockTimeoutSeconds));
    auto store = RuntimeStore::open(dir);
    for (size_t i = 0; i < ops.size(); ++i) {
      Json line = {{"index", i}, {"op", ops[i].op}};
      try {
        line["result"] = runStoreOp(*store, ops[i]);
      } catch (const Error& e) {
        line["error"] = errorJson(e);
      } catch (const Json::exception& e) {  // an input value of the wrong JSON type
        line["error"] = Json{{"code", std::string(code::wrong_type)}, {"message", e.what()}};
      }
      std::cout << stableJson(line) << "\n";
    }
  } catch (const Error& e) {
    std::cout << stableJson(Json{{"error", errorJson(e)}}) << "\n";
    rc = 2;
  }
  std::cout << std::flush;
  if (temporary) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return rc;
}

namespace {

void checkKeys(const Json& j, std::initializer_list<std::string_view> known,
               const std::string& what) {
  if (!j.is_object()) throw Error(code::wrong_type, what + " must be an object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      throw Error(code::unknown_key, what + " has an unknown key " + it.key());
  }
}

SafetyFacts safetyFactsOf(const Json& j) {
  checkKeys(j,
            {"workspaceIdentity", "workspacePath", "backgroundOperationsSettled",
             "availableToolNames", "workspaceCheckpoint"},
            "host.safety");
  SafetyFacts f;
  f.workspaceIdentity = j.value("workspaceIdentity", "");
  f.workspacePath = j.value("workspacePath", "");
  f.backgroundOperationsSettled = j.value("backgroundOperationsSettled", true);
  f.availableToolNames = j.value("availableToolNames", std::vector<std::string>{});
  if (j.contains("workspaceCheckpoint")) {
    const Json& c = j["workspaceCheckpoint"];
    checkKeys(c, {"ref", "restored", "runtimeEventHighWater"}, "host.safety.workspaceCheckpoint");
    WorkspaceCheckpoint w;
    if (c.contains("ref") && !c["ref"].is_null()) w.ref = c["ref"].get<std::string>();
    w.restored = c.value("restored", false);
    w.runtimeEventHighWater = c.value("runtimeEventHighWater", int64_t{0});
    f.workspaceCheckpoint = w;
  }
  return f;
}

// The host of a plan-continuation document ("host"): the inspector's facts or its failure,
// deterministic ids and clock.
ContinuationHost continuationHostOf(const Json& hostJson) {
  checkKeys(hostJson,
            {"safeBoundaryResumeEnabled", "currentCwd", "safety", "inspectorFailure", "ids", "now"},
            "host");
  ContinuationHost host;
  try {
    if (hostJson.contains("safeBoundaryResumeEnabled"))
      host.enabled = hostJson["safeBoundaryResumeEnabled"].get<bool>();
    host.currentCwd = hostJson.value("currentCwd", "");
    if (hostJson.contains("inspectorFailure")) {
      const std::string message = hostJson["inspectorFailure"].get<std::string>();
      host.inspector = [message]() -> SafetyFacts { throw std::runtime_error(message); };
    } else if (hostJson.contains("safety")) {
      host.inspector = [facts = safetyFactsOf(hostJson["safety"])] { return facts; };
    }
    auto ids = std::make_shared<std::vector<std::string>>(
        hostJson.value("ids", std::vector<std::string>{}));
    auto next = std::make_shared<size_t>(0);
    host.newId = [ids, next] {
      // Deterministic by default: the plan of a document is reproducible byte for byte.
      const size_t k = (*next)++;
      return k < ids->size() ? (*ids)[k] : "plan-id-" + std::to_string(k + 1);
    };
    const double now = hostJson.value("now", 0.0);
    host.now = [now] { return now; };
  } catch (const Json::exception& e) {
    throw Error(code::wrong_type, std::string("host: ") + e.what());
  }
  return host;
}

}  // namespace

int planContinuationCommand(const std::string& file) {
  const Json doc = parseJson(readInput(file));
  checkKeys(doc, {"store", "sessionId", "sourceRunId", "expectedRuntimeEventHighWater", "host"},
            "the plan-continuation document");
  const std::vector<StoreOp> ops =
      parseStoreScript(doc.value("store", Json{{"ops", Json::array()}}));
  const ContinuationHost host = continuationHostOf(doc.value("host", Json::object()));
  std::optional<int64_t> highWater;
  if (doc.contains("expectedRuntimeEventHighWater")) {
    if (!doc["expectedRuntimeEventHighWater"].is_number_integer())
      throw Error(code::wrong_type, "expectedRuntimeEventHighWater must be an integer");
    highWater = doc["expectedRuntimeEventHighWater"].get<int64_t>();
  }
  auto text = [&](const char* k) -> std::optional<std::string> {
    if (!doc.contains(k)) return std::nullopt;
    if (!doc[k].is_string()) throw Error(code::wrong_type, std::string(k) + " must be a string");
    return doc[k].get<std::string>();
  };
  const std::optional<std::string> sessionId = text("sessionId"), sourceRunId = text("sourceRunId");
  if (sourceRunId && !sessionId)
    throw Error(code::missing_field, "sourceRunId needs its sessionId");

  std::string tmpl = (fs::temp_directory_path() / "crashsim-plan-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw Error(code::input_unreadable, "cannot create a temporary store directory");
  const fs::path dir = tmpl;
  int rc = 2;
  try {
    auto store = RuntimeStore::open(dir);
    for (size_t i = 0; i < ops.size(); ++i) {
      try {
        runStoreOp(*store, ops[i]);
      } catch (const std::exception& e) {
        const auto* error = dynamic_cast<const Error*>(&e);
        Json err = error ? errorJson(*error)
                         : Json{{"code", std::string(code::wrong_type)}, {"message", e.what()}};
        err["index"] = i;
        err["op"] = ops[i].op;
        std::cout << stableJson(Json{{"error", err}}) << "\n";
        store.reset();
        std::error_code ec;
        fs::remove_all(dir, ec);
        return 2;
      }
    }
    const ContinuationPlan plan =
        sourceRunId ? planContinuation(*store, *sessionId, *sourceRunId, host, highWater)
                    : planLatestContinuation(*store, sessionId, host);
    std::cout << stableJson(plan.toJson()) << "\n";
    rc = plan.isContinue() ? 0 : 1;
  } catch (const Error& e) {
    std::cout << stableJson(Json{{"error", errorJson(e)}}) << "\n";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return rc;
}

}  // namespace crashsim::harness
