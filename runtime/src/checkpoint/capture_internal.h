// capture_internal.h — d.2 steps 2–7 shared by a live capture (capture.cpp) and a durable
// rebaseline's B1–B3 (rebaseline.cpp): one artifact writer, P18–P20 in one place.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "crashsim/continuation.h"
#include "crashsim/workspace_carrier.h"

namespace crashsim::checkpoint_detail {

// The checkpoint R of `kind` in `epoch` covering `prefix` (rows 1..p of request.run) with its
// artifact: carrier opened (created lazily), eligibility and L, private index and blobs [P18],
// tree, commit [P19], create-only ref (an equal ref is an exact retry, another commit
// workspace_fact_conflict), light verification, fsync of the ref's directory chain [P20].
// `beforeRef` runs between the commit and P19 (the capture's planted fact-before-ref).
struct CapturedArtifact {
  CheckpointFact fact;  // derivedFrom unset: the caller's
  std::optional<WorkspaceCarrier> carrier;
};
CapturedArtifact captureArtifact(RuntimeStore& store, const std::filesystem::path& storeDir,
                                 const GitRuntime& git, const CaptureRequest& request,
                                 const ImmutablePrefix& prefix, const std::string& kind,
                                 int64_t epoch,
                                 const std::function<void(const CheckpointFact&)>& beforeRef = {});

}  // namespace crashsim::checkpoint_detail
