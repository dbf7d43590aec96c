// `crashsim ledger resolve | prefix-digest | args-hash --jsonl`, run as real processes: every
// output line equals the single call's output on that line, invalid lines included, in order.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "crashsim/build_paths.h"
#include "crashsim/harness/supervisor.h"
#include "test_util.h"

using namespace crashsim::harness;
using namespace crashsim::harness::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The events of a finished real run (bash-touch-marker: user, call, dispatch, response, ...).
std::vector<json> finishedLedger(const fs::path& d) {
  auto scenario = fs::path(CRASHSIM_SOURCE_DIR) / "scenarios" / "bash-touch-marker.json";
  SpawnSpec seed;
  seed.exe = agentBinary();
  seed.args = {"seed", "--workspace", (d / "ws").string(), "--scenario", scenario.string()};
  EXPECT_EQ(runToEnd(seed).exitCode, 0);
  fs::create_directories(d / "store");
  SpawnSpec run;
  run.exe = agentBinary();
  run.args = {
      "run",        "--store",        (d / "store").string(), "--workspace", (d / "ws").string(),
      "--scenario", scenario.string()};
  EXPECT_EQ(runToEnd(run).exitCode, 0);
  auto exported = sh(cs() + " ledger export " + (d / "store").string());
  EXPECT_EQ(exported.exitCode, 0) << exported.out;
  std::vector<json> events;
  for (const std::string& line : splitLines(exported.out)) events.push_back(json::parse(line));
  return events;
}

std::string arrayLine(const std::vector<json>& events) { return json(events).dump(); }

// Each line through the batch command and through one single call per line (stdin).
void expectBatchEqualsSingleCalls(const fs::path& d, const std::string& command,
                                  const std::vector<std::string>& inputs) {
  std::string text;
  for (const std::string& line : inputs) text += line + "\n";
  std::ofstream(d / "batch.jsonl", std::ios::binary) << text;
  auto batch = sh(cs() + " " + command + " --jsonl " + (d / "batch.jsonl").string());
  ASSERT_EQ(batch.exitCode, 0) << batch.out.substr(0, 400);
  const std::vector<std::string> out = splitLines(batch.out);
  ASSERT_EQ(out.size(), inputs.size());
  int errors = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::ofstream(d / "one.json", std::ios::binary) << inputs[i];
    auto single = sh(cs() + " " + command + " " + (d / "one.json").string());
    EXPECT_EQ(out[i] + "\n", single.out) << "line " << i << ": " << inputs[i].substr(0, 200);
    EXPECT_EQ(single.exitCode == 2, out[i].rfind("{\"error\":", 0) == 0) << "line " << i;
    errors += single.exitCode == 2;
  }
  EXPECT_GT(errors, 0);  // the invalid lines were judged as errors, and the batch went on
}

}  // namespace

// Every crash prefix of a real ledger, each one-event-dropped variant (orphans, missing
// dispatches), and invalid lines: the batch prints exactly what the single calls print.
TEST(LedgerBatch, ResolveJsonlEqualsOneSingleCallPerLine) {
  auto d = freshDir("crashsim-ledger-batch");
  const std::vector<json> events = finishedLedger(d);
  ASSERT_GE(events.size(), 5u);
  std::vector<std::string> inputs;
  for (size_t k = 0; k <= events.size(); ++k)
    inputs.push_back(arrayLine({events.begin(), events.begin() + static_cast<long>(k)}));
  for (size_t drop = 0; drop < events.size(); ++drop) {
    std::vector<json> without = events;
    without.erase(without.begin() + static_cast<long>(drop));
    inputs.push_back(arrayLine(without));
  }
  inputs.push_back("[");                     // invalid JSON
  inputs.push_back("");                      // blank: the empty ledger
  inputs.push_back("[{\"id\":\"x\"}]");      // not a RuntimeEvent: error with index 0
  inputs.push_back(arrayLine({events[0]}));  // after errors the batch goes on
  // A lone surrogate is data (a.6): the text event resolves, it is not refused.
  std::vector<json> lone = events;
  for (json& e : lone) {
    if (e.contains("content") && e["content"]["kind"] == "text") {
      e["content"]["text"] = "LONE";
      break;
    }
  }
  std::string loneLine = arrayLine(lone);
  ASSERT_NE(loneLine.find("\"LONE\""), std::string::npos);
  inputs.push_back(loneLine.replace(loneLine.find("\"LONE\""), 6, "\"\\ud800\""));
  expectBatchEqualsSingleCalls(d, "ledger resolve", inputs);
  fs::remove_all(d);
}

TEST(LedgerBatch, PrefixDigestAndArgsHashJsonlEqualSingleCalls) {
  auto d = freshDir("crashsim-ledger-batch-digest");
  const std::vector<json> events = finishedLedger(d);
  json identity = {{"sessionId", events[0]["sessionId"]},
                   {"invocationId", events[0]["invocationId"]},
                   {"runId", events[0]["runId"]},
                   {"turnId", events[0]["turnId"]}};
  std::vector<std::string> digests;
  for (size_t k = 0; k <= events.size(); ++k) {
    json doc = {
        {"identity", identity},
        {"events", std::vector<json>(events.begin(), events.begin() + static_cast<long>(k))}};
    digests.push_back(doc.dump());
  }
  json negativeZero = {{"identity", identity}, {"events", json::array({events[0]})}};
  std::string nz = negativeZero.dump();
  const std::string ts = "\"ts\":" + events[0]["ts"].dump();
  digests.push_back(nz.replace(nz.find(ts), ts.size(), "\"ts\":-0"));  // not lossless: error
  digests.push_back("{}");
  expectBatchEqualsSingleCalls(d, "ledger prefix-digest", digests);

  std::vector<std::string> args = {R"({"command":"touch marker"})", R"({"b":[2,1],"a":-0})",
                                   "{command: 1}", R"({"required":["b","a"]})", "[]"};
  expectBatchEqualsSingleCalls(d, "ledger args-hash --tool Bash", args);
  // Without --tool every line names its tool.
  std::ofstream(d / "named.jsonl") << R"({"toolName":"Bash","args":{"command":"touch marker"}})"
                                   << "\n"
                                   << R"({"args":{}})"
                                   << "\n";
  auto named = sh(cs() + " ledger args-hash --jsonl " + (d / "named.jsonl").string());
  ASSERT_EQ(named.exitCode, 0);
  const auto lines = splitLines(named.out);
  ASSERT_EQ(lines.size(), 2u);
  std::ofstream(d / "args.json") << R"({"command":"touch marker"})";
  EXPECT_EQ(lines[0] + "\n",
            sh(cs() + " ledger args-hash --tool Bash " + (d / "args.json").string()).out);
  EXPECT_EQ(json::parse(lines[1])["error"]["code"], "missing_field");
  fs::remove_all(d);
}

// A missing batch file is a usage-level error (exit 2), not an empty batch.
TEST(LedgerBatch, UnreadableBatchFileExitsTwo) {
  auto r = sh(cs() + " ledger resolve --jsonl /nonexistent/batch.jsonl 2>&1");
  EXPECT_EQ(r.exitCode, 2);
  EXPECT_NE(r.out.find("input_unreadable"), std::string::npos) << r.out;
}
