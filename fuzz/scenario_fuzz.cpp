// The scenario loader (crashsim/scenario.h): one scenario file's text, accepted or refused with
// a stable code (deep args, unknown tools, args outside the closed tool schemas, ...).
#include "crashsim/error.h"
#include "crashsim/json.h"
#include "crashsim/scenario.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crashsim;
  try {
    (void)parseScenario(parseJson(fuzz::bytes(data, size)), "<fuzz>");
  } catch (const Error&) {
  }
  return 0;
}
