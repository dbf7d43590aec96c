// runtime_event.cpp — the strict RuntimeEvent decoder (spec a.1–a.5).
//
// Decoding happens in two passes over a copy of the input:
//  1. normalise every value (numbers to what JavaScript sees, UTF-8 check, non-finite reject);
//  2. validate the closed key sets of every declared level, normalise text content (a.2),
//     fill the typed views and compute the lane (a.5).
// Errors carry a stable code and the JSON path of the offending value.
#include "crashsim/runtime_event.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <string>
#include <unordered_set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/json_limits.h"
#include "event/utf8.h"

namespace crashsim {
namespace {

using Obj = Json::object_t;

// A JSON path as a linked list on the stack; rendered only when an error is thrown.
struct Path {
  const Path* parent = nullptr;
  std::string_view key;
  size_t index = 0;
  bool isIndex = false;

  Path operator/(std::string_view k) const { return Path{this, k, 0, false}; }
  Path operator[](size_t i) const { return Path{this, {}, i, true}; }

  std::string str() const {
    std::string out = parent ? parent->str() : std::string("$");
    if (!parent) return out;
    if (isIndex) {
      out += "[" + std::to_string(index) + "]";
    } else {
      out += ".";
      out += key;
    }
    return out;
  }
};

[[noreturn]] void fail(std::string_view code, const Path& path, const std::string& message) {
  const std::string p = path.str();
  throw Error(code, "Invalid RuntimeEvent at " + p + ": " + message, p);
}

constexpr double kTwo53 = 9007199254740992.0;
constexpr int64_t kMaxSafeInteger = 9007199254740991;  // Number.MAX_SAFE_INTEGER

// Pass 1: numbers become the IEEE double JavaScript sees; integral values within ±2^53 are
// stored as integers, all others as doubles (1.0 → 1, 2^63 → 9.223372036854776e18). -0 stays
// the double -0.0: it is legal content, but stable JSON writes it as 0, so canonicalising an
// event that holds one is refused (not lossless, a.6); only attachment bytes normalise it.
void normalizeValue(Json& v, const Path& path, size_t depth = 0) {
  switch (v.type()) {
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      if (!std::isfinite(d)) fail(code::non_finite_number, path, "number must be finite");
      if (d == 0 && std::signbit(d)) return;
      if (std::trunc(d) == d && std::fabs(d) <= kTwo53) v = static_cast<int64_t>(d);
      return;
    }
    case Json::value_t::number_integer: {
      const int64_t i = v.get<int64_t>();
      if (i > static_cast<int64_t>(kTwo53) || i < -static_cast<int64_t>(kTwo53)) {
        v = static_cast<double>(i);
      }
      return;
    }
    case Json::value_t::number_unsigned: {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(kTwo53)) v = static_cast<double>(u);
      return;
    }
    case Json::value_t::string:
      if (!detail::isWellFormedWtf8(v.get_ref<const std::string&>())) {
        fail(code::not_strict_json, path, "string is not valid UTF-8");
      }
      return;
    case Json::value_t::array: {
      if (++depth > kMaxJsonDepth) fail(code::json_too_deep, path, "nests too deep");
      size_t i = 0;
      for (auto& e : v) normalizeValue(e, path[i++], depth);
      return;
    }
    case Json::value_t::object:
      if (++depth > kMaxJsonDepth) fail(code::json_too_deep, path, "nests too deep");
      for (auto& [k, e] : v.get_ref<Obj&>()) {
        if (!detail::isWellFormedWtf8(k)) {
          fail(code::not_strict_json, path, "key is not valid UTF-8");
        }
        normalizeValue(e, path / k, depth);
      }
      return;
    case Json::value_t::null:
    case Json::value_t::boolean:
      return;
    case Json::value_t::binary:
    case Json::value_t::discarded:
      break;
  }
  fail(code::not_strict_json, path, "value is not strict JSON");
}

using Keys = std::initializer_list<std::string_view>;

