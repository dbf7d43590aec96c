// D1 (durability of acknowledged commits) and D2 (fail-closed recovery) of a power-loss case
// (verdicts/d1_d2_powerloss.h).
#include "verdicts/d1_d2_powerloss.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/harness/case_runner.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/store.h"
#include "verdicts/fail_closed.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr size_t kMaxListed = 8;  // facts named in one reason

void setCheck(CheckMap& checks, const char* name, std::string status, std::string reason) {
  checks[name] = reports::Check{std::move(status), std::move(reason)};
}

void failCheck(CheckMap& checks, const char* name, const std::string& reason) {
  auto it = checks.find(name);
  if (it != checks.end() && it->second.status == "fail") return;  // keep the first reason
  setCheck(checks, name, "fail", reason);
}

std::string joinListed(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < kMaxListed; ++i) out += (i ? "; " : "") + items[i];
  if (items.size() > kMaxListed) out += fmt::format("; … {} more", items.size() - kMaxListed);
  return out;
}

// One table of a SQLite file: row text (every column, typed) → column name → value.
using Row = std::map<std::string, std::string>;
using Table = std::map<std::string, Row>;

// Every row of every user table of `dbFile`, opened read-write (a WAL file beside it is
// recovered, as the runtime would). Throws std::runtime_error with SQLite's message.
std::map<std::string, Table> dumpTables(const fs::path& dbFile) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(dbFile.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    std::string m = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    throw std::runtime_error("cannot open " + dbFile.string() + ": " + m);
  }
  sqlite3_busy_timeout(db, 5000);
  auto query = [&](const std::string& sql, auto&& onRow) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw std::runtime_error(dbFile.string() + ": " + sqlite3_errmsg(db));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) onRow(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) throw std::runtime_error(dbFile.string() + ": " + sqlite3_errmsg(db));
  };
  std::map<std::string, Table> out;
  try {
    std::vector<std::string> tables;
    query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name",
        [&](sqlite3_stmt* st) {
          tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
        });
    for (const auto& t : tables) {
      Table& rows = out[t];
      query("SELECT * FROM \"" + t + "\"", [&](sqlite3_stmt* st) {
        Row row;
        std::string text;
        for (int i = 0; i < sqlite3_column_count(st); ++i) {
          const std::string col = sqlite3_column_name(st, i);
          const int type = sqlite3_column_type(st, i);
          const char* v = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
          std::string value =
              v ? std::string(v, static_cast<size_t>(sqlite3_column_bytes(st, i))) : std::string();
          text += fmt::format("{}:{}:{}\x1f", col, type, value);
          row[col] = std::move(value);
        }
        rows[text] = std::move(row);
      });
    }
  } catch (...) {
    sqlite3_close_v2(db);
    throw;
  }
  sqlite3_close_v2(db);
  return out;
}

std::string col(const Row& r, const char* name) {
  auto it = r.find(name);
  return it == r.end() ? std::string() : it->second;
}

// The identity of a row (what a later version of the same fact shares with it).
std::string identityOf(const std::string& table, const Row& r) {
  if (table == "runtime_events") return col(r, "event_id");
  if (table == "tool_operations") return col(r, "operation_id");
  if (table == "tool_journal_events") return col(r, "journal_event_id");
  if (table == "agent_runs") return col(r, "session_id") + "/" + col(r, "run_id");
  if (table == "runtime_continuation_claims") return col(r, "claim_id");
  return r.empty() ? std::string() : r.begin()->second;
}

std::string describe(const std::string& table, const Row& r,
                     const std::map<std::string, std::string>& callOfEvent) {
  if (table == "runtime_events") {
    auto it = callOfEvent.find(col(r, "event_id"));
    return fmt::format("event {} #{} of run {}{}", col(r, "event_kind"), col(r, "event_seq"),
                       col(r, "run_id"),
                       it == callOfEvent.end() ? "" : " (call " + it->second + ")");
  }
  if (table == "tool_operations")
    return fmt::format("operation row {} {} v{}", col(r, "provider_tool_call_id"),
                       col(r, "current_state"), col(r, "version"));
  if (table == "tool_journal_events")
    return fmt::format("journal {} of operation {}", col(r, "state"), col(r, "operation_id"));
  if (table == "agent_runs")
    return fmt::format("run header {} {}", col(r, "run_id"), col(r, "status"));
  if (table == "runtime_continuation_claims")
    return fmt::format("continuation claim {}", col(r, "claim_id"));
  return table + " row " + identityOf(table, r);
}

