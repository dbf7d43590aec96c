// workspace_facts_test — workspace continuity facts (workspace-continuity-contract.md b, j.2
// vectors 1, 2 and 6): derived identifiers, the one writer and its ordered checks, the b.7
// scanner and projection rebuild. Expected values are the contract's, never a run's.
#include "crashsim/workspace_facts.h"

#include <gtest/gtest.h>

#include "crashsim/continuation.h"
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

const std::string kInstance = "workspace:v1:0b7e6f3e-1c1d-4e5f-8a9b-0c1d2e3f4a5b";
const std::string kRestoredInstance = "workspace:v1:1c8f7a4f-2d2e-4f6a-9bac-1d2e3f4a5b6c";

// j.2 vector 2's boundary: RC e.7's one-event segment.
Json legacySegment() {
  return Json{
      {"protocol", "runtime_prefix_segment_v1"},
      {"identity",
       {{"sessionId", "session-1"},
        {"invocationId", "invocation-run-legacy"},
        {"runId", "run-legacy"},
        {"turnId", "turn-run-legacy"}}},
      {"position", {{"lastEventSeq", 1}, {"eventCount", 1}, {"lastEventId", "event-legacy"}}},
      {"prefixDigest", "sha256:d4c8211024788a3fd7554a644f6983f6af088eeb050404f507c76a519080d7ca"}};
}

std::string writerCode(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return "(no error)";
}

// A store with one completed run of session-1 (user, text, terminal) to cover.
class WorkspaceWriterTest : public ::testing::Test {
 protected:
  TempDir dir;
  std::unique_ptr<RuntimeStore> store = RuntimeStore::open(dir.path);
  Ident id;
  std::string ws = workspaceIdForSession("session-1");

  void SetUp() override {
    store->createRun(header(id));
    store->append(userEvent(id));
    store->append(textEvent(id, "text-1", 1100));
    store->commitTerminalEvent(terminalEvent(id, "term-1", 1200));
    RunHeader done = header(id, "completed", 1200);
    done.completedAt = 1200;
    store->markRunTerminal(done);
  }

  Json segment(int64_t p) {
    return readImmutablePrefix(*store, {id.session, id.invocation, id.run, id.turn}, p)
        .segmentJson();
  }

  CheckpointFact checkpoint(int64_t epoch, const std::string& kind, int64_t p,
                            const std::string& instance = kInstance,
                            const std::string& tree = std::string(40, 'a')) {
    CheckpointFact c;
    c.workspaceId = ws;
    c.epoch = epoch;
    c.kind = kind;
    c.instanceIdentity = instance;
    c.coveredBoundary = segment(p);
    c.checkpointId = checkpointIdFor(ws, epoch, kind, c.coveredBoundary);
    c.carrier = {std::string(40, 'c'), tree, checkpointRefName(ws, epoch, c.checkpointId), "2.39.5",
                 "sha256:" + std::string(64, 'b')};
    c.policyHash = snapshotPolicyHash(c.limits);
    c.fileCount = 4;
    c.totalBytes = 28;
    return c;
  }

  EpochOpenedFact opened(int64_t epoch, const std::string& reason,
                         const std::string& instance = kInstance,
                         const std::string& origin = "user") {
    EpochOpenedFact o;
    o.workspaceId = ws;
    o.sessionId = "session-1";
    o.epoch = epoch;
    o.instance = {instance, "/home/user/project", origin};
    o.reason = reason;
    if (epoch > 1) o.transitionEventId = ws + ":e" + std::to_string(epoch - 1) + ":transition";
    if (reason == "user_rebaseline") {
      o.confirmationId = "rbc_" + std::string(32, 'd');
      o.readSet = Json{{"kind", "all"}};
    }
    return o;
  }

  std::vector<RuntimeEvent> events(const std::vector<WorkspaceFact>& facts, double ts = 5000) {
    std::vector<RuntimeEvent> out;
    for (const auto& f : facts) out.push_back(workspaceFactEvent(f, ts));
    return out;
  }

  std::vector<RuntimeEvent> openShape() {
    return events({opened(1, "first_checkpoint"), checkpoint(1, "captured", 1)});
  }

  // Transition 1 → 2 by isolated restore of epoch 1's checkpoint covering row 1.
  std::vector<RuntimeEvent> restoreShape(const std::string& toInstance = kRestoredInstance) {
    const CheckpointFact source = checkpoint(1, "captured", 1);
    TransitionFact t{ws,        1,          2,          "isolated_restore",
                     kInstance, toInstance, segment(3), source.checkpointId};
    CheckpointFact r = checkpoint(2, "restored", 3, toInstance);
    r.carrier.commitOid = source.carrier.commitOid;
    r.carrier.treeOid = source.carrier.treeOid;
    r.derivedFrom = source.checkpointId;
    return events({t, opened(2, "isolated_restore", toInstance, "restored"), r});
  }

