// powerloss_fs.cpp — the durability model, the workspace file model, configuration and the crash
// state materialisation. The fault model is described in crashsim/powerloss.h.
//
// Seeded draws (std::mt19937_64 seeded with the crash seed; values reduced with `%`, never with a
// <random> distribution, so a seed gives the same state with every standard library):
//   keep_prefix: one draw, prefix = r % (n + 1);
//   keep_subset: one draw per pending write in issue order, kept iff (r & 1);
//   tear_last:   one draw for the cut piece c = r % pieces; then, if garbage is allowed, one draw
//                (garbage iff r & 1); then one draw per garbage byte (low 8 bits, bumped until it
//                differs from both the old and the new byte).
// Then, continuing the same generator, the fates of the pending name changes (namespaceFates):
//   drop_all:    none persists (no draw);
//   keep_prefix: one draw, the first r % (m + 1) of the m pending name changes persist;
//   keep_subset: one draw per name change in issue order, persisted iff (r & 1) and every earlier
//                pending name change of one of its names persisted;
//   tear_last:   every name change persists (no draw).
// The data draws come first and are unchanged, so a seed keeps the data fates it had before #44.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/failpoints.h"
#include "powerloss_model.h"

namespace crashsim::powerloss {
namespace detail {

namespace {

[[noreturn]] void ioError(const char* what, const std::string& path, int err) {
  throw Error(code::powerloss_io_failed,
              std::string(what) + " " + path + ": " + std::strerror(err));
}

std::string readAll(const std::string& key) {
  int fd = ::open(key.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ioError("open", key, errno);
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ioError("read", key, e);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void writeAllFd(int fd, const std::string& path, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      ioError("write", path, errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void realFsyncFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) ioError("open", path, errno);
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ioError("fsync", path, e);
  }
  ::close(fd);
}

// Replaces the content of `path` (created if absent) and fsyncs it.
void writeWhole(const std::string& path, const std::string& content) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) ioError("open", path, errno);
  try {
    writeAllFd(fd, path, content.data(), content.size());
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ioError("fsync", path, e);
  }
  ::close(fd);
}

bool isRegularFile(const std::string& key) {
  struct stat st {};
  return ::stat(key.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void applyWrite(std::string& image, uint64_t offset, const char* data, size_t n) {
  if (image.size() < offset + n) image.resize(offset + n, '\0');
  std::memcpy(image.data() + offset, data, n);
}

void applyOp(std::string& image, const PendingOp& op) {
  if (op.truncate) {
    image.resize(op.offset, '\0');
  } else {
    applyWrite(image, op.offset, op.bytes.data(), op.bytes.size());
  }
}

nlohmann::json opEntry(size_t seq, const PendingOp& op, uint64_t offset, uint64_t length,
                       std::string_view fate) {
  return {{"seq", seq},       {"file", op.path},  {"op", op.truncate ? "truncate" : "write"},
          {"offset", offset}, {"length", length}, {"fate", fate}};
}

}  // namespace

State& state() {
  static State s;
  return s;
}

std::string normalise(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) abs = path;
  std::filesystem::path canon = std::filesystem::weakly_canonical(abs, ec);
  if (ec) canon = abs.lexically_normal();
  return canon.string();
}

std::string parentOf(const std::string& key) {
  return std::filesystem::path(key).parent_path().string();
}

void resetLocked(State& s) {
  ++s.generation;
  s.inodes.clear();
  s.current.clear();
  s.durable.clear();
  s.pending.clear();
  s.nsOps.clear();
}

uint64_t trackLocked(State& s, const std::string& key) {
  auto it = s.current.find(key);
  if (it != s.current.end()) return it->second;
  uint64_t id = 0;
  if (isRegularFile(key)) {
    id = s.nextInode++;
    s.inodes[id] = Inode{readAll(key), key, false};
  }
  s.current[key] = id;
  s.durable[key] = id;
  return id;
}

uint64_t createLocked(State& s, const std::string& key) {
  trackLocked(s, key);
  uint64_t& cur = s.current[key];
  if (cur != 0) return cur;
  cur = s.nextInode++;
  s.inodes[cur] = Inode{std::string(), key, false};
  s.nsOps.push_back(NsOp{"create", key, std::string(), {parentOf(key)}, {{key, cur}}});
  return cur;
}

void recordWriteLocked(State& s, uint64_t inode, uint64_t offset, const void* data, size_t n) {
  if (n == 0) return;
  s.pending.push_back(PendingOp{inode, false, offset,
                                std::string(static_cast<const char*>(data), n),
                                s.inodes.at(inode).path});
}

void recordTruncateLocked(State& s, uint64_t inode, uint64_t size) {
  s.pending.push_back(PendingOp{inode, true, size, std::string(), s.inodes.at(inode).path});
}

void syncInodeLocked(State& s, uint64_t inode) {
  Inode& in = s.inodes.at(inode);
  for (const PendingOp& op : s.pending) {
    if (op.inode == inode) applyOp(in.durable, op);
  }
  std::erase_if(s.pending, [inode](const PendingOp& op) { return op.inode == inode; });
}

void syncDirLocked(State& s, const std::string& dirKey) {
  for (auto& [key, id] : s.current) {
    if (parentOf(key) == dirKey) s.durable[key] = id;
  }
  for (NsOp& op : s.nsOps) op.dirs.erase(dirKey);
  std::erase_if(s.nsOps, [](const NsOp& op) { return op.dirs.empty(); });
}

void removeLocked(State& s, const std::string& key) {
  trackLocked(s, key);
  s.current[key] = 0;
  s.nsOps.push_back(NsOp{"delete", key, std::string(), {parentOf(key)}, {{key, 0}}});
}

void renameLocked(State& s, const std::string& fromKey, const std::string& toKey) {
  trackLocked(s, fromKey);
  trackLocked(s, toKey);
  uint64_t id = s.current[fromKey];
  s.current[toKey] = id;
  s.current[fromKey] = 0;
  if (id != 0) s.inodes.at(id).path = toKey;
  s.nsOps.push_back(NsOp{
      "rename", fromKey, toKey, {parentOf(fromKey), parentOf(toKey)}, {{fromKey, 0}, {toKey, id}}});
}

std::vector<bool> namespaceFates(const std::vector<NsOp>& ops, CrashKind kind,
                                 std::mt19937_64& rng) {
  const size_t m = ops.size();
  std::vector<bool> persist(m, false);
  switch (kind) {
    case CrashKind::drop_all:
      break;
    case CrashKind::keep_prefix: {
      const size_t prefix = m == 0 ? 0 : static_cast<size_t>(rng() % (m + 1));
      for (size_t i = 0; i < prefix; ++i) persist[i] = true;
      break;
    }
    case CrashKind::keep_subset:
      for (size_t j = 0; j < m; ++j) {
        bool p = (rng() & 1) != 0;  // drawn for every op, so later draws do not depend on fates
        for (size_t i = 0; i < j && p; ++i) {
          if (persist[i]) continue;
          for (const auto& mine : ops[j].sets)
            for (const auto& theirs : ops[i].sets)
              if (mine.first == theirs.first) p = false;
        }
        persist[j] = p;
      }
      break;
    case CrashKind::tear_last:
      persist.assign(m, true);
      break;
  }
  return persist;
}

void realFsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) ioError("open directory", dir, errno);
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int e = errno;
    ::close(fd);
    ioError("fsync directory", dir, e);
  }
  ::close(fd);
}

