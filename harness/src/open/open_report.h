// open/open_report.h — the reports of an open sweep (crashsim sweep --runtime FILE --out DIR),
// written by the one report model's writers (crashsim/reports/report.h): report.json in
// report.schema.json's openReport shape, report.md, junit.xml and report.html. A case is a
// reports::CaseRecord with O1–O5 as its checks; the report carries the runtime (name, level,
// profile digest), the interposer and each scenario's reference run.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/harness/open_sweep.h"
#include "crashsim/reports/report.h"
#include "open/open_case.h"

namespace crashsim::harness {

// The record of one case: checks O1..O5 ("" pass, "n/a…" n/a, else fail with the reason),
// verdict fail when one of them failed; `baseline` when a --baseline entry lists the case.
reports::CaseRecord openCaseRecord(const OpenCaseResult& result, const std::string& reproduce,
                                   std::optional<reports::BaselineEntry> baseline);

// The report of a sweep of `driver`'s runtime with `opts`: the cases in plan order, each
// scenario's reference run, the platform of `workRoot` (the cases' file system) and the summary
// over `wallSeconds`. Throws crashsim::Error(runtime_profile_invalid) when the profile file
// cannot be read again for its digest.
reports::Report openReport(const OpenDriver& driver, const OpenSweepOptions& opts,
                           const std::map<std::string, OpenReference>& references,
                           std::vector<reports::CaseRecord> cases, double wallSeconds,
                           const std::filesystem::path& workRoot);

// Writes report.json, junit.xml, report.md and report.html into dir (reports::writeAll).
// Throws crashsim::Error(output_unwritable).
void writeOpenReports(const std::filesystem::path& dir, const reports::Report& report);

}  // namespace crashsim::harness
