// D3: durable replaces of the file tools across a power cut (verdicts/durable_replace.h).
#include "verdicts/durable_replace.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "verdicts/observed_store.h"

namespace crashsim::harness::durable_replace {
namespace fs = std::filesystem;

namespace {

std::string describe(const FileState& s) {
  if (!s) return "absent";
  return fmt::format("{} byte(s)", s->size());
}

std::string quoteShort(const std::string& bytes) {
  std::string out;
  for (char ch : bytes.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(ch);
    out += (u >= 0x20 && u < 0x7f && ch != '"' && ch != '\\') ? std::string(1, ch)
                                                              : fmt::format("\\x{:02x}", u);
  }
  return "\"" + out + (bytes.size() > 40 ? "…" : "") + "\"";
}

// One replace of a path: the scenario call and the content after it.
struct Replace {
  std::string callId;
  FileState after;
};

}  // namespace

std::map<std::string, CallFacts> ledgerFacts(const fs::path& storeDir) {
  std::map<std::string, CallFacts> out;
  for (const std::string& run : observed::eventRunIds(storeDir)) {
    for (const auto& e : observed::runEvents(storeDir, run)) {
      const auto& p = e.payload;
      if (p.contains("actions") && p["actions"].contains("toolDispatch")) {
        const auto& d = p["actions"]["toolDispatch"];
        if (d.contains("providerToolCallId") && d["providerToolCallId"].is_string())
          out[d["providerToolCallId"].get<std::string>()].dispatched = true;
      }
      if (p.contains("content") && p["content"].is_object() &&
          p["content"].value("kind", "") == "function_response" && p["content"].contains("id") &&
          p["content"]["id"].is_string() && !p["content"].value("isError", false))
        out[p["content"]["id"].get<std::string>()].answeredOk = true;
    }
  }
  return out;
}

namespace {

// Each replaced path's contents, in scenario order, from the scenario's data alone.
struct ScriptedReplaces {
  std::map<std::string, FileState> seed;                 // path → its seeded contents
  std::map<std::string, std::vector<Replace>> replaces;  // path → its replaces, in order
  std::map<std::string, bool> unjudgeable;  // the data does not say what an Edit makes of it
};

ScriptedReplaces scriptedReplaces(const Scenario& scenario) {
  ScriptedReplaces r;
  std::map<std::string, FileState> current;
  for (const auto& [rel, content] : scenario.spec.files)
    r.seed[fs::path(rel).lexically_normal().string()] = content;
  for (const ScenarioCall& call : scenario.calls) {
    if (!call.writesFile() || call.expectError) continue;
    const auto& args = scenario.spec.model.at(call.step).calls.at(call.indexInStep).args;
    const std::string rel = fs::path(args.value("path", "")).lexically_normal().string();
    if (!current.count(rel)) {
      auto s = r.seed.find(rel);
      current[rel] = s == r.seed.end() ? FileState{} : FileState{s->second};
    }
    FileState& now = current[rel];
    if (call.name == "Write") {
      now = args.value("content", "");
    } else {  // Edit: exactly one occurrence of old_string becomes new_string
      const std::string from = args.value("old_string", ""), to = args.value("new_string", "");
      const size_t at = now && !from.empty() ? now->find(from) : std::string::npos;
      if (at == std::string::npos || now->find(from, at + from.size()) != std::string::npos) {
        r.unjudgeable[rel] = true;  // the scenario's data does not say what the Edit makes of it
        continue;
      }
      now->replace(at, from.size(), to);
    }
    r.replaces[rel].push_back({call.id, now});
  }
  return r;
}

// The file on disk: its contents, none when it is gone; nullopt (a problem in `out`) when it is
// no regular file.
std::optional<FileState> diskState(const fs::path& workspace, const std::string& rel,
                                   std::vector<std::string>& out) {
  const fs::path p = workspace / rel;
  std::error_code ec;
  const auto st = fs::symlink_status(p, ec);
  FileState disk;
  if (!ec && fs::exists(st)) {
    if (!fs::is_regular_file(st)) {
      out.push_back(rel + " is not a regular file after the power cut");
      return std::nullopt;
    }
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    disk = ss.str();
  }
  return std::optional<FileState>(std::in_place, disk);
}

// One path's replaces against the durable facts: the file must hold one of the versions from the
// last acknowledged replace to the last dispatched one.
void pathProblems(const std::string& rel, const std::vector<Replace>& list,
                  const std::map<std::string, FileState>& seed,
                  const std::map<std::string, CallFacts>& facts, const fs::path& workspace,
                  std::vector<std::string>& out) {
  auto s = seed.find(rel);
  std::vector<FileState> versions = {s == seed.end() ? FileState{} : FileState{s->second}};
  size_t lo = 0, hi = 0;  // allowed versions[lo..hi]
  for (size_t i = 0; i < list.size(); ++i) {
    versions.push_back(list[i].after);
    auto f = facts.find(list[i].callId);
    if (f == facts.end()) continue;
    if (f->second.answeredOk) lo = i + 1;
    if (f->second.dispatched || f->second.answeredOk) hi = i + 1;
  }
  if (hi < lo) hi = lo;
  const std::optional<FileState> onDisk = diskState(workspace, rel, out);
  if (!onDisk) return;
  const FileState& disk = *onDisk;
  bool ok = false;
  for (size_t i = lo; i <= hi; ++i) ok = ok || versions[i] == disk;
  if (ok) return;
  auto label = [&](size_t i) {
    return i == 0 ? std::string("before ") + list[0].callId : "after " + list[i - 1].callId;
  };
  std::string allowed;
  for (size_t i = lo; i <= hi; ++i)
    allowed += fmt::format("{}{} ({})", i == lo ? "" : ", ", label(i), describe(versions[i]));
  std::string what;
  for (size_t i = 0; i < versions.size(); ++i)
    if (versions[i] == disk) what = " — the state " + label(i);
  if (what.empty())
    what = !disk ? " — the file is gone" : " — lost, torn or garbage bytes of a replace";
  out.push_back(fmt::format(
      "{} after the power cut is {}{}{}; the durable facts allow only: {}{}", rel, describe(disk),
      disk ? " " + quoteShort(*disk) : "", what, allowed,
      lo > 0 ? fmt::format(" ({} is acknowledged: its result is durable)", list[lo - 1].callId)
             : ""));
}

}  // namespace

std::vector<std::string> problems(const Scenario& scenario,
                                  const std::map<std::string, CallFacts>& facts,
                                  const fs::path& workspace) {
  const ScriptedReplaces r = scriptedReplaces(scenario);
  std::vector<std::string> out;
  for (const auto& [rel, list] : r.replaces)
    if (!r.unjudgeable.count(rel)) pathProblems(rel, list, r.seed, facts, workspace, out);
  return out;
}

void check(const Scenario& scenario, const fs::path& store, const fs::path& workspace, Checks& c) {
  std::map<std::string, CallFacts> facts;
  try {
    facts = ledgerFacts(store);
  } catch (const std::exception& e) {
    c.fail("D3", std::string("the crashed ledger cannot be read: ") + e.what());
    return;
  }
  const auto bad = problems(scenario, facts, workspace);
  if (bad.empty()) {
    c.pass("D3");
    return;
  }
  std::string reason;
  for (const auto& b : bad) reason += (reason.empty() ? "" : "; ") + b;
  c.fail("D3", reason);
}

}  // namespace crashsim::harness::durable_replace
