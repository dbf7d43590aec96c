// crashsim/runtime_ledger.h — one run's RuntimeEvents held in memory for recovery.
//
// A RuntimeLedger is the events of one run in physical (durable) order together with the
// compact key index the RecoveryResolver and the ResumePlan scan: when an event is appended,
// every id those passes compare (envelope ids, call id and tool name, refs, the dispatch's and
// recovery facts' ids and hashes) is interned to a 32-bit symbol and its lane and flags are
// copied into one 64-byte row. The passes then read rows and compare integers instead of
// chasing each event's strings, so their cost per event stays flat as the ledger outgrows the
// caches. Interning is exact: equal symbols mean byte-equal strings.
//
// Append-only and immutable: an appended event cannot be changed, so the index can never
// disagree with the events. Like std::vector, append() may invalidate spans and references
// from events() or operator[] (and so a ResumePlan's PlanArgs of this ledger's calls): plan
// again after appending. resolveRecovery(ledger) / buildResumePlan(ledger) give exactly
// what the span overloads give for ledger.events() (those build the same index per call).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "crashsim/runtime_event.h"

namespace crashsim {

namespace detail {
class LedgerIndex;
}

class RuntimeLedger {
 public:
  RuntimeLedger();
  explicit RuntimeLedger(std::vector<RuntimeEvent> events);
  ~RuntimeLedger();
  RuntimeLedger(RuntimeLedger&&) noexcept;
  RuntimeLedger& operator=(RuntimeLedger&&) noexcept;

  // Appends the next event in physical order (and its index row).
  void append(RuntimeEvent event);
  void reserve(size_t events);

  std::span<const RuntimeEvent> events() const { return events_; }
  size_t size() const { return events_.size(); }
  const RuntimeEvent& operator[](size_t i) const { return events_[i]; }

  // The key index (internal to the recovery passes).
  const detail::LedgerIndex& index() const { return *index_; }

 private:
  std::vector<RuntimeEvent> events_;
  std::unique_ptr<detail::LedgerIndex> index_;
};

}  // namespace crashsim
