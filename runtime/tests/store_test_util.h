// store_test_util.h — RuntimeEvent builders and store fixtures for the store tests.
// Events are built as contract-shaped JSON and obtained only through decodeRuntimeEvent.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"

namespace crashsim::testutil {

namespace fs = std::filesystem;

struct Ident {
  std::string session = "session-1", invocation = "invocation-1", run = "run-1", turn = "turn-1";
};

inline Json envelope(const Ident& id, const std::string& eventId, double ts, const char* role,
                     const char* author) {
  return Json{{"id", eventId},     {"invocationId", id.invocation},
              {"runId", id.run},   {"sessionId", id.session},
              {"turnId", id.turn}, {"ts", ts},
              {"partial", false},  {"role", role},
              {"author", author}};
}

inline RuntimeEvent decode(const Json& j) { return decodeRuntimeEvent(j); }

inline RuntimeEvent userEvent(const Ident& id, const std::string& eventId = "user-1",
                              bool marker = true, double ts = 1000) {
  Json j = envelope(id, eventId, ts, "user", "user");
  j["content"] = {{"kind", "text"}, {"text", "run the tool"}};
  if (marker) j["actions"] = {{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
  return decode(j);
}

inline RuntimeEvent textEvent(const Ident& id, const std::string& eventId, double ts,
                              const std::string& text = "hello") {
  Json j = envelope(id, eventId, ts, "model", "agent");
  j["content"] = {{"kind", "text"}, {"text", text}};
  return decode(j);
}

inline RuntimeEvent terminalEvent(const Ident& id, const std::string& eventId, double ts,
                                  const char* status = "completed") {
  Json j = envelope(id, eventId, ts, "system", "system");
  j["status"] = status;
  j["actions"] = {{"endInvocation", true}};
  if (std::string(status) == "failed") {
    j["content"] = {{"kind", "error"}, {"message", "boom"}, {"code", "model_error"}};
  }
  return decode(j);
}

// One tool call's identities (a.8 conventions).
struct Call {
  Ident id;
  std::string callId = "call-1";
  std::string tool = "Write";
  Json args = Json{{"path", "notes.txt"}, {"content", "after"}};
  std::string mode = "reconcile";
  std::string op() const { return deriveOperationId(id.invocation, callId); }
  std::string callEvent() const { return op() + "_call"; }
  std::string dispatchEvent() const { return op() + "_dispatch"; }
  std::string responseEvent() const { return op() + "_response"; }
  std::string hash() const { return canonicalArgsHash(tool, args); }
};

inline RuntimeEvent callEvent(const Call& c, double ts = 2000) {
  Json j = envelope(c.id, c.callEvent(), ts, "model", "agent");
  j["content"] = {{"kind", "function_call"}, {"id", c.callId}, {"name", c.tool}, {"args", c.args}};
  return decode(j);
}

inline RuntimeEvent dispatchEvent(const Call& c, double ts = 2001) {
  Json j = envelope(c.id, c.dispatchEvent(), ts, "system", "system");
  j["actions"] = {{"toolDispatch",
                   {{"protocol", "t1_after_preflight_v1"},
                    {"operationId", c.op()},
                    {"providerToolCallId", c.callId},
                    {"toolName", c.tool},
                    {"canonicalArgsHash", c.hash()},
                    {"recoveryMode", c.mode}}}};
  j["refs"] = {{"operationId", c.op()}, {"toolCallId", c.callId}};
  return decode(j);
}

inline RuntimeEvent responseEvent(const Call& c, double ts = 3000, bool isError = false,
                                  bool bound = true, const std::string& eventId = "") {
  Json j = envelope(c.id, eventId.empty() ? c.responseEvent() : eventId, ts, "tool", "tool");
  j["content"] = {{"kind", "function_response"},
                  {"id", c.callId},
                  {"name", c.tool},
                  {"result", {{"ok", !isError}}}};
  if (isError) j["content"]["isError"] = true;
  if (bound) j["refs"] = {{"operationId", c.op()}, {"toolCallId", c.callId}};
  return decode(j);
}

inline std::string digestOf(const std::string& s) { return sha256Digest(s); }

inline Json reconcileJson(const Call& c, const std::string& eventId, const std::string& observation,
                          double ts = 4000) {
  Json j = envelope(c.id, eventId, ts, "system", "system");
  j["actions"] = {{"toolRecovery",
                   {{"kind", "maka.tool.reconcile_result"},
                    {"version", 1},
                    {"payload",
                     {{"protocol", "tool_reconcile_v1"},
                      {"operationId", c.op()},
                      {"observation", observation},
                      {"observationSchema", "state_identity_v1"},
                      {"observationDigest", digestOf(observation)}}}}}};
  j["refs"] = {{"operationId", c.op()}, {"toolCallId", c.callId}};
  return j;
}

inline Json decisionJson(const Call& c, const std::string& eventId, const std::string& disposition,
                         const std::string& reasonCode, const std::string& reconcileId,
                         const std::string& outcomeId = "", double ts = 4002) {
  Json j = envelope(c.id, eventId, ts, "system", "system");
  Json evidence = Json::array({c.callEvent(), c.dispatchEvent(), reconcileId});
  Json payload = {{"protocol", "tool_recovery_v1"},
                  {"operationId", c.op()},
                  {"disposition", disposition},
                  {"reasonCode", reasonCode}};
  if (disposition == "completed") {
    payload["outcomeEventId"] = outcomeId;
    evidence.push_back(outcomeId);
  }
  payload["evidenceEventIds"] = evidence;
  j["actions"] = {
      {"toolRecovery",
       {{"kind", "maka.tool.recovery_decision"}, {"version", 1}, {"payload", payload}}}};
  j["refs"] = {{"operationId", c.op()}, {"toolCallId", c.callId}};
  return j;
}

inline RecoveryBundle completedBundle(const Call& c, const std::string& prefix = "rec") {
  RecoveryBundle b;
  b.operationId = c.op();
  std::string rid = c.op() + "_" + prefix + "_reconcile";
  b.reconcile = decode(reconcileJson(c, rid, "matches_expected_state", 4000));
  b.outcome = responseEvent(c, 4001, false, true, c.op() + "_" + prefix + "_outcome");
  b.decision = decode(decisionJson(c, c.op() + "_" + prefix + "_decision", "completed",
                                   "reconcile_matches_expected_state", rid, b.outcome->id, 4002));
  return b;
}

inline RecoveryBundle parkedBundle(const Call& c,
                                   const std::string& observation = "matches_prior_state",
                                   const std::string& prefix = "park") {
  RecoveryBundle b;
  b.operationId = c.op();
  std::string rid = c.op() + "_" + prefix + "_reconcile";
  b.reconcile = decode(reconcileJson(c, rid, observation, 4000));
  b.decision = decode(decisionJson(c, c.op() + "_" + prefix + "_decision", "parked",
                                   "reconcile_" + observation, rid, "", 4002));
  return b;
}

inline ToolPrepared t1(const Call& c, double committedAt = 2001) {
  ToolPrepared p;
  p.operationId = c.op();
  p.journalEventId = c.op() + "_prepared";
  p.call = callEvent(c);
  p.dispatch = dispatchEvent(c);
  p.providerToolCallId = c.callId;
  p.toolName = c.tool;
  p.canonicalArgsHash = c.hash();
  p.recoveryMode = c.mode;
  p.committedAt = committedAt;
  return p;
}

inline ToolOutcome t2(const Call& c, bool isError = false, double committedAt = 3000) {
  ToolOutcome o;
  o.operationId = c.op();
  o.journalEventId = c.op() + "_outcome";
  o.response = responseEvent(c, 3000, isError);
  o.committedAt = committedAt;
  return o;
}

inline RunHeader header(const Ident& id, const std::string& status = "running", double at = 500) {
  RunHeader h;
  h.sessionId = id.session;
  h.runId = id.run;
  h.invocationId = id.invocation;
  h.turnId = id.turn;
  h.status = status;
  h.createdAt = at;
  h.updatedAt = at;
  return h;
}

// A fresh temporary store directory on the real file system, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() /
           ("crashsim-store-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path db() const { return path / "runtime.sqlite"; }
};

inline std::string readBytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// First column of the first row of `sql` on `db` (a pragma or a one-value query).
inline std::string pragma(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  return out;
}

// Runs raw SQL on a SEPARATE connection (simulates an external writer / smuggled rows).
inline void rawSql(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  char* err = nullptr;
  int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

inline std::string sqlQuote(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "''";
    else
      out += ch;
  }
  return out + "'";
}

// Expects `fn` to throw crashsim::Error with `code`; returns the message.
template <typename F>
std::string expectCode(F&& fn, std::string_view code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected Error(" << code << ")";
  return {};
}

// Expects a LedgerError with the given top-level code and scanner/ledger code.
template <typename F>
void expectLedger(F&& fn, std::string_view code, std::string_view ledgerCode) {
  try {
    fn();
  } catch (const LedgerError& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_EQ(e.ledgerCode(), ledgerCode) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::string(ledgerCode) + " at " + e.eventId()),
              std::string::npos);
    return;
  } catch (const Error& e) {
    ADD_FAILURE() << "expected LedgerError, got " << e.code() << ": " << e.what();
    return;
  }
  ADD_FAILURE() << "expected LedgerError(" << code << ", " << ledgerCode << ")";
}

// A legacy ledger as a JSONL host wrote it: no protocol marker, unbound responses, no
// dispatch. Run r = 0..runs-1 in its own invocation: user, call, response, text, terminal —
// except the last run, which ends after a call without a response (the host died there).
struct Legacy {
  std::vector<Json> lines;
  std::vector<Ident> runs;
};
inline Legacy legacyLedger(int runs) {
  Legacy l;
  for (int r = 0; r < runs; ++r) {
    Ident id;
    id.invocation = "inv-" + std::to_string(r);
    id.run = "run-" + std::to_string(r);
    id.turn = "turn-" + std::to_string(r);
    l.runs.push_back(id);
    const std::string p = "r" + std::to_string(r) + "-";
    const double t = 1000.0 * (r + 1);
    l.lines.push_back(userEvent(id, p + "user", false, t).json);
    Call c;
    c.id = id;
    c.callId = "call-" + std::to_string(r);
    l.lines.push_back(callEvent(c, t + 1).json);
    if (r == runs - 1) break;
    l.lines.push_back(responseEvent(c, t + 2, false, false, p + "response").json);
    l.lines.push_back(textEvent(id, p + "text", t + 3).json);
    l.lines.push_back(terminalEvent(id, p + "end", t + 4).json);
  }
  return l;
}

inline std::string jsonl(const std::vector<Json>& lines) {
  std::string out;
  for (const Json& j : lines) out += j.dump() + "\n";  // nlohmann's order, not stable JSON
  return out;
}

inline void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// Every file of a directory with its bytes: "writes nothing" means this map is unchanged.
inline std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    out[e.path().filename().string()] = readBytes(e.path());
  return out;
}

// Two well-formed digests, and the scenarios folder of the source tree.
inline const std::string kDigestA = "sha256:" + std::string(64, 'a');
inline const std::string kDigestB = "sha256:" + std::string(64, 'b');
inline const fs::path kScenarioDir = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios";

}  // namespace crashsim::testutil
