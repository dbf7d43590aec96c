// Store open (spec f.1): pragmas, migrations, newer schema fails closed, read-only open,
// capabilities, run headers (g: terminal fact before header).
#include "store_test_util.h"

using namespace crashsim;
using namespace crashsim::testutil;

namespace {

TEST(StoreOpenTest, CreatesDirectoryAndSetsPragmas) {
  TempDir dir;
  auto nested = dir.path / "a" / "b";
  auto s = RuntimeStore::open(nested);
  EXPECT_TRUE(fs::exists(nested / "runtime.sqlite"));
  EXPECT_EQ(s->path(), nested / "runtime.sqlite");
  EXPECT_EQ(pragma(s->handle(), "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma(s->handle(), "PRAGMA synchronous"), "2");  // FULL
  EXPECT_EQ(pragma(s->handle(), "PRAGMA foreign_keys"), "1");
  EXPECT_EQ(pragma(s->handle(), "PRAGMA busy_timeout"), "5000");
  EXPECT_EQ(pragma(s->handle(), "PRAGMA page_size"), "1024");
  EXPECT_EQ(pragma(s->handle(), "PRAGMA wal_autocheckpoint"), "16384");
  EXPECT_EQ(pragma(s->handle(), "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(s->integrityCheck(), "ok");
  for (const char* cap : {"runtime_recovery_authority", "runtime_continuation_authority"}) {
    EXPECT_EQ(pragma(s->handle(), std::string("SELECT version FROM runtime_capabilities WHERE "
                                              "capability = '") +
                                      cap + "'"),
              "1");
  }
  // Nothing here implements the workspace version authority, so the store never claims it.
  EXPECT_EQ(pragma(s->handle(),
                   "SELECT count(*) FROM runtime_capabilities WHERE capability = "
                   "'runtime_workspace_version_authority'"),
            "0");
}

TEST(StoreOpenTest, SynchronousOptionIsApplied) {
  TempDir dir;
  StoreOptions o;
  o.synchronous = "NORMAL";
  auto s = RuntimeStore::open(dir.path, o);
  EXPECT_EQ(pragma(s->handle(), "PRAGMA synchronous"), "1");
}

TEST(StoreOpenTest, ReopenIsIdempotent) {
  TempDir dir;
  { RuntimeStore::open(dir.path)->append(userEvent(Ident{})); }
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(s->readAllEvents().size(), 1u);
}

TEST(StoreOpenTest, NewerSchemaFailsClosedWithoutModifyingTheFile) {
  TempDir dir;
  // A rollback-journal database from the future: opening must not even switch it to WAL.
  rawSql(dir.db(), "CREATE TABLE future (x); PRAGMA user_version = 99;");
  const std::string bytes = readBytes(dir.db());
  std::string m =
      expectCode([&] { RuntimeStore::open(dir.path); }, code::schema_newer_than_supported);
  EXPECT_EQ(m, "SQLite runtime schema 99 is newer than supported version " +
                   std::to_string(kSchemaVersion));
  StoreOptions ro;
  ro.readOnly = true;
  expectCode([&] { RuntimeStore::open(dir.path, ro); }, code::schema_newer_than_supported);
  EXPECT_EQ(readBytes(dir.db()), bytes);
  EXPECT_FALSE(fs::exists(dir.path / "runtime.sqlite-wal"));
}

TEST(StoreOpenTest, ReadOnlyOpenIsQueryOnlyAndNeverMigrates) {
  TempDir dir;
  rawSql(dir.db(), "PRAGMA user_version = 0;");
  StoreOptions ro;
  ro.readOnly = true;
  std::string m =
      expectCode([&] { RuntimeStore::open(dir.path, ro); }, code::schema_version_mismatch);
  EXPECT_NE(m.find("cannot be read without upgrading"), std::string::npos);
  { RuntimeStore::open(dir.path)->append(userEvent(Ident{})); }
  auto s = RuntimeStore::open(dir.path, ro);
  EXPECT_EQ(pragma(s->handle(), "PRAGMA query_only"), "1");
  EXPECT_EQ(s->readAllEvents().size(), 1u);
  expectCode([&] { s->append(textEvent(Ident{}, "t", 1)); }, code::sqlite_error);
  TempDir missing;
  expectCode([&] { RuntimeStore::open(missing.path / "none", ro); }, code::store_open_failed);
}

TEST(StoreOpenTest, VersionOneStoreMigratesToTheTerminalIndexAndKeepsItsLedger) {
  TempDir dir;
  Ident id;
  std::string ledger;
  {
    auto s = RuntimeStore::open(dir.path);
    Call c;
    c.id = id;
    s->append(userEvent(id));
    s->commitToolPrepared(t1(c));
    s->commitToolOutcome(t2(c));
    s->commitTerminalEvent(terminalEvent(id, "end-1", 1500));
    ledger = s->ledgerHash();
  }
  // What a version-1 store looks like: no partial index over terminal facts, no termination
  // keys, no workspace continuity tables (schema 5), and the workspace version authority
  // advertised.
  rawSql(dir.db(),
         "DROP TABLE runtime_workspace_transitions; DROP TABLE runtime_workspace_checkpoints; "
         "DROP TABLE runtime_workspace_epochs; DELETE FROM runtime_capabilities WHERE capability = "
         "'runtime_workspace_continuity_authority'; "
         "DROP INDEX runtime_events_terminal; DROP TABLE runtime_turn_finalize; INSERT INTO "
         "runtime_capabilities (capability, version) VALUES "
         "('runtime_workspace_version_authority', 1); PRAGMA user_version = 1;");
  writeStoreManifest(dir.path, 1);  // as a version-1 store records itself
  auto s = RuntimeStore::open(dir.path);
  EXPECT_EQ(readStoreManifest(dir.path), kSchemaVersion);  // the migration is recorded
  EXPECT_EQ(pragma(s->handle(), "PRAGMA user_version"), std::to_string(kSchemaVersion));
  EXPECT_EQ(pragma(s->handle(),
                   "SELECT count(*) FROM runtime_capabilities WHERE capability = "
                   "'runtime_workspace_version_authority'"),
            "0");
  EXPECT_EQ(pragma(s->handle(),
                   "SELECT count(*) FROM sqlite_master WHERE name = "
                   "'runtime_events_terminal'"),
            "1");
  EXPECT_EQ(pragma(s->handle(),
                   "SELECT count(*) FROM runtime_capabilities WHERE capability = "
                   "'runtime_workspace_continuity_authority'"),
            "1");
  EXPECT_EQ(s->ledgerHash(), ledger);
  EXPECT_EQ(s->listToolOperations().size(), 1u);
  // The seal reads the migrated index.
  expectCode([&] { s->append(textEvent(id, "late-1", 1600)); }, code::run_sealed);
  EXPECT_EQ(s->integrityCheck(), "ok");
}

TEST(StoreOpenTest, MissingCapabilityRefusesToOpen) {
  TempDir dir;
  { RuntimeStore::open(dir.path); }
  rawSql(dir.db(),
         "DELETE FROM runtime_capabilities WHERE capability = "
         "'runtime_recovery_authority'; INSERT INTO runtime_capabilities VALUES "
         "('tool_recovery_bundle', 1);");
  std::string m = expectCode([&] { RuntimeStore::open(dir.path); }, code::capability_unavailable);
  EXPECT_EQ(m, "SQLite runtime recovery capability runtime_recovery_authority@1 is unavailable");
  rawSql(dir.db(),
         "INSERT INTO runtime_capabilities VALUES ('runtime_recovery_authority', 1); "
         "UPDATE runtime_capabilities SET version = 2 WHERE capability = "
         "'runtime_continuation_authority';");
  expectCode([&] { RuntimeStore::open(dir.path); }, code::capability_unavailable);
}

TEST(StoreOpenTest, UnknownSynchronousSettingRejected) {
  TempDir dir;
  StoreOptions o;
  o.synchronous = "BOGUS; DROP TABLE x";
  expectCode([&] { RuntimeStore::open(dir.path, o); }, code::store_open_failed);
}

// --- run headers ---

TEST(StoreRunHeaderTest, CreateReadListAndExactRetry) {
  TempDir dir;
  auto s = RuntimeStore::open(dir.path);
  Ident id;
  auto h = header(id);
  h.workspaceIdentity = "workspace:v1:0b0e2f9c-1c4d-4e5f-8a9b-0c1d2e3f4a5b";
  s->createRun(h);
  s->createRun(h);
  EXPECT_EQ(s->readRun(id.session, id.run), h);
  ASSERT_EQ(s->listRuns().size(), 1u);
  auto other = h;
  other.createdAt = 1;
  expectCode([&] { s->createRun(other); }, code::run_header_conflict);
  EXPECT_FALSE(s->readRun(id.session, "nope").has_value());
}

TEST(StoreRunHeaderTest, TerminalHeaderRequiresDurableTerminalFact) {
  TempDir dir;
  auto s = RuntimeStore::open(dir.path);
  Ident id;
  s->createRun(header(id));
  s->append(userEvent(id));
  auto done = header(id, "completed", 9000);
  done.completedAt = 9000;
  expectCode([&] { s->markRunTerminal(done); }, code::run_terminal_fact_missing);
  EXPECT_EQ(s->readRun(id.session, id.run)->status, "running");
  s->commitTerminalEvent(terminalEvent(id, "terminal-1", 9000, "failed"));
  // The fact says failed: a completed header does not follow from it.
  expectCode([&] { s->markRunTerminal(done); }, code::run_terminal_fact_missing);
  auto failed = header(id, "failed", 9000);
  failed.failureClass = "model_error";
  s->markRunTerminal(failed);
  s->markRunTerminal(failed);  // exact retry
  EXPECT_EQ(s->readRun(id.session, id.run)->status, "failed");
  expectCode([&] { s->updateRunHeader(header(id, "running", 9500)); }, code::run_sealed);
  expectCode([&] { s->updateRunHeader(header(id, "failed", 9500)); },
             code::run_terminal_fact_missing);
}

}  // namespace
