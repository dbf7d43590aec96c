// Power-loss file model (workspace side effects): temp file, fsync, rename, directory fsync.
#include <gtest/gtest.h>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/powerloss.h"
#include "powerloss_test_util.h"

namespace crashsim::powerloss::testing {
namespace {

class PowerlossFs : public ::testing::Test {
 protected:
  void TearDown() override { deactivate(); }
};

TEST_F(PowerlossFs, InactiveModePerformsRealPosixOperations) {
  TempDir dir;
  ASSERT_FALSE(active());
  EXPECT_TRUE(writeFile(dir.file("a"), "alpha"));
  EXPECT_FALSE(writeFile(dir.file("a"), "again", WriteOptions{0600, true}));  // O_EXCL
  appendFile(dir.file("a"), "+more");
  fsyncFile(dir.file("a"));
  rename(dir.file("a"), dir.file("b"));
  fsyncDir(dir.path());
  EXPECT_FALSE(fs::exists(dir.file("a")));
  EXPECT_EQ(slurp(dir.file("b")), "alpha+more");
  removeFile(dir.file("b"));
  EXPECT_FALSE(fs::exists(dir.file("b")));
  EXPECT_EQ(pendingSummary().at("active"), false);
  EXPECT_EQ(materialiseCrashState(1, CrashKind::drop_all), json({{"active", false}}));
  try {
    fsyncFile(dir.file("missing"));
    ADD_FAILURE() << "fsync of a missing file succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), "powerloss_io_failed");
  }
}

TEST_F(PowerlossFs, UnsyncedWriteIsLostUnderDropAllAndSyncedContentSurvives) {
  TempDir dir;
  activate(Config{});
  durable(dir.file("cfg"), "port=1");
  writeFile(dir.file("cfg"), "port=2222");         // truncate + write, both pending
  EXPECT_EQ(slurp(dir.file("cfg")), "port=2222");  // visible before the crash
  json desc = materialiseCrashState(5, CrashKind::drop_all);
  EXPECT_EQ(slurp(dir.file("cfg")), "port=1");
  ASSERT_EQ(desc.at("writes").size(), 2u);
  EXPECT_EQ(desc.at("writes")[0].at("op"), "truncate");
  EXPECT_EQ(desc.at("writes")[1].at("op"), "write");
  for (const auto& w : desc.at("writes")) EXPECT_EQ(w.at("fate"), "lost");
}

TEST_F(PowerlossFs, EachCrashKindProducesExactlyTheClaimedFileContents) {
  for (CrashKind kind : {CrashKind::drop_all, CrashKind::keep_prefix, CrashKind::keep_subset,
                         CrashKind::tear_last}) {
    for (Device device : {Device::none, Device::atomic_sector, Device::safe_append}) {
      for (uint64_t seed = 0; seed < 6; ++seed) {
        SCOPED_TRACE(std::string(crashKindName(kind)) + "/" + std::string(deviceName(device)) +
                     "/" + std::to_string(seed));
        TempDir dir;
        Config c;
        c.device = device;
        activate(c);
        std::mt19937_64 rng(seed + 100);
        const std::string a = dir.file("a.txt"), b = dir.file("b.log");
        std::map<std::string, std::string> base = {{a, randomBytes(rng, 3000)},
                                                   {b, randomBytes(rng, 700)}};
        durable(a, base[a]);
        durable(b, base[b]);
        std::vector<Op> ops;
        const std::string a1 = randomBytes(rng, 2500);
        writeFile(a, a1);
        ops.push_back({a, true, 0, {}});
        ops.push_back({a, false, 0, a1});
        const std::string b1 = randomBytes(rng, 1300);
        appendFile(b, b1);
        ops.push_back({b, false, 700, b1});
        const std::string b2 = randomBytes(rng, 100 + rng() % 3000);
        appendFile(b, b2);
        ops.push_back({b, false, 2000, b2});
        json desc = materialiseCrashState(seed, kind);
        std::map<std::string, std::string> actual = {{a, slurp(a)}, {b, slurp(b)}};
        auto expected = expectedAfterCrash(desc, ops, base, actual, kind, device, 512);
        EXPECT_EQ(actual.at(a), expected.at(a));
        EXPECT_EQ(actual.at(b), expected.at(b));
        deactivate();
      }
    }
  }
}

TEST_F(PowerlossFs, FilesCreatedWithoutDirSyncVanish) {
  TempDir dir;
  activate(Config{});
  writeFile(dir.file("fresh"), "data");
  fsyncFile(dir.file("fresh"));  // data durable, name not
  writeFile(dir.file("kept"), "named");
  fsyncFile(dir.file("kept"));
  fsyncDir(dir.path());
  writeFile(dir.file("late"), "late");  // created after the directory sync
  fsyncFile(dir.file("late"));
  json sum = pendingSummary();
  ASSERT_EQ(sum.at("namespace").size(), 1u);
  EXPECT_EQ(sum.at("namespace")[0].at("op"), "create");
  EXPECT_EQ(sum.at("namespace")[0].at("file"), dir.file("late"));
  json desc = materialiseCrashState(2, CrashKind::drop_all);  // no pending name change persists
  EXPECT_TRUE(fs::exists(dir.file("fresh")));  // its creation was covered by the dir sync
  EXPECT_EQ(slurp(dir.file("kept")), "named");
  EXPECT_FALSE(fs::exists(dir.file("late")));
  ASSERT_EQ(desc.at("namespace").size(), 1u);
  EXPECT_EQ(desc.at("namespace")[0].at("fate"), "undone");
}

TEST_F(PowerlossFs, NewFileWithNameSyncedButDataUnsyncedIsEmptyAfterDropAll) {
  TempDir dir;
  activate(Config{});
  writeFile(dir.file("n"), "contents");
  fsyncDir(dir.path());
  materialiseCrashState(0, CrashKind::drop_all);
  ASSERT_TRUE(fs::exists(dir.file("n")));
  EXPECT_EQ(slurp(dir.file("n")), "");
}

TEST_F(PowerlossFs, RenameWithoutDirFsyncIsUndone) {
  TempDir dir;
  activate(Config{});
  const std::string target = dir.file("config.json"), tmp = dir.file("config.json.tmp");
  durable(target, "{\"port\":1}");
  writeFile(tmp, "{\"port\":2}", WriteOptions{0600, true});
  fsyncFile(tmp);
  rename(tmp, target);
  EXPECT_EQ(slurp(target), "{\"port\":2}");
  json desc = materialiseCrashState(7, CrashKind::drop_all);  // no pending name change persists
  EXPECT_EQ(slurp(target), "{\"port\":1}") << desc.dump();
  EXPECT_FALSE(fs::exists(tmp)) << "the temp file's creation was never made durable";
  bool renameUndone = false;
  for (const auto& n : desc.at("namespace")) {
    if (n.at("op") == "rename" && n.at("file") == tmp && n.at("to") == target) renameUndone = true;
  }
  EXPECT_TRUE(renameUndone) << desc.dump();
}

TEST_F(PowerlossFs, RenameOfADurableTempFileWithoutDirFsyncRestoresBothNames) {
  TempDir dir;
  activate(Config{});
  const std::string target = dir.file("t"), tmp = dir.file("t.tmp");
  durable(target, "old");
  durable(tmp, "new");
  rename(tmp, target);
  materialiseCrashState(0, CrashKind::drop_all);
  EXPECT_EQ(slurp(target), "old");
  EXPECT_EQ(slurp(tmp), "new");
}

TEST_F(PowerlossFs, RenameFollowedByDirFsyncSurvives) {
  TempDir dir;
  activate(Config{});
  const std::string target = dir.file("t"), tmp = dir.file("t.tmp");
  durable(target, "old");
  writeFile(tmp, "new");
  fsyncFile(tmp);
  rename(tmp, target);
  fsyncDir(dir.path());
  EXPECT_TRUE(pendingSummary().at("files").empty()) << pendingSummary().dump();
  for (CrashKind kind : {CrashKind::drop_all, CrashKind::tear_last}) {
    materialiseCrashState(3, kind);
    EXPECT_EQ(slurp(target), "new");
    EXPECT_FALSE(fs::exists(tmp));
  }
}

TEST_F(PowerlossFs, RenameAcrossDirectoriesNeedsBothDirectorySyncs) {
  TempDir dir;
  fs::create_directories(dir.path() / "src");
  fs::create_directories(dir.path() / "dst");
  activate(Config{});
  const std::string from = (dir.path() / "src" / "f").string();
  const std::string to = (dir.path() / "dst" / "f").string();
  durable(from, "payload");
  rename(from, to);
  fsyncDir(dir.path() / "dst");  // the new name is durable, the old one not yet removed
  materialiseCrashState(0, CrashKind::drop_all);
  EXPECT_EQ(slurp(to), "payload");
  EXPECT_EQ(slurp(from), "payload");
}

TEST_F(PowerlossFs, RemoveWithoutDirFsyncReappearsWithDurableContent) {
  TempDir dir;
  activate(Config{});
  durable(dir.file("gone"), "durable");
  writeFile(dir.file("gone"), "unsynced");
  removeFile(dir.file("gone"));
  EXPECT_FALSE(fs::exists(dir.file("gone")));
  materialiseCrashState(1, CrashKind::drop_all);
  EXPECT_EQ(slurp(dir.file("gone")), "durable");

  durable(dir.file("gone2"), "x");
  removeFile(dir.file("gone2"));
  fsyncDir(dir.path());
  materialiseCrashState(1, CrashKind::drop_all);
  EXPECT_FALSE(fs::exists(dir.file("gone2")));
}

TEST_F(PowerlossFs, PreexistingFilesAreAssumedDurable) {
  TempDir dir;
  { std::ofstream(dir.file("pre")) << "before"; }
  activate(Config{});
  writeFile(dir.file("pre"), "after");
  materialiseCrashState(0, CrashKind::drop_all);
  EXPECT_EQ(slurp(dir.file("pre")), "before");
}

TEST_F(PowerlossFs, CrashNowWritesTheDescriptionAndDiesBySigkill) {
  TempDir dir;
  Config c;
  c.seed = 4;  // kindForSeed(4) == drop_all
  c.logPath = dir.file("powerloss.json");
  const std::string target = dir.file("w");
  int status = runChild([&] {
    activate(c);
    durable(target, "one");
    writeFile(target, "two");
    crashNow();
  });
  ASSERT_TRUE(killedBySigkill(status)) << status;
  EXPECT_EQ(slurp(target), "one");
  json log = json::parse(slurp(c.logPath));
  EXPECT_EQ(log.at("seed"), 4);
  EXPECT_EQ(log.at("kind"), "drop_all");
  EXPECT_EQ(log.at("device"), "none");
  EXPECT_EQ(log.at("pendingBefore").at("pendingWrites"), 2);
  ASSERT_EQ(log.at("files").size(), 1u);
  EXPECT_EQ(log.at("files")[0].at("file"), target);
  EXPECT_EQ(log.at("files")[0].at("state"), "written");
}

TEST_F(PowerlossFs, CrashNowWhenInactiveStillKills) {
  int status = runChild([] { crashNow(); });
  EXPECT_TRUE(killedBySigkill(status));
}

TEST_F(PowerlossFs, KindForSeedCyclesThroughAllKinds) {
  EXPECT_EQ(kindForSeed(0), CrashKind::drop_all);
  EXPECT_EQ(kindForSeed(1), CrashKind::keep_prefix);
  EXPECT_EQ(kindForSeed(2), CrashKind::keep_subset);
  EXPECT_EQ(kindForSeed(3), CrashKind::tear_last);
  EXPECT_EQ(kindForSeed(17), CrashKind::keep_prefix);
  for (CrashKind k : {CrashKind::drop_all, CrashKind::keep_prefix, CrashKind::keep_subset,
                      CrashKind::tear_last}) {
    EXPECT_EQ(parseCrashKind(crashKindName(k)), k);
  }
  EXPECT_EQ(parseDevice("atomic"), Device::atomic_sector);
  EXPECT_EQ(parseDevice("safe_append"), Device::safe_append);
  EXPECT_EQ(parseDevice("none"), Device::none);
  EXPECT_FALSE(parseDevice("ssd").has_value());
}

}  // namespace
}  // namespace crashsim::powerloss::testing
