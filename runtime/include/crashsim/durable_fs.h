// crashsim/durable_fs.h — the seam through which the runtime's durable workspace file effects go.
//
// A Write/Edit tool replaces its target atomically: temp file in the target's directory, write,
// fsync, [P3], rename onto the target, fsync of the directory. Every step of that sequence goes
// through DurableFs so that a power-loss simulation can decide which of them a power cut keeps:
// the production runtime uses the real POSIX calls (posixDurableFs); the instrumented agent,
// under `--mode powerloss`, installs the power-loss file model (crashsim/powerloss.h), in which
// file contents are durable only after fsyncFile and names only after fsyncDir. The runtime
// never links the model: the agent binary wires it in with setDurableFs.
//
// Every function performs the operation or throws crashsim::Error (the implementation's stable
// code: tool_execution_failed for POSIX, powerloss_io_failed for the model), naming the path.
#pragma once

#include <filesystem>
#include <string_view>

namespace crashsim {

class DurableFs {
 public:
  virtual ~DurableFs() = default;
  // Creates `path` exclusively (O_CREAT|O_EXCL, which never follows a symlink) with `mode` and
  // writes `bytes`. Returns false, changing nothing, when the path already exists.
  virtual bool createFile(const std::filesystem::path& path, std::string_view bytes,
                          unsigned mode) = 0;
  // fsync(2) of a file: its written bytes become durable (its name does not).
  virtual void fsyncFile(const std::filesystem::path& path) = 0;
  // rename(2): durable once the directories of both names are fsynced.
  virtual void rename(const std::filesystem::path& from, const std::filesystem::path& to) = 0;
  // unlink(2): durable once the directory is fsynced.
  virtual void removeFile(const std::filesystem::path& path) = 0;
  // fsync(2) of a directory: every name in it becomes durable.
  virtual void fsyncDir(const std::filesystem::path& dir) = 0;
};

// The real POSIX implementation (the default).
DurableFs& posixDurableFs();
// The implementation in use by this process (posixDurableFs unless replaced).
DurableFs& durableFs();
// Replaces the process-wide implementation; nullptr restores posixDurableFs. Call it at start-up,
// before any tool runs (not synchronised with concurrent tool calls).
void setDurableFs(DurableFs* fs);

}  // namespace crashsim
