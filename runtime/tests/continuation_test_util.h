// continuation_test_util.h — ledger builders for the continuation tests (real store, real
// SQLite; ledgers are written through the store's dedicated writers).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "store_test_util.h"

namespace ctest {

using namespace crashsim;

inline std::filesystem::path tempDir(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto p =
      std::filesystem::temp_directory_path() /
      ("crashsim-cont-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

struct TempStore {
  std::filesystem::path dir;
  std::unique_ptr<RuntimeStore> store;
  explicit TempStore(const std::string& tag) : dir(tempDir(tag)) {
    store = RuntimeStore::open(dir);
  }
  ~TempStore() {
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  RuntimeStore& operator*() { return *store; }
  RuntimeStore* operator->() { return store.get(); }
};

inline const std::string kWorkspace = "workspace:v1:2b1c8a9e-3d4f-4a5b-8c6d-7e8f9a0b1c2d";
inline const std::string kOtherWorkspace = "workspace:v1:9f8e7d6c-5b4a-4c3d-9e2f-1a0b9c8d7e6f";

// One run's identity and event builder.
struct RunIds {
  std::string session, invocation, run, turn;
  int n = 0;
  double ts = 1000;
  std::string nextId(const std::string& kind) {
    return run + "-" + kind + "-" + std::to_string(++n);
  }
  Json base(const std::string& id, const char* role, const char* author) {
    ts += 1;
    return Json{{"id", id},         {"sessionId", session}, {"invocationId", invocation},
                {"runId", run},     {"turnId", turn},       {"ts", ts},
                {"partial", false}, {"role", role},         {"author", author}};
  }
  RuntimeEvent user(const std::string& text, bool marker = false) {
    Json e = base(nextId("user"), "user", "user");
    e["content"] = Json{{"kind", "text"}, {"text", text}};
    if (marker)
      e["actions"] = Json{{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
    return decodeRuntimeEvent(e);
  }
  RuntimeEvent model(const std::string& text) {
    Json e = base(nextId("model"), "model", "agent");
    e["content"] = Json{{"kind", "text"}, {"text", text}};
    return decodeRuntimeEvent(e);
  }
  RuntimeEvent systemText(const std::string& text) {
    Json e = base(nextId("system"), "system", "system");
    e["content"] = Json{{"kind", "text"}, {"text", text}};
    return decodeRuntimeEvent(e);
  }
  RuntimeEvent call(const std::string& callId, const std::string& tool, Json args) {
    Json e = base(nextId("call"), "model", "agent");
    e["content"] = Json{{"kind", "function_call"}, {"id", callId}, {"name", tool}, {"args", args}};
    return decodeRuntimeEvent(e);
  }
  RuntimeEvent response(const std::string& callId, const std::string& tool, Json result,
                        bool isError = false) {
    Json e = base(nextId("resp"), "tool", "tool");
    e["content"] =
        Json{{"kind", "function_response"}, {"id", callId}, {"name", tool}, {"result", result}};
    if (isError) e["content"]["isError"] = true;
    return decodeRuntimeEvent(e);
  }
  RuntimeEvent failedTerminal(const std::string& failureClass = "app_restarted") {
    Json e = base(nextId("terminal"), "system", "system");
    e["status"] = "failed";
    e["content"] = Json{{"kind", "error"},
                        {"message", "interrupted"},
                        {"code", failureClass},
                        {"reason", failureClass}};
    e["actions"] = Json{{"endInvocation", true},
                        {"stateDelta",
                         {{"recovered", true},
                          {"recoveryReason", "run_interrupted"},
                          {"failureClass", failureClass}}}};
    return decodeRuntimeEvent(e);
  }
  RuntimeEvent completedTerminal(const std::string& text) {
    Json e = base(nextId("terminal"), "model", "agent");
    e["status"] = "completed";
    e["content"] = Json{{"kind", "text"}, {"text", text}};
    e["actions"] = Json{{"endInvocation", true}};
    return decodeRuntimeEvent(e);
  }
};

inline RunIds ids(const std::string& session, const std::string& run) {
  return RunIds{session, "inv-" + run, run, "turn-" + run};
}

inline RunHeader header(const RunIds& r, double createdAt, const std::string& cwd = "/ws") {
  RunHeader h;
  h.sessionId = r.session;
  h.runId = r.run;
  h.invocationId = r.invocation;
  h.turnId = r.turn;
  h.status = "running";
  h.createdAt = h.updatedAt = createdAt;
  h.workspaceIdentity = kWorkspace;
  h.cwd = cwd;
  return h;
}

// Appends events then (when the last one is terminal) marks the header terminal.
inline void appendAll(RuntimeStore& s, const std::vector<RuntimeEvent>& events) {
  for (const RuntimeEvent& e : events) s.append(e);
}

inline void finishFailed(RuntimeStore& s, RunIds& r, RunHeader h,
                         const std::string& failureClass = "app_restarted") {
  RuntimeEvent t = r.failedTerminal(failureClass);
  s.append(t);
  h.status = "failed";
  h.updatedAt = t.ts;
  h.completedAt = t.ts;
  h.failureClass = failureClass;
  s.markRunTerminal(h);
}

// A failed source run: user asks, model calls Write, tool answers, killed → failed terminal.
inline RunIds makeFailedRun(RuntimeStore& s, const std::string& session, const std::string& run,
                            double createdAt, const std::string& cwd = "/ws") {
  RunIds r = ids(session, run);
  r.ts = createdAt;
  RunHeader h = header(r, createdAt, cwd);
  s.createRun(h);
  appendAll(s, {r.user("write the config"), r.call(run + "-c1", "Write", {{"path", "a.txt"}}),
                r.response(run + "-c1", "Write", {{"ok", true}})});
  finishFailed(s, r, h);
  return r;
}

struct Host {
  SafetyFacts facts;
  int idCounter = 0;
  std::string idPrefix = "new";
  double clock = 100000;
  ContinuationHost host() {
    ContinuationHost h;
    h.enabled = true;
    h.currentCwd = "/ws";
    h.inspector = [this] { return facts; };
    h.newId = [this] { return idPrefix + "-" + std::to_string(++idCounter); };
    h.now = [this] { return clock += 10; };
    return h;
  }
  Host() {
    facts.workspaceIdentity = kWorkspace;
    facts.workspacePath = "/ws";
    facts.availableToolNames = {"Write", "Read", "Bash", "Edit"};
  }
};

inline bool hasReason(const ContinuationPlan& p, std::string_view r) {
  for (const auto& x : p.rejectionReasons) {
    if (x == r) return true;
  }
  return false;
}

inline void execSql(RuntimeStore& s, const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(s.handle(), sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  ASSERT_EQ(rc, SQLITE_OK) << msg << " in " << sql;
}

using crashsim::testutil::sqlQuote;

// Builds a claim for the plan exactly as executeContinuation does.
inline ContinuationClaim claimFor(const ContinuationPlan& p, double claimedAt) {
  ContinuationClaim c;
  c.claimId = p.claimId;
  c.boundary = *p.boundary;
  c.boundaryDigest = p.boundary->manifestDigest;
  c.providerReplayDigest = p.providerReplayDigest;
  c.target = PrefixIdentity{p.sessionId, p.invocationId, p.runId, p.turnId};
  c.claimedAt = claimedAt;
  RunHeader& h = c.targetRunHeader;
  h.sessionId = p.sessionId;
  h.runId = p.runId;
  h.invocationId = p.invocationId;
  h.turnId = p.turnId;
  h.status = "created";
  h.createdAt = h.updatedAt = claimedAt;
  h.workspaceIdentity = kWorkspace;
  h.parentRunId = p.sourceRunId;
  h.parentTurnId = p.sourceTurnId;
  h.continuationSource = Json{{"protocol", "continuation_source_v2"},
                              {"claimId", p.claimId},
                              {"boundaryDigest", p.boundary->manifestDigest},
                              {"sourceInvocationId", p.sourceInvocationId},
                              {"sourceRunId", p.sourceRunId},
                              {"sourceTurnId", p.sourceTurnId},
                              {"sourceRuntimeEventHighWater", p.sourceRuntimeEventHighWater},
                              {"sourcePrefixDigest", p.sourcePrefixDigest},
                              {"replayManifestDigest", p.boundary->manifestDigest}};
  return c;
}

}  // namespace ctest
