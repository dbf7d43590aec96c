// hashing.cpp — SHA-256 identities of the contract (spec a.7, a.8, e.7).
#include "crashsim/hashing.h"

#include <openssl/evp.h>
#include <unicode/coll.h>
#include <unicode/locid.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/json_limits.h"

namespace crashsim {
namespace {

std::string toHex(const unsigned char* data, size_t len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(len * 2, '0');
  for (size_t i = 0; i < len; ++i) {
    out[2 * i] = kHex[data[i] >> 4];
    out[2 * i + 1] = kHex[data[i] & 0xF];
  }
  return out;
}

std::array<unsigned char, 32> sha256Raw(std::string_view bytes) {
  std::array<unsigned char, 32> md{};
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != md.size()) {
    throw Error(code::capability_unavailable, "OpenSSL SHA-256 failed");
  }
  return md;
}

// Length prefix: 8-byte big-endian unsigned length followed by the bytes.
void appendU64be(std::string& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
}
void appendLp(std::string& out, std::string_view bytes) {
  appendU64be(out, bytes.size());
  out.append(bytes);
}

// Incremental SHA-256: digests a long byte stream (a whole prefix) without first
// concatenating it into one growing buffer.
class Sha256Stream {
 public:
  Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
      throw Error(code::capability_unavailable, "OpenSSL SHA-256 failed");
    }
  }
  void update(std::string_view bytes) {
    if (!bytes.empty() && EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) {
      throw Error(code::capability_unavailable, "OpenSSL SHA-256 failed");
    }
  }
  std::string digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), md, &len) != 1 || len != 32) {
      throw Error(code::capability_unavailable, "OpenSSL SHA-256 failed");
    }
    return "sha256:" + toHex(md, len);
  }

 private:
  struct Free {
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx_;
};

// ICU root collation (JavaScript localeCompare stand-in, a.7). One collator per thread:
// ICU collators are not documented as safe for concurrent use.
const icu::Collator& rootCollator() {
  thread_local std::unique_ptr<icu::Collator> collator = [] {
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::Collator> c(icu::Collator::createInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status) || !c) {
      throw Error(code::capability_unavailable, "ICU root collator unavailable");
    }
    return c;
  }();
  return *collator;
}

// Strict-JSON validation of args (a.6): finite numbers, valid nodes only.
void requireStrictJson(const Json& v, size_t depth = 0) {
  switch (v.type()) {
    case Json::value_t::number_float:
      if (!std::isfinite(v.get<double>())) {
        throw Error(code::not_strict_json, "Tool args must be strict JSON values");
      }
      return;
    case Json::value_t::array:
    case Json::value_t::object:
      requireJsonValueDepth(++depth);
      for (const auto& e : v) requireStrictJson(e, depth);
      return;
    case Json::value_t::binary:
    case Json::value_t::discarded:
      throw Error(code::not_strict_json, "Tool args must be strict JSON values");
    default:
      return;
  }
}

// Mainline v1 canonicalisation (a.7): drop "__proto__" keys at any depth; sort arrays that are
// the value of a key named "required" or "enum" by ICU collation of each element's JSON text.
Json canonicalizeV1(const Json& v) {
  if (v.is_array()) {
    Json out = Json::array();
    for (const auto& e : v) out.push_back(canonicalizeV1(e));
    return out;
  }
  if (!v.is_object()) return v;
  Json out = Json::object();
  for (const auto& [k, e] : v.items()) {
    if (k == "__proto__") continue;
    Json c = canonicalizeV1(e);
    if (c.is_array() && (k == "required" || k == "enum")) {
      std::vector<std::pair<std::string, Json>> keyed;
      keyed.reserve(c.size());
      for (auto& el : c) keyed.emplace_back(stableJson(el), std::move(el));
      const icu::Collator& coll = rootCollator();
      std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        UErrorCode status = U_ZERO_ERROR;
        const UCollationResult r = coll.compareUTF8(a.first, b.first, status);
        return U_SUCCESS(status) && r == UCOL_LESS;
      });
      Json sorted = Json::array();
      for (auto& [_, el] : keyed) sorted.push_back(std::move(el));
      c = std::move(sorted);
    }
    out[k] = std::move(c);
  }
  return out;
}

}  // namespace

std::string sha256Hex(std::string_view bytes) {
  const auto md = sha256Raw(bytes);
  return toHex(md.data(), md.size());
}

std::string sha256Digest(std::string_view bytes) { return "sha256:" + sha256Hex(bytes); }

