// `crashsim ledger resolve | args-hash | prefix-digest`, `crashsim inspect`, `crashsim resume`.
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
#include "crashsim/runtime_ledger.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"

namespace crashsim::harness {
namespace {

void printError(std::string_view code, const std::string& message, const Json& index) {
  Json err = {{"error", {{"code", std::string(code)}, {"message", message}, {"index", index}}}};
  std::cout << stableJson(err) << "\n";
}

std::vector<RuntimeEvent> runEvents(const RuntimeStore& store, const RunHeader& h) {
  std::vector<RuntimeEvent> out;
  for (auto& se : store.readRunEvents(h.sessionId, h.runId)) out.push_back(std::move(se.event));
  return out;
}

}  // namespace

std::string readInput(const std::string& file) {
  std::stringstream ss;
  if (file.empty() || file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + file);
    ss << in.rdbuf();
  }
  return ss.str();
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
  // One key index for both: the plan carries the resolver's resolution.
  const RuntimeLedger ledger(std::move(events));
  const ResumePlan plan = buildResumePlan(ledger, expectedHighWater);
  Json out = {{"resolution", toJson(plan.resolution)}, {"plan", toJson(plan, ledger.events())}};
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

int inspectStore(const std::string& storeDir, bool json) {
  if (!std::filesystem::exists(std::filesystem::path(storeDir) / "runtime.sqlite")) {
    std::cerr << "crashsim inspect: no runtime.sqlite in " << storeDir << "\n";
    return 2;
  }
  StoreOptions so;
  so.readOnly = true;
  auto store = RuntimeStore::open(storeDir, so);
  Json out = Json::object();
  std::string repairError;
  try {
    out["repair"] = startupRepair(*store, RepairMode::strict, true).toJson();
  } catch (const Error& e) {
    repairError = fmt::format("{}: {}", e.code(), e.what());
    out["repair"] = {{"error", {{"code", e.code()}, {"message", e.what()}}}};
  }
  out["integrity"] = store->integrityCheck();
  Json runs = Json::array();
  bool blocked = false;
  for (const auto& h : store->listRuns()) {
    auto events = runEvents(*store, h);
    const ResumePlan plan = buildResumePlan(events);  // carries the resolution
    blocked = blocked || plan.disposition != code::safe_replay;
    Json lineage = Json::object();
    if (h.parentRunId) lineage["parentRunId"] = *h.parentRunId;
    if (h.continuationSource) lineage["continuationSource"] = *h.continuationSource;
    runs.push_back({{"header", h.toJson()},
                    {"events", events.size()},
                    {"resolution", toJson(plan.resolution)},
                    {"plan", toJson(plan, events)},
                    {"lineage", lineage}});
  }
  out["runs"] = runs;
  if (json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << "store " << storeDir << " (integrity " << out["integrity"].get<std::string>()
            << ")\n";
  if (!repairError.empty()) {
    std::cout << "startup repair (dry run) would fail: " << repairError << "\n";
  } else {
    for (const auto& r : out["repair"].value("runs", Json::array()))
      std::cout << fmt::format(
          "repair (dry run): run {}: {}{}\n", r.value("runId", "?"), r.value("action", "?"),
          r.contains("recoveryReason") ? " (" + r["recoveryReason"].get<std::string>() + ")" : "");
  }
  for (const auto& r : runs) {
    const auto& h = r["header"];
    std::cout << fmt::format("\nrun {} (session {}, invocation {}): status {}, {} events\n",
                             h.value("runId", "?"), h.value("sessionId", "?"),
                             h.value("invocationId", "?"), h.value("status", "?"),
                             r["events"].get<size_t>());
    if (!r["lineage"].empty()) std::cout << "  lineage: " << r["lineage"].dump() << "\n";
    for (const auto& d : r["resolution"]["decisions"])
      std::cout << fmt::format(
          "  operation {} {}: {} / {}{}\n", d.value("toolCallId", "?"), d.value("toolName", ""),
          d.value("status", "?"), d.value("reason", "?"),
          d.contains("settlementOrigin") ? " (" + d["settlementOrigin"].get<std::string>() + ")"
                                         : "");
    for (const auto& i : r["resolution"]["issues"])
      std::cout << fmt::format("  issue {} at {}\n", i.value("code", "?"), i.value("eventId", "?"));
    const auto& p = r["plan"];
    std::cout << fmt::format("  plan: {}", p.value("disposition", "?"));
    if (!p["rejectionReasons"].empty())
      std::cout << " — rejection reasons " << p["rejectionReasons"].dump();
    std::cout << "\n";
    for (const auto& d : p["diagnostics"])
      std::cout << "    diagnostic " << d.value("code", "?")
                << (d.contains("detail") ? fmt::format(" {}", d["detail"].dump()) : "") << "\n";
    if (p.contains("directive") && p["directive"].is_string())
      std::cout << "    directive: " << p["directive"].get<std::string>() << "\n";
  }
  (void)blocked;
  return 0;
}

int resumeStore(const std::string& storeDir) {
  if (!std::filesystem::exists(std::filesystem::path(storeDir) / "runtime.sqlite")) {
    std::cerr << "crashsim resume: no runtime.sqlite in " << storeDir << "\n";
    return 2;
  }
  auto store = RuntimeStore::open(storeDir);
  RepairReport rep;
  try {
    rep = startupRepair(*store, RepairMode::strict, false);
  } catch (const Error& e) {
    std::cout << fmt::format("startup repair failed: {}: {}\n", e.code(), e.what());
    return 1;
  }
  for (const auto& r : rep.runs)
    std::cout << fmt::format("repair: run {}: {}\n", r.runId, r.action);
  int rc = 0;
  for (const auto& h : store->listRuns()) {
    auto events = runEvents(*store, h);
    auto plan = buildResumePlan(events);
    std::cout << fmt::format("run {}: {} — plan {}", h.runId, h.status, plan.disposition);
    if (!plan.rejectionReasons.empty()) {
      std::string rr;
      for (const auto& r : plan.rejectionReasons) rr += (rr.empty() ? "" : ", ") + r;
      std::cout << " (" << rr << ")";
    }
    std::cout << "\n";
    if (plan.resolution.hasCorruption) rc = 1;
  }
  std::cout << "continuation: use `crashsim-agent recover --store DIR --workspace DIR --scenario "
               "FILE` to "
               "reconcile and continue a scenario run\n";
  return rc;
}

}  // namespace crashsim::harness
