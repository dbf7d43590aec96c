// The derived views of a report: JUnit XML, Markdown, static HTML with an SVG matrix.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <map>
#include <set>

#include "crashsim/reports/report.h"

namespace crashsim::reports {
namespace {

// Matrix columns: the agent-run kills P0–P9, the recovery kills of double faults under the
// failpoint that killed the recovery (R:P8–R:P11, not under the primary's; R:P0-7 the
// continuation killed inside its own tool calls, one column; R:S, R:F the recovery process at its
// own barriers), the races of two hosts (H2), then
// the unnamed barriers S and F.
const std::vector<std::string>& matrixColumns(const Report& r) {
  static const std::vector<std::string> cols = {
      "P0",   "P1",    "P2",    "P3",     "P4",  "P5",  "P6", "P7", "P8", "P9",    "R:P8",
      "R:P9", "R:P10", "R:P11", "R:P0-7", "R:S", "R:F", "H2", "S",  "F",  "K:P12", "K:P13"};
  // An open sweep: its crash points (crashsim/harness/open_driver.h), then the resume killed at
  // each of them (--double-faults).
  static const std::vector<std::string> open = {"MQ",   "MA",   "TC",   "TE",   "TR",   "S",
                                                "R:MQ", "R:MA", "R:TC", "R:TE", "R:TR", "R:S"};
  return r.runtime.empty() ? cols : open;
}
// Double faults by their second point: R: a killed recovery process, K: the stopping process
// killed on the Stop path (--mode stop).
std::string matrixColumnOf(const CaseRecord& c) {
  if (c.id.ends_with("+H2")) return "H2";  // a race of two hosts (harness verdicts/h1_race.h)
  if (!c.recoveryFailpoint) return c.failpoint;
  if (c.mode != "stop" && c.recoveryFailpoint->size() == 2 && (*c.recoveryFailpoint)[1] <= '7')
    return "R:P0-7";
  return (c.mode == "stop" ? "K:" : "R:") + *c.recoveryFailpoint;
}

std::string xmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // XML 1.0 forbids most control characters; replace them.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

std::string mdEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n')
      out += ' ';
    else
      out += c;
  }
  return out;
}

// HTML anchor id for a case ("case-" + id with every non [A-Za-z0-9_-] byte hex-escaped).
std::string anchor(std::string_view id) {
  std::string out = "case-";
  for (unsigned char c : id) {
    if (std::isalnum(c) || c == '-' || c == '_')
      out += static_cast<char>(c);
    else
      out += fmt::format(".{:02x}", c);
  }
  return out;
}

// A case JUnit reports as <failure>: one that fails the gate (failsGate, report.h).
bool junitFailure(const CaseRecord& c) { return failsGate(c); }

// A known finding of an open sweep's baseline, failing exactly as its entry says: <skipped>.
bool knownFinding(const CaseRecord& c) {
  return c.baseline && c.baseline->change.empty() && c.verdict == "fail";
}

std::string failedChecks(const CaseRecord& c) {
  std::string out;
  for (const auto& [name, ch] : c.checks)
    if (ch.status == "fail") out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::string failureText(const CaseRecord& c) {
  std::string out;
  if (c.baseline) out += "baseline: " + c.baseline->change + "\n";
  for (const auto& [name, ch] : c.checks)
    if (ch.status == "fail") out += name + " fail: " + ch.reason + "\n";
  out += "reproduce: " + c.reproduce + "\n";
  return out;
}

std::string platformLine(const Platform& p, bool open = false) {
  if (open)  // an open sweep's platform: the machine and crashsim's build (openPlatform)
    return fmt::format("{} {} ({}), fs {}, {}, {}", p.os, p.kernel, p.arch, p.fsType, p.compiler,
                       p.buildType);
  return fmt::format("{} {} ({}), fs {}, SQLite {} journal_mode={} synchronous={}, {}, {}", p.os,
                     p.kernel, p.arch, p.fsType, p.sqliteVersion, p.journalMode, p.synchronous,
                     p.compiler, p.buildType);
}

}  // namespace