  void expectProjectionsEqualRebuild() {
    const auto epochs = listWorkspaceEpochs(*store);
    const auto checkpoints = listWorkspaceCheckpoints(*store);
    const auto transitions = listWorkspaceTransitions(*store);
    EXPECT_NO_THROW(store->checkIntact());
    rebuildWorkspaceProjections(*store);
    EXPECT_EQ(listWorkspaceEpochs(*store), epochs);
    EXPECT_EQ(listWorkspaceCheckpoints(*store), checkpoints);
    EXPECT_EQ(listWorkspaceTransitions(*store), transitions);
    store.reset();
    store = RuntimeStore::open(dir.path);
    EXPECT_EQ(listWorkspaceCheckpoints(*store), checkpoints);
  }
};

}  // namespace

// j.2 vector 1.
TEST(WorkspaceFactVectors, WorkspaceIdAndDefaultPolicyHash) {
  EXPECT_EQ(workspaceIdForSession("session-1"), "wsp_077e3b1985c9e78d64a0e036e9a4c802");
  EXPECT_EQ(
      stableJson(snapshotPolicyObject({})),
      R"({"attributes":"reject_conversion_v1","content":"exact_bytes_no_filters_v1","entryModes":["100644","100755","120000","160000"],"limits":{"captureTimeoutMs":5000,"maxFileBytes":33554432,"maxFiles":50000,"maxTotalBytes":268435456},"paths":"ls_files_cached_others_exclude_standard_v1","submodules":"clean_gitlink_only_v1","version":1})");
  EXPECT_EQ(snapshotPolicyHash({}),
            "sha256:c50c1a58105ca601bdaf2e049f4471ba0583bc8fdc14fe984d476bd1605110b2");
}

// j.2 vector 2.
TEST(WorkspaceFactVectors, CheckpointIdsAndRefName) {
  const std::string ws = workspaceIdForSession("session-1");
  EXPECT_EQ(checkpointIdFor(ws, 1, "captured", legacySegment()),
            "ckpt_3462b1cde1cb8452d9a0ad87bc8ba6c2");
  EXPECT_EQ(checkpointRefName(ws, 1, "ckpt_3462b1cde1cb8452d9a0ad87bc8ba6c2"),
            "refs/crashsim/checkpoints/077e3b1985c9e78d64a0e036e9a4c802/1/"
            "3462b1cde1cb8452d9a0ad87bc8ba6c2");
  EXPECT_EQ(checkpointIdFor(ws, 2, "rebased", legacySegment()),
            "ckpt_15d947348012158bac13468399b6fa5d");
  const PrefixIdentity spine = workspaceSpine(ws, 3);
  EXPECT_EQ(spine.invocationId, "workspace_inv_077e3b1985c9e78d64a0e036e9a4c802_3");
  EXPECT_EQ(spine.sessionId, "maka_workspace_authority");
}

TEST_F(WorkspaceWriterTest, OpenAppendExactRetryAndProjectionsEqualTheirRebuild) {
  auto open = openShape();
  auto r = commitWorkspaceFacts(*store, open);
  EXPECT_TRUE(r.created);
  EXPECT_EQ(r.eventIds, (std::vector<std::string>{ws + ":e1:opened", open[1].id}));
  // j.2 vector 6: the same write twice → {created:false}, nothing written.
  const std::string before = store->ledgerHash();
  EXPECT_FALSE(commitWorkspaceFacts(*store, open).created);
  EXPECT_EQ(store->ledgerHash(), before);
  EXPECT_TRUE(commitWorkspaceFacts(*store, events({checkpoint(1, "captured", 3)})).created);
  const auto rows = listWorkspaceCheckpoints(*store);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].coveredEventSeq, 3);
  EXPECT_EQ(rows[1].refName, checkpointRefName(ws, 1, rows[1].checkpointId));
  EXPECT_TRUE(commitWorkspaceFacts(*store, restoreShape()).created);
  const auto epochs = listWorkspaceEpochs(*store);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[0].sealedByEventId, ws + ":e1:transition");
  EXPECT_EQ(epochs[1].instanceOrigin, "restored");
  expectProjectionsEqualRebuild();
}

// j.2 vector 6, one ordered check each.
TEST_F(WorkspaceWriterTest, SameCheckpointOtherTreeIsAFactConflict) {
  commitWorkspaceFacts(*store, openShape());
  commitWorkspaceFacts(*store, events({checkpoint(1, "captured", 3)}));
  EXPECT_EQ(writerCode([&] {
              commitWorkspaceFacts(
                  *store, events({checkpoint(1, "captured", 3, kInstance, std::string(40, 'e'))}));
            }),
            "workspace_fact_conflict");
}