namespace {

nlohmann::json summaryLocked(State& s) {
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> perInode;  // writes, bytes
  uint64_t totalBytes = 0;
  for (const PendingOp& op : s.pending) {
    auto& c = perInode[op.inode];
    c.first += 1;
    c.second += op.bytes.size();
    totalBytes += op.bytes.size();
  }
  nlohmann::json files = nlohmann::json::array();
  for (const auto& [key, cur] : s.current) {
    uint64_t dur = s.durable[key];
    auto it = perInode.find(cur);
    uint64_t writes = (cur != 0 && it != perInode.end()) ? it->second.first : 0;
    uint64_t bytes = (cur != 0 && it != perInode.end()) ? it->second.second : 0;
    if (writes == 0 && cur == dur) continue;
    files.push_back({{"file", key},
                     {"pendingWrites", writes},
                     {"pendingBytes", bytes},
                     {"nameDurable", cur == dur}});
  }
  nlohmann::json ns = nlohmann::json::array();
  for (const NsOp& op : s.nsOps) {
    nlohmann::json e = {{"op", op.op}, {"file", op.file}};
    if (!op.to.empty()) e["to"] = op.to;
    ns.push_back(std::move(e));
  }
  return {{"active", s.active},
          {"pendingWrites", s.pending.size()},
          {"pendingBytes", totalBytes},
          {"files", std::move(files)},
          {"namespace", std::move(ns)}};
}

nlohmann::json materialiseLocked(State& s, uint64_t seed, CrashKind kind) {
  std::mt19937_64 rng(seed);
  const size_t n = s.pending.size();
  const uint64_t sector = static_cast<uint64_t>(s.cfg.sectorSize);

  std::vector<bool> keep(n, false);
  switch (kind) {
    case CrashKind::drop_all:
      break;
    case CrashKind::keep_prefix: {
      size_t prefix = n == 0 ? 0 : static_cast<size_t>(rng() % (n + 1));
      for (size_t i = 0; i < prefix; ++i) keep[i] = true;
      break;
    }
    case CrashKind::keep_subset:
      for (size_t i = 0; i < n; ++i) keep[i] = (rng() & 1) != 0;
      break;
    case CrashKind::tear_last:
      for (size_t i = 0; i + 1 < n; ++i) keep[i] = true;
      break;
  }

  std::map<uint64_t, std::string> images;  // crash content of every inode with pending writes
  auto imageOf = [&](uint64_t id) -> std::string& {
    auto it = images.find(id);
    if (it == images.end()) it = images.emplace(id, s.inodes.at(id).durable).first;
    return it->second;
  };

  nlohmann::json writes = nlohmann::json::array();
  for (size_t i = 0; i < n; ++i) {
    const PendingOp& op = s.pending[i];
    std::string& img = imageOf(op.inode);
    const uint64_t length = op.bytes.size();
    const bool tear = kind == CrashKind::tear_last && i + 1 == n;
    if (!tear || op.truncate || length == 0) {
      if (keep[i]) applyOp(img, op);
      writes.push_back(opEntry(i, op, op.offset, length, keep[i] ? "kept" : "lost"));
      continue;
    }
    // Tear the last write into sector-aligned pieces.
    std::vector<std::pair<uint64_t, uint64_t>> pieces;  // absolute offset, length
    for (uint64_t pos = op.offset; pos < op.offset + length;) {
      uint64_t next = std::min(op.offset + length, (pos / sector + 1) * sector);
      pieces.emplace_back(pos, next - pos);
      pos = next;
    }
    const bool isAppend = op.offset >= img.size();
    const size_t cut = static_cast<size_t>(rng() % pieces.size());
    const bool garbageAllowed =
        s.cfg.device == Device::none || (s.cfg.device == Device::safe_append && !isAppend);
    const bool garbage = garbageAllowed && (rng() & 1) != 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
      auto [pos, len] = pieces[k];
      const char* src = op.bytes.data() + (pos - op.offset);
      std::string_view fate = "lost";
      if (k < cut) {
        applyWrite(img, pos, src, len);
        fate = "kept";
      } else if (k == cut && garbage) {
        std::string junk(len, '\0');
        for (uint64_t j = 0; j < len; ++j) {
          unsigned char oldByte =
              pos + j < img.size() ? static_cast<unsigned char>(img[pos + j]) : 0;
          unsigned char newByte = static_cast<unsigned char>(src[j]);
          auto g = static_cast<unsigned char>(rng() & 0xff);
          while (g == oldByte || g == newByte) ++g;
          junk[j] = static_cast<char>(g);
        }
        applyWrite(img, pos, junk.data(), len);
        fate = "garbage";
      }
      nlohmann::json e = opEntry(i, op, pos, len, fate);
      e["torn"] = true;
      writes.push_back(std::move(e));
    }
  }

