// file_reconcile_test.cpp — finalize-only file recovery (spec i, c.4, f.6) against the
// production library: evidence validation failures by name, every observation, the bundles the
// reconciler commits (shape, exact retry, conflicting decision refused, projection rebuild),
// operations without a dedicated protocol, and the crash states of write-config-port and
// edit-two-files at P2/P3/P4/P5 driven through the real store writers and tools, recovered by
// the real host start-up sequence (hostStartup).
#include "recovery/file_reconcile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>

#include "crashsim/agent.h"
#include "crashsim/build_paths.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/host.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/scenario.h"
#include "crashsim/store.h"
#include "crashsim/tools.h"
#include "crashsim/workspace.h"
#include "verdicts/workspace_expect.h"

namespace fs = std::filesystem;
using namespace crashsim;

namespace {

const fs::path kScenarioDir = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios";

struct Box {
  Box() {
    std::random_device rd;
    base = fs::temp_directory_path() /
           ("crashsim-filerec-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(ws());
    fs::create_directories(store());
  }
  ~Box() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  fs::path ws() const { return base / "ws"; }
  fs::path store() const { return base / "store"; }
  AgentPaths paths() const { return AgentPaths{store(), ws(), {}}; }
  fs::path base;
};

HostStartupReport recoverWith(const Scenario& scenario, const Box& box, CancellationToken& cancel) {
  HostStartupOptions options;
  options.storeDir = box.store();
  options.workspaceDir = box.ws();
  options.scenario = &scenario;
  return hostStartup(options, cancel);
}

void writeFile(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

// Every regular file of the workspace except the marker: relative path → bytes.
std::map<std::string, std::string> snapshot(const fs::path& ws) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(ws)) {
    if (e.path().filename() == std::string(kWorkspaceMarkerName)) continue;
    if (e.is_symlink()) {
      out[fs::relative(e.path(), ws).generic_string()] = "symlink:" + fs::read_symlink(e).string();
    } else if (e.is_regular_file()) {
      out[fs::relative(e.path(), ws).generic_string()] = readFile(e.path());
    }
  }
  return out;
}

std::vector<RuntimeEvent> runEvents(RuntimeStore& s, const RunIdentity& id) {
  std::vector<RuntimeEvent> out;
  for (auto& e : s.readRunEvents(id.sessionId, id.runId)) out.push_back(e.event);
  return out;
}

// A copy: callers often pass a temporary resolution.
std::optional<ToolDecision> decisionFor(const RecoveryResolution& r, const std::string& callId) {
  for (const auto& d : r.decisions) {
    if (d.toolCallId == callId) return d;
  }
  return std::nullopt;
}

std::map<std::string, int> executions(const fs::path& effects) {
  std::map<std::string, int> out;
  for (const auto& line : EffectsLog::read(effects))
    ++out[line.at("operationId").get<std::string>()];
  return out;
}

// Rebuilding the projections reproduces the online ones exactly.
void expectRebuildReproduces(RuntimeStore& s) {
  const auto ops = s.listToolOperations();
  const auto journal = s.listJournal();
  const std::string ledger = s.ledgerHash();
  s.rebuildProjections();
  EXPECT_EQ(s.listToolOperations(), ops) << "tool_operations differ from a rebuild";
  EXPECT_EQ(s.listJournal(), journal) << "tool_journal_events differ from a rebuild";
  EXPECT_EQ(s.ledgerHash(), ledger);
}

// ---------------------------------------------------------------------------------------------
// Crash-state driver: the agent loop's own writers and tools, stopped at a failpoint boundary of
// one target call (the durable state the catalogue names for P2/P3/P4/P5; P5 rolls T2 back, so
// its durable state is P4's).

enum class Stage { P2, P3, P4, P5 };

struct Crashed {
  RunIdentity id;
  std::string op;  // the target operation
};

Crashed crashAt(const Scenario& scenario, const Box& box, const std::string& targetCall,
                Stage stage) {
  const WorkspaceIdentity workspace = ensureWorkspaceIdentity(box.ws());
  auto store = RuntimeStore::open(box.store());
  EffectsLog effects(box.store() / "effects.jsonl");
  ToolPolicy policy;
  policy.available = scenario.tools;
  policy.denied = scenario.deny;
  ToolRuntime tools(workspace, policy, effects);
  CancellationToken cancel;
  RunClock clock;
  const RunIdentity id = freshRunIdentity(scenario);
  RunHeader header;
  header.sessionId = id.sessionId;
  header.runId = id.runId;
  header.invocationId = id.invocationId;
  header.turnId = id.turnId;
  header.status = "running";
  header.createdAt = header.updatedAt = clock.now();
  header.workspaceIdentity = workspace.identity;
  header.cwd = workspace.root.string();
  store->createRun(header);
  store->append(agent_events::userEvent(id, clock.now(), scenario.user, true));
  for (const auto& step : scenario.model) {
    for (const auto& sc : step.calls) {
      const ToolCallRequest call{sc.id, sc.name, sc.args};
      const std::string op = deriveOperationId(id.invocationId, call.callId);
      const RuntimeEvent callEv = agent_events::callEvent(id, op, clock.now(), call);
      store->append(callEv);
      const PreflightDecision decision = tools.preflight(call);
      EXPECT_EQ(decision.kind, PreflightDecision::Kind::dispatch) << call.callId;
      const std::string hash = canonicalArgsHash(call.toolName, call.args);
      ToolPrepared t1;
      t1.operationId = op;
      t1.journalEventId = op + "_prepared";
      t1.call = callEv;
      t1.dispatch = agent_events::dispatchEvent(id, op, clock.now(), call, hash,
                                                decision.recoveryMode, decision.fileEvidence);
      t1.providerToolCallId = call.callId;
      t1.toolName = call.toolName;
      t1.canonicalArgsHash = hash;
      t1.recoveryMode = decision.recoveryMode;
      t1.committedAt = clock.now();
      EXPECT_TRUE(store->commitToolPrepared(t1).created);
      if (call.callId == targetCall) {
        if (stage == Stage::P3) {
          // Inside the implementation: effects line, temp file written + fsynced, not renamed.
          effects.recordExecution(op, call.callId, id.invocationId, call.toolName);
          const fs::path target = decision.target->absolute;
          writeFile(target.parent_path() / ("." + target.filename().string() + "." + op + ".tmp"),
                    decision.newContent);
        } else if (stage == Stage::P4 || stage == Stage::P5) {
          const ToolResult r = tools.execute(
              call, decision, ToolExecution{op, call.callId, id.invocationId}, cancel);
          EXPECT_FALSE(r.isError) << r.result.dump();
        }
        return Crashed{id, op};  // killed: no T2, no terminal facts
      }
      const ToolResult r =
          tools.execute(call, decision, ToolExecution{op, call.callId, id.invocationId}, cancel);
      ToolOutcome t2;
      t2.operationId = op;
      t2.journalEventId = op + "_outcome";
      t2.response =
          agent_events::responseEvent(id, op, clock.now(), call, r.result, r.isError, true);
      t2.committedAt = clock.now();
      store->commitToolOutcome(t2);
    }
  }
  ADD_FAILURE() << "call " << targetCall << " not in the scenario";
  return {};
}

struct CrashCase {
  std::string scenario;
  std::string call;
  Stage stage;
  bool completes;  // P4/P5: the target file holds the expected-after identity
};

std::string stageName(Stage s) {
  switch (s) {
    case Stage::P2:
      return "P2";
    case Stage::P3:
      return "P3";
    case Stage::P4:
      return "P4";
    default:
      return "P5";
  }
}

class CrashRecoveryTest : public ::testing::TestWithParam<CrashCase> {};

// write-config-port / edit-two-files killed at P2/P3 (state prepared, file untouched) → parked
// reconcile_matches_prior_state, workspace untouched; at P4/P5 (file renamed, no T2) →
// completed / recovery_bundle_completed, the reference workspace, every operation ran once.
TEST_P(CrashRecoveryTest, RecoverParksPriorStateOrCompletesExpectedState) {
  const CrashCase& c = GetParam();
  Box box;
  const Scenario scenario = loadScenario(kScenarioDir / (c.scenario + ".json"));
  seedWorkspace(scenario, box.ws());
  const Crashed crashed = crashAt(scenario, box, c.call, c.stage);
  const auto beforeRecovery = snapshot(box.ws());

  CancellationToken cancel;
  const HostStartupReport report = recoverWith(scenario, box, cancel);
  SCOPED_TRACE(report.toJson().dump());

  auto store = RuntimeStore::open(box.store());
  const RecoveryResolution res = resolveRecovery(runEvents(*store, crashed.id));
  EXPECT_FALSE(res.hasCorruption);
  std::optional<ToolDecision> d = decisionFor(res, c.call);
  ASSERT_TRUE(d.has_value());
  ToolOperationRow row;
  for (const auto& r : store->listToolOperations()) {
    if (r.operationId == crashed.op) row = r;
  }
  if (c.completes) {
    EXPECT_EQ(d->status, code::completed);
    EXPECT_EQ(d->reason, code::recovery_bundle_completed);
    EXPECT_EQ(d->settlementOrigin, std::string(code::recovery_bundle));
    EXPECT_EQ(row.currentState, "recovery_completed");
    EXPECT_EQ(row.version, 4);
    EXPECT_TRUE(crashsim::harness::workspace::expectedProblems(scenario, box.ws()).empty())
        << ::testing::PrintToString(
               crashsim::harness::workspace::expectedProblems(scenario, box.ws()));
  } else {
    EXPECT_EQ(d->status, code::parked);
    EXPECT_EQ(d->reason, code::reconcile_matches_prior_state);
    EXPECT_EQ(row.currentState, "recovery_parked");
    EXPECT_EQ(row.version, 3);
    // Untouched: exactly the files before the crashed operation, and no leftover temp file.
    auto expected = beforeRecovery;
    for (auto it = expected.begin(); it != expected.end();) {
      it = it->first.ends_with(".tmp") ? expected.erase(it) : std::next(it);
    }
    EXPECT_EQ(snapshot(box.ws()), expected);
  }
  for (const auto& [op, n] : executions(box.store() / "effects.jsonl")) {
    EXPECT_EQ(n, 1) << "operation " << op << " executed " << n << " times";
  }
  // Recovery again: nothing new (the operation is settled), the ledger is unchanged.
  const std::string ledger = store->ledgerHash();
  const Json again = reconcileIndeterminateOperations(*store, ensureWorkspaceIdentity(box.ws()));
  EXPECT_TRUE(again["operations"].empty()) << again.dump();
  EXPECT_EQ(store->ledgerHash(), ledger);
  expectRebuildReproduces(*store);
}

INSTANTIATE_TEST_SUITE_P(
    FileRecovery, CrashRecoveryTest,
    ::testing::Values(CrashCase{"write-config-port", "call-2", Stage::P2, false},
                      CrashCase{"write-config-port", "call-2", Stage::P3, false},
                      CrashCase{"write-config-port", "call-2", Stage::P4, true},
                      CrashCase{"write-config-port", "call-2", Stage::P5, true},
                      CrashCase{"edit-two-files", "call-1", Stage::P2, false},
                      CrashCase{"edit-two-files", "call-1", Stage::P3, false},
                      CrashCase{"edit-two-files", "call-1", Stage::P4, true},
                      CrashCase{"edit-two-files", "call-1", Stage::P5, true},
                      CrashCase{"edit-two-files", "call-2", Stage::P2, false},
                      CrashCase{"edit-two-files", "call-2", Stage::P3, false},
                      CrashCase{"edit-two-files", "call-2", Stage::P4, true},
                      CrashCase{"edit-two-files", "call-2", Stage::P5, true}),
    [](const ::testing::TestParamInfo<CrashCase>& info) {
      std::string n =
          info.param.scenario + "_" + info.param.call + "_" + stageName(info.param.stage);
      for (auto& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return n;
    });

// The three afterCrash scenarios: killed at P2..P5, mutated by "another process", recovered →
// parked with the scenario's reason, the external change preserved, no temp file left.
struct AfterCrashCase {
  std::string scenario;
  Stage stage;
};
class AfterCrashRecoveryTest : public ::testing::TestWithParam<AfterCrashCase> {};

TEST_P(AfterCrashRecoveryTest, ExternalChangeIsPreservedAndParked) {
  const AfterCrashCase& c = GetParam();
  Box box;
  const Scenario scenario = loadScenario(kScenarioDir / (c.scenario + ".json"));
  ASSERT_TRUE(scenario.afterCrash);
  ASSERT_TRUE(crashsim::harness::workspace::afterCrashApplies(scenario, stageName(c.stage)));
  seedWorkspace(scenario, box.ws());
  const Crashed crashed = crashAt(scenario, box, "call-1", c.stage);
  crashsim::harness::workspace::applyAfterCrash(scenario, box.ws());
  CancellationToken cancel;
  const HostStartupReport report = recoverWith(scenario, box, cancel);
  SCOPED_TRACE(report.toJson().dump());
  auto store = RuntimeStore::open(box.store());
  std::optional<ToolDecision> d =
      decisionFor(resolveRecovery(runEvents(*store, crashed.id)), "call-1");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->status, code::parked);
  EXPECT_EQ(d->reason, scenario.afterCrash->parkedReason);
  const auto problems = crashsim::harness::workspace::afterCrashProblems(scenario, box.ws());
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  expectRebuildReproduces(*store);
}

INSTANTIATE_TEST_SUITE_P(FileRecovery, AfterCrashRecoveryTest,
                         ::testing::Values(AfterCrashCase{"external-edit-diverged", Stage::P2},
                                           AfterCrashCase{"external-edit-diverged", Stage::P3},
                                           AfterCrashCase{"external-edit-diverged", Stage::P4},
                                           AfterCrashCase{"external-edit-diverged", Stage::P5},
                                           AfterCrashCase{"target-deleted", Stage::P2},
                                           AfterCrashCase{"target-deleted", Stage::P4},
                                           AfterCrashCase{"symlink-swap", Stage::P3},
                                           AfterCrashCase{"symlink-swap", Stage::P4}),
                         [](const ::testing::TestParamInfo<AfterCrashCase>& info) {
                           std::string n = info.param.scenario + "_" + stageName(info.param.stage);
                           for (auto& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// ---------------------------------------------------------------------------------------------
// Unit level: one prepared Write operation built by hand.

struct Fixture : ::testing::Test {
  Box box;
  WorkspaceIdentity workspace;
  std::unique_ptr<RuntimeStore> store;
  RunIdentity id{"session-u", "invocation-u", "run-u", "turn-u"};
  std::string before = "before\n", after = "after!\n";
  std::string callId = "call-1";
  std::string op;
  RuntimeEvent call, dispatch;

  void SetUp() override {
    workspace = ensureWorkspaceIdentity(box.ws());
    store = RuntimeStore::open(box.store());
    op = deriveOperationId(id.invocationId, callId);
    RunHeader h;
    h.sessionId = id.sessionId;
    h.runId = id.runId;
    h.invocationId = id.invocationId;
    h.turnId = id.turnId;
    h.status = "running";
    h.createdAt = h.updatedAt = 1000;
    store->createRun(h);
    store->append(agent_events::userEvent(id, 1001, "go", true));
    writeFile(box.ws() / "notes.txt", before);
  }

  Json evidence() const {
    return buildFileEvidence(workspace, "notes.txt", fileStateOf(before), fileStateOf(after),
                             "write_v1",
                             Json{{"path", "notes.txt"}, {"bytesWritten", after.size()}});
  }
  ToolCallRequest request(const std::string& tool = "Write") const {
    if (tool == "Bash") return ToolCallRequest{callId, tool, Json{{"command", "true"}}};
    return ToolCallRequest{callId, tool, Json{{"path", "notes.txt"}, {"content", after}}};
  }
  // T1 for the Write (or `tool`), with `ev` as its evidence (nullopt = none).
  void prepare(const std::optional<Json>& ev, const std::string& tool = "Write",
               const std::string& mode = "reconcile") {
    const ToolCallRequest req = request(tool);
    call = agent_events::callEvent(id, op, 1002, req);
    const std::string hash = canonicalArgsHash(req.toolName, req.args);
    dispatch = agent_events::dispatchEvent(id, op, 1003, req, hash, mode, ev);
    ToolPrepared t1{op, op + "_prepared", call, dispatch, callId, tool, hash, mode, 1003};
    ASSERT_TRUE(store->commitToolPrepared(t1).created);
  }
  Json reconcile() { return reconcileIndeterminateOperations(*store, workspace); }
  const ToolDecision decision() {
    const auto r = resolveRecovery(runEvents(*store, id));
    std::optional<ToolDecision> d = decisionFor(r, callId);
    return d ? *d : ToolDecision{};
  }
  FileEvidence typed(const Json& ev) const {
    return decodeRuntimeEvent(agent_events::dispatchEvent(
                                  id, op, 1, request(), canonicalArgsHash("Write", request().args),
                                  "reconcile", ev)
                                  .json)
        .toolDispatch->fileEvidence.value();
  }
};

// --- observations ---------------------------------------------------------------------------

TEST_F(Fixture, ObservationMatchesExpectedState) {
  writeFile(box.ws() / "notes.txt", after);
  const FileObservation o = observeFileEvidence(workspace, typed(evidence()));
  EXPECT_EQ(o.observation, code::matches_expected_state);
  EXPECT_EQ(o.observedIdentity, toJson(fileStateOf(after)));
}

TEST_F(Fixture, ObservationMatchesPriorState) {
  EXPECT_EQ(observeFileEvidence(workspace, typed(evidence())).observation,
            code::matches_prior_state);
}

TEST_F(Fixture, ObservationDivergedOnExternalEdit) {
  writeFile(box.ws() / "notes.txt", "someone else\n");
  EXPECT_EQ(observeFileEvidence(workspace, typed(evidence())).observation, code::diverged);
}

// The documented target-deleted decision: an absent file is an observable identity
// ({exists:false}); it equals neither an existing before-state nor the expected-after → diverged.
TEST_F(Fixture, ObservationDeletedTargetWithExistingBeforeStateIsDiverged) {
  fs::remove(box.ws() / "notes.txt");
  const FileObservation o = observeFileEvidence(workspace, typed(evidence()));
  EXPECT_EQ(o.observation, code::diverged);
  EXPECT_EQ(o.observedIdentity, (Json{{"exists", false}}));
}

TEST_F(Fixture, ObservationDeletedTargetOfACreatingWriteIsMatchesPriorState) {
  fs::remove(box.ws() / "notes.txt");
  Json ev = evidence();
  ev["before"] = {{"exists", false}};
  EXPECT_EQ(observeFileEvidence(workspace, typed(ev)).observation, code::matches_prior_state);
}

TEST_F(Fixture, ObservationUnreadableSymlinkTargetIsNeverFollowed) {
  writeFile(box.ws() / "decoy.txt", after);  // following the link would "match"
  fs::remove(box.ws() / "notes.txt");
  fs::create_symlink("decoy.txt", box.ws() / "notes.txt");
  const FileObservation o = observeFileEvidence(workspace, typed(evidence()));
  EXPECT_EQ(o.observation, code::unreadable);
  EXPECT_EQ(o.detail, code::observation_target_symlink);
  EXPECT_EQ(o.observedIdentity, (Json{{"unreadable", "observation_target_symlink"}}));
}

TEST_F(Fixture, ObservationUnreadableSymlinkedParentDirectory) {
  fs::create_directories(box.base / "outside");
  writeFile(box.base / "outside" / "notes.txt", after);
  fs::create_directory_symlink(box.base / "outside", box.ws() / "sub");
  Json ev = evidence();
  ev["targetPath"] = "sub/notes.txt";
  ev["result"]["path"] = "sub/notes.txt";
  const FileObservation o = observeFileEvidence(workspace, typed(ev));
  EXPECT_EQ(o.observation, code::unreadable);
  EXPECT_EQ(o.detail, code::observation_parent_unsafe);
}

TEST_F(Fixture, ObservationUnreadableNotARegularFile) {
  fs::remove(box.ws() / "notes.txt");
  fs::create_directory(box.ws() / "notes.txt");
  FileObservation o = observeFileEvidence(workspace, typed(evidence()));
  EXPECT_EQ(o.observation, code::unreadable);
  EXPECT_EQ(o.detail, code::observation_target_not_regular);
  fs::remove(box.ws() / "notes.txt");
  ASSERT_EQ(::mkfifo((box.ws() / "notes.txt").c_str(), 0600), 0);
  o = observeFileEvidence(workspace, typed(evidence()));  // never blocks on a FIFO
  EXPECT_EQ(o.observation, code::unreadable);
  EXPECT_EQ(o.detail, code::observation_target_not_regular);
}

TEST_F(Fixture, ObservationUnreadableLargerThanTheBound) {
  writeFile(box.ws() / "notes.txt", std::string(4096, 'x'));
  const FileObservation o = observeFileEvidence(workspace, typed(evidence()), 1024);
  EXPECT_EQ(o.observation, code::unreadable);
  EXPECT_EQ(o.detail, code::observation_target_too_large);
}

TEST_F(Fixture, ObservationMissingParentDirectoryIsAnAbsentFile) {
  Json ev = evidence();
  ev["targetPath"] = "gone/notes.txt";
  ev["result"]["path"] = "gone/notes.txt";
  const FileObservation o = observeFileEvidence(workspace, typed(ev));
  EXPECT_EQ(o.observation, code::diverged);
  EXPECT_EQ(o.observedIdentity, (Json{{"exists", false}}));
}

// --- bundles through the reconciler -----------------------------------------------------------

TEST_F(Fixture, CompletedBundleSynthesizesTheEvidenceResultAndSettlesAtVersion4) {
  prepare(evidence());
  // The implementation ran to the rename (P4): expected-after on disk, temp gone.
  writeFile(box.ws() / "notes.txt", after);
  const Json report = reconcile();
  ASSERT_EQ(report["operations"].size(), 1u) << report.dump();
  EXPECT_EQ(report["operations"][0]["action"], "bundle_committed") << report.dump();
  EXPECT_EQ(report["operations"][0]["observation"], "matches_expected_state");
  const ToolDecision d = decision();
  EXPECT_EQ(d.status, code::completed);
  EXPECT_EQ(d.reason, code::recovery_bundle_completed);
  EXPECT_EQ(d.responseRuntimeEventId, op + "_response");
  EXPECT_EQ(d.responseIsError, false);

  const auto events = runEvents(*store, id);
  ASSERT_EQ(events.size(), 6u);
  const RuntimeEvent& rec = events[3];
  const RuntimeEvent& out = events[4];
  const RuntimeEvent& dec = events[5];
  EXPECT_EQ(rec.id, op + "_reconcile");
  EXPECT_EQ(rec.toolRecovery->observation, "matches_expected_state");
  EXPECT_EQ(rec.toolRecovery->observationDigest,
            sha256Digest(stableJson(toJson(fileStateOf(after)))));
  EXPECT_EQ(out.id, op + "_response");
  EXPECT_EQ(out.json["content"]["result"], (Json{{"path", "notes.txt"}, {"bytesWritten", 7}}));
  EXPECT_FALSE(out.json["content"].contains("isError"));
  EXPECT_EQ(out.json["refs"], (Json{{"operationId", op}, {"toolCallId", callId}}));
  EXPECT_EQ(dec.id, op + "_decision");
  EXPECT_EQ(dec.toolRecovery->disposition, "completed");
  EXPECT_EQ(dec.toolRecovery->reasonCode, "reconcile_matches_expected_state");
  EXPECT_EQ(dec.toolRecovery->outcomeEventId, op + "_response");
  EXPECT_EQ(dec.toolRecovery->evidenceEventIds,
            (std::vector<std::string>{op + "_call", op + "_dispatch", op + "_reconcile",
                                      op + "_response"}));
  EXPECT_EQ(readFile(box.ws() / "notes.txt"), after);
  const auto ops = store->listToolOperations();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].currentState, "recovery_completed");
  EXPECT_EQ(ops[0].version, 4);
  EXPECT_EQ(ops[0].resultEventId, op + "_response");
  expectRebuildReproduces(*store);
}

TEST_F(Fixture, ParkedBundleForEachNonExpectedObservationSettlesAtVersion3) {
  struct Case {
    std::function<void()> mutate;
    std::string observation, reason;
  };
  const std::vector<Case> cases = {
      {[] {}, "matches_prior_state", "reconcile_matches_prior_state"},
      {[&] { writeFile(box.ws() / "notes.txt", "external\n"); }, "diverged", "reconcile_diverged"},
      {[&] {
         fs::remove(box.ws() / "notes.txt");
         fs::create_symlink("elsewhere", box.ws() / "notes.txt");
       },
       "unreadable", "reconcile_unreadable"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.observation);
    TearDown();
    Box fresh;
    std::swap(box.base, fresh.base);
    SetUp();
    prepare(evidence());
    c.mutate();
    const auto filesBefore = snapshot(box.ws());
    const Json report = reconcile();
    EXPECT_EQ(report["operations"][0]["action"], "bundle_committed") << report.dump();
    const ToolDecision d = decision();
    EXPECT_EQ(d.status, code::parked);
    EXPECT_EQ(d.reason, c.reason);
    const auto events = runEvents(*store, id);
    ASSERT_EQ(events.size(), 5u);
    EXPECT_EQ(events[3].toolRecovery->observation, c.observation);
    EXPECT_EQ(events[4].toolRecovery->evidenceEventIds,
              (std::vector<std::string>{op + "_call", op + "_dispatch", op + "_reconcile"}));
    EXPECT_EQ(snapshot(box.ws()), filesBefore) << "the file is never rewritten";
    const auto ops = store->listToolOperations();
    EXPECT_EQ(ops[0].currentState, "recovery_parked");
    EXPECT_EQ(ops[0].version, 3);
    expectRebuildReproduces(*store);
  }
}

TEST_F(Fixture, LeftoverTempFileOfTheOperationIsRemovedOthersAreKept) {
  prepare(evidence());
  const fs::path mine = box.ws() / ("." + std::string("notes.txt.") + op + ".tmp");
  const fs::path other = box.ws() / ".notes.txt.toolop_0123456789abcdef0123456789abcdef.tmp";
  writeFile(mine, after);
  writeFile(other, "other op\n");
  const Json report = reconcile();
  EXPECT_EQ(report["operations"][0]["tempRemoved"], true);
  EXPECT_FALSE(fs::exists(mine));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_EQ(readFile(box.ws() / "notes.txt"), before);
  EXPECT_EQ(decision().reason, code::reconcile_matches_prior_state);
}

TEST_F(Fixture, ExactRetryConvergesAndAConflictingSecondDecisionIsRefused) {
  prepare(evidence());
  writeFile(box.ws() / "notes.txt", after);
  const auto events = runEvents(*store, id);
  double base = 0;
  for (const auto& e : events) base = std::max(base, e.ts);
  FileObservation expected = observeFileEvidence(workspace, typed(evidence()));
  const RecoveryBundle b = buildFileRecoveryBundle(call, dispatch, expected, base);
  EXPECT_TRUE(store->commitToolRecoveryBundle(b).created);
  const std::string ledger = store->ledgerHash();
  // The deterministic rebuild of the same bundle is byte-equal: an exact retry converges.
  EXPECT_FALSE(
      store->commitToolRecoveryBundle(buildFileRecoveryBundle(call, dispatch, expected, base))
          .created);
  // A conflicting decision (parked on the same operation) is refused; nothing changes.
  FileObservation prior;
  prior.observation = "matches_prior_state";
  prior.observedIdentity = toJson(fileStateOf(before));
  try {
    store->commitToolRecoveryBundle(buildFileRecoveryBundle(call, dispatch, prior, base));
    ADD_FAILURE() << "conflicting bundle accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.code() == code::recovery_bundle_already_settled ||
                e.code() == code::tool_ledger_rejection)
        << e.code() << ": " << e.what();
  }
  EXPECT_EQ(store->ledgerHash(), ledger);
  EXPECT_EQ(decision().reason, code::recovery_bundle_completed);
}

// --- operations without a dedicated protocol --------------------------------------------------

TEST_F(Fixture, BashWithoutDedicatedProtocolIsLeftIndeterminate) {
  prepare(std::nullopt, "Bash", "never_auto_retry");
  const std::string ledger = store->ledgerHash();
  const Json report = reconcile();
  ASSERT_EQ(report["operations"].size(), 1u);
  EXPECT_EQ(report["operations"][0]["action"], "left_indeterminate");
  EXPECT_EQ(store->ledgerHash(), ledger);
  EXPECT_EQ(decision().status, code::indeterminate);
  EXPECT_EQ(decision().reason, code::dispatch_without_response);
}

TEST_F(Fixture, UnknownToolWithReconcileModeIsLeftIndeterminate) {
  const ToolCallRequest req{callId, "Deploy", Json{{"target", "prod"}}};
  call = agent_events::callEvent(id, op, 1002, req);
  const std::string hash = canonicalArgsHash(req.toolName, req.args);
  dispatch = agent_events::dispatchEvent(id, op, 1003, req, hash, "reconcile", std::nullopt);
  ASSERT_TRUE(store
                  ->commitToolPrepared(ToolPrepared{op, op + "_prepared", call, dispatch, callId,
                                                    "Deploy", hash, "reconcile", 1003})
                  .created);
  const Json report = reconcile();
  EXPECT_EQ(report["operations"][0]["action"], "left_indeterminate");
  EXPECT_EQ(decision().status, code::indeterminate);
}

// --- evidence validation failures: each parks reconcile_unreadable, by name --------------------

struct EvidenceFailure {
  std::string name;                      // expected code
  std::function<void(Json& ev)> tamper;  // evidence change (nullptr = no evidence)
  bool noEvidence = false;
};

TEST_F(Fixture, EvidenceValidationFailuresParkUnreadableByName) {
  const std::vector<EvidenceFailure> cases = {
      {"file_evidence_missing", nullptr, true},
      {"file_evidence_workspace_mismatch",
       [](Json& e) {
         e["workspaceIdentity"] = "workspace:v1:00000000-0000-4000-8000-000000000000";
       }},
      {"file_evidence_target_invalid",
       [](Json& e) {
         e["targetPath"] = ".maka-workspace.json";
         e["result"]["path"] = ".maka-workspace.json";
       }},
      {"file_evidence_transform_mismatch", [](Json& e) { e["transformVersion"] = "edit_v1"; }},
      {"file_evidence_args_mismatch",
       [](Json& e) {
         e["targetPath"] = "other.txt";
         e["result"]["path"] = "other.txt";
       }},
      {"file_evidence_args_mismatch",
       [](Json& e) { e["expectedAfter"] = toJson(fileStateOf("not the content")); }},
      {"file_evidence_states_equal", [this](Json& e) { e["before"] = toJson(fileStateOf(after)); }},
      {"file_evidence_result_mismatch", [](Json& e) { e["result"]["bytesWritten"] = 999; }},
      {"file_evidence_result_mismatch", [](Json& e) { e["result"]["extra"] = true; }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    TearDown();
    Box fresh;
    std::swap(box.base, fresh.base);
    SetUp();
    std::optional<Json> ev;
    if (!c.noEvidence) {
      ev = evidence();
      c.tamper(*ev);
    }
    prepare(ev);
    writeFile(box.ws() / "notes.txt", after);  // even the expected bytes are not trusted
    EXPECT_EQ(validateFileEvidence(call, dispatch, workspace), c.name);
    const Json report = reconcile();
    ASSERT_EQ(report["operations"].size(), 1u);
    EXPECT_EQ(report["operations"][0]["detail"], c.name) << report.dump();
    EXPECT_EQ(report["operations"][0]["observation"], "unreadable");
    EXPECT_EQ(decision().status, code::parked);
    EXPECT_EQ(decision().reason, code::reconcile_unreadable);
    const auto events = runEvents(*store, id);
    EXPECT_EQ(events[3].toolRecovery->observationDigest,
              sha256Digest(stableJson(Json{{"evidenceInvalid", c.name}})));
    EXPECT_EQ(readFile(box.ws() / "notes.txt"), after);
  }
}

TEST_F(Fixture, EvidenceOfAnotherWorkspaceMarkerParksUnreadable) {
  prepare(evidence());
  writeFile(box.ws() / "notes.txt", after);
  WorkspaceIdentity other = workspace;
  other.identity = "workspace:v1:11111111-1111-4111-8111-111111111111";
  const Json report = reconcileIndeterminateOperations(*store, other);
  EXPECT_EQ(report["operations"][0]["detail"], "file_evidence_workspace_mismatch");
  EXPECT_EQ(decision().reason, code::reconcile_unreadable);
}

TEST_F(Fixture, EvidenceIdentityConflictWhenOperationIdIsNotDerived) {
  prepare(evidence());
  Json d = dispatch.json;
  d["actions"]["toolDispatch"]["operationId"] = "toolop_other";
  EXPECT_EQ(validateFileEvidence(call, decodeRuntimeEvent(d), workspace),
            code::file_evidence_identity_conflict);
  Json c = call.json;
  c["turnId"] = "turn-other";
  EXPECT_EQ(validateFileEvidence(decodeRuntimeEvent(c), dispatch, workspace),
            code::file_evidence_identity_conflict);
  EXPECT_EQ(validateFileEvidence(call, dispatch, workspace), "");
}

// --- bundle validation failures (f.6) on the reconciler's own bundles, by name
// --------------------

struct BundleTamper {
  std::string code;
  bool completed;
  std::function<void(Json& rec, Json& out, Json& dec, bool& dropOutcome, bool& addOutcome)> edit;
};

TEST_F(Fixture, TamperedReconcilerBundlesAreRefusedByNameAndLeaveNoTrace) {
  prepare(evidence());
  writeFile(box.ws() / "notes.txt", after);
  const std::string ledger = store->ledgerHash();
  FileObservation completed = observeFileEvidence(workspace, typed(evidence()));
  FileObservation parked;
  parked.observation = "diverged";
  parked.observedIdentity = Json{{"exists", false}};
  const std::vector<BundleTamper> cases = {
      {"reconcile_fact_invalid", true,
       [](Json& rec, Json&, Json& dec, bool&, bool&) {
         rec["actions"]["toolRecovery"] = dec["actions"]["toolRecovery"];
       }},
      {"decision_fact_invalid", true,
       [](Json& rec, Json&, Json& dec, bool&, bool&) {
         dec["actions"]["toolRecovery"] = rec["actions"]["toolRecovery"];
       }},
      {"recovery_fact_identity_conflict", false,
       [](Json& rec, Json&, Json&, bool&, bool&) { rec["refs"]["toolCallId"] = "call-x"; }},
      {"operation_identity_conflict", false,
       [](Json& rec, Json&, Json&, bool&, bool&) {
         rec["actions"]["toolRecovery"]["payload"]["operationId"] = "toolop_x";
       }},
      {"outcome_required", true, [](Json&, Json&, Json&, bool& drop, bool&) { drop = true; }},
      {"outcome_identity_conflict", true,
       [](Json&, Json& out, Json&, bool&, bool&) { out["refs"]["toolCallId"] = "call-x"; }},
      {"outcome_not_successful", true,
       [](Json&, Json& out, Json&, bool&, bool&) { out["content"]["isError"] = true; }},
      {"outcome_reference_conflict", true,
       [](Json&, Json&, Json& dec, bool&, bool&) {
         dec["actions"]["toolRecovery"]["payload"]["outcomeEventId"] = "other";
       }},
      {"reconcile_decision_conflict", true,
       [](Json& rec, Json&, Json&, bool&, bool&) {
         rec["actions"]["toolRecovery"]["payload"]["observation"] = "diverged";
       }},
      {"reconcile_decision_conflict", false,
       [](Json&, Json&, Json& dec, bool&, bool&) {
         dec["actions"]["toolRecovery"]["payload"]["reasonCode"] = "reconcile_unreadable";
       }},
      {"outcome_for_parked", false, [](Json&, Json&, Json&, bool&, bool& add) { add = true; }},
      {"evidence_order_conflict", true,
       [](Json&, Json&, Json& dec, bool&, bool&) {
         auto& ids = dec["actions"]["toolRecovery"]["payload"]["evidenceEventIds"];
         std::swap(ids[0], ids[1]);
       }},
  };
  double base = 5000;
  const RecoveryBundle goodCompleted = buildFileRecoveryBundle(call, dispatch, completed, base);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.code);
    RecoveryBundle b =
        buildFileRecoveryBundle(call, dispatch, c.completed ? completed : parked, base);
    Json rec = b.reconcile.json, dec = b.decision.json;
    Json out = c.completed ? b.outcome->json : goodCompleted.outcome->json;
    bool drop = false, add = false;
    c.edit(rec, out, dec, drop, add);
    b.reconcile = decodeRuntimeEvent(rec);
    b.decision = decodeRuntimeEvent(dec);
    if (c.completed && !drop) b.outcome = decodeRuntimeEvent(out);
    if (drop) b.outcome.reset();
    if (add) b.outcome = decodeRuntimeEvent(out);
    try {
      store->commitToolRecoveryBundle(b);
      ADD_FAILURE() << "tampered bundle accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), c.code) << e.what();
    }
    EXPECT_EQ(store->ledgerHash(), ledger) << "a refused bundle leaves no trace";
  }
  EXPECT_EQ(decision().status, code::indeterminate);
  // The untampered bundle still commits.
  EXPECT_TRUE(store->commitToolRecoveryBundle(goodCompleted).created);
  EXPECT_EQ(decision().reason, code::recovery_bundle_completed);
}

