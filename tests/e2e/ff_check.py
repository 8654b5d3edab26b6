#!/usr/bin/env python3
"""Independent reader of a Firefox Profiler processed profile (gzip or plain JSON), written from
the format's description (shared/notes/formats.md, the profiler's src/types/profile.ts), not from
our writer.  Exits 1 with a message on the first structural error; prints facts otherwise:
  threads N
  thread PID TID NAME samples=N weight_ms=W span_ms=S
  calls FUNC N          (stack transitions into FUNC: frames entered, summed over threads)
  nested CALLER>FUNC N  (of those, entered directly under CALLER)
  marker NAME TEXT N    (markers by name and main text: class, module or message; spaces as _)
  marker_tid NAME TEXT TID N  (the same per thread)
  marker_phase NAME PHASE N
  drop NAME VALUE       (meta.extra)
  cpu_in FUNC N         (weightType "samples", --cpu: samples whose stack has FUNC, weights
                         summed; their weights must be positive integers)
  stack N F1;F2;…       (--cpu: samples of each stack, its functions root first, weights summed)
  large_alloc LEAF N BYTES / large_free LEAF N BYTES
                        (nativeAllocations of at least 64 KiB, by the leaf function of their
                         stack, "-" for none; frees as positive bytes)
"""
import gzip
import json
import sys
from collections import Counter


def die(msg):
    print("BAD:", msg)
    sys.exit(1)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data)


def table(th, name, cols):
    t = th.get(name)
    if not isinstance(t, dict):
        die(f"{name} missing")
    n = t.get("length")
    if not isinstance(n, int) or n < 0:
        die(f"{name}.length is {n!r}")
    for c in cols:
        if not isinstance(t.get(c), list):
            die(f"{name}.{c} missing")
        if len(t[c]) != n:
            die(f"{name}.{c} has {len(t[c])} entries, length says {n}")
    return t, n


def index(v, n, what, nullable=False):
    if v is None and nullable:
        return
    if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < n:
        die(f"{what}: {v!r} not an index below {n}")


def schemas(meta):
    """meta.markerSchema: name -> the set of its field keys."""
    out = {}
    if not isinstance(meta["markerSchema"], list):
        die("meta.markerSchema is not a list")
    for sc in meta["markerSchema"]:
        name = sc.get("name")
        if not isinstance(name, str) or name in out:
            die(f"markerSchema entry without a unique name: {sc!r}")
        disp = sc.get("display")
        if not isinstance(disp, list) or not disp or not all(
                d in ("marker-chart", "marker-table", "marker-sidebar", "timeline-overview",
                      "timeline-memory", "timeline-ipc", "timeline-fileio", "stack-chart")
                for d in disp):
            die(f"markerSchema {name}: display {disp!r}")
        fields = sc.get("fields")
        if not isinstance(fields, list):
            die(f"markerSchema {name}: no fields list")
        keys = set()
        for f in fields:
            if not isinstance(f.get("key"), str) or not isinstance(f.get("format"), str):
                die(f"markerSchema {name}: field {f!r}")
            keys.add(f["key"])
        out[name] = keys
    return out


def check_markers(th, mk, nmk, ns, ncat, schema, facts):
    """Column by column: indices in range, phases with the right times, times inside the
    thread's range, data of a schema's type with only its fields."""
    lo, hi = th["registerTime"] - 1e-6, th["unregisterTime"] + 1e-6
    for i in range(nmk):
        index(mk["name"][i], ns, "markers.name")
        index(mk["category"][i], ncat, "markers.category")
        ph, st, en = mk["phase"][i], mk["startTime"][i], mk["endTime"][i]
        want = {0: (True, False), 1: (True, True), 2: (True, False), 3: (False, True)}.get(ph)
        if want is None:
            die(f"marker {i}: phase {ph!r}")
        for t, have, what in ((st, want[0], "startTime"), (en, want[1], "endTime")):
            if have != (t is not None):
                die(f"marker {i}: phase {ph} with {what} {t!r}")
            if t is not None and (not isinstance(t, (int, float)) or not lo <= t <= hi):
                die(f"marker {i}: {what} {t!r} outside the thread's {lo}..{hi}")
        if ph == 1 and en < st:
            die(f"marker {i}: ends before it starts")
        d = mk["data"][i]
        text = "-"
        if d is not None:
            if not isinstance(d, dict) or d.get("type") not in schema:
                die(f"marker {i}: data {d!r} of no schema's type")
            extra = set(d) - {"type"} - schema[d["type"]]
            if extra:
                die(f"marker {i}: data keys {sorted(extra)} not in schema {d['type']}")
            for k in ("class", "module", "message"):
                if k in d:
                    text = str(d[k]).replace(" ", "_") or "-"
                    break
        name = th["stringArray"][mk["name"][i]].replace(" ", "_")
        facts[("marker", name, text)] += 1
        facts[("marker_tid", name, text, th["tid"])] += 1
        facts[("marker_phase", name, ph)] += 1


