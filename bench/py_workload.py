#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Python 3 benchmark workload: JSON round trips, string building, dicts and lists of records,
sorting — the mix of a small data-processing script.  Blocks smaller than 512 bytes come
from pymalloc's arenas; the larger ones (strings, lists, dict tables, JSON text) call malloc.

    py_workload.py [--gate] [ROUNDS]   (default 4)
    --gate: read one line from stdin first (the harness attaches a tracer while we wait).
"""
import json
import sys


def make_records(n, seed):
    out = []
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append({
            "id": i,
            "name": "user-%d-%s" % (i, "x" * (x % 1500)),
            "tags": ["t%d" % (x % (k + 3)) for k in range(x % 12)],
            "score": (x % 1000) / 7.0,
            "history": list(range(x % 160)),
        })
    return out


def transform(records):
    text = json.dumps(records)
    back = json.loads(text)
    by_tag = {}
    for r in back:
        for t in r["tags"]:
            by_tag.setdefault(t, []).append(r["id"])
    lines = ["%s,%s,%.2f,%d" % (r["id"], r["name"].upper(), r["score"], sum(r["history"]))
             for r in back]
    blob = "\n".join(sorted(lines, key=len))
    return len(text) + len(blob) + sum(len(v) for v in by_tag.values())


def main():
    args = sys.argv[1:]
    if "--gate" in args:
        args.remove("--gate")
        sys.stdin.readline()
    rounds = int(args[0]) if args else 4
    total = 0
    for r in range(rounds):
        total += transform(make_records(20000, r + 1))
    print(total)


if __name__ == "__main__":
    main()
