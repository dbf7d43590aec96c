// Power-loss VFS: exact crash states on raw files written through the VFS, and real SQLite
// databases crashed in forked children (raise(SIGKILL)) and reopened without the VFS.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "crashsim/powerloss.h"
#include "powerloss_test_util.h"

namespace crashsim::powerloss::testing {
namespace {

constexpr int kDbFlags = SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE;
constexpr int kWalFlags = SQLITE_OPEN_WAL | SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE;
constexpr int kJournalFlags = SQLITE_OPEN_MAIN_JOURNAL | SQLITE_OPEN_CREATE | SQLITE_OPEN_READWRITE;
constexpr CrashKind kKinds[] = {CrashKind::drop_all, CrashKind::keep_prefix, CrashKind::keep_subset,
                                CrashKind::tear_last};
constexpr Device kDevices[] = {Device::none, Device::atomic_sector, Device::safe_append};

class PowerlossVfs : public ::testing::Test {
 protected:
  void TearDown() override { deactivate(); }
};

Config cfgFor(Device d, int sector = 512) {
  Config c;
  c.device = d;
  c.sectorSize = sector;
  return c;
}

// Durable bases in two files, then interleaved pending writes/truncates; returns the ops.
struct Scenario {
  std::map<std::string, std::string> base;
  std::vector<Op> ops;
};

Scenario buildPending(const TempDir& dir, uint64_t shapeSeed, RawFile& a, RawFile& b) {
  std::mt19937_64 rng(shapeSeed);
  Scenario sc;
  sc.base[a.path()] = randomBytes(rng, 6000);
  sc.base[b.path()] = randomBytes(rng, 1000);
  a.write(0, sc.base[a.path()]);
  a.sync();
  b.write(0, sc.base[b.path()]);
  b.sync();
  std::map<std::string, uint64_t> size = {{a.path(), 6000}, {b.path(), 1000}};
  for (int i = 0; i < 7; ++i) {
    RawFile& f = (i % 2 == 0) ? a : b;
    Op op;
    op.file = f.path();
    if (i == 3) {
      op.truncate = true;
      op.offset = size[f.path()] / 2;
      f.truncate(op.offset);
      size[f.path()] = op.offset;
    } else {
      op.offset = rng() % (size[f.path()] + 1500);
      op.bytes = randomBytes(rng, 1 + rng() % 5000);
      f.write(op.offset, op.bytes);
      size[f.path()] = std::max(size[f.path()], op.offset + op.bytes.size());
    }
    sc.ops.push_back(std::move(op));
  }
  (void)dir;
  return sc;
}

TEST_F(PowerlossVfs, EachCrashKindProducesExactlyTheClaimedFileContents) {
  int garbageSeen = 0;
  for (Device device : kDevices) {
    for (int sector : {512, 4096}) {
      for (CrashKind kind : kKinds) {
        std::set<std::string> outcomes;
        for (uint64_t seed = 0; seed < 8; ++seed) {
          SCOPED_TRACE(std::string(deviceName(device)) + "/" + std::to_string(sector) + "/" +
                       std::string(crashKindName(kind)) + "/seed " + std::to_string(seed));
          TempDir dir;
          activate(cfgFor(device, sector));
          RawFile a(dir.file("a.db"), kDbFlags);
          RawFile b(dir.file("a.db-wal"), kWalFlags);
          Scenario sc = buildPending(dir, seed * 7 + 1, a, b);
          // Reads see pending data: the last write reads back before any sync.
          const Op& last = sc.ops.back();
          ASSERT_EQ(last.file, a.path());
          EXPECT_EQ(a.read(last.offset, last.bytes.size()), last.bytes);
          json desc = materialiseCrashState(seed, kind);
          a.close();
          b.close();
          std::map<std::string, std::string> actual = {{a.path(), slurp(a.path())},
                                                       {b.path(), slurp(b.path())}};
          auto expected = expectedAfterCrash(desc, sc.ops, sc.base, actual, kind, device,
                                             static_cast<uint64_t>(sector));
          EXPECT_EQ(actual.at(a.path()), expected.at(a.path()));
          EXPECT_EQ(actual.at(b.path()), expected.at(b.path()));
          EXPECT_TRUE(desc.at("namespace").empty());
          std::string fates;
          for (const auto& e : desc.at("writes")) {
            fates += e.at("fate").get<std::string>()[0];
            if (e.at("fate") == "garbage") ++garbageSeen;
          }
          outcomes.insert(fates);
          deactivate();
        }
        // The seed really selects different states (except drop_all, which has one).
        if (kind == CrashKind::drop_all) {
          EXPECT_EQ(outcomes.size(), 1u);
        } else {
          EXPECT_GE(outcomes.size(), 3u) << crashKindName(kind);
        }
      }
    }
  }
  EXPECT_GT(garbageSeen, 0) << "Device::none must sometimes leave garbage in a torn sector";
}

TEST_F(PowerlossVfs, SameSeedSameCrashState) {
  std::string first, second;
  json d1, d2;
  for (int round = 0; round < 2; ++round) {
    TempDir dir;
    activate(cfgFor(Device::none));
    RawFile a(dir.file("a.db"), kDbFlags);
    RawFile b(dir.file("a.db-wal"), kWalFlags);
    buildPending(dir, 99, a, b);
    json desc = materialiseCrashState(3);  // kindForSeed(3) == tear_last
    EXPECT_EQ(desc.at("kind"), "tear_last");
    a.close();
    b.close();
    for (auto& e : desc.at("writes")) e.erase("file");
    (round == 0 ? d1 : d2) = desc.at("writes");
    (round == 0 ? first : second) = slurp(dir.file("a.db")) + slurp(dir.file("a.db-wal"));
    deactivate();
  }
  EXPECT_EQ(d1, d2);
  EXPECT_EQ(first, second);
}

TEST_F(PowerlossVfs, SyncedWriteSurvivesEveryCrashKind) {
  for (Device device : kDevices) {
    for (CrashKind kind : kKinds) {
      for (uint64_t seed = 0; seed < 8; ++seed) {
        SCOPED_TRACE(std::string(deviceName(device)) + "/" + std::string(crashKindName(kind)));
        TempDir dir;
        activate(cfgFor(device));
        std::mt19937_64 rng(seed);
        RawFile a(dir.file("s.db"), kDbFlags);
        RawFile w(dir.file("s.db-wal"), kWalFlags);
        const std::string base = randomBytes(rng, 8192);
        a.write(0, base);
        a.sync();
        w.write(0, randomBytes(rng, 700));  // pending in another file, stays pending
        const std::string synced = randomBytes(rng, 2000);
        a.write(1000, synced);
        a.sync();
        a.write(4096, randomBytes(rng, 3000));  // pending after the sync
        a.write(8192, randomBytes(rng, 1500));
        w.write(700, randomBytes(rng, 900));
        materialiseCrashState(seed, kind);
        a.close();
        w.close();
        const std::string after = slurp(dir.file("s.db"));
        ASSERT_GE(after.size(), 4096u);
        EXPECT_EQ(after.substr(1000, 2000), synced);
        EXPECT_EQ(after.substr(0, 1000), base.substr(0, 1000));
        EXPECT_EQ(after.substr(3000, 1096), base.substr(3000, 1096));
        deactivate();
      }
    }
  }
}

TEST_F(PowerlossVfs, ReadsSeePendingWritesThroughTheVfs) {
  TempDir dir;
  activate(cfgFor(Device::none));
  RawFile a(dir.file("r.db"), kDbFlags);
  a.write(0, std::string(4096, 'x'));
  a.write(5000, "pending-bytes");
  EXPECT_EQ(a.read(5000, 13), "pending-bytes");
  EXPECT_EQ(a.size(), 5013);
  json sum = pendingSummary();
  EXPECT_EQ(sum.at("pendingWrites"), 2);
  EXPECT_EQ(sum.at("pendingBytes"), 4096 + 13);
  ASSERT_EQ(sum.at("files").size(), 1u);
  EXPECT_EQ(sum.at("files")[0].at("file"), a.path());
  EXPECT_EQ(sum.at("files")[0].at("nameDurable"), false);
  a.sync();  // first sync of a new main db also syncs its directory (non-strict)
  EXPECT_EQ(pendingSummary().at("pendingWrites"), 0);
  EXPECT_TRUE(pendingSummary().at("files").empty());
}

TEST_F(PowerlossVfs, SqliteReadsItsOwnUnsyncedRows) {
  TempDir dir;
  activate(cfgFor(Device::none));
  ASSERT_STREQ(sqlite3_vfs_find(nullptr)->zName, std::string(kVfsName).c_str());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("own.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;"
                         "CREATE TABLE t(x INTEGER);"
                         "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i<100)"
                         " INSERT INTO t SELECT i FROM c;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), sum(x) FROM t", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 100);
  EXPECT_EQ(sqlite3_column_int(st, 1), 5050);
  sqlite3_finalize(st);
  json sum = pendingSummary();
  EXPECT_GT(sum.at("pendingWrites").get<int>(), 0) << sum.dump();
  bool walAtRisk = false;
  for (const auto& f : sum.at("files")) {
    if (f.at("file") == dir.file("own.db-wal") && f.at("pendingWrites").get<int>() > 0) {
      walAtRisk = true;
    }
  }
  EXPECT_TRUE(walAtRisk) << sum.dump();
  sqlite3_close(db);
}

TEST_F(PowerlossVfs, DeviceCharacteristicsAndSectorSizeAreReported) {
  for (Device d : kDevices) {
    for (int sector : {512, 4096}) {
      TempDir dir;
      activate(cfgFor(d, sector));
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(dir.file("dc.db").c_str(), &db), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_file* f = nullptr;
      ASSERT_EQ(sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &f), SQLITE_OK);
      EXPECT_EQ(f->pMethods->xSectorSize(f), sector);
      int caps = f->pMethods->xDeviceCharacteristics(f);
      EXPECT_TRUE(caps & SQLITE_IOCAP_POWERSAFE_OVERWRITE);
      EXPECT_EQ((caps & SQLITE_IOCAP_SAFE_APPEND) != 0, d == Device::safe_append);
      const int atomicFlag = sector == 512 ? SQLITE_IOCAP_ATOMIC512 : SQLITE_IOCAP_ATOMIC4K;
      EXPECT_EQ((caps & atomicFlag) != 0, d == Device::atomic_sector);
      sqlite3_close(db);
      deactivate();
    }
  }
}

TEST_F(PowerlossVfs, StrictDirSyncMainDbCreatedWithoutDirectorySyncVanishes) {
  for (bool strict : {false, true}) {
    TempDir dir;
    Config c = cfgFor(Device::none);
    c.strictDirSync = strict;
    activate(c);
    RawFile a(dir.file("new.db"), kDbFlags);
    a.write(0, std::string(4096, 'd'));
    a.sync();
    json desc = materialiseCrashState(0, CrashKind::drop_all);
    a.close();
    if (strict) {
      EXPECT_FALSE(fs::exists(dir.file("new.db"))) << desc.dump();
      ASSERT_EQ(desc.at("namespace").size(), 1u);
      EXPECT_EQ(desc.at("namespace")[0].at("op"), "create");
      EXPECT_EQ(desc.at("namespace")[0].at("fate"), "undone");
    } else {
      EXPECT_EQ(slurp(dir.file("new.db")), std::string(4096, 'd'));
      EXPECT_TRUE(desc.at("namespace").empty());
    }
    deactivate();
  }
}

TEST_F(PowerlossVfs, JournalCreationIsDurableAtFirstSyncButUnlinkWaitsForDirSync) {
  for (int dirSync : {0, 1}) {
    TempDir dir;
    Config c = cfgFor(Device::none);
    c.strictDirSync = true;
    activate(c);
    RawFile db(dir.file("j.db"), kDbFlags);  // never synced: its creation is not durable
    {
      RawFile j(dir.file("j.db-journal"), kJournalFlags);
      j.write(0, "journal-header-and-pages");
      j.sync();  // unixOpen semantics: first sync of a new journal fsyncs the directory
    }
    // That directory sync also made j.db's name durable (same directory), with empty content.
    sqlite3_vfs* vfs = sqlite3_vfs_find(std::string(kVfsName).c_str());
    ASSERT_EQ(vfs->xDelete(vfs, dir.file("j.db-journal").c_str(), dirSync), SQLITE_OK);
    ASSERT_FALSE(fs::exists(dir.file("j.db-journal")));
    json desc = materialiseCrashState(0, CrashKind::drop_all);
    db.close();
    if (dirSync) {
      EXPECT_FALSE(fs::exists(dir.file("j.db-journal"))) << desc.dump();
    } else {
      EXPECT_EQ(slurp(dir.file("j.db-journal")), "journal-header-and-pages") << desc.dump();
    }
    EXPECT_TRUE(fs::exists(dir.file("j.db")));
    EXPECT_EQ(slurp(dir.file("j.db")), "");
    deactivate();
  }
}

// --- Real SQLite in a child that dies by SIGKILL at the power cut ---------------------------

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error(sql + ": " + msg);
  }
}

