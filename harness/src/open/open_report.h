// open/open_report.h — the JUnit and HTML views of an open sweep (crashsim sweep --runtime FILE
// --out DIR), written by the one report model's writers (crashsim/reports/report.h): a case is a
// reports::CaseRecord with O1–O5 as its checks and the runtime's name on the report.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "crashsim/reports/report.h"
#include "open/open_case.h"

namespace crashsim::harness {

// The record of one case: checks O1..O5 ("" pass, "n/a…" n/a, else fail with the reason),
// verdict fail when one of them failed; `baseline` when a --baseline entry lists the case.
reports::CaseRecord openCaseRecord(const OpenCaseResult& result, const std::string& reproduce,
                                   std::optional<reports::BaselineEntry> baseline);

// Writes junit.xml and report.html into dir: one testcase per case (a <failure> per case whose
// verdicts fail unlisted or differ from their baseline entry, <skipped> with the entry's reason
// for a known finding) and the table of O1–O5. Throws crashsim::Error(output_unwritable).
void writeOpenViews(const std::filesystem::path& dir, const std::string& runtime,
                    std::vector<reports::CaseRecord> cases, double wallSeconds);

}  // namespace crashsim::harness
