// `crashsim durability`: platform measurements + bounded kill/power-loss sweeps → a matrix.
#include "crashsim/harness/durability.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "crashsim/harness/case_runner.h"
#include "crashsim/harness/fault_mode.h"
#include "crashsim/harness/sweep.h"
#include "crashsim/reports/report.h"

namespace crashsim::harness {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double round1(double v) { return std::round(v * 10) / 10; }

// Nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

Json latencyJson(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {{"samples", us.size()},
          {"medianUs", round1(percentile(us, 50))},
          {"p95Us", round1(percentile(us, 95))}};
}

// Latency of fsync or fdatasync after a 4 KiB write (appending, so fdatasync has to persist
// the size change as well as the data), in microseconds.
Json syncLatency(const fs::path& dir, bool data, int samples) {
  auto probe = dir / (data ? "fdatasync-probe" : "fsync-probe");
  int fd = ::open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return {{"error", fmt::format("open {}: {}", probe.string(), std::strerror(errno))}};
  std::vector<double> us;
  char block[4096];
  std::fill(std::begin(block), std::end(block), 'x');
  std::string error;
  for (int i = 0; i < samples; ++i) {
    if (::write(fd, block, sizeof block) != static_cast<ssize_t>(sizeof block)) {
      error = std::string("write: ") + std::strerror(errno);
      break;
    }
    auto t0 = Clock::now();
    if ((data ? ::fdatasync(fd) : ::fsync(fd)) != 0) {
      error = std::string(data ? "fdatasync: " : "fsync: ") + std::strerror(errno);
      break;
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(fd);
  std::error_code ec;
  fs::remove(probe, ec);
  Json j = latencyJson(us);
  if (!error.empty()) j["error"] = error;
  return j;
}

// Single-row autocommit inserts into a fresh WAL database under the given synchronous setting.
Json commitRate(const fs::path& dir, const std::string& sync, int commits) {
  auto db = dir / fmt::format("commit-rate-{}.db", sync);
  for (auto suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    fs::remove(db.string() + suffix, ec);
  }
  sqlite3* h = nullptr;
  Json j;
  auto fail = [&](const std::string& what) {
    j = {{"error", what + ": " + (h ? sqlite3_errmsg(h) : "open failed")}};
  };
  if (sqlite3_open(db.c_str(), &h) != SQLITE_OK) {
    fail("open");
  } else if (sqlite3_exec(h,
                          ("PRAGMA journal_mode=WAL; PRAGMA synchronous=" + sync +
                           "; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);")
                              .c_str(),
                          nullptr, nullptr, nullptr) != SQLITE_OK) {
    fail("set-up");
  } else {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, "INSERT INTO t(v) VALUES (randomblob(200))", -1, &st, nullptr) !=
        SQLITE_OK) {
      fail("prepare");
    } else {
      std::vector<double> us;
      auto start = Clock::now();
      bool ok = true;
      for (int i = 0; i < commits && ok; ++i) {
        auto t0 = Clock::now();
        ok = sqlite3_step(st) == SQLITE_DONE;
        sqlite3_reset(st);
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      double secs = std::chrono::duration<double>(Clock::now() - start).count();
      sqlite3_finalize(st);
      if (!ok) {
        fail("insert");
      } else {
        j = latencyJson(us);
        j["commits"] = commits;
        j["commitsPerSecond"] =
            static_cast<long long>(std::llround(commits / std::max(secs, 1e-9)));
      }
    }
  }
  sqlite3_close(h);
  for (auto suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    fs::remove(db.string() + suffix, ec);
  }
  j["journalMode"] = "wal";
  j["synchronous"] = sync;
  return j;
}

// /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescapeMount(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool underMount(const std::string& path, const std::string& mnt) {
  if (mnt == "/") return true;
  return path == mnt ||
         (path.rfind(mnt, 0) == 0 && path.size() > mnt.size() && path[mnt.size()] == '/');
}

// The mount that holds dir: the longest mount point that is a prefix of its canonical path
// (the last such line wins for stacked mounts, as the kernel shows the top one last).
Json mountOf(const fs::path& dir) {
  std::error_code ec;
  std::string path = fs::canonical(dir, ec).string();
  if (ec) path = fs::absolute(dir).string();
  std::ifstream in("/proc/self/mountinfo");
  if (!in) return {{"error", "/proc/self/mountinfo not readable"}};
  Json best;
  size_t bestLen = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::vector<std::string> f;
    for (std::string w; ls >> w;) f.push_back(w);
    auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 6 || dash == f.end() || f.end() - dash < 3) continue;
    std::string mnt = unescapeMount(f[4]);
    if (!underMount(path, mnt) || mnt.size() < bestLen) continue;
    bestLen = mnt.size();
    best = {{"mountPoint", mnt},
            {"fsType", *(dash + 1)},
            {"source", unescapeMount(*(dash + 2))},
            {"mountOptions", f[5]},
            {"superOptions", dash + 3 < f.end() ? *(dash + 3) : ""}};
  }
  if (best.is_null()) return {{"error", "no mount point found for " + path}};
  return best;
}

