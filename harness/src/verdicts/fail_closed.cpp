#include "verdicts/fail_closed.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "crashsim/code_list.h"
#include "crashsim/codes.h"
#include "crashsim/recovery_resolver.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

bool isStableFailClosedCode(const std::string& c) {
  if (c == code::internal_error || c == code::sqlite_error) return false;
  return std::find(std::begin(kAllCodes), std::end(kAllCodes), c) != std::end(kAllCodes);
}

std::string failClosedCodeOf(const std::filesystem::path& stdoutFile) {
  std::string code;
  std::istringstream lines(readFile(stdoutFile));
  for (std::string line; std::getline(lines, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_object())
      code = j["error"].value("code", "");
  }
  return code;
}

std::string completedWithoutResponse(const RuntimeStore& store) {
  for (const auto& h : store.listRuns()) {
    std::vector<RuntimeEvent> events;
    for (auto& se : store.readRunEvents(h.sessionId, h.runId)) events.push_back(se.event);
    auto res = resolveRecovery(events);
    for (const auto& d : res.decisions) {
      if (d.status != code::completed) continue;
      const bool present = d.responseRuntimeEventId &&
                           std::any_of(events.begin(), events.end(), [&](const RuntimeEvent& e) {
                             return !e.partial && e.id == *d.responseRuntimeEventId &&
                                    e.contentKind == ContentKind::function_response &&
                                    e.callId == d.toolCallId;
                           });
      if (!present)
        return fmt::format(
            "run {}: the resolver reports {} completed ({}) but its function_response {} is not "
            "in the ledger",
            h.runId, d.toolCallId, d.reason, d.responseRuntimeEventId.value_or("(none)"));
    }
  }
  return "";
}

}  // namespace crashsim::harness