std::string canonicalArgsHash(std::string_view toolName, const Json& args) {
  if (toolName.empty()) throw Error(code::empty_id, "Tool name must be non-empty");
  requireStrictJson(args);
  Json wrapper = Json::object();
  wrapper["toolName"] = std::string(toolName);
  wrapper["args"] = canonicalizeV1(args);
  // JSON.stringify of the canonical object: stableJson emits keys in JavaScript property order
  // (array-index keys first, then sorted by UTF-16 code units), as the reference does.
  return sha256Digest(stableJson(wrapper));
}

std::string deriveOperationId(std::string_view invocationId, std::string_view providerToolCallId) {
  const Json pair = Json::array({std::string(invocationId), std::string(providerToolCallId)});
  return "toolop_" + sha256Hex(stableJson(pair)).substr(0, 32);
}

std::string deriveContinuationRepairId(std::string_view kind, std::string_view claimId) {
  if (kind != "start" && kind != "terminal" && kind != "run-terminal") {
    throw Error(code::invalid_enum,
                "continuation repair kind must be start, terminal or run-terminal");
  }
  std::string input = "maka.continuation-repair.";
  input += kind;
  input += ".v1";
  input.push_back('\0');
  input += claimId;
  return "continuation-repair-" + std::string(kind) + "-" + sha256Hex(input).substr(0, 32);
}

std::string prefixDigest(const PrefixIdentity& identity, std::span<const RuntimeEvent> events) {
  const Json id = {{"sessionId", identity.sessionId},
                   {"invocationId", identity.invocationId},
                   {"runId", identity.runId},
                   {"turnId", identity.turnId}};
  // The digested bytes are streamed: `bytes` holds only the current LP/u64be record, so a
  // prefix of any length is hashed with one reused buffer (the hash input is unchanged).
  Sha256Stream sha;
  std::string bytes;
  appendLp(bytes, "maka.runtime-prefix.v1");
  appendLp(bytes, stableJson(id));
  sha.update(bytes);
  uint64_t seq = 0;
  for (const RuntimeEvent& ev : events) {
    bytes.clear();
    ++seq;
    if (ev.partial) {
      throw Error(code::partial_in_prefix, "partial event " + ev.id + " cannot enter a prefix");
    }
    if (ev.sessionId != identity.sessionId || ev.invocationId != identity.invocationId ||
        ev.runId != identity.runId || ev.turnId != identity.turnId) {
      throw Error(code::runtime_identity_mismatch,
                  "event " + ev.id + " does not carry the prefix identity");
    }
    // Each event is canonicalised first (e.7), so one that is not lossless has no digest.
    if (containsNegativeZero(ev.json)) {
      throw Error(code::not_losslessly_serializable,
                  "RuntimeEvent is not losslessly serializable: " + ev.id + " (-0)");
    }
    appendU64be(bytes, seq);
    // Frozen-bytes exception: a decoded legacy_automation text origin is digested as
    // {kind:'automation', automationId}.
    const Json* origin = nullptr;
    if (ev.contentKind == ContentKind::text) {
      const auto& content = ev.json["content"];
      if (auto it = content.find("origin"); it != content.end() && it->is_object()) {
        if (auto k = it->find("kind"); k != it->end() && *k == "legacy_automation") {
          origin = &*it;
        }
      }
    }
    if (origin) {
      Json copy = ev.json;
      copy["content"]["origin"]["kind"] = "automation";
      appendLp(bytes, stableJson(copy));
    } else {
      appendLp(bytes, stableJson(ev.json));
    }
    sha.update(bytes);
  }
  return sha.digest();
}

std::string manifestDigest(const Json& segments) {
  if (!segments.is_array()) {
    const Json manifest = {{"protocol", std::string(code::runtime_boundary_cursor_v1)},
                           {"segments", segments}};
    std::string bytes;
    appendLp(bytes, "maka.runtime-boundary-manifest.v1");
    appendLp(bytes, stableJson(manifest));
    return sha256Digest(bytes);
  }
  return manifestDigestOfStableSegments(stableJson(segments));
}

std::string manifestDigestOfStableSegments(std::string_view segmentsStableJson) {
  // stableJSON({protocol, segments}) is `{"protocol":"runtime_boundary_cursor_v1","segments":`
  // + stableJSON(segments) + `}` (the two keys sort in that order); streamed, not concatenated.
  static constexpr std::string_view kHead =
      "{\"protocol\":\"runtime_boundary_cursor_v1\",\"segments\":";
  Sha256Stream sha;
  std::string bytes;
  appendLp(bytes, "maka.runtime-boundary-manifest.v1");
  appendU64be(bytes, kHead.size() + segmentsStableJson.size() + 1);
  bytes.append(kHead);
  sha.update(bytes);
  sha.update(segmentsStableJson);
  sha.update("}");
  return sha.digest();
}

}  // namespace crashsim