  // Names: every path takes its durable name, changed by the pending name changes this crash
  // persists (only in the directories not synced since); content is the crash image of the
  // inode the name ends up with (its own data fate: a persisted rename over unsynced data names
  // lost or torn bytes).
  const std::vector<bool> persisted = namespaceFates(s.nsOps, kind, rng);
  std::map<std::string, uint64_t> names = s.durable;
  for (size_t j = 0; j < s.nsOps.size(); ++j) {
    if (!persisted[j]) continue;
    for (const auto& [name, inode] : s.nsOps[j].sets)
      if (s.nsOps[j].dirs.count(parentOf(name))) names[name] = inode;
  }
  nlohmann::json files = nlohmann::json::array();
  std::set<std::string> dirs;
  for (const auto& [key, cur] : s.current) {
    const uint64_t target = names[key];
    if (target == 0) {
      if (cur == 0) continue;
      if (::unlink(key.c_str()) != 0 && errno != ENOENT) ioError("unlink", key, errno);
      files.push_back({{"file", key}, {"state", "removed"}});
      dirs.insert(parentOf(key));
      continue;
    }
    auto img = images.find(target);
    if (target == cur && img == images.end()) continue;  // on disk == durable already
    const std::string& content = img != images.end() ? img->second : s.inodes.at(target).durable;
    writeWhole(key, content);
    files.push_back({{"file", key}, {"state", "written"}, {"size", content.size()}});
    dirs.insert(parentOf(key));
  }
  for (const std::string& d : dirs) realFsyncDir(d);

