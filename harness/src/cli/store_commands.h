// Internal: `crashsim inspect` and `crashsim resume` (used by cli.cpp).
//
// Both read a store the way a host does. One error convention (shared with `crashsim-agent
// recover`): every failure is a stable code — a damaged store gives the same code and exit 2 in
// all three; the human line on stderr is "crashsim <command>: <code>: <message>", and with
// --json stdout holds {"error":{"code","message"}}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace crashsim::harness {

// Read-only: never writes a byte of the store directory (StoreOptions::readOnly). Prints the
// integrity check, the startup-repair dry run, and per run the header, the resolver's decisions,
// the Phase 0 plan and the lineage the contract traverses (spec e.4). Exit 0 when every run's
// Phase 0 plan is safe_replay, 1 when one is blocked, 2 on any error.
int inspectStore(const std::string& storeDir, bool json);
// `crashsim gc STORE --dry-run` (workspace-continuity-contract.md h.5): the carrier GC's dry run
// on a read-only open of the store — the orphan refs and quarantine entries it would delete
// (`would_delete`), nothing written; the host collects with `crashsim-agent gc`. Exit 0, or 2
// with the stable code of any error.
int gcDryRun(const std::string& storeDir, int64_t graceMs, bool json);

struct ResumeArgs {
  std::string storeDir;
  std::optional<std::string> workspaceDir, scenarioFile;
  bool dryRun = false, json = false;
  // Workspace continuity g.1 item 1: the confirmed boundaryManifestDigest of the session's
  // parked plan (--rebaseline) and the session (--session; default the scenario's or the only
  // planned one).
  std::optional<std::string> rebaseline, rebaselineSession;
};
// Host start-up (crashsim/host.h hostStartup) on the store: per run the repair action, the
// reconcile observation and decision, one reason per operation; per session the plan; then the
// continuation, or the one thing missing to run it. Exit 0 continued or nothing to do, 1
// parked/blocked (reasons printed), 2 usage, environment or damaged store.
int resumeStore(const ResumeArgs& args);

// `crashsim ledger export STORE`: the store's RuntimeEvents as legacy JSONL on stdout
// (crashsim/store.h exportLegacyJsonl), after the same self-checks as inspect. Read-only.
// Exit 0, or 2 with the error line.
int exportStore(const std::string& storeDir);

// `crashsim store salvage-wal STORE --out NEWDIR`: a store whose database file is empty while
// its -wal holds committed frames, rebuilt from the WAL into the new directory NEWDIR
// (crashsim/store.h salvageWalIntoNewStore); STORE is only read. Exit 0 with one line naming
// the new store, or 2 with the error line.
int salvageStore(const std::string& storeDir, const std::string& newDir);

}  // namespace crashsim::harness
