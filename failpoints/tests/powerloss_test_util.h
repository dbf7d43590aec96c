// powerloss_test_util.h — helpers shared by the power-loss tests: unique temp dirs, raw files
// opened through the VFS, and an independent checker that recomputes the exact file contents a
// crash description claims and verifies each crash kind's rules.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "crashsim/powerloss.h"

namespace crashsim::powerloss::testing {

namespace fs = std::filesystem;
using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    fs::path p =
        fs::temp_directory_path() / ("crashsim-pl-" + std::to_string(::getpid()) + "-" +
                                     std::to_string(counter++) + "-" + std::to_string(rd()));
    fs::create_directories(p);
    path_ = fs::weakly_canonical(p);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string randomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// A file opened directly through the power-loss VFS (no pager, no locks): byte-exact control.
class RawFile {
 public:
  RawFile(std::string path, int flags) : path_(std::move(path)) {
    vfs_ = sqlite3_vfs_find(std::string(kVfsName).c_str());
    if (vfs_ == nullptr) throw std::runtime_error("power-loss VFS not registered");
    mem_.resize(static_cast<size_t>(vfs_->szOsFile) / 8 + 1);
    file_ = reinterpret_cast<sqlite3_file*>(mem_.data());
    int out = 0;
    int rc = vfs_->xOpen(vfs_, path_.c_str(), file_, flags, &out);
    if (rc != SQLITE_OK) throw std::runtime_error("xOpen failed: " + std::to_string(rc));
  }
  ~RawFile() { close(); }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;

  void write(uint64_t off, const std::string& bytes) {
    check(file_->pMethods->xWrite(file_, bytes.data(), static_cast<int>(bytes.size()),
                                  static_cast<sqlite3_int64>(off)));
  }
  void truncate(uint64_t size) {
    check(file_->pMethods->xTruncate(file_, static_cast<sqlite3_int64>(size)));
  }
  void sync() { check(file_->pMethods->xSync(file_, SQLITE_SYNC_NORMAL)); }
  std::string read(uint64_t off, size_t n) {
    std::string out(n, '\0');
    int rc = file_->pMethods->xRead(file_, out.data(), static_cast<int>(n),
                                    static_cast<sqlite3_int64>(off));
    if (rc != SQLITE_OK && rc != SQLITE_IOERR_SHORT_READ) check(rc);
    return out;
  }
  int64_t size() {
    sqlite3_int64 sz = 0;
    check(file_->pMethods->xFileSize(file_, &sz));
    return sz;
  }
  void close() {
    if (file_ != nullptr && file_->pMethods != nullptr) file_->pMethods->xClose(file_);
    file_ = nullptr;
  }
  const std::string& path() const { return path_; }

