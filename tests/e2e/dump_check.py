#!/usr/bin/env python3
"""Check `bpftrace-prof dump --json` output against expectations (tests/e2e/test_dump.sh).

Usage: dump_check.py FILE PID [SPEC ...]

The document is validated first: one JSON object, every field of the contract present and of
its type, thread ids unique, frame kinds known, addresses hex.  Then each SPEC selects one
thread of process PID and checks it; SPEC is comma-separated key=value items:
  name=N / thread_name=N   select the thread by its kernel name / Python threading name
  state=REGEX              its state matches (full match)
  syscall=NAME             it is in that system call
  gil=held|released        its GIL state
  chain=A->B->C            these functions appear in this order, leaf first (not adjacent)
  adjacent=A->B->C         these functions appear in this order, leaf first, with no frame
                           between them
  user_leaf=F              F is the first frame that is not the kernel's
  kernel=1                 kernel frames come first (its way into the kernel is shown)
  python=F                 F is a Python frame (kind python) with the script as its file
  file=PATH                (with python=) the file of that frame
Prints what it checked; exits 1 with a message on the first failure.
"""
import json
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def validate(doc):
    if not isinstance(doc, dict) or set(doc) != {"processes", "counters"}:
        fail("top level: %r" % (sorted(doc) if isinstance(doc, dict) else type(doc)))
    for k, v in doc["counters"].items():
        if not isinstance(v, int) or v <= 0:
            fail("counter %s=%r" % (k, v))
    for p in doc["processes"]:
        for key, typ in (("pid", int), ("name", str), ("exe", str), ("threads", list)):
            if not isinstance(p.get(key), typ):
                fail("process field %s: %r" % (key, p.get(key)))
        tids = [t["tid"] for t in p["threads"]]
        if len(tids) != len(set(tids)):
            fail("duplicate thread ids in %d" % p["pid"])
        for t in p["threads"]:
            for key, typ in (("tid", int), ("name", str), ("state", str), ("frames", list)):
                if not isinstance(t.get(key), typ):
                    fail("thread field %s: %r" % (key, t.get(key)))
            for key in ("thread_name", "syscall", "gil", "note"):
                if key not in t or not (t[key] is None or isinstance(t[key], str)):
                    fail("thread field %s: %r" % (key, t.get(key)))
            if not (t["syscall_nr"] is None or isinstance(t["syscall_nr"], int)):
                fail("syscall_nr %r" % t["syscall_nr"])
            if t["gil"] not in (None, "held", "released"):
                fail("gil %r" % t["gil"])
            for f in t["frames"]:
                if f.get("kind") not in ("kernel", "native", "python"):
                    fail("frame kind %r" % f.get("kind"))
                if not re.fullmatch(r"0x[0-9a-f]+", f.get("address", "")):
                    fail("frame address %r" % f.get("address"))
                if not isinstance(f.get("line"), int) or not isinstance(f.get("function"), str):
                    fail("frame %r" % f)
            kinds = [f["kind"] for f in t["frames"]]
            # kernel frames (if any) come before every user frame
            if "kernel" in kinds and kinds[: kinds.count("kernel")] != ["kernel"] * kinds.count("kernel"):
                fail("thread %d: kernel frames after user frames: %r" % (t["tid"], kinds))


def check(thread, key, val, names):
    frames = thread["frames"]
    if key == "state":
        if not re.fullmatch(val, thread["state"]):
            fail("thread %d state %r !~ %r" % (thread["tid"], thread["state"], val))
    elif key == "syscall":
        if thread["syscall"] != val:
            fail("thread %d syscall %r != %r" % (thread["tid"], thread["syscall"], val))
    elif key == "gil":
        if thread["gil"] != val:
            fail("thread %d gil %r != %r" % (thread["tid"], thread["gil"], val))
    elif key == "chain":
        at = 0
        for want in val.split("->"):
            while at < len(names) and names[at] != want:
                at += 1
            if at == len(names):
                fail("thread %d: %s not found in order in %r" % (thread["tid"], val, names))
            at += 1
    elif key == "adjacent":
        want = val.split("->")
        if not any(names[i : i + len(want)] == want for i in range(len(names))):
            fail("thread %d: %s not adjacent in %r" % (thread["tid"], val, names))
    elif key == "user_leaf":
        user = [f["function"] for f in frames if f["kind"] != "kernel"]
        if not user or user[0] != val:
            fail("thread %d: first user frame %r, expected %r" % (thread["tid"], user[:1], val))
    elif key == "kernel":
        if not frames or frames[0]["kind"] != "kernel":
            fail("thread %d: no kernel frames first: %r" % (thread["tid"], names[:3]))
    elif key == "python":
        py = [f for f in frames if f["kind"] == "python" and f["function"] == val]
        if not py:
            fail("thread %d: no python frame %r in %r" % (thread["tid"], val, names))
        return py[0]
    elif key == "file":
        pass
    else:
        fail("unknown check %r" % key)
    return None


def main():
    if len(sys.argv) < 3:
        fail(__doc__)
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    validate(doc)
    pid = int(sys.argv[2])
    procs = [p for p in doc["processes"] if p["pid"] == pid]
    if len(procs) != 1:
        fail("process %d: %d entries" % (pid, len(procs)))
    threads = procs[0]["threads"]
    print("process %d: %d threads" % (pid, len(threads)))
    for spec in sys.argv[3:]:
        items = [kv.split("=", 1) for kv in spec.split(",")]
        sel = [(k, v) for k, v in items if k in ("name", "thread_name")]
        if len(sel) != 1:
            fail("spec %r: select by one of name= / thread_name=" % spec)
        matching = [t for t in threads if t[sel[0][0]] == sel[0][1]]
        if len(matching) != 1:
            fail("spec %r: %d threads match (%r)" % (spec, len(matching),
                                                    [(t["name"], t["thread_name"]) for t in threads]))
        t = matching[0]
        names = [f["function"] for f in t["frames"]]
        py = None
        for k, v in items:
            if k in ("name", "thread_name"):
                continue
            got = check(t, k, v, names)
            py = got or py
            if k == "file" and (py is None or py["file"] != v):
                fail("spec %r: python frame file %r != %r" % (spec, py and py["file"], v))
        print("ok: %s (%s, %d frames)" % (spec, t["state"], len(names)))


if __name__ == "__main__":
    main()
