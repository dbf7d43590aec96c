// The failpoint catalogues P0–P11, P12–P13, P14–P15, P16–P17 and P18–P26 (DESIGN.md "Failpoints",
// spec b; workspace-continuity-contract.md i.1):
// stable data, one place.
//
// This file is linked by production code (the `crashsim` CLI prints it); it contains no
// trigger code. Everything that reads the environment or blocks lives in trigger.cpp.
#include <charconv>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "crashsim/failpoints.h"

namespace crashsim::failpoints {
namespace {

constexpr std::array<CatalogueEntry, kCount> kCatalogue{{
    {Id::P0, "P0", "tool call decided by the model, function_call not committed",
     "before tool preparation (T1)", "before_function_call", "no call",
     "no operation; plan safe_replay", false},
    {Id::P1, "P1", "function_call committed, T1 not committed",
     "function_call committed before prepared journal", "after_function_call",
     "call only (marker present)",
     "definitely_not_dispatched / new_protocol_before_dispatch; plan blocked", false},
    {Id::P2, "P2", "T1 committed, implementation not started",
     "prepared journal committed before implementation", "after_function_call", "call + dispatch",
     "indeterminate / dispatch_without_response", false},
    {Id::P3, "P3",
     "implementation in progress (partial side effect, e.g. temp file written, not renamed)",
     "tool implementation in progress", "after_function_call", "call + dispatch",
     "indeterminate; file reconcile -> matches_prior_state -> parked", false},
    {Id::P4, "P4", "side effect finished, T2 not committed",
     "side effect completed before outcome transaction (T2)", "after_function_call",
     "call + dispatch",
     "indeterminate; file reconcile -> matches_expected_state -> completed bundle", false},
    {Id::P5, "P5", "inside T2: response written, not committed",
     "function_response committed before outcome journal", "after_function_response",
     "as P4 (T2 rolled back)", "indeterminate", false},
    {Id::P6, "P6", "T2 committed, result not delivered to the model",
     "outcome transaction committed before model result delivery", "after_function_response",
     "call + dispatch + response", "completed / matching_response (normal_t2)", false},
    {Id::P7, "P7", "result delivered, next provider step not started",
     "tool result delivered before the next provider step", "after_function_response", "as P6",
     "completed", false},
    {Id::P8, "P8", "inside the terminal RuntimeEvent commit",
     "terminal RuntimeEvent commit (reasoned about as the pre-append prefix)",
     "after_function_response", "no terminal event",
     "completed; repair appends a recovered terminal", false},
    {Id::P9, "P9", "terminal RuntimeEvent committed, run header not terminal",
     "terminal run header commit", "after_terminal_event", "terminal event, header stale",
     "repair fixes the header from the fact", false},
    {Id::P10, "P10", "inside the recovery-bundle commit (recovery process)",
     "recovery decision commit", "after_terminal_event", "no bundle (rolled back)",
     "indeterminate again; the next recovery commits the bundle once", true},
    {Id::P11, "P11",
     "continuation claim committed, continuation-start not committed (recovery process)",
     "continuation run creation", "after_terminal_event", "claim without start",
     "claim repair: deterministic repair start + abandoned terminal; a later continuation "
     "resumes from it",
     true},
}};

// The Stop path (termination contract sections 3-4). Prefix class: the Stop batch follows
// whatever the run committed before the Stop was accepted.
constexpr std::array<CatalogueEntry, kStopCount> kStopCatalogue{{
    {Id::P12, "P12", "inside the termination batch's transaction, before COMMIT (after a Stop)",
     "atomic acceptance of the turn-finalize:<turnId> batch", "after_function_response",
     "no closure and no terminal event (the whole batch rolled back); the run is open",
     "as before the Stop; restart recovery writes the only terminal", false},
    {Id::P13, "P13", "termination batch committed, run header not terminal (after a Stop)",
     "terminal run header after the termination batch", "after_terminal_event",
     "closures + cancelled terminal (abortSource user_stop), header running",
     "settled by the closures; repair fixes the header from the fact", false},
}};

// The continuation admission (spec e.9 steps 8-9, g's claim saga): after the claim (P11), the
// target run header, then the durable runtime_admission start, then the first provider call.
constexpr std::array<CatalogueEntry, kAdmissionCount> kAdmissionCatalogue{{
    {Id::P14, "P14",
     "continuation target run created, continuation-start not committed (recovery process)",
     "continuation target run created before the continuation start", "after_terminal_event",
     "claim + target run header (created), no start, no target events",
     "claim repair: deterministic repair start + abandoned terminal from the existing header; a "
     "later continuation resumes from it",
     true},
    {Id::P15, "P15",
     "continuation-start (runtime_admission) committed, provider not called (recovery process)",
     "continuation start committed before provider admission", "after_terminal_event",
     "claim + target run + its runtime_admission start, no terminal",
     "claim saga leaves the live start alone; run recovery seals the target like any crashed run "
     "(the host's store lock excludes a live provider call elsewhere); a later continuation "
     "resumes from it",
     true},
}};

// The legacy JSONL import (crashsim/store.h kLegacyJsonlName, seed Phase 2): batches of the
// generic writer, then the manifest that ends the import.
constexpr std::array<CatalogueEntry, kImportCount> kImportCatalogue{{
    {Id::P16, "P16", "inside a legacy JSONL import batch, before its COMMIT",
     "batch import of legacy RuntimeEvent JSONL (one batch)", "before_function_call",
     "the earlier batches only (this one rolled back), no manifest; the JSONL unchanged",
     "the next writable open imports again: stored events are exact retries, the rest is "
     "imported once",
     false},
    {Id::P17, "P17",
     "legacy JSONL import batch committed, next batch (or the manifest) not written",
     "between legacy import batches", "before_function_call",
     "every batch up to this one, no manifest; the JSONL unchanged",
     "the next writable open imports the rest once; every imported event is stored exactly once",
     false},
}};

// A workspace checkpoint capture (workspace-continuity-contract.md d.2, i.1, table W): the
// artifact (blobs, tree, commit, ref) before the fact that names it. Reached in the run process
// at each capture (baseline, after an effectful T2, after a closing termination batch); a
// rebaseline's capture in the recovery process reaches P18–P20 only.
constexpr std::array<CatalogueEntry, kWorkspaceCount> kWorkspaceCatalogue{{
    {Id::P18, "P18",
     "checkpoint capture: private index updated, blobs in the carrier; write-tree not run",
     "capture: private index updated, blobs in the carrier", "after_function_response",
     "unreferenced blobs in the carrier, the private index; no ref, no fact",
     "not covered by this capture (W1): required parks no_checkpoint, optional_legacy continues "
     "with diagnostic no_checkpoint; blobs pruned by GC",
     false},
    {Id::P19, "P19", "checkpoint capture: tree and commit written; ref not created",
     "capture: tree and commit written", "after_function_response",
     "+ unreferenced tree and commit; no ref, no fact", "as P18 (W2-W3)", false},
    {Id::P20, "P20",
     "checkpoint capture: ref created, read back and light-verified; accept transaction not begun",
     "capture: ref created and verified", "after_function_response",
     "+ an orphan ref (verified); no fact",
     "as P18; the planner ignores refs without a fact; GC collects the orphan after its grace "
     "(W4)",
     false},
    {Id::P21, "P21",
     "checkpoint capture: inside the accept transaction (commitWorkspaceFacts open/append), before "
     "COMMIT",
     "capture: accept transaction", "after_function_response",
     "as P20 (the accept transaction rolled back)", "as P20 (W5)", false},
    {Id::P22, "P22", "checkpoint capture: accepted; post-verify not run; result not delivered",
     "capture: accepted", "after_function_response", "checkpoint fact + its artifact",
     "covered: light-verify, drift check, match -> continue in place; an exact retry is "
     "created:false (W6)",
     false},
    // Isolated restore (contract f.2, table R): reached by the recovery process when the plan
    // parks exactly [workspace_drifted] under driftAction isolated_restore.
    {Id::P23, "P23",
     "isolated restore: worktree added detached and locked, verified (registration, lock reason, "
     "tree) and durable; no marker",
     "restore: worktree added, locked, verified; no marker", "after_terminal_event",
     "an owned instance + its locked registration in the carrier; no marker, no ref, no fact",
     "residue quarantined at start-up (f.3); drift again -> restore again (R2)", true},
    {Id::P24, "P24",
     "isolated restore: marker I' written in the instance, restored ref created and "
     "light-verified; transition not begun",
     "restore: marker written, restored ref created", "after_terminal_event",
     "+ the marker I' and the restored ref R; no fact",
     "quarantined as P23; ref R reused exactly by the next restore (R3)", true},
    {Id::P25, "P25",
     "isolated restore: inside the transition transaction (commitWorkspaceFacts transition), "
     "before COMMIT",
     "restore: transition transaction", "after_terminal_event",
     "as P24 (the transition rolled back)", "as P24 (R4)", true},
    {Id::P26, "P26", "isolated restore: transition committed; post-verify and re-plan not run",
     "restore: transition committed; no claim", "after_terminal_event",
     "transition + epoch E+1 (origin restored) + the restored checkpoint R",
     "start-up observes the restored instance (registration, lock, marker = toInstance), plans "
     "in it and continues there; the user's directory untouched (R5)",
     true},
}};

// Workspace continuity g.2 / i.1: a durable rebaseline (its capture reaches P18–P20 first).
constexpr std::array<CatalogueEntry, kRebaselineCount> kRebaselineCatalogue{{
    {Id::P27, "P27",
     "rebaseline: inside the transition transaction (commitWorkspaceFacts transition/open with a "
     "rebased checkpoint), before COMMIT",
     "rebaseline: inside the transition transaction", "after_function_response",
     "objects + an orphan ref; epoch E still current (rolled back)",
     "parks as before; confirm again (B4)", true},
    {Id::P28, "P28", "rebaseline: transition committed; no claim",
     "rebaseline: transition committed", "after_function_response",
     "epoch E+1 opened by user_rebaseline with its rebased checkpoint",
     "continue bound to E+1; the notice before the first provider step; gates active (B5)", true},
    {Id::P29, "P29",
     "rebaseline: the replay notice committed as the continuation's event #2; provider not called",
     "rebaseline: notice committed", "after_function_response",
     "claim + continuation-start + notice, no terminal",
     "run recovery seals the target; the notice is not repeated; gates hold (B6)", true},
}};

// Workspace continuity h.5 / i.1: the carrier GC (a maintenance step of the host, never beside a
// capture or restore).
constexpr std::array<CatalogueEntry, kGcCount> kGcCatalogue{{
    {Id::P30, "P30",
     "GC: the first orphan ref deleted (update-ref -d CAS); the other orphan refs, the prune and "
     "the quarantine sweep not done",
     "GC: first orphan ref deleted; the rest and prune not done", "after_terminal_event",
     "some orphan refs deleted; no fact written",
     "unchanged (every accepted fact's ref and commit kept); the next GC finishes", true},
}};

PowerlossCrashHook gPowerlossHook = nullptr;

}  // namespace

const std::array<CatalogueEntry, kCount>& catalogue() { return kCatalogue; }
const std::array<CatalogueEntry, kStopCount>& stopCatalogue() { return kStopCatalogue; }
const std::array<CatalogueEntry, kAdmissionCount>& admissionCatalogue() {
  return kAdmissionCatalogue;
}
const std::array<CatalogueEntry, kImportCount>& importCatalogue() { return kImportCatalogue; }
const std::array<CatalogueEntry, kWorkspaceCount>& workspaceCatalogue() {
  return kWorkspaceCatalogue;
}
const std::array<CatalogueEntry, kRebaselineCount>& rebaselineCatalogue() {
  return kRebaselineCatalogue;
}
const std::array<CatalogueEntry, kGcCount>& gcCatalogue() { return kGcCatalogue; }

std::optional<Id> parseId(std::string_view text) {
  if (text.size() < 2 || text.size() > 3 || text[0] != 'P') return std::nullopt;
  unsigned value = 0;
  const char* first = text.data() + 1;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  if (text.size() == 3 && text[1] == '0') return std::nullopt;  // "P01" is not an id
  if (value < kCount) return static_cast<Id>(value);
  if (value < kCount + kStopCount) return kStopCatalogue[value - kCount].id;
  if (value < kCount + kStopCount + kAdmissionCount)
    return kAdmissionCatalogue[value - kCount - kStopCount].id;
  if (value < kCount + kStopCount + kAdmissionCount + kImportCount)
    return kImportCatalogue[value - kCount - kStopCount - kAdmissionCount].id;
  if (value < kCount + kStopCount + kAdmissionCount + kImportCount + kWorkspaceCount)
    return kWorkspaceCatalogue[value - kCount - kStopCount - kAdmissionCount - kImportCount].id;
  for (const auto& e : kRebaselineCatalogue)  // P27–P29, after the workspace group
    if (e.name == text) return e.id;
  for (const auto& e : kGcCatalogue)  // P30, the carrier GC
    if (e.name == text) return e.id;
  return std::nullopt;
}

std::optional<Id> parsePoint(std::string_view text) {
  if (text == "S") return Id::S;
  if (text == "F") return Id::F;
  if (text == "G") return Id::G;
  return parseId(text);
}

std::string_view name(Id id) {
  if (id == Id::S) return "S";
  if (id == Id::F) return "F";
  if (id == Id::G) return "G";
  return entry(id).name;
}

const CatalogueEntry& entry(Id id) {
  for (const auto& e : kStopCatalogue)
    if (e.id == id) return e;
  for (const auto& e : kAdmissionCatalogue)
    if (e.id == id) return e;
  for (const auto& e : kImportCatalogue)
    if (e.id == id) return e;
  for (const auto& e : kWorkspaceCatalogue)
    if (e.id == id) return e;
  for (const auto& e : kRebaselineCatalogue)
    if (e.id == id) return e;
  for (const auto& e : kGcCatalogue)
    if (e.id == id) return e;
  return kCatalogue.at(static_cast<size_t>(id));
}

std::string catalogueJson(int indent) {
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const CatalogueEntry& e, bool stopPath) {
    rows.push_back({{"id", e.name},
                    {"boundary", e.boundary},
                    {"specBoundary", e.specBoundary},
                    {"prefixClass", e.prefixClass},
                    {"durableState", e.durableState},
                    {"resolverDecision", e.resolverDecision},
                    {"recoveryProcess", e.recoveryProcess},
                    {"stopPath", stopPath}});
  };
  for (const auto& e : kCatalogue) add(e, false);
  for (const auto& e : kStopCatalogue) add(e, true);
  for (const auto& e : kAdmissionCatalogue) add(e, false);
  for (const auto& e : kImportCatalogue) add(e, false);
  for (const auto& e : kWorkspaceCatalogue) add(e, false);
  for (const auto& e : kRebaselineCatalogue) add(e, false);
  for (const auto& e : kGcCatalogue) add(e, false);
  return rows.dump(indent);
}

