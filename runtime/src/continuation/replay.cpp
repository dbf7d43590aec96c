// replay.cpp — composite provider replay (spec e.3) with incremental digests.
#include <openssl/evp.h>

#include <memory>
#include <unordered_map>

#include "continuation/internal.h"
#include "continuation/replay_internal.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/plant.h"
#include "crashsim/recovery_resolver.h"

namespace crashsim {

namespace {

Json itemBase(const char* type, const RuntimeEvent& e) {
  Json item = Json::object();
  item["type"] = type;
  item["eventId"] = e.id;
  item["ts"] = e.json.contains("ts") ? e.json["ts"] : Json(e.ts);
  return item;
}

std::string contentText(const RuntimeEvent& e) {
  const Json& c = e.json["content"];
  return c.contains("text") && c["text"].is_string() ? c["text"].get<std::string>() : std::string();
}

// e.3 step 1, the resolver gate: the segment's blocked reason when the resolver finds its tool
// ledger corrupt or an operation not settled (indeterminate, parked); nullopt otherwise.
std::optional<std::string> resolverGate(const std::vector<RuntimeEvent>& events) {
  RecoveryResolution res = resolveRecovery(events);
  bool corrupt = res.hasCorruption;
  bool unsettled = false;
  for (const ToolDecision& d : res.decisions) {
    if (d.status == code::corruption) corrupt = true;
    if (d.status == code::indeterminate || d.status == code::parked) unsettled = true;
  }
  if (corrupt) return std::string(code::tool_recovery_corruption);
  if (unsettled) return std::string(code::tool_recovery_unsettled);
  return std::nullopt;
}

// A function call the projection has seen: its item, its event, and whether a response
// answered it.
struct ReplayCallState {
  size_t item;
  size_t event;
  std::string toolName;
  bool answered = false;
};

// e.3 step 3, the projection: each event's provider item (text, thinking, tool call, tool
// result) appended to out.items with the event it came from. An event the projection cannot
// carry (a partial event, an unsupported role, a response without its call or with another
// tool's name) is a blocking diagnostic.
struct SegmentItemProjection {
  explicit SegmentItemProjection(SegmentReplay& o) : out(o) {}
  SegmentReplay& out;
  std::unordered_map<std::string, ReplayCallState> calls;
  std::vector<std::string> callOrder;
  std::vector<size_t> itemEvent;  // event index per item
  bool blocking = false;

  void block(std::string_view c, const RuntimeEvent& e) {
    out.diagnostics.push_back({std::string(c), e.id, true});
    blocking = true;
  }
  void addItem(Json item, size_t ev) {
    out.items.push_back(std::move(item));
    itemEvent.push_back(ev);
  }

  void event(const RuntimeEvent& e, size_t i) {
    if (e.partial) {
      block(code::partial_skipped, e);
      return;
    }
    if (e.hidden) return;
    if (e.isTerminal()) return;  // diagnostic only; never user input
    switch (e.contentKind) {
      case ContentKind::none:
      case ContentKind::error:
        break;  // action-only / error content: diagnostic only
      case ContentKind::text:
        textItem(e, i);
        break;
      case ContentKind::thinking:
        thinkingItem(e, i);
        break;
      case ContentKind::function_call:
        toolCallItem(e, i);
        break;
      case ContentKind::function_response:
        toolResultItem(e, i);
        break;
    }
  }

  void textItem(const RuntimeEvent& e, size_t i) {
    std::string text = contentText(e);
    if (e.role == Role::system) return;
    if (e.role == Role::user) {
      if (text.empty()) return;
      Json item = itemBase("text", e);
      item["role"] = "user";
      item["text"] = text;
      addItem(std::move(item), i);
    } else if (e.role == Role::model) {
      if (text.empty()) return;
      Json item = itemBase("text", e);
      item["role"] = "assistant";
      item["text"] = text;
      addItem(std::move(item), i);
    } else {
      block(code::provider_replay_unsupported, e);
    }
  }

  void thinkingItem(const RuntimeEvent& e, size_t i) {
    if (e.role != Role::model) {
      block(code::provider_replay_unsupported, e);
      return;
    }
    std::string text = contentText(e);
    if (text.empty()) return;
    Json item = itemBase("thinking", e);
    item["text"] = text;
    const Json& c = e.json["content"];
    if (c.contains("signature")) item["signature"] = c["signature"];
    addItem(std::move(item), i);
  }

  void toolCallItem(const RuntimeEvent& e, size_t i) {
    if (e.role != Role::model) {
      block(code::provider_replay_unsupported, e);
      return;
    }
    Json item = itemBase("tool_call", e);
    item["toolCallId"] = e.callId;
    item["toolName"] = e.toolName;
    item["args"] = e.json["content"]["args"];
    calls[e.callId] = ReplayCallState{out.items.size(), i, e.toolName};
    callOrder.push_back(e.callId);
    addItem(std::move(item), i);
  }

