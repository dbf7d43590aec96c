// verdicts/verdict.h — the verdict record every check writes, and the small readers they share.
//
// One verdict is one unit (DESIGN.md "The harness"): each of V1–V9, D1/D2, the barrier oracle
// and coverage lives in its own file under harness/src/verdicts/ with a header that says what it
// proves and what it cannot see. A check gets the oracle's expectation and the observed state
// and writes pass / fail / n-a with a reason into `Checks`; the first failure reason of a check
// is kept.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "crashsim/reports/report.h"
#include "crashsim/store.h"

namespace crashsim::harness {

struct Checks {
  std::map<std::string, reports::Check> m;
  Checks() {
    for (auto n : reports::kCheckNames) m[std::string(n)] = reports::Check{"n/a", "not evaluated"};
  }
  void pass(const char* v) { m[v] = reports::Check{"pass", ""}; }
  void fail(const char* v, std::string reason) {
    // Keep the first failure reason for a check.
    if (m[v].status != "fail") m[v] = reports::Check{"fail", std::move(reason)};
  }
  void na(const char* v, std::string reason) { m[v] = reports::Check{"n/a", std::move(reason)}; }
  bool failed(const char* v) const {
    auto it = m.find(v);
    return it != m.end() && it->second.status == "fail";
  }
};

// The whole file ("" when it cannot be read).
std::string readFile(const std::filesystem::path& p);
// The last line of a file, cut to 300 bytes (for one-line reasons).
std::string lastLine(const std::filesystem::path& p);
// completed | failed | cancelled.
bool isTerminalStatus(const std::string& s);
// The run-header status the contract maps a terminal RuntimeEvent's status to (spec c: restated
// here from the contract, deliberately not the runtime's own mapping, which it judges).
std::string headerStatusOfTerminal(const RuntimeEvent& e);
// One run's events in ledger order, as the store returns them.
std::vector<RuntimeEvent> eventsOf(const RuntimeStore& store, const RunHeader& h);
// Recursive copy of a directory (a crash state the checks may change).
void copyDir(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace crashsim::harness