std::string budgetLine(const Report& r) {
  const auto& s = r.summary;
  double sum = 0;
  std::vector<std::pair<double, std::string>> phases;
  for (const auto& [phase, ms] : s.phasesMs) sum += ms, phases.emplace_back(ms, phase);
  std::sort(phases.rbegin(), phases.rend());
  std::string out = fmt::format(
      "crash budget: {} cases in {:.1f} s on {} worker(s), {:.2f} cases/s per core, {:.1f}% of the "
      "selection ran; per case",
      s.total, s.wallSeconds, s.workers, s.casesPerSecondPerCore, s.fractionRun * 100);
  for (const auto& [ms, phase] : phases)
    out += fmt::format(" {} {:.1f} ms ({:.0f}%),", phase, s.total > 0 ? ms / s.total : 0,
                       sum > 0 ? 100 * ms / sum : 0);
  if (!phases.empty()) out.pop_back();
  return out;
}

std::string renderJunit(const Report& r) {
  int failures = 0, skipped = 0;
  for (const auto& c : r.cases) failures += junitFailure(c), skipped += knownFinding(c);
  // `skipped` only when a case is (an open sweep's known findings): the built-in sweep's JUnit
  // stays byte for byte what it was.
  const auto skippedAttr = [](int n) {
    return n > 0 ? fmt::format(" skipped=\"{}\"", n) : std::string();
  };
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out +=
      fmt::format("<testsuites name=\"crashsim\" tests=\"{}\" failures=\"{}\"{} time=\"{:.3f}\">\n",
                  r.summary.total, failures, skippedAttr(skipped), r.summary.wallSeconds);
  // One testsuite per scenario, one testcase per case.
  std::map<std::string, std::vector<const CaseRecord*>> byScenario;
  for (const auto& c : r.cases) byScenario[c.scenario].push_back(&c);
  for (const auto& [scenario, cases] : byScenario) {
    int suiteFailures = 0, suiteSkipped = 0;
    double time = 0;
    for (auto* c : cases) {
      suiteFailures += junitFailure(*c);
      suiteSkipped += knownFinding(*c);
      time += c->durationMs / 1000.0;
    }
    out += fmt::format(
        "  <testsuite name=\"crashsim.{}\" tests=\"{}\" failures=\"{}\"{} time=\"{:.3f}\">\n",
        xmlEscape(scenario), cases.size(), suiteFailures, skippedAttr(suiteSkipped), time);
    for (auto* c : cases) {
      out += fmt::format("    <testcase classname=\"crashsim.{}\" name=\"{}\" time=\"{:.3f}\"",
                         xmlEscape(scenario), xmlEscape(c->id), c->durationMs / 1000.0);
      if (junitFailure(*c)) {
        out += ">\n";
        out += fmt::format("      <failure message=\"{}\" type=\"crash-contract\">{}</failure>\n",
                           xmlEscape(c->baseline ? "baseline: " + c->baseline->change
                                                 : "verdict fail: " + failedChecks(*c)),
                           xmlEscape(failureText(*c)));
        out += "    </testcase>\n";
      } else if (knownFinding(*c)) {
        out += ">\n";
        out += fmt::format(
            "      <skipped message=\"{}\">{}</skipped>\n",
            xmlEscape("known finding (baseline): " + failedChecks(*c) + ": " + c->baseline->reason),
            xmlEscape(failureText(*c)));
        out += "    </testcase>\n";
      } else {
        out += "/>\n";
      }
    }
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

namespace {

// Corrupt mode: per damage kind {cases, detectable, failed_closed, recovered, undetectable,
// unsafe}; empty when no case carries a corruption.
std::map<std::string, std::array<int, 6>> corruptionRows(const Report& r) {
  std::map<std::string, std::array<int, 6>> rows;
  for (const auto& c : r.cases) {
    if (!c.corruption) continue;
    auto& n = rows[c.corruption->kind];
    ++n[0];
    n[1] += c.corruption->detectable;
    const auto& o = c.corruption->outcome;
    n[2] += o == "failed_closed";
    n[3] += o == "recovered";
    n[4] += o == "undetectable";
    n[5] += o == "unsafe" || o.empty();
  }
  return rows;
}

}  // namespace

std::string renderMarkdown(const Report& r) {
  const bool open = !r.runtime.empty();
  std::string out = open ? "# crashsim open sweep of " + mdEscape(r.runtime) + "\n\n"
                         : std::string("# crashsim crash sweep\n\n");
  if (!open) {
    out += fmt::format("**{}** — {} cases, {} passed, {} failed.\n\n",
                       r.summary.failed == 0 ? "PASS" : "FAIL", r.summary.total, r.summary.passed,
                       r.summary.failed);
    out += fmt::format("- crashsim {} (report format {}), mode `{}`, double faults {}, seed {}\n",
                       r.crashsimVersion, r.formatVersion, r.selection.mode,
                       r.selection.doubleFaults ? "on" : "off", r.selection.seed);
  } else {
    // The gate: a known finding of the baseline is not a failure of the sweep.
    const auto known = std::count_if(r.cases.begin(), r.cases.end(), knownFinding);
    const auto gate = std::count_if(r.cases.begin(), r.cases.end(), junitFailure);
    out += fmt::format(
        "**{}** — {} cases, {} passed, {} failed ({} known finding(s) of the baseline, {} "
        "failing the gate).\n\n",
        gate == 0 ? "PASS" : "FAIL", r.summary.total, r.summary.passed, r.summary.failed, known,
        gate);
    out += fmt::format(
        "- crashsim {} (report format {}), runtime `{}` level {} (profile `{}`), mode `kill`, "
        "double faults {}, O5 on {}, barrier interposer {}\n",
        r.crashsimVersion, r.formatVersion, mdEscape(r.runtime), r.runtimeLevel, r.profileDigest,
        r.selection.doubleFaults ? "on" : "off", r.selection.determinism,
        r.interposerPreloaded ? "preloaded" : "absent (no S case)");
  }
  out += "- platform: " + platformLine(r.platform, open) + "\n";
  for (size_t i = 1; i < r.platforms.size(); ++i)
    out += "- platform: " + platformLine(r.platforms[i], open) + "\n";
  out += fmt::format("- timing: {:.1f} cases/s, median {:.1f} ms, p95 {:.1f} ms, wall {:.1f} s\n",
                     r.summary.casesPerSecond, r.summary.medianCaseMs, r.summary.p95CaseMs,
                     r.summary.wallSeconds);
  out += "- " + budgetLine(r) + "\n\n";
  // Matrix scenario × failpoint: failed/total per cell.
  std::set<std::string> scenarios;
  for (const auto& c : r.cases) scenarios.insert(c.scenario);
  out += "| scenario |";
  for (const auto& col : matrixColumns(r)) out += fmt::format(" {} |", col);
  out += "\n|---|";
  for (size_t p = 0; p < matrixColumns(r).size(); ++p) out += "---|";
  out += "\n";
  for (const auto& s : scenarios) {
    out += "| " + mdEscape(s) + " |";
    for (const auto& col : matrixColumns(r)) {
      int total = 0, failed = 0;
      for (const auto& c : r.cases)
        if (c.scenario == s && matrixColumnOf(c) == col) {
          ++total;
          failed += c.verdict == "fail";
        }
      if (total == 0)
        out += " · |";
      else if (failed == 0)
        out += fmt::format(" ✅ {} |", total);
      else
        out += fmt::format(" ❌ {}/{} |", failed, total);
    }
    out += "\n";
  }
  out += "\n";
  if (open && !r.scenarioRuns.empty()) {
    // The reference runs: every hit is one case.
    std::set<std::string> named;
    for (const auto& [id, s] : r.scenarioRuns)
      for (const auto& [point, n] : s.hits)
        if (std::find(matrixColumns(r).begin(), matrixColumns(r).end(), point) ==
            matrixColumns(r).end())
          named.insert(point);
    std::vector<std::string> points = {"MQ", "MA", "TC", "TE", "TR", "S"};
    points.insert(points.end(), named.begin(), named.end());
    out += "## Reference runs (hits per crash point)\n\n| scenario |";
    for (const auto& p : points) out += " " + mdEscape(p) + " |";
    out += " interposer loaded | ms |\n|---|";
    for (size_t p = 0; p < points.size(); ++p) out += "---|";
    out += "---|---|\n";
    for (const auto& [id, s] : r.scenarioRuns) {
      out += "| " + mdEscape(id) + " |";
      for (const auto& p : points) {
        const auto it = s.hits.find(p);
        out += fmt::format(" {} |", it == s.hits.end() ? 0 : it->second);
      }
      out += fmt::format(" {} | {:.0f} |\n", s.interposerLoaded ? "yes" : "no", s.referenceMs);
    }
    out += "\n";
  }
  if (r.manifest)
    out += fmt::format("- manifest: {} case(s), `{}` (whole selection: {}, `{}`)\n\n",
                       r.manifest->cases, r.manifest->digest, r.manifest->sweepCases,
                       r.manifest->sweepDigest);
  if (!r.coverage.empty()) {
    // Agent-run kills by their failpoint, recovery kills (double faults) by theirs.
    out +=
        "## Coverage\n\n| scenario | process | failpoint | predicted | planned | run | passed | "
        "failed | skipped |\n|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& c : r.coverage)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", mdEscape(c.scenario),
                         c.process, c.failpoint, c.predicted, c.planned, c.run, c.passed, c.failed,
                         c.skipped());
    out += "\n";
  }
  if (const auto rows = corruptionRows(r); !rows.empty()) {
    // Corrupt mode: per damage class, how the host handled it; then the undetectable column.
    out +=
        "## Corruption\n\n| damage | cases | must be detected | failed closed | recovered | "
        "undetectable | unsafe |\n|---|---|---|---|---|---|---|\n";
    for (const auto& [kind, n] : rows)
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", kind, n[0], n[1], n[2], n[3],
                         n[4], n[5]);
    out += "\nUndetectable by design, and what recovery did:\n\n";
    int listed = 0;
    for (const auto& c : r.cases) {
      if (!c.corruption || c.corruption->outcome != "undetectable") continue;
      if (++listed > 50) break;
      out += fmt::format("- `{}` {}: {}\n", c.id, mdEscape(c.corruption->detail),
                         mdEscape(c.corruption->recovery));
    }
    if (listed == 0) out += "- none\n";
    out += "\n";
  }
  if (r.summary.failed > 0 || std::any_of(r.cases.begin(), r.cases.end(), junitFailure)) {
    out += "## Failures\n\n";
    for (const auto& c : r.cases) {
      if (c.verdict != "fail" && !junitFailure(c)) continue;
      out += fmt::format("### `{}`{}\n\n", c.id, knownFinding(c) ? " (known finding)" : "");
      if (c.baseline)
        out += fmt::format(
            "- **baseline** ({}): {}\n", fmt::join(c.baseline->verdicts, ", "),
            mdEscape(c.baseline->change.empty() ? c.baseline->reason : c.baseline->change));
      for (const auto& [name, ch] : c.checks)
        if (ch.status == "fail")
          out += fmt::format("- **{}** fail: {}\n", name, mdEscape(ch.reason));
      out += fmt::format("\n```\n{}\n```\n\n", c.reproduce);
    }
  }
  return out;
}

