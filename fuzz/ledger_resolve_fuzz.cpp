// `crashsim ledger resolve` input: a JSON array of RuntimeEvents → the RecoveryResolver and the
// Phase 0 ResumePlan, printed as stable JSON — the same calls as ledgerResolve().
#include "crashsim/error.h"
#include "crashsim/json.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/runtime_event.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crashsim;
  std::vector<RuntimeEvent> events;
  try {
    events = decodeRuntimeEventList(fuzz::bytes(data, size));
  } catch (const Error&) {
    return 0;
  }
  const ResumePlan plan = buildResumePlan(events, std::nullopt);
  const Json out = {{"resolution", toJson(plan.resolution)}, {"plan", toJson(plan, events)}};
  const std::string text = stableJson(out);
  // Pure: the same ledger gives the same bytes.
  const ResumePlan again = buildResumePlan(events, std::nullopt);
  if (stableJson(Json{{"resolution", toJson(again.resolution)}, {"plan", toJson(again, events)}}) !=
      text)
    fuzz::violated("buildResumePlan is not deterministic");
  return 0;
}
