// `crashsim resume` and `crashsim inspect` on real crashed stores (issue #19): the host
// start-up sequence never makes recovery worse, read-only commands write no byte, every writer
// takes the host lock, and one damaged store gives one error in all three commands.
//
// Expected values come from the contract and the scenario: which failpoint leaves which
// durable state (catalogue), what the resolver must decide for it (spec c), what a plan must
// say (spec e), and the scenario's expected workspace — never from a run of the code under
// test.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/sha.h>
#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/json.h"
#include "crashsim/scenario.h"
#include "test_util.h"
#include "verdicts/workspace_expect.h"

namespace crashsim::harness {
namespace {

namespace fs = std::filesystem;
using test::agentBinary;
using test::crashsimBinary;
using test::sh;

fs::path scenarioFile(const std::string& id) {
  return fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / (id + ".json");
}

// Seeds dir/ws, runs scenario `id` armed at `arm` (e.g. "P4:2") and SIGKILLs the agent when it
// reports the failpoint — the crash the harness makes. Returns false unless the failpoint was
// reached and the agent died of SIGKILL.
bool crashAt(const fs::path& dir, const fs::path& scenario, const std::string& arm) {
  const std::string agent = agentBinary().string();
  const std::string ws = (dir / "ws").string(), store = (dir / "store").string();
  if (sh(agent + " seed --workspace " + ws + " --scenario " + scenario.string() + " >/dev/null")
          .exitCode != 0)
    return false;
  const std::string ctl = (dir / "control").string();
  const test::Cmd r = sh("CRASHSIM_ARM=" + arm + " " + agent + " run --store " + store +
                         " --workspace " + ws + " --scenario " + scenario.string() + " > " + ctl +
                         " 2>&1" + " & pid=$!; for i in $(seq 1000); do grep -q failpoint " + ctl +
                         " && break; kill -0 $pid 2>/dev/null || break; sleep 0.01; done; "
                         "kill -9 $pid; wait $pid 2>/dev/null; echo $?");
  return test::slurp(ctl).find("\"failpoint\"") != std::string::npos &&
         r.out.find("137") != std::string::npos;
}

// sha256 of every file of a directory, by name.
std::map<std::string, std::string> hashFiles(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string bytes = test::slurp(e.path());
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), md);
    std::string hex;
    for (unsigned char b : md) hex += fmt::format("{:02x}", b);
    out[e.path().filename().string()] = hex;
  }
  return out;
}

struct Resume {
  int exitCode;
  std::string out;
  Json json;
};
Resume crashsim(const std::string& args) {
  const test::Cmd r = sh(crashsimBinary().string() + " " + args);
  Resume res{r.exitCode, r.out, Json()};
  try {
    res.json = Json::parse(r.out);
  } catch (const std::exception&) {
  }
  return res;
}

// The resolver decision for `callId` of `runId` in a resume --json report.
Json decision(const Json& report, const std::string& runId, const std::string& callId) {
  for (const Json& run : report.value("runs", Json::array())) {
    if (run.value("runId", "") != runId) continue;
    for (const Json& d : run["resolution"]["decisions"])
      if (d.value("toolCallId", "") == callId) return d;
  }
  return Json();
}

size_t executions(const fs::path& store, const std::string& callId) {
  const std::string log = test::slurp(store / "effects.jsonl");
  size_t n = 0;
  for (size_t pos = 0; (pos = log.find("\"callId\":\"" + callId + "\"", pos)) != std::string::npos;
       ++pos)
    ++n;
  return n;
}

const std::string kRun1 = "run-write-config-port-1";

class ResumeTest : public ::testing::Test {
 protected:
  void SetUp() override { dir = test::freshDir("crashsim-resume-test"); }
  void TearDown() override { fs::remove_all(dir); }
  std::string store() const { return (dir / "store").string(); }
  std::string ws() const { return (dir / "ws").string(); }
  fs::path dir;
};

// P4#2 of write-config-port: the Write's rename happened, no T2. Resume without a workspace
// cannot reconcile, so it must leave the run open; the next `recover` then finishes the Write
// with a completed bundle and the Write has run once.
TEST_F(ResumeTest, ResumeWithoutWorkspaceLeavesTheWriteForRecoverToFinish) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P4:2"));
  const Resume r = crashsim("resume " + store() + " --json");
  EXPECT_EQ(r.exitCode, 1) << r.out;
  ASSERT_TRUE(r.json.is_object()) << r.out;
  EXPECT_EQ(r.json["startupRepair"]["runs"][0]["action"], "deferred_reconcile");
  EXPECT_EQ(r.json["reconcile"]["operations"][0]["action"], "deferred");
  EXPECT_EQ(r.json["reconcile"]["operations"][0]["detail"], code::reconcile_workspace_required);
  EXPECT_EQ(decision(r.json, kRun1, "call-2")["status"], code::indeterminate);
  const Resume text = crashsim("resume " + store());
  EXPECT_EQ(text.exitCode, 1);
  EXPECT_NE(text.out.find("missing: --workspace DIR"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("UNKNOWN OUTCOME — indeterminate / dispatch_without_response"),
            std::string::npos)
      << text.out;

  const test::Cmd rec = sh(agentBinary().string() + " recover --store " + store() +
                           " --workspace " + ws() + " --scenario " + sc.string());
  EXPECT_EQ(rec.exitCode, 0) << rec.out;
  const Resume after = crashsim("resume " + store() + " --workspace " + ws() + " --json");
  EXPECT_EQ(after.exitCode, 0) << after.out;
  const Json d = decision(after.json, kRun1, "call-2");
  EXPECT_EQ(d["status"], code::completed) << d.dump();
  EXPECT_EQ(d["reason"], code::recovery_bundle_completed) << d.dump();
  EXPECT_EQ(executions(dir / "store", "call-2"), 1u);
  EXPECT_TRUE(workspace::expectedProblems(crashsim::loadScenario(sc), dir / "ws").empty());
}