Json platformJson(const reports::Platform& p) {
  return {{"os", p.os},
          {"kernel", p.kernel},
          {"arch", p.arch},
          {"fsType", p.fsType},
          {"sqliteVersion", p.sqliteVersion},
          {"sqliteCompileOptions", p.sqliteCompileOptions},
          {"compiler", p.compiler},
          {"buildType", p.buildType},
          {"journalMode", p.journalMode}};
}

int fpNumber(const std::string& fp) { return fp.size() > 1 ? std::atoi(fp.c_str() + 1) : 0; }

struct Cell {
  int total = 0, passed = 0, failed = 0, d1Lost = 0, d2Failed = 0;
};
using CellKey = std::tuple<int, std::string, std::string>;  // failpoint number, mode, sync

void addToMatrix(std::map<CellKey, Cell>& m, const reports::Report& rep, const std::string& sync) {
  for (const auto& c : rep.cases) {
    auto& cell = m[{fpNumber(c.failpoint), c.mode, sync}];
    ++cell.total;
    (c.verdict == "pass" ? cell.passed : cell.failed)++;
    if (auto it = c.checks.find("D1"); it != c.checks.end() && it->second.status == "fail")
      ++cell.d1Lost;
    if (auto it = c.checks.find("D2"); it != c.checks.end() && it->second.status == "fail")
      ++cell.d2Failed;
  }
}

std::string cellText(const Json& c) {
  if (c.is_null()) return "—";
  std::string s = fmt::format("{}/{} pass", c["passed"].get<int>(), c["total"].get<int>());
  if (c["d1Lost"].get<int>() > 0) s += fmt::format(", D1 lost: {}", c["d1Lost"].get<int>());
  if (c["d2Failed"].get<int>() > 0) s += fmt::format(", D2 FAIL: {}", c["d2Failed"].get<int>());
  return s;
}

std::string rowKey(const Json& c) {
  return fmt::format("{:02d}|{}|{}", fpNumber(c["failpoint"].get<std::string>()),
                     c["mode"].get<std::string>(), c["synchronous"].get<std::string>());
}

// Union of matrix rows over all platforms, in (failpoint, mode, sync) order, and the cell of
// every platform for each row.
std::map<std::string, std::vector<Json>> mergedMatrix(const Json& doc) {
  std::map<std::string, std::vector<Json>> rows;
  const auto& ps = doc["platforms"];
  for (size_t i = 0; i < ps.size(); ++i)
    for (const auto& c : ps[i]["matrix"]) {
      auto& row = rows[rowKey(c)];
      row.resize(ps.size());
      row[i] = c;
    }
  return rows;
}

std::string htmlEscape(const std::string& s) {
  std::string o;
  for (char ch : s) switch (ch) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += ch;
    }
  return o;
}

std::string str(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "—";
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v)
      s += (s.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
    return s;
  }
  return v.dump();
}

