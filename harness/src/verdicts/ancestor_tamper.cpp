// The ancestor-tamper mutation and its verdict (verdicts/ancestor_tamper.h).
#include "verdicts/ancestor_tamper.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "crashsim/codes.h"
#include "verdicts/lineage_digest.h"
#include "verdicts/observed_store.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

// What a hostile or buggy process does: one UPDATE of one event's payload, with plain SQLite.
void rewritePayload(const fs::path& storeDir, const std::string& eventId,
                    const std::string& payload) {
  sqlite3* raw = nullptr;
  const fs::path file = storeDir / "runtime.sqlite";
  const int rc = sqlite3_open_v2(file.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) throw std::runtime_error("open " + file.string() + " to tamper with it");
  sqlite3_busy_timeout(db.get(), 5000);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db.get(),
                         "UPDATE runtime_events SET payload_json = ?1 WHERE event_id = ?2", -1, &st,
                         nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("tamper: ") + sqlite3_errmsg(db.get()));
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> stmt(st, &sqlite3_finalize);
  sqlite3_bind_text(st, 1, payload.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, eventId.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) != SQLITE_DONE || sqlite3_changes(db.get()) != 1)
    throw std::runtime_error(
        fmt::format("tamper: UPDATE of event {}: {}", eventId, sqlite3_errmsg(db.get())));
}

}  // namespace

std::optional<AncestorTamper> tamperAncestor(const fs::path& storeDir) {
  const auto claims = observed::claimBoundaries(storeDir);
  if (claims.empty()) return std::nullopt;
  for (const auto& claim : claims)
    if (claim.startKind == code::runtime_admission) return std::nullopt;  // the saga leaves it
  const Json segments = claims.back().boundary.is_object()
                            ? claims.back().boundary.value("segments", Json())
                            : Json();
  if (!segments.is_array() || segments.empty() || !segments[0].is_object()) return std::nullopt;
  const Json identity = segments[0].value("identity", Json::object());
  const std::string session = identity.value("sessionId", ""), run = identity.value("runId", "");
  const auto rows = observed::prefixRows(storeDir, session, run);
  const Json lastSeq = segments[0].value("position", Json::object()).value("lastEventSeq", Json());
  const auto last = std::find_if(rows.begin(), rows.end(), [&](const observed::EventRow& r) {
    return lastSeq.is_number_integer() && r.seq == lastSeq.get<int64_t>();
  });
  if (last == rows.end() || !last->payload.is_object()) return std::nullopt;
  Json event = last->payload;
  Json& content = event["content"];
  if (!content.is_object() || content.value("kind", "") != "error" ||
      !content.value("message", Json()).is_string())
    return std::nullopt;
  content["message"] = content["message"].get<std::string>() + " (edited by another process)";
  rewritePayload(storeDir, last->eventId, lineage::stableJson(event));
  return AncestorTamper{run, last->eventId, claims.size()};
}

std::string tamperedRecoveryProblem(const AncestorTamper& t, const std::string& recoverStdout,
                                    size_t claimsAfter) {
  const Json summary =
      Json::parse(recoverStdout.substr(0, recoverStdout.find('\n')), nullptr, false);
  if (!summary.is_object()) return "recover printed no JSON summary";
  if (summary.contains("error"))
    return fmt::format("recovery failed with {} instead of parking the plan",
                       summary["error"].dump().substr(0, 300));
  if (!summary.value("continuation", Json()).is_null())
    return "recovery ran a continuation on the tampered lineage";
  bool parked = false;
  Json seen = Json::array();
  for (const Json& p : summary.value("plans", Json::array())) {
    const Json reasons = p.value("rejectionReasons", Json::array());
    seen.push_back({p.value("decision", ""), reasons});
    parked = parked || (p.value("decision", "") == "park" &&
                        std::find(reasons.begin(), reasons.end(),
                                  code::source_prefix_digest_mismatch) != reasons.end());
  }
  if (!parked)
    return fmt::format("the plans were {}, the contract parks with {} (e.4)", seen.dump(),
                       code::source_prefix_digest_mismatch);
  if (claimsAfter != t.claims)
    return fmt::format("{} claim row(s) after recovery, {} before: a park claims nothing",
                       claimsAfter, t.claims);
  return "";
}

}  // namespace crashsim::harness