TEST(FileRecoveryModeTest, RecoveryModeUnsupportedForANeverAutoRetryOperation) {
  Box box;
  const WorkspaceIdentity ws = ensureWorkspaceIdentity(box.ws());
  auto store = RuntimeStore::open(box.store());
  const RunIdentity id{"s", "inv", "run", "turn"};
  RunHeader h;
  h.sessionId = id.sessionId;
  h.runId = id.runId;
  h.invocationId = id.invocationId;
  h.turnId = id.turnId;
  h.status = "running";
  h.createdAt = h.updatedAt = 1;
  store->createRun(h);
  store->append(agent_events::userEvent(id, 2, "go", true));
  const ToolCallRequest req{"c1", "Bash", Json{{"command", "true"}}};
  const std::string op = deriveOperationId(id.invocationId, req.callId);
  const RuntimeEvent call = agent_events::callEvent(id, op, 3, req);
  const std::string hash = canonicalArgsHash("Bash", req.args);
  const RuntimeEvent dispatch =
      agent_events::dispatchEvent(id, op, 4, req, hash, "never_auto_retry", std::nullopt);
  store->commitToolPrepared(ToolPrepared{op, op + "_prepared", call, dispatch, "c1", "Bash", hash,
                                         "never_auto_retry", 4});
  FileObservation o;
  o.observation = "unreadable";
  o.observedIdentity = Json{{"unreadable", "x"}};
  try {
    store->commitToolRecoveryBundle(buildFileRecoveryBundle(call, dispatch, o, 10));
    ADD_FAILURE() << "bundle for a never_auto_retry operation accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code::recovery_mode_unsupported);
  }
}