bool contains(Keys keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

const Obj& asObject(const Json& v, const Path& path) {
  if (!v.is_object()) fail(code::wrong_type, path, "must be an object");
  return v.get_ref<const Obj&>();
}

// Closed key set: every key must be required or optional; every required key present.
void checkKeys(const Obj& o, const Path& path, Keys required, Keys optional) {
  for (const auto& [k, _] : o) {
    if (!contains(required, k) && !contains(optional, k)) {
      fail(code::unknown_key, path / k, "unknown key \"" + k + "\"");
    }
  }
  for (std::string_view k : required) {
    if (o.find(k) == o.end()) fail(code::missing_field, path / k, "missing required field");
  }
}

const Json* field(const Obj& o, std::string_view key) {
  auto it = o.find(key);
  return it == o.end() ? nullptr : &it->second;
}

const std::string& asString(const Json& v, const Path& path, bool nonEmpty) {
  if (!v.is_string()) fail(code::wrong_type, path, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  if (nonEmpty && s.empty()) fail(code::empty_id, path, "must be a non-empty string");
  return s;
}

const std::string& reqString(const Obj& o, std::string_view key, const Path& path,
                             bool nonEmpty = false) {
  const Json* v = field(o, key);
  if (!v) fail(code::missing_field, path / key, "missing required field");
  return asString(*v, path / key, nonEmpty);
}

const std::string* optString(const Obj& o, std::string_view key, const Path& path,
                             bool nonEmpty = false) {
  const Json* v = field(o, key);
  if (!v) return nullptr;
  return &asString(*v, path / key, nonEmpty);
}

std::optional<bool> optBool(const Obj& o, std::string_view key, const Path& path) {
  const Json* v = field(o, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(code::wrong_type, path / key, "must be a boolean");
  return v->get<bool>();
}

void optObject(const Obj& o, std::string_view key, const Path& path) {
  const Json* v = field(o, key);
  if (v && !v->is_object()) fail(code::wrong_type, path / key, "must be an object");
}

template <size_t N>
size_t enumIndex(const Json& v, const Path& path, const std::array<std::string_view, N>& values) {
  if (!v.is_string()) fail(code::wrong_type, path, "must be a string");
  const auto& s = v.get_ref<const std::string&>();
  for (size_t i = 0; i < N; ++i) {
    if (s == values[i]) return i;
  }
  fail(code::invalid_enum, path, "invalid value \"" + s + "\"");
}

void expectLiteral(const Obj& o, std::string_view key, const Path& path, std::string_view lit) {
  const std::string& s = reqString(o, key, path);
  if (s != lit) {
    fail(code::invalid_enum, path / key, "must be \"" + std::string(lit) + "\", got \"" + s + "\"");
  }
}

bool isSha256Digest(std::string_view s) {
  if (s.size() != 71 || s.substr(0, 7) != "sha256:") return false;
  for (char c : s.substr(7)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

const std::string& reqDigest(const Obj& o, std::string_view key, const Path& path) {
  const std::string& s = reqString(o, key, path);
  if (!isSha256Digest(s)) {
    fail(code::invalid_digest, path / key, "must be sha256: followed by 64 lower-case hex digits");
  }
  return s;
}

// Safe integer (Number.isSafeInteger) after normalisation, or nullopt.
std::optional<int64_t> safeInteger(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(kMaxSafeInteger)) return static_cast<int64_t>(u);
    return std::nullopt;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i <= kMaxSafeInteger && i >= -kMaxSafeInteger) return i;
  }
  if (v.is_number_float() && v.get<double>() == 0) return 0;  // -0 (Number.isSafeInteger(-0))
  return std::nullopt;
}

int64_t reqSafeInteger(const Json& v, const Path& path, int64_t min) {
  if (!v.is_number()) fail(code::wrong_type, path, "must be a number");
  auto i = safeInteger(v);
  if (!i || *i < min) {
    fail(code::invalid_integer, path, "must be a safe integer >= " + std::to_string(min));
  }
  return *i;
}

double reqFiniteNumber(const Json& v, const Path& path) {
  if (!v.is_number()) fail(code::wrong_type, path, "must be a number");
  return v.get<double>();  // finiteness already enforced by normalizeValue
}

constexpr std::array<std::string_view, 4> kRoles{"user", "model", "tool", "system"};
constexpr std::array<std::string_view, 5> kAuthors{"user", "host", "agent", "tool", "system"};
constexpr std::array<std::string_view, 5> kStatuses{"streaming", "completed", "failed", "aborted",
                                                    "cancelled"};
constexpr std::array<std::string_view, 2> kOrigins{"provider", "code_mode"};
constexpr std::array<std::string_view, 2> kVisibilities{"visible", "hidden"};
constexpr std::array<std::string_view, 5> kContentKinds{"text", "thinking", "function_call",
                                                        "function_response", "error"};
constexpr std::array<std::string_view, 6> kRecoveryModes{
    code::replay_safe, code::idempotent,      code::reconcile,
    code::reattach,    code::outcome_unknown, code::never_auto_retry};
constexpr std::array<std::string_view, 2> kRecoveryKinds{"maka.tool.reconcile_result",
                                                         "maka.tool.recovery_decision"};
constexpr std::array<std::string_view, 4> kObservations{
    code::matches_expected_state, code::matches_prior_state, code::diverged, code::unreadable};
constexpr std::array<std::string_view, 2> kDispositions{code::completed, code::parked};
constexpr std::array<std::string_view, 3> kParkedReasons{
    code::reconcile_matches_prior_state, code::reconcile_diverged, code::reconcile_unreadable};
constexpr std::array<std::string_view, 2> kProvenances{code::runtime_admission, code::claim_repair};

// ---- content (a.2) --------------------------------------------------------------------------

// Length of a string in UTF-16 code units (JavaScript String.length). Input is valid UTF-8.
size_t utf16Length(std::string_view s) {
  size_t units = 0;
  for (size_t i = 0; i < s.size();) units += detail::decodeUtf8(s, i) >= 0x10000 ? 2 : 1;
  return units;
}

std::u16string toUtf16(std::string_view s) {
  std::u16string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const int32_t cp = detail::decodeUtf8(s, i);
    if (cp >= 0x10000) {
      out.push_back(static_cast<char16_t>(0xD800 + ((cp - 0x10000) >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + ((cp - 0x10000) & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
  }
  return out;
}

// Text-content origin (upstream decodeTurnOrigin). {kind:'automation'} is normalised to
// {kind:'legacy_automation'}; the prefix digest maps it back (e.7).
void decodeTurnOrigin(Json& origin, const Path& path) {
  const Obj& o = asObject(origin, path);
  const Json* kindV = field(o, "kind");
  if (!kindV) fail(code::missing_field, path / "kind", "missing required field");
  const std::string kind = asString(*kindV, path / "kind", false);
  if (kind == "workhub_result") {
    checkKeys(o, path,
              {"kind", "eventId", "actionId", "delegationId", "targetSessionId", "targetTurnId"},
              {});
    for (std::string_view k :
         {"eventId", "actionId", "delegationId", "targetSessionId", "targetTurnId"}) {
      const std::string& s = reqString(o, k, path, true);
      if (utf16Length(s) > 256)
        fail(code::event_decode_error, path / k, "longer than 256 characters");
    }
  } else if (kind == "scheduled_task") {
    checkKeys(o, path, {"kind", "scheduledTaskId"}, {});
    reqString(o, "scheduledTaskId", path);
  } else if (kind == "automation" || kind == "legacy_automation") {
    checkKeys(o, path, {"kind", "automationId"}, {});
    reqString(o, "automationId", path);
    origin["kind"] = "legacy_automation";
  } else if (kind == "goal") {
    checkKeys(o, path, {"kind", "goalId"}, {});
    reqString(o, "goalId", path);
  } else if (kind == "agent_graph") {
    checkKeys(o, path, {"kind", "graphId", "wakeId", "attemptId"}, {});
    reqString(o, "graphId", path);
    reqString(o, "wakeId", path);
    reqString(o, "attemptId", path);
  } else {
    fail(code::invalid_enum, path / "kind", "invalid turn origin kind \"" + kind + "\"");
  }
}

// Storage reference of an attachment (upstream isStorageRef).
void decodeStorageRef(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  const Json* kindV = field(o, "kind");
  if (!kindV) fail(code::missing_field, path / "kind", "missing required field");
  static constexpr std::array<std::string_view, 3> kRefKinds{"session_file", "workspace_file",
                                                             "external_file"};
  switch (enumIndex(*kindV, path / "kind", kRefKinds)) {
    case 0:
      checkKeys(o, path, {"kind", "sessionId", "relativePath"}, {});
      reqString(o, "sessionId", path);
      reqString(o, "relativePath", path);
      return;
    case 1:
      checkKeys(o, path, {"kind", "relativePath"}, {});
      reqString(o, "relativePath", path);
      return;
    default:
      checkKeys(o, path, {"kind", "absolutePath"}, {});
      reqString(o, "absolutePath", path);
  }
}

void decodeAttachment(Json& v, const Path& path) {
  // a.2: attachment bytes of -0 becomes 0 (the one place the decoder rewrites a -0).
  if (auto it = v.find("bytes");
      v.is_object() && it != v.end() && it->is_number_float() && it->get<double>() == 0) {
    *it = 0;
  }
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"kind", "name", "mimeType", "bytes", "ref"}, {});
  static constexpr std::array<std::string_view, 5> kAttachmentKinds{"image", "pdf", "doc", "code",
                                                                    "other"};
  enumIndex(o.at("kind"), path / "kind", kAttachmentKinds);
  reqString(o, "name", path);
  reqString(o, "mimeType", path);
  reqSafeInteger(o.at("bytes"), path / "bytes", 0);
  decodeStorageRef(o.at("ref"), path / "ref");
}

void decodeQuote(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"text"}, {"label", "sourceTurnId"});
  reqString(o, "text", path);
  optString(o, "label", path);
  optString(o, "sourceTurnId", path);
}

bool isCanonicalRelativePath(std::string_view p) {
  if (p.empty() || p.find('\0') != std::string_view::npos ||
      p.find('\\') != std::string_view::npos || p.front() == '/') {
    return false;
  }
  if (p.size() >= 2 && std::isalpha(static_cast<unsigned char>(p[0])) && p[1] == ':') return false;
  size_t start = 0;
  while (true) {
    const size_t slash = p.find('/', start);
    const std::string_view seg =
        p.substr(start, slash == std::string_view::npos ? p.npos : slash - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    if (slash == std::string_view::npos) return true;
    start = slash + 1;
  }
}

// inlineReferences (upstream isInlineReference + inlineReferencesMatchText); offsets are UTF-16.
void decodeInlineReferences(const Json& refs, const Path& path, std::string_view displayed) {
  if (refs.size() > 32) fail(code::event_decode_error, path, "more than 32 inline references");
  const std::u16string text = toUtf16(displayed);
  int64_t previousEnd = 0;
  for (size_t i = 0; i < refs.size(); ++i) {
    const Path p = path[i];
    const Obj& o = asObject(refs[i], p);
    checkKeys(o, p, {"kind", "value", "label", "start"}, {});
    static constexpr std::array<std::string_view, 2> kRefKinds{"skill", "workspace_file"};
    const size_t kind = enumIndex(o.at("kind"), p / "kind", kRefKinds);
    const std::string& value = reqString(o, "value", p, true);
    const std::string& label = reqString(o, "label", p, true);
    if (utf16Length(value) > 4096) fail(code::event_decode_error, p / "value", "too long");
    if (utf16Length(label) > 200) fail(code::event_decode_error, p / "label", "too long");
    const int64_t start = reqSafeInteger(o.at("start"), p / "start", 0);
    bool valueOk;
    if (kind == 0) {
      valueOk =
          value.size() > 7 && value.starts_with("/skill:") &&
          std::all_of(value.begin() + 7, value.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
          });
    } else {
      valueOk =
          value.starts_with("@") && isCanonicalRelativePath(std::string_view(value).substr(1));
    }
    if (!valueOk) fail(code::event_decode_error, p / "value", "invalid inline reference value");
    const std::u16string v16 = toUtf16(value);
    if (start < previousEnd || static_cast<size_t>(start) > text.size() ||
        text.compare(static_cast<size_t>(start), v16.size(), v16) != 0) {
      fail(code::event_decode_error, p / "start", "inline reference does not match the text");
    }
    previousEnd = start + static_cast<int64_t>(v16.size());
  }
}

void decodeTextContent(Json& content, const Path& path) {
  Obj& o = content.get_ref<Obj&>();
  checkKeys(o, path, {"kind", "text"},
            {"displayText", "origin", "attachments", "quotes", "inlineReferences", "steering",
             "providerOptions"});
  const std::string& text = reqString(o, "text", path);
  const std::string* displayText = optString(o, "displayText", path);
  for (std::string_view k : {"attachments", "quotes", "inlineReferences"}) {
    auto found = o.find(k);
    if (found == o.end()) continue;
    Json* v = &found->second;
    const Path p = path / k;
    if (!v->is_array()) fail(code::wrong_type, p, "must be an array");
    if (k == "attachments") {
      for (size_t i = 0; i < v->size(); ++i) decodeAttachment((*v)[i], p[i]);
    } else if (k == "quotes") {
      for (size_t i = 0; i < v->size(); ++i) decodeQuote((*v)[i], p[i]);
    } else {
      decodeInlineReferences(*v, p, displayText ? *displayText : text);
    }
  }
  if (const Json* s = field(o, "steering")) {
    if (!s->is_boolean() || !s->get<bool>()) {
      fail(code::wrong_type, path / "steering", "must be literal true");
    }
  }
  optObject(o, "providerOptions", path);
  if (auto it = o.find("origin"); it != o.end()) decodeTurnOrigin(it->second, path / "origin");
  // Normalisation (a.2): displayText equal to text and empty attachments/quotes are dropped;
  // attachment bytes -0 became 0 in decodeAttachment.
  if (displayText && *displayText == text) o.erase("displayText");
  for (const char* k : {"attachments", "quotes"}) {
    auto it = o.find(k);
    if (it != o.end() && it->second.empty()) o.erase(it);
  }
}

void decodeContent(Json& content, const Path& path, RuntimeEvent& ev) {
  const Obj& o = asObject(content, path);
  const Json* kindV = field(o, "kind");
  if (!kindV) fail(code::missing_field, path / "kind", "missing required field");
  const size_t kind = enumIndex(*kindV, path / "kind", kContentKinds);
  switch (kind) {
    case 0:
      decodeTextContent(content, path);
      ev.contentKind = ContentKind::text;
      ev.hasModelVisibleContent = !content["text"].get_ref<const std::string&>().empty();
      return;
    case 1:
      checkKeys(o, path, {"kind", "text"}, {"signature", "providerOptions"});
      reqString(o, "text", path);
      optString(o, "signature", path);
      optObject(o, "providerOptions", path);
      ev.contentKind = ContentKind::thinking;
      ev.hasModelVisibleContent = true;
      return;
    case 2:
      checkKeys(o, path, {"kind", "id", "name", "args"}, {"providerOptions", "providerExecuted"});
      ev.callId = reqString(o, "id", path);
      ev.toolName = reqString(o, "name", path);
      optObject(o, "providerOptions", path);
      optBool(o, "providerExecuted", path);
      ev.contentKind = ContentKind::function_call;
      ev.hasModelVisibleContent = true;
      return;
    case 3:
      checkKeys(o, path, {"kind", "id", "name", "result"},
                {"isError", "providerExecuted", "providerOutput"});
      ev.callId = reqString(o, "id", path);
      ev.toolName = reqString(o, "name", path);
      ev.isError = optBool(o, "isError", path).value_or(false);
      optBool(o, "providerExecuted", path);
      ev.contentKind = ContentKind::function_response;
      ev.hasModelVisibleContent = true;
      return;
    default: {
      checkKeys(o, path, {"kind", "message"}, {"code", "reason", "details"});
      reqString(o, "message", path);
      optString(o, "code", path);
      optString(o, "reason", path);
      if (const Json* d = field(o, "details")) {
        bool ok = d->is_object();
        if (d->is_array()) {
          ok = std::all_of(d->begin(), d->end(), [](const Json& e) { return e.is_string(); });
        }
        if (!ok) fail(code::wrong_type, path / "details", "must be a string array or an object");
      }
      ev.contentKind = ContentKind::error;
      return;
    }
  }
}

// ---- actions (a.3) --------------------------------------------------------------------------

void decodeRequestIdOnly(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"requestId"}, {});
  reqString(o, "requestId", path, true);
}

