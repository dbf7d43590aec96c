// ledger_reads.cpp — the public reads of runtime_events (crashsim/store.h "reads"): a run's
// events, every event, and ledgerHash, the digest that tells an unchanged ledger.
#include <mutex>
#include <string>
#include <vector>

#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "crashsim/store.h"
#include "store/store_impl.h"
#include "store/store_internal.h"

namespace crashsim {

std::vector<StoredEvent> RuntimeStore::readRunEvents(const std::string& sessionId,
                                                     const std::string& runId) const {
  std::lock_guard lk(impl_->mu);
  return store_detail::readRunEvents(*impl_->conn, sessionId, runId);
}

std::vector<StoredEvent> RuntimeStore::readAllEvents() const {
  std::lock_guard lk(impl_->mu);
  return store_detail::readAllEvents(*impl_->conn);
}

std::string RuntimeStore::ledgerHash() const {
  std::lock_guard lk(impl_->mu);
  auto st = impl_->conn->prepare(
      "SELECT event_id, session_id, invocation_id, run_id, turn_id, event_seq, event_kind, "
      "is_terminal, payload_json, committed_at FROM runtime_events "
      "ORDER BY invocation_id, event_seq, event_id");
  std::string buf;
  auto lp = [&](const std::string& s) {
    uint64_t n = s.size();
    for (int i = 7; i >= 0; --i) buf.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    buf += s;
  };
  lp("crashsim.runtime-events-ledger.v1");
  while (st.step()) {
    for (int i = 0; i < 5; ++i) lp(st.text(i));
    lp(std::to_string(st.int64(5)));
    lp(st.text(6));
    lp(std::to_string(st.int64(7)));
    lp(st.text(8));
    lp(formatEcmaNumber(st.real(9)));
  }
  return sha256Digest(buf);
}

}  // namespace crashsim
