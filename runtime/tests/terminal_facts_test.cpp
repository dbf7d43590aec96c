// The one builder of terminal facts (crashsim/terminal_facts.h), judged against spec g's
// validity rules and a.1's terminal statuses — hand-built events, not the builder's output.
#include "crashsim/terminal_facts.h"

#include <gtest/gtest.h>

#include "crashsim/codes.h"
#include "crashsim/error.h"

namespace crashsim {
namespace {

RunHeader run() {
  RunHeader h;
  h.sessionId = "s";
  h.runId = "r";
  h.invocationId = "i";
  h.turnId = "t";
  h.status = "running";
  h.createdAt = 1;
  h.updatedAt = 5;
  return h;
}

RuntimeEvent event(Json extra) {
  Json e = {{"id", "e1"},       {"sessionId", "s"}, {"invocationId", "i"},
            {"runId", "r"},     {"turnId", "t"},    {"ts", 10.0},
            {"partial", false}, {"role", "system"}, {"author", "system"}};
  for (auto& [k, v] : extra.items()) e[k] = v;
  return decodeRuntimeEvent(e);
}

TEST(TerminalFacts, StatusMappingFollowsA1) {
  EXPECT_EQ(terminalRunStatusOf(event({{"status", "completed"}})), "completed");
  EXPECT_EQ(terminalRunStatusOf(event({{"status", "failed"}})), "failed");
  EXPECT_EQ(terminalRunStatusOf(event({{"status", "aborted"}})), "cancelled");
  EXPECT_EQ(terminalRunStatusOf(event({{"status", "cancelled"}})), "cancelled");
  EXPECT_EQ(terminalRunStatusOf(event({{"actions", {{"endInvocation", true}}}})), std::nullopt);
  EXPECT_TRUE(isTerminalRunStatus("failed"));
  EXPECT_FALSE(isTerminalRunStatus("running"));
}

TEST(TerminalFacts, FailureClassAndAbortSourceFollowSpecG) {
  const RunHeader h = run();
  // stateDelta failureClass before errorClass before reason/code; then error content.
  EXPECT_EQ(
      terminalFailureClass(
          event({{"status", "failed"},
                 {"actions", {{"stateDelta", {{"errorClass", "b"}, {"failureClass", "a"}}}}}}),
          &h),
      "a");
  EXPECT_EQ(terminalFailureClass(
                event({{"status", "failed"},
                       {"content", {{"kind", "error"}, {"message", "m"}, {"code", "c"}}}}),
                &h),
            "c");
  // An empty class does not count; without any, a failed fact is not valid.
  const RuntimeEvent bare =
      event({{"status", "failed"}, {"actions", {{"stateDelta", {{"failureClass", ""}}}}}});
  EXPECT_EQ(terminalFailureClass(bare, &h), std::nullopt);
  EXPECT_EQ(terminalFactStatus(bare, h), std::nullopt);
  RunHeader withClass = h;
  withClass.failureClass = "from_header";
  EXPECT_EQ(terminalFactStatus(bare, withClass), "failed");
  // stateDelta abortSource, else source (spec g); refs cannot carry one (a.4 closed set).
  const RuntimeEvent src =
      event({{"status", "aborted"}, {"actions", {{"stateDelta", {{"source", "user"}}}}}});
  EXPECT_EQ(terminalAbortSource(src, &h), "user");
  EXPECT_EQ(terminalFactStatus(src, h), "cancelled");
  EXPECT_THROW(event({{"status", "aborted"}, {"refs", {{"source", "user"}}}}), Error);
  EXPECT_EQ(terminalFactStatus(event({{"status", "cancelled"}}), h), std::nullopt);
}

TEST(TerminalFacts, HeaderFollowsTheFact) {
  TerminalFact f;
  f.eventId = "i_terminal";
  f.ts = 20;
  f.status = "failed";
  f.failureClass = "tool_timeout";
  f.message = "took too long";
  const RuntimeEvent t = terminalEvent(run(), f);
  EXPECT_TRUE(t.isTerminal());
  EXPECT_EQ(t.json["content"]["reason"], "tool_timeout");
  EXPECT_FALSE(t.json["actions"]["stateDelta"].contains("recovered"));
  const RunHeader h = terminalHeader(run(), t);
  EXPECT_EQ(h.status, "failed");
  EXPECT_EQ(h.failureClass, "tool_timeout");
  EXPECT_EQ(h.failureMessage, "took too long");
  EXPECT_EQ(h.completedAt, 20);
  EXPECT_EQ(h.updatedAt, 20);
  // Recovery records a cancelled run as `aborted`, marked recovered.
  TerminalFact c;
  c.eventId = "x";
  c.ts = 3;  // before the header's updatedAt: updatedAt never goes back
  c.status = "cancelled";
  c.abortSource = "user";
  c.recovered = true;
  const RuntimeEvent a = terminalEvent(run(), c);
  EXPECT_EQ(a.json["status"], "aborted");
  EXPECT_EQ(a.json["actions"]["stateDelta"]["recovered"], true);
  const RunHeader ch = terminalHeader(run(), a);
  EXPECT_EQ(ch.status, "cancelled");
  EXPECT_EQ(ch.abortSource, "user");
  EXPECT_EQ(ch.updatedAt, 5);
}

TEST(TerminalFacts, InvalidFactsAreRefused) {
  TerminalFact f;
  f.eventId = "e";
  f.status = "failed";  // no failure class
  EXPECT_THROW(terminalEvent(run(), f), Error);
  f.status = "running";
  EXPECT_THROW(terminalEvent(run(), f), Error);
  // A non-terminal event never yields a header.
  try {
    terminalHeader(run(), event({{"content", {{"kind", "text"}, {"text", "hi"}}}}));
    ADD_FAILURE() << "a non-terminal event produced a terminal header";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code::run_terminal_fact_missing);
  }
}

}  // namespace
}  // namespace crashsim
