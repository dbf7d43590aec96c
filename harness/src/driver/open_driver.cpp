// The open harness's driver (crashsim/harness/open_driver.h).
#include "crashsim/harness/open_driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "crashsim/open/model_server.h"
#include "driver/spawn.h"

extern char** environ;

namespace crashsim::harness {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

bool isOpenPoint(std::string_view name) {
  return std::find(kOpenPoints.begin(), kOpenPoints.end(), name) != kOpenPoints.end();
}

bool isNamedPoint(std::string_view name) {
  const auto ok = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
  };
  return !name.empty() && name.size() <= 32 && std::isalpha(static_cast<unsigned char>(name[0])) &&
         std::all_of(name.begin(), name.end(), ok) && !isOpenPoint(name);
}

OpenPaths::OpenPaths(const fs::path& caseDir)
    : dir(caseDir),
      workspace(caseDir / "workspace"),
      stateDir(caseDir / "state"),
      effects(caseDir / "effects.jsonl"),
      resent(caseDir / "resent.jsonl"),
      answers(caseDir / "answers.jsonl"),
      modelLog(caseDir / "model.jsonl") {}

namespace {

std::string readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The armed process as the model server's hook sees it.
struct HookState {
  std::mutex mutex;
  pid_t pgid = 0;
  OpenArm arm;
  fs::path control;
  int mq = 0, ma = 0;
  bool reached = false;
  std::string note;
};

class CaseModel final : public OpenCaseModel {
 public:
  CaseModel(const Scenario& scenario, const fs::path& log) {
    open::ModelServerOptions options;
    options.logPath = log;
    options.onPoint = [this](std::string_view point, int) { return onPoint(point); };
    server_ = std::make_unique<open::ModelServer>(scenario.spec, std::move(options));
    server_->start();
  }
  ~CaseModel() override { server_->stop(); }
  std::string baseUrl() const override { return server_->baseUrl(); }
  size_t requestCount() const override { return server_->requestCount(); }
  HookState& hook() { return hook_; }

 private:
  // Counts the point for the current process and kills its group when it is the armed one (or,
  // armed at TR, the first model request after the result was reported).
  bool onPoint(std::string_view point) {
    std::lock_guard lock(hook_.mutex);
    const int hit = point == "MQ" ? ++hook_.mq : ++hook_.ma;
    if (hook_.pgid <= 0 || hook_.reached) return false;
    bool kill = hook_.arm.point == point && hook_.arm.hit == hit;
    if (!kill && point == "MQ" && hook_.arm.point == "TR") {
      for (const auto& line : splitLines(readText(hook_.control))) {
        const json j = json::parse(line, nullptr, false);
        if (j.is_object() && j.value("failpoint", "") == "TR" && j.value("hit", 0) == hook_.arm.hit)
          kill = true;
      }
    }
    if (!kill) return false;
    ::kill(-hook_.pgid, SIGKILL);
    hook_.reached = true;
    hook_.note = json{
        {"failpoint", hook_.arm.point},
        {"hit", hook_.arm.hit},
        {"at", std::string(point)},
        {"modelHit",
         hit}}.dump();
    return point == "MQ";
  }
  static std::vector<std::string> splitLines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(line);
    return out;
  }

  HookState hook_;
  std::unique_ptr<open::ModelServer> server_;
};