// "workspace:v1:<uuid>" with the marker UUID rule of spec h (case-insensitive).
bool isWorkspaceIdentity(std::string_view s) {
  constexpr std::string_view kPrefix = "workspace:v1:";
  if (!s.starts_with(kPrefix)) return false;
  const std::string_view u = s.substr(kPrefix.size());
  if (u.size() != 36) return false;
  for (size_t i = 0; i < u.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(u[i])));
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  const char version = u[14];
  const char variant = static_cast<char>(std::tolower(static_cast<unsigned char>(u[19])));
  return version >= '1' && version <= '8' &&
         (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

// File state identity of file_state_v1 evidence: {exists:false} | {exists:true, size, sha256}.
FileStateEvidence decodeFileStateEvidence(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  const Json* existsV = field(o, "exists");
  if (!existsV) fail(code::missing_field, path / "exists", "missing required field");
  if (!existsV->is_boolean()) fail(code::wrong_type, path / "exists", "must be a boolean");
  FileStateEvidence s;
  s.exists = existsV->get<bool>();
  if (!s.exists) {
    checkKeys(o, path, {"exists"}, {});
    return s;
  }
  checkKeys(o, path, {"exists", "size", "sha256"}, {});
  s.size = reqSafeInteger(o.at("size"), path / "size", 0);
  s.sha256 = reqDigest(o, "sha256", path);
  return s;
}

constexpr std::array<std::string_view, 2> kTransformVersions{"write_v1", "edit_v1"};

// actions.toolDispatch.fileEvidence (file_state_v1, spec i): closed key sets at every level.
FileEvidence decodeFileEvidence(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path,
            {"kind", "version", "workspaceIdentity", "targetPath", "before", "expectedAfter",
             "transformVersion", "result"},
            {});
  FileEvidence e;
  expectLiteral(o, "kind", path, "file_state_v1");
  e.kind = "file_state_v1";
  const Json& version = o.at("version");
  if (!version.is_number()) fail(code::wrong_type, path / "version", "must be a number");
  if (safeInteger(version) != std::optional<int64_t>(1)) {
    fail(code::invalid_enum, path / "version", "unsupported fileEvidence version");
  }
  e.workspaceIdentity = reqString(o, "workspaceIdentity", path, true);
  if (!isWorkspaceIdentity(e.workspaceIdentity)) {
    fail(code::event_decode_error, path / "workspaceIdentity", "must be workspace:v1:<uuid>");
  }
  e.targetPath = reqString(o, "targetPath", path, true);
  if (!isCanonicalRelativePath(e.targetPath)) {
    fail(code::event_decode_error, path / "targetPath",
         "must be a canonical relative path (no '..', '.', empty segment, absolute path)");
  }
  e.before = decodeFileStateEvidence(o.at("before"), path / "before");
  e.expectedAfter = decodeFileStateEvidence(o.at("expectedAfter"), path / "expectedAfter");
  e.transformVersion = kTransformVersions[enumIndex(o.at("transformVersion"),
                                                    path / "transformVersion", kTransformVersions)];
  e.result = o.at("result");  // any strict JSON (normalised in pass 1)
  return e;
}