 private:
  static void check(int rc) {
    if (rc != SQLITE_OK) throw std::runtime_error("VFS call failed: " + std::to_string(rc));
  }
  std::string path_;
  sqlite3_vfs* vfs_ = nullptr;
  std::vector<uint64_t> mem_;
  sqlite3_file* file_ = nullptr;
};

// One pending operation as the test issued it (mirrors the model's pending list).
struct Op {
  std::string file;
  bool truncate = false;
  uint64_t offset = 0;  // or new size
  std::string bytes;
};

inline void applyRange(std::string& img, uint64_t off, const char* data, size_t n) {
  if (img.size() < off + n) img.resize(off + n, '\0');
  std::copy(data, data + n, img.begin() + static_cast<std::ptrdiff_t>(off));
}

// Recomputes, from the test's own record of the pending ops and the durable bases, the exact
// content every file must have after the crash `desc` describes, and checks the kind's rules.
// `actual` is consulted only to learn the garbage bytes (which must differ from old and new).
inline std::map<std::string, std::string> expectedAfterCrash(
    const json& desc, const std::vector<Op>& ops, std::map<std::string, std::string> images,
    const std::map<std::string, std::string>& actual, CrashKind kind, Device device,
    uint64_t sector) {
  EXPECT_EQ(desc.at("kind"), std::string(crashKindName(kind)));
  EXPECT_EQ(desc.at("pendingWrites").get<size_t>(), ops.size());
  const auto& writes = desc.at("writes");
  size_t idx = 0;
  bool sawNotKept = false;
  for (size_t seq = 0; seq < ops.size(); ++seq) {
    const Op& op = ops[seq];
    std::string& img = images[op.file];
    const bool isLast = seq + 1 == ops.size();
    const bool torn = kind == CrashKind::tear_last && isLast && !op.truncate;
    const bool isAppend = op.offset >= img.size();
    uint64_t covered = op.offset;
    bool cutSeen = false;
    int pieces = 0;
    while (idx < writes.size() && writes[idx].at("seq").get<size_t>() == seq) {
      const json& e = writes[idx++];
      ++pieces;
      EXPECT_EQ(e.at("file"), op.file);
      EXPECT_EQ(e.at("op"), op.truncate ? "truncate" : "write");
      const std::string fate = e.at("fate");
      const uint64_t off = e.at("offset");
      const uint64_t len = e.at("length");
      if (!torn) {
        EXPECT_EQ(off, op.offset);
        EXPECT_EQ(len, op.truncate ? 0 : op.bytes.size());
        EXPECT_FALSE(e.contains("torn"));
      } else {
        EXPECT_TRUE(e.value("torn", false));
        EXPECT_EQ(off, covered) << "torn pieces must be contiguous";
        const bool startAligned = off == op.offset || off % sector == 0;
        const bool endAligned =
            off + len == op.offset + op.bytes.size() || (off + len) % sector == 0;
        EXPECT_TRUE(startAligned && endAligned) << "pieces split at sector boundaries only";
        EXPECT_LE(len, sector);
        covered = off + len;
        if (fate == "kept") {
          EXPECT_FALSE(cutSeen) << "kept pieces are a prefix of the torn write";
        } else {
          cutSeen = true;
        }
      }
      switch (kind) {
        case CrashKind::drop_all:
          EXPECT_EQ(fate, "lost");
          break;
        case CrashKind::keep_prefix:
          if (fate == "kept") {
            EXPECT_FALSE(sawNotKept) << "keep_prefix kept a write after a lost one";
          }
          break;
        case CrashKind::keep_subset:
          EXPECT_TRUE(fate == "kept" || fate == "lost");
          break;
        case CrashKind::tear_last:
          if (!isLast) {
            EXPECT_EQ(fate, "kept");
          }
          break;
      }
      if (fate == "garbage") {
        EXPECT_TRUE(torn);
        EXPECT_NE(device, Device::atomic_sector) << "atomic sectors never hold garbage";
        if (device == Device::safe_append) {
          EXPECT_FALSE(isAppend) << "safe append: no garbage";
        }
      }
      if (fate != "kept") sawNotKept = true;
      if (fate == "kept") {
        if (op.truncate) {
          img.resize(op.offset, '\0');
        } else {
          applyRange(img, off, op.bytes.data() + (off - op.offset), len);
        }
      } else if (fate == "garbage") {
        const std::string& act = actual.at(op.file);
        EXPECT_GE(act.size(), off + len);
        for (uint64_t j = 0; j < len && off + j < act.size(); ++j) {
          const char oldByte = off + j < img.size() ? img[off + j] : '\0';
          EXPECT_NE(act[off + j], oldByte) << "garbage equals the old byte at " << off + j;
          EXPECT_NE(act[off + j], op.bytes[off - op.offset + j]) << "garbage equals the new byte";
        }
        if (act.size() >= off + len) applyRange(img, off, act.data() + off, len);
      } else {
        EXPECT_EQ(fate, "lost");
      }
    }
    if (torn) {
      EXPECT_EQ(covered, op.offset + op.bytes.size()) << "torn pieces cover the write";
      EXPECT_TRUE(cutSeen) << "tear_last always tears something";
    } else {
      EXPECT_EQ(pieces, 1) << "one entry per untorn write, seq " << seq;
    }
  }
  EXPECT_EQ(idx, writes.size());
  return images;
}

// Runs `body` in a forked child. The body is expected to end in crashNow(); returning normally
// exits 0, an exception exits 2. Returns the wait status.
inline int runChild(const std::function<void()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    try {
      body();
    } catch (const std::exception& e) {
      fprintf(stderr, "child: %s\n", e.what());
      _exit(2);
    }
    _exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// A durable file: written, fsynced, directory fsynced.
inline void durable(const std::string& path, const std::string& bytes) {
  writeFile(path, bytes);
  fsyncFile(path);
  fsyncDir(fs::path(path).parent_path());
}

inline bool killedBySigkill(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

}  // namespace crashsim::powerloss::testing
