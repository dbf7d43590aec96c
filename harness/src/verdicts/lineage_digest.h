// verdicts/lineage_digest.h — the contract's lineage digests (spec e.7), computed by the harness.
//
// Written from the contract text alone, to judge the runtime's own digests (V5,
// verdicts/v5_lineage.h): stable JSON (a.6), prefixDigest and manifestDigest (e.7) with SHA-256
// from OpenSSL and JSON values from nlohmann/json. It shares no code with the runtime: not its
// stable JSON (crashsim/json.h), not its hashing (crashsim/hashing.h), not its continuation
// code; its unit test holds it to the contract's vectors (a.7, e.7).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "verdicts/observed_store.h"

namespace crashsim::harness::lineage {

// Stable JSON (spec a.6): JSON.stringify with every object's keys in the order a JavaScript
// object enumerates them once inserted sorted by UTF-16 code units — array-index keys ("0" ..
// "4294967294", canonical decimal) first by value, then every other key by UTF-16 code units; no
// whitespace; JSON.stringify string escapes (\" \\ \b \f \n \r \t, other control characters as
// lower-case \u00xx, everything else raw UTF-8); numbers in ECMAScript Number::toString form
// (1, 1.5, 1e+21, -0 → 0; integers are converted to double first). Throws std::invalid_argument
// for a non-finite number or a value JSON cannot hold (binary, discarded).
std::string stableJson(const nlohmann::json& value);

// "sha256:" + lower-case hex SHA-256 of `bytes`.
std::string sha256Digest(std::string_view bytes);

// The prefix identity of e.7 as JSON: {sessionId, invocationId, runId, turnId}.
nlohmann::json prefixIdentity(const std::string& sessionId, const std::string& invocationId,
                              const std::string& runId, const std::string& turnId);

// prefixDigest (e.7): sha256 of LP("maka.runtime-prefix.v1") || LP(stableJSON(identity)) ||
// for each row: u64be(eventSeq) || LP(stableJSON(event)), where LP(b) = u64be(len(b)) || b and
// `event` is the row's canonical event (its stored payload) — except that a text event whose
// content.origin.kind is "legacy_automation" is digested with origin kind "automation" (the
// frozen-bytes exception). Rows are taken as given (the caller checks seq 1..n and identity).
std::string prefixDigest(const nlohmann::json& identity, std::span<const observed::EventRow> rows);

// manifestDigest (e.7): sha256 of LP("maka.runtime-boundary-manifest.v1") ||
// LP(stableJSON({protocol:"runtime_boundary_cursor_v1", segments})); order-sensitive.
std::string manifestDigest(const nlohmann::json& segments);

// A segment (e.7): {protocol:"runtime_prefix_segment_v1", identity, position{lastEventSeq,
// eventCount, lastEventId}, prefixDigest} of a prefix whose rows are `rows` (seq 1..n).
nlohmann::json segment(const nlohmann::json& identity, std::span<const observed::EventRow> rows);

}  // namespace crashsim::harness::lineage
