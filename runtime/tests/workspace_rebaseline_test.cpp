// workspace_rebaseline_test — the durable rebaseline (workspace-continuity-contract.md g) with
// real git, real files and a real store: g.1's preconditions in order with nothing written on a
// refusal, g.2's facts (transition, epoch_opened with its confirmationId and readSet, the rebased
// checkpoint), the re-plan bound to the new epoch, g.3's notice text and ids (j.2 vector 8), g.4's
// gate as a function of the facts and the ledger. Expected values come from the contract: ids are
// recomputed here from b.3's byte rules, never read back from the code under test.
#include "crashsim/workspace_rebaseline.h"

#include <gtest/gtest.h>

#include <fstream>

#include "continuation_test_util.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/workspace_gates.h"
#include "workspace_run_fixture.h"

using namespace crashsim;
using namespace crashsim::testutil;
using namespace ctest;

namespace {

struct RebaselineFixture : WorkspaceRunFixture {
  RebaselineFixture() : WorkspaceRunFixture("session-rebase") {}
  CaptureResult first;

  // j.2 vector 4's first run, a checkpoint at p = 4, then the user edits the tracked a.txt (W8).
  void SetUp() override {
    WorkspaceRunFixture::SetUp();
    sourceRun();
    first = capture(4);
    writeFile(root / "a.txt", "edited by the user\n");
  }

  ContinuationHost host() {
    ContinuationHost ch = WorkspaceRunFixture::host("optional_legacy");
    ch.workspacePolicy.driftAction = "offer_rebaseline";
    return ch;
  }
  ContinuationPlan plan() { return planContinuation(*store, r.session, r.run, host()); }

  RebaselineRequest request(const ContinuationPlan& p) {
    RebaselineRequest q;
    q.storeDir = storeDir;
    q.instanceRoot = root;
    q.instanceIdentity = w.identity;
    q.canonicalRoot = root.string();
    q.confirmation = {r.session, p.boundary ? p.boundary->manifestDigest : ""};
    q.ts = 1700000001000;
    return q;
  }

  // Everything a refusal must leave as it was: the ledger, the carrier, the user's .git.
  struct Snapshot {
    std::string ledger;
    std::map<std::string, std::string> carrier, userGit;
    bool operator==(const Snapshot&) const = default;
  };
  Snapshot snapshot() {
    return Snapshot{store->ledgerHash(), treeBytes(storeDir / "workspace"),
                    treeBytes(root / ".git")};
  }
  void expectRefused(const ContinuationPlan& p, const RebaselineRequest& q, std::string_view code) {
    const Snapshot before = snapshot();
    try {
      rebaselineWorkspace(*store, git, p, q);
      ADD_FAILURE() << "no refusal, expected " << code;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
    }
    EXPECT_TRUE(snapshot() == before) << "a refused rebaseline wrote something (" << code << ")";
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string lp(std::string_view s) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((static_cast<uint64_t>(s.size()) >> shift) & 0xFF));
  out.append(s);
  return out;
}

}  // namespace

// b.3 / g.3 derived ids, from the byte rules (LP = u64be length || bytes; hex32 = the first 32 hex
// digits of SHA-256).
TEST(RebaselineVectors, ConfirmationAndNoticeIds) {
  const std::string digest = "sha256:" + std::string(64, '0');
  EXPECT_EQ(rebaselineConfirmationId("session-1", digest), "rbc_c09dc6f37f3245c73e04429bac7b62aa");
  EXPECT_EQ(rebaselineConfirmationId("session-1", digest),
            "rbc_" + sha256Hex(lp("crashsim.workspace.rebaseline-confirmation.v1") +
                               lp("session-1") + lp(digest))
                         .substr(0, 32));
  EXPECT_EQ(rebaselineNoticeId("wsp_077e3b1985c9e78d64a0e036e9a4c802:e2:opened", "run-2"),
            "workspace-notice-d29d7a7142bca857d0c50a35beb473d8");
}

