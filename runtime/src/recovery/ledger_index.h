// ledger_index.h — the compact key index of a ledger (internal to the recovery room).
//
// One EventRow per event, in physical order, holding what the scanner, the resolver and the
// resume plan read of every event: the lane, the flags and every id they compare, each id
// interned to a 32-bit symbol of the ledger's SymbolTable. Interning is exact (a symbol is a
// distinct byte string, found by hash and then compared byte for byte), so two ids are
// byte-equal if and only if their symbols are equal: the passes compare integers and read one
// 64-byte row per event instead of the events' scattered strings.
//
// An index describes the events it was built from and nothing else. It is built once per
// event, in physical order (LedgerIndex::append), by RuntimeLedger when an event is appended
// (so it can never go stale: a RuntimeLedger's events are immutable) or, for a plain span of
// events, by LedgerIndex::build() at the start of a scan.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/runtime_event.h"
#include "recovery/flat_index.h"

namespace crashsim {
struct RecoveryResolution;
struct ResumePlan;
struct ToolDecision;
}  // namespace crashsim

namespace crashsim::detail {

// A symbol: the index of a distinct string in a SymbolTable. kNoSym is an absent optional
// string; the empty string, when present, has a symbol of its own.
using Sym = uint32_t;
inline constexpr Sym kNoSym = 0;

// Distinct strings, each stored once in one contiguous character buffer, in order of first
// appearance.
class SymbolTable {
 public:
  SymbolTable();
  // The symbol of s, whose hashView() is h (added when s is new).
  Sym intern(std::string_view s, uint64_t h);
  void prefetch(uint64_t h) const { index_.prefetch(h); }
  // Valid until the next intern().
  std::string_view text(Sym s) const {
    return {chars_.data() + offsets_[s], static_cast<size_t>(offsets_[s + 1] - offsets_[s])};
  }
  // Number of symbols, kNoSym included (so every symbol is < size()).
  size_t size() const { return offsets_.size() - 1; }
  void reserve(size_t symbols, size_t chars);

 private:
  std::string chars_;
  std::vector<uint64_t> offsets_;  // symbol s is chars_[offsets_[s], offsets_[s + 1])
  std::vector<uint64_t> hashes_;   // hashView(text(s)), for growing the index
  FlatIndex index_;
};

struct alignas(64) EventRow {
  enum Flag : uint8_t {
    kPartial = 1,
    kHidden = 2,
    kIsError = 4,
    kProtocolMarker = 8,  // carries actions.runtimeProtocol
    kToolDispatch = 16,   // has the toolDispatch view
    kToolRecovery = 32,   // has the toolRecovery view
    kDuplicateId = 64,    // an earlier event of the indexed events has the same id
  };
  Lane lane = Lane::ordinary;
  ContentKind contentKind = ContentKind::none;
  uint8_t flags = 0;
  // Envelope (a.1).
  Sym id = kNoSym, invocation = kNoSym, session = kNoSym, run = kNoSym, turn = kNoSym;
  // content.id / content.name of a function_call or function_response, else kNoSym.
  Sym callId = kNoSym, toolName = kNoSym;
  Sym refOperationId = kNoSym, refToolCallId = kNoSym;
  // function_call: the cached callArgsHash (kNoSym when absent); tool_dispatch:
  // toolDispatch.canonicalArgsHash.
  Sym argsHash = kNoSym;
  // tool_dispatch: toolDispatch.operationId; reconcile/decision fact: toolRecovery.operationId.
  Sym operationId = kNoSym;
  // tool_dispatch only.
  Sym providerToolCallId = kNoSym, dispatchToolName = kNoSym, recoveryMode = kNoSym;

  bool has(Flag f) const { return (flags & f) != 0; }
};

// The strings of one event the index interns besides its envelope (which build() interns
// through a last-value cache), with their hashes: the one definition of which id of an event
// fills which row field.
struct EventKeys {
  enum Field {
    kId,
    kCallId,
    kToolName,
    kRefOperationId,
    kRefToolCallId,
    kArgsHash,
    kOperationId,
    kProviderToolCallId,
    kDispatchToolName,
    kRecoveryMode,
    kFieldCount
  };
  std::string_view text[kFieldCount];
  uint64_t hash[kFieldCount];
  uint16_t present = 0;  // bit f: field f is set

  void collect(const RuntimeEvent& e);
  void hashAll();
  bool has(Field f) const { return (present >> f) & 1u; }
};

class LedgerIndex {
 public:
  // The index of the given events (appended one by one, in order).
  static LedgerIndex build(std::span<const RuntimeEvent> events);

  // Appends the row of the next event in physical order.
  void append(const RuntimeEvent& e);
  void reserve(size_t events);

  std::span<const EventRow> rows() const { return rows_; }
  const EventRow& row(size_t i) const { return rows_[i]; }
  size_t size() const { return rows_.size(); }
  // Valid until the next append().
  std::string_view text(Sym s) const { return symbols_.text(s); }
  size_t symbolCount() const { return symbols_.size(); }

 private:
  void add(const RuntimeEvent& e, const EventKeys& keys);
  Sym internCached(Sym& last, std::string_view s);

  std::vector<EventRow> rows_;
  SymbolTable symbols_;
  std::vector<uint64_t> eventIdSyms_;  // bitmap: symbol is the id of an indexed event
  // The previous event's envelope symbols: events of one run share them.
  Sym lastInvocation_ = kNoSym, lastSession_ = kNoSym, lastRun_ = kNoSym, lastTurn_ = kNoSym;
};

// Told each final decision of a resolution, in decision order, right after it is decided
// (while it is still in cache): the resume plan projects its operations this way instead of
// reading every decision again.
class DecisionSink {
 public:
  virtual void decided(const ToolDecision& decision) = 0;

 protected:
  ~DecisionSink() = default;
};

// The RecoveryResolver and the Phase 0 ResumePlan over events and their index (the public
// overloads build the index of a span per call, or take the one a RuntimeLedger keeps).
RecoveryResolution resolveRecovery(std::span<const RuntimeEvent> events, const LedgerIndex& index,
                                   DecisionSink* sink = nullptr);
ResumePlan buildResumePlan(std::span<const RuntimeEvent> events, const LedgerIndex& index,
                           std::optional<uint64_t> expectedRuntimeEventHighWater);

}  // namespace crashsim::detail
