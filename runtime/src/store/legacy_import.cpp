// legacy_import.cpp — the one-way import of a legacy RuntimeEvent JSONL into the SQLite store
// and the explicit export back (crashsim/store.h, kLegacyJsonlName; seed Phase 2).
//
// The whole file is read and decoded before the database is created or touched, so a line that
// does not decode fails closed with its line number and nothing written. The events then go
// through the generic writer's checks (store_internal.h insertEvent), in batches of
// StoreOptions::legacyImportBatchEvents per transaction. A batch that commits is durable; a
// crash inside a batch ([P16]) rolls it back and one between batches ([P17]) leaves the earlier
// ones. Either way the directory has no manifest yet, so the next writable open imports again:
// every event already stored is an exact retry (byte-equal, a no-op), so nothing is imported
// twice. The JSONL is never deleted or rewritten.
#include <fstream>
#include <set>

#include "crashsim/codes.h"
#include "crashsim/failpoints.h"
#include "crashsim/plant.h"
#include "crashsim/store.h"
#include "crashsim/terminal_facts.h"
#include "crashsim/workspace_facts.h"
#include "store/store_internal.h"

namespace crashsim {
namespace fs = std::filesystem;

namespace store_detail {
namespace {

constexpr uintmax_t kMaxLegacyJsonlBytes = uintmax_t{256} << 20;

// The reserved lanes a JSONL host could not have written (seed: a host without a
// RuntimeCommitSink never declares the T1 protocol), as the generic writer names them (a.5).
const char* unsupportedFact(const RuntimeEvent& e) {
  if (e.runtimeProtocol) return "the T1 protocol marker";
  if (e.toolDispatch) return "a tool-dispatch fact (T1)";
  if (e.contentKind == ContentKind::function_response && e.refOperationId)
    return "a bound function_response (T2)";
  if (e.toolRecovery) return "a tool recovery fact";
  if (e.hasContinuationStart) return "a continuation-start fact";
  if (e.hasWorkspaceFact) return "a workspace fact";
  return nullptr;
}

// The run's header, created with the run's first imported event (status running).
void ensureRunHeader(Connection& c, const RuntimeEvent& e) {
  if (readRunHeader(c, e.sessionId, e.runId)) return;
  RunHeader h;
  h.sessionId = e.sessionId;
  h.runId = e.runId;
  h.invocationId = e.invocationId;
  h.turnId = e.turnId;
  h.status = "running";
  h.createdAt = h.updatedAt = e.ts;
  insertRunHeader(c, h);
}

// A valid terminal fact makes its header terminal in the same transaction (the fact first, g);
// an invalid one leaves the header running for startup repair to judge.
void settleRunHeader(Connection& c, const RuntimeEvent& terminal) {
  const auto h = readRunHeader(c, terminal.sessionId, terminal.runId);
  if (!h || !terminalFactStatus(terminal, *h)) return;
  const RunHeader t = terminalHeader(*h, terminal);
  writeHeader(c, t, stableJson(t.toJson()));
}

std::string where(const fs::path& file, size_t line) {
  return file.filename().string() + ":" + std::to_string(line) + ": ";
}

}  // namespace

std::vector<LegacyLine> readLegacyJsonl(const fs::path& file) {
  std::error_code ec;
  const auto status = fs::symlink_status(file, ec);
  if (ec || status.type() != fs::file_type::regular) {
    throw Error(code::legacy_jsonl_invalid, file.string() + " is not a regular file");
  }
  if (fs::file_size(file, ec) > kMaxLegacyJsonlBytes || ec) {
    throw Error(code::legacy_jsonl_invalid,
                file.string() + " is larger than 256 MiB (or its size cannot be read)");
  }
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(code::legacy_jsonl_invalid, "cannot read " + file.string());
  std::vector<LegacyLine> out;
  size_t line = 0;
  for (size_t at = 0; at < text.size();) {
    ++line;
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view body(text.data() + at, end - at);
    at = end + 1;
    RuntimeEvent e;
    try {
      e = decodeRuntimeEvent(parseJson(body));
    } catch (const Error& err) {
      throw Error(code::legacy_jsonl_invalid, where(file, line) + std::string(err.code()) +
                                                  (err.path().empty() ? "" : " at " + err.path()) +
                                                  ": " + err.what());
    }
    if (const char* fact = unsupportedFact(e)) {
      throw Error(code::legacy_jsonl_unsupported_fact,
                  where(file, line) + "event " + e.id + " carries " + fact +
                      ", which a legacy JSONL ledger cannot hold");
    }
    // Partial events are mutable UI state, never facts (j.5): not imported.
    if (e.partial) continue;
    out.push_back(LegacyLine{line, std::move(e)});
  }
  return out;
}

void importLegacyEvents(Connection& c, const fs::path& file, const std::vector<LegacyLine>& lines,
                        size_t batchEvents) {
  if (batchEvents == 0) batchEvents = 1;
  // planted bug: a re-run import skips every run that already has a header, as if runs were
  // imported whole (a run cut by a crash stays half imported) → V3/V8 of the sweep's P16/P17 cases
  std::set<std::pair<std::string, std::string>> started;
  if (planted("legacy_import_skips_started_runs"))
    for (const auto& [line, e] : lines)
      if (readRunHeader(c, e.sessionId, e.runId)) started.insert({e.sessionId, e.runId});
  for (size_t i = 0; i < lines.size();) {
    ImmediateTx tx(c);
    for (const size_t end = std::min(lines.size(), i + batchEvents); i < end; ++i) {
      const auto& [line, e] = lines[i];
      if (started.count({e.sessionId, e.runId})) continue;
      try {
        ensureRunHeader(c, e);
        // committed_at is the event's own ts: the legacy ledger's only clock, so a re-import
        // and an export → import round trip store the same rows (ledgerHash).
        if (insertEvent(tx, e, Writer::generic, e.ts).created && e.isTerminal())
          settleRunHeader(c, e);
      } catch (const Error& err) {
        throw Error(err.code(), where(file, line) + err.what(), err.path());
      }
    }
    CRASHSIM_FAILPOINT(P16);  // inside the batch: it rolls back, the earlier batches stay
    tx.commit();
    CRASHSIM_FAILPOINT(P17);  // batch committed, the next (or the manifest) not written
  }
}

}  // namespace store_detail

bool legacyImportPending(const fs::path& storeDir) {
  std::error_code ec;
  return fs::symlink_status(storeDir / kLegacyJsonlName, ec).type() != fs::file_type::not_found &&
         !readStoreManifest(storeDir);
}

void exportLegacyJsonl(const RuntimeStore& store, std::ostream& out) {
  // Decoded and checked rows (never trusted bytes), re-encoded: the canonical event (a.6), so
  // each line imports byte-equal. The workspace authority stream is not exported
  // (workspace-continuity-contract.md b.7): its facts are the workspace writer's alone.
  for (const StoredEvent& s : store.readAllEvents())
    if (s.event.sessionId != kWorkspaceAuthoritySession) out << encodeRuntimeEvent(s.event) << '\n';
  out.flush();
  if (!out) throw Error(code::output_unwritable, "cannot write the exported JSONL");
}

}  // namespace crashsim
