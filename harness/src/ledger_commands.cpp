// `crashsim ledger resolve | args-hash | prefix-digest`.
#include "ledger_commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/runtime_event.h"

namespace crashsim::harness {
namespace {

void printError(std::string_view code, const std::string& message, const Json& index) {
  Json err = {{"error", {{"code", std::string(code)}, {"message", message}, {"index", index}}}};
  std::cout << stableJson(err) << "\n";
}

}  // namespace

std::string readInput(const std::string& file) {
  const bool stdinInput = file.empty() || file == "-";
  std::error_code ec;
  if (!stdinInput && !std::filesystem::is_regular_file(file, ec))
    throw Error(code::input_unreadable, file + " is not a regular file");
  std::ifstream in;
  if (!stdinInput) {
    in.open(file, std::ios::binary);
    if (!in) throw Error(code::input_unreadable, "cannot read " + file);
  }
  std::istream& src = stdinInput ? std::cin : in;
  std::string text;
  char buf[1 << 16];
  while (src.read(buf, sizeof buf) || src.gcount() > 0) {
    text.append(buf, static_cast<size_t>(src.gcount()));
    if (text.size() > kMaxInputBytes)
      throw Error(code::input_too_large, (stdinInput ? std::string("standard input") : file) +
                                             " is larger than " +
                                             std::to_string(kMaxInputBytes >> 20) + " MiB");
  }
  if (src.bad()) throw Error(code::input_unreadable, "cannot read " + file);
  return text;
}

int ledgerResolve(const std::string& input, std::optional<uint64_t> expectedHighWater) {
  std::vector<RuntimeEvent> events;
  try {
    events = decodeRuntimeEventList(input);
  } catch (const EventListError& e) {
    std::string msg = e.what();
    if (!e.path().empty()) msg += " at " + e.path();
    printError(e.code(), msg, e.index() ? Json(*e.index()) : Json(nullptr));
    return 2;
  } catch (const Error& e) {
    printError(e.code(), e.what(), nullptr);
    return 2;
  }
  // The plan carries the resolver's resolution.
  const ResumePlan plan = buildResumePlan(events, expectedHighWater);
  Json out = {{"resolution", toJson(plan.resolution)}, {"plan", toJson(plan, events)}};
  std::cout << stableJson(out) << "\n";
  return 0;
}

int ledgerArgsHash(const std::string& tool, const std::string& input) {
  try {
    Json args = parseJson(input);
    std::cout << canonicalArgsHash(tool, args) << "\n";
    return 0;
  } catch (const Error& e) {
    printError(e.code(), std::string("args must be strict JSON values: ") + e.what(), nullptr);
    return 2;
  }
}

int ledgerPrefixDigest(const std::string& input) {
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
        events.push_back(decodeRuntimeEvent(doc["events"][i]));
      } catch (const Error& e) {
        printError(e.code(),
                   std::string(e.what()) +
                       (e.path().empty() ? "" : " at [" + std::to_string(i) + "]" + e.path()),
                   i);
        return 2;
      }
    }
    std::cout << prefixDigest(identity, events) << "\n";
    return 0;
  } catch (const Error& e) {
    printError(e.code(), e.what(), nullptr);
    return 2;
  }
}

}  // namespace crashsim::harness
