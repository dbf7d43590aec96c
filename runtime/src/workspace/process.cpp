#include "workspace/process.h"

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <future>

namespace crashsim::detail {

namespace bp = boost::process;

ProcessResult runProcess(const std::string& executable, const std::vector<std::string>& args,
                         const std::filesystem::path& cwd, std::chrono::milliseconds timeout,
                         size_t maxOutputBytes) {
  ProcessResult result;
  boost::filesystem::path exe;
  if (executable.find('/') == std::string::npos) {
    exe = bp::search_path(executable);
    if (exe.empty()) {
      result.spawnError = executable + " not found on PATH";
      return result;
    }
  } else {
    exe = executable;
  }
  boost::asio::io_context ios;
  std::future<std::string> out, err;
  try {
    bp::group group;  // the whole process tree is killed on timeout
    bp::child child(exe, bp::args(args), bp::start_dir(cwd.string()), bp::std_in.close(),
                    bp::std_out > out, bp::std_err > err, ios, group);
    result.started = true;
    ios.run_for(timeout);
    if (!ios.stopped()) {
      // Pipes still open after the bound: kill the child and drain what is left.
      std::error_code ec;
      group.terminate(ec);
      result.timedOut = true;
      ios.run_for(std::chrono::seconds(1));
    }
    std::error_code ec;
    child.wait(ec);
    if (!result.timedOut) result.exitCode = child.exit_code();
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
