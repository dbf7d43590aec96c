// ledger_index.cpp — the compact key index of a ledger and RuntimeLedger, which keeps one.
//
// Performance notes: building the index is where a ledger's strings are read (hashed and
// interned) once. For a span of events, build() runs a software pipeline: the event structs
// are prefetched far ahead, their strings' characters nearer, and each event's keys are hashed
// and their symbol-table slots prefetched a few events ahead of the event being interned, so
// a large ledger is not latency-bound on its scattered strings.
#include "recovery/ledger_index.h"

#include <algorithm>

#include "crashsim/runtime_ledger.h"

namespace crashsim::detail {

SymbolTable::SymbolTable() {
  offsets_.assign(2, 0);  // symbol 0 (kNoSym): never returned by intern()
  hashes_.push_back(0);
}

void SymbolTable::reserve(size_t symbols, size_t chars) {
  offsets_.reserve(symbols + 1);
  hashes_.reserve(symbols);
  chars_.reserve(chars);
  if (size() == 1) index_ = FlatIndex(symbols);
}

Sym SymbolTable::intern(std::string_view s, uint64_t h) {
  const uint32_t found = index_.find(h, [&](uint32_t v) { return text(v) == s; });
  if (found != FlatIndex::kEmpty) return found;
  const Sym sym = static_cast<Sym>(size());
  chars_.append(s);
  offsets_.push_back(chars_.size());
  hashes_.push_back(h);
  index_.insert(h, sym, [this](uint32_t v) { return hashes_[v]; });
  return sym;
}

void EventKeys::collect(const RuntimeEvent& e) {
  present = 0;
  auto set = [this](Field f, std::string_view s) {
    text[f] = s;
    present |= static_cast<uint16_t>(1u << f);
  };
  auto setOptional = [&](Field f, const std::optional<std::string>& s) {
    if (s) set(f, *s);
  };
  set(kId, e.id);
  if (e.contentKind == ContentKind::function_call ||
      e.contentKind == ContentKind::function_response || e.lane == Lane::function_call ||
      e.lane == Lane::function_response) {
    set(kCallId, e.callId);
    set(kToolName, e.toolName);
  }
  setOptional(kRefOperationId, e.refOperationId);
  setOptional(kRefToolCallId, e.refToolCallId);
  if (e.lane == Lane::function_call) setOptional(kArgsHash, e.callArgsHash);
  if (e.toolDispatch) {
    const ToolDispatch& d = *e.toolDispatch;
    set(kOperationId, d.operationId);
    set(kProviderToolCallId, d.providerToolCallId);
    set(kDispatchToolName, d.toolName);
    set(kArgsHash, d.canonicalArgsHash);
    set(kRecoveryMode, d.recoveryMode);
  } else if (e.toolRecovery) {
    set(kOperationId, e.toolRecovery->operationId);
  }
}

void EventKeys::hashAll() {
  for (uint16_t bits = present; bits != 0; bits &= static_cast<uint16_t>(bits - 1)) {
    const int f = std::countr_zero(bits);
    hash[f] = hashView(text[f]);
  }
}

namespace {

// The struct lines build() reads before the lane is known: flags, envelope ids, call id and
// name, the protocol marker and the refs (RuntimeEvent's hot fields come first).
void prefetchHead(const RuntimeEvent& e) { prefetchRange(&e.lane, &e.refToolCallId + 1); }

// Once the lane is in cache: the payload lines of its lane.
void prefetchPayload(const RuntimeEvent& e) {
  if (e.lane == Lane::function_call) {
    prefetchRange(&e.callArgsHash, &e.callArgsHash + 1);
  } else if (e.lane == Lane::tool_dispatch) {
    prefetchRange(&e.toolDispatch, reinterpret_cast<const char*>(&e.toolDispatch) +
                                       5 * sizeof(std::string) + sizeof(std::string));
  } else if (e.lane == Lane::reconcile_result || e.lane == Lane::recovery_decision) {
    prefetchRange(&e.toolRecovery,
                  reinterpret_cast<const char*>(&e.toolRecovery) + 2 * sizeof(std::string));
  }
}

}  // namespace

LedgerIndex LedgerIndex::build(std::span<const RuntimeEvent> events) {
  LedgerIndex index;
  index.reserve(events.size());
  const size_t n = events.size();
  // Distances (in events) of the pipeline stages ahead of the event being interned.
  constexpr size_t kHead = 24, kPayload = 16, kStrings = 10, kHash = 4;
  constexpr size_t kRing = 16;  // > kStrings: keys are collected kStrings ahead
  EventKeys ring[kRing];
  auto collect = [&](size_t j) {
    EventKeys& k = ring[j % kRing];
    k.collect(events[j]);
    for (uint16_t bits = k.present; bits != 0; bits &= static_cast<uint16_t>(bits - 1)) {
      prefetchView(k.text[std::countr_zero(bits)]);
    }
    prefetchView(events[j].invocationId);
    prefetchView(events[j].sessionId);
    prefetchView(events[j].runId);
    prefetchView(events[j].turnId);
  };
  auto hash = [&](size_t j) {
    EventKeys& k = ring[j % kRing];
    k.hashAll();
    for (uint16_t bits = k.present; bits != 0; bits &= static_cast<uint16_t>(bits - 1)) {
      index.symbols_.prefetch(k.hash[std::countr_zero(bits)]);
    }
  };
  for (size_t j = 0; j < std::min(n, kHead); ++j) prefetchHead(events[j]);
  for (size_t j = 0; j < std::min(n, kPayload); ++j) prefetchPayload(events[j]);
  for (size_t j = 0; j < std::min(n, kStrings); ++j) collect(j);
  for (size_t j = 0; j < std::min(n, kHash); ++j) hash(j);
  for (size_t i = 0; i < n; ++i) {
    if (i + kHead < n) prefetchHead(events[i + kHead]);
    if (i + kPayload < n) prefetchPayload(events[i + kPayload]);
    if (i + kStrings < n) collect(i + kStrings);
    if (i + kHash < n) hash(i + kHash);
    index.add(events[i], ring[i % kRing]);
  }
  return index;
}

void LedgerIndex::reserve(size_t events) {
  rows_.reserve(events);
  symbols_.reserve(events * 2 + 8, events * 48);
}

void LedgerIndex::append(const RuntimeEvent& e) {
  EventKeys keys;
  keys.collect(e);
  keys.hashAll();
  add(e, keys);
}

Sym LedgerIndex::internCached(Sym& last, std::string_view s) {
  if (last == kNoSym || symbols_.text(last) != s) last = symbols_.intern(s, hashView(s));
  return last;
}

void LedgerIndex::add(const RuntimeEvent& e, const EventKeys& keys) {
  EventRow& r = rows_.emplace_back();
  r.lane = e.lane;
  r.contentKind = e.contentKind;
  uint8_t flags = 0;
  if (e.partial) flags |= EventRow::kPartial;
  if (e.hidden) flags |= EventRow::kHidden;
  if (e.isError) flags |= EventRow::kIsError;
  if (e.runtimeProtocol) flags |= EventRow::kProtocolMarker;
  if (e.toolDispatch) flags |= EventRow::kToolDispatch;
  if (e.toolRecovery) flags |= EventRow::kToolRecovery;
  r.invocation = internCached(lastInvocation_, e.invocationId);
  r.session = internCached(lastSession_, e.sessionId);
  r.run = internCached(lastRun_, e.runId);
  r.turn = internCached(lastTurn_, e.turnId);

  auto sym = [&](EventKeys::Field f) {
    return keys.has(f) ? symbols_.intern(keys.text[f], keys.hash[f]) : kNoSym;
  };
  r.id = sym(EventKeys::kId);
  if (eventIdSyms_.size() * 64 <= r.id) {
    eventIdSyms_.resize(std::max<size_t>(r.id / 64 + 1, eventIdSyms_.size() * 2));
  }
  uint64_t& word = eventIdSyms_[r.id / 64];
  const uint64_t bit = uint64_t{1} << (r.id % 64);
  if ((word & bit) != 0) flags |= EventRow::kDuplicateId;
  word |= bit;
  r.flags = flags;

  r.callId = sym(EventKeys::kCallId);
  r.toolName = sym(EventKeys::kToolName);
  r.refOperationId = sym(EventKeys::kRefOperationId);
  r.refToolCallId = sym(EventKeys::kRefToolCallId);
  r.argsHash = sym(EventKeys::kArgsHash);
  r.operationId = sym(EventKeys::kOperationId);
  r.providerToolCallId = sym(EventKeys::kProviderToolCallId);
  r.dispatchToolName = sym(EventKeys::kDispatchToolName);
  r.recoveryMode = sym(EventKeys::kRecoveryMode);
}

}  // namespace crashsim::detail

namespace crashsim {

RuntimeLedger::RuntimeLedger() : index_(std::make_unique<detail::LedgerIndex>()) {}

RuntimeLedger::RuntimeLedger(std::vector<RuntimeEvent> events)
    : events_(std::move(events)),
      index_(std::make_unique<detail::LedgerIndex>(detail::LedgerIndex::build(events_))) {}

RuntimeLedger::~RuntimeLedger() = default;
RuntimeLedger::RuntimeLedger(RuntimeLedger&&) noexcept = default;
RuntimeLedger& RuntimeLedger::operator=(RuntimeLedger&&) noexcept = default;

void RuntimeLedger::reserve(size_t events) {
  events_.reserve(events);
  index_->reserve(events);
}

void RuntimeLedger::append(RuntimeEvent event) {
  events_.push_back(std::move(event));
  index_->append(events_.back());
}

}  // namespace crashsim