// j.2 vector 8 (notice): paths ["a.txt","src/x y.c"] → the four lines, the last `Files: "a.txt",
// "src/x y.c"`; readSet all → three lines, the third the `all` wording; no final newline.
TEST(RebaselineVectors, NoticeText) {
  RebasedEpoch e;
  e.epoch = 2;
  e.paths = {"a.txt", "src/x y.c"};
  EXPECT_EQ(rebaselineNoticeText(e),
            "Workspace rebaselined to epoch 2.\n"
            "The files were accepted as they are now and may differ from what earlier messages "
            "show.\n"
            "Read each file listed below again before you write or edit it; shell commands stay "
            "blocked until all of them have been read.\n"
            "Files: \"a.txt\", \"src/x y.c\"");
  e.paths.clear();
  EXPECT_TRUE(rebaselineNoticeText(e).ends_with("\nFiles: none"));
  e.allPaths = true;
  EXPECT_EQ(rebaselineNoticeText(e),
            "Workspace rebaselined to epoch 2.\n"
            "The files were accepted as they are now and may differ from what earlier messages "
            "show.\n"
            "Read a file again before you write or edit it; shell commands stay blocked in this "
            "epoch.");
  RebasedEpoch n;
  n.epoch = 3;
  n.openedEventId = "wsp_x:e3:opened";
  const RuntimeEvent ev = rebaselineNoticeEvent(PrefixIdentity{"s", "inv", "run-9", "turn"}, n, 5);
  EXPECT_EQ(ev.id, rebaselineNoticeId("wsp_x:e3:opened", "run-9"));
  EXPECT_EQ(ev.json["role"], "user");
  EXPECT_EQ(ev.json["author"], "host");
  EXPECT_EQ(ev.json["content"]["steering"], true);
  EXPECT_EQ(ev.json["actions"],
            (Json{{"stateDelta", {{"workspaceRebaselineNotice", "wsp_x:e3:opened"}}}}));
}

// j.2 vector 8 (gate): readSet ["a.txt"]: Write a.txt → rebaseline_read_required; Bash →
// rebaseline_opaque_write_blocked; after a Read of a.txt both pass; Read and paths outside the
// readSet are never gated; readSet all gates every write until that path is read, Bash always.
TEST(RebaselineVectors, ReadBeforeWriteGate) {
  RebasedEpoch e;
  e.epoch = 2;
  e.paths = {"a.txt"};
  auto g = rebaselineGate(e, {}, "Write", "a.txt");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->code, code::rebaseline_read_required);
  EXPECT_EQ(g->message, "read \"a.txt\" again before writing it (workspace epoch 2)");
  EXPECT_EQ(g->result(), (Json{{"error",
                                {{"code", "rebaseline_read_required"},
                                 {"message",
                                  "read \"a.txt\" again before writing it (workspace "
                                  "epoch 2)"}}}}));
  g = rebaselineGate(e, {}, "Bash", std::nullopt);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->code, code::rebaseline_opaque_write_blocked);
  EXPECT_EQ(g->message,
            "Bash is blocked until the rebaselined files are read again (workspace epoch 2)");
  EXPECT_FALSE(rebaselineGate(e, {}, "Read", "a.txt"));
  EXPECT_FALSE(rebaselineGate(e, {}, "Edit", "b.txt"));
  EXPECT_TRUE(rebaselineGate(e, {}, "Edit", "a.txt"));
  EXPECT_FALSE(rebaselineGate(e, {"a.txt"}, "Write", "a.txt"));
  EXPECT_FALSE(rebaselineGate(e, {"a.txt"}, "Bash", std::nullopt));
  e.paths.clear();
  e.allPaths = true;
  EXPECT_TRUE(rebaselineGate(e, {}, "Write", "z.txt"));
  EXPECT_FALSE(rebaselineGate(e, {"z.txt"}, "Write", "z.txt"));
  EXPECT_TRUE(rebaselineGate(e, {"z.txt"}, "Bash", std::nullopt));
  EXPECT_EQ(rebaselineCanonicalPath("/ws", "/ws/src/../a.txt"), "a.txt");
  EXPECT_EQ(rebaselineCanonicalPath("/ws", "./src//x.c"), "src/x.c");
}

