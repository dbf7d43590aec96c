#!/usr/bin/env python3
"""Seeds fuzz/corpus/ from what the harness writes: the ledgers of kept crash cases (one per
scenario, killed at its second reached failpoint), their events and tool args, the built-in
scenarios, and a sweep report and a durability report.

  fuzz/seed_corpus.py BUILD_DIR     (BUILD_DIR: a default/release build with crashsim)

Each file is named by the SHA-1 of its bytes, as libFuzzer names corpus entries."""
import hashlib, json, pathlib, sqlite3, subprocess, sys, tempfile

root = pathlib.Path(__file__).resolve().parent
build = pathlib.Path(sys.argv[1]).resolve()
crashsim = build / "harness" / "crashsim"
tools = ["Write", "Edit", "Bash", "Read", "Unknown"]


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = root / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    for scen in sorted((root.parent / "scenarios").glob("*.json")):
        put("scenario_fuzz", scen.read_bytes())
        case = f"{scen.stem}/P2#1/kill"
        keep = tmp / scen.stem
        if subprocess.run([crashsim, "run", case, "--keep", keep], capture_output=True).returncode:
            continue
        dbs = list(keep.rglob("runtime.sqlite"))
        if not dbs:
            continue
        con = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True)
        rows = [r[0] for r in con.execute(
            "SELECT payload_json FROM runtime_events ORDER BY invocation_id, event_seq")]
        con.close()
        events = [json.loads(r) for r in rows]
        put("ledger_resolve_fuzz", json.dumps(events, separators=(",", ":")))
        for r in rows:
            put("runtime_event_fuzz", r)
        for e in events:
            c = e.get("content", {})
            if isinstance(c, dict) and "args" in c and c.get("name") in tools:
                put("args_hash_fuzz", bytes([tools.index(c["name"])]) +
                    json.dumps(c["args"]).encode())
    out = tmp / "sweep"
    subprocess.run([crashsim, "sweep", "--scenario", "write-config-port", "--failpoint", "P6",
                    "--out", out], capture_output=True)
    if (out / "report.json").exists():
        put("report_merge_fuzz", (out / "report.json").read_bytes())
    dur = tmp / "dur"
    subprocess.run([crashsim, "durability", "--scenario", "write-config-port", "--states", "1",
                    "--out", dur], capture_output=True)
    if (dur / "durability.json").exists():
        put("report_merge_fuzz", (dur / "durability.json").read_bytes())
for d in sorted((root / "corpus").iterdir()):
    print(d.name, len(list(d.iterdir())))