// The facts rows shown for every platform: (label, value).
std::vector<std::pair<std::string, std::string>> factRows(const Json& p) {
  const auto& pl = p["platform"];
  const auto& mt = p["mount"];
  const auto& me = p["measurements"];
  auto lat = [](const Json& l) {
    if (l.contains("error")) return "error: " + l["error"].get<std::string>();
    return fmt::format("median {} µs, p95 {} µs (n={})", l["medianUs"].dump(), l["p95Us"].dump(),
                       l["samples"].dump());
  };
  auto rate = [](const Json& r) {
    if (r.contains("error")) return "error: " + r["error"].get<std::string>();
    return fmt::format("{} commits/s (median {} µs, p95 {} µs, n={})", r["commitsPerSecond"].dump(),
                       r["medianUs"].dump(), r["p95Us"].dump(), r["commits"].dump());
  };
  return {{"OS / kernel / arch", str(pl, "os") + " " + str(pl, "kernel") + " " + str(pl, "arch")},
          {"store directory", str(p, "storeDir")},
          {"file system", str(pl, "fsType")},
          {"mount point", str(mt, "mountPoint") + " (" + str(mt, "source") + ")"},
          {"mount options", str(mt, "mountOptions") + "; super: " + str(mt, "superOptions")},
          {"SQLite", str(pl, "sqliteVersion")},
          {"SQLite compile options", str(pl, "sqliteCompileOptions")},
          {"journal mode", str(pl, "journalMode")},
          {"compiler / build", str(pl, "compiler") + " / " + str(pl, "buildType")},
          {"fsync (4 KiB append)", lat(me["fsync"])},
          {"fdatasync (4 KiB append)", lat(me["fdatasync"])},
          {"commit rate, synchronous=FULL", rate(me["commitRate"]["FULL"])},
          {"commit rate, synchronous=NORMAL", rate(me["commitRate"]["NORMAL"])},
          {"report wall time", fmt::format("{} s", p["wallSeconds"].dump())}};
}

const char* kCaveat =
    "The power-loss mode is a simulation of lost unsynced writes (a fault-injecting SQLite VFS "
    "and file model), not a pulled plug: it does not model controller or firmware caches or "
    "damage to already-synced sectors. A process kill keeps the page cache, so its result does "
    "not depend on the sync setting (kill runs under FULL only). Under synchronous=NORMAL, lost "
    "acknowledged commits (D1) are the expected finding; D2 (fail-closed) must still pass.";

}  // namespace

bool isDurabilityJson(const Json& j) {
  return j.is_object() && j.contains("kind") && j["kind"] == "durability";
}

