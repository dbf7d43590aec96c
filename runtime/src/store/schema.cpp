// schema.cpp — the store's schema (spec f.2): the migrations that build it, the capabilities it
// advertises, and the checks every open runs against them (store_internal.h).
#include <sqlite3.h>

#include <iterator>
#include <map>
#include <string>

#include "crashsim/codes.h"
#include "store/store_internal.h"

namespace crashsim::store_detail {

namespace {

// Schema version 1 (our numbering): the f.2 tables this runtime needs.
constexpr const char* kSchemaV1 = R"SQL(
CREATE TABLE runtime_events (
  event_id TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  event_seq INTEGER NOT NULL CHECK (event_seq > 0),
  event_kind TEXT NOT NULL,
  is_terminal INTEGER NOT NULL CHECK (is_terminal IN (0, 1)),
  payload_json TEXT NOT NULL,
  committed_at REAL NOT NULL,
  UNIQUE (invocation_id, event_seq)
);
CREATE INDEX runtime_events_run_seq ON runtime_events (session_id, run_id, event_seq);
CREATE INDEX runtime_events_session_commit ON runtime_events (session_id, committed_at, event_id);
CREATE TABLE tool_journal_events (
  journal_seq INTEGER PRIMARY KEY AUTOINCREMENT,
  journal_event_id TEXT NOT NULL UNIQUE,
  operation_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('prepared', 'reconcile_observed', 'outcome_committed',
                                       'recovery_completed', 'recovery_parked')),
  runtime_event_id TEXT NOT NULL REFERENCES runtime_events (event_id),
  canonical_args_hash TEXT NOT NULL,
  recovery_mode TEXT NOT NULL,
  external_handle TEXT,
  metadata_json TEXT,
  committed_at REAL NOT NULL
);
CREATE INDEX tool_journal_events_op ON tool_journal_events (operation_id, journal_seq);
CREATE TABLE tool_operations (
  operation_id TEXT PRIMARY KEY NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  provider_tool_call_id TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  canonical_args_hash TEXT NOT NULL,
  recovery_mode TEXT NOT NULL,
  current_state TEXT NOT NULL CHECK (current_state IN ('prepared', 'outcome_committed',
                                                       'recovery_completed', 'recovery_parked')),
  call_event_id TEXT NOT NULL REFERENCES runtime_events (event_id),
  dispatch_event_id TEXT REFERENCES runtime_events (event_id),
  result_event_id TEXT REFERENCES runtime_events (event_id),
  version INTEGER NOT NULL CHECK (version > 0),
  UNIQUE (invocation_id, provider_tool_call_id)
);
CREATE TABLE runtime_partial_snapshots (
  stream_key TEXT PRIMARY KEY NOT NULL,
  session_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  after_event_id TEXT,
  payload_json TEXT NOT NULL,
  text_content TEXT,
  updated_at REAL NOT NULL
);
CREATE INDEX runtime_partial_snapshots_invocation ON runtime_partial_snapshots (invocation_id);
CREATE TABLE runtime_capabilities (
  capability TEXT PRIMARY KEY NOT NULL,
  version INTEGER NOT NULL CHECK (version > 0)
);
CREATE TABLE runtime_continuation_claims (
  claim_id TEXT PRIMARY KEY NOT NULL,
  source_session_id TEXT NOT NULL,
  source_invocation_id TEXT NOT NULL,
  source_run_id TEXT NOT NULL,
  source_turn_id TEXT NOT NULL,
  source_event_high_water INTEGER NOT NULL CHECK (source_event_high_water > 0),
  source_prefix_digest TEXT NOT NULL,
  boundary_digest TEXT NOT NULL UNIQUE,
  boundary_json TEXT NOT NULL,
  provider_projection_version INTEGER NOT NULL CHECK (provider_projection_version = 1),
  provider_replay_digest TEXT NOT NULL,
  target_session_id TEXT NOT NULL,
  target_invocation_id TEXT NOT NULL UNIQUE,
  target_run_id TEXT NOT NULL UNIQUE,
  target_turn_id TEXT NOT NULL,
  target_run_header_json TEXT NOT NULL,
  claimed_at REAL NOT NULL,
  start_event_id TEXT UNIQUE REFERENCES runtime_events (event_id),
  start_kind TEXT CHECK (start_kind IS NULL OR start_kind IN ('runtime_admission', 'claim_repair')),
  protocol_version INTEGER NOT NULL CHECK (protocol_version = 1),
  UNIQUE (source_session_id, source_run_id, source_event_high_water, source_prefix_digest),
  UNIQUE (target_session_id, target_turn_id)
);
CREATE INDEX runtime_continuation_claims_source ON runtime_continuation_claims (source_session_id, source_run_id);
CREATE TABLE agent_runs (
  session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('created', 'running', 'completed', 'failed', 'cancelled')),
  header_json TEXT NOT NULL,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  PRIMARY KEY (session_id, run_id)
);
INSERT INTO runtime_capabilities (capability, version) VALUES
  ('runtime_recovery_authority', 1),
  ('runtime_continuation_authority', 1),
  ('runtime_workspace_version_authority', 1);
)SQL";