ToolDispatch decodeToolDispatch(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path,
            {"protocol", "operationId", "providerToolCallId", "toolName", "canonicalArgsHash",
             "recoveryMode"},
            {"fileEvidence"});
  ToolDispatch d;
  expectLiteral(o, "protocol", path, code::t1_after_preflight_v1);
  d.protocol = std::string(code::t1_after_preflight_v1);
  d.operationId = reqString(o, "operationId", path, true);
  d.providerToolCallId = reqString(o, "providerToolCallId", path, true);
  d.toolName = reqString(o, "toolName", path, true);
  d.canonicalArgsHash = reqString(o, "canonicalArgsHash", path, true);
  d.recoveryMode =
      kRecoveryModes[enumIndex(o.at("recoveryMode"), path / "recoveryMode", kRecoveryModes)];
  if (const Json* ev = field(o, "fileEvidence")) {
    if (d.recoveryMode != code::reconcile) {
      fail(code::event_decode_error, path / "fileEvidence",
           "file evidence is only allowed on a reconcile-mode dispatch");
    }
    d.fileEvidence = decodeFileEvidence(*ev, path / "fileEvidence");
  }
  return d;
}

ToolRecovery decodeToolRecovery(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"kind", "version", "payload"}, {});
  ToolRecovery r{};
  const size_t kind = enumIndex(o.at("kind"), path / "kind", kRecoveryKinds);
  const Json& version = o.at("version");
  if (!version.is_number()) fail(code::wrong_type, path / "version", "must be a number");
  if (safeInteger(version) != std::optional<int64_t>(1)) {
    fail(code::invalid_enum, path / "version", "unsupported toolRecovery version");
  }
  const Path pp = path / "payload";
  const Obj& p = asObject(o.at("payload"), pp);
  if (kind == 0) {
    r.kind = ToolRecovery::Kind::reconcile_result;
    checkKeys(p, pp,
              {"protocol", "operationId", "observation", "observationSchema", "observationDigest"},
              {});
    expectLiteral(p, "protocol", pp, code::tool_reconcile_v1);
    r.operationId = reqString(p, "operationId", pp, true);
    r.observation =
        kObservations[enumIndex(p.at("observation"), pp / "observation", kObservations)];
    expectLiteral(p, "observationSchema", pp, code::state_identity_v1);
    r.observationDigest = reqDigest(p, "observationDigest", pp);
    return r;
  }
  r.kind = ToolRecovery::Kind::recovery_decision;
  const Json* disp = field(p, "disposition");
  if (!disp) fail(code::missing_field, pp / "disposition", "missing required field");
  const size_t d = enumIndex(*disp, pp / "disposition", kDispositions);
  if (d == 0) {
    checkKeys(p, pp,
              {"protocol", "operationId", "disposition", "reasonCode", "outcomeEventId",
               "evidenceEventIds"},
              {});
  } else {
    checkKeys(p, pp, {"protocol", "operationId", "disposition", "reasonCode", "evidenceEventIds"},
              {});
  }
  expectLiteral(p, "protocol", pp, code::tool_recovery_v1);
  r.operationId = reqString(p, "operationId", pp, true);
  r.disposition = kDispositions[d];
  if (d == 0) {
    expectLiteral(p, "reasonCode", pp, code::reconcile_matches_expected_state);
    r.reasonCode = std::string(code::reconcile_matches_expected_state);
    r.outcomeEventId = reqString(p, "outcomeEventId", pp, true);
  } else {
    r.reasonCode = kParkedReasons[enumIndex(p.at("reasonCode"), pp / "reasonCode", kParkedReasons)];
  }
  const Path ep = pp / "evidenceEventIds";
  const Json& ev = p.at("evidenceEventIds");
  if (!ev.is_array()) fail(code::wrong_type, ep, "must be an array");
  if (ev.empty()) fail(code::empty_id, ep, "must be a non-empty array");
  r.evidenceEventIds.reserve(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    const std::string& id = asString(ev[i], ep[i], true);
    if (std::find(r.evidenceEventIds.begin(), r.evidenceEventIds.end(), id) !=
        r.evidenceEventIds.end()) {
      fail(code::event_decode_error, ep[i], "duplicate evidence event id \"" + id + "\"");
    }
    r.evidenceEventIds.push_back(id);
  }
  return r;
}