Json runDurability(const DurabilityOptions& opts) {
  auto start = Clock::now();
  fs::path storeDir = opts.storeDir.empty() ? defaultWorkRoot("powerloss") /
                                                  fmt::format("crashsim-durability-{}", ::getpid())
                                            : opts.storeDir;
  fs::create_directories(storeDir);

  Json p;
  auto platform = describePlatform(storeDir);
  p["name"] = opts.name.empty()
                  ? fmt::format("{}-{}-{}", platform.os, platform.arch, platform.fsType)
                  : opts.name;
  p["platform"] = platformJson(platform);
  p["storeDir"] = storeDir.string();
  p["mount"] = mountOf(storeDir);
  std::fprintf(stderr, "crashsim durability: measuring fsync/fdatasync/commit rate in %s\n",
               storeDir.c_str());
  Json me;
  me["fsync"] = syncLatency(storeDir, false, opts.latencySamples);
  me["fdatasync"] = syncLatency(storeDir, true, opts.latencySamples);
  me["commitRate"]["FULL"] = commitRate(storeDir, "FULL", opts.commits);
  me["commitRate"]["NORMAL"] = commitRate(storeDir, "NORMAL", opts.commits);
  p["measurements"] = me;
  if (opts.storeDir.empty()) {
    std::error_code ec;
    fs::remove_all(storeDir, ec);
  }

  std::map<CellKey, Cell> matrix;
  Json sweeps = Json::array();
  auto sweep = [&](const std::string& mode, const std::string& sync) {
    SweepOptions so;
    so.scenarios = opts.scenarios;
    so.mode = mode;
    so.synchronous = sync;
    so.states = opts.states;
    so.jobs = opts.jobs;
    so.scenarioDir = opts.scenarioDir;
    std::fprintf(stderr, "crashsim durability: %s sweep, synchronous=%s\n", mode.c_str(),
                 sync.c_str());
    auto rep = runSweep(so);
    // The journal mode the agent's store connections reported (the first sweep's reference runs,
    // at the contract's durability).
    if (sweeps.empty()) p["platform"]["journalMode"] = rep.platform.journalMode;
    addToMatrix(matrix, rep, sync);
    sweeps.push_back({{"mode", mode},
                      {"synchronous", sync},
                      {"scenarios", opts.scenarios},
                      {"states", faultMode(mode).seeded() ? Json(opts.states) : Json()},
                      {"total", rep.summary.total},
                      {"passed", rep.summary.passed},
                      {"failed", rep.summary.failed},
                      {"wallSeconds", round1(rep.summary.wallSeconds)}});
  };
  sweep("kill", "FULL");
  sweep("stop", "FULL");  // a Stop at every point instead of the kill (termination contract)
  sweep("powerloss", "FULL");
  sweep("powerloss", "NORMAL");
  p["sweeps"] = sweeps;
  Json m = Json::array();
  for (const auto& [k, c] : matrix)
    m.push_back({{"failpoint", fmt::format("P{}", std::get<0>(k))},
                 {"mode", std::get<1>(k)},
                 {"synchronous", std::get<2>(k)},
                 {"total", c.total},
                 {"passed", c.passed},
                 {"failed", c.failed},
                 {"d1Lost", c.d1Lost},
                 {"d2Failed", c.d2Failed}});
  p["matrix"] = m;
  p["wallSeconds"] = round1(std::chrono::duration<double>(Clock::now() - start).count());

  return {{"kind", "durability"},
          {"formatVersion", kDurabilityFormatVersion},
          {"crashsimVersion", std::string(reports::crashsimVersion())},
          {"platforms", Json::array({p})}};
}

Json mergeDurability(const std::vector<Json>& docs) {
  if (docs.empty()) throw std::runtime_error("nothing to merge");
  Json out = {{"kind", "durability"},
              {"formatVersion", kDurabilityFormatVersion},
              {"crashsimVersion", docs[0].value("crashsimVersion", "")},
              {"platforms", Json::array()}};
  std::set<std::string> names;
  std::set<std::string> versions;
  for (const auto& d : docs) {
    if (!isDurabilityJson(d)) throw std::runtime_error("not a durability report");
    if (d.value("formatVersion", 0) != kDurabilityFormatVersion)
      throw std::runtime_error(
          fmt::format("durability report formatVersion {} (this crashsim reads {})",
                      d.value("formatVersion", 0), kDurabilityFormatVersion));
    if (!d.contains("platforms") || !d["platforms"].is_array())
      throw std::runtime_error("durability report without a platforms array");
    versions.insert(d.value("crashsimVersion", ""));
    for (const auto& p : d["platforms"]) {
      auto name = p.value("name", "");
      if (!names.insert(name).second)
        throw std::runtime_error("platform \"" + name +
                                 "\" appears in more than one report (rename one, or run on "
                                 "another platform)");
      out["platforms"].push_back(p);
    }
  }
  if (versions.size() > 1) {
    Json vs = Json::array();
    for (const auto& v : versions) vs.push_back(v);
    out["crashsimVersion"] = vs;  // recorded, not refused: platforms may run different builds
  }
  return out;
}

