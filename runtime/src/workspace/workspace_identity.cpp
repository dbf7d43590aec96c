// Workspace identity marker (spec h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <regex>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/workspace.h"
#include "workspace/process.h"

namespace crashsim {
namespace fs = std::filesystem;

namespace {

constexpr size_t kExcludeMaxBytes = 1u << 20;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void ioFailed(const std::string& what, int err) {
  throw Error(code::workspace_io_failed, what + ": " + std::strerror(err));
}

[[noreturn]] void badMarker(const fs::path& file, const std::string& why) {
  throw Error(code::invalid_workspace_marker,
              "workspace marker " + file.string() + " is invalid: " + why);
}

void fsyncFd(int fd, const std::string& what) {
  if (::fsync(fd) != 0) ioFailed("fsync " + what, errno);
}

std::string randomUuidV4() {
  std::random_device rd;  // getrandom(2)
  uint8_t b[16];
  for (size_t i = 0; i < 16; i += 4) {
    const uint32_t v = rd();
    std::memcpy(b + i, &v, 4);
  }
  b[6] = static_cast<uint8_t>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<uint8_t>((b[8] & 0x3f) | 0x80);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex[b[i] >> 4]);
    out.push_back(hex[b[i] & 0xf]);
  }
  return out;
}

WorkspaceIdentity identityFor(const fs::path& root, const std::string& uuid, bool created) {
  return WorkspaceIdentity{root, uuid, "workspace:v1:" + uuid, created};
}

// Git hygiene: true when `root` lies inside a Git worktree (a `.git` entry in it or above).
bool insideGitWorktree(const fs::path& root) {
  for (fs::path p = root;; p = p.parent_path()) {
    std::error_code ec;
    if (fs::exists(p / ".git", ec)) return true;
    if (p == p.root_path() || p.parent_path() == p) return false;
  }
}

