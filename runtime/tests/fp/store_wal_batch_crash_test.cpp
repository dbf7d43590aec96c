// The WAL batching VFS (store/wal_batch_vfs.h) is invisible to crashes: the same scenario,
// killed at the same point, leaves the same committed rows with it (the default) and without it
// (CRASHSIM_WAL_BATCHING=0: SQLite's own VFS), and so does the same power-loss crash state.
//
// Real processes and signals: crashsim-agent runs the scenario armed at S:k — the barrier just
// before the k-th store COMMIT — for every k the run reaches, in three modes: SIGKILL, and power
// loss with crash states drop_all and tear_last (CRASHSIM_POWERLOSS: the power-loss VFS sits
// under the batching VFS and materialises the state before the child dies). Each pair of stores
// is then read read-only and compared row by row: every row of runtime_events, tool_operations,
// tool_journal_events and agent_runs, wall-clock fields and the sandbox's own names left out (two
// runs are two moments in two directories), so a batch that lost or published frames of its own
// would differ. The loop ends at the first k the run no longer reaches, so it covers every COMMIT
// of the run; a run of a scenario with tool calls commits at least four times (user message, T1,
// T2, terminal fact), so fewer means the loop never really ran.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "agent_process.h"
#include "crashsim/build_paths.h"
#include "crashsim/json.h"
#include "crashsim/workspace.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

using testutil::kAgent;
using testutil::kScenarioDir;
constexpr int kMaxBarrier = 200;

// Drops the wall-clock fields of a stored JSON value (two runs are two moments).
void dropClockFields(Json& j) {
  if (j.is_object()) {
    for (const char* k : {"ts", "createdAt", "updatedAt", "completedAt", "claimedAt"}) j.erase(k);
    for (auto& [key, value] : j.items()) dropClockFields(value);
  } else if (j.is_array()) {
    for (auto& v : j) dropClockFields(v);
  }
}

// Every committed row of the store's tables, in key order, as text without wall-clock fields,
// read with plain SQLite, read-only (a store killed before its schema committed has no tables:
// its rows say so).
// The sandbox's own names (its directory and the workspace's random identity) read as <base>
// and <workspace>, so two sandboxes compare.
std::vector<std::string> committedRows(const testutil::AgentSandbox& box) {
  const fs::path storeDir = box.store();
  const std::string identity = ensureWorkspaceIdentity(box.ws()).identity;
  auto normalise = [&](std::string v) {
    for (const auto& [from, to] : {std::pair{identity, std::string("<workspace>")},
                                   std::pair{box.base.string(), std::string("<base>")}}) {
      for (size_t at = v.find(from); at != std::string::npos; at = v.find(from, at + to.size()))
        v.replace(at, from.size(), to);
    }
    return v;
  };
  sqlite3* db = nullptr;
  const std::string uri = "file:" + (storeDir / "runtime.sqlite").string() + "?mode=ro";
  if (sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) !=
      SQLITE_OK) {
    const std::string m = sqlite3_errmsg(db);
    sqlite3_close(db);
    return {"unopenable: " + m};
  }
  std::vector<std::string> rows;
  auto query = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
      rows.push_back(std::string("no table: ") + sqlite3_errmsg(db));
      return;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const unsigned char* text = sqlite3_column_text(st, c);
        std::string v = text ? reinterpret_cast<const char*>(text) : "NULL";
        if (text && std::string_view(sqlite3_column_name(st, c)).ends_with("_json")) {
          Json j = Json::parse(v);
          dropClockFields(j);
          v = j.dump();
        }
        row.append(normalise(v)).append("|");
      }
      rows.push_back(std::move(row));
    }
    sqlite3_finalize(st);
  };
  query("PRAGMA user_version");
  query(
      "SELECT 'event', invocation_id, event_seq, event_id, event_kind, is_terminal, payload_json "
      "FROM runtime_events ORDER BY invocation_id, event_seq");
  query(
      "SELECT 'operation', operation_id, invocation_id, run_id, turn_id, provider_tool_call_id, "
      "tool_name, canonical_args_hash, recovery_mode, current_state, call_event_id, "
      "dispatch_event_id, result_event_id, version FROM tool_operations ORDER BY operation_id");
  query(
      "SELECT 'journal', journal_seq, journal_event_id, operation_id, state, runtime_event_id, "
      "metadata_json FROM tool_journal_events ORDER BY journal_seq");
  query(
      "SELECT 'run', session_id, run_id, status, header_json FROM agent_runs ORDER BY session_id, "
      "run_id");
  sqlite3_close(db);
  return rows;
}

