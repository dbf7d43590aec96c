// verdicts/durable_replace.h — D3: every durable replace of a file tool is all-or-nothing across a
// power cut, and an acknowledged one is durable.
//
// The contract's file tools (spec i; DESIGN "Tools") replace a file atomically — "atomic rename
// prevents torn files" — and report success only after the replace is durable: the recovery
// contract reconciles a Write/Edit by reading its target, which it can only do if the target holds
// either the state before the call or the complete state after it. So, on the crash state of a
// power-loss case (before any recovery or afterCrash change), for every path a dispatched
// Write/Edit of the scenario replaces:
//   - the path holds one of the contents the scenario's replaces of it pass through (its seed —
//     or absent when it had none —, then after each replace in scenario order): never lost,
//     torn or garbage bytes, never absent when it existed;
//   - not older than the last replace whose result is durable (its function_response in the
//     crash ledger, not an error: the runtime acknowledged it after the replace returned), and
//     not newer than the last replace whose T1 dispatch is durable (no implementation runs
//     without its T1).
// Expected values come from the scenario alone (seed files, Write content, Edit's one replacement
// of old_string by new_string, the calls the scenario expects to fail) and from the crash ledger
// read with plain SQLite (verdicts/observed_store.h); nothing here calls the runtime.
//
// What it proves: under the power-loss file model (crashsim/powerloss.h), a replace that lets
// its rename (or an unlink) reach the disk before the bytes it publishes, or before the rename
// that follows it, is caught at whatever crash point exposes the window (named or barrier F).
// What it cannot see: files no Write/Edit of the scenario replaces; a Bash command's effects;
// whether the bytes of an unacknowledged replace are durable (the contract lets recovery decide);
// a replace the scenario expects to fail (nothing is judged for it but that it changed nothing).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/scenario.h"
#include "verdicts/verdict.h"

namespace crashsim::harness::durable_replace {

// What the crash ledger holds of one provider tool call.
struct CallFacts {
  bool dispatched = false;  // its T1 dispatch event is durable
  bool answeredOk = false;  // a durable function_response that is not an error
};

// The facts of every call of every run in the store, read with plain SQLite (payload JSON).
// Throws std::runtime_error when the store cannot be read.
std::map<std::string, CallFacts> ledgerFacts(const std::filesystem::path& storeDir);

// A path's state: its bytes, or nullopt when absent. (Not a regular file: judged as a problem.)
using FileState = std::optional<std::string>;

// The judgement (empty: pass): every replaced path of `workspace` against the facts.
std::vector<std::string> problems(const Scenario& scenario,
                                  const std::map<std::string, CallFacts>& facts,
                                  const std::filesystem::path& workspace);

// D3 on the crash state: store (ledger) and workspace as the power cut left them.
void check(const Scenario& scenario, const std::filesystem::path& store,
           const std::filesystem::path& workspace, Checks& c);

}  // namespace crashsim::harness::durable_replace