std::string catalogueText() {
  std::ostringstream out;
  auto add = [&](const CatalogueEntry& e, bool stopPath) {
    out << e.name << (e.recoveryProcess ? "  [recovery process]" : "")
        << (stopPath ? "  [after a Stop]" : "") << "\n"
        << "  boundary:      " << e.boundary << "\n"
        << "  spec boundary: " << e.specBoundary << "\n"
        << "  prefix class:  " << e.prefixClass << "\n"
        << "  durable state: " << e.durableState << "\n"
        << "  resolver:      " << e.resolverDecision << "\n";
  };
  for (const auto& e : kCatalogue) add(e, false);
  for (const auto& e : kStopCatalogue) add(e, true);
  for (const auto& e : kAdmissionCatalogue) add(e, false);
  for (const auto& e : kImportCatalogue) add(e, false);
  for (const auto& e : kWorkspaceCatalogue) add(e, false);
  for (const auto& e : kRebaselineCatalogue) add(e, false);
  for (const auto& e : kGcCatalogue) add(e, false);
  return out.str();
}

Arming parseArming(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw std::invalid_argument("failpoint arming '" + std::string(text) +
                                "' is malformed: expected <id>:<hit>, e.g. P4:1");
  }
  const auto idText = text.substr(0, colon);
  const auto hitText = text.substr(colon + 1);
  const auto id = parsePoint(idText);
  if (!id) {
    throw std::invalid_argument("failpoint arming '" + std::string(text) + "': unknown id '" +
                                std::string(idText) + "' (expected P0..P30, S, F or G)");
  }
  uint64_t hit = 0;
  auto [ptr, ec] = std::from_chars(hitText.data(), hitText.data() + hitText.size(), hit);
  if (hitText.empty() || ec != std::errc() || ptr != hitText.data() + hitText.size() || hit == 0) {
    throw std::invalid_argument("failpoint arming '" + std::string(text) + "': hit '" +
                                std::string(hitText) + "' must be a positive integer");
  }
  return Arming{*id, hit};
}

void setPowerlossCrashHook(PowerlossCrashHook hook) { gPowerlossHook = hook; }
PowerlossCrashHook powerlossCrashHook() { return gPowerlossHook; }

}  // namespace crashsim::failpoints