ContinuationStart decodeContinuationStart(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path,
            {"protocol", "provenance", "claimId", "boundaryDigest", "immediateSource",
             "replayManifestDigest", "providerProjectionVersion", "providerReplayDigest"},
            {});
  ContinuationStart c;
  expectLiteral(o, "protocol", path, code::continuation_start_v2);
  c.provenance = kProvenances[enumIndex(o.at("provenance"), path / "provenance", kProvenances)];
  c.claimId = reqString(o, "claimId", path, true);
  c.boundaryDigest = reqDigest(o, "boundaryDigest", path);
  const Path sp = path / "immediateSource";
  const Obj& s = asObject(o.at("immediateSource"), sp);
  checkKeys(s, sp, {"sessionId", "invocationId", "runId", "turnId", "highWater", "prefixDigest"},
            {});
  c.sourceSessionId = reqString(s, "sessionId", sp, true);
  c.sourceInvocationId = reqString(s, "invocationId", sp, true);
  c.sourceRunId = reqString(s, "runId", sp, true);
  c.sourceTurnId = reqString(s, "turnId", sp, true);
  c.sourceHighWater = reqSafeInteger(s.at("highWater"), sp / "highWater", 1);
  c.sourcePrefixDigest = reqDigest(s, "prefixDigest", sp);
  c.replayManifestDigest = reqDigest(o, "replayManifestDigest", path);
  const Json& ppv = o.at("providerProjectionVersion");
  if (!ppv.is_number()) fail(code::wrong_type, path / "providerProjectionVersion", "must be 1");
  if (safeInteger(ppv) != std::optional<int64_t>(1)) {
    fail(code::invalid_enum, path / "providerProjectionVersion",
         "unsupported provider projection version");
  }
  c.providerProjectionVersion = 1;
  c.providerReplayDigest = reqDigest(o, "providerReplayDigest", path);
  return c;
}

