// The tool server's crash points (crashsim/open/tool_points.h).
#include "crashsim/open/tool_points.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "crashsim/error.h"

namespace crashsim::open {
namespace {

using nlohmann::json;

int indexOf(std::string_view point) {
  if (point == "TC") return 0;
  if (point == "TE") return 1;
  if (point == "TR") return 2;
  return -1;
}

void appendLine(const std::filesystem::path& file, const json& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line.dump() + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
}

[[noreturn]] void blockUntilKilled() {
  for (;;) ::pause();
}

// Reads the counter file under its exclusive lock, lets `edit` change the counts, writes them
// back and returns them. A missing or empty file is all zeros.
template <class Edit>
json updateCounter(const std::filesystem::path& counter, Edit edit) {
  json counts = {{"TC", 0}, {"TE", 0}, {"TR", 0}, {"holdNext", 0}};
  const int fd = ::open(counter.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return counts;
  ::flock(fd, LOCK_EX);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0;)
    text.append(buf, static_cast<size_t>(n));
  if (json read = json::parse(text, nullptr, false); read.is_object()) counts.update(read);
  edit(counts);
  const std::string out = counts.dump();
  if (::ftruncate(fd, 0) == 0) {
    [[maybe_unused]] const ssize_t n = ::pwrite(fd, out.data(), out.size(), 0);
  }
  ::flock(fd, LOCK_UN);
  ::close(fd);
  return counts;
}

}  // namespace

ToolPoints::ToolPoints(ToolPointsOptions options) : options_(std::move(options)) {
  if (options_.arm.empty()) return;
  const auto colon = options_.arm.find(':');
  const std::string point = options_.arm.substr(0, colon);
  int hit = 0;
  const char* first = options_.arm.data() + (colon == std::string::npos ? 0 : colon + 1);
  const char* last = options_.arm.data() + options_.arm.size();
  const auto r = std::from_chars(first, last, hit);
  if (colon == std::string::npos || indexOf(point) < 0 || r.ec != std::errc() || r.ptr != last ||
      hit < 1 || first == last)
    throw Error(std::string(kToolArmInvalid),
                "--arm must be TC:<n>, TE:<n> or TR:<n> with n >= 1, got " + options_.arm);
  if (options_.control.empty())
    throw Error(std::string(kToolArmInvalid), "--arm needs --control FILE");
  armPoint_ = point;
  armHit_ = hit;
}

void ToolPoints::reach(std::string_view point) {
  const int index = indexOf(point);
  if (index < 0) return;
  const std::string key(point);
  const bool armedHere = !armPoint_.empty() && point == armPoint_;
  int hit = 0, hold = 0;
  if (options_.counter.empty()) {
    hit = ++local_[index];
    hold = localHold_;
    if (armedHere && point == "TR" && hit == armHit_) localHold_ = hit;
  } else {
    updateCounter(options_.counter, [&](json& c) {
      hit = c.value(key, 0) + 1;
      hold = c.value("holdNext", 0);
      c[key] = hit;
      if (armedHere && point == "TR" && hit == armHit_) c["holdNext"] = hit;
    });
  }
  if (point == "TC" && hold > 0) {
    appendLine(options_.control,
               {{"failpoint", "TR"}, {"hit", hold}, {"next", "TC"}, {"pid", ::getpid()}});
    blockUntilKilled();
  }
  if (!armedHere || hit != armHit_) return;
  appendLine(options_.control, {{"failpoint", key}, {"hit", hit}, {"pid", ::getpid()}});
  if (point != "TR") blockUntilKilled();
}

}  // namespace crashsim::open
