// prefix.cpp — immutable prefixes, segments and the boundary cursor (spec e.7).
#include <algorithm>
#include <set>
#include <type_traits>

#include "continuation/internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/plant.h"

namespace crashsim {

using continuation_detail::identityFromJson;

Json identityJson(const PrefixIdentity& id) {
  return Json{{"sessionId", id.sessionId},
              {"invocationId", id.invocationId},
              {"runId", id.runId},
              {"turnId", id.turnId}};
}

static Json positionJson(const ImmutablePrefix& p) {
  return Json{{"lastEventSeq", p.lastEventSeq},
              {"eventCount", p.eventCount},
              {"lastEventId", p.lastEventId}};
}

Json ImmutablePrefix::headerJson() const {
  return Json{{"protocol", "immutable_runtime_prefix_v1"},
              {"identity", identityJson(identity)},
              {"position", positionJson(*this)},
              {"prefixDigest", prefixDigest}};
}

Json ImmutablePrefix::segmentJson() const {
  return Json{{"protocol", "runtime_prefix_segment_v1"},
              {"identity", identityJson(identity)},
              {"position", positionJson(*this)},
              {"prefixDigest", prefixDigest}};
}

namespace {

// Planted bug (prefix_digest_ignores_payloads): the digest covers each event's id and position
// only, so an edited payload keeps its prefix digest.
std::string idsOnlyPrefixDigest(const ImmutablePrefix& p) {
  std::vector<RuntimeEvent> ids = p.events;
  for (RuntimeEvent& e : ids) {
    e.json = Json{{"id", e.id}};
    e.contentKind = ContentKind::none;
  }
  return crashsim::prefixDigest(p.identity, ids);
}

// Position and digest of a prefix whose events are in place.
void finishPrefix(ImmutablePrefix& p) {
  p.lastEventSeq = static_cast<int64_t>(p.events.size());
  p.eventCount = p.lastEventSeq;
  p.lastEventId = p.events.empty() ? std::string() : p.events.back().id;
  p.prefixDigest = planted("prefix_digest_ignores_payloads")
                       ? idsOnlyPrefixDigest(p)
                       : crashsim::prefixDigest(p.identity, p.events);
}

// Body of buildImmutablePrefix (readPrefix applies the same checks while it reads). Rows the
// caller owns are moved into the prefix instead of deep-copied (a RuntimeEvent is over 1.6 KB
// plus its JSON tree); the public overload copies from the caller's rows.
template <class Row>
ImmutablePrefix buildPrefix(const PrefixIdentity& identity, std::span<Row> rows,
                            std::optional<int64_t> upToEventSeq) {
  ImmutablePrefix p;
  p.identity = identity;
  p.events.reserve(rows.size());
  int64_t expected = 1;
  for (Row& row : rows) {
    if (upToEventSeq && row.eventSeq > *upToEventSeq) break;
    if (row.eventSeq != expected) {
      throw Error(code::event_seq_gap, "event_seq gap in " + identity.invocationId + ": expected " +
                                           std::to_string(expected) + ", found " +
                                           std::to_string(row.eventSeq));
    }
    const RuntimeEvent& e = row.event;
    if (e.partial) {
      throw Error(code::partial_in_prefix, "partial RuntimeEvent " + e.id + " in immutable prefix");
    }
    if (e.sessionId != identity.sessionId || e.invocationId != identity.invocationId ||
        e.runId != identity.runId || e.turnId != identity.turnId) {
      throw Error(code::runtime_identity_mismatch,
                  "RuntimeEvent " + e.id + " does not carry the prefix identity");
    }
    if constexpr (std::is_const_v<Row>) {
      p.events.push_back(e);
    } else {
      p.events.push_back(std::move(row.event));
    }
    ++expected;
  }
  finishPrefix(p);
  return p;
}

}  // namespace

ImmutablePrefix buildImmutablePrefix(const PrefixIdentity& identity,
                                     std::span<const StoredEvent> rows,
                                     std::optional<int64_t> upToEventSeq) {
  return buildPrefix(identity, rows, upToEventSeq);
}

ImmutablePrefix readImmutablePrefix(RuntimeStore& store, const PrefixIdentity& identity,
                                    std::optional<int64_t> upToEventSeq) {
  auto storeLock = continuation_detail::lockStore(store);
  return continuation_detail::readPrefix(continuation_detail::conn(store), identity, upToEventSeq);
}

Json BoundaryCursor::toJson() const {
  return Json{{"protocol", std::string(code::runtime_boundary_cursor_v1)},
              {"segments", segments},
              {"manifestDigest", manifestDigest}};
}

BoundaryCursor BoundaryCursor::fromJson(const Json& j) {
  if (!j.is_object() || j.size() != 3 || !j.contains("protocol") ||
      j["protocol"] != std::string(code::runtime_boundary_cursor_v1) || !j.contains("segments") ||
      !j["segments"].is_array() || j["segments"].empty() || !j.contains("manifestDigest") ||
      !j["manifestDigest"].is_string()) {
    throw Error(code::continuation_claim_invalid, "invalid runtime boundary cursor");
  }
  BoundaryCursor c;
  c.segments = j["segments"];
  c.manifestDigest = j["manifestDigest"].get<std::string>();
  for (const Json& s : c.segments) {
    if (!s.is_object() || s.size() != 4 || s.value("protocol", "") != "runtime_prefix_segment_v1" ||
        !s.contains("identity") || !s.contains("position") || !s.contains("prefixDigest")) {
      throw Error(code::continuation_claim_invalid, "invalid runtime prefix segment");
    }
    identityFromJson(s["identity"]);
  }
  if (crashsim::manifestDigest(c.segments) != c.manifestDigest) {
    throw Error(code::continuation_claim_invalid, "runtime boundary manifest digest mismatch");
  }
  return c;
}

BoundaryCursor buildBoundaryCursor(std::span<const ImmutablePrefix* const> segments) {
  BoundaryCursor c;
  std::set<std::string> runs, invocations, turns;
  for (const ImmutablePrefix* p : segments) {
    if (p->identity.sessionId != segments.front()->identity.sessionId) {
      throw Error(code::runtime_identity_mismatch, "boundary segments span several sessions");
    }
    if (!runs.insert(p->identity.runId).second ||
        !invocations.insert(p->identity.invocationId).second ||
        !turns.insert(p->identity.turnId).second) {
      throw Error(code::runtime_identity_mismatch, "boundary segments reuse a run identity");
    }
    c.segments.push_back(p->segmentJson());
  }
  c.manifestDigest = crashsim::manifestDigest(c.segments);
  return c;
}

namespace continuation_detail {

// buildPrefix over readInvocationEvents' rows, without materialising the rows: each event is
// copied once, from the connection's decode cache into the prefix. The checks and errors are
// buildPrefix's; a prefix error is raised only once every row has been read, so a row error
// (store_corrupt, row_payload_identity_mismatch) still takes precedence as before.
ImmutablePrefix readPrefix(store_detail::Connection& c, const PrefixIdentity& identity,
                           std::optional<int64_t> upToEventSeq) {
  ImmutablePrefix p;
  p.identity = identity;
  {
    auto st = c.prepare("SELECT MAX(event_seq) FROM runtime_events WHERE invocation_id = ?1");
    st.bind(1, identity.invocationId);
    if (st.step() && !st.isNull(0)) {
      int64_t n = st.int64(0);
      if (upToEventSeq) n = std::min(n, *upToEventSeq);
      if (n > 0 && n <= (int64_t{1} << 24)) p.events.reserve(static_cast<size_t>(n));
    }
  }
  std::optional<Error> deferred;
  bool done = false;
  int64_t expected = 1;
  store_detail::visitInvocationEvents(
      c, identity.invocationId, [&](int64_t eventSeq, const RuntimeEvent& e) {
        if (done) return;
        if (upToEventSeq && eventSeq > *upToEventSeq) {
          done = true;
          return;
        }
        done = true;
        if (eventSeq != expected) {
          deferred.emplace(code::event_seq_gap, "event_seq gap in " + identity.invocationId +
                                                    ": expected " + std::to_string(expected) +
                                                    ", found " + std::to_string(eventSeq));
          return;
        }
        if (e.partial) {
          deferred.emplace(code::partial_in_prefix,
                           "partial RuntimeEvent " + e.id + " in immutable prefix");
          return;
        }
        if (e.sessionId != identity.sessionId || e.invocationId != identity.invocationId ||
            e.runId != identity.runId || e.turnId != identity.turnId) {
          deferred.emplace(code::runtime_identity_mismatch,
                           "RuntimeEvent " + e.id + " does not carry the prefix identity");
          return;
        }
        done = false;
        p.events.push_back(e);
        ++expected;
      });
  if (deferred) throw *deferred;
  finishPrefix(p);
  return p;
}

PrefixIdentity identityOf(const RunHeader& h) {
  return PrefixIdentity{h.sessionId, h.invocationId, h.runId, h.turnId};
}

PrefixIdentity identityFromJson(const Json& j) {
  auto get = [&](const char* k) {
    if (!j.is_object() || !j.contains(k) || !j[k].is_string() || j[k].get<std::string>().empty()) {
      throw Error(code::continuation_claim_invalid, std::string("identity lacks ") + k);
    }
    return j[k].get<std::string>();
  };
  if (!j.is_object() || j.size() != 4) {
    throw Error(code::continuation_claim_invalid, "identity must have exactly four ids");
  }
  return PrefixIdentity{get("sessionId"), get("invocationId"), get("runId"), get("turnId")};
}

bool sameIdentity(const PrefixIdentity& a, const PrefixIdentity& b) {
  return a.sessionId == b.sessionId && a.invocationId == b.invocationId && a.runId == b.runId &&
         a.turnId == b.turnId;
}

}  // namespace continuation_detail
}  // namespace crashsim