// Event id → tool call id, for the events of an (acknowledged) store.
std::map<std::string, std::string> callsOfEvents(const fs::path& storeDir) {
  std::map<std::string, std::string> out;
  try {
    auto st = RuntimeStore::open(storeDir);
    for (const auto& se : st->readAllEvents()) {
      const RuntimeEvent& e = se.event;
      if (e.toolDispatch)
        out[e.id] = e.toolDispatch->providerToolCallId;
      else if (!e.callId.empty())
        out[e.id] = e.callId;
    }
  } catch (const std::exception&) {
    // Descriptions only: a copy that does not open names its events without calls.
  }
  return out;
}

// D2's crash half: the crashed store opens with integrity ok (else `f` records the damage), and
// no operation is completed without its response.
void checkCrashedStore(const fs::path& store, PowerlossFindings& f, CheckMap& checks) {
  bool d2Failed = false;
  try {
    auto st = RuntimeStore::open(store);
    if (auto integrity = st->integrityCheck(); integrity != "ok") {
      f.damaged = true;
      f.damage = "PRAGMA integrity_check: " + integrity;
    } else if (auto bad = completedWithoutResponse(*st); !bad.empty()) {
      failCheck(checks, "D2", "crashed store: " + bad);
      d2Failed = true;
    }
  } catch (const Error& e) {
    f.damaged = true;
    f.damage = e.code() + ": " + e.what();
  } catch (const std::exception& e) {
    f.damaged = true;
    f.damage = e.what();
  }
  if (!d2Failed) setCheck(checks, "D2", "pass", "");
}

// The tables of the crash state as the disk kept it (keepPowerlossCrashCopy), not the store
// after the checks opened it.
std::map<std::string, Table> crashStateTables(const fs::path& caseDir, const fs::path& store) {
  const fs::path crashCopy = caseDir / kPowerlossCrashCopyDir;
  std::map<std::string, Table> now;
  if (!fs::exists(crashCopy))
    now = dumpTables(store / "runtime.sqlite");
  else if (fs::exists(crashCopy / "runtime.sqlite"))
    now = dumpTables(crashCopy / "runtime.sqlite");
  fs::remove_all(crashCopy);
  return now;
}

// D1: every acknowledged row is durable (lost ones recorded in `f`), and nothing durable was
// never acknowledged.
void compareAcknowledged(const fs::path& caseDir, const fs::path& store,
                         const std::string& crashKind, const std::string& synchronous,
                         PowerlossFindings& f, CheckMap& checks) {
  // Work on a copy of the acknowledged files: opening recovers (and may checkpoint) the WAL.
  const fs::path ackedCopy = caseDir / "acked-open";
  fs::remove_all(ackedCopy);
  fs::create_directories(ackedCopy);
  fs::copy(caseDir / kPowerlossAckedDir, ackedCopy, fs::copy_options::recursive);
  auto acked = dumpTables(ackedCopy / "runtime.sqlite");
  auto calls = callsOfEvents(ackedCopy);
  fs::remove_all(ackedCopy);
  std::map<std::string, Table> now = crashStateTables(caseDir, store);
  std::vector<std::string> unacknowledged;
  for (const auto& [table, rows] : acked) {
    const Table& cur = now[table];
    std::set<std::string> ackedIds;
    for (const auto& [text, row] : rows) {
      ackedIds.insert(identityOf(table, row));
      if (cur.count(text)) continue;
      f.lostFacts.push_back(describe(table, row, calls));
      if (table == "runtime_events") {
        if (auto it = calls.find(col(row, "event_id")); it != calls.end())
          f.lostCallIds.insert(it->second);
      } else if (table == "tool_operations") {
        f.lostCallIds.insert(col(row, "provider_tool_call_id"));
      }
    }
    for (const auto& [text, row] : cur)
      if (!rows.count(text) && !ackedIds.count(identityOf(table, row)))
        unacknowledged.push_back(describe(table, row, calls));
  }
  for (const auto& [table, rows] : now)
    if (!acked.count(table) && !rows.empty())
      unacknowledged.push_back(fmt::format("{} row(s) of table {}", rows.size(), table));
  if (!f.lostFacts.empty()) {
    failCheck(checks, "D1",
              fmt::format("{} acknowledged fact(s) lost by the power cut ({}, synchronous={}): {}",
                          f.lostFacts.size(), crashKind, synchronous, joinListed(f.lostFacts)));
  } else if (!unacknowledged.empty()) {
    failCheck(checks, "D1",
              fmt::format("{} fact(s) durable after the power cut were never acknowledged: {}",
                          unacknowledged.size(), joinListed(unacknowledged)));
  } else {
    setCheck(checks, "D1", "pass", "");
  }
}

}  // namespace

