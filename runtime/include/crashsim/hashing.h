// crashsim/hashing.h — SHA-256 identities of the contract (spec a.7, a.8, e.7).
//
// All digests are "sha256:" + 64 lower-case hex digits. These byte rules are frozen: a
// different hash domain needs a new versioned protocol, never an in-place change.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/json.h"
#include "crashsim/runtime_event.h"

namespace crashsim {

// Lower-case hex SHA-256 of bytes (OpenSSL libcrypto).
std::string sha256Hex(std::string_view bytes);
// "sha256:" + sha256Hex(bytes).
std::string sha256Digest(std::string_view bytes);

// canonicalArgsHash (a.7, "mainline v1"): toolName non-empty, args strict JSON (else
// Error(code::not_strict_json, "... must be strict JSON values")); keys sorted by UTF-16
// code units, "__proto__" keys dropped at any depth, arrays that are the value of a key
// named "required" or "enum" sorted by ICU root collation of each element's JSON text.
std::string canonicalArgsHash(std::string_view toolName, const Json& args);

// operationId (a.8): "toolop_" + first 32 hex of SHA-256(JSON.stringify([invocationId, callId])).
std::string deriveOperationId(std::string_view invocationId, std::string_view providerToolCallId);

// Continuation repair ids (a.8): "continuation-repair-<kind>-" + first 32 hex of
// SHA-256("maka.continuation-repair.<kind>.v1" NUL claimId);
// kind ∈ {start, terminal, run-terminal} (else Error(code::invalid_enum)).
std::string deriveContinuationRepairId(std::string_view kind, std::string_view claimId);

// Identity of an immutable prefix (e.7).
struct PrefixIdentity {
  std::string sessionId, invocationId, runId, turnId;
};

// prefixDigest (e.7): LP("maka.runtime-prefix.v1") || LP(stableJSON(identity)) ||
// for each event (event_seq = 1, 2, …): u64be(seq) || LP(stableJSON(canonical event)),
// with the legacy_automation → automation text-origin exception. Throws
// Error(code::partial_in_prefix) for a partial event, Error(code::runtime_identity_mismatch)
// for an event that does not carry the identity and Error(code::not_losslessly_serializable)
// for an event holding a -0 (its stable JSON would read back as 0, a.6).
std::string prefixDigest(const PrefixIdentity& identity, std::span<const RuntimeEvent> events);

// manifestDigest (e.7): LP("maka.runtime-boundary-manifest.v1") ||
// LP(stableJSON({protocol:"runtime_boundary_cursor_v1", segments})).
std::string manifestDigest(const Json& segments);
// The same digest from stableJSON(segments) (the `[...]` text of a segments array) when the
// caller already holds it (lineage traversal digests every growing boundary incrementally).
std::string manifestDigestOfStableSegments(std::string_view segmentsStableJson);

}  // namespace crashsim