// g.1 in order, each refusal with its code and nothing written (B0): a confirmation of another
// digest or session; a busy session (a running run); a reason a rebaseline cannot clear; another
// instance; an ineligible instance (a conversion attribute).
TEST_F(RebaselineFixture, PreconditionsRefuseInOrderAndWriteNothing) {
  const ContinuationPlan p = plan();
  ASSERT_FALSE(p.isContinue());
  ASSERT_EQ(p.rejectionReasons, std::vector<std::string>{std::string(code::workspace_drifted)});
  ASSERT_TRUE(p.boundary);
  EXPECT_EQ(p.toJson()["boundaryManifestDigest"], p.boundary->manifestDigest);
  RebaselineRequest q = request(p);
  q.confirmation.boundaryManifestDigest = "sha256:" + std::string(64, '1');
  expectRefused(p, q, code::rebaseline_confirmation_required);
  q = request(p);
  q.confirmation.sessionId = "session-other";
  expectRefused(p, q, code::rebaseline_confirmation_required);
  // 4 before 5 and 6: a reason outside the set.
  ContinuationPlan other = p;
  other.rejectionReasons.push_back(std::string(code::pending_permission));
  q = request(p);
  q.instanceIdentity = "workspace:v1:00000000-0000-4000-8000-000000000000";
  expectRefused(other, q, code::rebaseline_not_applicable);
  // 5: another instance.
  expectRefused(p, q, code::workspace_identity_mismatch);
  // 6: a conversion attribute makes the instance ineligible (c.4 #8).
  writeFile(root / ".gitattributes", "*.bin filter=lfs -text\n");
  writeFile(root / "x.bin", "binary\n");
  expectRefused(p, request(p), code::checkpoint_policy_unsupported);
  fs::remove(root / ".gitattributes");
  fs::remove(root / "x.bin");
  // 2 (before 3–6): a run of the session that is not terminal.
  RunIds busy = ids(r.session, "run-busy");
  RunHeader bh = header(busy, 900, root.string());
  bh.workspaceIdentity = w.identity;
  store->createRun(bh);
  expectRefused(other, request(p), code::workspace_transition_busy);
}

// g.2 B1–B6: the transition 1→2 (user_rebaseline, the epoch's instance both sides, Sn, source =
// the newest checkpoint of epoch 1), epoch 2 opened with the confirmationId and readSet
// {paths:["a.txt"]} (diff-tree M), the rebased checkpoint covering Sn at its high-water, derived
// from that checkpoint; the user's .git and files untouched; the re-plan continues bound to
// epoch 2; the same confirmation again is an exact retry (no epoch 3).
TEST_F(RebaselineFixture, ConfirmedRebaselineOpensTheNextEpochAndThePlanBindsIt) {
  const ContinuationPlan p = plan();
  ASSERT_TRUE(p.boundary);
  const auto userGit = treeBytes(root / ".git");
  const RebaselineResult res = rebaselineWorkspace(*store, git, p, request(p));
  EXPECT_TRUE(res.created);
  EXPECT_EQ(res.epoch, 2);
  const std::string ws = workspaceIdForSession(r.session);
  const std::string confirmationId =
      "rbc_" + sha256Hex(lp("crashsim.workspace.rebaseline-confirmation.v1") + lp(r.session) +
                         lp(p.boundary->manifestDigest))
                   .substr(0, 32);
  EXPECT_EQ(res.confirmationId, confirmationId);
  EXPECT_EQ(res.readSet, (Json{{"kind", "paths"}, {"paths", {"a.txt"}}}));
  const Json sn = p.boundary->segments.back();
  EXPECT_EQ(sn["position"]["lastEventSeq"], 6);
  EXPECT_EQ(res.checkpoint.kind, "rebased");
  EXPECT_EQ(res.checkpoint.checkpointId, checkpointIdFor(ws, 2, "rebased", sn));
  EXPECT_EQ(res.checkpoint.derivedFrom, first.checkpoint.checkpointId);
  const auto epochs = listWorkspaceEpochs(*store);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(epochs[1].openedReason, "user_rebaseline");
  EXPECT_EQ(epochs[1].instanceIdentity, w.identity);
  EXPECT_EQ(Json::parse(epochs[1].readSetJson), res.readSet);
  EXPECT_TRUE(epochs[0].sealedByEventId.has_value());
  const auto transitions = listWorkspaceTransitions(*store);
  ASSERT_EQ(transitions.size(), 1u);
  EXPECT_EQ(transitions[0].reason, "user_rebaseline");
  EXPECT_EQ(transitions[0].fromInstance, w.identity);
  EXPECT_EQ(transitions[0].toInstance, w.identity);
  EXPECT_EQ(transitions[0].sourceCheckpointId, first.checkpoint.checkpointId);
  EXPECT_EQ(treeBytes(root / ".git"), userGit);
  EXPECT_EQ(slurp(root / "a.txt"), "edited by the user\n");
  store->checkIntact();
  // The continuation binds the new epoch and its rebased checkpoint (match).
  const ContinuationPlan again = plan();
  ASSERT_TRUE(again.isContinue()) << again.toJson().dump();
  EXPECT_EQ(again.toJson()["safetySnapshot"]["workspaceBoundary"]["epoch"], 2);
  EXPECT_EQ(again.toJson()["safetySnapshot"]["workspaceBoundary"]["checkpointId"],
            res.checkpoint.checkpointId);
  // The same confirmation once more: an exact retry, nothing written, no epoch 3.
  const std::string ledger = store->ledgerHash();
  const RebaselineResult retry = rebaselineWorkspace(*store, git, p, request(p));
  EXPECT_FALSE(retry.created);
  EXPECT_EQ(retry.epoch, 2);
  EXPECT_EQ(retry.checkpoint.checkpointId, res.checkpoint.checkpointId);
  EXPECT_EQ(store->ledgerHash(), ledger);
  EXPECT_EQ(listWorkspaceEpochs(*store).size(), 2u);
}

