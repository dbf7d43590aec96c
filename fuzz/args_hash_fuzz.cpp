// `crashsim ledger args-hash` and stable JSON (spec a.6): the first byte picks the tool name,
// the rest is the args text. An accepted value's stable JSON parses back to a value with the
// same stable JSON, and its canonicalArgsHash does not depend on the text's key order or
// whitespace (it hashes the value).
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/json.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crashsim;
  static const char* const kTools[] = {"Write", "Edit", "Bash", "Read", "Unknown"};
  if (size == 0) return 0;
  const std::string tool = kTools[data[0] % 5];
  Json args;
  std::string stable, hash;
  try {
    args = parseJson(fuzz::bytes(data + 1, size - 1));
    stable = stableJson(args);
    hash = canonicalArgsHash(tool, args);
  } catch (const Error&) {
    return 0;
  }
  const Json back = parseJson(stable);
  if (stableJson(back) != stable) fuzz::violated("stableJson is not a fixed point: " + stable);
  if (canonicalArgsHash(tool, back) != hash)
    fuzz::violated("canonicalArgsHash changed across a stable-JSON round trip: " + stable);
  return 0;
}
