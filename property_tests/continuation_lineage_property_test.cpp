// continuation_lineage_property_test.cpp — Phase 1 planner vs an independent gate model over
// continuation LINEAGES (issue #8 item 5: lineage chains of random depth including cycles and
// digest tampering, existing-claim classification, two claims of one boundary).
//
// A random chain of runs is written to a real SQLite store: a root run, then children linked
// either by a real continuation (planContinuation + executeContinuation: claim, target header,
// continuation-start through the dedicated writer, so a V2 edge) or by a legacy V1
// continuationSource header. Every run's body is random (settled, refused, unsettled, parked
// tool operations, not-dispatched calls, model text) and ends with a failed terminal (the tip
// may stay running). Chains are 1..8 runs, and sometimes 62..66 (the 64-segment limit).
// Afterwards ONE tampering may be applied through raw SQL on a separate connection: a header
// rewritten into a cycle, pointing at a missing ancestor or at a wrong high-water; an event's
// text rewritten (prefix digest drift); a dispatch's args hash drifted (tool corruption); a
// continuation-start's immediateSource.prefixDigest or providerReplayDigest forged; a V2 child
// header's immutable field changed. The claim property instead leaves the tip's boundary
// claimed in one of the e.5 states (or continued by a legacy V1 run).
//
// The gate model is written from spec e.1, e.2, e.3, e.4, e.5 and e.6 and shares no code with
// the planner: it simulates the traversal loop of e.4 over an abstract description of the
// chain, projects every segment abstractly (e.3: blocking, non-suffix gap, suffix trimming),
// and applies the gates in order. The planner must agree on the decision and on the exact
// reason list (hence the first reason and the order). For a `continue` plan: the boundary
// lists the whole chain oldest first, the provider items are exactly the model's items,
// start at a user item, end at a user/tool item, contain only paired calls and the user
// message once, and every digest recomputes from the stored prefixes; then two claims of the
// boundary (two connections, two id allocators) never both succeed.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/store.h"
#include "ledger_gen.h"
#include "tool_operation_writer.h"

