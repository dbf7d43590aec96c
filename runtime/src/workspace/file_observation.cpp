// Workspace file observation and tool path resolution (durable file evidence, spec i).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "crashsim/codes.h"
#include "crashsim/error.h"
#include "crashsim/hashing.h"
#include "crashsim/workspace.h"

namespace crashsim {
namespace fs = std::filesystem;

Json toJson(const FileState& state) {
  if (!state.exists) return Json{{"exists", false}};
  return Json{{"exists", true}, {"size", state.size}, {"sha256", state.sha256}};
}

FileState fileStateOf(std::string_view bytes) {
  return FileState{true, bytes.size(), sha256Digest(bytes)};
}

namespace {

[[noreturn]] void refuse(std::string_view relative, const std::string& why) {
  throw Error(code::invalid_workspace_path,
              "path '" + std::string(relative) + "' is refused: " + why);
}

bool isUnder(const fs::path& root, const fs::path& p) {
  const std::string r = root.string();
  const std::string s = p.string();
  if (s == r) return true;
  const std::string prefix = r == "/" ? r : r + "/";
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

WorkspacePath resolveWorkspacePath(const fs::path& root, std::string_view relative) {
  if (relative.empty()) refuse(relative, "empty path");
  if (relative.front() == '/') refuse(relative, "absolute paths are not allowed");
  if (relative.find('\0') != std::string_view::npos) refuse(relative, "NUL byte");
  const fs::path rel(std::string{relative});
  for (const auto& part : rel) {
    if (part == "..") refuse(relative, "'..' escapes the workspace");
  }
  const fs::path normal = rel.lexically_normal();
  if (normal.empty() || normal == "." || !normal.has_filename()) {
    refuse(relative, "does not name a file");
  }
  if (normal.filename() == std::string(kWorkspaceMarkerName)) {
    refuse(relative, "the workspace identity marker is not a tool target");
  }
  const fs::path parent = root / normal.parent_path();
  char* resolved = ::realpath(parent.c_str(), nullptr);
  if (resolved == nullptr) refuse(relative, "parent directory does not exist");
  const fs::path realParent(resolved);
  std::free(resolved);
  if (!isUnder(root, realParent)) refuse(relative, "resolves outside the workspace (symlink)");
  const fs::path absolute = realParent / normal.filename();
  struct stat st {};
  if (::lstat(absolute.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) refuse(relative, "target is a symbolic link");
    if (!S_ISREG(st.st_mode)) refuse(relative, "target is not a regular file");
  } else if (errno != ENOENT) {
    refuse(relative, std::string("cannot stat target: ") + std::strerror(errno));
  }
  std::string canonicalRel = absolute.lexically_relative(root).generic_string();
  return WorkspacePath{canonicalRel, absolute};
}

FileState observeFile(const fs::path& absolute, uint64_t maxBytes, std::string* contentOut) {
  const int fd = ::open(absolute.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) {
      if (contentOut) contentOut->clear();
      return FileState{};
    }
    throw Error(code::workspace_io_failed,
                "cannot open " + absolute.string() + ": " + std::strerror(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw Error(code::workspace_io_failed, absolute.string() + " is not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > maxBytes) {
    throw Error(code::workspace_io_failed, absolute.string() + " exceeds the observation bound");
  }
  std::string bytes;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(code::workspace_io_failed,
                  "cannot read " + absolute.string() + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > maxBytes) {
      throw Error(code::workspace_io_failed, absolute.string() + " exceeds the observation bound");
    }
  }
  FileState state = fileStateOf(bytes);
  if (contentOut) *contentOut = std::move(bytes);
  return state;
}

}  // namespace crashsim