// --- afterCrash scenario field ------------------------------------------------------------------

TEST(AfterCrashScenarioTest, ParsesAppliesAndChecksTheMutations) {
  const Scenario s = loadScenario(kScenarioDir / "symlink-swap.json");
  ASSERT_TRUE(s.afterCrash);
  EXPECT_EQ(s.afterCrash->parkedReason, "reconcile_unreadable");
  EXPECT_TRUE(crashsim::harness::workspace::afterCrashApplies(s, "P4"));
  EXPECT_FALSE(crashsim::harness::workspace::afterCrashApplies(s, "P6"));
  Box box;
  seedWorkspace(s, box.ws());
  EXPECT_FALSE(crashsim::harness::workspace::afterCrashProblems(s, box.ws()).empty());
  crashsim::harness::workspace::applyAfterCrash(s, box.ws());
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(box.ws() / "config.json")));
  EXPECT_TRUE(crashsim::harness::workspace::afterCrashProblems(s, box.ws()).empty());
  writeFile(box.ws() / ".config.json.toolop_0123abcd.tmp", "x");
  EXPECT_EQ(crashsim::harness::workspace::afterCrashProblems(s, box.ws()).size(), 1u);
}

TEST(AfterCrashScenarioTest, WriteAndDeleteMutations) {
  Box box;
  const Scenario w = loadScenario(kScenarioDir / "external-edit-diverged.json");
  seedWorkspace(w, box.ws());
  crashsim::harness::workspace::applyAfterCrash(w, box.ws());
  EXPECT_EQ(readFile(box.ws() / "config.json"), w.afterCrash->mutations[0].content);
  const Scenario d = loadScenario(kScenarioDir / "target-deleted.json");
  seedWorkspace(d, box.ws());
  crashsim::harness::workspace::applyAfterCrash(d, box.ws());
  EXPECT_FALSE(fs::exists(box.ws() / "notes.txt"));
  EXPECT_TRUE(crashsim::harness::workspace::afterCrashProblems(d, box.ws()).empty());
}