void decodeTokenUsage(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"input", "output"},
            {"cacheHitInput",
             "cacheMissInput",
             "cacheWriteInput",
             "cacheMissInputSource",
             "reasoning",
             "total",
             "rawFinishReason",
             "runtimeSteps",
             "cacheRead",
             "cacheCreation",
             "costUsd",
             "systemPromptHash",
             "contextRemaining",
             "prefixHash",
             "prefixChangeReason",
             "requestShapeHash",
             "requestShapeChangeReason",
             "promptSegments",
             "contextBudget",
             "providerRequestTraceId"});
  reqFiniteNumber(o.at("input"), path / "input");
  reqFiniteNumber(o.at("output"), path / "output");
}

void decodePermissionDecision(const Json& v, const Path& path) {
  const Obj& o = asObject(v, path);
  checkKeys(o, path, {"requestId", "decision"},
            {"rememberForTurn", "reviewer", "rationale", "riskLevel", "toolName"});
  reqString(o, "requestId", path);
  reqString(o, "decision", path, true);
  optBool(o, "rememberForTurn", path);
  optString(o, "toolName", path, true);
}

void decodeActions(const Json& actions, const Path& path, RuntimeEvent& ev) {
  const Obj& o = asObject(actions, path);
  checkKeys(
      o, path, {},
      {"stateDelta", "artifactDelta", "permissionRequest", "permissionDecision",
       "permissionAnswerAccepted", "permissionClosureAccepted", "userQuestionRequest",
       "userQuestionAnswerAccepted", "transferToAgent", "endInvocation", "tokenUsage",
       "toolDispatch", "toolRecovery", "runtimeProtocol", "continuationStart", "workspaceFact"});
  if (const Json* pc = field(o, "permissionClosureAccepted")) {
    const Path p = path / "permissionClosureAccepted";
    if (o.size() != 1) {
      fail(code::event_decode_error, p, "permissionClosureAccepted must be the only action");
    }
    const Obj& c = asObject(*pc, p);
    checkKeys(c, p, {"requestId", "reason"}, {});
    reqString(c, "requestId", p, true);
    expectLiteral(c, "reason", p, "timed_out");
  }
  optObject(o, "stateDelta", path);
  if (const Json* ad = field(o, "artifactDelta")) {
    const Path p = path / "artifactDelta";
    for (const auto& [k, val] : asObject(*ad, p)) {
      if (!val.is_string() && !val.is_number() && !val.is_boolean()) {
        fail(code::wrong_type, p / k, "must be a string, number or boolean");
      }
    }
  }
  optObject(o, "permissionRequest", path);
  if (const Json* pd = field(o, "permissionDecision")) {
    decodePermissionDecision(*pd, path / "permissionDecision");
  }
  if (const Json* a = field(o, "permissionAnswerAccepted")) {
    decodeRequestIdOnly(*a, path / "permissionAnswerAccepted");
  }
  optObject(o, "userQuestionRequest", path);
  if (const Json* a = field(o, "userQuestionAnswerAccepted")) {
    decodeRequestIdOnly(*a, path / "userQuestionAnswerAccepted");
  }
  optString(o, "transferToAgent", path);
  ev.hasEndInvocation = optBool(o, "endInvocation", path).value_or(false);
  if (const Json* t = field(o, "tokenUsage")) decodeTokenUsage(*t, path / "tokenUsage");
  if (const Json* d = field(o, "toolDispatch")) {
    ev.toolDispatch = decodeToolDispatch(*d, path / "toolDispatch");
  }
  if (const Json* r = field(o, "toolRecovery")) {
    ev.toolRecovery = decodeToolRecovery(*r, path / "toolRecovery");
  }
  if (const Json* m = field(o, "runtimeProtocol")) {
    const Path p = path / "runtimeProtocol";
    const Obj& mo = asObject(*m, p);
    checkKeys(mo, p, {"toolBoundary"}, {});
    expectLiteral(mo, "toolBoundary", p, code::t1_after_preflight_v1);
    ev.runtimeProtocol = std::string(code::t1_after_preflight_v1);
  }
  if (const Json* c = field(o, "continuationStart")) {
    ev.continuationStart = decodeContinuationStart(*c, path / "continuationStart");
    ev.hasContinuationStart = true;
  }
  if (const Json* w = field(o, "workspaceFact")) {
    asObject(*w, path / "workspaceFact");
    ev.hasWorkspaceFact = true;
  }
}