// The same crash, `crashsim resume --scenario` alone: it reconciles, repairs, plans and
// continues the task to the scenario's expected workspace; the Write ran once.
TEST_F(ResumeTest, ResumeWithScenarioFinishesTheTask) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P4:2"));
  const Resume r = crashsim("resume " + store() + " --workspace " + ws() + " --scenario " +
                            sc.string() + " --json");
  EXPECT_EQ(r.exitCode, 0) << r.out;
  EXPECT_EQ(r.json["reconcile"]["operations"][0]["action"], "bundle_committed") << r.out;
  EXPECT_EQ(r.json["startupRepair"]["runs"][0]["action"], "recover_terminal");
  EXPECT_EQ(r.json["plan"]["decision"], "continue");
  EXPECT_EQ(r.json["continuation"]["status"], "completed");
  EXPECT_EQ(executions(dir / "store", "call-2"), 1u);
  EXPECT_TRUE(workspace::expectedProblems(crashsim::loadScenario(sc), dir / "ws").empty());
  // A second start-up has nothing to do: the source was continued.
  const Resume again = crashsim("resume " + store() + " --workspace " + ws() + " --json");
  EXPECT_EQ(again.exitCode, 0) << again.out;
  EXPECT_EQ(again.json["plan"]["rejectionReasons"][0], code::continuation_already_exists);
  // The lifecycle log carries identities and codes, never prompts or tool data.
  const std::string lifecycle = test::slurp(dir / "store" / "lifecycle.jsonl");
  for (const char* e : {"plan_approved", "execution_started", "execution_completed"})
    EXPECT_NE(lifecycle.find(e), std::string::npos) << lifecycle;
  size_t lines = 0;
  for (size_t pos = 0; pos < lifecycle.size(); ++lines) {
    const size_t nl = lifecycle.find('\n', pos);
    const Json line = Json::parse(lifecycle.substr(pos, nl - pos));
    for (const auto& [key, value] : line.items()) {
      static const std::set<std::string> allowed = {"event",       "sessionId", "sourceRunId",
                                                    "targetRunId", "claimId",   "reasonCodes",
                                                    "errorClass",  "status",    "result"};
      EXPECT_TRUE(allowed.count(key)) << "lifecycle field " << key << ": " << value.dump();
    }
    pos = nl + 1;
  }
  // approved, started, the claim (acquired), completed; then parked (again)
  EXPECT_EQ(lines, 5u) << lifecycle;
  EXPECT_NE(lifecycle.find(R"("event":"continuation_claim")"), std::string::npos) << lifecycle;
  EXPECT_NE(lifecycle.find(R"("result":"acquired")"), std::string::npos) << lifecycle;
}

// One reason per operation, and the exit code of each crash window (catalogue + spec c, e).
struct Window {
  std::string scenario, arm;
  int exitCode;
  std::string repairAction, call, status, reason, planDecision;
  size_t executed;  // implementation runs of `call` the crash left (catalogue)
};
class ResumeWindowTest : public ResumeTest, public ::testing::WithParamInterface<Window> {};

TEST_P(ResumeWindowTest, ExitCodeAndOperationReason) {
  const Window& w = GetParam();
  const fs::path sc = scenarioFile(w.scenario);
  ASSERT_TRUE(crashAt(dir, sc, w.arm));
  const Resume r = crashsim("resume " + store() + " --workspace " + ws() + " --json");
  EXPECT_EQ(r.exitCode, w.exitCode) << r.out;
  ASSERT_TRUE(r.json.is_object()) << r.out;
  EXPECT_EQ(r.json["startupRepair"]["runs"][0]["action"], w.repairAction) << r.out;
  const Json d = decision(r.json, "run-" + w.scenario + "-1", w.call);
  EXPECT_EQ(d["status"], w.status) << r.out;
  EXPECT_EQ(d["reason"], w.reason) << r.out;
  EXPECT_EQ(r.json["plan"]["decision"], w.planDecision) << r.out;
  if (w.planDecision == "continue") {
    EXPECT_EQ(r.json["continuationNotRun"], code::continuation_scenario_required);
  }
  EXPECT_EQ(executions(dir / "store", w.call), w.executed);  // resume ran nothing again
}