std::vector<std::string> rows(const std::string& path) {
  sqlite3* db = nullptr;
  std::vector<std::string> out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return {"<open failed>"};
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT x FROM t ORDER BY rowid", -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
    }
  } else {
    out.push_back(std::string("<error ") + sqlite3_errmsg(db) + ">");
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

std::string integrity(const std::string& path) {
  sqlite3* db = nullptr;
  std::string result = "<open failed>";
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      result = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    } else {
      result = sqlite3_errmsg(db);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return result;
}

json readLog(const std::string& path) {
  std::string text = slurp(path);
  if (text.empty()) return json();
  return json::parse(text);
}

void setEnv(const Config& c, CrashKind kind) {
  ::setenv("CRASHSIM_POWERLOSS", "1", 1);
  ::setenv("CRASHSIM_POWERLOSS_SEED", std::to_string(c.seed).c_str(), 1);
  ::setenv("CRASHSIM_POWERLOSS_DEVICE", std::string(deviceName(c.device)).c_str(), 1);
  ::setenv("CRASHSIM_POWERLOSS_KIND", std::string(crashKindName(kind)).c_str(), 1);
  ::setenv("CRASHSIM_POWERLOSS_LOG", c.logPath.c_str(), 1);
}

TEST_F(PowerlossVfs, WalSynchronousOffCommitIsLostUnderDropAllWhileFullCommitSurvives) {
  TempDir dir;
  const std::string dbPath = dir.file("w.db");
  Config c = cfgFor(Device::none);
  c.seed = 11;
  c.logPath = dir.file("crash.json");
  int status = runChild([&] {
    setEnv(c, CrashKind::drop_all);
    if (!installFromEnvironment()) _exit(4);
    sqlite3* db = nullptr;
    if (sqlite3_open(dbPath.c_str(), &db) != SQLITE_OK) _exit(5);
    exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t(x TEXT)");
    exec(db, "INSERT INTO t VALUES('full-1')");
    exec(db, "INSERT INTO t VALUES('full-2')");
    exec(db, "PRAGMA synchronous=OFF");
    exec(db, "INSERT INTO t VALUES('off-1')");
    // The failpoint trigger's path: the hook installFromEnvironment registered.
    if (failpoints::PowerlossCrashHook hook = failpoints::powerlossCrashHook()) hook();
    _exit(6);
  });
  ASSERT_TRUE(killedBySigkill(status)) << status;
  EXPECT_EQ(rows(dbPath), (std::vector<std::string>{"full-1", "full-2"}));
  EXPECT_EQ(integrity(dbPath), "ok");
  json log = readLog(c.logPath);
  ASSERT_TRUE(log.is_object());
  EXPECT_EQ(log.at("kind"), "drop_all");
  EXPECT_EQ(log.at("seed"), 11);
  EXPECT_GT(log.at("pendingBefore").at("pendingWrites").get<int>(), 0);
  bool walLost = false;
  for (const auto& w : log.at("writes")) {
    EXPECT_EQ(w.at("fate"), "lost");
    if (w.at("file") == dbPath + "-wal") walLost = true;
  }
  EXPECT_TRUE(walLost) << log.dump();
}

TEST_F(PowerlossVfs, RollbackJournalExtraCommitSurvivesAndOffCommitIsLost) {
  TempDir dir;
  const std::string dbPath = dir.file("r.db");
  Config c = cfgFor(Device::none);
  c.logPath = dir.file("crash.json");
  int status = runChild([&] {
    activate(c);
    sqlite3* db = nullptr;
    if (sqlite3_open(dbPath.c_str(), &db) != SQLITE_OK) _exit(5);
    exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=EXTRA; CREATE TABLE t(x TEXT)");
    exec(db, "INSERT INTO t VALUES('extra-1')");
    exec(db, "PRAGMA synchronous=OFF");
    exec(db, "INSERT INTO t VALUES('off-1')");
    crashNow();  // Config::kind unset, seed 0 -> drop_all
  });
  ASSERT_TRUE(killedBySigkill(status)) << status;
  EXPECT_EQ(rows(dbPath), (std::vector<std::string>{"extra-1"}));
  EXPECT_EQ(integrity(dbPath), "ok");
  EXPECT_EQ(readLog(c.logPath).at("kind"), "drop_all");
}

// SQLite documents that synchronous=FULL in DELETE journal mode does not sync the directory
// after unlinking the journal (EXTRA does), so a power cut right after a commit may roll it back.
// The model reproduces that: the un-synced unlink is undone, the journal is hot again.
TEST_F(PowerlossVfs, RollbackJournalFullCommitIsRolledBackWhenJournalUnlinkIsNotDirSynced) {
  TempDir dir;
  const std::string dbPath = dir.file("f.db");
  Config c = cfgFor(Device::none);
  c.logPath = dir.file("crash.json");
  int status = runChild([&] {
    activate(c);
    sqlite3* db = nullptr;
    if (sqlite3_open(dbPath.c_str(), &db) != SQLITE_OK) _exit(5);
    exec(db, "PRAGMA journal_mode=DELETE; PRAGMA synchronous=EXTRA; CREATE TABLE t(x TEXT)");
    exec(db, "INSERT INTO t VALUES('extra-1')");
    exec(db, "PRAGMA synchronous=FULL");
    exec(db, "INSERT INTO t VALUES('full-1')");
    crashNow();
  });
  ASSERT_TRUE(killedBySigkill(status)) << status;
  json log = readLog(c.logPath);
  bool journalRestored = false;
  for (const auto& f : log.at("files")) {
    if (f.at("file") == dbPath + "-journal" && f.at("state") == "written") journalRestored = true;
  }
  EXPECT_TRUE(journalRestored) << log.dump();
  EXPECT_EQ(rows(dbPath), (std::vector<std::string>{"extra-1"}));
  EXPECT_EQ(integrity(dbPath), "ok");
}

// D1 in miniature: with synchronous=FULL every acknowledged commit survives every crash state on
// every device, later NORMAL commits survive only as a prefix, and the db is never damaged.
TEST_F(PowerlossVfs, WalFullCommitsSurviveEveryCrashStateAndIntegrityCheckPasses) {
  int normalLostSomewhere = 0;
  int normalKeptSomewhere = 0;
  int dropAllSurvivors = -1;
  for (Device device : kDevices) {
    for (CrashKind kind : kKinds) {
      for (uint64_t seed = 0; seed < 3; ++seed) {
        SCOPED_TRACE(std::string(deviceName(device)) + "/" + std::string(crashKindName(kind)) +
                     "/seed " + std::to_string(seed));
        TempDir dir;
        const std::string dbPath = dir.file("d1.db");
        Config c = cfgFor(device);
        c.seed = seed * 1000 + 17;
        c.kind = kind;
        c.logPath = dir.file("crash.json");
        constexpr int kFull = 40;
        constexpr int kNormal = 12;
        int status = runChild([&] {
          activate(c);
          sqlite3* db = nullptr;
          if (sqlite3_open(dbPath.c_str(), &db) != SQLITE_OK) _exit(5);
          exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=16;"
               "CREATE TABLE t(x TEXT, pad BLOB)");
          for (int i = 1; i <= kFull; ++i) {
            exec(db, "INSERT INTO t VALUES('full-" + std::to_string(i) + "', randomblob(900))");
          }
          exec(db, "PRAGMA synchronous=NORMAL");
          for (int i = 1; i <= kNormal; ++i) {
            exec(db, "INSERT INTO t VALUES('normal-" + std::to_string(i) + "', randomblob(900))");
          }
          crashNow();
        });
        ASSERT_TRUE(killedBySigkill(status)) << status;
        EXPECT_EQ(integrity(dbPath), "ok");
        std::vector<std::string> got = rows(dbPath);
        ASSERT_GE(got.size(), static_cast<size_t>(kFull));
        for (int i = 1; i <= kFull; ++i) EXPECT_EQ(got[i - 1], "full-" + std::to_string(i));
        for (size_t k = kFull; k < got.size(); ++k) {
          EXPECT_EQ(got[k], "normal-" + std::to_string(k - kFull + 1)) << "not a prefix";
        }
        if (got.size() < static_cast<size_t>(kFull + kNormal)) ++normalLostSomewhere;
        if (got.size() > static_cast<size_t>(kFull)) ++normalKeptSomewhere;
        json log = readLog(c.logPath);
        ASSERT_TRUE(log.is_object());
        EXPECT_GT(log.at("pendingBefore").at("pendingWrites").get<int>(), 0);
        if (kind == CrashKind::drop_all) {
          // Only what a sync covered survives: the FULL commits and the NORMAL commits a
          // checkpoint synced (the WAL is synced before it is checkpointed). Deterministic.
          EXPECT_LT(got.size(), static_cast<size_t>(kFull + kNormal));
          if (dropAllSurvivors < 0) dropAllSurvivors = static_cast<int>(got.size());
          EXPECT_EQ(static_cast<int>(got.size()), dropAllSurvivors);
        }
      }
    }
  }
  EXPECT_GT(normalLostSomewhere, 0);
  EXPECT_GT(normalKeptSomewhere, 0);
}