std::map<std::string, std::string> parentEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// Spawns argv in its own process group (pgid = pid), stdin /dev/null, stdout/stderr appended to
// the files. Returns the pid, or -1 with `error` set.
pid_t spawnGroup(const open::ProfileCommand& cmd, const std::map<std::string, std::string>& env,
                 const fs::path& out, const fs::path& err, std::string& error) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (!cmd.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cmd.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  std::vector<std::string> envText;
  for (const auto& [k, v] : env) envText.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : envText) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv = cmd.argv;
  for (auto& s : argv) args.push_back(s.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = "cannot start " + cmd.argv[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

// A process that is gone or a zombie (its parent died and init has not reaped it yet).
bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::string stat = readText("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

// Waits up to two seconds for `gone`.
template <class Gone>
bool waitGone(Gone gone) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline) {
    if (gone()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return gone();
}

bool groupGone(pid_t pgid) {
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return true;
  // Only zombies left? Look for a live process of the group.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = readText(e.path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string state;
    long ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != "Z") return false;
  }
  return true;
}

// A level-1 runtime's named counts (CRASHSIM_HITS_OUT) into r.hits, or why they are unusable.
void readNamedHits(const fs::path& file, OpenProcessResult& r) {
  std::error_code ec;
  if (!fs::exists(file, ec)) {
    r.namedHitsProblem = "wrote no named-failpoint counts (CRASHSIM_HITS_OUT) at its end";
    return;
  }
  const json counts = json::parse(readText(file), nullptr, false);
  if (!counts.is_object()) {
    r.namedHitsProblem = "wrote named-failpoint counts that are not a JSON object";
    return;
  }
  for (const auto& [name, n] : counts.items()) {
    if (!isNamedPoint(name) || !n.is_number_unsigned() || n.get<uint64_t>() > 1000000) {
      r.namedHitsProblem = fmt::format(
          "wrote named-failpoint counts with \"{}\": {}: a name is a letter, then letters, "
          "digits, _ or - (at most 32, none of MQ MA TC TE TR S), a count a whole number up to "
          "10^6",
          name, n.dump());
      return;
    }
    r.hits[name] = n.get<int>();
  }
}

void readHits(const OpenPaths& paths, const std::string& tag, const HookState& hook, int level,
              OpenProcessResult& r) {
  r.hits["MQ"] = hook.mq;
  r.hits["MA"] = hook.ma;
  const json tools = json::parse(readText(paths.toolCounter(tag)), nullptr, false);
  for (const char* p : {"TC", "TE", "TR"}) r.hits[p] = tools.is_object() ? tools.value(p, 0) : 0;
  uint64_t slots[2] = {0, 0};
  const std::string barriers = readText(paths.barriers(tag));
  if (barriers.size() >= sizeof slots) std::memcpy(slots, barriers.data(), sizeof slots);
  r.hits["S"] = static_cast<int>(slots[0]);
  r.interposerLoaded = slots[1] > 0;
  if (level >= 1 && hook.arm.point.empty()) readNamedHits(paths.namedHits(tag), r);
}

}  // namespace

OpenDriver::OpenDriver(open::RuntimeProfile profile, fs::path toolServer, fs::path interposer)
    : profile_(std::move(profile)),
      toolServer_(std::move(toolServer)),
      interposer_(std::move(interposer)) {}

OpenDriver::~OpenDriver() = default;

std::unique_ptr<OpenCaseModel> OpenDriver::startCase(const Scenario& scenario,
                                                     const OpenPaths& paths) const {
  fs::create_directories(paths.workspace);
  fs::create_directories(paths.stateDir);
  for (const auto& [rel, content] : scenario.spec.files) {
    const fs::path file = paths.workspace / rel;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
  }
  return std::make_unique<CaseModel>(scenario, paths.modelLog);
}

namespace {

struct Launch {
  open::ProfileCommand cmd;
  std::map<std::string, std::string> env;
};

// The substituted command of one process and its environment: the profile's, the interposer's
// (preloaded, its counter and control file, armed at S), never an arming inherited from us.
Launch launchOf(const open::RuntimeProfile& profile, bool resume, const fs::path& toolServer,
                const fs::path& interposer, const Scenario& scenario, const OpenPaths& paths,
                const std::string& modelUrl, const OpenArm& arm, const std::string& tag) {
  std::vector<std::string> tool = {"env",         "-u",
                                   "LD_PRELOAD",  toolServer.string(),
                                   "--scenario",  scenario.file.string(),
                                   "--workspace", paths.workspace.string(),
                                   "--effects",   paths.effects.string(),
                                   "--resent",    paths.resent.string(),
                                   "--answers",   paths.answers.string(),
                                   "--counter",   paths.toolCounter(tag).string()};
  if (arm.point == "TC" || arm.point == "TE" || arm.point == "TR")
    tool.insert(tool.end(), {"--arm", arm.point + ":" + std::to_string(arm.hit), "--control",
                             paths.control(tag).string()});
  const open::CaseBindings bindings{paths.workspace, paths.stateDir, scenario.file, modelUrl, tool};
  Launch l{open::substitute(resume ? profile.resume : profile.run, bindings), parentEnvironment()};
  for (const char* v : {"CRASHSIM_ARM", "CRASHSIM_CONTROL_FD", "CRASHSIM_CONTROL_FILE",
                        "CRASHSIM_HITS_OUT", "CRASHSIM_BARRIER_HITS_OUT"})
    l.env.erase(v);
  for (const auto& [k, v] : l.cmd.env) l.env[k] = v;
  // The control file takes the interposer's and a level-1 runtime's reports (the fd is -1: a
  // runtime's own children often close inherited descriptors).
  if (!interposer.empty() || profile.level >= 1) {
    l.env["CRASHSIM_CONTROL_FD"] = "-1";
    l.env["CRASHSIM_CONTROL_FILE"] = paths.control(tag).string();
  }
  if (!interposer.empty()) {
    l.env["LD_PRELOAD"] = interposer.string();
    l.env["CRASHSIM_BARRIER_COUNTER"] = paths.barriers(tag).string();
  }
  if (profile.level >= 1) l.env["CRASHSIM_HITS_OUT"] = paths.namedHits(tag).string();
  // One arming: S for the interposer or a name for the runtime; each ignores the other's.
  if (arm.point == "S" || isNamedPoint(arm.point))
    l.env["CRASHSIM_ARM"] = arm.point + ":" + std::to_string(arm.hit);
  return l;
}

// Kills the group when the control file holds the armed point's report (TR: its next-request
// report); the model server's hook kills at MQ, MA and TR's next model request itself.
void checkControl(pid_t pid, const OpenArm& arm, const fs::path& control, size_t& seen,
                  HookState& hook, OpenProcessResult& r) {
  const std::string text = readText(control);
  if (arm.point.empty() || text.size() <= seen) return;
  std::istringstream in(text.substr(seen));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("failpoint", "") != arm.point || j.value("hit", 0) != arm.hit)
      continue;
    if (arm.point == "TR" && !j.contains("next")) continue;  // killed at the next request
    ::kill(-pid, SIGKILL);
    std::lock_guard lock(hook.mutex);
    hook.reached = true;
    r.controlLine = line;
    r.reporter = j.value("pid", 0);
  }
  if (const auto nl = text.rfind('\n'); nl != std::string::npos) seen = nl + 1;
}