INSTANTIATE_TEST_SUITE_P(
    Windows, ResumeWindowTest,
    ::testing::Values(
        // P1: the call is committed, preflight not reached, no T1: never dispatched (safe).
        Window{"write-config-port", "P1:1", 0, "recover_terminal", "call-1",
               std::string(code::definitely_not_dispatched),
               std::string(code::new_protocol_before_dispatch), "continue", 0},
        // P2 of Bash: T1 committed, the implementation not yet called — but nothing durable
        // says so: an unknown outcome that nothing may settle by re-running it; the plan parks.
        Window{"bash-touch-marker", "P2:1", 1, "recover_terminal", "call-1",
               std::string(code::indeterminate), std::string(code::dispatch_without_response),
               "park", 0},
        // P6: T2 committed; the run continues after a recovered terminal.
        Window{"write-config-port", "P6:2", 0, "recover_terminal", "call-2",
               std::string(code::completed), std::string(code::matching_response), "continue", 1},
        // P9: the terminal fact is durable, the header is not: repair the header from the fact;
        // the run completed, nothing to continue.
        Window{"write-config-port", "P9:1", 0, "repair_header", "call-2",
               std::string(code::completed), std::string(code::matching_response), "park", 1}),
    [](const auto& info) {
      std::string n = info.param.scenario + "_" + info.param.arm;
      for (char& c : n)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// inspect and resume --dry-run write no byte of a crashed store directory (with its WAL).
TEST_F(ResumeTest, ReadOnlyCommandsLeaveEveryByteOfTheStoreDirectory) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P4:2"));
  ASSERT_TRUE(fs::exists(dir / "store" / "runtime.sqlite-wal"));  // the case the bug needs
  const auto before = hashFiles(dir / "store");
  const auto wsBefore = hashFiles(dir / "ws");
  // Exit codes from the state: the Write's outcome is unknown to inspect (Phase 0 blocked) and
  // to a start-up without a workspace; with the workspace it would be reconciled and continued.
  const std::vector<std::pair<std::string, int>> commands = {
      {"inspect " + store(), 1},
      {"inspect --json " + store(), 1},
      {"resume --dry-run " + store(), 1},
      {"resume --dry-run --json " + store() + " --workspace " + ws() + " --scenario " +
           scenarioFile("write-config-port").string(),
       0}};
  for (const auto& [args, exitCode] : commands) {
    const Resume r = crashsim(args);
    EXPECT_EQ(r.exitCode, exitCode) << args << "\n" << r.out;
    EXPECT_EQ(hashFiles(dir / "store"), before) << args;
  }
  // Without a -shm (nothing has it open) the read goes through a private copy.
  fs::remove(dir / "store" / "runtime.sqlite-shm");
  const auto noShm = hashFiles(dir / "store");
  EXPECT_EQ(crashsim("inspect " + store()).exitCode, 1);
  EXPECT_EQ(hashFiles(dir / "store"), noShm);
  // The dry run with a workspace reports what a real start-up would do, and did not do it:
  // the workspace's temp file, if any, is still there, and the Write is still unknown.
  const Resume dry = crashsim("resume --dry-run --json " + store() + " --workspace " + ws());
  EXPECT_EQ(dry.json["reconcile"]["operations"][0]["action"], "bundle_committed") << dry.out;
  EXPECT_EQ(dry.json["continuationNotRun"], code::continuation_dry_run);
  EXPECT_EQ(hashFiles(dir / "ws"), wsBefore);
  EXPECT_EQ(hashFiles(dir / "store"), noShm);
  EXPECT_FALSE(fs::exists(dir / "store" / "lifecycle.jsonl"));
}

// Every writer takes the host lock: resume on a store a live agent owns is refused and writes
// nothing, and the agent's run completes.
TEST_F(ResumeTest, ResumeRefusesAStoreOwnedByALiveAgent) {
  const fs::path sc = dir / "slow.json";
  std::ofstream(sc) << R"({"id":"slow-bash","user":"Wait a second.","tools":["Bash"],
    "model":[{"calls":[{"id":"call-1","name":"Bash","args":{"command":"sleep 2"}}]},
             {"text":"done"}],
    "expect":{"files":{},"toolCalls":1}})";
  const std::string agent = agentBinary().string();
  ASSERT_EQ(sh(agent + " seed --workspace " + ws() + " --scenario " + sc.string()).exitCode, 0);
  const std::string live = (dir / "live.out").string();
  const std::string pidFile = (dir / "live.pid").string();
  sh(agent + " run --store " + store() + " --workspace " + ws() + " --scenario " + sc.string() +
     " > " + live + " 2>&1 & echo $! > " + pidFile);
  // Wait until the agent has dispatched the Bash call (T1 durable, tool running).
  bool dispatched = false;
  for (int i = 0; i < 300 && !dispatched; ++i) {
    dispatched = fs::exists(dir / "store" / "effects.jsonl") &&
                 !test::slurp(dir / "store" / "effects.jsonl").empty();
    if (!dispatched) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(dispatched);
  for (const std::string& args : {"resume " + store(), "resume --json " + store()}) {
    const Resume r = crashsim(args);
    EXPECT_EQ(r.exitCode, 2) << r.out;
    if (args.find("--json") != std::string::npos) {
      EXPECT_EQ(r.json["error"]["code"], code::host_already_active) << r.out;
    }
  }
  const int pid = std::stoi(test::slurp(pidFile));
  for (int i = 0; i < 1000 && ::kill(pid, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const Json summary = Json::parse(test::slurp(live).substr(0, test::slurp(live).find('\n')));
  EXPECT_EQ(summary["status"], "completed") << test::slurp(live);
  const Resume after = crashsim("resume " + store() + " --workspace " + ws() + " --json");
  EXPECT_EQ(decision(after.json, "run-slow-bash-1", "call-1")["status"], code::completed);
  EXPECT_EQ(executions(dir / "store", "call-1"), 1u);
}

// One damaged store, one error: inspect, resume and recover give exit 2 and the same stable
// code; --json prints the error object.
TEST_F(ResumeTest, ADamagedStoreGivesOneErrorInEveryCommand) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(test::completedRun(dir, "write-config-port") != fs::path());
  // Zero one B-tree page in the middle of the database (the store checkpointed on close).
  const fs::path db = dir / "store" / "runtime.sqlite";
  ASSERT_FALSE(fs::exists(dir / "store" / "runtime.sqlite-wal"));
  std::string bytes = test::slurp(db);
  ASSERT_GT(bytes.size(), 8u * 1024);
  std::fill(bytes.begin() + 4 * 1024, bytes.begin() + 5 * 1024, '\0');
  std::ofstream(db, std::ios::binary | std::ios::trunc) << bytes;
  const auto before = hashFiles(dir / "store");
  const Resume inspect = crashsim("inspect --json " + store());
  const Resume resume = crashsim("resume --json " + store());
  const Resume dry = crashsim("resume --dry-run --json " + store());
  const test::Cmd recover = sh(agentBinary().string() + " recover --store " + store() +
                               " --workspace " + ws() + " --scenario " + sc.string());
  Json recoverJson;
  try {
    recoverJson = Json::parse(recover.out);
  } catch (const std::exception&) {
  }
  EXPECT_EQ(inspect.exitCode, 2) << inspect.out;
  EXPECT_EQ(resume.exitCode, 2) << resume.out;
  EXPECT_EQ(dry.exitCode, 2) << dry.out;
  EXPECT_EQ(recover.exitCode, 2) << recover.out;
  const Json code = inspect.json["error"]["code"];
  EXPECT_EQ(code, crashsim::code::store_corrupt) << inspect.out;
  EXPECT_EQ(resume.json["error"]["code"], code) << resume.out;
  EXPECT_EQ(dry.json["error"]["code"], code) << dry.out;
  EXPECT_EQ(recoverJson["error"]["code"], code) << recover.out;
  // Nothing but the host's own files changed (recover writes its exit marker).
  auto after = hashFiles(dir / "store");
  after.erase("agent-exit.json");
  auto expected = before;
  expected.erase("agent-exit.json");
  EXPECT_EQ(after.count("runtime.sqlite"), 1u);
  EXPECT_EQ(after["runtime.sqlite"], expected["runtime.sqlite"]);
}

// A crashed store (write-config-port killed at P6#2: one Write finished, its WAL holds every
// commit) damaged as issue #22 found it: every command fails closed with the code store.h names
// for that damage — inspect, resume, resume --dry-run and crashsim-agent recover alike — and
// none of them changes runtime.sqlite or re-creates a lost one.
struct Damage {
  std::string name;
  std::string sql;    // run on the crashed store by a separate connection ("" = none)
  std::string files;  // then: "drop-wal" (delete -wal, -shm), "truncate-db" (and drop-wal),
                      // "empty-db" (the database file cut to 0 bytes, -wal and -shm kept),
                      // "cut-wal-header" (the -wal cut to its 32-byte header, -shm kept),
                      // "flip-wal-magic" (a byte of the -wal's magic number zeroed)
  std::string_view code;
};
class DamagedStoreTest : public ResumeTest, public ::testing::WithParamInterface<Damage> {};

void damageWithSql(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << msg;
}

TEST_P(DamagedStoreTest, EveryCommandFailsClosedWithTheDamagesCode) {
  const Damage& d = GetParam();
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P6:2"));
  const fs::path storeDir = dir / "store";
  ASSERT_TRUE(fs::exists(storeDir / "runtime.manifest"));
  if (!d.sql.empty()) damageWithSql(storeDir / "runtime.sqlite", d.sql);
  if (d.files == "cut-wal-header" || d.files == "flip-wal-magic") {
    ASSERT_TRUE(fs::exists(storeDir / "runtime.sqlite-shm"));
    if (d.files == "cut-wal-header") fs::resize_file(storeDir / "runtime.sqlite-wal", 32);
    if (d.files == "flip-wal-magic") {
      std::fstream f(storeDir / "runtime.sqlite-wal",
                     std::ios::binary | std::ios::in | std::ios::out);
      f.seekp(1);
      f.put('\x00');  // 0x37 0x7f 0x06 0x82/83 → 0x37 0x00 …
    }
  } else if (!d.files.empty()) {
    ASSERT_TRUE(fs::exists(storeDir / "runtime.sqlite-wal"));
    if (d.files != "empty-db") {
      fs::remove(storeDir / "runtime.sqlite-wal");
      fs::remove(storeDir / "runtime.sqlite-shm");
    }
    if (d.files != "drop-wal") fs::resize_file(storeDir / "runtime.sqlite", 0);
  }
  auto before = hashFiles(storeDir);
  const Resume inspect = crashsim("inspect --json " + store());
  const Resume dry = crashsim("resume --dry-run --json " + store());
  const test::Cmd exported = sh(crashsimBinary().string() + " ledger export " + store() + " 2>&1");
  EXPECT_EQ(hashFiles(storeDir), before) << "a read-only command wrote to the store";
  EXPECT_EQ(exported.exitCode, 2);
  EXPECT_NE(exported.out.find(std::string(d.code)), std::string::npos) << exported.out;
  const Resume resume = crashsim("resume --json " + store() + " --workspace " + ws());
  const test::Cmd recover = sh(agentBinary().string() + " recover --store " + store() +
                               " --workspace " + ws() + " --scenario " + sc.string());
  for (const Resume* r : {&inspect, &dry, &resume}) {
    EXPECT_EQ(r->exitCode, 2) << r->out;
    ASSERT_TRUE(r->json.is_object()) << r->out;
    EXPECT_EQ(r->json["error"]["code"], d.code) << r->out;
  }
  EXPECT_EQ(recover.exitCode, 2) << recover.out;
  EXPECT_NE(recover.out.find(std::string(d.code)), std::string::npos) << recover.out;
  auto after = hashFiles(storeDir);
  EXPECT_EQ(after.count("runtime.sqlite"), before.count("runtime.sqlite"));
  EXPECT_EQ(after["runtime.sqlite"], before["runtime.sqlite"]);
  EXPECT_EQ(after.count("runtime.sqlite-wal"), before.count("runtime.sqlite-wal"));
  EXPECT_EQ(executions(storeDir, "call-2"), 1u);  // nothing ran the finished Write again
}

// Events of the crashed run that no projection row references (deleting one is a gap only).
const std::string kUnreferenced =
    "SELECT rowid FROM runtime_events WHERE event_id NOT IN (SELECT call_event_id FROM "
    "tool_operations UNION SELECT dispatch_event_id FROM tool_operations UNION SELECT "
    "result_event_id FROM tool_operations WHERE result_event_id IS NOT NULL UNION SELECT "
    "runtime_event_id FROM tool_journal_events) ORDER BY event_seq DESC LIMIT 1 OFFSET 1";

INSTANTIATE_TEST_SUITE_P(
    Damages, DamagedStoreTest,
    ::testing::Values(
        Damage{"DeletedWal", "", "drop-wal", code::store_data_lost},
        Damage{"TruncatedDatabase", "", "truncate-db", code::store_data_lost},
        Damage{"EmptyDatabaseBesideItsWal", "", "empty-db",
               code::store_database_empty_wal_holds_data},
        // #45 §5: the read-only commands stalled 10 s and printed sqlite_error; now every
        // command gives the writers' code at once. A WAL cut to its header after a crash: the
        // -shm the crash left vouches for the frames that are gone (§9).
        Damage{"WalCutToItsHeader", "", "cut-wal-header", code::store_wal_frames_lost},
        // A flipped magic number is a damaged header: SQLite ignores the whole log, and the
        // commit frames of its generation behind it are acknowledged commits.
        Damage{"FlippedWalMagic", "", "flip-wal-magic", code::store_wal_frames_lost},
        Damage{"DeletedEventInTheMiddle",
               "DELETE FROM runtime_events WHERE rowid = (" + kUnreferenced + ")", "",
               code::store_event_seq_gap},
        Damage{"SwappedEventSeq",
               "UPDATE runtime_events SET event_seq = 100000 WHERE event_seq = 1;"
               "UPDATE runtime_events SET event_seq = 1 WHERE event_seq = 2;"
               "UPDATE runtime_events SET event_seq = 2 WHERE event_seq = 100000;",
               "", code::store_event_order_conflict},
        Damage{"DeletedDispatch",
               "DELETE FROM runtime_events WHERE event_id = (SELECT dispatch_event_id FROM "
               "tool_operations ORDER BY operation_id LIMIT 1)",
               "", code::store_foreign_key_violation},
        Damage{"DeletedHeader", "DELETE FROM agent_runs", "", code::store_run_header_missing},
        Damage{"OperationRowEditedAlone", "UPDATE tool_operations SET version = version + 1", "",
               code::store_projection_mismatch}),
    [](const auto& info) { return info.param.name; });

// No store is an error, not an empty store: all three commands exit 2 with store_open_failed
// and none of them creates the directory.
TEST_F(ResumeTest, AMissingStoreIsAnErrorAndIsNeverCreated) {
  const std::string missing = (dir / "no-store").string();
  const Resume inspect = crashsim("inspect --json " + missing);
  const Resume resume = crashsim("resume --json " + missing);
  const test::Cmd recover =
      sh(agentBinary().string() + " recover --store " + missing + " --workspace " + ws() +
         " --scenario " + scenarioFile("write-config-port").string());
  EXPECT_EQ(inspect.exitCode, 2);
  EXPECT_EQ(resume.exitCode, 2);
  EXPECT_EQ(recover.exitCode, 2);
  EXPECT_EQ(inspect.json["error"]["code"], code::store_open_failed) << inspect.out;
  EXPECT_EQ(resume.json["error"]["code"], code::store_open_failed) << resume.out;
  EXPECT_NE(recover.out.find(std::string(code::store_open_failed)), std::string::npos)
      << recover.out;
  EXPECT_FALSE(fs::exists(missing));
  EXPECT_EQ(crashsim("resume " + store() + " --scenario " + (dir / "none.json").string()).exitCode,
            2);
}

// A legacy-only directory (runtime-events.jsonl, no database; crashsim/store.h): the read-only
// commands read the legacy ledger and write no byte; the first writer imports it and never
// rewrites it; its export imports into an empty directory with the same decisions and plans.
// Expected from the contract: a call without its response under the legacy protocol is
// indeterminate / legacy_dispatch_unknown (spec c), so every plan is blocked or parked (exit 1).
TEST_F(ResumeTest, ALegacyJsonlDirectoryIsReadWithoutWritingAndImportedByTheFirstWriter) {
  const fs::path legacy = dir / "legacy";
  fs::create_directories(legacy);
  auto event = [](const std::string& id, double ts, const char* role, const char* author) {
    return Json{{"id", id},
                {"invocationId", "inv-legacy"},
                {"runId", "run-legacy"},
                {"sessionId", "session-legacy"},
                {"turnId", "turn-legacy"},
                {"ts", ts},
                {"partial", false},
                {"role", role},
                {"author", author}};
  };
  Json user = event("legacy-user", 1000, "user", "user");
  user["content"] = {{"kind", "text"}, {"text", "deploy"}};
  Json call = event("legacy-call", 1001, "model", "agent");
  call["content"] = {{"kind", "function_call"},
                     {"id", "call-1"},
                     {"name", "Bash"},
                     {"args", {{"command", "./deploy.sh"}}}};
  const std::string bytes = user.dump() + "\n" + call.dump() + "\n";
  std::ofstream(legacy / "runtime-events.jsonl", std::ios::binary) << bytes;
  const auto before = hashFiles(legacy);
  const std::string dirArg = legacy.string();
  const std::string unknown(code::legacy_dispatch_unknown);

  const Resume inspect = crashsim("inspect --json " + dirArg);
  EXPECT_EQ(inspect.exitCode, 1) << inspect.out;
  EXPECT_NE(inspect.out.find(unknown), std::string::npos) << inspect.out;
  const Resume exported = crashsim("ledger export " + dirArg);
  EXPECT_EQ(exported.exitCode, 0) << exported.out;
  std::vector<std::string> ids;
  for (size_t at = 0, end; (end = exported.out.find('\n', at)) != std::string::npos; at = end + 1)
    ids.push_back(Json::parse(exported.out.substr(at, end - at)).value("id", ""));
  EXPECT_EQ(ids, (std::vector<std::string>{"legacy-user", "legacy-call"}));
  EXPECT_EQ(crashsim("resume --dry-run --json " + dirArg).exitCode, 1);
  EXPECT_EQ(hashFiles(legacy), before);

  // The first writer imports: repair seals the run, the Bash call stays unknown and never runs.
  const Resume real = crashsim("resume --json " + dirArg);
  EXPECT_EQ(real.exitCode, 1) << real.out;
  EXPECT_NE(real.out.find(unknown), std::string::npos) << real.out;
  EXPECT_TRUE(fs::exists(legacy / "runtime.manifest"));
  EXPECT_EQ(test::slurp(legacy / "runtime-events.jsonl"), bytes);

  // Export → import into an empty directory: the same decisions and plans, run by run.
  const Resume after = crashsim("ledger export " + dirArg);
  ASSERT_EQ(after.exitCode, 0) << after.out;
  const fs::path copy = dir / "copy";
  fs::create_directories(copy);
  std::ofstream(copy / "runtime-events.jsonl", std::ios::binary) << after.out;
  const Resume a = crashsim("inspect --json " + dirArg);
  const Resume b = crashsim("inspect --json " + copy.string());
  ASSERT_TRUE(a.json.contains("runs")) << a.out;
  ASSERT_TRUE(b.json.contains("runs")) << b.out;
  ASSERT_EQ(a.json["runs"].size(), 1u);
  ASSERT_EQ(b.json["runs"].size(), 1u);
  for (const char* key : {"resolution", "plan", "events"})
    EXPECT_EQ(a.json["runs"][0][key], b.json["runs"][0][key]) << key;
  EXPECT_EQ(a.json["runs"][0]["header"]["status"], b.json["runs"][0]["header"]["status"]);
}

// The safe-boundary feature flag is the host's (spec e.1): off → every plan parks.
TEST_F(ResumeTest, FeatureFlagOffParksWithResumeFeatureDisabled) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P6:2"));
  const Resume r = crashsim("resume --dry-run --json " + store() + " --workspace " + ws());
  EXPECT_EQ(r.json["plan"]["decision"], "continue") << r.out;
  const test::Cmd off =
      sh("CRASHSIM_SAFE_BOUNDARY_RESUME=0 " + crashsimBinary().string() + " resume --json " +
         store() + " --workspace " + ws() + " --scenario " + sc.string());
  EXPECT_EQ(off.exitCode, 1) << off.out;
  const Json j = Json::parse(off.out);
  EXPECT_EQ(j["plan"]["rejectionReasons"], Json::array({code::resume_feature_disabled}));
  EXPECT_TRUE(j["continuation"].is_null());
}

