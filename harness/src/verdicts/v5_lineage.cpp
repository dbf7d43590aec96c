// V5: lineage digests computed again from the contract (verdicts/v5_lineage.h).
#include "verdicts/v5_lineage.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <span>
#include <tuple>
#include <utility>

#include "crashsim/codes.h"
#include "verdicts/lineage_digest.h"
#include "verdicts/observed_store.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr size_t kMaxLineageSegments = 64;  // e.4: at most 64 segments

std::string stringAt(const Json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : std::string();
}

// The store as plain SQLite shows it: run headers, and each run's rows read once.
class LineageRows {
 public:
  explicit LineageRows(fs::path dir) : dir_(std::move(dir)), runs_(observed::runs(dir_)) {}
  const fs::path& dir() const { return dir_; }
  const observed::RunRow* header(const std::string& session, const std::string& run) const {
    for (const auto& r : runs_)
      if (r.sessionId == session && r.runId == run) return &r;
    return nullptr;
  }
  const std::vector<observed::RunRow>& runs() const { return runs_; }
  const std::vector<observed::EventRow>& rows(const std::string& session, const std::string& run) {
    auto key = std::make_pair(session, run);
    auto it = rows_.find(key);
    if (it == rows_.end()) it = rows_.emplace(key, observed::prefixRows(dir_, session, run)).first;
    return it->second;
  }
  // The e.7 segment of (session, run) pinned at a high-water, or why there is none; computed once
  // (a claim, its target's header and its start all name the same segments).
  const std::pair<Json, std::string>& segment(const std::string& session, const std::string& run,
                                              const std::string& invocationId,
                                              const std::string& turnId, int64_t highWater);

 private:
  fs::path dir_;
  std::vector<observed::RunRow> runs_;
  std::map<std::pair<std::string, std::string>, std::vector<observed::EventRow>> rows_;
  std::map<std::tuple<std::string, std::string, int64_t>, std::pair<Json, std::string>> segments_;
};

// The boundary the contract defines for a source run pinned at a high-water (e.4, e.7), or why
// the store holds none.
struct ContractBoundary {
  Json segments = Json::array();  // oldest → immediate source
  std::string manifestDigest;
  std::string problem;
  std::string sourcePrefixDigest() const { return stringAt(segments.back(), "prefixDigest"); }
};

// Why rows are not the immutable prefix (e.7) of `identity` at `highWater`: seqs exactly
// 1..highWater, no partial event, every event carrying the identity ("" when they are).
std::string prefixProblem(std::span<const observed::EventRow> rows, const Json& identity,
                          int64_t highWater) {
  if (highWater < 1) return fmt::format("high-water {} is not a position", highWater);
  if (static_cast<int64_t>(rows.size()) != highWater)
    return fmt::format("{} row(s) up to high-water {}", rows.size(), highWater);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Json& e = rows[i].payload;
    if (rows[i].seq != static_cast<int64_t>(i) + 1)
      return fmt::format("event_seq {} where {} belongs", rows[i].seq, i + 1);
    if (!e.is_object()) return "event " + rows[i].eventId + " has no readable payload";
    if (e.value("partial", true)) return "event " + rows[i].eventId + " is partial";
    for (const char* k : {"sessionId", "invocationId", "runId", "turnId"})
      if (stringAt(e, k) != stringAt(identity, k))
        return fmt::format("event {} does not carry the prefix's {}", rows[i].eventId, k);
  }
  return "";
}

const std::pair<Json, std::string>& LineageRows::segment(const std::string& session,
                                                         const std::string& run,
                                                         const std::string& invocationId,
                                                         const std::string& turnId,
                                                         int64_t highWater) {
  const auto key = std::make_tuple(session, run, highWater);
  if (auto it = segments_.find(key); it != segments_.end()) return it->second;
  const Json identity = lineage::prefixIdentity(session, invocationId, run, turnId);
  const auto& all = rows(session, run);
  const auto end = std::find_if(all.begin(), all.end(),
                                [&](const observed::EventRow& r) { return r.seq > highWater; });
  const std::span<const observed::EventRow> pinned(all.begin(), end);
  std::pair<Json, std::string> out;
  if (auto bad = prefixProblem(pinned, identity, highWater); !bad.empty())
    out.second = "lineage run " + run + " is no immutable prefix: " + bad;
  else
    out.first = lineage::segment(identity, pinned);
  return segments_.emplace(key, std::move(out)).first->second;
}

