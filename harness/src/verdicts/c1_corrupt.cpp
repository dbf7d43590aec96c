#include "verdicts/c1_corrupt.h"

#include <fmt/format.h>

#include "verdicts/fail_closed.h"

namespace crashsim::harness {
namespace fs = std::filesystem;

StoreFiles storeFiles(const fs::path& store) {
  StoreFiles out;
  for (const char* name : {"runtime.sqlite", "runtime.sqlite-wal", "runtime.manifest"})
    if (fs::exists(store / name)) out[name] = readFile(store / name);
  return out;
}

std::string storeFilesChange(const StoreFiles& before, const StoreFiles& after) {
  std::string out;
  for (const char* name : {"runtime.sqlite", "runtime.sqlite-wal", "runtime.manifest"}) {
    auto b = before.find(name), a = after.find(name);
    const bool had = b != before.end(), has = a != after.end();
    std::string what;
    if (had && !has)
      what = "deleted";
    else if (!had && has)
      what = "created";
    else if (had && b->second != a->second)
      what = "rewritten";
    if (!what.empty()) out += (out.empty() ? "" : ", ") + std::string(name) + " " + what;
  }
  return out;
}

void judgeCorruption(const AppliedCorruption& applied, const CorruptObservation& o,
                     reports::Corruption& corruption, Checks& c) {
  const auto& damage = applied.record;
  auto fail = [&](const std::string& why) {
    c.fail("C1", fmt::format("{} ({}): {}", damage.kind, damage.detail, why));
    corruption.outcome = "unsafe";
  };
  // inspect: read-only, ends, and a refusal names a stable code.
  if (!o.inspect.exited)
    fail("crashsim inspect " + o.inspect.describe());
  else if (o.inspect.exitCode == 2 && !isStableFailClosedCode(o.inspectCode))
    fail(
        fmt::format("crashsim inspect refused without a stable damage code ('{}')", o.inspectCode));
  else if (o.inspect.exitCode < 0 || o.inspect.exitCode > 2)
    fail("crashsim inspect " + o.inspect.describe());
  if (!o.inspectChanged.empty()) fail("crashsim inspect wrote the store: " + o.inspectChanged);
  // A store damage the README names a code for: inspect refuses with exactly that code.
  if (!applied.expectedCode.empty() && applied.wrongWorkspace == WrongWorkspace::none &&
      o.inspect.exited && (o.inspect.exitCode != 2 || o.inspectCode != applied.expectedCode))
    fail(fmt::format("crashsim inspect {} ('{}'), the README names {}", o.inspect.describe(),
                     o.inspectCode, applied.expectedCode));

  if (!o.recover.exited) {
    fail("crashsim-agent recover " + o.recover.describe());
  } else if (o.recover.exitCode == 2) {
    corruption.code = o.recoverCode;
    if (!isStableFailClosedCode(o.recoverCode))
      fail(fmt::format("recover refused without a stable damage code ('{}')", o.recoverCode));
    else if (!applied.expectedCode.empty() && o.recoverCode != applied.expectedCode)
      fail(fmt::format("recover refused with {}, the README names {}", o.recoverCode,
                       applied.expectedCode));
    if (o.toolRan) fail("recover refused the store but ran a tool (effects log changed)");
    if (o.workspaceChanged) fail("recover refused the store but changed the workspace");
    if (!o.recoverChanged.empty())
      fail("recover refused the store but wrote it: " + o.recoverChanged);
    if (corruption.outcome.empty()) corruption.outcome = "failed_closed";
  } else {
    if (!o.completedWithoutResponse.empty()) fail(o.completedWithoutResponse);
    std::string differs;  // how the finished recovery differs from the kill case's outcome
    if (!o.contractOutcome) {
      differs = "no outcome to compare";
    } else {
      for (const auto& [name, check] : o.contractOutcome->m)
        if (check.status == "fail")
          differs += (differs.empty() ? "" : "; ") + name + ": " + check.reason;
    }
    if (damage.detectable)
      fail("recovery " + o.recover.describe() + " from a damage the runtime must detect" +
           (differs.empty() ? "" : " — " + differs));
    else if (!differs.empty() && !applied.mayGoUnnoticed)
      fail("recovery reached another outcome than the undamaged crash state's: " + differs);
    if (corruption.outcome.empty())
      corruption.outcome = differs.empty() ? "recovered" : "undetectable";
    if (corruption.outcome == "undetectable")
      corruption.recovery = "recovery " + o.recover.describe() + ": " + differs;
  }
  if (!c.failed("C1")) c.pass("C1");
}

}  // namespace crashsim::harness
