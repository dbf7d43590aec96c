#!/usr/bin/env python3
"""subject-py: a small agent runtime written as a test subject for the open harness
(docs/open-harness.md). Standard library only. It knows nothing of crashsim beyond what any
runtime is given: an OpenAI-compatible model URL and an MCP tool server command.

  subject.py run|resume --state FILE --scenario FILE --model-url URL --tool-server JSON_ARGV

The task is the scenario's "user" message. Progress is a JSON checkpoint (write temp, fsync,
rename, fsync the directory) saved after every model answer, before every tool call (the call is
"started") and after every tool result. `resume` continues from the checkpoint:
  - a started call with no result has an unknown outcome: a Read is run again (replay-safe);
    any other tool parks: the process prints {"stopped":"unknown_outcome","callId":…} and
    exits 3 (the stop its profile declares);
  - otherwise it sends its history to the model and goes on until the final answer (exit 0).
Exit 1: the model or the tool server failed; exit 2: bad usage.

Switches that break one promise each (environment, read by both commands):
  SUBJECT_BREAK=rerun_finished           resume runs the last finished non-Read call again (O2)
  SUBJECT_BREAK=unknown_as_not_executed  resume answers a started call with "not executed"
                                         instead of parking (O4)
  SUBJECT_BREAK=unknown_as_cancelled     the same with "cancelled" (O4)
  SUBJECT_BREAK=retry_reencoded          resume re-sends a started call instead of parking, its
                                         arguments re-encoded (a newline added to each string):
                                         the tool server matches no scenario call, so the effect
                                         runs a second time unscripted (O2)
  SUBJECT_BREAK=stop_always              resume stops (the declared exit 3) whatever it finds,
                                         even when no call with a side effect was ever asked (O3)
  SUBJECT_BREAK=results_reversed         resume sends its history with the last turn's tool
                                         results re-attached to its calls in reverse order (O4)
  SUBJECT_BREAK=half_history             resume sends the history without the last tool result
                                         (O4; the model server refuses it)
  SUBJECT_BREAK=exit0_unfinished         resume exits 0 without finishing (O3)
  SUBJECT_BREAK=detach_tools             start the tool server in a session of its own, so a
                                         kill of the runtime's process group misses it (O1)
  SUBJECT_BREAK=flaky_resume             every second resume (counted in SUBJECT_FLAKY_FILE,
                                         state outside the case) stops with a declared stop
                                         instead of finishing: both outcomes are allowed, their
                                         difference is not (O5)
  SUBJECT_BREAK=finished_before_result   record a call as finished (a save of its own) before its
                                         result; resume trusts the record and asks the model
                                         without that result (O4). Caught at S when saves sync;
                                         with SUBJECT_DURABILITY=plain only a named point between
                                         the two saves sees it (level 1)
  SUBJECT_STREAM=1                       ask the model for SSE streams instead of one body
  SUBJECT_DURABILITY=plain               append each state to the checkpoint as one JSON line, no
                                         fsync and no rename (it survives a SIGKILL, not a power
                                         cut): no barrier for the interposer to count

Level 1 (runtime-level1.json): named failpoints at the subject's own boundaries, in the wire format
crashsim-agent speaks: `answered` (a model answer received, before it is saved) and `saved` (after
every checkpoint save). CRASHSIM_ARM=<name>:<n> makes the n-th hit write
{"failpoint":name,"hit":n,"pid":N} to CRASHSIM_CONTROL_FD (or, when that is -1,
CRASHSIM_CONTROL_FILE) and block until killed; CRASHSIM_HITS_OUT=<file> receives the counts at exit.
Arming names the subject does not know (S: the interposer's) are ignored.
  SUBJECT_HITS=none|bad                  break the protocol: write no counts, or a name that
                                         collides with an open point
"""
import argparse
import atexit
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

BREAK = os.environ.get("SUBJECT_BREAK", "")
# What the giving-up breaks tell the model about a started call (its outcome is in fact unknown).
GIVE_UP_TEXT = {
    "unknown_as_not_executed": json.dumps({"error": {"code": "not_executed",
                                                     "message": "the call was not executed"}}),
    "unknown_as_cancelled": "Tool call cancelled: the run was interrupted.",
}
ARM = os.environ.get("CRASHSIM_ARM", "")
HITS = {"answered": 0, "saved": 0}
PLAIN = os.environ.get("SUBJECT_DURABILITY") == "plain"


