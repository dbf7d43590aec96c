// replay_internal.h — incremental provider-replay digests (linear lineage checks).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "crashsim/continuation.h"

namespace crashsim {

// Composite replay from already-projected segments (no re-projection).
CompositeReplay composeReplay(std::span<const ImmutablePrefix* const> segments,
                              std::span<const SegmentReplay> projections, int version);

namespace continuation_detail {

// composeReplay without the runtime context: the items are moved out of `projections` and
// runtimeContext stays empty; immediateSourceContextStart is still set. The context is the
// events segments[s]->events[i] for i in projections[s].replayEventIndexes, in order, which
// the caller may move out of segments it owns instead of copying them.
CompositeReplay composeReplayConsuming(std::span<const ImmutablePrefix* const> segments,
                                       std::span<SegmentReplay> projections, int version);

// Streams stableJson({items, protocol:'provider_replay_plan_v1', providerProjectionVersion})
// into SHA-256; digest() may be taken after any number of items (it copies the context).
class ReplayDigester {
 public:
  explicit ReplayDigester(int version);
  ~ReplayDigester();
  void addItem(std::string_view itemStableJson);
  std::string digest() const;

 private:
  void update(std::string_view bytes);
  struct Ctx;
  int version_;
  size_t count_ = 0;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace continuation_detail
}  // namespace crashsim