// Schema version 2: terminal facts get a partial index, so the run seal checked before every
// write (f.3) is one seek instead of a walk over the run's events. Non-terminal rows have no
// entry: ordinary writes touch no extra page.
constexpr const char* kSchemaV2 = R"SQL(
CREATE INDEX runtime_events_terminal ON runtime_events (session_id, run_id) WHERE is_terminal = 1;
)SQL";

// Schema version 3: the store stops advertising runtime_workspace_version_authority, which
// version 1 wrote but nothing implements (spec f.1 lists it; its tables are outside the
// contract this runtime implements, so claiming it would be a lie to other readers).
constexpr const char* kSchemaV3 = R"SQL(
DELETE FROM runtime_capabilities WHERE capability = 'runtime_workspace_version_authority';
)SQL";

// v4: the termination batch's idempotency keys (termination contract section 6). One row per
// committed terminal batch, written in the batch's own transaction: operation_id
// "turn-finalize:<turnId>", the batch's digest (an exact retry is a no-op, another batch under
// the key is refused) and the terminal RuntimeEvent it ended with. An authority table like the
// claims: not a projection of runtime_events, never rebuilt.
constexpr const char* kSchemaV4 = R"SQL(
CREATE TABLE runtime_turn_finalize (
  operation_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  run_id TEXT NOT NULL,
  turn_id TEXT NOT NULL,
  batch_digest TEXT NOT NULL,
  terminal_event_id TEXT NOT NULL,
  event_count INTEGER NOT NULL,
  committed_at REAL NOT NULL
);
)SQL";

// v5: workspace continuity (workspace-continuity-contract.md b.6): the projections of the
// workspace facts of the store-owned authority stream (session maka_workspace_authority), written
// only by commitWorkspaceFacts and rebuilt from runtime_events alone
// (rebuildWorkspaceProjections), and the capability that says this store has them.
constexpr const char* kSchemaV5 = R"SQL(
CREATE TABLE runtime_workspace_epochs (
  workspace_id TEXT NOT NULL,
  epoch INTEGER NOT NULL CHECK (epoch > 0),
  session_id TEXT NOT NULL,
  instance_identity TEXT NOT NULL,
  canonical_root TEXT NOT NULL,
  instance_origin TEXT NOT NULL CHECK (instance_origin IN ('user', 'restored')),
  opened_reason TEXT NOT NULL CHECK (opened_reason IN ('first_checkpoint', 'isolated_restore',
                                                       'user_rebaseline')),
  read_set_json TEXT NOT NULL,
  opened_event_id TEXT NOT NULL UNIQUE REFERENCES runtime_events (event_id),
  sealed_by_event_id TEXT UNIQUE REFERENCES runtime_events (event_id),
  PRIMARY KEY (workspace_id, epoch),
  UNIQUE (session_id, epoch)
);
CREATE TABLE runtime_workspace_checkpoints (
  checkpoint_id TEXT PRIMARY KEY NOT NULL,
  workspace_id TEXT NOT NULL,
  epoch INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('captured', 'restored', 'rebased')),
  covered_session_id TEXT NOT NULL,
  covered_invocation_id TEXT NOT NULL,
  covered_run_id TEXT NOT NULL,
  covered_event_seq INTEGER NOT NULL CHECK (covered_event_seq > 0),
  covered_prefix_digest TEXT NOT NULL,
  instance_identity TEXT NOT NULL,
  commit_oid TEXT NOT NULL,
  tree_oid TEXT NOT NULL,
  ref_name TEXT NOT NULL UNIQUE,
  policy_version INTEGER NOT NULL,
  policy_hash TEXT NOT NULL,
  derived_from TEXT REFERENCES runtime_workspace_checkpoints (checkpoint_id),
  accepted_event_id TEXT NOT NULL UNIQUE REFERENCES runtime_events (event_id),
  FOREIGN KEY (workspace_id, epoch) REFERENCES runtime_workspace_epochs (workspace_id, epoch)
);
CREATE INDEX runtime_workspace_checkpoints_covered ON runtime_workspace_checkpoints
  (covered_session_id, covered_run_id, covered_event_seq);