// e.4 walked by the harness: the source pinned at `highWater`, then every continuationSource
// edge's run pinned at that edge's high-water; each segment built from its rows (e.7).
ContractBoundary contractBoundary(LineageRows& store, const std::string& session, std::string runId,
                                  int64_t highWater) {
  ContractBoundary b;
  std::vector<Json> newestFirst;
  std::set<std::string> seen;
  for (;;) {
    if (!seen.insert(runId).second || newestFirst.size() >= kMaxLineageSegments) {
      b.problem = "the lineage of run " + runId + " has a cycle or more than 64 segments";
      return b;
    }
    const observed::RunRow* h = store.header(session, runId);
    if (!h) {
      b.problem = "lineage run " + runId + " has no header";
      return b;
    }
    const auto& [segment, problem] =
        store.segment(session, runId, stringAt(h->header, "invocationId"), h->turnId, highWater);
    if (!problem.empty()) {
      b.problem = problem;
      return b;
    }
    newestFirst.push_back(segment);
    const Json source =
        h->header.is_object() ? h->header.value("continuationSource", Json()) : Json();
    if (!source.is_object()) break;
    runId = stringAt(source, "sourceRunId");
    const Json hw = source.value("sourceRuntimeEventHighWater", Json());
    highWater = hw.is_number_integer() ? hw.get<int64_t>() : 0;
  }
  b.segments = Json(std::vector<Json>(newestFirst.rbegin(), newestFirst.rend()));
  b.manifestDigest = lineage::manifestDigest(b.segments);
  return b;
}

// Records V5's failure when a recorded digest is not the contract's.
class DigestJudge {
 public:
  DigestJudge(const std::string& when, Checks& c) : when_(when), c_(c) {}
  // `what` recorded `recorded`; the contract's value is `want`. A digest is named, not printed:
  // it covers timestamps, and a reason must be the same when the case runs again (V9).
  void same(const std::string& what, const Json& recorded, const Json& want) {
    if (recorded == want) return;
    if (want.is_string() && want.get_ref<const std::string&>().starts_with("sha256:"))
      fail(fmt::format("{} is not the contract's (e.7) digest", what));
    else
      fail(fmt::format("{} is {}, the contract's (e.7) is {}", what, recorded.dump(), want.dump()));
  }
  // A recorded boundary's segments against the contract's, member by member.
  void sameSegments(const std::string& what, const Json& recorded, const Json& want) {
    if (!recorded.is_array() || recorded.size() != want.size()) {
      fail(fmt::format("{} has {} segment(s), the source's lineage (e.4) has {}", what,
                       recorded.is_array() ? recorded.size() : 0, want.size()));
      return;
    }
    for (size_t i = 0; i < want.size(); ++i)
      for (const char* k : {"protocol", "identity", "position", "prefixDigest"})
        same(fmt::format("{} segment {} (run {}) {}", what, i,
                         stringAt(want[i]["identity"], "runId"), k),
             recorded[i].value(k, Json()), want[i][k]);
  }
  void fail(const std::string& reason) { c_.fail("V5", when_ + reason); }

 private:
  const std::string& when_;
  Checks& c_;
};

// A claim row against the contract's boundary of its source (e.8, f.2).
void judgeClaim(LineageRows& store, const observed::ClaimBoundaryRow& claim, DigestJudge& judge) {
  const ContractBoundary b =
      contractBoundary(store, claim.sourceSessionId, claim.sourceRunId, claim.sourceEventHighWater);
  const std::string what = "claim " + claim.claimId;
  if (!claim.boundary.is_object() || !claim.targetRunHeader.is_object())
    return judge.fail(what + ": boundary_json or target_run_header_json is no JSON object");
  if (!b.problem.empty()) return judge.fail(what + ": " + b.problem);
  judge.sameSegments(what + " boundary", claim.boundary.value("segments", Json()), b.segments);
  judge.same(what + " boundary manifestDigest", claim.boundary.value("manifestDigest", Json()),
             b.manifestDigest);
  judge.same(what + " boundary_digest", claim.boundaryDigest, b.manifestDigest);
  judge.same(what + " source_prefix_digest", claim.sourcePrefixDigest, b.sourcePrefixDigest());
  Json source = claim.targetRunHeader.value("continuationSource", Json());
  if (!source.is_object()) source = Json::object();
  judge.same(what + " target header boundaryDigest", source.value("boundaryDigest", Json()),
             b.manifestDigest);
  judge.same(what + " target header replayManifestDigest",
             source.value("replayManifestDigest", Json()), b.manifestDigest);
  judge.same(what + " target header sourcePrefixDigest", source.value("sourcePrefixDigest", Json()),
             b.sourcePrefixDigest());
}

