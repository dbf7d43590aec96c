// crashsim/runtime_event.h — the RuntimeEvent model (spec a.1–a.5) and its strict decoder.
//
// A RuntimeEvent is one immutable, append-only fact; the ledger of RuntimeEvents is the only
// canonical recovery-fact source and every other table is a projection of it.
//
// The only way to obtain a RuntimeEvent is decodeRuntimeEvent(): it validates the closed key
// sets of every declared level (envelope, content kinds, actions, refs, toolDispatch,
// toolRecovery, continuationStart, runtimeProtocol), normalises text content (a.2) and fills
// the typed views below, so scanners never re-parse JSON. `json` holds the normalised
// canonical object; stableJson(event.json) is the persisted payload (a.6).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "crashsim/error.h"
#include "crashsim/json.h"

namespace crashsim {

enum class Role { user, model, tool, system };
enum class Author { user, host, agent, tool, system };
enum class EventStatus { streaming, completed, failed, aborted, cancelled };
enum class ContentKind { none, text, thinking, function_call, function_response, error };

// Tool-ledger lane of one physical event (a.5). `conflict` = more than one lane, or a lane
// whose mandatory envelope is violated (scanner issue semantic_lane_conflict).
enum class Lane {
  ordinary,
  function_call,
  tool_dispatch,
  function_response,
  reconcile_result,
  recovery_decision,
  conflict
};

// One file state identity of file evidence: absent ({"exists":false}) or present
// ({"exists":true,"size":<safe integer >= 0>,"sha256":"sha256:<64 hex>"}).
struct FileStateEvidence {
  bool exists = false;
  int64_t size = 0;    // 0 when !exists
  std::string sha256;  // empty when !exists
  bool operator==(const FileStateEvidence&) const = default;
};

// actions.toolDispatch.fileEvidence — durable file evidence bound by T1 (spec i), optional,
// allowed ONLY on a dispatch whose recoveryMode is "reconcile" (else event_decode_error).
// Exact shape, closed key sets at every level:
//   {"kind":"file_state_v1","version":1,"workspaceIdentity":"workspace:v1:<uuid>",
//    "targetPath":<canonical relative path: non-empty, '/'-separated, no '.', '..' or empty
//                  segment, not absolute, no backslash>,
//    "before":<file state>,"expectedAfter":<file state>,
//    "transformVersion":"write_v1"|"edit_v1","result":<any strict JSON>}
// `result` is the production-shaped success result the tool returns after the transform.
struct FileEvidence {
  std::string kind;  // always "file_state_v1"
  std::string workspaceIdentity;
  std::string targetPath;
  FileStateEvidence before, expectedAfter;
  std::string transformVersion;  // write_v1 | edit_v1
  Json result;
  bool operator==(const FileEvidence&) const = default;
};

// actions.toolDispatch — the T1 dispatch fact (a.3). The six contract fields are required;
// `fileEvidence` is this runtime's optional evidence extension (spec i).
struct ToolDispatch {
  std::string protocol;  // always "t1_after_preflight_v1"
  std::string operationId;
  std::string providerToolCallId;
  std::string toolName;
  std::string canonicalArgsHash;
  std::string
      recoveryMode;  // replay_safe|idempotent|reconcile|reattach|outcome_unknown|never_auto_retry
  std::optional<FileEvidence> fileEvidence;  // reconcile-mode file tools only
};

// actions.toolRecovery — reconcile observation or recovery decision (a.3), decoded.
struct ToolRecovery {
  enum class Kind { reconcile_result, recovery_decision } kind;
  std::string operationId;
  // reconcile_result
  std::string observation;  // matches_expected_state|matches_prior_state|diverged|unreadable
  std::string observationDigest;
  // recovery_decision
  std::string disposition;  // completed|parked
  std::string reasonCode;
  std::string outcomeEventId;  // completed only
  std::vector<std::string> evidenceEventIds;
};

// actions.continuationStart (continuation_start_v2, a.3), decoded. All fields required.
struct ContinuationStart {
  std::string provenance;  // runtime_admission | claim_repair (audit mirror only)
  std::string claimId;
  std::string boundaryDigest;
  std::string sourceSessionId, sourceInvocationId, sourceRunId, sourceTurnId;
  int64_t sourceHighWater = 0;  // safe integer > 0
  std::string sourcePrefixDigest;
  std::string replayManifestDigest;
  int providerProjectionVersion = 1;  // only 1 is accepted
  std::string providerReplayDigest;
};

struct RuntimeEvent {
  // Field order is a layout choice, not part of the model: the fields every ledger pass reads
  // (scanner, resolver, resume plan: lane and flags, envelope ids, call id/name, refs, the
  // protocol marker) come first so a pass touches the first few cache lines of an event.

  // Canonical, normalised JSON object of the whole event (what stableJson() persists).
  Json json;