PowerlossFindings checkPowerlossCrash(const fs::path& caseDir, const fs::path& store,
                                      const std::string& synchronous, CheckMap& checks) {
  PowerlossFindings f;
  f.evaluated = true;
  f.effectsAtCrash = readEffects(store / "effects.jsonl");
  std::string crashKind = "?";
  try {
    crashKind = Json::parse(readFile(caseDir / kPowerlossCrashLog)).value("kind", "?");
  } catch (...) {
  }
  checkCrashedStore(store, f, checks);
  const fs::path ackedDb = caseDir / kPowerlossAckedDir / "runtime.sqlite";
  if (!fs::exists(ackedDb)) {
    failCheck(checks, "D1", "the child left no acknowledged copy " + ackedDb.string());
    return f;
  }
  if (f.damaged) {
    failCheck(checks, "D1",
              "the store no longer opens after the power cut (" + crashKind +
                  ", synchronous=" + synchronous + "): " + f.damage);
    return f;
  }
  try {
    compareAcknowledged(caseDir, store, crashKind, synchronous, f, checks);
  } catch (const std::exception& e) {
    failCheck(checks, "D1", std::string("comparing the acknowledged ledger: ") + e.what());
  }
  return f;
}

void checkPowerlossRecovery(const PowerlossFindings& f, const fs::path& store,
                            const ChildResult& recover, const fs::path& recoverStdout,
                            CheckMap& checks) {
  if (!f.evaluated) return;
  auto effects = readEffects(store / "effects.jsonl");
  if (f.damaged) {
    // Fail closed: recovery refuses with a stable code and runs nothing.
    const std::string code = failClosedCodeOf(recoverStdout);
    if (recover.exited && recover.exitCode == 0)
      failCheck(checks, "D2", "recovery exited 0 on a damaged store (" + f.damage + ")");
    else if (!isStableFailClosedCode(code))
      failCheck(checks, "D2",
                fmt::format("recovery on a damaged store ({}) failed without a stable code: {}",
                            f.damage, recover.describe()));
    if (effects != f.effectsAtCrash)
      failCheck(checks, "D2", "recovery on a damaged store ran a tool (effects log changed)");
    return;
  }
  for (const auto& [callId, n] : effects)
    if (n > 1) failCheck(checks, "D2", fmt::format("recovery ran {} {} times", callId, n));
  std::map<std::string, std::string> decided;  // call → "status/reason" after recovery
  try {
    auto st = RuntimeStore::open(store);
    if (auto bad = completedWithoutResponse(*st); !bad.empty())
      failCheck(checks, "D2", "after recovery: " + bad);
    for (const auto& h : st->listRuns()) {
      std::vector<RuntimeEvent> events;
      for (auto& se : st->readRunEvents(h.sessionId, h.runId)) events.push_back(se.event);
      for (const auto& d : resolveRecovery(events).decisions)
        if (f.lostCallIds.count(d.toolCallId) &&
            (!decided.count(d.toolCallId) || d.status == code::completed))
          decided[d.toolCallId] = d.status + "/" + d.reason;
    }
  } catch (const std::exception& e) {
    failCheck(checks, "D2", std::string("the store does not open after recovery: ") + e.what());
  }
  // D1 under NORMAL: say what recovery decided for the calls whose facts were lost.
  auto it = checks.find("D1");
  if (!f.lostFacts.empty() && it != checks.end() && it->second.status == "fail") {
    std::vector<std::string> what;
    for (const auto& call : f.lostCallIds) {
      auto e = effects.find(call);
      what.push_back(fmt::format("{} {}, executed {} time(s)", call,
                                 decided.count(call) ? decided[call] : "no decision",
                                 e == effects.end() ? 0 : e->second));
    }
    it->second.reason += fmt::format(" — recovery then {}: {}", recover.describe(),
                                     what.empty() ? "no tool call affected" : joinListed(what));
  }
}

}  // namespace crashsim::harness