  nlohmann::json ns = nlohmann::json::array();
  for (size_t j = 0; j < s.nsOps.size(); ++j) {
    const NsOp& op = s.nsOps[j];
    nlohmann::json e = {
        {"op", op.op}, {"file", op.file}, {"fate", persisted[j] ? "persisted" : "undone"}};
    if (!op.to.empty()) e["to"] = op.to;
    ns.push_back(std::move(e));
  }

  nlohmann::json desc = {{"seed", seed},
                         {"kind", crashKindName(kind)},
                         {"device", deviceName(s.cfg.device)},
                         {"sectorSize", s.cfg.sectorSize},
                         {"pendingWrites", n},
                         {"writes", std::move(writes)},
                         {"namespace", std::move(ns)},
                         {"files", std::move(files)}};
  resetLocked(s);
  return desc;
}

}  // namespace
}  // namespace detail

using detail::State;

std::string_view deviceName(Device d) {
  switch (d) {
    case Device::none:
      return "none";
    case Device::atomic_sector:
      return "atomic";
    case Device::safe_append:
      return "safe_append";
  }
  return "none";
}

std::optional<Device> parseDevice(std::string_view s) {
  for (Device d : {Device::none, Device::atomic_sector, Device::safe_append}) {
    if (deviceName(d) == s) return d;
  }
  return std::nullopt;
}

std::string_view crashKindName(CrashKind k) {
  switch (k) {
    case CrashKind::drop_all:
      return "drop_all";
    case CrashKind::keep_prefix:
      return "keep_prefix";
    case CrashKind::keep_subset:
      return "keep_subset";
    case CrashKind::tear_last:
      return "tear_last";
  }
  return "drop_all";
}

std::optional<CrashKind> parseCrashKind(std::string_view s) {
  for (CrashKind k : {CrashKind::drop_all, CrashKind::keep_prefix, CrashKind::keep_subset,
                      CrashKind::tear_last}) {
    if (crashKindName(k) == s) return k;
  }
  return std::nullopt;
}