// A continuation run (V2 source) and its continuation-start against the contract's boundary.
void judgeContinuationRun(LineageRows& store, const observed::RunRow& run, DigestJudge& judge) {
  if (!run.header.is_object()) return judge.fail("run " + run.runId + ": header_json unreadable");
  const Json source = run.header.value("continuationSource", Json());
  if (stringAt(source, "protocol") != code::continuation_source_v2) return;
  const Json hw = source.value("sourceRuntimeEventHighWater", Json());
  const ContractBoundary b = contractBoundary(store, run.sessionId, stringAt(source, "sourceRunId"),
                                              hw.is_number_integer() ? hw.get<int64_t>() : 0);
  const std::string what = "continuation run " + run.runId;
  if (!b.problem.empty()) return judge.fail(what + ": " + b.problem);
  judge.same(what + " boundaryDigest", source.value("boundaryDigest", Json()), b.manifestDigest);
  judge.same(what + " replayManifestDigest", source.value("replayManifestDigest", Json()),
             b.manifestDigest);
  judge.same(what + " sourcePrefixDigest", source.value("sourcePrefixDigest", Json()),
             b.sourcePrefixDigest());
  const auto& rows = store.rows(run.sessionId, run.runId);
  if (rows.empty() || !rows.front().payload.is_object()) return;  // no start yet (a claim window)
  const Json actions = rows.front().payload.value("actions", Json());
  const Json start = actions.is_object() ? actions.value("continuationStart", Json()) : Json();
  if (!start.is_object()) return;  // V8 judges a continuation without its start
  const std::string sw = what + " continuation-start ";
  judge.same(sw + "boundaryDigest", start.value("boundaryDigest", Json()), b.manifestDigest);
  judge.same(sw + "replayManifestDigest", start.value("replayManifestDigest", Json()),
             b.manifestDigest);
  Json immediate = start.value("immediateSource", Json::object());
  if (!immediate.is_object()) immediate = Json::object();
  judge.same(sw + "immediateSource.prefixDigest", immediate.value("prefixDigest", Json()),
             b.sourcePrefixDigest());
  judge.same(sw + "immediateSource.highWater", immediate.value("highWater", Json()), hw);
}

}  // namespace

void checkLineageDigests(const fs::path& storeDir, const std::string& when, Checks& c) {
  const observed::ReadScope reads(storeDir);
  DigestJudge judge(when, c);
  try {
    LineageRows store(storeDir);
    for (const auto& claim : observed::claimBoundaries(storeDir)) judgeClaim(store, claim, judge);
    for (const auto& run : store.runs()) judgeContinuationRun(store, run, judge);
  } catch (const std::exception& e) {
    judge.fail(std::string("reading the lineage with plain SQLite: ") + e.what());
  }
}

void checkPlanDigests(const ContinuationPlan& plan, const fs::path& storeDir, Checks& c) {
  if (!plan.isContinue()) return;
  const std::string when = "plan of " + plan.sourceRunId + ": ";
  DigestJudge judge(when, c);
  try {
    LineageRows store(storeDir);
    const ContractBoundary b =
        contractBoundary(store, plan.sessionId, plan.sourceRunId, plan.sourceRuntimeEventHighWater);
    if (!b.problem.empty()) return judge.fail(b.problem);
    if (!plan.boundary) return judge.fail("a continue plan without its boundary");
    judge.sameSegments("boundary", plan.boundary->segments, b.segments);
    judge.same("boundary manifestDigest", plan.boundary->manifestDigest, b.manifestDigest);
    judge.same("sourcePrefixDigest", plan.sourcePrefixDigest, b.sourcePrefixDigest());
  } catch (const std::exception& e) {
    judge.fail(std::string("reading the lineage with plain SQLite: ") + e.what());
  }
}

}  // namespace crashsim::harness
