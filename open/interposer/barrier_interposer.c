/* libcrashsim_barrier_interposer.so — the barrier interposer of the open harness (protocol
 * section 4, docs/open-harness.md). Preloaded into a runtime (LD_PRELOAD; children inherit it),
 * it counts the durability barriers the runtime's process tree calls through libc:
 *   fsync, fdatasync, sync_file_range, msync with MS_SYNC, rename, renameat, renameat2
 * and forwards each to the next definition (dlsym(RTLD_NEXT)). Static binaries and raw
 * syscalls bypass it (the report must say so: the loaded-process count below is 0 then).
 *
 * Environment (all optional):
 *   CRASHSIM_BARRIER_COUNTER=<file>  the shared counter of the whole process tree: the file is
 *       created (16 bytes) and mapped MAP_SHARED; slot 0 counts barriers, slot 1 the processes
 *       that loaded the interposer (each exec'd image once; a fork shares its parent's count).
 *       Increments are atomic read-modify-writes on the shared mapping, so concurrent processes
 *       never lose a count. Without it each process counts alone.
 *   CRASHSIM_ARM=S:<n>               arm the n-th barrier (n >= 1) of the tree: the process that
 *       reaches it writes {"failpoint":"S","hit":n,"pid":N} and a newline to the control fd and
 *       blocks until killed, BEFORE the barrier runs; every later barrier of the tree blocks
 *       too (silently), so nothing durable happens after the armed point. An arming of another
 *       id (a level-1 runtime's own "P4:1") is not ours and is ignored.
 *   CRASHSIM_CONTROL_FD=<fd>         where the line goes (default 2). When that fd is not open
 *       in this process (runtimes that close inherited fds in their children), the line goes to
 *       CRASHSIM_CONTROL_FILE=<path> (opened O_APPEND) if set.
 *   CRASHSIM_BARRIER_HITS_OUT=<file> at each normal process exit, {"S":<tree count>,
 *       "processes":<loaded processes>,"interposer":"loaded"} replaces the file (the last
 *       process to exit writes the final count). Not CRASHSIM_HITS_OUT: a level-1 runtime
 *       writes its own named points' counts there.
 * Built without sanitizers: a sanitized preload library aborts uninstrumented hosts. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t g_local[2]; /* the counters without CRASHSIM_BARRIER_COUNTER */
static uint64_t* g_counter = g_local;
static uint64_t g_arm_hit; /* 0: unarmed */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off64_t, off64_t, unsigned int);
static int (*real_msync)(void*, size_t, int);
static int (*real_rename)(const char*, const char*);
static int (*real_renameat)(int, const char*, int, const char*);
static int (*real_renameat2)(int, const char*, int, const char*, unsigned int);

static void resolve(void) {
  real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  real_sync_file_range =
      (int (*)(int, off64_t, off64_t, unsigned int))dlsym(RTLD_NEXT, "sync_file_range");
  real_msync = (int (*)(void*, size_t, int))dlsym(RTLD_NEXT, "msync");
  real_rename = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  real_renameat = (int (*)(int, const char*, int, const char*))dlsym(RTLD_NEXT, "renameat");
  real_renameat2 =
      (int (*)(int, const char*, int, const char*, unsigned int))dlsym(RTLD_NEXT, "renameat2");

  const char* arm = getenv("CRASHSIM_ARM");
  if (arm != NULL && arm[0] == 'S' && arm[1] == ':') {
    char* end = NULL;
    const unsigned long long n = strtoull(arm + 2, &end, 10);
    if (end != arm + 2 && *end == '\0' && n > 0) g_arm_hit = n;
  }
  const char* path = getenv("CRASHSIM_BARRIER_COUNTER");
  if (path != NULL && *path != '\0') {
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 &&
        (st.st_size >= (off_t)sizeof g_local || ftruncate(fd, sizeof g_local) == 0)) {
      void* map = mmap(NULL, sizeof g_local, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (map != MAP_FAILED) g_counter = (uint64_t*)map;
    }
    if (fd >= 0) close(fd);
  }
}

static void init(void) { pthread_once(&g_once, resolve); }

static void write_all(int fd, const char* text, size_t len) {
  while (len > 0) {
    const ssize_t n = write(fd, text, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text += n;
    len -= (size_t)n;
  }
}

static void block_forever(void) {
  for (;;) pause();
}

/* Counts one barrier; reports and blocks at the armed one and blocks after it. */
static void barrier(void) {
  init();
  const uint64_t n = __atomic_add_fetch(&g_counter[0], 1, __ATOMIC_SEQ_CST);
  if (g_arm_hit == 0 || n < g_arm_hit) return;
  if (n > g_arm_hit) block_forever();
  char line[128];
  const int len = snprintf(line, sizeof line, "{\"failpoint\":\"S\",\"hit\":%llu,\"pid\":%ld}\n",
                           (unsigned long long)n, (long)getpid());
  int fd = 2;
  const char* fdText = getenv("CRASHSIM_CONTROL_FD");
  if (fdText != NULL && *fdText != '\0') fd = atoi(fdText);
  if (fcntl(fd, F_GETFD) < 0) {
    const char* file = getenv("CRASHSIM_CONTROL_FILE");
    fd = file != NULL ? open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
  }
  if (fd >= 0 && len > 0) write_all(fd, line, (size_t)len);
  block_forever();
}

__attribute__((constructor)) static void on_load(void) {
  init();
  __atomic_add_fetch(&g_counter[1], 1, __ATOMIC_SEQ_CST);
}

__attribute__((destructor)) static void on_exit_write_hits(void) {
  const char* out = getenv("CRASHSIM_BARRIER_HITS_OUT");
  if (out == NULL || *out == '\0') return;
  char text[160];
  const int len =
      snprintf(text, sizeof text, "{\"S\":%llu,\"processes\":%llu,\"interposer\":\"loaded\"}\n",
               (unsigned long long)__atomic_load_n(&g_counter[0], __ATOMIC_SEQ_CST),
               (unsigned long long)__atomic_load_n(&g_counter[1], __ATOMIC_SEQ_CST));
  const int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (len > 0) write_all(fd, text, (size_t)len);
  close(fd);
}

int fsync(int fd) {
  barrier();
  return real_fsync(fd);
}

int fdatasync(int fd) {
  barrier();
  return real_fdatasync(fd);
}

int sync_file_range(int fd, off64_t offset, off64_t nbytes, unsigned int flags) {
  barrier();
  return real_sync_file_range(fd, offset, nbytes, flags);
}

int msync(void* addr, size_t length, int flags) {
  if (flags & MS_SYNC)
    barrier();
  else
    init();
  return real_msync(addr, length, flags);
}

int rename(const char* from, const char* to) {
  barrier();
  return real_rename(from, to);
}

int renameat(int fromDir, const char* from, int toDir, const char* to) {
  barrier();
  return real_renameat(fromDir, from, toDir, to);
}

int renameat2(int fromDir, const char* from, int toDir, const char* to, unsigned int flags) {
  barrier();
  return real_renameat2(fromDir, from, toDir, to, flags);
}
