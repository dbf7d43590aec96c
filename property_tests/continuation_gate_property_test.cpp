// continuation_gate_property_test.cpp — Phase 1 planner vs a small independent gate model
// (issue #8 item 5, the simplest gates; single-segment sources, no lineage yet).
//
// A random source run is written to a real SQLite store through the dedicated writers: an
// optional leading model text, an optional user message (with the t1 marker on event #1),
// tool operations that are settled (T1+T2, or a pre-T1 refusal appended generically),
// unsettled (T1 only), parked (T1 + parked recovery bundle) or not dispatched (a trailing
// call only), an optional permission request (closed or not), and a failed terminal (or
// none, header left running). The host facts are random too: feature flag, inspector
// present/absent/throwing, header workspace identity missing/same/different, background
// work, tool catalog with or without the used tools, checkpoint variants, expected
// high-water.
//
// The gate model (written from spec e.1, e.2, e.3 and e.6, sharing no code with the
// planner) predicts `continue` exactly when every gate passes, otherwise `park` with the
// same reason list in the contract's order. For every `continue` plan: provider replay starts
// at a user item, ends at a user or tool item, contains only paired calls, never repeats the
// user message, its digest recomputes identically; executing it twice never claims the
// boundary twice, and re-planning afterwards parks with continuation_started_indeterminate.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/store.h"
#include "ledger_gen.h"
#include "tool_operation_writer.h"