def main():
    p = load(sys.argv[1])
    meta = p.get("meta") or die("no meta")
    if meta.get("preprocessedProfileVersion") != 55:
        die(f"preprocessedProfileVersion {meta.get('preprocessedProfileVersion')!r}")
    for k in ("interval", "startTime", "processType", "product", "stackwalk", "version",
              "categories", "markerSchema"):
        if k not in meta:
            die(f"meta.{k} missing")
    ncat = len(meta["categories"])
    if ncat < 1 or not all(isinstance(c.get("subcategories"), list) for c in meta["categories"]):
        die("categories")
    if not isinstance(p.get("libs"), list):
        die("libs missing")
    schema = schemas(meta)
    calls, nested, mfacts = Counter(), Counter(), Counter()
    large = Counter()
    cpu_in = Counter()
    cpu_stacks = Counter()
    live = {}  # (pid, address) -> bytes: frees must pair with an allocation by address
    print("threads", len(p["threads"]))
    for th in p["threads"]:
        for k in ("processType", "processName", "processStartupTime", "processShutdownTime",
                  "registerTime", "unregisterTime", "pausedRanges", "name", "isMainThread",
                  "pid", "tid", "stringArray"):
            if k not in th:
                die(f"thread.{k} missing")
        if not isinstance(th["pid"], str):
            die("pid is not a string")
        if th["isMainThread"] != (str(th["tid"]) == th["pid"]):
            die("isMainThread is not tid == pid")
        strings = th["stringArray"]
        if not all(isinstance(s, str) for s in strings):
            die("stringArray holds a non-string")
        ns = len(strings)
        res, nres = table(th, "resourceTable", ["lib", "name", "host", "type"])
        nat, nnat = table(th, "nativeSymbols", ["libIndex", "address", "name", "functionSize"])
        if nres or nnat:
            die("resourceTable / nativeSymbols not empty")
        fn, nfn = table(th, "funcTable", ["name", "isJS", "relevantForJS", "resource",
                                          "fileName", "lineNumber", "columnNumber"])
        for i in range(nfn):
            index(fn["name"][i], ns, "funcTable.name")
            index(fn["fileName"][i], ns, "funcTable.fileName", nullable=True)
            if fn["resource"][i] != -1:
                die("funcTable.resource")
        fr, nfr = table(th, "frameTable", ["address", "inlineDepth", "category", "subcategory",
                                           "func", "nativeSymbol", "innerWindowID", "line",
                                           "column"])
        for i in range(nfr):
            index(fr["func"][i], nfn, "frameTable.func")
            index(fr["category"][i], ncat, "frameTable.category")
        st, nst = table(th, "stackTable", ["frame", "prefix"])
        for i in range(nst):
            index(st["frame"][i], nfr, "stackTable.frame")
            pre = st["prefix"][i]
            index(pre, nst, "stackTable.prefix", nullable=True)
            if pre is not None and pre >= i:
                die(f"stack {i}'s prefix {pre} is not before it")
        sm, nsm = table(th, "samples", ["stack", "time", "weight"])
        if sm.get("weightType") not in ("tracing-ms", "samples"):
            die("weightType")
        cpu = sm["weightType"] == "samples"
        mk, nmk = table(th, "markers", ["data", "name", "startTime", "endTime", "phase",
                                        "category"])
        check_markers(th, mk, nmk, ns, ncat, schema, mfacts)
        prev_t = None
        for i in range(nsm):
            index(sm["stack"][i], nst, "samples.stack", nullable=True)
            t = sm["time"][i]
            if prev_t is not None and t < prev_t:
                die("sample times go back")
            prev_t = t
            if sm["weight"][i] < 0:
                die("negative weight")
            if cpu and (not isinstance(sm["weight"][i], int) or sm["weight"][i] < 1):
                die(f"samples weight {sm['weight'][i]!r}")
        if "nativeAllocations" in th:
            na, nna = table(th, "nativeAllocations", ["time", "weight", "stack",
                                                      "memoryAddress", "threadId"])
            if na.get("weightType") != "bytes":
                die("nativeAllocations.weightType")
            for i in range(nna):
                index(na["stack"][i], nst, "nativeAllocations.stack", nullable=True)
                if na["threadId"][i] != th["tid"]:
                    die("nativeAllocations.threadId is not the thread's")
                w, a, k = na["weight"][i], na["memoryAddress"][i], (th["pid"], na["memoryAddress"][i])
                if not isinstance(w, int) or w == 0 or not isinstance(a, int) or a <= 0:
                    die(f"nativeAllocations entry {i}: weight {w!r} address {a!r}")
                if w > 0:
                    live[k] = w
                elif live.pop(k, None) != -w:
                    die(f"a free of {-w} bytes at {a:#x} pairs with no allocation of that size")
            for i in range(nna):
                w = na["weight"][i]
                if abs(w) >= 65536:
                    sidx = na["stack"][i]
                    leaf = "-" if sidx is None else strings[fn["name"][fr["func"][st["frame"][sidx]]]]
                    large[("large_alloc" if w > 0 else "large_free", leaf)] += 1
                    large[("bytes_alloc" if w > 0 else "bytes_free", leaf)] += abs(w)
        weight = sum(sm["weight"])
        span = th["unregisterTime"] - th["registerTime"]
        if nsm and abs(sm["time"][0] - th["registerTime"]) > 1e-6:
            die("first sample is not at registerTime")
        print(f"thread {th['pid']} {th['tid']} {th['name']} samples={nsm} "
              f"weight_ms={weight:.6f} span_ms={span:.6f}")

        def chain(s):  # root first
            out = []
            while s is not None:
                out.append(s)
                s = st["prefix"][s]
            return out[::-1]

        def fname(s):
            return strings[fn["name"][fr["func"][st["frame"][s]]]]

        if cpu:
            for i in range(nsm):
                s = sm["stack"][i]
                frames = [fname(x) for x in (chain(s) if s is not None else [])]
                for name in set(frames):
                    cpu_in[name] += sm["weight"][i]
                cpu_stacks[";".join(frames)] += sm["weight"][i]
            continue
        prev = []
        for i in range(nsm):
            cur = chain(sm["stack"][i])
            k = 0
            while k < len(prev) and k < len(cur) and prev[k] == cur[k]:
                k += 1
            for d in range(k, len(cur)):
                calls[fname(cur[d])] += 1
                nested[(fname(cur[d - 1]) if d else "") + ">" + fname(cur[d])] += 1
            prev = cur
    for name, n in sorted(cpu_in.items()):
        print("cpu_in", name, n)
    for stack, n in sorted(cpu_stacks.items()):
        print("stack", n, stack)
    for name, n in sorted(calls.items()):
        print("calls", name, n)
    for name, n in sorted(nested.items()):
        print("nested", name, n)
    for (kind, leaf), n in sorted(large.items()):
        if kind.startswith("large"):
            byt = large[("bytes_" + kind[6:], leaf)]
            print(kind, leaf, n, byt)
    for k, n in sorted(mfacts.items(), key=str):
        print(" ".join(str(x) for x in k), n)
    for sec in meta.get("extra", []):
        for e in sec.get("entries", []):
            print("drop", e["label"], e["value"])


main()
