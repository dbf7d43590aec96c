// durable_fs.cpp — the POSIX DurableFs and the process-wide selection (crashsim/durable_fs.h).
// Its own room (durable/): the workspace tools and the store manifest both write through it.
#include "crashsim/durable_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {
namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int err) {
  throw Error(code::tool_execution_failed, what + " " + path.string() + ": " + std::strerror(err));
}

void fsyncPath(const std::filesystem::path& path, int flags, const char* what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) fail(what, path, errno);
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(what, path, err);
  }
  ::close(fd);
}

class PosixDurableFs final : public DurableFs {
 public:
  bool createFile(const std::filesystem::path& path, std::string_view bytes,
                  unsigned mode) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                          static_cast<mode_t>(mode));
    if (fd < 0) {
      if (errno == EEXIST) return false;
      fail("cannot create", path, errno);
    }
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        fail("write", path, err);
      }
      done += static_cast<size_t>(n);
    }
    if (::close(fd) != 0) fail("close", path, errno);
    return true;
  }
  void fsyncFile(const std::filesystem::path& path) override {
    fsyncPath(path, O_RDONLY | O_NOFOLLOW, "fsync");
  }
  void rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      fail("rename " + from.string() + " onto", to, errno);
  }
  void removeFile(const std::filesystem::path& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) fail("unlink", path, errno);
  }
  void fsyncDir(const std::filesystem::path& dir) override {
    fsyncPath(dir, O_RDONLY | O_DIRECTORY, "fsync directory");
  }
};

DurableFs* gCurrent = nullptr;

}  // namespace

DurableFs& posixDurableFs() {
  static PosixDurableFs fs;
  return fs;
}

DurableFs& durableFs() { return gCurrent ? *gCurrent : posixDurableFs(); }

void setDurableFs(DurableFs* fs) { gCurrent = fs; }

}  // namespace crashsim
