// `crashsim report merge` of one report: a sweep report (report.schema.json) or a durability
// report (durability.schema.json). An input its schema accepts is read and merged without any
// error but ReportError / a refusal, and the merged document follows the same schema — the
// property `report merge` checks before it writes (cli.cpp requireSchema).
#include <stdexcept>

#include "crashsim/error.h"
#include "crashsim/harness/durability.h"
#include "crashsim/json.h"
#include "crashsim/reports/report.h"
#include "crashsim/reports/schema_validator.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace crashsim;
  Json doc;
  try {
    doc = parseJson(fuzz::bytes(data, size));
  } catch (const Error&) {
    return 0;
  }
  const bool durability = harness::isDurabilityJson(doc);
  const Json& schema = durability ? reports::durabilitySchema() : reports::reportSchema();
  if (!reports::validateSchema(schema, doc).empty()) return 0;
  Json merged;
  try {
    if (durability) {
      merged = harness::mergeDurability({doc, doc});
    } else {
      merged = reports::toJson(reports::mergeReports({reports::reportFromJson(doc)}));
    }
  } catch (const reports::ReportError&) {
    return 0;
  } catch (const std::runtime_error& e) {
    if (!durability) throw;
    return 0;  // mergeDurability's refusal (cli.cpp turns it into a usage error)
  }
  const auto violations = reports::validateSchema(schema, merged);
  if (!violations.empty())
    fuzz::violated("the merged report breaks its schema at " + violations.front().path + ": " +
                   violations.front().message);
  return 0;
}