namespace crashsim {
namespace {

namespace fs = std::filesystem;

struct LineageTempDir {
  fs::path path;
  LineageTempDir() {
    static std::atomic<int> counter{0};
    std::error_code ec;
    const fs::path root =
        fs::is_directory("/dev/shm", ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
    path = root /
           ("crashsim-prop-lin-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~LineageTempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::string kSession = "session-l";
using propgen::kOtherWs;
using propgen::kWs;
constexpr int kMaxSegments = 64;  // e.4: "at most 64 segments"

// ---------------------------------------------------------------------------------------
// The case.

enum class StepFate { settled = 0, refused, model_text, not_dispatched, unsettled, parked };
const char* stepFateName(StepFate f) {
  static const char* n[] = {"settled", "refused", "text", "not_dispatched", "unsettled", "parked"};
  return n[static_cast<int>(f)];
}
struct LineageStep {
  StepFate fate = StepFate::settled;
  int tool = 0;
};
struct SegSpec {
  int head = 0;  // root only: 0 user first, 1 model text then user, 2 no user (system text)
  std::vector<LineageStep> body;
};
enum class EdgeKind { v1 = 0, v2 };
enum class Tamper {
  none = 0,
  cycle,                // a root/V1 header re-pointed at itself or a descendant
  ghost,                // a root/V1 header pointed at a run that does not exist
  wrong_hw,             // a V1 header's sourceRuntimeEventHighWater moved past the ancestor
  content,              // a text event's text rewritten
  corrupt,              // a settled operation's dispatch canonicalArgsHash drifted
  start_prefix_digest,  // a continuation-start's immediateSource.prefixDigest forged
  start_replay_digest,  // a continuation-start's providerReplayDigest forged
  child_header,         // a V2 child header's immutable field (cwd) changed
};
constexpr int kTampers = 9;
const char* tamperName(Tamper t) {
  static const char* n[] = {"none",
                            "cycle",
                            "ghost",
                            "wrong_hw",
                            "content",
                            "corrupt",
                            "start_prefix_digest",
                            "start_replay_digest",
                            "child_header"};
  return n[static_cast<int>(t)];
}
bool changesContent(Tamper t) {
  return t == Tamper::content || t == Tamper::corrupt || t == Tamper::start_prefix_digest ||
         t == Tamper::start_replay_digest;
}
enum class ClaimSetup {
  none = 0,
  claim_only,               // claim row, no target header
  header_no_start,          // + target header (created), empty target ledger
  started,                  // executeContinuation: + runtime_admission start
  started_more,             // + another target event, no terminal
  terminal_event_only,      // + failed terminal fact, header not terminal
  terminal_complete,        // + terminal header
  terminal_header_changed,  // complete, then the target header's cwd rewritten
  forged_replay_digest,     // claim row with a providerReplayDigest the fresh plan disagrees with
  legacy_child,             // no claim: a V1 run continues the tip at its high-water
};
constexpr int kClaimStates = 10;
const char* claimName(ClaimSetup c) {
  static const char* n[] = {"none",
                            "claim_only",
                            "header_no_start",
                            "started",
                            "started_more",
                            "terminal_event_only",
                            "terminal_complete",
                            "terminal_header_changed",
                            "forged_replay_digest",
                            "legacy_child"};
  return n[static_cast<int>(c)];
}

struct LinCase {
  std::vector<SegSpec> segs;   // run 0 = root … last = tip (the planned source)
  std::vector<EdgeKind> want;  // want[i-1] = wanted kind of the edge into run i
  bool v1Ids = true;           // V1 sources also carry sourceInvocationId/sourceTurnId
  bool tipTerminal = true;
  Tamper tamper = Tamper::none;
  int tamperAt = 0, tamperTo = 0;
  ClaimSetup claim = ClaimSetup::none;
  // host facts of the final plan
  bool enabled = true;
  int inspector = 0;                   // 0 present, 1 absent, 2 throws
  bool headerIdentityMissing = false;  // applies to a root/V1 tip (a V2 header always has one)
  bool otherWorkspace = false;
  bool backgroundSettled = true;
  std::vector<bool> toolAvailable;
  int expectedHw = 0;  // 0 none, 1 right, 2 wrong
};

void showValue(const LinCase& c, std::ostream& os) {
  os << "LinCase{segs=" << c.segs.size() << " [";
  for (size_t i = 0; i < c.segs.size(); ++i) {
    if (i > 0) os << (c.want[i - 1] == EdgeKind::v2 ? " =v2=> " : " -v1-> ");
    os << "(";
    if (i == 0) os << "head" << c.segs[i].head << " ";
    for (const LineageStep& s : c.segs[i].body)
      os << stepFateName(s.fate) << ":" << propgen::toolNames()[static_cast<size_t>(s.tool)] << " ";
    os << ")";
  }
  os << "] v1Ids=" << c.v1Ids << " tipTerminal=" << c.tipTerminal
     << " tamper=" << tamperName(c.tamper) << "@" << c.tamperAt << "/" << c.tamperTo
     << " claim=" << claimName(c.claim) << " enabled=" << c.enabled << " inspector=" << c.inspector
     << " headerIdentityMissing=" << c.headerIdentityMissing
     << " otherWorkspace=" << c.otherWorkspace << " backgroundSettled=" << c.backgroundSettled
     << " tools=[";
  for (bool b : c.toolAvailable) os << b;
  os << "] expectedHw=" << c.expectedHw << "}";
}

rc::Gen<LineageStep> genStep(bool clean) {
  using propgen::uniform;
  return rc::gen::exec([clean] {
    LineageStep s;
    if (clean)
      s.fate = static_cast<StepFate>(*rc::gen::weightedOneOf<int>(
          {{6, rc::gen::just(0)}, {2, rc::gen::just(1)}, {4, rc::gen::just(2)}}));
    else
      s.fate = static_cast<StepFate>(*rc::gen::weightedOneOf<int>({{6, rc::gen::just(0)},
                                                                   {2, rc::gen::just(1)},
                                                                   {4, rc::gen::just(2)},
                                                                   {1, rc::gen::just(3)},
                                                                   {1, uniform(4, 6)}}));
    s.tool = *uniform(0, static_cast<int>(propgen::toolNames().size()));
    return s;
  });
}

// claims: false = no claim state (lineage property), true = always one (claim property).
rc::Gen<LinCase> genLinCase(bool claims) {
  using propgen::uniform;
  auto rare = [](int w) {
    return rc::gen::weightedOneOf<bool>({{w, rc::gen::just(false)}, {1, rc::gen::just(true)}});
  };
  return rc::gen::exec([=] {
    LinCase c;
    const bool deep = *rc::gen::weightedOneOf<bool>(
        {{claims ? 40 : 14, rc::gen::just(false)}, {1, rc::gen::just(true)}});
    const int n = deep ? *rc::gen::weightedOneOf<int>({{1, uniform(kMaxSegments - 2, kMaxSegments)},
                                                       {2, rc::gen::just(kMaxSegments)},
                                                       {2, rc::gen::just(kMaxSegments + 1)},
                                                       {1, rc::gen::just(kMaxSegments + 2)}})
                       : *uniform(1, 9);
    c.segs.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < c.segs.size(); ++i) {
      SegSpec& s = c.segs[i];
      if (i == 0)
        s.head = *rc::gen::weightedOneOf<int>(
            {{14, rc::gen::just(0)}, {1, rc::gen::just(1)}, {1, rc::gen::just(2)}});
      // Deep chains are mostly clean (so that depth, not dirt, decides); short ones are dirty
      // now and then.
      const bool dirty = deep ? *rare(150) : *rare(3);
      s.body = *propgen::upTo<LineageStep>(deep ? 2 : 3, genStep(!dirty));
    }
    for (int i = 1; i < n; ++i)
      c.want.push_back(
          *rc::gen::weightedOneOf<EdgeKind>({{deep ? 12 : 4, rc::gen::just(EdgeKind::v1)},
                                             {deep ? 1 : 6, rc::gen::just(EdgeKind::v2)}}));
    c.v1Ids = *rc::gen::arbitrary<bool>();
    c.tipTerminal = !*rare(claims ? 30 : 12);
    if (claims) {
      c.claim = static_cast<ClaimSetup>(*uniform(1, kClaimStates));
      // only header-only tampers combine with a claimed boundary
      c.tamper = *rc::gen::weightedOneOf<Tamper>({{8, rc::gen::just(Tamper::none)},
                                                  {1, rc::gen::just(Tamper::cycle)},
                                                  {1, rc::gen::just(Tamper::ghost)},
                                                  {1, rc::gen::just(Tamper::wrong_hw)},
                                                  {1, rc::gen::just(Tamper::child_header)}});
    } else {
      c.tamper = static_cast<Tamper>(
          *rc::gen::weightedOneOf<int>({{5, rc::gen::just(0)}, {8, uniform(1, kTampers)}}));
    }
    c.tamperAt = *uniform(0, 100);
    c.tamperTo = *uniform(0, 100);
    c.enabled = !*rare(40);
    c.inspector = *rc::gen::weightedOneOf<int>(
        {{40, rc::gen::just(0)}, {1, rc::gen::just(1)}, {1, rc::gen::just(2)}});
    c.headerIdentityMissing = *rare(30);
    c.otherWorkspace = *rare(20);
    c.backgroundSettled = !*rare(20);
    for (size_t k = 0; k < propgen::toolNames().size(); ++k) c.toolAvailable.push_back(!*rare(40));
    c.expectedHw = *rc::gen::weightedOneOf<int>({{10, uniform(0, 2)}, {1, rc::gen::just(2)}});
    return c;
  });
}

// ---------------------------------------------------------------------------------------
// The independent model (spec e.3, e.4, e.5, e.6 — no planner code).

// A provider item of the abstract projection: 'u' user text, 'a' assistant text, 'c' tool
// call, 'r' tool result.
struct MItem {
  char kind;
  int tool;
  bool operator==(const MItem&) const = default;
};

struct MSegment {
  std::string blocked;       // "" | runtime_ledger_unreadable | provider_replay_non_suffix_gap
  std::vector<MItem> items;  // untrimmed provider items
};

// e.3 steps 1–6 on one segment.
MSegment modelSegment(const SegSpec& s, bool root, bool corrupt) {
  MSegment m;
  // step 1: resolver corruption, then indeterminate/parked → blocked (reported by the planner
  // as runtime_ledger_unreadable, e.2 step 4).
  if (corrupt) {
    m.blocked = "runtime_ledger_unreadable";
    return m;
  }
  for (const LineageStep& st : s.body)
    if (st.fate == StepFate::unsettled || st.fate == StepFate::parked) {
      m.blocked = "runtime_ledger_unreadable";
      return m;
    }
  // step 3: projection. 'U' marks a call never answered (dropped, but it counts for gaps and
  // trimming). System texts, the continuation-start, and the terminal are not provider items.
  std::vector<MItem> raw;
  if (root && s.head == 0) raw.push_back({'u', -1});
  if (root && s.head == 1) raw = {{'a', -1}, {'u', -1}};
  for (const LineageStep& st : s.body) {
    if (st.fate == StepFate::model_text) raw.push_back({'a', -1});
    if (st.fate == StepFate::settled || st.fate == StepFate::refused) {
      raw.push_back({'c', st.tool});
      raw.push_back({'r', st.tool});
    }
    if (st.fate == StepFate::not_dispatched) raw.push_back({'U', st.tool});
  }
  // step 4: an unmatched call followed later by any provider item → non-suffix gap.
  for (size_t i = 0; i < raw.size(); ++i)
    if (raw[i].kind == 'U')
      for (size_t j = i + 1; j < raw.size(); ++j)
        if (raw[j].kind != 'U') {
          m.blocked = "provider_replay_non_suffix_gap";
          return m;
        }
  // step 5: keep everything up to the last stable item (tool result or user text).
  std::optional<size_t> stable;
  for (size_t i = 0; i < raw.size(); ++i)
    if (raw[i].kind == 'r' || raw[i].kind == 'u') stable = i;
  if (stable)
    for (size_t i = 0; i <= *stable; ++i)
      if (raw[i].kind != 'U') m.items.push_back(raw[i]);
  return m;
}

// The chain as actually built (edges and tampering resolved against what is possible).
struct World {
  std::vector<SegSpec> segs;
  std::vector<EdgeKind> edge;  // edge[i] for i >= 1: kind of the edge into run i
  Tamper tamper = Tamper::none;
  int tamperRun = -1, tamperTarget = -1;  // cycle: the run re-pointed at tamperTarget
  ClaimSetup claim = ClaimSetup::none;
  bool tipTerminal = true;
  size_t tip() const { return segs.size() - 1; }
};

struct MComposite {
  std::string blocked;
  std::vector<MItem> items;
};
MComposite modelComposite(const World& w, size_t lastRun, int corruptRun) {
  MComposite out;
  for (size_t i = 0; i <= lastRun; ++i) {
    MSegment m = modelSegment(w.segs[i], i == 0, static_cast<int>(i) == corruptRun);
    if (!m.blocked.empty()) {
      out.blocked = m.blocked;
      return out;
    }
    out.items.insert(out.items.end(), m.items.begin(), m.items.end());
  }
  return out;
}

// Whether a planner with good facts continues the chain at `lastRun` before any tampering
// (used to decide whether a V2 edge / a claim can be built).
bool modelCanContinue(const World& w, size_t lastRun) {
  if (lastRun + 1 > static_cast<size_t>(kMaxSegments)) return false;
  const MComposite c = modelComposite(w, lastRun, -1);
  if (!c.blocked.empty() || c.items.empty()) return false;
  return c.items.front().kind == 'u' && (c.items.back().kind == 'u' || c.items.back().kind == 'r');
}

struct LineagePlan {
  std::string decision;
  std::vector<std::string> reasons;
  std::vector<size_t> lineage;  // run indexes, oldest first (continue only)
  std::vector<MItem> items;
};

LineagePlan modelPlan(const LinCase& c, const World& w) {
  auto park1 = [](const std::string& r) { return LineagePlan{"park", {r}, {}, {}}; };
  const size_t tip = w.tip();
  // e.1 authoritative entry, in order.
  if (!c.enabled) return park1("resume_feature_disabled");
  if (c.inspector == 1) return park1("safety_observation_unavailable");
  const bool tipIsV2 = tip > 0 && w.edge[tip] == EdgeKind::v2;
  if (c.headerIdentityMissing && !tipIsV2) return park1("workspace_identity_missing");
  if (c.inspector == 2) return park1("safety_observation_unavailable");

  // e.2 step 2 / e.4: the traversal loop over the abstract chain.
  const Tamper t = w.tamper;
  const int tr = w.tamperRun;
  enum class Src { none, v1, v2 };
  auto sourceOf = [&](size_t run) -> std::pair<Src, int> {  // (kind, ancestor; -2 = ghost)
    if ((t == Tamper::cycle || t == Tamper::ghost) && static_cast<int>(run) == tr)
      return {Src::v1, t == Tamper::cycle ? w.tamperTarget : -2};
    if (run == 0) return {Src::none, -1};
    return {w.edge[run] == EdgeKind::v2 ? Src::v2 : Src::v1, static_cast<int>(run) - 1};
  };
  auto contentTampered = [&](size_t run) {
    return changesContent(t) && static_cast<int>(run) == tr;
  };
  std::vector<size_t> lineage{tip};
  std::vector<size_t> v2Children;
  std::set<int> seen{static_cast<int>(tip)};
  int depth = 1;
  size_t cur = tip;
  for (;;) {
    const bool hasStart = cur > 0 && w.edge[cur] == EdgeKind::v2;  // event #1 is a start
    const auto [kind, anc] = sourceOf(cur);
    if (hasStart && kind != Src::v2) return park1("runtime_lineage_start_mismatch");
    if (kind == Src::v2) {
      if (t == Tamper::start_prefix_digest && static_cast<int>(cur) == tr)
        return park1("runtime_lineage_start_mismatch");
      v2Children.push_back(cur);
    }
    if (kind == Src::none) break;
    if (seen.count(anc)) return park1("runtime_lineage_cycle");  // before depth
    if (depth >= kMaxSegments) return park1("runtime_lineage_depth_exceeded");
    if (anc == -2) return park1("runtime_lineage_missing");
    if (t == Tamper::wrong_hw && static_cast<int>(cur) == tr)
      return park1("runtime_identity_mismatch");
    if (kind == Src::v2 && contentTampered(static_cast<size_t>(anc)))
      return park1("source_prefix_digest_mismatch");
    lineage.insert(lineage.begin(), static_cast<size_t>(anc));
    seen.insert(anc);
    ++depth;
    cur = static_cast<size_t>(anc);
  }
  // After the traversal, every V2 edge (oldest child first): the replay of the segments before
  // the child must reproduce the edge's manifest and the start's replay digest, then the
  // durable claim state must match the child header and start.
  std::sort(v2Children.begin(), v2Children.end());
  for (size_t child : v2Children) {
    bool replayChanged = t == Tamper::start_replay_digest && static_cast<int>(child) == tr;
    for (size_t r = 0; r < child; ++r) replayChanged |= contentTampered(r);
    if (replayChanged) return park1("runtime_lineage_replay_mismatch");
    if (t == Tamper::child_header && static_cast<int>(child) == tr)
      return park1("runtime_lineage_claim_mismatch");
  }
  // e.2 step 4 / e.3: composite replay, oldest segment first.
  const MComposite comp = modelComposite(w, tip, t == Tamper::corrupt ? tr : -1);
  if (!comp.blocked.empty()) return park1(comp.blocked);
  // e.2 step 5 / e.5: the durable claim for this boundary; step 6: legacy continuation.
  switch (w.claim) {
    case ClaimSetup::claim_only:
    case ClaimSetup::header_no_start:
    case ClaimSetup::terminal_event_only:
    case ClaimSetup::terminal_header_changed:
    case ClaimSetup::forged_replay_digest:
      return park1("continuation_claim_repair_required");
    case ClaimSetup::started:
    case ClaimSetup::started_more:
      return park1("continuation_started_indeterminate");
    case ClaimSetup::terminal_complete:
    case ClaimSetup::legacy_child:
      return park1("continuation_already_exists");
    case ClaimSetup::none:
      break;
  }
  // e.6 gates, in order.
  LineagePlan p;
  auto reason = [&](const char* r) { p.reasons.push_back(r); };
  if (c.expectedHw == 2) reason("runtime_offset_mismatch");          // 2
  if (!w.tipTerminal) reason("terminal_repair_failed");              // 5
  if (c.otherWorkspace) reason("workspace_identity_mismatch");       // 7
  if (!c.backgroundSettled) reason("background_operation_pending");  // 8
  bool missingTool = false;                                          // 10
  for (const MItem& it : comp.items)
    if (it.kind == 'c' && !c.toolAvailable[static_cast<size_t>(it.tool)]) missingTool = true;
  if (missingTool) reason("tool_catalog_mismatch");
  if (comp.items.empty() || comp.items.front().kind != 'u')  // 11
    reason("provider_resume_head_unsupported");
  if (comp.items.empty() || (comp.items.back().kind != 'u' && comp.items.back().kind != 'r'))
    reason("provider_resume_boundary_unsupported");  // 12
  p.decision = p.reasons.empty() ? "continue" : "park";
  if (p.decision == "continue") {
    p.lineage = lineage;
    p.items = comp.items;
  }
  return p;
}

// ---------------------------------------------------------------------------------------
// Building the chain in a real store.

struct Run {
  std::string invocation, run, turn;
  int64_t seq = 0;
  double ts = 0;
  std::string firstTextId;      // root / V1: event #1; V2: first model text (may be empty)
  std::string firstDispatchId;  // first settled operation's dispatch (may be empty)
  std::string userId;           // root's user message
  Json base(const std::string& id, const char* role, const char* author) {
    return Json{{"id", id},         {"sessionId", kSession}, {"invocationId", invocation},
                {"runId", run},     {"turnId", turn},        {"ts", ++ts},
                {"partial", false}, {"role", role},          {"author", author}};
  }
};

struct HostState {
  SafetyFacts facts;
  std::string prefix;
  int ids = 0;
  double clock = 0;
  ContinuationHost host() {
    ContinuationHost h;
    h.enabled = true;
    h.currentCwd = "/ws";
    h.inspector = [this] { return facts; };
    h.newId = [this] { return prefix + "-" + std::to_string(++ids); };
    h.now = [this] { return clock += 1; };
    return h;
  }
  explicit HostState(std::string p, double clk) : prefix(std::move(p)), clock(clk) {
    facts.workspaceIdentity = kWs;
    facts.workspacePath = "/ws";
    facts.availableToolNames = propgen::toolNames();
    std::sort(facts.availableToolNames.begin(), facts.availableToolNames.end());
  }
};

void append(RuntimeStore& store, Run& r, Json e) {
  RC_ASSERT(store.append(decodeRuntimeEvent(e)).created);
  ++r.seq;
}

void writeBody(RuntimeStore& store, Run& r, const SegSpec& s) {
  int k = 0;
  for (const LineageStep& st : s.body) {
    ++k;
    if (st.fate == StepFate::model_text) {
      Json m = r.base(r.run + "-text-" + std::to_string(k), "model", "agent");
      m["content"] = Json{{"kind", "text"}, {"text", "thinking about step " + std::to_string(k)}};
      if (r.firstTextId.empty()) r.firstTextId = m["id"];
      append(store, r, m);
      continue;
    }
    const propgen::ToolOpFate fate =
        st.fate == StepFate::settled     ? propgen::ToolOpFate::settled
        : st.fate == StepFate::refused   ? propgen::ToolOpFate::refused
        : st.fate == StepFate::unsettled ? propgen::ToolOpFate::unsettled
        : st.fate == StepFate::parked    ? propgen::ToolOpFate::parked
                                         : propgen::ToolOpFate::not_dispatched;
    propgen::writeToolOperation(
        store, r, [&](const Json& e) { append(store, r, e); }, k, static_cast<size_t>(st.tool),
        fate);
    if (fate == propgen::ToolOpFate::settled && r.firstDispatchId.empty()) {
      r.firstDispatchId =
          deriveOperationId(r.invocation, "call-" + std::to_string(k)) + "_dispatch";
    }
  }
}

void finishFailed(RuntimeStore& store, Run& r, RunHeader h) {
  Json t = r.base(r.run + "-terminal", "system", "system");
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
  ++r.seq;
  h.status = "failed";
  h.updatedAt = te.ts;
  h.completedAt = te.ts;
  h.failureClass = "app_restarted";
  store.markRunTerminal(h);
}

// Raw SQL on a separate connection (tampering behind the store's back).
void tamperSql(const fs::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  RC_ASSERT(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(h);
  RC_ASSERT(rc == SQLITE_OK);
  RC_ASSERT(msg.empty());
}
std::string q(const std::string& s) {
  std::string out = "'";
  for (char ch : s) {
    if (ch == '\'')
      out += "''";
    else
      out.push_back(ch);
  }
  return out + "'";
}
void rewriteHeader(RuntimeStore& store, const std::string& runId,
                   const std::function<void(RunHeader&)>& f) {
  std::optional<RunHeader> h = store.readRun(kSession, runId);
  RC_ASSERT(h.has_value());
  f(*h);
  tamperSql(store.path(), "UPDATE agent_runs SET header_json = " + q(stableJson(h->toJson())) +
                              " WHERE session_id = " + q(kSession) + " AND run_id = " + q(runId));
}
void rewriteEvent(RuntimeStore& store, const std::string& runId, const std::string& eventId,
                  const std::function<void(Json&)>& f) {
  for (const StoredEvent& se : store.readRunEvents(kSession, runId)) {
    if (se.event.json.at("id") != eventId) continue;
    Json e = se.event.json;
    f(e);
    tamperSql(store.path(), "UPDATE runtime_events SET payload_json = " + q(stableJson(e)) +
                                " WHERE event_id = " + q(eventId));
    return;
  }
  RC_FAIL("event to tamper not found: " + eventId);
}

Json v1Source(const Run& anc, int64_t hw, bool withIds) {
  Json s{{"sourceRunId", anc.run}, {"sourceRuntimeEventHighWater", hw}};
  if (withIds) {
    s["sourceInvocationId"] = anc.invocation;
    s["sourceTurnId"] = anc.turn;
  }
  return s;
}

// The claim executeContinuation would make for `p` (e.8), written by hand.
ContinuationClaim claimFor(const ContinuationPlan& p, double claimedAt) {
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
  h.workspaceIdentity = kWs;
  h.cwd = "/ws";
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

struct Built {
  World world;
  std::vector<Run> runs;
};

// Builds the chain, then the claim state, then the tampering; returns the world as built.
Built buildChain(RuntimeStore& store, const LinCase& c) {
  Built b;
  World& w = b.world;
  w.segs = c.segs;
  w.edge.assign(c.segs.size(), EdgeKind::v1);
  w.tipTerminal = c.tipTerminal;
  std::vector<Run>& runs = b.runs;
  for (size_t i = 0; i < c.segs.size(); ++i) {
    const bool isTip = i + 1 == c.segs.size();
    const bool v2 = i > 0 && c.want[i - 1] == EdgeKind::v2 && modelCanContinue(w, i - 1);
    w.edge[i] = v2 ? EdgeKind::v2 : EdgeKind::v1;
    Run r;
    RunHeader h;
    if (v2) {
      HostState hs("k" + std::to_string(i), 100000.0 * static_cast<double>(i + 1));
      const ContinuationPlan p =
          planContinuation(store, kSession, runs[i - 1].run, hs.host(), std::nullopt);
      RC_LOG() << "chain step " << i << " plan: " << p.toJson().dump() << "\n";
      RC_ASSERT(p.isContinue());
      const ContinuationExecution ex = executeContinuation(store, p, hs.host());
      r.invocation = ex.targetHeader.invocationId;
      r.run = ex.targetHeader.runId;
      r.turn = ex.targetHeader.turnId;
      r.seq = 1;
      r.ts = ex.startEvent.ts;
      h = ex.targetHeader;
      h.status = "running";
      store.updateRunHeader(h);
    } else {
      r.run = "run" + std::to_string(i);
      r.invocation = "inv-" + r.run;
      r.turn = "turn-" + r.run;
      r.ts = 100000.0 * static_cast<double>(i + 1);
      h.sessionId = kSession;
      h.runId = r.run;
      h.invocationId = r.invocation;
      h.turnId = r.turn;
      h.status = "running";
      h.createdAt = h.updatedAt = r.ts;
      h.cwd = "/ws";
      if (!(isTip && c.headerIdentityMissing)) h.workspaceIdentity = kWs;
      if (i > 0) {
        h.parentRunId = runs[i - 1].run;
        h.parentTurnId = runs[i - 1].turn;
        h.continuationSource = v1Source(runs[i - 1], runs[i - 1].seq, c.v1Ids);
      }
      store.createRun(h);
      // event #1: a text event carrying the t1 marker (user / model / system text)
      const int head = i == 0 ? c.segs[0].head : 2;
      auto first = [&](const char* role, const char* author, const std::string& text) {
        Json e = r.base(r.run + "-first", role, author);
        e["content"] = Json{{"kind", "text"}, {"text", text}};
        e["actions"] = Json{{"runtimeProtocol", {{"toolBoundary", "t1_after_preflight_v1"}}}};
        r.firstTextId = e["id"];
        append(store, r, e);
      };
      if (head == 0) {
        first("user", "user", "please do the task");
        r.userId = r.firstTextId;
      } else if (head == 1) {
        first("model", "agent", "let me think first");
        Json u = r.base(r.run + "-user", "user", "user");
        u["content"] = Json{{"kind", "text"}, {"text", "please do the task"}};
        r.userId = u["id"];
        append(store, r, u);
      } else {
        first("system", "system", i == 0 ? "session restored" : "legacy continuation");
      }
    }
    writeBody(store, r, c.segs[i]);
    if (!isTip || c.tipTerminal) finishFailed(store, r, h);
    runs.push_back(r);
  }
  const size_t tip = w.tip();
  Run& tipRun = runs[tip];

  // The claim state of the tip's boundary (only where the boundary can be claimed).
  w.claim = c.claim;
  if (c.claim != ClaimSetup::none && c.claim != ClaimSetup::legacy_child &&
      !(c.tipTerminal && modelCanContinue(w, tip) &&
        !(c.headerIdentityMissing && w.edge[tip] != EdgeKind::v2)))
    w.claim = ClaimSetup::none;
  if (w.claim == ClaimSetup::legacy_child) {
    RunHeader h;
    h.sessionId = kSession;
    h.runId = "legacy-child";
    h.invocationId = "inv-legacy-child";
    h.turnId = "turn-legacy-child";
    h.status = "running";
    h.createdAt = h.updatedAt = 9e6;
    h.workspaceIdentity = kWs;
    h.cwd = "/ws";
    h.parentRunId = tipRun.run;
    h.continuationSource = v1Source(tipRun, tipRun.seq, c.v1Ids);
    store.createRun(h);
  } else if (w.claim != ClaimSetup::none) {
    HostState hs("cl", 9e6);
    const ContinuationPlan p = planContinuation(store, kSession, tipRun.run, hs.host());
    RC_LOG() << "claim plan: " << p.toJson().dump() << "\n";
    RC_ASSERT(p.isContinue());
    switch (w.claim) {
      case ClaimSetup::claim_only:
      case ClaimSetup::header_no_start:
      case ClaimSetup::forged_replay_digest: {
        ContinuationClaim cl = claimFor(p, 9.5e6);
        if (w.claim == ClaimSetup::forged_replay_digest)
          cl.providerReplayDigest = sha256Digest("forged replay");
        RC_ASSERT(claimContinuation(store, cl).result == std::string("acquired"));
        if (w.claim == ClaimSetup::header_no_start) store.createRun(cl.targetRunHeader);
        break;
      }
      default: {
        const ContinuationExecution ex = executeContinuation(store, p, hs.host());
        if (w.claim == ClaimSetup::started) break;
        Run t;
        t.invocation = ex.targetHeader.invocationId;
        t.run = ex.targetHeader.runId;
        t.turn = ex.targetHeader.turnId;
        t.seq = 1;
        t.ts = ex.startEvent.ts;
        RunHeader running = ex.targetHeader;
        running.status = "running";
        store.updateRunHeader(running);
        if (w.claim == ClaimSetup::started_more) {
          Json m = t.base(t.run + "-text", "model", "agent");
          m["content"] = Json{{"kind", "text"}, {"text", "continuing"}};
          append(store, t, m);
          break;
        }
        if (w.claim == ClaimSetup::terminal_event_only) {
          Json x = t.base(t.run + "-terminal", "system", "system");
          x["status"] = "failed";
          x["content"] = Json{{"kind", "error"},
                              {"message", "interrupted"},
                              {"code", "app_restarted"},
                              {"reason", "app_restarted"}};
          x["actions"] = Json{{"endInvocation", true},
                              {"stateDelta",
                               {{"recovered", true},
                                {"recoveryReason", "run_interrupted"},
                                {"failureClass", "app_restarted"}}}};
          RC_ASSERT(store.commitTerminalEvent(decodeRuntimeEvent(x)).created);
          break;
        }
        finishFailed(store, t, running);
        if (w.claim == ClaimSetup::terminal_header_changed)
          rewriteHeader(store, t.run, [](RunHeader& h) { h.cwd = "/moved"; });
        break;
      }
    }
  }

  // The tampering, resolved against the runs that can carry it.
  Tamper t = c.tamper;
  if (w.claim != ClaimSetup::none && changesContent(t)) t = Tamper::none;
  std::vector<size_t> eligible;
  for (size_t i = 0; i < runs.size(); ++i) {
    const bool isV2 = i > 0 && w.edge[i] == EdgeKind::v2;
    bool ok = false;
    switch (t) {
      case Tamper::none:
        break;
      case Tamper::cycle:
      case Tamper::ghost:
        ok = !isV2;
        break;
      case Tamper::wrong_hw:
        ok = i > 0 && !isV2;
        break;
      case Tamper::content:
        ok = !runs[i].firstTextId.empty();
        break;
      case Tamper::corrupt:
        ok = !runs[i].firstDispatchId.empty();
        break;
      case Tamper::start_prefix_digest:
      case Tamper::start_replay_digest:
      case Tamper::child_header:
        ok = isV2;
        break;
    }
    if (ok) eligible.push_back(i);
  }
  if (eligible.empty()) t = Tamper::none;
  w.tamper = t;
  if (t == Tamper::none) return b;
  const size_t j = eligible[static_cast<size_t>(c.tamperAt) % eligible.size()];
  w.tamperRun = static_cast<int>(j);
  Run& rj = runs[j];
  switch (t) {
    case Tamper::none:
      break;
    case Tamper::cycle: {
      const size_t k = j + static_cast<size_t>(c.tamperTo) % (runs.size() - j);
      w.tamperTarget = static_cast<int>(k);
      const Run rk = runs[k];
      rewriteHeader(store, rj.run, [&](RunHeader& h) {
        h.parentRunId = rk.run;
        h.continuationSource = v1Source(rk, rk.seq, c.v1Ids);
      });
      break;
    }
    case Tamper::ghost:
      rewriteHeader(store, rj.run, [&](RunHeader& h) {
        h.parentRunId = "ghost-run";
        h.continuationSource =
            Json{{"sourceRunId", "ghost-run"}, {"sourceRuntimeEventHighWater", 3}};
      });
      break;
    case Tamper::wrong_hw:
      rewriteHeader(store, rj.run, [&](RunHeader& h) {
        (*h.continuationSource)["sourceRuntimeEventHighWater"] =
            runs[j - 1].seq + 1 + c.tamperTo % 3;
      });
      break;
    case Tamper::content:
      rewriteEvent(store, rj.run, rj.firstTextId,
                   [](Json& e) { e["content"]["text"] = "rewritten history"; });
      break;
    case Tamper::corrupt:
      rewriteEvent(store, rj.run, rj.firstDispatchId, [](Json& e) {
        e["actions"]["toolDispatch"]["canonicalArgsHash"] = sha256Digest("drifted args");
      });
      break;
    case Tamper::start_prefix_digest:
    case Tamper::start_replay_digest: {
      const std::string startId = store.readRunEvents(kSession, rj.run).at(0).event.json.at("id");
      rewriteEvent(store, rj.run, startId, [&](Json& e) {
        Json& s = e["actions"]["continuationStart"];
        if (t == Tamper::start_prefix_digest)
          s["immediateSource"]["prefixDigest"] = sha256Digest("forged prefix");
        else
          s["providerReplayDigest"] = sha256Digest("forged replay");
      });
      break;
    }
    case Tamper::child_header:
      rewriteHeader(store, rj.run, [](RunHeader& h) { h.cwd = "/tampered"; });
      break;
  }
  return b;
}

// ---------------------------------------------------------------------------------------
// Checks shared by the properties.

std::vector<MItem> abstractItems(const Json& items) {
  std::vector<MItem> out;
  const auto& names = propgen::toolNames();
  auto toolIndex = [&](const Json& it) {
    const std::string n = it.at("toolName");
    return static_cast<int>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  for (const Json& it : items) {
    const std::string type = it.at("type");
    if (type == "text")
      out.push_back({it.at("role") == "user" ? 'u' : 'a', -1});
    else if (type == "tool_call")
      out.push_back({'c', toolIndex(it)});
    else if (type == "tool_result")
      out.push_back({'r', toolIndex(it)});
    else
      out.push_back({'?', -1});
  }
  return out;
}

std::string showItems(const std::vector<MItem>& v) {
  std::string s;
  for (const MItem& m : v) s += m.kind;
  return s;
}

ContinuationHost finalHost(const LinCase& c, HostState& hs) {
  hs.facts.workspaceIdentity = c.otherWorkspace ? kOtherWs : kWs;
  hs.facts.backgroundOperationsSettled = c.backgroundSettled;
  hs.facts.availableToolNames.clear();
  for (size_t k = 0; k < propgen::toolNames().size(); ++k)
    if (c.toolAvailable[k]) hs.facts.availableToolNames.push_back(propgen::toolNames()[k]);
  ContinuationHost h = hs.host();
  h.enabled = c.enabled;
  if (c.inspector == 1) h.inspector = nullptr;
  if (c.inspector == 2)
    h.inspector = []() -> SafetyFacts { throw std::runtime_error("inspector down"); };
  return h;
}

// A continue plan's replay and digests (e.3, e.6 gates 11/12, e.7) against the stored chain.
void checkContinuePlan(RuntimeStore& store, const Built& b, const LineagePlan& m,
                       const ContinuationPlan& plan) {
  RC_ASSERT(plan.boundary.has_value());
  RC_ASSERT(plan.lineageDepth == m.lineage.size());
  RC_ASSERT(plan.boundary->segments.size() == m.lineage.size());
  for (size_t i = 0; i < m.lineage.size(); ++i)
    RC_ASSERT(plan.boundary->segments[i]["identity"]["runId"] == b.runs[m.lineage[i]].run);
  // the provider items are exactly the model's projection
  const std::vector<MItem> got = abstractItems(plan.providerItems);
  RC_LOG() << "items planner=" << showItems(got) << " model=" << showItems(m.items) << "\n";
  RC_ASSERT(got == m.items);
  const Json& items = plan.providerItems;
  RC_ASSERT(!items.empty());
  RC_ASSERT(got.front().kind == 'u');
  RC_ASSERT(got.back().kind == 'u' || got.back().kind == 'r');
  // only paired calls (answered right away in these histories); the user message exactly once
  // (never repeated, never synthesised); no event replayed twice
  std::set<std::string> eventIds;
  size_t users = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Json& it = items[k];
    RC_ASSERT(eventIds.insert(it.at("eventId").get<std::string>()).second);
    if (it["type"] == "tool_call") {
      RC_ASSERT(k + 1 < items.size());
      const Json& next = items[k + 1];
      RC_ASSERT(next["type"] == "tool_result");
      RC_ASSERT(next["toolCallId"] == it["toolCallId"]);
      RC_ASSERT(next["toolName"] == it["toolName"]);
    }
    if (it["type"] == "tool_result") RC_ASSERT(k > 0 && items[k - 1]["type"] == "tool_call");
    if (it["type"] == "text" && it["role"] == "user") {
      ++users;
      RC_ASSERT(it["eventId"] == b.runs[0].userId);
    }
  }
  RC_ASSERT(users == 1u);
  // digests recompute identically from the stored prefixes (ancestors pinned at their
  // recorded high-water, the source at its head)
  RC_ASSERT(providerReplayDigest(items, plan.providerProjectionVersion) ==
            plan.providerReplayDigest);
  RC_ASSERT(manifestDigest(plan.boundary->segments) == plan.boundary->manifestDigest);
  std::vector<ImmutablePrefix> prefixes;
  for (size_t idx : m.lineage) {
    const Run& r = b.runs[idx];
    prefixes.push_back(
        readImmutablePrefix(store, PrefixIdentity{kSession, r.invocation, r.run, r.turn}));
    RC_ASSERT(prefixes.back().lastEventSeq == r.seq);
    RC_ASSERT(prefixes.back().prefixDigest ==
              prefixDigest(prefixes.back().identity, prefixes.back().events));
  }
  std::vector<const ImmutablePrefix*> segs;
  for (const auto& p : prefixes) segs.push_back(&p);
  const CompositeReplay again = buildCompositeReplay(segs);
  RC_ASSERT(again.replayable);
  RC_ASSERT(again.providerReplayDigest == plan.providerReplayDigest);
  RC_ASSERT(again.boundary.manifestDigest == plan.boundary->manifestDigest);
  RC_ASSERT(prefixes.back().prefixDigest == plan.sourcePrefixDigest);
  RC_ASSERT(plan.sourceRuntimeEventHighWater == b.runs[m.lineage.back()].seq);
  if (m.lineage.size() > 1) {
    RC_ASSERT(!plan.sourceRuntimeContext.empty());
    for (const RuntimeEvent& e : plan.sourceRuntimeContext)
      RC_ASSERT(e.json.at("runId") == b.runs[m.lineage.back()].run);
  }
}

// Two claims of one boundary never both succeed: two connections with two id allocators plan
// the same boundary; the first execution claims it, the second (and a hand-made claim for the
// second plan) must not.
void checkClaimedOnce(const fs::path& dir, RuntimeStore& store, const std::string& sourceRun,
                      const ContinuationPlan& planA, HostState& hostA, const LinCase& c) {
  auto store2 = RuntimeStore::open(dir);
  HostState hsB("b", 5e7);
  const ContinuationHost hostB = finalHost(c, hsB);
  const ContinuationPlan planB = planContinuation(
      *store2, kSession, sourceRun, hostB,
      c.expectedHw == 1 ? std::optional<int64_t>(planA.sourceRuntimeEventHighWater) : std::nullopt);
  RC_ASSERT(planB.isContinue());
  RC_ASSERT(planB.boundary->manifestDigest == planA.boundary->manifestDigest);
  RC_ASSERT(planB.providerReplayDigest == planA.providerReplayDigest);
  RC_ASSERT(planB.runId != planA.runId);
  const size_t claimsBefore = listClaims(store).size();
  const ContinuationHost hA = finalHost(c, hostA);
  const ContinuationExecution ex = executeContinuation(store, planA, hA);
  RC_ASSERT(ex.providerReplayDigest == planA.providerReplayDigest);
  RC_ASSERT(claimContinuation(*store2, claimFor(planB, 6e7)).result != std::string("acquired"));
  bool secondSucceeded = true;
  try {
    executeContinuation(*store2, planB, hostB);
  } catch (const Error&) {
    secondSucceeded = false;
  }
  RC_ASSERT(!secondSucceeded);
  const std::vector<crashsim::ClaimState> claims = listClaims(store);
  RC_ASSERT(claims.size() == claimsBefore + 1);
  size_t forBoundary = 0;
  for (const crashsim::ClaimState& s : claims)
    forBoundary += s.claim.boundaryDigest == planA.boundary->manifestDigest;
  RC_ASSERT(forBoundary == 1u);
  const ContinuationPlan after = planContinuation(*store2, kSession, sourceRun, hostB);
  RC_ASSERT(after.rejectionReasons ==
            std::vector<std::string>{"continuation_started_indeterminate"});
}

void runCase(const LinCase& c, bool twoClaims) {
  LineageTempDir dir;
  auto store = RuntimeStore::open(dir.path);
  const Built b = buildChain(*store, c);
  const World& w = b.world;
  const LineagePlan m = modelPlan(c, w);
  RC_TAG(m.decision, m.reasons.empty() ? std::string("-") : m.reasons.front());
  RC_CLASSIFY(w.segs.size() > static_cast<size_t>(kMaxSegments), "deeper than 64");
  RC_CLASSIFY(std::count(w.edge.begin() + 1, w.edge.end(), EdgeKind::v2) >= 2, ">=2 V2 edges");
  RC_CLASSIFY(m.reasons.size() > 1, "several reasons");
  RC_CLASSIFY(m.decision == "continue" && w.segs.size() == static_cast<size_t>(kMaxSegments),
              "continue at 64 segments");

  HostState hs("f", 3e7);
  const ContinuationHost host = finalHost(c, hs);
  std::optional<int64_t> expectedHw;
  const Run& tipRun = b.runs[w.tip()];
  if (c.expectedHw == 1) expectedHw = tipRun.seq;
  if (c.expectedHw == 2) expectedHw = tipRun.seq + 3;
  const std::string hashBefore = store->ledgerHash();
  const ContinuationPlan plan = planContinuation(*store, kSession, tipRun.run, host, expectedHw);
  RC_ASSERT(store->ledgerHash() == hashBefore);  // planning is read-only
  RC_LOG() << "world: tamper=" << tamperName(w.tamper) << " run=" << w.tamperRun
           << " target=" << w.tamperTarget << " claim=" << claimName(w.claim) << " edges=";
  for (size_t i = 1; i < w.edge.size(); ++i) RC_LOG() << (w.edge[i] == EdgeKind::v2 ? '2' : '1');
  RC_LOG() << "\nmodel: " << m.decision << " [";
  for (const auto& r : m.reasons) RC_LOG() << r << " ";
  RC_LOG() << "]\nplan: " << plan.toJson().dump() << "\n";
  RC_ASSERT(plan.decision == m.decision);
  RC_ASSERT(plan.rejectionReasons == m.reasons);
  if (!plan.isContinue()) {
    RC_ASSERT(plan.invocationId.empty() && plan.claimId.empty());
    return;
  }
  checkContinuePlan(*store, b, m, plan);
  if (twoClaims) {
    hs.ids = 0;  // the same allocator sequence re-plans the same plan (determinism, j.7)
    RC_ASSERT(
        planContinuation(*store, kSession, tipRun.run, finalHost(c, hs), expectedHw).toJson() ==
        plan.toJson());
    checkClaimedOnce(dir.path, *store, tipRun.run, plan, hs, c);
  }
}

RC_GTEST_PROP(ContinuationLineageProperties,
              PlannerAgreesWithGateModelOnLineageChainsCyclesDepthAndTampering, ()) {
  runCase(*genLinCase(false), true);
}

RC_GTEST_PROP(ContinuationLineageProperties, ExistingClaimClassificationAgreesWithGateModel, ()) {
  runCase(*genLinCase(true), false);
}

// Two claims of one boundary race on two connections (threads released together): exactly one
// is acquired, the other sees the boundary as existing; never both.
RC_GTEST_PROP(ContinuationLineageProperties, TwoClaimsOfOneGeneratedBoundaryNeverBothSucceed, ()) {
  LinCase c = *genLinCase(false);
  c.tamper = Tamper::none;
  c.tipTerminal = true;
  c.enabled = true;
  c.inspector = 0;
  c.headerIdentityMissing = c.otherWorkspace = false;
  c.backgroundSettled = true;
  c.toolAvailable.assign(propgen::toolNames().size(), true);
  c.expectedHw = 0;
  if (c.segs.size() > 8) {
    c.segs.resize(8);
    c.want.resize(7);
  }
  c.segs[0].head = 0;  // a continuable chain: a user message and only settled work
  for (SegSpec& s : c.segs)
    for (LineageStep& st : s.body)
      if (st.fate == StepFate::not_dispatched || st.fate == StepFate::unsettled ||
          st.fate == StepFate::parked)
        st.fate = StepFate::settled;
  LineageTempDir dir;
  auto store = RuntimeStore::open(dir.path);
  const Built b = buildChain(*store, c);
  RC_ASSERT(modelCanContinue(b.world, b.world.tip()));
  const std::string src = b.runs[b.world.tip()].run;
  HostState ha("a", 4e7), hb("b", 4e7);
  const ContinuationPlan pa = planContinuation(*store, kSession, src, ha.host());
  const ContinuationPlan pb = planContinuation(*store, kSession, src, hb.host());
  RC_ASSERT(pa.isContinue() && pb.isContinue());
  RC_ASSERT(pa.boundary->manifestDigest == pb.boundary->manifestDigest);
  const ContinuationClaim ca = claimFor(pa, 4.1e7), cb = claimFor(pb, 4.1e7);
  std::string ra, rb;
  std::atomic<int> ready{0};
  auto racer = [&](const ContinuationClaim& cl, std::string& out) {
    try {
      auto s = RuntimeStore::open(dir.path);
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();
      out = claimContinuation(*s, cl).result;
    } catch (const Error& e) {
      out = std::string("error:") + e.code();
    }
  };
  std::thread ta(racer, std::cref(ca), std::ref(ra));
  std::thread tb(racer, std::cref(cb), std::ref(rb));
  ta.join();
  tb.join();
  RC_LOG() << "race: " << ra << " / " << rb << "\n";
  RC_ASSERT(!(ra == "acquired" && rb == "acquired"));
  RC_ASSERT(ra == "acquired" || rb == "acquired");
  RC_ASSERT((ra == "acquired" ? rb : ra) == std::string("existing"));
  size_t forBoundary = 0;
  for (const crashsim::ClaimState& s : listClaims(*store))
    forBoundary += s.claim.boundaryDigest == pa.boundary->manifestDigest;
  RC_ASSERT(forBoundary == 1u);
  // and the loser's execution never gets a second start
  const ContinuationPlan& loser = ra == "acquired" ? pb : pa;
  HostState& loserHost = ra == "acquired" ? hb : ha;
  bool loserExecuted = true;
  try {
    executeContinuation(*store, loser, loserHost.host());
  } catch (const Error&) {
    loserExecuted = false;
  }
  RC_ASSERT(!loserExecuted);
}

}  // namespace
}  // namespace crashsim