struct Crashed {
  bool reached = false;  // the run reached S:k (else it ran to its end)
  std::vector<std::string> rows;
};

// Seeds a workspace, runs the scenario armed at S:k in `mode` with the batching VFS on or off,
// and returns what the store holds afterwards.
Crashed crashAt(const fs::path& scenario, int k, const std::string& mode, bool batching,
                const std::string& plant = "") {
  testutil::AgentSandbox box;
  {
    testutil::AgentProcess seed(
        kAgent, {"seed", "--workspace", box.ws().string(), "--scenario", scenario.string()}, {},
        box.base / "seed.log");
    EXPECT_EQ(seed.reap().exitCode, 0);
  }
  std::vector<std::pair<std::string, std::string>> env{
      {"CRASHSIM_ARM", "S:" + std::to_string(k)}, {"CRASHSIM_WAL_BATCHING", batching ? "1" : "0"}};
  if (!plant.empty()) env.emplace_back("CRASHSIM_PLANT", plant);
  if (mode != "kill") {
    env.insert(env.end(), {{"CRASHSIM_POWERLOSS", "1"},
                           {"CRASHSIM_POWERLOSS_KIND", mode},
                           {"CRASHSIM_POWERLOSS_SEED", std::to_string(k)}});
  }
  testutil::AgentProcess run(kAgent,
                             {"run", "--store", box.store().string(), "--workspace",
                              box.ws().string(), "--scenario", scenario.string()},
                             env, box.base / "run.log");
  Crashed c;
  c.reached = run.waitForControlLine(std::chrono::seconds(60)).has_value();
  if (c.reached && mode == "kill") run.kill();
  const testutil::AgentExit exit = run.reap();
  if (c.reached) {
    EXPECT_TRUE(exit.signaled && exit.signal == SIGKILL) << "S:" << k << " " << mode;
  } else {
    EXPECT_EQ(exit.exitCode, 0) << "an unarmed run ends normally";
  }
  c.rows = committedRows(box);
  return c;
}

class WalBatchingCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(WalBatchingCrash, SameCrashPointSameCommittedRowsWithAndWithoutTheBatchingVfs) {
  const fs::path scenario = kScenarioDir / GetParam();
  int barriers = 0;
  for (int k = 1; k <= kMaxBarrier; ++k) {
    bool reachedAll = true;
    for (const std::string mode : {"kill", "drop_all", "tear_last"}) {
      const Crashed with = crashAt(scenario, k, mode, true);
      const Crashed without = crashAt(scenario, k, mode, false);
      ASSERT_EQ(with.reached, without.reached) << "S:" << k << " " << mode;
      EXPECT_EQ(with.rows, without.rows) << "S:" << k << " " << mode;
      reachedAll = reachedAll && with.reached;
    }
    if (!reachedAll) break;
    barriers = k;
  }
  // A loop that stopped early (or never started) proves nothing.
  EXPECT_GE(barriers, 4) << GetParam();
  EXPECT_LT(barriers, kMaxBarrier) << "the run never ended: raise kMaxBarrier";
  std::cerr << GetParam() << ": " << barriers << " COMMIT barriers compared\n";
}

// The comparison catches a batching VFS that breaks durability: with the planted
// wal_batch_flush_after_sync (each commit's frames reach the file after its sync), a power cut
// at a later COMMIT loses rows SQLite's own VFS keeps. A kill cannot see it (the page cache
// keeps every write), which is why the comparison runs under power loss too.
TEST(WalBatchingCrash, APlantedFlushAfterSyncLosesCommittedRowsUnderPowerLossOnly) {
  const fs::path scenario = kScenarioDir / "write-config-port.json";
  bool caught = false;
  for (int k = 2; k <= 6 && !caught; ++k) {
    const Crashed plain = crashAt(scenario, k, "drop_all", false);
    const Crashed planted = crashAt(scenario, k, "drop_all", true, "wal_batch_flush_after_sync");
    ASSERT_TRUE(plain.reached && planted.reached);
    caught = plain.rows != planted.rows;
    const Crashed killed = crashAt(scenario, k, "kill", true, "wal_batch_flush_after_sync");
    EXPECT_EQ(killed.rows, crashAt(scenario, k, "kill", false).rows) << "S:" << k;
  }
  EXPECT_TRUE(caught) << "the planted flush-after-sync left the same rows at S:2..6";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, WalBatchingCrash,
                         ::testing::Values("write-config-port.json", "bash-touch-marker.json"));

}  // namespace