  void toolResultItem(const RuntimeEvent& e, size_t i) {
    auto it = calls.find(e.callId);
    if (it == calls.end() || it->second.answered) {
      block(code::unmatched_tool_result, e);
      return;
    }
    if (it->second.toolName != e.toolName) {
      block(code::tool_id_mismatch, e);
      return;
    }
    it->second.answered = true;
    Json item = itemBase("tool_result", e);
    item["toolCallId"] = e.callId;
    item["toolName"] = e.toolName;
    item["result"] = e.json["content"]["result"];
    item["isError"] = e.isError;
    addItem(std::move(item), i);
  }
};

// e.3 step 4: unanswered calls are dropped (a diagnostic each; their items `dropped`, their
// events `eventTrimmed`). False when an item after the first dropped one is kept: a
// non-suffix gap.
bool dropUnansweredCalls(SegmentItemProjection& p, const std::vector<RuntimeEvent>& events,
                         std::vector<bool>& dropped, std::vector<bool>& eventTrimmed) {
  SegmentReplay& out = p.out;
  size_t firstUnmatched = out.items.size();
  for (const std::string& id : p.callOrder) {
    const ReplayCallState& cs = p.calls[id];
    if (cs.answered) continue;
    dropped[cs.item] = true;
    eventTrimmed[cs.event] = true;
    firstUnmatched = std::min(firstUnmatched, cs.item);
    out.diagnostics.push_back({std::string(code::unmatched_tool_call), events[cs.event].id, false});
  }
  for (size_t k = firstUnmatched; k < out.items.size(); ++k) {
    if (!dropped[k]) return false;
  }
  return true;
}

// e.3 step 5: the items are trimmed to the last stable one (a tool result or a user text);
// the events of every item not kept are `eventTrimmed`. Renders the kept items' stable JSON.
void trimToLastStable(SegmentReplay& out, const std::vector<bool>& dropped,
                      const std::vector<size_t>& itemEvent, std::vector<bool>& eventTrimmed) {
  std::optional<size_t> lastStable;
  for (size_t k = 0; k < out.items.size(); ++k) {
    if (dropped[k]) continue;
    const Json& it = out.items[k];
    if (it["type"] == "tool_result" || (it["type"] == "text" && it["role"] == "user"))
      lastStable = k;
  }
  size_t keep = lastStable ? *lastStable + 1 : 0;
  std::vector<Json> kept;
  for (size_t k = 0; k < out.items.size(); ++k) {
    if (k < keep && !dropped[k]) {
      kept.push_back(std::move(out.items[k]));
    } else {
      eventTrimmed[itemEvent[k]] = true;
    }
  }
  out.items = std::move(kept);
  out.itemStableJson.reserve(out.items.size());
  for (const Json& it : out.items) out.itemStableJson.push_back(stableJson(it));
}

// e.3 step 6: the segment's replay events, the visible events not trimmed.
void selectReplayEvents(SegmentReplay& out, const std::vector<RuntimeEvent>& events,
                        const std::vector<bool>& eventTrimmed) {
  // Planted bug: an unanswered (trimmed) call stays in the history handed to the model (V8's
  // replay check must catch it; the ledger itself is unchanged).
  const bool keepUnanswered = planted("replay_keeps_unanswered_call");
  for (size_t i = 0; i < events.size(); ++i) {
    const bool unansweredCall =
        eventTrimmed[i] && events[i].contentKind == ContentKind::function_call;
    if (!events[i].hidden && (!eventTrimmed[i] || (keepUnanswered && unansweredCall)))
      out.replayEventIndexes.push_back(i);
  }
}

}  // namespace

SegmentReplay projectSegment(const ImmutablePrefix& prefix, int version) {
  SegmentReplay out;
  const auto& events = prefix.events;
  // 1. resolver gate.
  if (std::optional<std::string> blocked = resolverGate(events)) {
    out.blockedReason = std::move(*blocked);
    return out;
  }
  // 2. projection version.
  if (version != kProviderProjectionVersion) {
    out.blockedReason = std::string(code::provider_replay_unsupported);
    return out;
  }
  // 3. projection.
  SegmentItemProjection projection(out);
  for (size_t i = 0; i < events.size(); ++i) projection.event(events[i], i);
  if (projection.blocking) {
    out.items.clear();
    out.blockedReason = std::string(code::provider_replay_unsupported);
    return out;
  }
  // Unmatched calls are dropped (diagnostic); 4. any kept item after one → non-suffix gap.
  std::vector<bool> dropped(out.items.size(), false);
  std::vector<bool> eventTrimmed(events.size(), false);
  if (!dropUnansweredCalls(projection, events, dropped, eventTrimmed)) {
    out.items.clear();
    out.blockedReason = std::string(code::provider_replay_non_suffix_gap);
    return out;
  }
  // 5. suffix trimming to the last stable item.
  trimToLastStable(out, dropped, projection.itemEvent, eventTrimmed);
  // 6. segment replay events.
  selectReplayEvents(out, events, eventTrimmed);
  out.replayable = true;
  return out;
}

// ---------------------------------------------------------------------------------------
// Incremental digest: stableJson({items, protocol, providerProjectionVersion}) is
// `{"items":[` item (`,` item)* `],"protocol":"provider_replay_plan_v1",
// "providerProjectionVersion":N}` because the three keys sort in that order.

namespace continuation_detail {

struct ReplayDigester::Ctx {
  EVP_MD_CTX* ctx = nullptr;
  ~Ctx() {
    if (ctx) EVP_MD_CTX_free(ctx);
  }
};

ReplayDigester::ReplayDigester(int version) : version_(version), ctx_(std::make_unique<Ctx>()) {
  ctx_->ctx = EVP_MD_CTX_new();
  if (!ctx_->ctx || EVP_DigestInit_ex(ctx_->ctx, EVP_sha256(), nullptr) != 1) {
    throw Error(code::sqlite_error, "SHA-256 unavailable");
  }
  update("{\"items\":[");
}
ReplayDigester::~ReplayDigester() = default;

void ReplayDigester::update(std::string_view bytes) {
  EVP_DigestUpdate(ctx_->ctx, bytes.data(), bytes.size());
}

void ReplayDigester::addItem(std::string_view itemStableJson) {
  if (count_++ > 0) update(",");
  update(itemStableJson);
}

std::string ReplayDigester::digest() const {
  EVP_MD_CTX* copy = EVP_MD_CTX_new();
  EVP_MD_CTX_copy_ex(copy, ctx_->ctx);
  std::string tail = "],\"protocol\":\"provider_replay_plan_v1\",\"providerProjectionVersion\":" +
                     formatEcmaNumber(version_) + "}";
  EVP_DigestUpdate(copy, tail.data(), tail.size());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(copy, md, &len);
  EVP_MD_CTX_free(copy);
  static const char* hex = "0123456789abcdef";
  std::string out = "sha256:";
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(hex[md[i] >> 4]);
    out.push_back(hex[md[i] & 15]);
  }
  return out;
}

}  // namespace continuation_detail