TEST_F(WorkspaceWriterTest, SecondTransitionFromEpochOneIsAnEpochConflict) {
  commitWorkspaceFacts(*store, openShape());
  commitWorkspaceFacts(*store, restoreShape());
  EXPECT_EQ(writerCode([&] {
              commitWorkspaceFacts(
                  *store, restoreShape("workspace:v1:2d9a8b5a-3e3f-4a7b-8cbd-2e3f4a5b6c7d"));
            }),
            "workspace_epoch_conflict");
  // A second open is one too.
  EXPECT_EQ(writerCode([&] {
              commitWorkspaceFacts(
                  *store, events({opened(1, "first_checkpoint"), checkpoint(1, "captured", 2)}));
            }),
            "workspace_epoch_conflict");
}

TEST_F(WorkspaceWriterTest, AppendIntoASealedEpochIsRefused) {
  commitWorkspaceFacts(*store, openShape());
  commitWorkspaceFacts(*store, restoreShape());
  EXPECT_EQ(
      writerCode([&] { commitWorkspaceFacts(*store, events({checkpoint(1, "captured", 2)})); }),
      "workspace_epoch_sealed");
}

TEST_F(WorkspaceWriterTest, WrongPrefixDigestIsABoundaryMismatch) {
  commitWorkspaceFacts(*store, openShape());
  CheckpointFact c = checkpoint(1, "captured", 2);
  c.coveredBoundary["prefixDigest"] = "sha256:" + std::string(64, 'f');
  c.checkpointId = checkpointIdFor(ws, 1, "captured", c.coveredBoundary);  // derived, yet false
  c.carrier.refName = checkpointRefName(ws, 1, c.checkpointId);
  EXPECT_EQ(writerCode([&] { commitWorkspaceFacts(*store, events({c})); }),
            "workspace_boundary_mismatch");
  // A boundary past the run's rows, too.
  CheckpointFact far = checkpoint(1, "captured", 3);
  far.coveredBoundary["position"]["lastEventSeq"] = 9;
  far.coveredBoundary["position"]["eventCount"] = 9;
  far.checkpointId = checkpointIdFor(ws, 1, "captured", far.coveredBoundary);
  far.carrier.refName = checkpointRefName(ws, 1, far.checkpointId);
  EXPECT_EQ(writerCode([&] { commitWorkspaceFacts(*store, events({far})); }),
            "workspace_boundary_mismatch");
}

TEST_F(WorkspaceWriterTest, TransitionDuringAnOpenRunOrUnfinishedClaimIsBusy) {
  commitWorkspaceFacts(*store, openShape());
  // An unfinished claim: its target run has no terminal fact.
  Ident target{"session-1", "inv-2", "run-2", "turn-2"};
  rawSql(dir.db(),
         "INSERT INTO runtime_continuation_claims (claim_id, source_session_id, "
         "source_invocation_id, source_run_id, source_turn_id, source_event_high_water, "
         "source_prefix_digest, boundary_digest, boundary_json, provider_projection_version, "
         "provider_replay_digest, target_session_id, target_invocation_id, target_run_id, "
         "target_turn_id, target_run_header_json, claimed_at, start_event_id, start_kind, "
         "protocol_version) VALUES ('claim-1', 'session-1', 'invocation-1', 'run-1', 'turn-1', "
         "3, " +
             sqlQuote(digestOf("p")) + ", " + sqlQuote(digestOf("m")) + ", '{}', 1, " +
             sqlQuote(digestOf("r")) +
             ", 'session-1', 'inv-2', 'run-2', 'turn-2', '{}', 6000, "
             "NULL, NULL, 1)");
  EXPECT_EQ(writerCode([&] { commitWorkspaceFacts(*store, restoreShape()); }),
            "workspace_transition_busy");
  rawSql(dir.db(), "DELETE FROM runtime_continuation_claims");
  store->createRun(header(target));  // running
  EXPECT_EQ(writerCode([&] { commitWorkspaceFacts(*store, restoreShape()); }),
            "workspace_transition_busy");
  // An append needs no quiescence (a live run captures).
  EXPECT_TRUE(commitWorkspaceFacts(*store, events({checkpoint(1, "captured", 2)})).created);
}

