#!/usr/bin/env python3
"""Independent reader of a CodeTracer trace folder (runtime_tracing's JSON form), written from
the format's description (shared/notes/formats.md, runtime_tracing's trace_json_spec.md).
Exits 1 on the first error; prints facts otherwise:
  calls FUNC N       Call records of the function named FUNC
  returns N / callsall N
  path PATH          each entry of trace_paths.json
  metadata PROGRAM ARGS...
  threads STARTED EXITED
"""
import json
import os
import sys
from collections import Counter


def die(msg):
    print("BAD:", msg)
    sys.exit(1)


def main():
    d = sys.argv[1]
    recs = json.load(open(os.path.join(d, "trace.json")))
    paths = json.load(open(os.path.join(d, "trace_paths.json")))
    meta = json.load(open(os.path.join(d, "trace_metadata.json")))
    if set(meta) != {"workdir", "program", "args"} or not isinstance(meta["args"], list):
        die(f"trace_metadata.json: {meta!r}")
    if not isinstance(recs, list) or not all(isinstance(r, dict) and len(r) == 1 for r in recs):
        die("trace.json is not an array of externally tagged records")
    kinds = [next(iter(r)) for r in recs]
    if kinds[:4] != ["Path", "Function", "Call", "Type"]:
        die(f"canonical start is {kinds[:4]}")
    if recs[1]["Function"] != {"path_id": 0, "line": 1, "name": "<toplevel>"}:
        die("toplevel function")
    if recs[3]["Type"] != {"kind": 30, "lang_type": "None", "specific_info": {"kind": "None"}}:
        die("type 0")
    funcs, rec_paths = [], []
    calls = Counter()
    depth, returns, ncalls = 0, 0, 0
    started, exited = set(), set()
    for r in recs:
        (k, v), = r.items()
        if k == "Path":
            rec_paths.append(v)
        elif k == "Function":
            if set(v) != {"path_id", "line", "name"} or not 0 <= v["path_id"] < len(rec_paths):
                die(f"Function {v!r}")
            funcs.append(v)
        elif k == "Call":
            if v.get("args") != [] or not 0 <= v["function_id"] < len(funcs):
                die(f"Call {v!r}")
            calls[funcs[v["function_id"]]["name"]] += 1
            ncalls += 1
            depth += 1
        elif k == "Return":
            if v != {"return_value": {"kind": "None", "type_id": 0}}:
                die(f"Return {v!r}")
            returns += 1
            depth -= 1
            if depth < 0:
                die("a Return without its Call")
        elif k == "Step":
            if set(v) != {"path_id", "line"} or not 0 <= v["path_id"] < len(rec_paths):
                die(f"Step {v!r}")
        elif k == "ThreadStart":
            if not isinstance(v, int) or v in started:
                die(f"ThreadStart {v!r}")
            started.add(v)
        elif k == "ThreadSwitch":
            if v not in started:
                die(f"ThreadSwitch to unstarted {v!r}")
        elif k == "ThreadExit":
            if v not in started or v in exited:
                die(f"ThreadExit {v!r}")
            exited.add(v)
        elif k != "Type":
            die(f"unexpected record {k}")
    if rec_paths != paths:
        die("trace_paths.json differs from the Path records")
    for name, n in sorted(calls.items()):
        print("calls", name, n)
    print("callsall", ncalls)
    print("returns", returns)
    for p in paths:
        print("path", p)
    print("metadata", meta["program"], *meta["args"])
    print("threads", len(started), len(exited))


main()
