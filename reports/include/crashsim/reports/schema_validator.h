// crashsim/reports/schema_validator.h — a minimal JSON Schema validator for report.schema.json.
//
// Supports exactly the subset the report schema uses: type (string or array of strings),
// required, properties, additionalProperties (bool or schema), enum, const, items, minimum,
// maximum, minLength, pattern (ECMAScript regex), $ref to "#/$defs/<name>", and if/then/else (an
// instance valid against `if`, judged silently, must be valid against `then`, any other against
// `else`: report.schema.json's two kinds of report). Any other keyword in a schema is an error (so
// the schema cannot silently use a keyword this validator ignores).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace crashsim::reports {

struct SchemaViolation {
  std::string path;     // JSON pointer-ish location in the instance, "$.cases[3].verdict"
  std::string message;  // what is wrong
};

// Validates instance against schema (root document, for $ref resolution). Returns every
// violation found (empty = valid). Throws std::invalid_argument for an unsupported keyword.
std::vector<SchemaViolation> validateSchema(const nlohmann::json& schema,
                                            const nlohmann::json& instance);

// reports/report.schema.json and reports/durability.schema.json, compiled into the library.
const nlohmann::json& reportSchema();
const nlohmann::json& durabilitySchema();

}  // namespace crashsim::reports
