// The LangGraph.js adapter of the open harness (docs/open-harness.md): a ReAct agent from
// @langchain/langgraph with no crashsim code in it — ChatOpenAI pointed at crashsim's scripted
// model server, tools from crashsim's tool server through @langchain/mcp-adapters, and the
// durable SQLite checkpointer under the case's state directory.
//
//   node agent.mjs run|resume --state DIR --scenario FILE --model-url URL --tool-server JSON_ARGV
//
// run: a fresh thread with the scenario's user message. resume: continues the fixed thread from
// its last checkpoint (agent.invoke(null)); a thread with no checkpoint starts as run does, a
// finished one exits 0. Prints {"finished": <final text>} and exits 0; 1 on any error.
// LG_STREAM=1 asks the model for SSE streams.
import { readFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { HumanMessage } from "@langchain/core/messages";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { ChatOpenAI } from "@langchain/openai";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    state: { type: "string" },
    scenario: { type: "string" },
    "model-url": { type: "string" },
    "tool-server": { type: "string" },
  },
});
const command = positionals[0];
if (!["run", "resume"].includes(command) || !values.state || !values.scenario ||
    !values["model-url"] || !values["tool-server"]) {
  console.error("usage: agent.mjs run|resume --state DIR --scenario FILE --model-url URL --tool-server JSON");
  process.exit(2);
}

const toolArgv = JSON.parse(values["tool-server"]);
const client = new MultiServerMCPClient({
  mcpServers: { crashsim: { transport: "stdio", command: toolArgv[0], args: toolArgv.slice(1) } },
  prefixToolNameWithServerName: false,
  additionalToolNamePrefix: "",
  throwOnLoadError: true,
});

let code = 0;
try {
  const tools = await client.getTools();
  const llm = new ChatOpenAI({
    model: "crashsim-scripted",
    apiKey: "not-used",
    configuration: { baseURL: values["model-url"] },
    streaming: process.env.LG_STREAM === "1",
    maxRetries: 0,
    temperature: 0,
  });
  mkdirSync(values.state, { recursive: true });
  const checkpointer = SqliteSaver.fromConnString(join(values.state, "checkpoints.sqlite"));
  const agent = createReactAgent({ llm, tools, checkpointer });
  const config = { configurable: { thread_id: "crashsim" }, recursionLimit: 50 };

  const snapshot = await agent.getState(config);
  const started = snapshot.values?.messages?.length > 0;
  let result;
  if (command === "run" || !started) {
    const user = JSON.parse(readFileSync(values.scenario, "utf8")).user;
    result = await agent.invoke({ messages: [new HumanMessage(user)] }, config);
  } else if (snapshot.next.length === 0) {
    result = snapshot.values;  // finished before the crash
  } else {
    result = await agent.invoke(null, config);
  }
  const last = result.messages[result.messages.length - 1];
  console.log(JSON.stringify({ finished: last.content }));
} catch (e) {
  console.error("langgraph-js: " + (e?.stack ?? e));
  code = 1;
} finally {
  await client.close();
}
process.exit(code);
