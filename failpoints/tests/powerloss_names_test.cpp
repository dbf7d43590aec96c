// Power-loss file model, names at the crash (#44): each pending create / unlink / rename persists
// or is undone by the crash kind's seeded rule, and a persisted name shows its inode's bytes as
// that inode's own data fate left them. Every history here is built by hand; each expected state
// is derived from the rules in crashsim/powerloss.h (FAULT MODEL, "Names at the crash") and the
// draw order documented in powerloss_fs.cpp, replayed on a fresh std::mt19937_64 — never from a
// run of the model.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "crashsim/powerloss.h"
#include "powerloss_test_util.h"

namespace crashsim::powerloss::testing {
namespace {

class PowerlossNames : public ::testing::Test {
 protected:
  void TearDown() override { deactivate(); }
};

// The first seed in [0, 10000) whose draws satisfy `want` (the test's own replay of the rules).
uint64_t seedWhere(const std::function<bool(std::mt19937_64&)>& want) {
  for (uint64_t seed = 0; seed < 10000; ++seed) {
    std::mt19937_64 rng(seed);
    if (want(rng)) return seed;
  }
  ADD_FAILURE() << "no seed below 10000 has the wanted draws";
  return 0;
}

std::map<std::string, std::string> fatesOf(const json& desc) {
  std::map<std::string, std::string> out;  // "op file[->to]" -> fate
  for (const auto& n : desc.at("namespace")) {
    std::string key = n.at("op").get<std::string>() + " " + n.at("file").get<std::string>();
    if (n.contains("to")) key += "->" + n.at("to").get<std::string>();
    out[key] = n.at("fate");
  }
  return out;
}

// The history of a replace that never syncs its temp file: target durable "old"; temp created
// with "new" (one pending write; pending create), renamed over the target (pending rename).
struct UnsyncedReplace {
  std::string target, tmp;
  explicit UnsyncedReplace(TempDir& dir)
      : target(dir.file("config.json")), tmp(dir.file(".config.json.tmp")) {
    durable(target, "old");
    writeFile(tmp, "new", WriteOptions{0644, true});
    rename(tmp, target);
  }
};

TEST_F(PowerlossNames, KeepPrefixPersistsTheRenameAheadOfItsUnsyncedData) {
  // keep_prefix: one data draw (prefix r % 2 of the one pending write), then one name draw
  // (prefix r % 3 of: create tmp, rename tmp -> target).
  const uint64_t seed = seedWhere([](std::mt19937_64& r) { return r() % 2 == 0 && r() % 3 == 2; });
  TempDir dir;
  activate(Config{});
  UnsyncedReplace h(dir);
  json desc = materialiseCrashState(seed, CrashKind::keep_prefix);
  // ALICE's "rename before data": the new name survives, the bytes it names do not.
  ASSERT_TRUE(fs::exists(h.target)) << desc.dump();
  EXPECT_EQ(slurp(h.target), "") << desc.dump();
  EXPECT_FALSE(fs::exists(h.tmp));
  auto fates = fatesOf(desc);
  EXPECT_EQ(fates["create " + h.tmp], "persisted");
  EXPECT_EQ(fates["rename " + h.tmp + "->" + h.target], "persisted");
  ASSERT_EQ(desc.at("writes").size(), 1u);
  EXPECT_EQ(desc.at("writes")[0].at("fate"), "lost");
}

TEST_F(PowerlossNames, KeepPrefixOfTheNamesAloneLeavesTheTempFileBesideTheOldTarget) {
  // Data prefix 1 (the write kept), name prefix 1 (the create persists, the rename does not).
  const uint64_t seed = seedWhere([](std::mt19937_64& r) { return r() % 2 == 1 && r() % 3 == 1; });
  TempDir dir;
  activate(Config{});
  UnsyncedReplace h(dir);
  json desc = materialiseCrashState(seed, CrashKind::keep_prefix);
  EXPECT_EQ(slurp(h.target), "old") << desc.dump();
  EXPECT_EQ(slurp(h.tmp), "new") << desc.dump();
  auto fates = fatesOf(desc);
  EXPECT_EQ(fates["create " + h.tmp], "persisted");
  EXPECT_EQ(fates["rename " + h.tmp + "->" + h.target], "undone");
}

TEST_F(PowerlossNames, TearLastPersistsEveryNameOverTheTornWrite) {
  // tear_last on an atomic-sector device: the one pending write (1300 bytes: pieces of 512, 512
  // and 276) is torn at piece c = r % 3, pieces [0, c) kept; no garbage draw; every name persists.
  std::mt19937_64 r(41);
  const uint64_t cut = r() % 3;
  TempDir dir;
  Config c;
  c.device = Device::atomic_sector;
  activate(c);
  const std::string target = dir.file("big"), tmp = dir.file(".big.tmp");
  durable(target, "old");
  std::string bytes(1300, 'x');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>('a' + i % 26);
  writeFile(tmp, bytes, WriteOptions{0644, true});
  rename(tmp, target);
  json desc = materialiseCrashState(41, CrashKind::tear_last);
  ASSERT_TRUE(fs::exists(target)) << desc.dump();
  EXPECT_EQ(slurp(target), bytes.substr(0, cut * 512)) << desc.dump();
  EXPECT_FALSE(fs::exists(tmp));
  for (const auto& [op, fate] : fatesOf(desc)) EXPECT_EQ(fate, "persisted") << op;
}

TEST_F(PowerlossNames, KeepPrefixCanPersistAnUnlinkAndUndoTheRenameAfterIt) {
  // Synced temp, then unlink of the target and rename over it: no pending data write (so no data
  // draw); one name draw, prefix r % 4 of: create tmp, delete target, rename tmp -> target.
  const uint64_t seed = seedWhere([](std::mt19937_64& r) { return r() % 4 == 2; });
  TempDir dir;
  activate(Config{});
  const std::string target = dir.file("t"), tmp = dir.file(".t.tmp");
  durable(target, "old");
  writeFile(tmp, "new", WriteOptions{0644, true});
  fsyncFile(tmp);
  removeFile(target);
  rename(tmp, target);
  json desc = materialiseCrashState(seed, CrashKind::keep_prefix);
  EXPECT_FALSE(fs::exists(target)) << "the unlink persisted, the rename did not: " << desc.dump();
  EXPECT_EQ(slurp(tmp), "new");
  auto fates = fatesOf(desc);
  EXPECT_EQ(fates["delete " + target], "persisted");
  EXPECT_EQ(fates["rename " + tmp + "->" + target], "undone");
}

TEST_F(PowerlossNames, KeepSubsetNeverPersistsARenameWhoseCreateWasUndone) {
  // keep_subset, no pending data write: one coin per name change in issue order (create tmp,
  // create other, rename tmp -> target); the rename shares the name tmp with the create.
  const uint64_t seed = seedWhere([](std::mt19937_64& r) {
    const bool createTmp = r() & 1, createOther = r() & 1, renameTmp = r() & 1;
    return !createTmp && createOther && renameTmp;
  });
  TempDir dir;
  activate(Config{});
  const std::string target = dir.file("t"), tmp = dir.file(".t.tmp"), other = dir.file("o");
  durable(target, "old");
  writeFile(tmp, "new", WriteOptions{0644, true});
  fsyncFile(tmp);
  writeFile(other, "other");
  fsyncFile(other);
  rename(tmp, target);
  json desc = materialiseCrashState(seed, CrashKind::keep_subset);
  EXPECT_EQ(slurp(target), "old") << desc.dump();
  EXPECT_FALSE(fs::exists(tmp));
  EXPECT_EQ(slurp(other), "other") << "an unrelated name keeps its own coin";
  auto fates = fatesOf(desc);
  EXPECT_EQ(fates["create " + tmp], "undone");
  EXPECT_EQ(fates["create " + other], "persisted");
  EXPECT_EQ(fates["rename " + tmp + "->" + target], "undone");
}

TEST_F(PowerlossNames, KeepSubsetPersistsARenameWithItsCreate) {
  const uint64_t seed = seedWhere([](std::mt19937_64& r) {
    const bool createTmp = r() & 1, renameTmp = r() & 1;
    return createTmp && renameTmp;
  });
  TempDir dir;
  activate(Config{});
  const std::string target = dir.file("t"), tmp = dir.file(".t.tmp");
  durable(target, "old");
  writeFile(tmp, "new", WriteOptions{0644, true});
  fsyncFile(tmp);
  rename(tmp, target);
  json desc = materialiseCrashState(seed, CrashKind::keep_subset);
  EXPECT_EQ(slurp(target), "new") << desc.dump();
  EXPECT_FALSE(fs::exists(tmp));
}

TEST_F(PowerlossNames, DropAllUndoesEveryPendingNameAndADirectorySyncEndsThePending) {
  TempDir dir;
  activate(Config{});
  UnsyncedReplace h(dir);
  json desc = materialiseCrashState(0, CrashKind::drop_all);
  EXPECT_EQ(slurp(h.target), "old");
  EXPECT_FALSE(fs::exists(h.tmp));
  for (const auto& [op, fate] : fatesOf(desc)) EXPECT_EQ(fate, "undone") << op;

  // Synced directory, unsynced data: no name is pending, so every kind keeps the name and only
  // the data fate differs (drop_all: the write is lost).
  UnsyncedReplace again(dir);
  fsyncDir(dir.path());
  json after = materialiseCrashState(0, CrashKind::drop_all);
  EXPECT_TRUE(after.at("namespace").empty()) << after.dump();
  EXPECT_EQ(slurp(again.target), "") << after.dump();
}

}  // namespace
}  // namespace crashsim::powerloss::testing