CREATE TABLE runtime_workspace_transitions (
  workspace_id TEXT NOT NULL,
  from_epoch INTEGER NOT NULL,
  to_epoch INTEGER NOT NULL CHECK (to_epoch = from_epoch + 1),
  reason TEXT NOT NULL CHECK (reason IN ('isolated_restore', 'user_rebaseline')),
  from_instance TEXT NOT NULL,
  to_instance TEXT NOT NULL,
  source_checkpoint_id TEXT,
  event_id TEXT NOT NULL UNIQUE REFERENCES runtime_events (event_id),
  PRIMARY KEY (workspace_id, from_epoch)
);
INSERT INTO runtime_capabilities (capability, version) VALUES
  ('runtime_workspace_continuity_authority', 1);
)SQL";

// migrations[i] brings the schema from version i to i+1. A migration, once shipped, is never
// edited: a change is a new one.
constexpr const char* kMigrations[] = {kSchemaV1, kSchemaV2, kSchemaV3, kSchemaV4, kSchemaV5};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

constexpr const char* kCapabilities[] = {"runtime_recovery_authority",
                                         "runtime_continuation_authority",
                                         "runtime_workspace_continuity_authority"};

}  // namespace

int64_t readUserVersion(Connection& c) {
  auto st = c.prepare("PRAGMA user_version");
  if (!st.step()) throw Error(code::store_corrupt, "PRAGMA user_version returned no row");
  return st.int64(0);
}

[[noreturn]] void throwNewer(int64_t v) {
  throw Error(code::schema_newer_than_supported, "SQLite runtime schema " + std::to_string(v) +
                                                     " is newer than supported version " +
                                                     std::to_string(kSchemaVersion));
}

void checkCapabilities(Connection& c) {
  for (const char* cap : kCapabilities) {
    auto st = c.prepare("SELECT version FROM runtime_capabilities WHERE capability = ?1");
    st.bind(1, std::string_view(cap));
    if (!st.step() || st.int64(0) != 1) {
      throw Error(code::capability_unavailable,
                  std::string("SQLite runtime recovery capability ") + cap + "@1 is unavailable");
    }
  }
}

void migrate(Connection& c) {
  int64_t v = readUserVersion(c);
  if (v > kSchemaVersion) throwNewer(v);
  if (v == kSchemaVersion) return;
  ImmediateTx tx(c);
  v = readUserVersion(c);  // re-check under the write lock (another process may have migrated)
  if (v > kSchemaVersion) throwNewer(v);
  while (v < kSchemaVersion) {
    if (v < 0 || v >= static_cast<int64_t>(std::size(kMigrations))) {
      throw Error(code::store_open_failed,
                  "Missing SQLite runtime migration " + std::to_string(v + 1));
    }
    c.execScript(kMigrations[v]);
    ++v;
    c.execScript("PRAGMA user_version = " + std::to_string(v));
  }
  tx.commit();
}

namespace {

// sqlite_master as (type name -> sql) pairs: the schema a store holds.
std::map<std::string, std::string> schemaOf(Connection& c) {
  std::map<std::string, std::string> out;
  auto st = c.prepare("SELECT type || ' ' || name, coalesce(sql, '') FROM sqlite_master");
  while (st.step()) out[st.text(0)] = st.text(1);
  return out;
}

// The first difference between the store's schema and the one the migrations build (a flipped
// bit in sqlite_master can rename a column or drop a constraint); empty when they agree. The
// expected schema is built once per process, in memory, by the same migrations.
std::string schemaDifference(Connection& c) {
  static const std::map<std::string, std::string> expected = [] {
    sqlite3* mem = nullptr;
    if (sqlite3_open(":memory:", &mem) != SQLITE_OK) {
      sqlite3_close(mem);
      throw Error(code::store_open_failed, "cannot open an in-memory database");
    }
    std::map<std::string, std::string> schema;
    {
      Connection m(mem);
      migrate(m);
      schema = schemaOf(m);
    }
    sqlite3_close(mem);
    return schema;
  }();
  const auto actual = schemaOf(c);
  for (const auto& [name, sql] : expected) {
    auto it = actual.find(name);
    if (it == actual.end()) return name + " is missing";
    if (it->second != sql) return name + " differs from the schema's definition";
  }
  for (const auto& [name, sql] : actual)
    if (!expected.count(name)) return name + " is not part of the schema";
  return {};
}

}  // namespace

void requireSchema(Connection& c, const std::filesystem::path& file) {
  if (std::string diff = schemaDifference(c); !diff.empty())
    throw Error(code::store_schema_damaged,
                "the schema of " + file.string() + " is damaged: " + diff);
}

}  // namespace crashsim::store_detail
