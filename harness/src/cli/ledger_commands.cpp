// `crashsim ledger resolve | args-hash | prefix-digest`.
#include "cli/ledger_commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>

#include "crashsim/bounded_input.h"
#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/runtime_event.h"

namespace crashsim::harness {
namespace {

std::string errorLine(std::string_view code, const std::string& message, const Json& index) {
  return stableJson(
      Json{{"error", {{"code", std::string(code)}, {"message", message}, {"index", index}}}});
}

LedgerResult argsError(const Error& e) {
  return {errorLine(e.code(), std::string("args must be strict JSON values: ") + e.what(), nullptr),
          2};
}

}  // namespace

std::string readInput(const std::string& file) {
  if (file.empty() || file == "-")
    return readBoundedStream(std::cin, kMaxInputBytes, "standard input");
  return readBoundedFile(file, kMaxInputBytes);
}

LedgerResult resolveLedger(std::string_view input, std::optional<uint64_t> expectedHighWater) {
  std::vector<RuntimeEvent> events;
  try {
    events = decodeRuntimeEventList(input);
  } catch (const EventListError& e) {
    std::string msg = e.what();
    if (!e.path().empty()) msg += " at " + e.path();
    return {errorLine(e.code(), msg, e.index() ? Json(*e.index()) : Json(nullptr)), 2};
  } catch (const Error& e) {
    return {errorLine(e.code(), e.what(), nullptr), 2};
  }
  // The plan carries the resolver's resolution, and the resolution the recovery-tail checks
  // printed beside it (never among its issues: spec c.2).
  const ResumePlan plan = buildResumePlan(events, expectedHighWater);
  Json out = {{"resolution", toJson(plan.resolution)},
              {"plan", toJson(plan, events)},
              {"recoveryTails", toJson(plan.resolution.recoveryTails)}};
  return {stableJson(out), 0};
}

LedgerResult argsHashOf(const std::string& tool, std::string_view input) {
  try {
    return {canonicalArgsHash(tool, parseJson(input)), 0};
  } catch (const Error& e) {
    return argsError(e);
  }
}

LedgerResult argsHashOfToolAndArgs(std::string_view input) {
  Json doc;
  try {
    doc = parseJson(input);
  } catch (const Error& e) {
    return argsError(e);
  }
  if (!doc.is_object() || !doc.contains("toolName") || !doc["toolName"].is_string() ||
      !doc.contains("args"))
    return {errorLine(code::missing_field, "line must be {\"toolName\":string,\"args\":value}",
                      nullptr),
            2};
  try {
    return {canonicalArgsHash(doc["toolName"].get<std::string>(), doc["args"]), 0};
  } catch (const Error& e) {
    return argsError(e);
  }
}

LedgerResult prefixDigestOf(std::string_view input) {
  try {
    Json doc = parseJson(input);
    if (!doc.is_object() || !doc.contains("identity") || !doc.contains("events") ||
        !doc["events"].is_array())
      throw Error(
          code::missing_field,
          "input must be {\"identity\":{sessionId,invocationId,runId,turnId},\"events\":[...]}");
    const Json& id = doc["identity"];
    PrefixIdentity identity;
    for (auto [key, field] : {std::pair{"sessionId", &identity.sessionId},
                              {"invocationId", &identity.invocationId},
                              {"runId", &identity.runId},
                              {"turnId", &identity.turnId}}) {
      if (!id.contains(key) || !id[key].is_string())
        throw Error(code::missing_field, fmt::format("identity.{} must be a string", key),
                    "$.identity." + std::string(key));
      *field = id[key].get<std::string>();
    }
    std::vector<RuntimeEvent> events;
    for (size_t i = 0; i < doc["events"].size(); ++i) {
      try {
        events.push_back(decodeRuntimeEvent(std::move(doc["events"][i])));
      } catch (const Error& e) {
        return {
            errorLine(e.code(),
                      std::string(e.what()) +
                          (e.path().empty() ? "" : " at [" + std::to_string(i) + "]" + e.path()),
                      i),
            2};
      }
    }
    return {prefixDigest(identity, events), 0};
  } catch (const Error& e) {
    return {errorLine(e.code(), e.what(), nullptr), 2};
  }
}

int printResult(const LedgerResult& result) {
  std::cout << result.line << "\n";
  return result.exitCode;
}

int ledgerBatch(const std::string& file,
                const std::function<LedgerResult(std::string_view)>& judge) {
  // The whole input is read (and bounded) before the first line is judged.
  const std::string input = readInput(file);
  std::string out;
  for (size_t pos = 0; pos < input.size();) {
    size_t end = input.find('\n', pos);
    if (end == std::string::npos) end = input.size();
    out += judge(std::string_view(input).substr(pos, end - pos)).line;
    out += '\n';
    if (out.size() >= (1u << 16)) {
      std::cout << out;
      out.clear();
    }
    pos = end + 1;
  }
  std::cout << out << std::flush;
  return 0;
}

}  // namespace crashsim::harness