// ---- issue #45: never destroy what recovery could still use
// ------------------------------------------------------------

// A crashed store whose database file is empty while its WAL (and -shm, as after every crash)
// still holds every commit — a crash on a file system with delayed allocation. SQLite would
// delete that WAL when it opens the empty file, read-only included. Every command refuses with
// store_database_empty_wal_holds_data before SQLite sees the directory, and no byte of it
// changes; `crashsim store salvage-wal` rebuilds the whole ledger into a new directory.
TEST_F(ResumeTest, AnEmptyDatabaseBesideItsWalIsRefusedByteIdenticalAndSalvageable) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P6:2"));
  const fs::path storeDir = dir / "store";
  ASSERT_TRUE(fs::exists(storeDir / "runtime.sqlite-shm"));
  ASSERT_GT(fs::file_size(storeDir / "runtime.sqlite-wal"), 0u);
  const test::Cmd whole = sh(crashsimBinary().string() + " ledger export " + store());
  ASSERT_EQ(whole.exitCode, 0);
  fs::resize_file(storeDir / "runtime.sqlite", 0);
  const auto before = hashFiles(storeDir);
  const std::string code(code::store_database_empty_wal_holds_data);
  for (const std::string& args :
       {"inspect --json " + store(), "resume --dry-run --json " + store(),
        "resume --dry-run --json " + store() + " --workspace " + ws(),
        "resume --json " + store() + " --workspace " + ws() + " --scenario " + sc.string()}) {
    const Resume r = crashsim(args);
    EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.json["error"]["code"], code) << args << "\n" << r.out;
    EXPECT_EQ(hashFiles(storeDir), before) << args;
  }
  const test::Cmd exported = sh(crashsimBinary().string() + " ledger export " + store() + " 2>&1");
  EXPECT_EQ(exported.exitCode, 2);
  EXPECT_NE(exported.out.find(code), std::string::npos) << exported.out;
  EXPECT_EQ(hashFiles(storeDir), before) << "ledger export";
  const test::Cmd recover = sh(agentBinary().string() + " recover --store " + store() +
                               " --workspace " + ws() + " --scenario " + sc.string());
  EXPECT_EQ(recover.exitCode, 2) << recover.out;
  EXPECT_NE(recover.out.find(code), std::string::npos) << recover.out;
  auto after = hashFiles(storeDir);
  after.erase("agent-exit.json");  // recover's own exit marker
  auto expected = before;
  expected.erase("agent-exit.json");
  EXPECT_EQ(after, expected) << "recover changed the store";
  const auto damaged = hashFiles(storeDir);
  // The salvage writes only into a new directory, and gives the whole ledger back.
  const fs::path salvaged = dir / "salvaged";
  EXPECT_EQ(crashsim("store salvage-wal " + store() + " --out " + store()).exitCode, 2);
  const Resume salvage = crashsim("store salvage-wal " + store() + " --out " + salvaged.string());
  ASSERT_EQ(salvage.exitCode, 0) << salvage.out;
  EXPECT_EQ(hashFiles(storeDir), damaged) << "the salvage changed the damaged store";
  EXPECT_EQ(sh(crashsimBinary().string() + " ledger export " + salvaged.string()).out, whole.out);
  EXPECT_EQ(crashsim("store salvage-wal " + store() + " --out " + salvaged.string()).exitCode, 2)
      << "a salvage must never write into an existing directory";
}