CrashKind kindForSeed(uint64_t seed) { return static_cast<CrashKind>(seed % 4); }

void activate(const Config& config) {
  if (config.sectorSize != 512 && config.sectorSize != 4096) {
    throw Error(code::powerloss_config_invalid,
                "sector size must be 512 or 4096, got " + std::to_string(config.sectorSize));
  }
  {
    State& s = detail::state();
    std::lock_guard lk(s.mu);
    detail::resetLocked(s);
    s.cfg = config;
    s.active = true;
  }
  detail::registerVfs();
}

void deactivate() {
  {
    State& s = detail::state();
    std::lock_guard lk(s.mu);
    detail::resetLocked(s);
    s.active = false;
  }
  detail::unregisterVfs();
  if (failpoints::powerlossCrashHook() == &crashNow) failpoints::setPowerlossCrashHook(nullptr);
}

bool active() {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  return s.active;
}

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

[[noreturn]] void badEnv(const char* name, const std::string& value, const char* expected) {
  throw Error(code::powerloss_config_invalid,
              std::string(name) + "=" + value + " is invalid; expected " + expected);
}

}  // namespace

bool installFromEnvironment() {
  if (env("CRASHSIM_POWERLOSS") != std::optional<std::string>("1")) return false;
  Config cfg;
  if (auto v = env("CRASHSIM_POWERLOSS_SEED")) {
    const char* end = v->data() + v->size();
    auto [p, ec] = std::from_chars(v->data(), end, cfg.seed);
    if (v->empty() || ec != std::errc() || p != end) {
      badEnv("CRASHSIM_POWERLOSS_SEED", *v, "a decimal uint64");
    }
  }
  if (auto v = env("CRASHSIM_POWERLOSS_DEVICE")) {
    auto d = parseDevice(*v);
    if (!d) badEnv("CRASHSIM_POWERLOSS_DEVICE", *v, "atomic|safe_append|none");
    cfg.device = *d;
  }
  if (auto v = env("CRASHSIM_POWERLOSS_KIND")) {
    auto k = parseCrashKind(*v);
    if (!k) badEnv("CRASHSIM_POWERLOSS_KIND", *v, "drop_all|keep_prefix|keep_subset|tear_last");
    cfg.kind = *k;
  }
  if (auto v = env("CRASHSIM_POWERLOSS_SECTOR")) {
    if (*v == "512") {
      cfg.sectorSize = 512;
    } else if (*v == "4096") {
      cfg.sectorSize = 4096;
    } else {
      badEnv("CRASHSIM_POWERLOSS_SECTOR", *v, "512|4096");
    }
  }
  if (auto v = env("CRASHSIM_POWERLOSS_STRICT_DIRSYNC")) {
    if (*v != "0" && *v != "1") badEnv("CRASHSIM_POWERLOSS_STRICT_DIRSYNC", *v, "0|1");
    cfg.strictDirSync = *v == "1";
  }
  if (auto v = env("CRASHSIM_POWERLOSS_LOG")) cfg.logPath = *v;
  activate(cfg);
  failpoints::setPowerlossCrashHook(&crashNow);  // the trigger calls it at the armed hit
  return true;
}

bool writeFile(const std::filesystem::path& path, std::string_view bytes, WriteOptions opts) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  const std::string key = s.active ? detail::normalise(path.string()) : path.string();
  uint64_t before = 0;
  if (s.active) before = detail::trackLocked(s, key);
  int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (opts.exclusive ? O_EXCL : 0);
  int fd = ::open(key.c_str(), flags, static_cast<mode_t>(opts.mode));
  if (fd < 0) {
    if (opts.exclusive && errno == EEXIST) return false;
    detail::ioError("open", key, errno);
  }
  try {
    detail::writeAllFd(fd, key, bytes.data(), bytes.size());
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) detail::ioError("close", key, errno);
  if (s.active) {
    uint64_t id = detail::createLocked(s, key);
    if (before != 0) detail::recordTruncateLocked(s, id, 0);
    detail::recordWriteLocked(s, id, 0, bytes.data(), bytes.size());
  }
  return true;
}