// b.5 step 1: bad input is refused with workspace_fact_invalid, one line naming the problem.
TEST_F(WorkspaceWriterTest, MalformedOrUnderivedFactsAreInvalid) {
  // An extra key in a payload.
  Json j = openShape()[1].json;
  j["actions"]["workspaceFact"]["payload"]["note"] = "x";
  EXPECT_EQ(writerCode([&] {
              commitWorkspaceFacts(*store, {openShape()[0], decodeRuntimeEvent(j)});
            }),
            "workspace_fact_invalid");
  // A checkpoint id the caller made up.
  CheckpointFact c = checkpoint(1, "captured", 1);
  c.checkpointId = "ckpt_" + std::string(32, '0');
  c.carrier.refName = checkpointRefName(ws, 1, c.checkpointId);
  EXPECT_EQ(writerCode([&] {
              commitWorkspaceFacts(*store, events({opened(1, "first_checkpoint"), c}));
            }),
            "workspace_fact_invalid");
  // A policy hash that is not the limits' hash.
  CheckpointFact p = checkpoint(1, "captured", 1);
  p.limits.maxFiles = 7;
  EXPECT_EQ(writerCode([&] {
              commitWorkspaceFacts(*store, events({opened(1, "first_checkpoint"), p}));
            }),
            "workspace_fact_invalid");
  // No shape: a lone epoch_opened.
  EXPECT_EQ(
      writerCode([&] { commitWorkspaceFacts(*store, events({opened(1, "first_checkpoint")})); }),
      "workspace_fact_invalid");
  // An append before any epoch: the current epoch is none.
  EXPECT_EQ(
      writerCode([&] { commitWorkspaceFacts(*store, events({checkpoint(1, "captured", 1)})); }),
      "workspace_epoch_conflict");
  EXPECT_TRUE(listWorkspaceEpochs(*store).empty());
}

// b.5: every other writer refuses workspace facts and the authority session.
TEST_F(WorkspaceWriterTest, OtherWritersRefuseTheAuthorityStream) {
  const auto open = openShape();
  EXPECT_EQ(writerCode([&] { store->append(open[0]); }), "reserved_workspace_fact");
  Ident authority{"maka_workspace_authority", "inv-a", "run-a", "turn-a"};
  EXPECT_EQ(writerCode([&] { store->append(textEvent(authority, "a-1", 1)); }),
            "reserved_workspace_fact");
  EXPECT_EQ(writerCode([&] { store->createRun(header(authority)); }), "reserved_workspace_fact");
  EXPECT_EQ(writerCode([&] { store->commitTerminalEvent(terminalEvent(authority, "a-t", 2)); }),
            "reserved_workspace_fact");
}

// b.7: a spine row moved by hand (planted) makes the lineage corrupt for the scanner, the
// rebuild (nothing changed) and the writer.
TEST_F(WorkspaceWriterTest, DamagedSpineIsCorruptForScanRebuildAndWriter) {
  commitWorkspaceFacts(*store, openShape());
  EXPECT_EQ(scanWorkspaceLineage(*store), "");
  const auto before = listWorkspaceCheckpoints(*store);
  rawSql(dir.db(),
         "UPDATE runtime_events SET event_seq = 5 WHERE event_id = " + sqlQuote(openShape()[1].id));
  EXPECT_EQ(scanWorkspaceLineage(*store).rfind("workspace_spine_conflict", 0), 0u)
      << scanWorkspaceLineage(*store);
  EXPECT_EQ(writerCode([&] { rebuildWorkspaceProjections(*store); }), "workspace_fact_corruption");
  EXPECT_EQ(listWorkspaceCheckpoints(*store), before);
  EXPECT_EQ(
      writerCode([&] { commitWorkspaceFacts(*store, events({checkpoint(1, "captured", 2)})); }),
      "workspace_fact_corruption");
}

// b.7: a transition row deleted from the ledger leaves epoch 2 without its transition.
TEST_F(WorkspaceWriterTest, EpochWithoutItsTransitionIsAGap) {
  commitWorkspaceFacts(*store, openShape());
  commitWorkspaceFacts(*store, restoreShape());
  rawSql(dir.db(), "PRAGMA foreign_keys = OFF; DELETE FROM runtime_events WHERE event_id = " +
                       sqlQuote(ws + ":e1:transition"));
  EXPECT_EQ(scanWorkspaceLineage(*store).rfind("workspace_epoch_gap", 0), 0u)
      << scanWorkspaceLineage(*store);
}

// b.7 / checkIntact: a projection row lost by hand differs from the facts; the rebuild restores.
TEST_F(WorkspaceWriterTest, LostProjectionRowIsAMismatchUntilRebuilt) {
  commitWorkspaceFacts(*store, openShape());
  const auto rows = listWorkspaceCheckpoints(*store);
  rawSql(dir.db(), "DELETE FROM runtime_workspace_checkpoints");
  EXPECT_EQ(writerCode([&] { store->checkIntact(); }), "store_projection_mismatch");
  EXPECT_EQ(rebuildWorkspaceProjections(*store), 1u);
  EXPECT_EQ(listWorkspaceCheckpoints(*store), rows);
  EXPECT_NO_THROW(store->checkIntact());
}