void ensureGitExclude(const fs::path& root, const EnsureWorkspaceOptions& options) {
  if (!insideGitWorktree(root)) return;
  const std::string git = options.gitExecutable.empty() ? "git" : options.gitExecutable;
  auto r =
      detail::runProcess(git, {"rev-parse", "--path-format=absolute", "--git-path", "info/exclude"},
                         root, std::chrono::seconds(10));
  if (!r.started) {
    throw Error(code::workspace_io_failed,
                "workspace lies in a Git worktree but git is unavailable: " + r.spawnError);
  }
  if (r.timedOut || r.exitCode != 0) {
    throw Error(code::workspace_io_failed,
                "git rev-parse --git-path info/exclude failed in " + root.string() + ": " + r.err);
  }
  std::string excludePath = r.out;
  while (!excludePath.empty() && (excludePath.back() == '\n' || excludePath.back() == '\r'))
    excludePath.pop_back();
  if (excludePath.empty() || excludePath.front() != '/') {
    throw Error(code::workspace_io_failed,
                "git rev-parse returned no absolute info/exclude path: '" + excludePath + "'");
  }
  const fs::path exclude(excludePath);
  std::error_code ec;
  fs::create_directories(exclude.parent_path(), ec);
  if (ec) ioFailed("create " + exclude.parent_path().string(), ec.value());

  Fd fd(::open(exclude.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) ioFailed("open " + exclude.string(), errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) ioFailed("stat " + exclude.string(), errno);
  if (!S_ISREG(st.st_mode)) {
    throw Error(code::workspace_io_failed, exclude.string() + " is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > kExcludeMaxBytes) {
    throw Error(code::workspace_io_failed,
                exclude.string() + " is larger than 1 MiB; refusing to extend it");
  }
  std::string content(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (got < content.size()) {
    ssize_t n =
        ::pread(fd.get(), content.data() + got, content.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ioFailed("read " + exclude.string(), errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  content.resize(got);
  // Already excluded (once)?
  size_t start = 0;
  while (start <= content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) end = content.size();
    std::string_view line(content.data() + start, end - start);
    if (line == kWorkspaceMarkerName || line == "/" + std::string(kWorkspaceMarkerName)) return;
    start = end + 1;
  }
  std::string append;
  if (!content.empty() && content.back() != '\n') append.push_back('\n');
  append += std::string(kWorkspaceMarkerName) + "\n";
  if (content.size() + append.size() > kExcludeMaxBytes) {
    throw Error(code::workspace_io_failed, exclude.string() + " is full (1 MiB bound)");
  }
  const ssize_t n = ::write(fd.get(), append.data(), append.size());
  if (n != static_cast<ssize_t>(append.size())) ioFailed("append " + exclude.string(), errno);
  fsyncFd(fd.get(), exclude.string());
}

}  // namespace

fs::path canonicalWorkspaceRoot(const fs::path& path) {
  if (path.empty()) throw Error(code::workspace_not_found, "workspace path is empty");
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  if (ec) ioFailed("resolve " + path.string(), ec.value());
  char* resolved = ::realpath(absolute.c_str(), nullptr);
  if (resolved == nullptr) {
    const int err = errno;
    if (err == ENOENT) {
      throw Error(code::workspace_not_found, "workspace " + path.string() + " does not exist");
    }
    if (err == ENOTDIR) {
      throw Error(code::invalid_workspace, "workspace " + path.string() + " is not a directory");
    }
    ioFailed("realpath " + path.string(), err);
  }
  std::string canonical(resolved);
  std::free(resolved);
  while (canonical.size() > 1 && canonical.back() == '/') canonical.pop_back();
  struct stat st {};
  if (::stat(canonical.c_str(), &st) != 0) ioFailed("stat " + canonical, errno);
  if (!S_ISDIR(st.st_mode)) {
    throw Error(code::invalid_workspace, "workspace " + canonical + " is not a directory");
  }
  return fs::path(canonical);
}

bool isValidWorkspaceUuid(std::string_view text) {
  static const std::regex re(
      "^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
      std::regex::icase | std::regex::ECMAScript);
  return std::regex_match(text.begin(), text.end(), re);
}

std::string workspaceMarkerContent(std::string_view uuid) {
  // Key order as JSON.stringify({schemaVersion:1, workspaceId}) writes it.
  Json marker = Json::object();
  marker["schemaVersion"] = 1;
  marker["workspaceId"] = std::string(uuid);
  return marker.dump() + "\n";  // nlohmann's default object is sorted: schemaVersion < workspaceId
}

std::optional<WorkspaceIdentity> readWorkspaceIdentity(const fs::path& path) {
  const fs::path root = canonicalWorkspaceRoot(path);
  const fs::path file = root / std::string(kWorkspaceMarkerName);
  Fd fd(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return std::nullopt;
    if (err == ELOOP) badMarker(file, "it is a symbolic link");
    ioFailed("open " + file.string(), err);
  }
  struct stat fdStat {
  }, pathStat{};
  if (::fstat(fd.get(), &fdStat) != 0) ioFailed("stat " + file.string(), errno);
  if (!S_ISREG(fdStat.st_mode)) badMarker(file, "it is not a regular file");
  if (::lstat(file.c_str(), &pathStat) != 0) ioFailed("lstat " + file.string(), errno);
  if (fdStat.st_dev != pathStat.st_dev || fdStat.st_ino != pathStat.st_ino) {
    badMarker(file, "the opened file and the path disagree on dev/ino");
  }
  if (static_cast<uint64_t>(fdStat.st_size) > kWorkspaceMarkerMaxBytes) {
    badMarker(file, "it is larger than 4096 bytes");
  }
  std::string bytes(kWorkspaceMarkerMaxBytes + 1, '\0');
  size_t got = 0;
  for (;;) {
    ssize_t n = ::read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ioFailed("read " + file.string(), errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > kWorkspaceMarkerMaxBytes) badMarker(file, "it is larger than 4096 bytes");
  }
  bytes.resize(got);
  Json marker;
  try {
    marker = parseJson(bytes);
  } catch (const std::exception&) {
    badMarker(file, "it is not valid JSON");
  }
  if (!marker.is_object() || marker.size() != 2 || !marker.contains("schemaVersion") ||
      !marker.contains("workspaceId")) {
    badMarker(file, "it must be an object with exactly schemaVersion and workspaceId");
  }
  const Json& version = marker["schemaVersion"];
  if (!version.is_number() || version.get<double>() != 1.0) {
    badMarker(file, "schemaVersion must be 1");
  }
  const Json& id = marker["workspaceId"];
  if (!id.is_string() || !isValidWorkspaceUuid(id.get<std::string>())) {
    badMarker(file, "workspaceId is not a UUID");
  }
  return identityFor(root, id.get<std::string>(), false);
}

WorkspaceIdentity ensureWorkspaceIdentity(const fs::path& path,
                                          const EnsureWorkspaceOptions& options) {
  const fs::path root = canonicalWorkspaceRoot(path);
  if (auto existing = readWorkspaceIdentity(root)) return *existing;

  Fd dirFd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirFd.get() < 0) ioFailed("open workspace " + root.string(), errno);
  struct stat dirStat {};
  if (::fstat(dirFd.get(), &dirStat) != 0) ioFailed("stat workspace " + root.string(), errno);

  // Git hygiene first: on failure, no marker is published.
  ensureGitExclude(root, options);

  const std::string uuid = randomUuidV4();
  const std::string content = workspaceMarkerContent(uuid);
  const std::string tempName =
      std::string(kWorkspaceMarkerName) + "." + randomUuidV4().substr(0, 8) + ".tmp";
  Fd tmp(::openat(dirFd.get(), tempName.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (tmp.get() < 0) ioFailed("create temp marker in " + root.string(), errno);
  auto removeTemp = [&] { ::unlinkat(dirFd.get(), tempName.c_str(), 0); };
  try {
    if (::write(tmp.get(), content.data(), content.size()) !=
        static_cast<ssize_t>(content.size())) {
      ioFailed("write temp marker", errno);
    }
    fsyncFd(tmp.get(), "temp marker");
    if (options.beforePublish) options.beforePublish();
    struct stat now {};
    if (::stat(root.c_str(), &now) != 0 || now.st_dev != dirStat.st_dev ||
        now.st_ino != dirStat.st_ino) {
      throw Error(code::workspace_identity_changed,
                  "workspace directory " + root.string() + " changed while publishing its marker");
    }
    if (::linkat(dirFd.get(), tempName.c_str(), dirFd.get(),
                 std::string(kWorkspaceMarkerName).c_str(), 0) != 0) {
      if (errno != EEXIST) ioFailed("publish marker in " + root.string(), errno);
      // Someone else published first: the existing marker is authoritative.
    }
  } catch (...) {
    removeTemp();
    throw;
  }
  removeTemp();
  fsyncFd(dirFd.get(), root.string());
  auto published = readWorkspaceIdentity(root);
  if (!published) {
    throw Error(code::workspace_io_failed,
                "workspace marker vanished after publish in " + root.string());
  }
  published->created = published->workspaceId == uuid;
  return *published;
}

}  // namespace crashsim