void appendFile(const std::filesystem::path& path, std::string_view bytes) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  const std::string key = s.active ? detail::normalise(path.string()) : path.string();
  if (s.active) detail::trackLocked(s, key);
  int fd = ::open(key.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) detail::ioError("open", key, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    detail::ioError("fstat", key, e);
  }
  try {
    detail::writeAllFd(fd, key, bytes.data(), bytes.size());
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) detail::ioError("close", key, errno);
  if (s.active) {
    uint64_t id = detail::createLocked(s, key);
    detail::recordWriteLocked(s, id, static_cast<uint64_t>(st.st_size), bytes.data(), bytes.size());
  }
}

void fsyncFile(const std::filesystem::path& path) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  const std::string key = s.active ? detail::normalise(path.string()) : path.string();
  detail::realFsyncFile(key);
  if (s.active) {
    auto it = s.current.find(key);
    if (it != s.current.end() && it->second != 0) detail::syncInodeLocked(s, it->second);
  }
}

void rename(const std::filesystem::path& from, const std::filesystem::path& to) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  const std::string fromKey = s.active ? detail::normalise(from.string()) : from.string();
  const std::string toKey = s.active ? detail::normalise(to.string()) : to.string();
  if (s.active) {
    detail::trackLocked(s, fromKey);
    detail::trackLocked(s, toKey);
  }
  if (::rename(fromKey.c_str(), toKey.c_str()) != 0) {
    detail::ioError("rename", fromKey + " -> " + toKey, errno);
  }
  if (s.active) detail::renameLocked(s, fromKey, toKey);
}

void removeFile(const std::filesystem::path& path) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  const std::string key = s.active ? detail::normalise(path.string()) : path.string();
  if (s.active) detail::trackLocked(s, key);
  if (::unlink(key.c_str()) != 0) detail::ioError("unlink", key, errno);
  if (s.active) detail::removeLocked(s, key);
}

void fsyncDir(const std::filesystem::path& dir) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  const std::string key = s.active ? detail::normalise(dir.string()) : dir.string();
  detail::realFsyncDir(key);
  if (s.active) detail::syncDirLocked(s, key);
}

nlohmann::json materialiseCrashState(uint64_t seed, CrashKind kind) {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  if (!s.active) return {{"active", false}};
  return detail::materialiseLocked(s, seed, kind);
}

nlohmann::json materialiseCrashState(uint64_t seed) {
  return materialiseCrashState(seed, kindForSeed(seed));
}

nlohmann::json pendingSummary() {
  State& s = detail::state();
  std::lock_guard lk(s.mu);
  return detail::summaryLocked(s);
}

[[noreturn]] void crashNow() {
  State& s = detail::state();
  // Never unlocked: after the crash state is on disk no VFS or file-model write may get through.
  s.mu.lock();
  if (s.active) {
    nlohmann::json desc;
    try {
      nlohmann::json before = detail::summaryLocked(s);
      desc = detail::materialiseLocked(s, s.cfg.seed, s.cfg.kind.value_or(kindForSeed(s.cfg.seed)));
      desc["pendingBefore"] = std::move(before);
    } catch (const std::exception& e) {
      desc = {{"error", e.what()}, {"seed", s.cfg.seed}};
    }
    if (!s.cfg.logPath.empty()) {
      const std::string log = s.cfg.logPath.string();
      const std::string line = desc.dump() + "\n";
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        try {
          detail::writeAllFd(fd, log, line.data(), line.size());
        } catch (...) {
        }
        ::fsync(fd);
        ::close(fd);
        try {
          detail::realFsyncDir(detail::parentOf(detail::normalise(log)));
        } catch (...) {
        }
      }
    }
  }
  ::raise(SIGKILL);
  for (;;) ::pause();
}

}  // namespace crashsim::powerloss