// A wrong --workspace: an existing directory that is not the store's workspace. Start-up must
// prove the directory is the store's (its marker, the identity the runs recorded) before
// anything is written: an unmarked directory is workspace_unmarked and stays unmarked, a marked
// directory of another workspace is workspace_identity_mismatch; neither store nor directory
// changes, and recovery with the right workspace then still finishes the interrupted Write.
TEST_F(ResumeTest, AWrongWorkspaceIsRefusedBeforeAnythingIsWritten) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P4:2"));  // the Write's rename happened, no T2: reconcile
  const fs::path unmarked = dir / "unmarked", other = dir / "other";
  fs::create_directories(unmarked);
  fs::create_directories(other);
  std::ofstream(other / ".maka-workspace.json")
      << R"({"schemaVersion":1,"workspaceId":"9f8e7d6c-5b4a-4c3d-9e2f-1a0b9c8d7e6f"})"
      << "\n";
  const auto before = hashFiles(dir / "store");
  const auto otherBefore = hashFiles(other);
  for (const auto& [wrong, code] : {std::pair{unmarked, code::workspace_unmarked},
                                    std::pair{other, code::workspace_identity_mismatch}}) {
    for (const std::string& args :
         {"resume --json " + store() + " --workspace " + wrong.string(),
          "resume --json " + store() + " --workspace " + wrong.string() + " --scenario " +
              sc.string(),
          "resume --dry-run --json " + store() + " --workspace " + wrong.string()}) {
      const Resume r = crashsim(args);
      EXPECT_EQ(r.exitCode, 2) << args << "\n" << r.out;
      EXPECT_EQ(r.json["error"]["code"], code) << args << "\n" << r.out;
    }
    const test::Cmd recover = sh(agentBinary().string() + " recover --store " + store() +
                                 " --workspace " + wrong.string() + " --scenario " + sc.string());
    EXPECT_EQ(recover.exitCode, 2) << recover.out;
    EXPECT_NE(recover.out.find(std::string(code)), std::string::npos) << recover.out;
    auto after = hashFiles(dir / "store");
    after.erase("agent-exit.json");
    auto expected = before;
    expected.erase("agent-exit.json");
    EXPECT_EQ(after["runtime.sqlite"], expected["runtime.sqlite"]) << wrong;
    EXPECT_EQ(after["runtime.sqlite-wal"], expected["runtime.sqlite-wal"]) << wrong;
    EXPECT_FALSE(fs::exists(dir / "store" / "lifecycle.jsonl"));
  }
  EXPECT_TRUE(fs::is_empty(unmarked)) << "a start-up created a marker in a directory it never used";
  EXPECT_EQ(hashFiles(other), otherBefore);
  // The right workspace still settles the Write: completed, run once.
  const test::Cmd rec = sh(agentBinary().string() + " recover --store " + store() +
                           " --workspace " + ws() + " --scenario " + sc.string());
  EXPECT_EQ(rec.exitCode, 0) << rec.out;
  const Resume after = crashsim("resume " + store() + " --workspace " + ws() + " --json");
  const Json d = decision(after.json, kRun1, "call-2");
  EXPECT_EQ(d["status"], code::completed) << d.dump();
  EXPECT_EQ(d["reason"], code::recovery_bundle_completed) << d.dump();
  EXPECT_EQ(executions(dir / "store", "call-2"), 1u);
}