// ---- refs (a.4) -----------------------------------------------------------------------------

void decodeRefs(const Json& refs, const Path& path, RuntimeEvent& ev) {
  const Obj& o = asObject(refs, path);
  static constexpr std::array<std::string_view, 13> kStringRefs{
      "storedMessageId", "traceEventId",           "toolCallId",
      "providerEventId", "providerRequestTraceId", "artifactId",
      "operationId",     "parentToolCallId",       "parentOperationId",
      "stepId",          "sourceInvocationId",     "sourceRunId",
      "sourceTurnId"};
  for (const auto& [k, v] : o) {
    const Path p = path / k;
    if (std::find(kStringRefs.begin(), kStringRefs.end(), k) != kStringRefs.end()) {
      asString(v, p, false);
    } else if (k == "sourceMessageDigest") {
      if (!isSha256Digest(asString(v, p, false))) {
        fail(code::invalid_digest, p, "must be sha256: followed by 64 lower-case hex digits");
      }
    } else if (k == "sourceRuntimeEventHighWater") {
      ev.refSourceRuntimeEventHighWater = reqSafeInteger(v, p, 0);
    } else {
      fail(code::unknown_key, p, "unknown key \"" + k + "\"");
    }
  }
  if (const Json* v = field(o, "operationId")) ev.refOperationId = v->get<std::string>();
  if (const Json* v = field(o, "toolCallId")) ev.refToolCallId = v->get<std::string>();
  if (const Json* v = field(o, "parentToolCallId")) ev.refParentToolCallId = v->get<std::string>();
  if (const Json* v = field(o, "parentOperationId")) {
    ev.refParentOperationId = v->get<std::string>();
  }
}

// ---- lanes (a.5) ----------------------------------------------------------------------------

bool hasExactKeys(const Json& v, Keys keys) {
  if (!v.is_object() || v.size() != keys.size()) return false;
  for (std::string_view k : keys) {
    if (!v.contains(k)) return false;
  }
  return true;
}

bool functionCallActionsOk(const Json* actions) {
  if (!actions) return true;
  if (!hasExactKeys(*actions, {"stateDelta"})) return false;
  const Json& sd = (*actions)["stateDelta"];
  if (!sd.is_object() || sd.empty()) return false;
  for (const auto& [k, v] : sd.items()) {
    if (k != "activityKind" && k != "displayName" && k != "intent") return false;
    if (!v.is_string()) return false;
  }
  return true;
}

bool functionResponseActionsOk(const Json* actions) {
  if (!actions) return true;
  if (!hasExactKeys(*actions, {"stateDelta"})) return false;
  const Json& sd = (*actions)["stateDelta"];
  return hasExactKeys(sd, {"durationMs"}) && sd["durationMs"].is_number();
}

Lane computeLane(const RuntimeEvent& ev, const Obj& top) {
  int count = 0;
  Lane lane = Lane::ordinary;
  auto add = [&](Lane l) {
    ++count;
    lane = l;
  };
  if (ev.contentKind == ContentKind::function_call) add(Lane::function_call);
  if (ev.toolDispatch) add(Lane::tool_dispatch);
  if (ev.contentKind == ContentKind::function_response) add(Lane::function_response);
  if (ev.toolRecovery) {
    add(ev.toolRecovery->kind == ToolRecovery::Kind::reconcile_result ? Lane::reconcile_result
                                                                      : Lane::recovery_decision);
  }
  if (count == 0) return Lane::ordinary;
  if (count > 1) return Lane::conflict;
  // Mandatory envelope of every tool lane.
  if (ev.partial || ev.status || ev.branch) return Lane::conflict;
  const Json* actions = field(top, "actions");
  const Json* refs = field(top, "refs");
  const bool hasContent = field(top, "content") != nullptr;
  const bool systemEnvelope = ev.role == Role::system && ev.author == Author::system;
  switch (lane) {
    case Lane::function_call:
      if (ev.role != Role::model || ev.author != Author::agent) return Lane::conflict;
      return functionCallActionsOk(actions) ? lane : Lane::conflict;
    case Lane::function_response:
      if (ev.role != Role::tool || ev.author != Author::tool) return Lane::conflict;
      return functionResponseActionsOk(actions) ? lane : Lane::conflict;
    case Lane::tool_dispatch:
      if (hasContent || !systemEnvelope) return Lane::conflict;
      if (!hasExactKeys(*actions, {"toolDispatch"})) return Lane::conflict;
      if (!refs || !(hasExactKeys(*refs, {"operationId", "toolCallId"}) ||
                     hasExactKeys(*refs, {"operationId", "toolCallId", "parentToolCallId",
                                          "parentOperationId"}))) {
        return Lane::conflict;
      }
      return lane;
    case Lane::reconcile_result:
    case Lane::recovery_decision:
      if (hasContent || !systemEnvelope) return Lane::conflict;
      if (!hasExactKeys(*actions, {"toolRecovery"})) return Lane::conflict;
      if (!refs || !hasExactKeys(*refs, {"operationId", "toolCallId"})) return Lane::conflict;
      return lane;
    default:
      return lane;
  }
}

}  // namespace