TEST_F(PowerlossVfs, InstallFromEnvironmentActivatesOnlyWhenAskedAndRejectsBadValues) {
  ::unsetenv("CRASHSIM_POWERLOSS");
  EXPECT_FALSE(installFromEnvironment());
  EXPECT_FALSE(active());
  sqlite3_initialize();
  EXPECT_STRNE(sqlite3_vfs_find(nullptr)->zName, std::string(kVfsName).c_str());

  ::setenv("CRASHSIM_POWERLOSS", "1", 1);
  ::setenv("CRASHSIM_POWERLOSS_SEED", "12x", 1);
  try {
    installFromEnvironment();
    ADD_FAILURE() << "bad seed accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "powerloss_config_invalid");
  }
  ::setenv("CRASHSIM_POWERLOSS_SEED", "42", 1);
  ::setenv("CRASHSIM_POWERLOSS_DEVICE", "flash", 1);
  try {
    installFromEnvironment();
    ADD_FAILURE() << "bad device accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "powerloss_config_invalid");
  }
  ::setenv("CRASHSIM_POWERLOSS_DEVICE", "atomic", 1);
  ::setenv("CRASHSIM_POWERLOSS_SECTOR", "1024", 1);
  EXPECT_THROW(installFromEnvironment(), Error);
  ::setenv("CRASHSIM_POWERLOSS_SECTOR", "4096", 1);
  EXPECT_FALSE(active());
  EXPECT_TRUE(installFromEnvironment());
  EXPECT_TRUE(active());
  EXPECT_STREQ(sqlite3_vfs_find(nullptr)->zName, std::string(kVfsName).c_str());
  EXPECT_EQ(failpoints::powerlossCrashHook(), &crashNow);
  deactivate();
  EXPECT_EQ(failpoints::powerlossCrashHook(), nullptr);
  EXPECT_STRNE(sqlite3_vfs_find(nullptr)->zName, std::string(kVfsName).c_str());
  for (const char* v : {"CRASHSIM_POWERLOSS", "CRASHSIM_POWERLOSS_SEED",
                        "CRASHSIM_POWERLOSS_DEVICE", "CRASHSIM_POWERLOSS_SECTOR"}) {
    ::unsetenv(v);
  }
}

TEST_F(PowerlossVfs, ActivateRejectsUnsupportedSectorSize) {
  try {
    activate(cfgFor(Device::none, 1000));
    ADD_FAILURE() << "sector size 1000 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "powerloss_config_invalid");
  }
}

}  // namespace
}  // namespace crashsim::powerloss::testing