std::string renderDurabilityMarkdown(const Json& doc) {
  std::string o = "# crashsim platform durability report\n\n";
  o += fmt::format("crashsim {} · format {} · {} platform(s)\n\n> {}\n\n",
                   str(doc, "crashsimVersion"), doc["formatVersion"].dump(),
                   doc["platforms"].size(), kCaveat);
  for (const auto& p : doc["platforms"]) {
    o += fmt::format("## {}\n\n| | |\n|---|---|\n", p["name"].get<std::string>());
    for (const auto& [k, v] : factRows(p)) o += fmt::format("| {} | {} |\n", k, v);
    o += "\n";
  }
  o += "## Matrix: failpoint × fault mode × synchronous\n\n| failpoint | mode | synchronous |";
  for (const auto& p : doc["platforms"]) o += fmt::format(" {} |", p["name"].get<std::string>());
  o += "\n|---|---|---|";
  for (size_t i = 0; i < doc["platforms"].size(); ++i) o += "---|";
  o += "\n";
  for (const auto& [key, cells] : mergedMatrix(doc)) {
    Json first;
    for (const auto& c : cells)
      if (!c.is_null()) first = c;
    o += fmt::format("| {} | {} | {} |", first["failpoint"].get<std::string>(),
                     first["mode"].get<std::string>(), first["synchronous"].get<std::string>());
    for (const auto& c : cells) o += fmt::format(" {} |", cellText(c));
    o += "\n";
  }
  return o;
}

std::string renderDurabilityHtml(const Json& doc) {
  std::string o =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>crashsim durability "
      "report</title>\n<style>body{font-family:sans-serif;margin:2em}table{border-collapse:"
      "collapse;margin-bottom:2em}td,th{border:1px solid #999;padding:4px 8px;text-align:left}"
      "td.ok{background:#dfd}td.bad{background:#fdd}td.lost{background:#ffd}</style></head>"
      "<body>\n<h1>crashsim platform durability report</h1>\n";
  o += fmt::format("<p>crashsim {} · format {} · {} platform(s)</p>\n<p><em>{}</em></p>\n",
                   htmlEscape(str(doc, "crashsimVersion")), doc["formatVersion"].dump(),
                   doc["platforms"].size(), htmlEscape(kCaveat));
  for (const auto& p : doc["platforms"]) {
    o += fmt::format("<h2>{}</h2>\n<table>\n", htmlEscape(p["name"].get<std::string>()));
    for (const auto& [k, v] : factRows(p))
      o += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", htmlEscape(k), htmlEscape(v));
    o += "</table>\n";
  }
  o += "<h2>Matrix: failpoint × fault mode × synchronous</h2>\n<table>\n<tr><th>failpoint</th>"
       "<th>mode</th><th>synchronous</th>";
  for (const auto& p : doc["platforms"])
    o += "<th>" + htmlEscape(p["name"].get<std::string>()) + "</th>";
  o += "</tr>\n";
  for (const auto& [key, cells] : mergedMatrix(doc)) {
    Json first;
    for (const auto& c : cells)
      if (!c.is_null()) first = c;
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td>", first["failpoint"].get<std::string>(),
                     first["mode"].get<std::string>(), first["synchronous"].get<std::string>());
    for (const auto& c : cells) {
      const char* cls = c.is_null()                    ? ""
                        : c["d2Failed"].get<int>() > 0 ? "bad"
                        : c["failed"].get<int>() == 0  ? "ok"
                        : c["synchronous"] == "NORMAL" ? "lost"
                                                       : "bad";
      o += fmt::format("<td class=\"{}\">{}</td>", cls, htmlEscape(cellText(c)));
    }
    o += "</tr>\n";
  }
  o += "</table>\n</body></html>\n";
  return o;
}

void writeDurability(const Json& doc, const fs::path& dir) {
  fs::create_directories(dir);
  auto put = [&](const char* name, const std::string& text) {
    std::ofstream f(dir / name, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();  // a short write (a full disk) shows only once the buffer is flushed
    if (!f) throw std::runtime_error("output_unwritable: cannot write " + (dir / name).string());
  };
  put("durability.json", doc.dump(2) + "\n");
  put("durability.md", renderDurabilityMarkdown(doc));
  put("durability.html", renderDurabilityHtml(doc));
}

int durabilityExitCode(const Json& doc) {
  for (const auto& p : doc["platforms"])
    for (const auto& c : p["matrix"])
      if (c["d2Failed"].get<int>() > 0 ||
          (c["synchronous"] == "FULL" && c["failed"].get<int>() > 0))
        return 1;
  return 0;
}

}  // namespace crashsim::harness
