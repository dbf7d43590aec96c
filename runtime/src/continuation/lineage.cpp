// lineage.cpp — ancestor traversal (spec e.4), shared by planning and execution revalidation.
// Each segment is read, digested and projected exactly once; the per-edge replay checks reuse
// the projections and an incremental digest, so the cost is linear in the chain's events.
#include <algorithm>
#include <unordered_set>

#include "continuation/internal.h"
#include "continuation/replay_internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"

namespace crashsim {

namespace continuation_detail {

std::optional<RunHeader> readHeader(store_detail::Connection& c, const std::string& sessionId,
                                    const std::string& runId) {
  auto st = c.prepare("SELECT header_json FROM agent_runs WHERE session_id = ?1 AND run_id = ?2");
  st.bind(1, sessionId).bind(2, runId);
  if (!st.step()) return std::nullopt;
  return RunHeader::fromJson(parseJson(st.text(0)));
}

std::vector<RunHeader> readHeaders(store_detail::Connection& c,
                                   const std::optional<std::string>& sessionId) {
  std::vector<RunHeader> out;
  auto st = c.prepare(
      "SELECT header_json FROM agent_runs WHERE ?1 IS NULL OR session_id = ?1 "
      "ORDER BY session_id, created_at, run_id");
  st.bind(1, sessionId);
  while (st.step()) out.push_back(RunHeader::fromJson(parseJson(st.text(0))));
  return out;
}

Json immutableHeaderJson(const RunHeader& h) {
  Json j = h.toJson();
  for (const char* k :
       {"status", "updatedAt", "completedAt", "failureClass", "failureMessage", "abortSource"}) {
    j.erase(k);
  }
  return j;
}

bool terminalRepairSucceeded(const RunHeader& header, const std::vector<RuntimeEvent>& events) {
  if (!isTerminalRunStatus(header.status)) return false;
  size_t terminals = 0;
  for (const RuntimeEvent& e : events) terminals += (!e.partial && e.isTerminal()) ? 1 : 0;
  if (terminals != 1 || events.empty() || !events.back().isTerminal()) return false;
  const RuntimeEvent& t = events.back();
  std::optional<std::string> st = terminalFactStatus(t, header);
  if (!st || *st != header.status) return false;
  if (header.status == code::failed) {
    auto fc = terminalFailureClass(t, nullptr);
    if (fc && header.failureClass && *fc != *header.failureClass) return false;
    if (!header.failureClass) return false;
  }
  if (header.status == code::cancelled) {
    auto as = terminalAbortSource(t, nullptr);
    if (as && header.abortSource && *as != *header.abortSource) return false;
    if (!header.abortSource && !as) return false;
  }
  return true;
}

namespace {

[[noreturn]] void fail(std::string_view c, const std::string& msg) { throw Error(c, msg); }

const Json* startOf(const ImmutablePrefix& p) {
  if (p.events.empty() || !p.events.front().hasContinuationStart) return nullptr;
  return &p.events.front().json["actions"]["continuationStart"];
}

bool isV2(const Json& src) {
  return src.is_object() && src.contains("protocol") &&
         src["protocol"] == std::string(code::continuation_source_v2);
}

std::string str(const Json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

// An edge found by the walk: the child's position counted from the immediate source (0), its
// continuation source and whether that is continuation_source_v2.
struct WalkEdge {
  size_t childRev;
  Json source;
  bool v2;
};

// The segments and headers of a lineage, newest first (no ancestor is ever copied into a
// child), with the edges between them.
struct Walk {
  std::vector<ImmutablePrefix> segs;
  std::vector<RunHeader> heads;
  std::vector<WalkEdge> edges;
};

// e.4: a run holds a continuation-start exactly when its header has a continuation_source_v2,
// and the start names the same claim, boundary, replay manifest and immediate source.
void checkContinuationStart(const RunHeader& childH, const Json* start, const Json& source,
                            bool v2) {
  if (start && !v2) {
    fail(code::runtime_lineage_start_mismatch,
         "run " + childH.runId + " has a continuation-start but no continuation_source_v2");
  }
  if (!v2) return;
  if (!start) {
    fail(code::runtime_lineage_start_mismatch,
         "continuation run " + childH.runId + " has no continuation-start");
  }
  const Json& s = *start;
  const Json& is = s.value("immediateSource", Json::object());
  bool ok = str(s, "claimId") == str(source, "claimId") &&
            str(s, "boundaryDigest") == str(source, "boundaryDigest") &&
            str(s, "replayManifestDigest") == str(source, "replayManifestDigest") &&
            str(is, "sessionId") == childH.sessionId &&
            str(is, "invocationId") == str(source, "sourceInvocationId") &&
            str(is, "runId") == str(source, "sourceRunId") &&
            str(is, "turnId") == str(source, "sourceTurnId") &&
            is.value("highWater", Json()) == source.value("sourceRuntimeEventHighWater", Json()) &&
            str(is, "prefixDigest") == str(source, "sourcePrefixDigest");
  if (!ok) {
    fail(code::runtime_lineage_start_mismatch,
         "continuation-start of " + childH.runId + " does not match its continuation source");
  }
}

// e.4: the ancestor `source` names (run srcRun, read up to high-water hw): its header and
// prefix, which must match the edge's identity and high-water (and, for v2, its prefix digest).
void readAncestor(store_detail::Connection& c, const RunHeader& childH, const Json& source, bool v2,
                  const std::string& srcRun, int64_t hw, std::optional<RunHeader>& ah,
                  ImmutablePrefix& ap) {
  try {
    ah = readHeader(c, childH.sessionId, srcRun);
    if (!ah) fail(code::runtime_lineage_missing, "ancestor run " + srcRun + " is missing");
    ap = readPrefix(c, identityOf(*ah), hw);
  } catch (const Error& e) {
    fail(code::runtime_lineage_missing, std::string("ancestor ") + srcRun + ": " + e.what());
  }
  PrefixIdentity edgeId{childH.sessionId, v2 ? str(source, "sourceInvocationId") : ah->invocationId,
                        srcRun, v2 ? str(source, "sourceTurnId") : ah->turnId};
  if (!v2) {
    if (source.contains("sourceInvocationId"))
      edgeId.invocationId = str(source, "sourceInvocationId");
    if (source.contains("sourceTurnId")) edgeId.turnId = str(source, "sourceTurnId");
  }
  if (!sameIdentity(ap.identity, edgeId) || ap.lastEventSeq != hw) {
    fail(code::runtime_identity_mismatch,
         "ancestor " + srcRun + " does not match its continuation edge");
  }
  if (v2 && str(source, "sourcePrefixDigest") != ap.prefixDigest) {
    fail(code::source_prefix_digest_mismatch, "ancestor " + srcRun + " prefix digest differs");
  }
}

// e.4: from the immediate source back along each header's continuation source to the first run
// without one: no cycle, at most kMaxLineageDepth segments, every ancestor present and matching
// its edge.
Walk walkAncestors(store_detail::Connection& c, const RunHeader& immediateHeader,
                   ImmutablePrefix immediate) {
  Walk w;
  w.segs.push_back(std::move(immediate));
  w.heads.push_back(immediateHeader);
  std::unordered_set<std::string> seen{immediateHeader.runId};
  int depth = 1;
  for (;;) {
    const size_t childIdx = w.segs.size() - 1;
    const RunHeader childH = w.heads[childIdx];
    const Json* start = startOf(w.segs[childIdx]);
    const bool hasSource =
        childH.continuationSource.has_value() && !childH.continuationSource->is_null();
    const Json source = hasSource ? *childH.continuationSource : Json();
    const bool v2 = hasSource && isV2(source);
    checkContinuationStart(childH, start, source, v2);
    if (!hasSource) break;
    w.edges.push_back(WalkEdge{childIdx, source, v2});
    const std::string srcRun = str(source, "sourceRunId");
    if (seen.count(srcRun)) fail(code::runtime_lineage_cycle, "lineage cycle at run " + srcRun);
    if (depth >= kMaxLineageDepth) {
      fail(code::runtime_lineage_depth_exceeded, "lineage deeper than 64 segments");
    }
    const Json& hwJ = source.value("sourceRuntimeEventHighWater", Json());
    if (srcRun.empty() || !hwJ.is_number_integer()) {
      fail(code::runtime_lineage_missing,
           "continuation source of " + childH.runId + " is malformed");
    }
    const int64_t hw = hwJ.get<int64_t>();
    std::optional<RunHeader> ah;
    ImmutablePrefix ap;
    readAncestor(c, childH, source, v2, srcRun, hw, ah, ap);
    w.segs.push_back(std::move(ap));
    w.heads.push_back(std::move(*ah));
    seen.insert(srcRun);
    ++depth;
  }
  return w;
}

// The lineage oldest first, each segment projected once, the edges in the same order.
Lineage assembleLineage(Walk&& w) {
  Lineage out;
  const size_t n = w.segs.size();
  out.segments.reserve(n);
  for (size_t i = n; i-- > 0;) {
    out.segments.push_back(std::move(w.segs[i]));
    out.headers.push_back(std::move(w.heads[i]));
  }
  out.projections.reserve(n);
  for (const ImmutablePrefix& p : out.segments) out.projections.push_back(projectSegment(p));
  for (auto it = w.edges.rbegin(); it != w.edges.rend(); ++it) {
    LineageEdge le;
    le.childSegment = n - 1 - it->childRev;
    le.source = it->source;
    le.v2 = it->v2;
    if (it->v2) le.start = out.segments[le.childSegment].events.front();
    out.edges.push_back(std::move(le));
  }
  return out;
}

// The replay boundary before each v2 edge: the stable JSON of the segments before the child,
// rendered once into one shared array text (`segArray`, without its closing ']'; an edge's
// boundary is its first arrayLen bytes) and that boundary's manifest digest.
struct EdgeBoundary {
  size_t arrayLen = 0;  // segArray.size() at the edge
  std::string manifestDigest;
};
struct EdgeBoundaries {
  std::string segArray;
  std::vector<EdgeBoundary> edges;  // one per lineage edge (set for v2 edges)
};

// e.4, v2 edges: the replay of the segments before the child is replayable and matches the
// child's continuation-start (boundary digest, provider replay digest).
EdgeBoundaries checkEdgeReplays(const Lineage& out) {
  ReplayDigester digester(kProviderProjectionVersion);
  EdgeBoundaries b;
  std::string& segArray = b.segArray;  // stableJSON of segments [0, nextSeg) without ']'
  segArray = "[";
  std::vector<EdgeBoundary>& edgeBoundaries = b.edges;
  edgeBoundaries.resize(out.edges.size());
  bool prefixReplayable = true;
  size_t nextSeg = 0;
  for (size_t k = 0; k < out.edges.size(); ++k) {
    const LineageEdge& e = out.edges[k];
    while (nextSeg < e.childSegment) {
      const SegmentReplay& sr = out.projections[nextSeg];
      prefixReplayable = prefixReplayable && sr.replayable;
      for (const std::string& item : sr.itemStableJson) digester.addItem(item);
      if (nextSeg > 0) segArray.push_back(',');
      segArray += stableJson(out.segments[nextSeg].segmentJson());
      ++nextSeg;
    }
    if (!e.v2) continue;
    segArray.push_back(']');
    EdgeBoundary& eb = edgeBoundaries[k];
    eb.manifestDigest = manifestDigestOfStableSegments(segArray);
    segArray.pop_back();
    eb.arrayLen = segArray.size();
    const Json& start = e.start->json["actions"]["continuationStart"];
    if (!prefixReplayable || eb.manifestDigest != str(e.source, "boundaryDigest") ||
        digester.digest() != str(start, "providerReplayDigest")) {
      fail(code::runtime_lineage_replay_mismatch,
           "replay before " + out.headers[e.childSegment].runId + " differs from its start");
    }
  }
  return b;
}

// e.4, v2 edges: the durable claim state matches the child (claim and boundary, start event and
// provenance, the target's immutable header), read with the boundary already known and the
// identity summary of the segments before the child, for the claim rows' boundary rules.
void checkEdgeClaims(store_detail::Connection& c, const Lineage& out, const EdgeBoundaries& b) {
  const std::string& segArray = b.segArray;
  std::unordered_set<std::string> runs, invocations, turns;
  bool identitiesWellFormed = true;
  const std::string& session = out.segments.front().identity.sessionId;
  size_t idSeg = 0;
  std::string boundaryJson;
  for (size_t k = 0; k < out.edges.size(); ++k) {
    const LineageEdge& e = out.edges[k];
    for (; idSeg < e.childSegment; ++idSeg) {
      const PrefixIdentity& id = out.segments[idSeg].identity;
      identitiesWellFormed = identitiesWellFormed && !id.sessionId.empty() &&
                             !id.invocationId.empty() && !id.runId.empty() && !id.turnId.empty() &&
                             id.sessionId == session;
      runs.insert(id.runId);
      invocations.insert(id.invocationId);
      turns.insert(id.turnId);
    }
    if (!e.v2) continue;
    const EdgeBoundary& eb = b.edges[k];
    // stableJson(BoundaryCursor::toJson()): keys manifestDigest < protocol < segments.
    boundaryJson = "{\"manifestDigest\":";
    boundaryJson += stableJson(Json(eb.manifestDigest));
    boundaryJson += ",\"protocol\":\"runtime_boundary_cursor_v1\",\"segments\":";
    boundaryJson.append(segArray, 0, eb.arrayLen);
    boundaryJson += "]}";
    const Json lastSegment = out.segments[e.childSegment - 1].segmentJson();
    KnownBoundary known;
    known.stableJson = boundaryJson;
    known.manifestDigest = eb.manifestDigest;
    known.lastSegment = &lastSegment;
    known.identitiesWellFormed = identitiesWellFormed;
    known.sessionId = session;
    known.runs = &runs;
    known.invocations = &invocations;
    known.turns = &turns;
    const RunHeader& childH = out.headers[e.childSegment];
    std::optional<ClaimState> cs;
    try {
      cs = readClaimWithKnownBoundary(c, str(e.source, "claimId"), known);
    } catch (const Error& err) {
      fail(code::continuation_authority_unavailable, err.what());
    }
    const RuntimeEvent& start = *e.start;
    const bool ok =
        cs && cs->claim.claimId == str(e.source, "claimId") &&
        cs->claim.boundaryDigest == str(e.source, "boundaryDigest") && cs->startEventId &&
        *cs->startEventId == start.id && cs->startKind &&
        *cs->startKind == str(start.json["actions"]["continuationStart"], "provenance") &&
        immutableHeaderJson(cs->claim.targetRunHeader) == immutableHeaderJson(childH) &&
        cs->startEvent && encodeRuntimeEvent(*cs->startEvent) == encodeRuntimeEvent(start);
    if (!ok) {
      fail(code::runtime_lineage_claim_mismatch,
           "durable claim state does not match continuation run " + childH.runId);
    }
  }
}

}  // namespace

Lineage traverse(store_detail::Connection& c, const RunHeader& immediateHeader,
                 ImmutablePrefix immediate) {
  Lineage out = assembleLineage(walkAncestors(c, immediateHeader, std::move(immediate)));
  // V2 edges: replay of the segments before the child, then the durable claim state.
  const EdgeBoundaries boundaries = checkEdgeReplays(out);
  checkEdgeClaims(c, out, boundaries);
  return out;
}

}  // namespace continuation_detail

Lineage traverseLineage(RuntimeStore& store, const RunHeader& immediateHeader,
                        ImmutablePrefix immediate) {
  auto storeLock = continuation_detail::lockStore(store);
  return continuation_detail::traverse(continuation_detail::conn(store), immediateHeader,
                                       std::move(immediate));
}

}  // namespace crashsim
