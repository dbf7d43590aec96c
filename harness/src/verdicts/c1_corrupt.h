// verdicts/c1_corrupt.h — C1, the verdict of a corrupt case
// (crashsim/harness/corruption_injector.h).
//
// Proves: after a seeded damage to a crashed store, `crashsim inspect` and `crashsim-agent
// recover` end by themselves (no signal, no hang); inspect writes no byte of runtime.sqlite, its
// -wal or the manifest and, when it refuses, names a stable code; recover either refuses (exit 2,
// a stable damage code, no tool run, workspace and store files unchanged) or finishes with the
// kill case's V8 outcome, and never reports `completed` without a durable function_response.
// A damage the README's rules call detectable must be refused; one undetectable by design may
// also end in another outcome, reported as "undetectable" with what recovery did.
// Cannot see: damage whose effects are identical to an earlier crash state (it is one).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "crashsim/harness/corruption_injector.h"
#include "crashsim/harness/supervisor.h"
#include "verdicts/verdict.h"

namespace crashsim::harness {

// The bytes of the store's durable files (runtime.sqlite, its -wal, runtime.manifest); an
// absent file is absent from the map. The -shm is SQLite's rebuildable index, not state.
using StoreFiles = std::map<std::string, std::string>;
StoreFiles storeFiles(const std::filesystem::path& store);
// "" when equal, else which files changed.
std::string storeFilesChange(const StoreFiles& before, const StoreFiles& after);

struct CorruptObservation {
  ChildResult inspect;
  std::string inspectCode;     // the error code inspect printed ("" if none)
  std::string inspectChanged;  // storeFilesChange across inspect
  ChildResult recover;
  std::string recoverCode;                // the error code recover printed ("" if none)
  std::string recoverChanged;             // storeFilesChange across a refusing recover
  bool toolRan = false;                   // a refusing recover changed the effects log
  bool workspaceChanged = false;          // a refusing recover changed the workspace it was given
  std::optional<Checks> contractOutcome;  // the kill case's V8 (and V4) after a finished recover
  std::string completedWithoutResponse;   // after a finished recover ("" when it holds)
};

// Judges C1 into c and fills corruption.outcome / corruption.code.
void judgeCorruption(const AppliedCorruption& applied, const CorruptObservation& o,
                     reports::Corruption& corruption, Checks& c);

}  // namespace crashsim::harness
