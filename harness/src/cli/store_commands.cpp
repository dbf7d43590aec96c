// `crashsim inspect` and `crashsim resume` (store_commands.h).
#include "cli/store_commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <iostream>

#include "cli/inspect_workspace.h"
#include "crashsim/codes.h"
#include "crashsim/continuation.h"
#include "crashsim/error.h"
#include "crashsim/host.h"
#include "crashsim/recovery_resolver.h"
#include "crashsim/resume_plan.h"
#include "crashsim/scenario.h"
#include "crashsim/startup_repair.h"
#include "crashsim/store.h"
#include "crashsim/workspace_gc.h"

namespace crashsim::harness {
namespace {
namespace fs = std::filesystem;

// The error convention of store_commands.h around one command.
int guarded(const char* command, bool json, const std::function<int()>& body) {
  std::string code, message;
  try {
    return body();
  } catch (const Error& e) {
    code = e.code();
    message = e.what();
  } catch (const std::exception& e) {
    code = std::string(code::internal_error);
    message = printableUtf8(e.what());
  }
  if (json)
    std::cout << stableJson(Json{{"error", {{"code", code}, {"message", message}}}}) << "\n";
  std::cerr << "crashsim " << command << ": " << code << ": " << message << "\n";
  return 2;
}

std::vector<RuntimeEvent> runEvents(const RuntimeStore& store, const RunHeader& h) {
  std::vector<RuntimeEvent> out;
  for (auto& se : store.readRunEvents(h.sessionId, h.runId)) out.push_back(std::move(se.event));
  return out;
}

// The lineage the contract traverses for a run (spec e.4): its segments, oldest first.
Json lineageOf(RuntimeStore& store, const RunHeader& h) {
  try {
    const PrefixIdentity id{h.sessionId, h.invocationId, h.runId, h.turnId};
    const Lineage lineage = traverseLineage(store, h, readImmutablePrefix(store, id));
    Json segments = Json::array();
    for (const ImmutablePrefix& p : lineage.segments)
      segments.push_back(Json{{"runId", p.identity.runId},
                              {"invocationId", p.identity.invocationId},
                              {"lastEventSeq", p.lastEventSeq},
                              {"prefixDigest", p.prefixDigest}});
    return Json{{"segments", segments}};
  } catch (const Error& e) {
    return Json{{"error", {{"code", e.code()}, {"message", e.what()}}}};
  }
}

// How a resolver decision reads to a user: a safe never-dispatched call is not an unknown
// outcome.
std::string outcomeLabel(const std::string& status) {
  if (status == code::completed) return "settled";
  if (status == code::definitely_not_dispatched) return "safe: never dispatched";
  if (status == code::indeterminate) return "UNKNOWN OUTCOME";
  if (status == code::parked) return "parked";
  return status;
}

void printDecisions(const Json& resolution) {
  for (const auto& d : resolution.value("decisions", Json::array()))
    std::cout << fmt::format(
        "  operation {} {}: {} — {} / {}{}\n", d.value("toolCallId", "?"), d.value("toolName", ""),
        outcomeLabel(d.value("status", "?")), d.value("status", "?"), d.value("reason", "?"),
        d.contains("settlementOrigin") ? " (" + d["settlementOrigin"].get<std::string>() + ")"
                                       : "");
  for (const auto& i : resolution.value("issues", Json::array()))
    std::cout << fmt::format("  issue {} at {}\n", i.value("code", "?"), i.value("eventId", "?"));
}

void printRepair(const Json& r) {
  std::cout << "  repair: " << r.value("action", "?");
  if (r.contains("recoveryReason"))
    std::cout << " (" << r["recoveryReason"].get<std::string>() << ")";
  if (r.contains("detail")) std::cout << " — " << r["detail"].get<std::string>();
  std::cout << "\n";
}

bool sameRun(const Json& a, const Json& b) {
  return a.value("sessionId", "") == b.value("sessionId", "") &&
         a.value("runId", "") == b.value("runId", "");
}

int inspect(const std::string& storeDir, bool json) {
  StoreOptions so;
  so.readOnly = true;
  auto store = RuntimeStore::open(storeDir, so);
  store->checkIntact();  // the same first check as host start-up
  Json out = Json::object();
  out["integrity"] = "ok";
  out["claimRepair"] = repairContinuationClaims(*store, RepairMode::strict, true).toJson();
  out["repair"] = startupRepair(*store, RepairMode::strict, true).toJson();
  Json runs = Json::array();
  bool blocked = false;
  for (const auto& h : store->listRuns()) {
    auto events = runEvents(*store, h);
    const ResumePlan plan = buildResumePlan(events);  // carries the resolution
    blocked = blocked || plan.disposition != code::safe_replay;
    runs.push_back({{"header", h.toJson()},
                    {"events", events.size()},
                    {"resolution", toJson(plan.resolution)},
                    {"plan", toJson(plan, events)},
                    {"lineage", lineageOf(*store, h)}});
  }
  out["runs"] = runs;
  const std::optional<Json> workspace = cli::workspaceLineageJson(*store);
  if (workspace) out["workspace"] = *workspace;  // only with workspace facts (Phase 4)
  const int rc = blocked ? 1 : 0;
  if (json) {
    std::cout << out.dump(2) << "\n";
    return rc;
  }
  std::cout << "store " << storeDir << " (integrity ok, read only)\n";
  for (const auto& r : runs) {
    const auto& h = r["header"];
    std::cout << fmt::format("\nrun {} (session {}, invocation {}): status {}, {} events\n",
                             h.value("runId", "?"), h.value("sessionId", "?"),
                             h.value("invocationId", "?"), h.value("status", "?"),
                             r["events"].get<size_t>());
    for (const auto& a : out["repair"]["runs"])
      if (sameRun(a, h)) printRepair(a);
    const Json& lineage = r["lineage"];
    if (lineage.contains("error")) {
      std::cout << "  lineage: " << lineage["error"].value("code", "?") << "\n";
    } else if (lineage["segments"].size() > 1) {
      std::string chain;
      for (const auto& s : lineage["segments"])
        chain += (chain.empty() ? "" : " → ") + s.value("runId", "?");
      std::cout << "  lineage: " << chain << "\n";
    }
    printDecisions(r["resolution"]);
    const auto& p = r["plan"];
    std::cout << fmt::format("  plan: {}", p.value("disposition", "?"));
    if (!p["rejectionReasons"].empty())
      std::cout << " — rejection reasons " << p["rejectionReasons"].dump();
    std::cout << "\n";
    for (const auto& d : p["diagnostics"])
      std::cout << "    diagnostic " << d.value("code", "?")
                << (d.contains("detail") ? fmt::format(" {}", d["detail"].dump()) : "") << "\n";
    if (p.contains("directive") && p["directive"].is_string())
      std::cout << "    directive: " << p["directive"].get<std::string>() << "\n";
  }
  if (workspace) cli::printWorkspaceLineage(*workspace);
  return rc;
}

int resume(const ResumeArgs& args) {
  std::optional<Scenario> scenario;
  if (args.scenarioFile) scenario = loadScenario(*args.scenarioFile);
  HostStartupOptions options;
  options.storeDir = args.storeDir;
  if (args.workspaceDir) options.workspaceDir = fs::path(*args.workspaceDir);
  options.scenario = scenario ? &*scenario : nullptr;
  options.dryRun = args.dryRun;
  if (args.rebaseline)
    options.rebaseline =
        RebaselineConfirmation{args.rebaselineSession.value_or(""), *args.rebaseline};
  CancellationToken cancel;
  const HostStartupReport report = hostStartup(options, cancel);
  const int rc = report.blocked() ? 1 : 0;
  if (args.json) {
    Json j = report.toJson();
    j["exitCode"] = rc;
    std::cout << stableJson(j) << "\n";
    return rc;
  }
  std::cout << "crashsim resume " << args.storeDir
            << (args.dryRun ? " (dry run: nothing written)" : "") << "\n";
  if (!report.rebaseline.is_null())
    std::cout << "rebaseline " << stableJson(report.rebaseline) << "\n";
  size_t deferred = 0;
  for (const auto& op : report.reconcile.value("operations", Json::array()))
    deferred += op.value("action", "") == "deferred" ? 1 : 0;
  for (const Json& run : report.runs) {
    std::cout << fmt::format("run {} (session {}): {}\n", run.value("runId", "?"),
                             run.value("sessionId", "?"), run.value("status", "?"));
    for (const auto& a : report.startupRepair.value("runs", Json::array()))
      if (sameRun(a, run)) printRepair(a);
    for (const auto& op : report.reconcile.value("operations", Json::array())) {
      if (!sameRun(op, run)) continue;
      std::cout << fmt::format("  reconcile {} {}: {}", op.value("operationId", "?"),
                               op.value("toolName", ""), op.value("action", "?"));
      if (op.contains("observation"))
        std::cout << ", observed " << op["observation"].get<std::string>();
      if (op.contains("disposition"))
        std::cout << " → " << op["disposition"].get<std::string>() << " ("
                  << op.value("reasonCode", "?") << ")";
      if (op.contains("detail")) std::cout << " — " << op["detail"].get<std::string>();
      std::cout << "\n";
    }
    printDecisions(run["resolution"]);
  }
  bool needsWorkspace = deferred > 0;
  for (const ContinuationPlan& p : report.plans) {
    std::cout << fmt::format("session {}: plan {}", p.sessionId, p.decision);
    if (!p.sourceRunId.empty()) std::cout << " from run " << p.sourceRunId;
    std::string reasons;
    for (const std::string& r : p.rejectionReasons) {
      reasons += (reasons.empty() ? "" : ", ") + r;
      needsWorkspace = needsWorkspace || r == code::safety_observation_unavailable;
    }
    if (!reasons.empty()) std::cout << " — " << reasons;
    std::cout << "\n";
    for (const PlanDiagnostic& d : p.diagnostics)
      std::cout << "  diagnostic " << d.code << (d.detail ? " " + d.detail->dump() : "") << "\n";
    if (!p.isContinue() && p.boundary)  // what a user confirms a rebaseline against (g.1)
      std::cout << "  boundaryManifestDigest " << p.boundary->manifestDigest << "\n";
  }
  if (report.restoreResidue)
    std::cout << "restore residue quarantined: " << (*report.restoreResidue)["quarantined"].dump()
              << "\n";
  if (report.workspaceRestore)
    std::cout << "isolated restore: " << stableJson(*report.workspaceRestore) << "\n";
  if (report.continuation) {
    const RunSummary& c = *report.continuation;
    std::cout << fmt::format("continuation: run {}: {} ({} provider steps, {} tool calls)\n",
                             c.identity.runId, c.status, c.providerSteps, c.toolCalls);
  } else if (report.continuationNotRun) {
    std::cout << "continuation not run: " << *report.continuationNotRun
              << (*report.continuationNotRun == code::continuation_dry_run
                      ? " (a dry run never continues)"
                      : " — pass --scenario FILE to continue with its scripted model")
              << "\n";
  }
  if (needsWorkspace && !args.workspaceDir) {
    std::cout << "missing: --workspace DIR (";
    if (deferred > 0)
      std::cout << code::reconcile_workspace_required << ": " << deferred
                << " operation(s) wait for their reconciler, their runs stay open; ";
    std::cout << "a plan needs the workspace's safety observation)\n";
  }
  return rc;
}

}  // namespace

int gcDryRun(const std::string& storeDir, int64_t graceMs, bool json) {
  return guarded("gc", json, [&] {
    StoreOptions so;
    so.readOnly = true;
    auto store = RuntimeStore::open(storeDir, so);
    const WorkspaceGcReport r = collectWorkspaceGarbage(
        *store, resolveGitRuntime(),
        WorkspaceGcOptions{storeDir, std::chrono::milliseconds(graceMs), true});
    if (json) {
      std::cout << stableJson(Json{{"gc", r.toJson()}}) << "\n";
    } else {
      std::cout << (r.carrier ? "" : "no carrier: nothing to collect\n");
      for (const auto& name : r.wouldDelete) std::cout << "would delete " << name << "\n";
      for (const auto& k : r.kept) std::cout << "keep " << k.refName << " (" << k.reason << ")\n";
    }
    return 0;
  });
}

int inspectStore(const std::string& storeDir, bool json) {
  return guarded("inspect", json, [&] { return inspect(storeDir, json); });
}

int resumeStore(const ResumeArgs& args) {
  return guarded("resume", args.json, [&] { return resume(args); });
}

int exportStore(const std::string& storeDir) {
  return guarded("ledger export", false, [&] {
    StoreOptions so;
    so.readOnly = true;
    auto store = RuntimeStore::open(storeDir, so);
    store->checkIntact();  // a damaged store is not exported as if it were whole
    exportLegacyJsonl(*store, std::cout);
    return 0;
  });
}

int salvageStore(const std::string& storeDir, const std::string& newDir) {
  return guarded("store salvage-wal", false, [&] {
    salvageWalIntoNewStore(storeDir, newDir);
    std::cout << "salvaged " << storeDir << " into " << newDir
              << " (self-checks ok; the damaged store is unchanged)\n";
    return 0;
  });
}

}  // namespace crashsim::harness
