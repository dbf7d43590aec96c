// The open harness's verdicts O2–O4 on hand-built evidence (verdicts/open_evidence.h): each input
// is what a broken runtime leaves in the effects log, the model log and its exit status, next to
// the correct input that must pass. The scenario is the built-in write-config-port (call-1 Read,
// step 0; call-2 Write, step 1; the final answer, step 2). The end-to-end proofs, with a runtime
// that really breaks each promise, are open/tests/open_sweep_test.cpp's planted faults.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "crashsim/harness/scenario.h"
#include "verdicts/o2_at_most_once.h"
#include "verdicts/o3_recovery.h"
#include "verdicts/o4_history.h"

namespace {

using crashsim::harness::OpenEvidence;
using nlohmann::json;

const crashsim::harness::Scenario& writeConfigPort() {
  static const auto s = crashsim::harness::loadScenario(std::filesystem::path(CRASHSIM_SOURCE_DIR) /
                                                        "scenarios" / "write-config-port.json");
  return s;
}

const crashsim::open::RuntimeProfile& profileStoppingWith3() {
  static const auto p = [] {
    crashsim::open::RuntimeProfile p;
    p.stopExitCodes = {3};
    return p;
  }();
  return p;
}

// A resume that exited with `code`, after a run whose model requests were answered with `steps`.
OpenEvidence resumedWith(int code, const std::vector<int>& steps) {
  OpenEvidence ev;
  ev.scenario = &writeConfigPort();
  ev.profile = &profileStoppingWith3();
  ev.resumed.child.spawned = ev.resumed.child.exited = true;
  ev.resumed.child.exitCode = code;
  for (int step : steps) ev.modelLog.push_back({{"seq", ev.modelLog.size() + 1}, {"step", step}});
  ev.requestsBeforeResume = ev.requestsBeforeFinalResume = static_cast<int>(steps.size());
  return ev;
}

TEST(OpenVerdictO2, AWriteTheModelNeverAskedForIsASecondEffect) {
  OpenEvidence ev = resumedWith(0, {0, 1, 2});
  ev.effects = {{"call-1", 1}, {"call-2", 1}};
  EXPECT_EQ(crashsim::harness::judgeO2AtMostOnce(ev), "");
  // The Write re-sent after the crash with its content re-encoded: no scenario call matches.
  ev.unscripted = {{"Write", 1}};
  EXPECT_NE(crashsim::harness::judgeO2AtMostOnce(ev).find("a Write the model never asked for"),
            std::string::npos);
  // A Read re-sent that way is a repeat of a replay-safe tool: no side effect.
  ev.unscripted = {{"Read", 2}};
  EXPECT_EQ(crashsim::harness::judgeO2AtMostOnce(ev), "");
}

TEST(OpenVerdictO3, AStopIsAReasonOnlyWhenASideEffectWasAskedFor) {
  // Killed at the first request or after its answer (the Read): nothing can be unknown.
  EXPECT_NE(crashsim::harness::judgeO3Recovery(resumedWith(3, {0})).find("no outcome was unknown"),
            std::string::npos);
  // The request whose answer is the Write (step 1) was received: the Write may have run.
  EXPECT_EQ(crashsim::harness::judgeO3Recovery(resumedWith(3, {0, 1})), "");
  // A double fault: the crashed resume asked for the Write; the resume judged last may stop.
  OpenEvidence twice = resumedWith(3, {0, 1});
  twice.requestsBeforeResume = 1;
  EXPECT_EQ(crashsim::harness::judgeO3Recovery(twice), "");
  twice.requestsBeforeFinalResume = 1;  // … but not when only the run's requests count
  EXPECT_NE(crashsim::harness::judgeO3Recovery(twice), "");
  // A request the model server refused (no step) asks for nothing.
  OpenEvidence refused = resumedWith(3, {0});
  refused.modelLog.push_back({{"seq", 2}, {"step", nullptr}, {"finding", {{"kind", "x"}}}});
  refused.requestsBeforeFinalResume = 2;
  EXPECT_NE(crashsim::harness::judgeO3Recovery(refused), "");
  // An undeclared exit code is no stop at all.
  EXPECT_NE(crashsim::harness::judgeO3Recovery(resumedWith(4, {0, 1})).find("not a stop"),
            std::string::npos);
}

// The resume's request (seq 4) presents the Write (call-2) with `content`.
OpenEvidence presenting(const std::string& content, bool writeRanBeforeTheCrash) {
  OpenEvidence ev = resumedWith(0, {0, 1});
  ev.effectsBeforeResume = {{"call-1", 1}};
  if (writeRanBeforeTheCrash) ev.effectsBeforeResume["call-2"] = 1;
  ev.effects = ev.effectsBeforeResume;
  ev.modelLog.push_back(
      {{"seq", 3},
       {"step", 2},
       {"messages",
        json::array({{{"role", "user"}, {"content", "u"}},
                     {{"role", "tool"}, {"tool_call_id", "call-2"}, {"content", content}}})}});
  return ev;
}

TEST(OpenVerdictO4, ACallWhoseEffectRanIsNeverPresentedAsNotHavingHappened) {
  for (const char* lie : {"not executed", "Tool call cancelled: the run was interrupted.",
                          "The tool call was skipped.", "Rejected by the runtime after a restart",
                          "{\"error\":{\"code\":\"not_executed\"}}", "The command did not run."})
    EXPECT_NE(crashsim::harness::judgeO4History(presenting(lie, true)).find("as not executed"),
              std::string::npos)
        << lie;
  // The real result, and the contract's unknown outcome (even when it says "cancelled").
  for (const char* fine : {"{\"bytesWritten\":12}", "outcome_unknown: the process died",
                           "Cancelled by a crash; the outcome is unknown (it may have run)."})
    EXPECT_EQ(crashsim::harness::judgeO4History(presenting(fine, true)), "") << fine;
}

TEST(OpenVerdictO4, ACallWhoseEffectNeverRanIsNeverPresentedAsASuccess) {
  EXPECT_NE(crashsim::harness::judgeO4History(presenting("{\"bytesWritten\":12}", false))
                .find("as a success"),
            std::string::npos);
  // What a runtime may say of a call it cannot know about, or one it gave up on.
  for (const char* fine : {"outcome_unknown: the process died", "Error: the tool server went away",
                           "{\"error\":{\"code\":\"tool_failed\"}}", "not executed",
                           "The outcome of this call is unknown."})
    EXPECT_EQ(crashsim::harness::judgeO4History(presenting(fine, false)), "") << fine;
}

TEST(OpenVerdictO4, AResultIsNeverPresentedUnderAnotherCall) {
  const std::string readResult = R"({"content":"port=8080\n","path":"config.txt"})";
  const std::string writeResult = R"({"bytesWritten":10,"path":"config.txt"})";
  OpenEvidence ev = presenting(writeResult, true);
  ev.answers = {{"call-1", {readResult}}, {"call-2", {writeResult}}};
  EXPECT_EQ(crashsim::harness::judgeO4History(ev), "");
  // The Read's result re-attached to the Write (results matched to calls by position).
  OpenEvidence swapped = presenting(readResult, true);
  swapped.answers = ev.answers;
  EXPECT_NE(crashsim::harness::judgeO4History(swapped).find(
                "presents the result the tool server gave call-1 as the result of call-2"),
            std::string::npos);
  // A text both calls were given is no evidence of a swap.
  swapped.answers["call-2"].insert(readResult);
  EXPECT_EQ(crashsim::harness::judgeO4History(swapped), "");
}

}  // namespace