// g.4 "p was read": a Read of a.txt, completed and not an error, in a run whose header is bound
// to the epoch; a Read in a run bound to another epoch does not count.
TEST_F(RebaselineFixture, ReadPathsComeFromRunsBoundToTheEpoch) {
  const ContinuationPlan p = plan();
  const RebaselineResult res = rebaselineWorkspace(*store, git, p, request(p));
  const std::string ws = workspaceIdForSession(r.session);
  const auto bound = [&](const std::string& run, int64_t epoch) {
    RunIds x = ids(r.session, run);
    RunHeader hx = header(x, 1000 + epoch, root.string());
    hx.workspaceIdentity = w.identity;
    hx.workspaceBoundary = Json{{"protocol", "crashsim_workspace_binding_v1"},
                                {"workspaceId", ws},
                                {"epoch", epoch},
                                {"checkpointId", res.checkpoint.checkpointId}};
    store->createRun(hx);
    store->append(x.user("read it", true));
    Call c;
    c.id = Ident{x.session, x.invocation, x.run, x.turn};
    c.tool = "Read";
    c.args = Json{{"path", "a.txt"}};
    c.mode = "replay_safe";
    store->commitToolPrepared(t1(c));
    store->commitToolOutcome(t2(c));
    finishFailed(*store, x, hx);
  };
  RunHeader hdr = header(ids(r.session, "probe"), 1, root.string());
  hdr.workspaceBoundary = Json{{"epoch", 2}};
  const std::optional<RebasedEpoch> e = rebasedEpochOf(*store, hdr);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->paths, std::vector<std::string>{"a.txt"});
  EXPECT_EQ(e->openedEventId, res.epochOpenedEventId);
  bound("run-epoch1", 1);
  EXPECT_TRUE(rebaselineReadPaths(*store, r.session, *e).empty());
  EXPECT_TRUE(rebaselineGate(*e, rebaselineReadPaths(*store, r.session, *e), "Write", "a.txt"));
  bound("run-epoch2", 2);
  EXPECT_EQ(rebaselineReadPaths(*store, r.session, *e), std::set<std::string>{"a.txt"});
  EXPECT_FALSE(rebaselineGate(*e, rebaselineReadPaths(*store, r.session, *e), "Write", "a.txt"));
  hdr.workspaceBoundary = Json{{"epoch", 1}};
  EXPECT_FALSE(rebasedEpochOf(*store, hdr));  // epoch 1 was opened by first_checkpoint
}
