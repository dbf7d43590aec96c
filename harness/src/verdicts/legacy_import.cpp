// The legacy JSONL import's crash states and its end (legacy_import.h).
#include "verdicts/legacy_import.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>

#include "crashsim/harness/oracle.h"
#include "crashsim/runtime_event.h"
#include "crashsim/store.h"
#include "verdicts/observed_store.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

std::string legacyJsonlBytes(const Scenario& sc) {
  std::string out;
  if (!sc.spec.legacyStore) return out;
  for (const Json& e : sc.spec.legacyStore->events) out += e.dump() + "\n";
  return out;
}

void writeLegacyJsonl(const Scenario& sc, const fs::path& storeDir) {
  if (!sc.spec.legacyStore) return;
  fs::create_directories(storeDir);
  std::ofstream(storeDir / kLegacyJsonlName, std::ios::binary) << legacyJsonlBytes(sc);
}

namespace {

// The first `stored` imported events, per run in file order (`order`: the runs' order).
std::map<std::string, std::vector<Json>> storedLegacyEvents(const Scenario& sc, size_t stored,
                                                            std::vector<std::string>& order) {
  const auto events = importedLegacyEvents(sc);
  std::map<std::string, std::vector<Json>> want;
  for (size_t i = 0; i < stored && i < events.size(); ++i) {
    const std::string run = events[i].value("runId", "");
    if (!want.count(run)) order.push_back(run);
    want[run].push_back(events[i]);
  }
  return want;
}

// One run's stored events are the JSONL lines, in order, with their ts and content.
void importedEventProblems(const std::string& runId, const std::vector<observed::EventRow>& rows,
                           const std::vector<Json>& exp, std::vector<std::string>& bad) {
  for (size_t k = 0; k < rows.size(); ++k) {
    const Json& line = exp[k];
    if (rows[k].seq != static_cast<int64_t>(k + 1) || rows[k].eventId != line.value("id", "")) {
      bad.push_back(fmt::format("run {}: event_seq {} holds {}, expected {} at event_seq {}", runId,
                                rows[k].seq, rows[k].eventId, line.value("id", ""), k + 1));
      break;
    }
    if (rows[k].committedAt != line.value("ts", 0.0))
      bad.push_back(fmt::format("event {}: committed_at {} is not its ts {}", rows[k].eventId,
                                rows[k].committedAt, line.value("ts", 0.0)));
    if (rows[k].payload.value("content", Json()) != line.value("content", Json()))
      bad.push_back(
          fmt::format("event {}: stored content differs from the JSONL line", rows[k].eventId));
  }
}

// One run with a header: the status its stored events imply (after recovery, a run the JSONL left
// without its terminal fact is sealed failed with one recovered terminal fact appended) and its
// events.
void importedRunProblems(const fs::path& store, const observed::RunRow& r,
                         const std::vector<Json>& exp, size_t stored, bool complete,
                         std::vector<std::string>& bad) {
  std::string status = "running";
  for (const Json& e : exp) {
    const RuntimeEvent d = decodeRuntimeEvent(e);
    if (d.isTerminal()) status = headerStatusOfTerminal(d);
  }
  // After recovery (complete), a legacy run the JSONL left without its terminal fact is an
  // interrupted run: startup repair seals it failed with one recovered terminal fact appended
  // (spec g; V7 judges the repair of the scenario's own runs, this only its shape).
  auto rows = observed::runEvents(store, r.runId);
  if (complete && status == "running" && rows.size() == exp.size() + 1) {
    // Sealed by startup repair: exactly one more event, a terminal fact, and a failed header
    // (a recovery that skips the repair is caught by its reach: P8/P9 are predicted).
    status = "failed";
    if (!rows.back().payload.is_object() || !rows.back().payload.contains("actions") ||
        !rows.back().payload["actions"].contains("endInvocation"))
      bad.push_back(
          fmt::format("run {}: the event after its imported ones is not a terminal fact", r.runId));
    rows.pop_back();
  }
  if (r.status != status)
    bad.push_back(fmt::format("run {}: header {}, expected {} from its stored events", r.runId,
                              r.status, status));
  if (rows.size() != exp.size()) {
    bad.push_back(
        fmt::format("run {}: {} event(s) stored, expected {} (the first {} imported "
                    "events of the JSONL, batch by batch)",
                    r.runId, rows.size(), exp.size(), stored));
    return;
  }
  importedEventProblems(r.runId, rows, exp, bad);
}

}  // namespace

std::vector<std::string> importStateProblems(const Scenario& sc, const fs::path& store,
                                             size_t stored, bool complete) {
  std::vector<std::string> bad;
  if (readFile(store / kLegacyJsonlName) != legacyJsonlBytes(sc))
    bad.push_back(std::string(kLegacyJsonlName) + " was changed or removed");
  const bool manifest = fs::exists(store / kStoreManifestName);
  if (manifest != complete)
    bad.push_back(complete ? "no store manifest after the import ran to its end"
                           : "the store manifest exists while the import is unfinished (a "
                             "restart would never import the rest)");
  std::vector<std::string> order;
  const auto want = storedLegacyEvents(sc, stored, order);
  std::set<std::string> headers;
  for (const auto& r : observed::runs(store)) {
    headers.insert(r.runId);
    auto it = want.find(r.runId);
    if (it == want.end()) {
      bad.push_back(
          fmt::format("run {} has a header, but none of the {} stored legacy events "
                      "names it",
                      r.runId, stored));
      continue;
    }
    importedRunProblems(store, r, it->second, stored, complete, bad);
  }
  for (const auto& run : order)
    if (!headers.count(run))
      bad.push_back(fmt::format("run {} has stored legacy events but no header", run));
  return bad;
}

}  // namespace crashsim::harness