// Waits for the process to end, killing its group at the armed point or after `limit`.
int awaitProcess(pid_t pid, const OpenArm& arm, const fs::path& control, HookState& hook,
                 std::chrono::seconds limit, OpenProcessResult& r) {
  const auto start = Clock::now();
  size_t seen = 0;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    checkControl(pid, arm, control, seen, hook, r);
    if (Clock::now() - start > limit) {
      ::kill(-pid, SIGKILL);
      r.child.timedOut = true;
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.child.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  return status;
}

}  // namespace

OpenProcessResult OpenDriver::runProcess(bool resume, const Scenario& scenario,
                                         const OpenPaths& paths, OpenCaseModel& model,
                                         const OpenArm& arm, const std::string& tag) const {
  OpenProcessResult r;
  auto& hook = static_cast<CaseModel&>(model).hook();
  const Launch l = launchOf(profile_, resume, toolServer_, interposer_, scenario, paths,
                            model.baseUrl(), arm, tag);
  {
    std::lock_guard lock(hook.mutex);
    hook.pgid = 0;
    hook.arm = {};
    hook.mq = hook.ma = 0;
    hook.reached = false;
    hook.note.clear();
  }
  const pid_t pid = spawnGroup(l.cmd, l.env, paths.out(tag), paths.err(tag), r.child.error);
  if (pid < 0) return r;
  r.child.spawned = true;
  {
    std::lock_guard lock(hook.mutex);
    hook.pgid = pid;
    hook.arm = arm;
    hook.control = paths.control(tag);
  }
  const auto limit = std::chrono::seconds(resume ? profile_.resumeSeconds : profile_.runSeconds);
  spawning::recordStatus(awaitProcess(pid, arm, paths.control(tag), hook, limit, r), r.child);
  {
    std::lock_guard lock(hook.mutex);
    r.reached = hook.reached;
    if (r.controlLine.empty()) r.controlLine = hook.note;
    hook.pgid = 0;
  }
  if (r.reached) {
    r.groupGone = waitGone([pid] { return groupGone(pid); });
    if (r.reporter > 0) r.reporterGone = waitGone([p = r.reporter] { return processGone(p); });
  }
  // Nothing of the runtime outlives its process: a group member, or a reporter that escaped it.
  ::kill(-pid, SIGKILL);
  if (r.reporter > 0 && !r.reporterGone) ::kill(r.reporter, SIGKILL);
  r.modelRequestsAtEnd = static_cast<int>(model.requestCount());
  std::lock_guard lock(hook.mutex);
  readHits(paths, tag, hook, profile_.level, r);
  return r;
}

fs::path locateToolServer() {
  if (const char* e = std::getenv("CRASHSIM_TOOL_SERVER"); e && *e) return e;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path p = self.parent_path().parent_path() / "open" / "crashsim-tool-server";
  return fs::exists(p, ec) ? p : fs::path();
}

fs::path locateInterposer() {
  if (const char* e = std::getenv("CRASHSIM_INTERPOSER"); e) return e;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path p = self.parent_path().parent_path() / "open" / "interposer" /
                     "libcrashsim_barrier_interposer.so";
  return fs::exists(p, ec) ? p : fs::path();
}

}  // namespace crashsim::harness
