// ledger_index.cpp — the compact key index of a ledger and RuntimeLedger, which keeps one.
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
}

Sym SymbolTable::intern(std::string_view s) {
  const uint64_t h = hashView(s);
  const uint32_t found = index_.find(h, [&](uint32_t v) { return text(v) == s; });
  if (found != FlatIndex::kEmpty) return found;
  const Sym sym = static_cast<Sym>(size());
  chars_.append(s);
  offsets_.push_back(chars_.size());
  hashes_.push_back(h);
  index_.insert(h, sym, [this](uint32_t v) { return hashes_[v]; });
  return sym;
}

LedgerIndex LedgerIndex::build(std::span<const RuntimeEvent> events) {
  LedgerIndex index;
  index.reserve(events.size());
  for (const RuntimeEvent& e : events) index.append(e);
  return index;
}

void LedgerIndex::reserve(size_t events) {
  rows_.reserve(events);
  symbols_.reserve(events * 2 + 8, events * 48);
}

Sym LedgerIndex::internCached(Sym& last, std::string_view s) {
  if (last == kNoSym || symbols_.text(last) != s) last = symbols_.intern(s);
  return last;
}

void LedgerIndex::append(const RuntimeEvent& e) {
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

  r.id = symbols_.intern(e.id);
  if (eventIdSyms_.size() * 64 <= r.id) {
    eventIdSyms_.resize(std::max<size_t>(r.id / 64 + 1, eventIdSyms_.size() * 2));
  }
  uint64_t& word = eventIdSyms_[r.id / 64];
  const uint64_t bit = uint64_t{1} << (r.id % 64);
  if ((word & bit) != 0) flags |= EventRow::kDuplicateId;
  word |= bit;
  r.flags = flags;

  r.invocation = internCached(lastInvocation_, e.invocationId);
  r.session = internCached(lastSession_, e.sessionId);
  r.run = internCached(lastRun_, e.runId);
  r.turn = internCached(lastTurn_, e.turnId);
  if (e.contentKind == ContentKind::function_call ||
      e.contentKind == ContentKind::function_response || e.lane == Lane::function_call ||
      e.lane == Lane::function_response) {
    r.callId = symbols_.intern(e.callId);
    r.toolName = symbols_.intern(e.toolName);
  }
  r.refOperationId = internOptional(e.refOperationId);
  r.refToolCallId = internOptional(e.refToolCallId);
  if (e.lane == Lane::function_call) r.argsHash = internOptional(e.callArgsHash);
  if (e.toolDispatch) {
    const ToolDispatch& d = *e.toolDispatch;
    r.operationId = symbols_.intern(d.operationId);
    r.providerToolCallId = symbols_.intern(d.providerToolCallId);
    r.dispatchToolName = symbols_.intern(d.toolName);
    r.argsHash = symbols_.intern(d.canonicalArgsHash);
    r.recoveryMode = symbols_.intern(d.recoveryMode);
  } else if (e.toolRecovery) {
    r.operationId = symbols_.intern(e.toolRecovery->operationId);
  }
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