std::string renderHtml(const Report& r) {
  std::vector<std::string> scenarios;
  {
    std::set<std::string> s;
    for (const auto& c : r.cases) s.insert(c.scenario);
    scenarios.assign(s.begin(), s.end());
  }
  const int cell = 44, labelW = 240, top = 28;
  const auto& cols = matrixColumns(r);
  const int width = labelW + static_cast<int>(cols.size()) * cell + 10;
  const int height = top + static_cast<int>(scenarios.size()) * cell + 60;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"scenario by failpoint verdict matrix\">\n",
      width, height);
  for (size_t p = 0; p < cols.size(); ++p)
    svg += fmt::format("<text x=\"{}\" y=\"18\" text-anchor=\"middle\" class=\"h\">{}</text>\n",
                       labelW + static_cast<int>(p) * cell + cell / 2, cols[p]);
  for (size_t row = 0; row < scenarios.size(); ++row) {
    const auto& s = scenarios[row];
    int y = top + static_cast<int>(row) * cell;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\" class=\"h\">{}</text>\n",
                       labelW - 8, y + cell / 2 + 4, xmlEscape(s));
    for (size_t p = 0; p < cols.size(); ++p) {
      const std::string& fp = cols[p];
      int total = 0, failed = 0;
      const CaseRecord* target = nullptr;
      for (const auto& c : r.cases) {
        if (c.scenario != s || matrixColumnOf(c) != fp) continue;
        ++total;
        if (c.verdict == "fail") {
          ++failed;
          if (!target || target->verdict != "fail") target = &c;
        } else if (!target) {
          target = &c;
        }
      }
      int x = labelW + static_cast<int>(p) * cell;
      std::string colour = total == 0 ? "#d0d0d0" : failed ? "#d9534f" : "#5cb85c";
      std::string title = total == 0
                              ? fmt::format("{} {}: not reached", s, fp)
                              : fmt::format("{} {}: {} case(s), {} failed", s, fp, total, failed);
      std::string rect = fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
          "stroke=\"#fff\"><title>{}</title></rect>",
          x, y, cell, cell, colour, xmlEscape(title));
      std::string label =
          total == 0
              ? ""
              : fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"n\">{}</text>",
                            x + cell / 2, y + cell / 2 + 4,
                            failed ? fmt::format("{}/{}", failed, total) : std::to_string(total));
      if (target)
        svg += fmt::format("<a href=\"#{}\">{}{}</a>\n", anchor(target->id), rect, label);
      else
        svg += rect + "\n";
    }
  }
  // Legend.
  int ly = top + static_cast<int>(scenarios.size()) * cell + 20;
  int lx = labelW;
  for (auto [colour, text] :
       std::vector<std::pair<std::string, std::string>>{{"#5cb85c", "all cases pass"},
                                                        {"#d9534f", "failed/total"},
                                                        {"#d0d0d0", "not reached"}}) {
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\" class=\"h\">{}</text>\n",
        lx, ly, colour, lx + 20, ly + 12, text);
    lx += 150;
  }
  svg += "</svg>\n";

  const std::string title =
      r.runtime.empty() ? "crashsim crash sweep" : "crashsim open sweep of " + xmlEscape(r.runtime);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>" +
      title +
      "</title>\n<style>\n"
      "body{font-family:sans-serif;margin:2em;color:#222}"
      "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}"
      ".pass{color:#2d7a2d}.fail{color:#b52b27;font-weight:bold}.na{color:#888}" +
      std::string(r.runtime.empty() ? "" : ".known{color:#a66d00}") +
      "svg .h{font-size:12px;fill:#222}svg .n{font-size:11px;fill:#fff}"
      "code{background:#f4f4f4;padding:1px 4px}\n"
      "</style>\n</head>\n<body>\n";
  out += fmt::format("<h1>{}: {}</h1>\n", title,
                     std::none_of(r.cases.begin(), r.cases.end(), junitFailure) ? "PASS" : "FAIL");
  out += fmt::format(
      "<p>{} cases, {} passed, {} failed &mdash; {:.1f} cases/s, median {:.1f} ms, p95 {:.1f} ms, "
      "wall {:.1f} s</p>\n",
      r.summary.total, r.summary.passed, r.summary.failed, r.summary.casesPerSecond,
      r.summary.medianCaseMs, r.summary.p95CaseMs, r.summary.wallSeconds);
  out += "<p>" + xmlEscape(budgetLine(r)) + "</p>\n";
  if (r.runtime.empty())
    out += "<p>crashsim " + xmlEscape(r.crashsimVersion) + ", mode " + xmlEscape(r.selection.mode) +
           ", platform: " + xmlEscape(platformLine(r.platform)) + "</p>\n";
  else
    out += "<p>crashsim " + xmlEscape(r.crashsimVersion) + ", runtime " + xmlEscape(r.runtime) +
           fmt::format(" level {}", r.runtimeLevel) +
           ", mode kill, platform: " + xmlEscape(platformLine(r.platform, true)) + "</p>\n";
  out += "<h2>Matrix (scenario &times; failpoint)</h2>\n" + svg;
  if (const auto rows = corruptionRows(r); !rows.empty()) {
    out +=
        "<h2>Corruption</h2>\n<table>\n<tr><th>damage</th><th>cases</th><th>must be "
        "detected</th><th>failed closed</th><th>recovered</th><th>undetectable</th><th>unsafe</th>"
        "</tr>\n";
    for (const auto& [kind, n] : rows)
      out += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></"
          "tr>\n",
          kind, n[0], n[1], n[2], n[3], n[4], n[5]);
    out += "</table>\n";
  }
  out += "<h2>Cases</h2>\n<table>\n<tr><th>case</th><th>verdict</th>";
  // V1–V9, then the optional checks (D1, D2) that at least one case evaluated; an open sweep's
  // cases carry O1–O5 instead of V1–V9.
  std::vector<std::string_view> columns;
  if (r.runtime.empty()) columns.assign(kCheckNames.begin(), kCheckNames.end());
  for (auto n : kOptionalCheckNames)
    if (std::any_of(r.cases.begin(), r.cases.end(),
                    [&](const CaseRecord& c) { return c.checks.count(std::string(n)) > 0; }))
      columns.push_back(n);
  if (!r.runtime.empty())
    columns.insert(columns.end(), kOpenCheckNames.begin(), kOpenCheckNames.end());
  for (auto n : columns) out += fmt::format("<th>{}</th>", n);
  out += "<th>reasons</th><th>reproduce</th></tr>\n";
  for (const auto& c : r.cases) {
    // An open sweep's known finding shows "known"; a baseline difference "fail".
    const std::string verdict = knownFinding(c)                 ? "known"
                                : c.baseline && junitFailure(c) ? "fail"
                                                                : c.verdict;
    out += fmt::format("<tr id=\"{}\"><td><code>{}</code></td><td class=\"{}\">{}</td>",
                       anchor(c.id), xmlEscape(c.id), verdict, verdict);
    std::string reasons;
    if (c.baseline)
      reasons += fmt::format(
          "baseline: {}<br>",
          xmlEscape(c.baseline->change.empty() ? c.baseline->reason : c.baseline->change));
    for (auto n : columns) {
      auto it = c.checks.find(std::string(n));
      std::string st = it == c.checks.end() ? "n/a" : it->second.status;
      out += fmt::format("<td class=\"{}\">{}</td>", st == "n/a" ? "na" : st, st);
      if (it != c.checks.end() && st != "pass")
        reasons += fmt::format("{}: {}<br>", n, xmlEscape(it->second.reason));
    }
    out +=
        fmt::format("<td>{}</td><td><code>{}</code></td></tr>\n", reasons, xmlEscape(c.reproduce));
  }
  out += "</table>\n</body>\n</html>\n";
  return out;
}

void writeAll(const Report& report, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  auto put = [&](const char* name, const std::string& text) {
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();  // a short write (a full disk) shows only once the buffer is flushed
    if (!f) throw ReportError("output_unwritable: cannot write " + (dir / name).string());
  };
  put("report.json", renderJson(report));
  put("junit.xml", renderJunit(report));
  put("report.md", renderMarkdown(report));
  put("report.html", renderHtml(report));
}

}  // namespace crashsim::reports