std::string providerReplayDigest(const Json& items, int version) {
  return sha256Digest(stableJson(Json{{"protocol", "provider_replay_plan_v1"},
                                      {"providerProjectionVersion", version},
                                      {"items", items}}));
}

namespace {

// Body of composeReplay. With `Consume` the items are moved out of the projections and the
// runtime context is left empty (the planner moves the events out of its own segments).
template <bool Consume, class Projection>
CompositeReplay compose(std::span<const ImmutablePrefix* const> segments,
                        std::span<Projection> projections, int version) {
  CompositeReplay out;
  out.providerProjectionVersion = version;
  out.boundary = buildBoundaryCursor(segments);
  continuation_detail::ReplayDigester digester(version);
  // Size the concatenation once: growing a vector of ~1.7 KB events re-allocates (and, past
  // the mmap threshold, re-maps) the whole context several times on long lineages.
  size_t contextSize = 0, itemCount = 0;
  for (const SegmentReplay& sr : projections) {
    contextSize += sr.replayEventIndexes.size();
    itemCount += sr.items.size();
  }
  if constexpr (!Consume) out.runtimeContext.reserve(contextSize);
  out.providerItems = Json::array();
  out.providerItems.get_ref<Json::array_t&>().reserve(itemCount);
  size_t contextAt = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    Projection& sr = projections[s];
    if (!sr.replayable) {
      out.replayable = false;
      out.blockedReason = sr.blockedReason;
      out.blockedSegment = s;
      out.providerItems = Json::array();
      out.runtimeContext.clear();
      return out;
    }
    if (s + 1 == segments.size()) out.immediateSourceContextStart = contextAt;
    for (size_t k = 0; k < sr.items.size(); ++k) {
      if constexpr (Consume) {
        out.providerItems.push_back(std::move(sr.items[k]));
      } else {
        out.providerItems.push_back(sr.items[k]);
      }
      digester.addItem(sr.itemStableJson[k]);
    }
    if constexpr (!Consume) {
      for (size_t idx : sr.replayEventIndexes) {
        out.runtimeContext.push_back(segments[s]->events[idx]);
      }
    }
    contextAt += sr.replayEventIndexes.size();
  }
  out.providerReplayDigest = digester.digest();
  out.replayable = true;
  return out;
}

}  // namespace

CompositeReplay composeReplay(std::span<const ImmutablePrefix* const> segments,
                              std::span<const SegmentReplay> projections, int version) {
  return compose<false>(segments, projections, version);
}

namespace continuation_detail {
CompositeReplay composeReplayConsuming(std::span<const ImmutablePrefix* const> segments,
                                       std::span<SegmentReplay> projections, int version) {
  return compose<true>(segments, projections, version);
}
}  // namespace continuation_detail

CompositeReplay buildCompositeReplay(std::span<const ImmutablePrefix* const> segments,
                                     int version) {
  std::vector<SegmentReplay> projections;
  projections.reserve(segments.size());
  for (const ImmutablePrefix* p : segments) projections.push_back(projectSegment(*p, version));
  return composeReplay(segments, projections, version);
}

}  // namespace crashsim