// #45 §4: one verdict in every read and write path. A finished run damaged so that every
// writer refuses it (its terminal event deleted, the deleted tail included; an extra open run
// header on its turn) was "integrity ok" to inspect while resume failed with
// termination_batch_conflict. Now inspect, resume --dry-run and resume all give
// store_termination_conflict, and inspect changes no byte.
TEST_F(ResumeTest, AFinishedRunTheWritersRefuseIsRefusedByInspectToo) {
  const std::vector<std::pair<std::string, std::string>> damages = {
      {"deleted terminal event", "DELETE FROM runtime_events WHERE is_terminal = 1"},
      {"deleted tail",
       "DELETE FROM runtime_events WHERE event_seq >= (SELECT event_seq FROM runtime_events "
       "WHERE is_terminal = 1) - 1"},
      {"extra run header",
       "INSERT INTO agent_runs (session_id, run_id, invocation_id, turn_id, status, header_json, "
       "created_at, updated_at) SELECT session_id, run_id || '-extra', invocation_id, turn_id, "
       "'running', json_remove(json_set(header_json, '$.runId', run_id || '-extra', '$.status', "
       "'running'), '$.completedAt'), created_at, updated_at FROM agent_runs"},
  };
  for (const auto& [name, sql] : damages) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_FALSE(test::completedRun(dir, "write-config-port").empty());
    damageWithSql(dir / "store" / "runtime.sqlite", sql);
    const auto before = hashFiles(dir / "store");
    const std::string code(code::store_termination_conflict);
    for (const std::string& args :
         {"inspect --json " + store(), "resume --dry-run --json " + store(),
          "resume --json " + store() + " --workspace " + ws()}) {
      const Resume r = crashsim(args);
      EXPECT_EQ(r.exitCode, 2) << name << ": " << args << "\n" << r.out;
      EXPECT_EQ(r.json["error"]["code"], code) << name << ": " << args << "\n" << r.out;
      if (args.rfind("inspect", 0) == 0) EXPECT_EQ(hashFiles(dir / "store"), before) << name;
    }
  }
}

