#include "workspace/process.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>
#include <future>

namespace crashsim::detail {

namespace bp = boost::process;

ProcessResult runProcess(const std::string& executable, const std::vector<std::string>& args,
                         const std::filesystem::path& cwd, std::chrono::milliseconds timeout,
                         size_t maxOutputBytes, const ProcessCancel* cancel) {
  ProcessSpec spec;
  spec.executable = executable;
  spec.args = args;
  spec.cwd = cwd;
  spec.timeout = timeout;
  spec.maxOutputBytes = maxOutputBytes;
  spec.cancel = cancel;
  return runProcess(spec);
}

namespace {

// The executable: a path as given, a bare name searched on PATH (empty: not found).
boost::filesystem::path resolveExecutable(const std::string& executable) {
  if (executable.find('/') == std::string::npos) return bp::search_path(executable);
  return executable;
}

// Runs the child's I/O until it ends, the timeout passes (the whole group killed: timedOut) or a
// Stop is requested (SIGTERM to the whole group, SIGKILL if it still holds its output after the
// grace: cancelled).
void awaitChild(boost::asio::io_context& ios, bp::group& group, int pgid, const ProcessSpec& spec,
                ProcessResult& result) {
  const ProcessCancel* cancel = spec.cancel;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + spec.timeout;
  constexpr auto kPoll = std::chrono::milliseconds(5);
  while (!ios.stopped() && Clock::now() < deadline) {
    if (cancel && cancel->requested && cancel->requested()) {
      result.cancelled = true;
      break;
    }
    ios.run_for(cancel ? kPoll : deadline - Clock::now());
  }
  if (result.cancelled && !ios.stopped()) {
    ::killpg(pgid, SIGTERM);
    ios.run_for(cancel->killGrace);
    if (!ios.stopped()) {
      std::error_code ec;
      group.terminate(ec);
      ios.run_for(std::chrono::seconds(1));
    }
  } else if (!ios.stopped()) {
    // Pipes still open after the bound: kill the child and drain what is left.
    std::error_code ec;
    group.terminate(ec);
    result.timedOut = true;
    ios.run_for(std::chrono::seconds(1));
  }
}

// While it lives, a write of this thread to a pipe whose reader is gone fails with EPIPE instead
// of killing the whole process with SIGPIPE: the stdin data of a child that exits before reading
// it all (a git that refuses its arguments) is written by asio on this thread. SIGPIPE is blocked
// for this thread only and a SIGPIPE the writes raised is consumed before the mask is restored,
// as libraries that write to pipes do; the process's disposition is left alone (a child's own
// SIGPIPE, after exec, is the default).
class SigpipeToEpipe {
 public:
  SigpipeToEpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    wasPending_ = sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~SigpipeToEpipe() {
    if (!wasPending_) {
      const timespec now{0, 0};
      while (::sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeToEpipe(const SigpipeToEpipe&) = delete;
  SigpipeToEpipe& operator=(const SigpipeToEpipe&) = delete;

 private:
  sigset_t pipe_{}, previous_{};
  bool wasPending_ = false;
};

}  // namespace

ProcessResult runProcess(const ProcessSpec& spec) {
  const std::vector<std::string>& args = spec.args;
  const std::filesystem::path& cwd = spec.cwd;
  const size_t maxOutputBytes = spec.maxOutputBytes;
  const ProcessCancel* cancel = spec.cancel;
  ProcessResult result;
  const boost::filesystem::path exe = resolveExecutable(spec.executable);
  if (exe.empty()) {
    result.spawnError = spec.executable + " not found on PATH";
    return result;
  }
  boost::asio::io_context ios;
  std::future<std::string> out, err;
  try {
    const SigpipeToEpipe quiet;  // asio may write the stdin data as early as the spawn
    bp::group group;             // the whole process tree is killed on timeout
    bp::environment env = boost::this_process::environment();
    if (spec.env) {
      env.clear();
      for (const auto& [k, v] : *spec.env) env[k] = v;
    }
    // The child is started by vfork (no copy of the parent's page tables: a fork of a large or
    // sanitized host cost more than the git command it ran). As glibc's posix_spawn does, every
    // signal is blocked across the vfork, so no handler of the parent runs in the child while it
    // shares the parent's memory; the child resets caught signals to their default before it
    // unblocks. It then starts with no signal blocked: a host that takes SIGINT/SIGTERM in a
    // dedicated thread (crashsim-agent's Stop listener) blocks them, and the mask survives exec.
    const pid_t parent = ::getpid();
    auto setup = [parent, die = spec.dieWithParent](auto&) {
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction current {};
        // SIGPIPE too when ignored: a host ignores it (crashsim-agent does) and SIG_IGN
        // survives exec, where a shell pipeline's writer must die of it.
        if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_DFL &&
            (current.sa_handler != SIG_IGN || sig == SIGPIPE))
          ::sigaction(sig, &dfl, nullptr);
      }
      sigset_t none;
      sigemptyset(&none);
      ::pthread_sigmask(SIG_SETMASK, &none, nullptr);
      if (die) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
      }
    };
    auto spawn = [&](auto&& in) {
      sigset_t all, previous;
      sigfillset(&all);
      ::pthread_sigmask(SIG_SETMASK, &all, &previous);
      struct RestoreMask {
        const sigset_t& mask;
        ~RestoreMask() { ::pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
      } restore{previous};
      return bp::child(exe, bp::args(args), bp::start_dir(cwd.string()), std::move(in), env,
                       bp::std_out > out, bp::std_err > err, ios, group, bp::posix::use_vfork,
                       bp::extend::on_exec_setup = setup);
    };
    bp::child child = spec.stdinData.empty()
                          ? spawn(bp::std_in.close())
                          : spawn(bp::std_in < boost::asio::buffer(spec.stdinData));
    result.started = true;
    if (spec.afterSpawn) spec.afterSpawn();
    const int pgid = static_cast<int>(group.native_handle());
    if (cancel && cancel->activeGroup) cancel->activeGroup->store(pgid);
    awaitChild(ios, group, pgid, spec, result);
    if (cancel && cancel->activeGroup) cancel->activeGroup->store(0);
    std::error_code ec;
    child.wait(ec);
    if (!result.timedOut && !result.cancelled) result.exitCode = child.exit_code();
  } catch (const std::exception& e) {
    result.spawnError = e.what();
    result.started = false;
    return result;
  }
  auto take = [&](std::future<std::string>& f) {
    if (f.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return std::string();
    std::string s = f.get();
    if (s.size() > maxOutputBytes) s.resize(maxOutputBytes);
    return s;
  };
  result.out = take(out);
  result.err = take(err);
  return result;
}

}  // namespace crashsim::detail
