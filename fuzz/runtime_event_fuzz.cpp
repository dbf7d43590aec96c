// The RuntimeEvent decoder (a stored row, one element of a ledger): decode, then the lossless
// round trip runtime_event.h promises — encode, decode again, the same event and the same bytes.
#include "crashsim/error.h"
#include "crashsim/json.h"
#include "crashsim/runtime_event.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crashsim;
  RuntimeEvent e;
  try {
    e = decodeRuntimeEvent(parseJson(fuzz::bytes(data, size)));
  } catch (const Error&) {
    return 0;  // refused with a stable code
  }
  const std::string once = encodeRuntimeEvent(e);
  const RuntimeEvent again = decodeRuntimeEvent(parseJson(once));
  if (!(again == e)) fuzz::violated("decode(encode(e)) != e for " + once);
  if (encodeRuntimeEvent(again) != once) fuzz::violated("encoding is not stable: " + once);
  return 0;
}