namespace crashsim {
namespace {

namespace fs = std::filesystem;

struct GateTempDir {
  fs::path path;
  GateTempDir() {
    static std::atomic<int> counter{0};
    std::error_code ec;
    const fs::path root =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    path = root /
           ("crashsim-prop-gate-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~GateTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

using propgen::kOtherWs;
using propgen::kWs;

using OpFate = propgen::ToolOpFate;  // the generator draws it by its value
constexpr int kOpFates = 5;
const char* opFateName(OpFate f) {
  static const char* n[] = {"settled_t2", "refused", "unsettled", "parked", "not_dispatched"};
  return n[static_cast<int>(f)];
}

struct GateOp {
  OpFate fate = OpFate::settled;
  int tool = 0;
};

struct GateCase {
  int head = 0;  // 0 user first, 1 model text then user, 2 no user message
  std::vector<GateOp> ops;
  int permission = 0;      // 0 none, 1 request closed by a decision, 2 request left open
  bool terminal = true;    // failed terminal + terminal header, else header stays running
  bool enabled = true;     // feature flag
  int inspector = 0;       // 0 present, 1 absent, 2 throws
  int headerIdentity = 0;  // 0 same as the workspace, 1 missing, 2 different
  bool backgroundSettled = true;
  std::vector<bool> toolAvailable;  // per propgen::toolNames()
  int checkpoint = 0;  // 0 none, 1 no ref, 2 ref not restored, 3 restored ok, 4 restored wrong hw
  int expectedHw = 0;  // 0 none, 1 correct, 2 wrong
};

void showValue(const GateCase& c, std::ostream& os) {
  os << "GateCase{head=" << c.head << " ops=[";
  for (const auto& o : c.ops)
    os << opFateName(o.fate) << ":" << propgen::toolNames()[o.tool] << " ";
  os << "] permission=" << c.permission << " terminal=" << c.terminal << " enabled=" << c.enabled
     << " inspector=" << c.inspector << " headerIdentity=" << c.headerIdentity
     << " backgroundSettled=" << c.backgroundSettled << " tools=[";
  for (bool b : c.toolAvailable) os << b;
  os << "] checkpoint=" << c.checkpoint << " expectedHw=" << c.expectedHw << "}";
}

rc::Gen<GateCase> genGateCase() {
  using propgen::uniform;
  auto mostly = [](bool common) {
    return rc::gen::weightedOneOf<bool>({{10, rc::gen::just(common)}, {1, rc::gen::just(!common)}});
  };
  return rc::gen::exec([mostly] {
    GateCase c;
    c.head = *rc::gen::weightedOneOf<int>(
        {{12, rc::gen::just(0)}, {1, rc::gen::just(1)}, {1, rc::gen::just(2)}});
    c.ops = *propgen::upTo<GateOp>(
        3, rc::gen::exec([] {
          GateOp o;
          o.fate = static_cast<OpFate>(*rc::gen::weightedOneOf<int>(
              {{6, rc::gen::just(0)}, {3, rc::gen::just(1)}, {1, uniform(2, kOpFates)}}));
          o.tool = *uniform(0, static_cast<int>(propgen::toolNames().size()));
          return o;
        }));
    c.permission = *rc::gen::weightedOneOf<int>(
        {{10, rc::gen::just(0)}, {2, rc::gen::just(1)}, {1, rc::gen::just(2)}});
    c.terminal = *mostly(true);
    c.enabled = *mostly(true);
    c.inspector = *rc::gen::weightedOneOf<int>(
        {{20, rc::gen::just(0)}, {1, rc::gen::just(1)}, {1, rc::gen::just(2)}});
    c.headerIdentity = *rc::gen::weightedOneOf<int>(
        {{20, rc::gen::just(0)}, {1, rc::gen::just(1)}, {1, rc::gen::just(2)}});
    c.backgroundSettled = *mostly(true);
    for (size_t k = 0; k < propgen::toolNames().size(); ++k)
      c.toolAvailable.push_back(
          *rc::gen::weightedOneOf<bool>({{30, rc::gen::just(true)}, {1, rc::gen::just(false)}}));
    c.checkpoint = *rc::gen::weightedOneOf<int>({{10, rc::gen::just(0)}, {2, uniform(1, 5)}});
    c.expectedHw = *rc::gen::weightedOneOf<int>({{10, uniform(0, 2)}, {1, rc::gen::just(2)}});
    return c;
  });
}

// ---------------------------------------------------------------------------------------
// The gate model (e.1 entry, e.2 steps 4 and 8, e.3 step 1/5, e.6 gates 1–12).

struct GatePlan {
  std::string decision;
  std::vector<std::string> reasons;
};

GatePlan gateModel(const GateCase& c, int64_t highWater) {
  auto park1 = [](const char* r) { return GatePlan{"park", {r}}; };
  // e.1 authoritative entry, in order; each parks with exactly one reason.
  if (!c.enabled) return park1("resume_feature_disabled");
  if (c.inspector == 1) return park1("safety_observation_unavailable");
  if (c.headerIdentity == 1) return park1("workspace_identity_missing");
  if (c.inspector == 2) return park1("safety_observation_unavailable");
  // e.2 step 4 / e.3 step 1: an indeterminate or parked operation makes the segment
  // unsettled, which the planner reports as runtime_ledger_unreadable.
  for (const auto& o : c.ops)
    if (o.fate == OpFate::unsettled || o.fate == OpFate::parked)
      return park1("runtime_ledger_unreadable");
  // e.6 gates, in order.
  GatePlan p;
  auto reason = [&](const char* r) { p.reasons.push_back(r); };
  if (c.permission == 2) reason("pending_permission");  // 1
  std::optional<int64_t> expected;                      // 2
  if (c.checkpoint != 0)
    expected = c.checkpoint == 4 ? highWater + 7 : highWater;
  else if (c.expectedHw == 1)
    expected = highWater;
  else if (c.expectedHw == 2)
    expected = highWater + 3;
  if (expected && *expected != highWater) reason("runtime_offset_mismatch");
  // 3, 4: one identity, fresh ids, a readable ledger (always, here)
  if (!c.terminal) reason("terminal_repair_failed");                 // 5
  if (c.headerIdentity == 2) reason("workspace_identity_mismatch");  // 7
  if (!c.backgroundSettled) reason("background_operation_pending");  // 8
  if (c.checkpoint == 1) reason("workspace_ref_missing");            // 9
  if (c.checkpoint == 2) reason("checkpoint_restore_failed");        // 9
  bool missingTool = false;                                          // 10
  for (const auto& o : c.ops) {
    // a trailing not-dispatched call is trimmed from the replay context (e.3 step 5)
    const bool inContext = o.fate == OpFate::settled || o.fate == OpFate::refused;
    if (inContext && !c.toolAvailable[static_cast<size_t>(o.tool)]) missingTool = true;
  }
  if (missingTool) reason("tool_catalog_mismatch");
  // 11, 12: provider items are [model text]? [user]? (call, result)* ; trimming keeps up to
  // the last user text or tool result (e.3 step 5).
  size_t settled = 0;
  for (const auto& o : c.ops) settled += o.fate == OpFate::settled || o.fate == OpFate::refused;
  const bool hasUser = c.head != 2;
  const bool anyStable = hasUser || settled > 0;
  const bool firstIsUser = c.head == 0;
  if (!anyStable || !firstIsUser) reason("provider_resume_head_unsupported");
  if (!anyStable) reason("provider_resume_boundary_unsupported");
  p.decision = p.reasons.empty() ? "continue" : "park";
  return p;
}

// ---------------------------------------------------------------------------------------
// Writing the source run.

struct Source {
  std::string session = "session-g", run = "run-g", invocation = "inv-g", turn = "turn-g";
  double ts = 1000;
  int64_t seq = 0;
  Json base(const std::string& id, const char* role, const char* author) {
    return Json{{"id", id},         {"sessionId", session}, {"invocationId", invocation},
                {"runId", run},     {"turnId", turn},       {"ts", ++ts},
                {"partial", false}, {"role", role},         {"author", author}};
  }
};

void writeSource(RuntimeStore& store, Source& s, const GateCase& c) {
  RunHeader h;
  h.sessionId = s.session;
  h.runId = s.run;
  h.invocationId = s.invocation;
  h.turnId = s.turn;
  h.status = "running";
  h.createdAt = h.updatedAt = 500;
  h.cwd = "/ws";
  if (c.headerIdentity == 0) h.workspaceIdentity = kWs;
  if (c.headerIdentity == 2) h.workspaceIdentity = kOtherWs;
  store.createRun(h);

  bool first = true;
  auto append = [&](Json e) {
    if (first) {
      if (!e.contains("actions")) e["actions"] = Json::object();
      e["actions"]["runtimeProtocol"] = Json{{"toolBoundary", "t1_after_preflight_v1"}};
      first = false;
    }
    RC_ASSERT(store.append(decodeRuntimeEvent(e)).created);
    ++s.seq;
  };
  if (c.head == 1) {
    Json m = s.base("model-0", "model", "agent");
    m["content"] = Json{{"kind", "text"}, {"text", "let me think first"}};
    append(m);
  }
  if (c.head != 2) {
    Json u = s.base("user-1", "user", "user");
    u["content"] = Json{{"kind", "text"}, {"text", "please do the task"}};
    append(u);
  } else {  // no user message: a system note (never a provider item) carries the marker
    Json t = s.base("sys-0", "system", "system");
    t["content"] = Json{{"kind", "text"}, {"text", "session restored"}};
    append(t);
  }
  if (c.permission != 0) {
    Json r = s.base("perm-request", "system", "system");
    r["actions"] = Json{{"permissionRequest", {{"requestId", "perm-1"}, {"toolName", "Bash"}}}};
    append(r);
    if (c.permission == 1) {
      Json d = s.base("perm-decision", "system", "system");
      d["actions"] = Json{{"permissionDecision", {{"requestId", "perm-1"}, {"decision", "allow"}}}};
      append(d);
    }
  }
  // Not-dispatched calls go last (a call committed while its permission was pending, then the
  // crash): they are trimmed from the replay suffix.
  std::vector<GateOp> ops = c.ops;
  std::stable_partition(ops.begin(), ops.end(),
                        [](const GateOp& o) { return o.fate != OpFate::not_dispatched; });
  int k = 0;
  for (const GateOp& o : ops) {
    propgen::writeToolOperation(store, s, append, ++k, static_cast<size_t>(o.tool), o.fate);
  }
  if (c.terminal) {
    Json t = s.base("terminal-1", "system", "system");
    t["status"] = "failed";
    t["content"] = Json{{"kind", "error"},
                        {"message", "interrupted"},
                        {"code", "app_restarted"},
                        {"reason", "app_restarted"}};
    t["actions"] = Json{{"endInvocation", true},
                        {"stateDelta",
                         {{"recovered", true},
                          {"recoveryReason", "run_interrupted"},
                          {"failureClass", "app_restarted"}}}};
    const RuntimeEvent te = decodeRuntimeEvent(t);
    RC_ASSERT(store.commitTerminalEvent(te).created);
    ++s.seq;
    h.status = "failed";
    h.updatedAt = te.ts;
    h.completedAt = te.ts;
    h.failureClass = "app_restarted";
    store.markRunTerminal(h);
  }
}

std::string roleOf(const Json& item) {
  const std::string type = item.at("type");
  if (type == "text") return item.at("role") == "user" ? "user" : "assistant";
  if (type == "tool_result") return "tool";
  return "assistant";
}

RC_GTEST_PROP(ContinuationGateProperties,
              PlannerAgreesWithGateModelAndContinuePlansAreWellFormedAndClaimedOnce, ()) {
  const GateCase c = *genGateCase();
  GateTempDir dir;
  auto store = RuntimeStore::open(dir.path);
  Source s;
  writeSource(*store, s, c);

  SafetyFacts facts;
  facts.workspaceIdentity = kWs;
  facts.workspacePath = "/ws";
  facts.backgroundOperationsSettled = c.backgroundSettled;
  for (size_t k = 0; k < propgen::toolNames().size(); ++k)
    if (c.toolAvailable[k]) facts.availableToolNames.push_back(propgen::toolNames()[k]);
  if (c.checkpoint != 0) {
    WorkspaceCheckpoint cp;
    if (c.checkpoint != 1) cp.ref = "refs/checkpoint-1";
    cp.restored = c.checkpoint >= 3;
    cp.runtimeEventHighWater = c.checkpoint == 4 ? s.seq + 7 : s.seq;
    facts.workspaceCheckpoint = cp;
  }
  int idCounter = 0;
  double clock = 100000;
  ContinuationHost host;
  host.enabled = c.enabled;
  host.currentCwd = "/ws";
  if (c.inspector == 0) host.inspector = [facts] { return facts; };
  if (c.inspector == 2)
    host.inspector = []() -> SafetyFacts { throw std::runtime_error("inspector down"); };
  host.newId = [&idCounter] { return "fresh-" + std::to_string(++idCounter); };
  host.now = [&clock] { return clock += 10; };
  std::optional<int64_t> expectedHw;
  if (c.expectedHw == 1) expectedHw = s.seq;
  if (c.expectedHw == 2) expectedHw = s.seq + 3;

  const std::string hashBefore = store->ledgerHash();
  const ContinuationPlan plan = planContinuation(*store, s.session, s.run, host, expectedHw);
  RC_ASSERT(store->ledgerHash() == hashBefore);  // planning is read-only
  const GatePlan m = gateModel(c, s.seq);
  RC_LOG() << "plan: " << plan.toJson().dump() << "\n";
  RC_TAG(m.decision, m.reasons.empty() ? std::string("-") : m.reasons.front());
  RC_ASSERT(plan.decision == m.decision);
  RC_ASSERT(plan.rejectionReasons == m.reasons);
  if (!plan.isContinue()) {
    RC_ASSERT(!plan.rejectionReasons.empty());
    RC_ASSERT(plan.invocationId.empty() && plan.claimId.empty());
    return;
  }
  // Determinism (j.7) with the same id allocator sequence.
  idCounter = 0;
  RC_ASSERT(planContinuation(*store, s.session, s.run, host, expectedHw).toJson() == plan.toJson());

  // Provider replay shape (e.3, e.6 gates 11/12).
  const Json& items = plan.providerItems;
  RC_ASSERT(!items.empty());
  RC_ASSERT(roleOf(items.front()) == "user");
  RC_ASSERT(roleOf(items.back()) == "user" || roleOf(items.back()) == "tool");
  std::map<std::string, size_t> callAt;
  size_t userTexts = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Json& it = items[k];
    if (it["type"] == "tool_call") callAt[it["toolCallId"].get<std::string>()] = k;
    if (it["type"] == "text" && it["role"] == "user") ++userTexts;
  }
  for (const auto& [id, at] : callAt) {
    bool answered = false;
    for (size_t k = at + 1; k < items.size(); ++k)
      answered |= items[k]["type"] == "tool_result" && items[k]["toolCallId"] == id;
    RC_ASSERT(answered);
  }
  for (const Json& it : items)
    if (it["type"] == "tool_result") RC_ASSERT(callAt.count(it["toolCallId"].get<std::string>()));
  RC_ASSERT(userTexts == 1u);  // the user message is replayed once, never repeated
  // Digests recompute identically from the stored prefix.
  RC_ASSERT(providerReplayDigest(items, plan.providerProjectionVersion) ==
            plan.providerReplayDigest);
  const ImmutablePrefix prefix =
      readImmutablePrefix(*store, PrefixIdentity{s.session, s.invocation, s.run, s.turn});
  RC_ASSERT(prefix.prefixDigest == plan.sourcePrefixDigest);
  RC_ASSERT(prefix.lastEventSeq == s.seq);
  const ImmutablePrefix* segs[] = {&prefix};
  const CompositeReplay again = buildCompositeReplay(segs);
  RC_ASSERT(again.replayable);
  RC_ASSERT(again.providerReplayDigest == plan.providerReplayDigest);
  RC_ASSERT(plan.boundary.has_value());
  RC_ASSERT(again.boundary.manifestDigest == plan.boundary->manifestDigest);

  // Two claims of one boundary never both succeed.
  const ContinuationExecution ex = executeContinuation(*store, plan, host);
  RC_ASSERT(ex.providerReplayDigest == plan.providerReplayDigest);
  bool secondSucceeded = true;
  try {
    executeContinuation(*store, plan, host);
  } catch (const Error&) {
    secondSucceeded = false;
  }
  RC_ASSERT(!secondSucceeded);
  RC_ASSERT(listClaims(*store).size() == 1u);
  // The boundary is now owned by a live (runtime_admission) start without a terminal.
  const ContinuationPlan after = planContinuation(*store, s.session, s.run, host, expectedHw);
  RC_ASSERT(after.decision == std::string("park"));
  RC_ASSERT(after.rejectionReasons ==
            std::vector<std::string>{"continuation_started_indeterminate"});
}

}  // namespace
}  // namespace crashsim