// Every read-only command — inspect (text and --json), resume --dry-run (with and without the
// workspace) and ledger export — on one crashed store damaged in each way the corrupt sweep
// damages a store (harness/include/crashsim/harness/corruption_injector.h) plus the empty database
// beside an intact WAL: each ends by itself with 0, 1 or 2 (never a signal) and every file of
// the store directory is byte-identical afterwards.
TEST_F(ResumeTest, ReadOnlyCommandsChangeNoByteOfADamagedStore) {
  const fs::path sc = scenarioFile("write-config-port");
  ASSERT_TRUE(crashAt(dir, sc, "P6:2"));
  const fs::path crashed = dir / "crashed";
  fs::copy(dir / "store", crashed, fs::copy_options::recursive);
  const fs::path db = "runtime.sqlite", wal = "runtime.sqlite-wal";
  auto patch = [](const fs::path& file, size_t offset, const std::string& bytes) {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  auto flip = [](const fs::path& file, size_t offset) {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x10));
  };
  const size_t frame = 24 + 1024;  // the store's 1 KiB pages
  const size_t walBytes = fs::file_size(crashed / wal);
  ASSERT_GT(walBytes, 32 + 4 * frame);
  const std::vector<std::pair<std::string, std::function<void(const fs::path&)>>> damages = {
      {"bit flip in the database", [&](const fs::path& s) { flip(s / db, 100); }},
      {"zeroed database page",
       [&](const fs::path& s) {
         if (fs::file_size(s / db) >= 2048) patch(s / db, 1024, std::string(1024, '\0'));
       }},
      {"database cut", [&](const fs::path& s) { fs::resize_file(s / db, 512); }},
      {"empty database beside its WAL", [&](const fs::path& s) { fs::resize_file(s / db, 0); }},
      {"bit flip in a WAL frame", [&](const fs::path& s) { flip(s / wal, 32 + frame + 24 + 7); }},
      {"zeroed WAL frame",
       [&](const fs::path& s) { patch(s / wal, 32 + 2 * frame, std::string(frame, '\0')); }},
      {"WAL cut in its last frame",
       [&](const fs::path& s) { fs::resize_file(s / wal, walBytes - 7); }},
      {"WAL cut at a frame boundary, the -shm kept",
       [&](const fs::path& s) { fs::resize_file(s / wal, 32 + 2 * frame); }},
      {"deleted WAL",
       [&](const fs::path& s) {
         fs::remove(s / wal);
         fs::remove(s / "runtime.sqlite-shm");
       }},
      {"deleted event",
       [&](const fs::path& s) {
         damageWithSql(s / db, "DELETE FROM runtime_events WHERE rowid = (" + kUnreferenced + ")");
       }},
      {"appended copy of an event",
       [&](const fs::path& s) {
         damageWithSql(s / db,
                       "INSERT INTO runtime_events (event_id, session_id, invocation_id, run_id, "
                       "turn_id, event_seq, event_kind, is_terminal, payload_json, committed_at) "
                       "SELECT event_id || '-copy', session_id, invocation_id, run_id, turn_id, "
                       "(SELECT MAX(event_seq) + 1 FROM runtime_events), event_kind, is_terminal, "
                       "payload_json, committed_at FROM runtime_events WHERE event_seq = 1");
       }},
      {"swapped event_seq",
       [&](const fs::path& s) {
         damageWithSql(s / db,
                       "UPDATE runtime_events SET event_seq = 100000 WHERE event_seq = 1;"
                       "UPDATE runtime_events SET event_seq = 1 WHERE event_seq = 2;"
                       "UPDATE runtime_events SET event_seq = 2 WHERE event_seq = 100000;");
       }},
      {"deleted run header",
       [&](const fs::path& s) { damageWithSql(s / db, "DELETE FROM agent_runs"); }},
  };
  for (const auto& [name, damage] : damages) {
    const fs::path s = dir / "damaged";
    fs::remove_all(s);
    fs::copy(crashed, s, fs::copy_options::recursive);
    damage(s);
    const auto before = hashFiles(s);
    for (const std::string& args : {"inspect " + s.string(), "inspect --json " + s.string(),
                                    "resume --dry-run --json " + s.string(),
                                    "resume --dry-run " + s.string() + " --workspace " + ws(),
                                    "ledger export " + s.string()}) {
      const test::Cmd r = sh(crashsimBinary().string() + " " + args + " >/dev/null 2>&1");
      EXPECT_LE(r.exitCode, 2) << name << ": " << args;
      EXPECT_EQ(hashFiles(s), before) << name << ": " << args << " changed the store";
    }
  }
}

}  // namespace
}  // namespace crashsim::harness