TEST(AfterCrashScenarioTest, StrictParserRejectsMalformedBlocks) {
  const Json base = Json::parse(readFile(kScenarioDir / "target-deleted.json"));
  const std::vector<std::pair<std::string, std::function<void(Json&)>>> bad = {
      {"$.afterCrash.bogus", [](Json& a) { a["bogus"] = 1; }},
      {"$.afterCrash.failpoints[0]", [](Json& a) { a["failpoints"][0] = "P12"; }},
      {"$.afterCrash.mutations[0].op", [](Json& a) { a["mutations"][0]["op"] = "chmod"; }},
      {"$.afterCrash.mutations[0].path", [](Json& a) { a["mutations"][0]["path"] = "../x"; }},
      {"$.afterCrash.mutations[0].path",
       [](Json& a) { a["mutations"][0]["path"] = ".maka-workspace.json"; }},
      {"$.afterCrash.mutations[0].content", [](Json& a) { a["mutations"][0]["content"] = "x"; }},
      {"$.afterCrash.expect.parkedReason",
       [](Json& a) { a["expect"]["parkedReason"] = "redo_disabled_pending_cas"; }},
      {"$.afterCrash.mutations", [](Json& a) { a["mutations"] = Json::array(); }},
  };
  for (const auto& [path, edit] : bad) {
    SCOPED_TRACE(path);
    Json v = base;
    edit(v["afterCrash"]);
    try {
      parseScenario(v, "t.json");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code::scenario_invalid);
      EXPECT_EQ(e.path(), path) << e.what();
    }
  }
}

}  // namespace