def failpoint(name):
    HITS[name] += 1
    armed, _, hit = ARM.partition(":")
    if armed != name or hit != str(HITS[name]):
        return
    line = (json.dumps({"failpoint": name, "hit": HITS[name], "pid": os.getpid()}) + "\n").encode()
    fd = int(os.environ.get("CRASHSIM_CONTROL_FD", "2"))
    if fd >= 0:
        os.write(fd, line)
    else:
        out = os.open(os.environ["CRASHSIM_CONTROL_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(out, line)
        os.close(out)
    while True:
        signal.pause()


def load(path):
    """The last saved state (plain: the journal's last whole line; a torn last line is skipped)."""
    with open(path, encoding="utf-8") as f:
        if not PLAIN:
            return json.load(f)
        for line in reversed(f.read().splitlines()):
            try:
                return json.loads(line)
            except ValueError:
                continue
    raise RuntimeError("no whole state in " + path)


def write_hits():
    out = os.environ.get("CRASHSIM_HITS_OUT")
    if not out or os.environ.get("SUBJECT_HITS") == "none":
        return
    counts = {"MQ": 1} if os.environ.get("SUBJECT_HITS") == "bad" else HITS
    with open(out, "w", encoding="utf-8") as f:
        json.dump(counts, f)


def save(path, state):
    if PLAIN:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, (json.dumps(state) + "\n").encode())
        os.close(fd)
        failpoint("saved")
        return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    failpoint("saved")


class Mcp:
    """A minimal MCP client on the tool server's stdio (newline-delimited JSON-RPC 2.0)."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=BREAK == "detach_tools")
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "subject-py", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.tools = [t["name"] for t in self.request("tools/list", {})["tools"]]

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the tool server closed its output")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError("tool server error: " + json.dumps(answer["error"]))
        return answer["result"]

    def call(self, name, args):
        result = self.request("tools/call", {"name": name, "arguments": args})
        return "".join(part.get("text", "") for part in result["content"])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def ask_model(url, messages, stream):
    body = {"model": "subject", "messages": messages, "tools": [], "stream": stream}
    req = urllib.request.Request(url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            if not stream:
                return json.load(res)["choices"][0]["message"]
            message = {"role": "assistant", "content": ""}
            calls = {}
            for raw in res:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                for choice in json.loads(line[6:])["choices"]:
                    delta = choice.get("delta", {})
                    message["content"] += delta.get("content") or ""
                    for tc in delta.get("tool_calls", []):
                        call = calls.setdefault(tc["index"], {"id": "", "type": "function",
                                                              "function": {"name": "", "arguments": ""}})
                        call["id"] += tc.get("id", "")
                        call["function"]["name"] += tc.get("function", {}).get("name", "")
                        call["function"]["arguments"] += tc.get("function", {}).get("arguments", "")
            if calls:
                message["tool_calls"] = [calls[i] for i in sorted(calls)]
            return message
    except urllib.error.HTTPError as e:
        raise RuntimeError("model answered HTTP %d: %s" % (e.code, e.read().decode()))


def results_of(messages):
    return {m["tool_call_id"] for m in messages if m.get("role") == "tool"}


def trusted_finished(state, resuming):
    """The calls resume takes as answered without a result (the finished_before_result bug)."""
    return set(state.get("finished", [])) if resuming and BREAK == "finished_before_result" else set()


def loop(args, state, resuming):
    mcp = None
    try:
        if resuming and BREAK == "rerun_finished":
            done = results_of(state["messages"])
            finished = [c for m in state["messages"] if m.get("role") == "assistant"
                        for c in m.get("tool_calls") or []
                        if c["id"] in done and c["function"]["name"] != "Read"]
            if finished:
                mcp = Mcp(args.tool_server)
                c = finished[-1]
                mcp.call(c["function"]["name"], json.loads(c["function"]["arguments"]))
        messages = state["messages"]
        while True:
            last = messages[-1]
            if last["role"] == "assistant" and not last.get("tool_calls"):
                state["done"] = True
                save(args.state, state)
                print(json.dumps({"finished": last.get("content")}))
                return 0
            trusted = trusted_finished(state, resuming)
            if pending(messages, trusted):
                turn = [m for m in messages if m["role"] == "assistant"][-1]
                answered = results_of(messages) | trusted
                for c in turn["tool_calls"]:
                    if c["id"] in answered:
                        continue
                    name = c["function"]["name"]
                    tool_args = json.loads(c["function"]["arguments"])
                    if c["id"] in state["started"] and name != "Read":
                        if BREAK in GIVE_UP_TEXT:
                            messages.append({"role": "tool", "tool_call_id": c["id"],
                                             "content": GIVE_UP_TEXT[BREAK]})
                            save(args.state, state)
                            continue
                        if BREAK == "retry_reencoded":
                            tool_args = {k: v + "\n" if isinstance(v, str) else v
                                         for k, v in tool_args.items()}
                        else:
                            print(json.dumps({"stopped": "unknown_outcome", "callId": c["id"]}))
                            return 3
                    else:
                        state["started"].append(c["id"])
                    save(args.state, state)
                    if mcp is None:
                        mcp = Mcp(args.tool_server)
                    content = mcp.call(name, tool_args)
                    if BREAK == "finished_before_result":
                        state.setdefault("finished", []).append(c["id"])
                        save(args.state, state)
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": content})
                    save(args.state, state)
                continue
            history = messages
            if resuming and BREAK == "results_reversed":
                history = reattach_reversed(messages)
            if resuming and BREAK == "half_history" and any(m["role"] == "tool" for m in messages):
                cut = max(i for i, m in enumerate(messages) if m["role"] == "tool")
                history = messages[:cut] + messages[cut + 1:]
            answer = ask_model(args.model_url, history, os.environ.get("SUBJECT_STREAM") == "1")
            turn = {"role": "assistant", "content": answer.get("content")}
            if answer.get("tool_calls"):
                turn["tool_calls"] = [{"id": c["id"], "type": "function",
                                       "function": {"name": c["function"]["name"],
                                                    "arguments": c["function"]["arguments"]}}
                                      for c in answer["tool_calls"]]
            messages.append(turn)
            failpoint("answered")
            save(args.state, state)
    finally:
        if mcp is not None:
            mcp.close()


def reattach_reversed(messages):
    """The history with the last turn's tool results under its calls' ids in reverse order."""
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    if not turns:
        return messages
    turn = turns[-1]
    results = [i for i in range(turn + 1, len(messages)) if messages[i]["role"] == "tool"]
    ids = [messages[i]["tool_call_id"] for i in results][::-1]
    out = [dict(m) for m in messages]
    for i, tool_call_id in zip(results, ids):
        out[i]["tool_call_id"] = tool_call_id
    return out


def pending(messages, trusted):
    """Whether the last assistant turn has a call without a result (or a trusted record)."""
    turns = [m for m in messages if m["role"] == "assistant"]
    if not turns or not turns[-1].get("tool_calls"):
        return False
    return any(c["id"] not in results_of(messages) | trusted for c in turns[-1]["tool_calls"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run", "resume"])
    parser.add_argument("--state", required=True)
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--tool-server", required=True, type=json.loads)
    args = parser.parse_args()
    atexit.register(write_hits)
    resuming = args.command == "resume" and os.path.exists(args.state)
    if resuming:
        state = load(args.state)
        if state.get("done"):
            return 0
        if BREAK == "exit0_unfinished":
            return 0
        if BREAK == "stop_always":
            print(json.dumps({"stopped": "interrupted"}))
            return 3
        if BREAK == "flaky_resume":
            flaky = os.environ["SUBJECT_FLAKY_FILE"]
            n = int(open(flaky).read() or "0") if os.path.exists(flaky) else 0
            with open(flaky, "w") as f:
                f.write(str(n + 1))
            if n % 2 == 1:
                print(json.dumps({"stopped": "flaky"}))
                return 3
    else:
        with open(args.scenario, encoding="utf-8") as f:
            user = json.load(f)["user"]
        os.makedirs(os.path.dirname(os.path.abspath(args.state)), exist_ok=True)
        state = {"messages": [{"role": "user", "content": user}], "started": [], "done": False}
        save(args.state, state)
    try:
        return loop(args, state, resuming)
    except RuntimeError as e:
        print("subject-py: " + str(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