bool RuntimeEvent::isTerminal() const {
  return hasEndInvocation || (status && *status != EventStatus::streaming);
}

bool RuntimeEvent::isModelVisible() const { return !hidden && hasModelVisibleContent; }

RuntimeEvent decodeRuntimeEvent(const Json& value) { return decodeRuntimeEvent(Json(value)); }

RuntimeEvent decodeRuntimeEvent(Json&& value) {
  const Path root;
  RuntimeEvent ev;
  ev.json = std::move(value);
  Json& j = ev.json;
  normalizeValue(j, root);
  const Obj& top = asObject(j, root);
  checkKeys(
      top, root,
      {"id", "invocationId", "runId", "sessionId", "turnId", "ts", "partial", "role", "author"},
      {"branch", "origin", "modelVisibility", "status", "content", "actions", "refs"});
  ev.id = reqString(top, "id", root, true);
  ev.invocationId = reqString(top, "invocationId", root, true);
  ev.runId = reqString(top, "runId", root, true);
  ev.sessionId = reqString(top, "sessionId", root, true);
  ev.turnId = reqString(top, "turnId", root, true);
  ev.ts = reqFiniteNumber(top.at("ts"), root / "ts");
  if (!top.at("partial").is_boolean())
    fail(code::wrong_type, root / "partial", "must be a boolean");
  ev.partial = top.at("partial").get<bool>();
  ev.role = static_cast<Role>(enumIndex(top.at("role"), root / "role", kRoles));
  ev.author = static_cast<Author>(enumIndex(top.at("author"), root / "author", kAuthors));
  if (const std::string* b = optString(top, "branch", root)) ev.branch = *b;
  if (const Json* o = field(top, "origin")) {
    ev.origin = std::string(kOrigins[enumIndex(*o, root / "origin", kOrigins)]);
  }
  if (const Json* m = field(top, "modelVisibility")) {
    ev.hidden = enumIndex(*m, root / "modelVisibility", kVisibilities) == 1;
  }
  if (const Json* s = field(top, "status")) {
    ev.status = static_cast<EventStatus>(enumIndex(*s, root / "status", kStatuses));
  }
  if (auto it = j.find("content"); it != j.end()) decodeContent(*it, root / "content", ev);
  if (const Json* a = field(top, "actions")) decodeActions(*a, root / "actions", ev);
  if (const Json* r = field(top, "refs")) decodeRefs(*r, root / "refs", ev);
  ev.lane = computeLane(ev, top);
  if (ev.contentKind == ContentKind::function_call) {
    try {
      ev.callArgsHash = canonicalArgsHash(ev.toolName, j["content"]["args"]);
    } catch (const Error&) {
      ev.callArgsHash.reset();
    }
  }
  return ev;
}

std::string encodeRuntimeEvent(const RuntimeEvent& event) { return stableJson(event.json); }

std::vector<RuntimeEvent> decodeRuntimeEventList(std::string_view text) {
  std::vector<RuntimeEvent> out;
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return out;
  if (text[start] == '[') {
    Json arr;
    try {
      arr = parseJson(text, kMaxJsonDepth + 1);  // the array, then events as the store holds them
    } catch (const Error& e) {
      throw EventListError(e, std::nullopt);
    }
    out.reserve(arr.size());
    for (size_t i = 0; i < arr.size(); ++i) {
      try {
        out.push_back(decodeRuntimeEvent(std::move(arr[i])));
      } catch (const Error& e) {
        throw EventListError(e, i);
      }
    }
    return out;
  }
  out.reserve(static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  size_t index = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      out.push_back(decodeRuntimeEvent(parseJson(line)));
    } catch (const Error& e) {
      throw EventListError(e, index);
    }
    ++index;
  }
  return out;
}

std::string_view toString(Role r) { return kRoles[static_cast<size_t>(r)]; }
std::string_view toString(Author a) { return kAuthors[static_cast<size_t>(a)]; }
std::string_view toString(EventStatus s) { return kStatuses[static_cast<size_t>(s)]; }
std::string_view toString(ContentKind k) {
  return k == ContentKind::none ? std::string_view("none")
                                : kContentKinds[static_cast<size_t>(k) - 1];
}
std::string_view toString(Lane l) {
  static constexpr std::array<std::string_view, 7> kLanes{
      "ordinary",         "function_call",     "tool_dispatch", "function_response",
      "reconcile_result", "recovery_decision", "conflict"};
  return kLanes[static_cast<size_t>(l)];
}

}  // namespace crashsim