  // Lane (a.5), computed by the decoder including the mandatory-envelope checks.
  Lane lane = Lane::ordinary;
  // Content view (a.2). callId/toolName are content.id/content.name for calls and responses.
  ContentKind contentKind = ContentKind::none;
  bool partial = false;
  bool hidden = false;   // modelVisibility == "hidden"
  bool isError = false;  // function_response.isError
  bool hasEndInvocation = false;
  bool hasContinuationStart = false;
  bool hasWorkspaceFact = false;
  // Non-empty text/thinking/call/response content (a.2), ignoring modelVisibility.
  bool hasModelVisibleContent = false;
  Role role = Role::user;
  Author author = Author::user;
  double ts = 0;

  // Envelope (a.1).
  std::string id, invocationId, runId, sessionId, turnId;
  std::string callId;
  std::string toolName;
  std::optional<std::string> runtimeProtocol;  // actions.runtimeProtocol.toolBoundary

  // Refs view (a.4).
  std::optional<std::string> refOperationId;
  std::optional<std::string> refToolCallId;
  std::optional<std::string> refParentToolCallId;
  std::optional<std::string> refParentOperationId;
  std::optional<int64_t> refSourceRuntimeEventHighWater;

  std::optional<std::string> branch;
  std::optional<std::string> origin;  // provider | code_mode
  std::optional<EventStatus> status;

  // Cached canonicalArgsHash(toolName, content.args) of a function_call; empty optional when
  // canonicalArgsHash throws (empty tool name). Computed by the decoder for function_call
  // events (decoded args are always strict JSON).
  std::optional<std::string> callArgsHash;

  // Actions views (a.3).
  std::optional<ToolDispatch> toolDispatch;
  std::optional<ToolRecovery> toolRecovery;
  std::optional<ContinuationStart> continuationStart;

  // Terminal event: terminal status or actions.endInvocation === true (a.1).
  bool isTerminal() const;
  // Model-visible content (a.2): not hidden and non-empty text/thinking/call/response.
  bool isModelVisible() const;

  friend bool operator==(const RuntimeEvent& a, const RuntimeEvent& b) { return a.json == b.json; }
};

// Strict decoder: unknown keys at any declared level, wrong types, non-finite numbers,
// empty required ids, bad enums → Error(code::event_decode_error-family code, message,
// JSON path such as "$.actions.toolDispatch.operationId").
// Codes: unknown_key, missing_field, wrong_type, empty_id, invalid_enum (also a wrong literal
// such as toolRecovery.version 999 or providerProjectionVersion 2), invalid_digest (not
// "sha256:" + 64 lower-case hex), invalid_integer (not a safe integer in range),
// non_finite_number, not_strict_json (invalid UTF-8 / non-JSON node), event_decode_error
// (any other shape rule, e.g. duplicate evidence ids or permissionClosureAccepted with
// other actions). A lane conflict (a.5) is NOT a decode error: the event decodes with
// lane == Lane::conflict and the scanner reports semantic_lane_conflict. As upstream,
// actions.runtimeProtocol.toolBoundary other than t1_after_preflight_v1 IS a decode error
// (invalid_enum), so the resolver only ever sees the valid marker value.
// Normalisation: every number becomes the double JavaScript sees (integral values with
// |v| <= 2^53 are stored as integers, everything else as doubles); text content per a.2
// (displayText == text dropped, empty attachments/quotes dropped, attachment bytes -0 → 0) and
// text origin {kind:'automation'} becomes {kind:'legacy_automation'} (upstream
// decodeTurnOrigin). Strings are WTF-8 (lone surrogates are data, a.6). Any other -0 decodes
// and keeps its sign, so the resolver judges such a ledger, but the event is not lossless:
// writers and prefixDigest refuse it (not_losslessly_serializable).
// Lossless: decodeRuntimeEvent(parseJson(encodeRuntimeEvent(e))) == e.
RuntimeEvent decodeRuntimeEvent(const Json& value);
// Same, consuming the value (no deep copy): prefer decodeRuntimeEvent(parseJson(text)).
RuntimeEvent decodeRuntimeEvent(Json&& value);

// Stable JSON of the canonical event (the persisted payload_json bytes, a.6).
std::string encodeRuntimeEvent(const RuntimeEvent& event);

// Error of decodeRuntimeEventList: the element's Error with its path prefixed "[i]" (e.g.
// "[3]$.id") and the element index (0-based position in the array, or among the non-blank
// lines of JSON lines). index() is empty when the whole document failed to parse.
class EventListError : public Error {
 public:
  EventListError(const Error& inner, std::optional<size_t> index)
      : Error(inner.code(), inner.what(),
              index ? "[" + std::to_string(*index) + "]" + inner.path() : inner.path()),
        index_(index) {}
  std::optional<size_t> index() const noexcept { return index_; }

 private:
  std::optional<size_t> index_;
};

// Decodes a list: a JSON array of events (text starting with '['), or JSON lines (one event
// per non-blank line). Empty or blank text is an empty list. Throws EventListError.
std::vector<RuntimeEvent> decodeRuntimeEventList(std::string_view text);

std::string_view toString(Role);
std::string_view toString(Author);
std::string_view toString(EventStatus);
std::string_view toString(ContentKind);
std::string_view toString(Lane);

}  // namespace crashsim
