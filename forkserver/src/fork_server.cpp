#include "crashsim/fork_server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace crashsim {
namespace {

constexpr size_t kMaxRequest = 1 << 20;
constexpr int kMaxFds = 3;

void reply(int fd, const std::string& text) {
  while (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

// The NUL-terminated strings in [begin, end) up to (not including) an empty one; `begin` is left
// after that empty string (or at `end`).
std::vector<char*> strings(char*& begin, char* end) {
  std::vector<char*> out;
  while (begin < end) {
    char* s = begin;
    const size_t n = ::strnlen(s, static_cast<size_t>(end - s));
    begin = s + n + 1;
    if (n == 0) break;
    out.push_back(s);
  }
  return out;
}

// In the forked child: fds 0–3 as an exec'd agent has them, the given environment only, then
// the agent's main. Never returns.
[[noreturn]] void becomeAgent(std::vector<int> fds, std::vector<char*> argv,
                              const std::vector<char*>& env, int (*agentMain)(int, char**)) {
  const int devNull = ::open("/dev/null", O_RDWR);
  fds.insert(fds.begin(), devNull);
  // Lift every fd above the targets first, so that no dup2 clobbers one still to be placed.
  std::vector<int> high;
  for (int f : fds) high.push_back(f < 0 ? -1 : ::fcntl(f, F_DUPFD, 16));
  for (size_t i = 0; i < high.size(); ++i)
    if (high[i] < 0 || ::dup2(high[i], static_cast<int>(i)) < 0) _exit(127);
  ::close_range(static_cast<unsigned>(high.size()), ~0U, 0);
  ::clearenv();
  for (char* kv : env) ::putenv(kv);
  argv.push_back(nullptr);
  std::exit(agentMain(static_cast<int>(argv.size() - 1), argv.data()));
}

void spawn(int fd, char* begin, char* end, std::vector<int>& fds, int (*agentMain)(int, char**)) {
  std::vector<char*> argv = strings(begin, end);
  const std::vector<char*> env = strings(begin, end);
  if (argv.empty() || fds.size() < 2) return reply(fd, "error malformed spawn request");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) becomeAgent(fds, argv, env, agentMain);
  if (pid < 0) return reply(fd, std::string("error fork: ") + std::strerror(errno));
  reply(fd, "pid " + std::to_string(pid));
}

void wait(int fd, const char* pidText) {
  const pid_t pid = static_cast<pid_t>(std::atoi(pidText));
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (got < 0) return reply(fd, std::string("error waitpid: ") + std::strerror(errno));
  reply(fd, "status " + std::to_string(status));
}

}  // namespace

int serveForkRequests(const char* program, int (*agentMain)(int, char**), void (*warmUp)()) {
  constexpr int fd = 3;
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET) {
    std::fprintf(stderr,
                 "%s: serve: fd 3 is not a SOCK_SEQPACKET socket (the harness starts the "
                 "server)\n",
                 program);
    return 2;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() == 1) return 0;  // the harness is already gone
  if (warmUp != nullptr) warmUp();
  reply(fd, "ready");
  std::vector<char> buf(kMaxRequest + 1);
  for (;;) {
    iovec io{buf.data(), kMaxRequest};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0 ? 0 : 1;  // EOF: the harness closed its end
    std::vector<int> fds;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
          int f;
          std::memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
          fds.push_back(f);
        }
    buf[static_cast<size_t>(n)] = '\0';
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0)
      reply(fd, "error request too large");
    else if (n >= 2 && buf[0] == 'S' && buf[1] == '\0')
      spawn(fd, buf.data() + 2, buf.data() + n, fds, agentMain);
    else if (buf[0] == 'W')
      wait(fd, buf.data() + 1);
    else
      reply(fd, "error unknown request");
    for (int f : fds) ::close(f);
  }
}

}  // namespace crashsim
