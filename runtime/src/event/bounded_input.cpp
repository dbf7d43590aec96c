// Bounded whole-input reads (crashsim/bounded_input.h).
#include "crashsim/bounded_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {

namespace {

[[noreturn]] void tooLarge(const std::string& name, size_t maxBytes) {
  throw Error(code::input_too_large, name + " is larger than " +
                                         (maxBytes >= (1u << 20) && maxBytes % (1u << 20) == 0
                                              ? std::to_string(maxBytes >> 20) + " MiB"
                                              : std::to_string(maxBytes) + " bytes"));
}

const char* kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::string readBoundedFile(const std::filesystem::path& file, size_t maxBytes) {
  const std::string name = file.string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    throw Error(code::input_unreadable, "cannot read " + name + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw Error(code::input_unreadable, "cannot stat " + name + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(code::input_unreadable,
                name + " is " + kindOf(st.st_mode) + ", not a regular file");
  if (static_cast<uint64_t>(st.st_size) > maxBytes) tooLarge(name, maxBytes);
  std::string text(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (got > maxBytes) tooLarge(name, maxBytes);
      text.resize(std::min(maxBytes + 1, text.size() * 2));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(code::input_unreadable, "cannot read " + name + ": " + std::strerror(errno));
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > maxBytes) tooLarge(name, maxBytes);
  text.resize(got);
  return text;
}

std::string readBoundedStream(std::istream& in, size_t maxBytes, const std::string& name) {
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > maxBytes) tooLarge(name, maxBytes);
  }
  if (in.bad()) throw Error(code::input_unreadable, "cannot read " + name);
  return text;
}

}  // namespace crashsim
