// decode_content.cpp — the RuntimeEvent decoder's content section (spec a.2): text content and
// its origin, attachments, quotes and inline references (offsets in UTF-16 code units), and the
// function_call / function_response / error kinds; fills the event's typed content view.
#include <string>
#include <unordered_set>

#include "crashsim/hashing.h"
#include "event/decode_primitives.h"

namespace crashsim::decode {
namespace {

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

}  // namespace

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

}  // namespace crashsim::decode
