#!/usr/bin/env python3
"""Independent reader of bpftrace-prof's event traces (tests/e2e/test_trace.sh).

  trace_check.py chrome FILE     Trace Event JSON (gzip detected), read with python's json
  trace_check.py perfetto FILE   Perfetto protobuf, decoded here from the field numbers of
                                 perfetto's trace_packet / track_event / track_descriptor /
                                 interned_data protos (no generated code, no protobuf library)
  trace_check.py pprof FILE      a --cpu pprof profile (gzip), decoded the same way from
                                 profile.proto's field numbers: its "stack" lines only, to
                                 compare a trace's stacks with

Checks what must hold of any trace (strict B/E nesting per thread, time never going back on a
thread, names and tracks declared before use) and exits 1 on the first violation.  Prints one
fact a line for the test to compare with exact expectations:
  slices NAME N              complete slices named NAME
  nested PARENT>NAME N       slices named NAME directly inside one named PARENT
  top NAME N                 slices named NAME at depth 0
  instants NAME N
  process PID NAME / thread PID TID NAME
  heap PID final|peak|updates V   the process's heap-in-use counter (--heap): its last and
                             largest value, and how many values it has
  heap PID same_time V       its values stamped with the time of the value before (each is
                             an allocator call of its own: with the BPF clock, none)
  large_alloc BYTES N        large-allocation instants of BYTES bytes (their "bytes" argument)
  large_in NAME N            large-allocation instants inside a slice named NAME (innermost)
  heap_delta NAME V          the sum over NAME's slices of the process's heap counter at their
                             end minus at their begin (in file order: the order of arrival)
  cpu PID TID N              --cpu sample instants of the thread (written at the end: not
                             in time order, checked against the trace's span instead)
  cpu_in NAME N              samples whose stack has a frame NAME
  cpu_at TID NAME N          the same, of thread TID
  cpu_kernel N               samples with kernel frames ("[k] …")
  stack N F1;F2;…            --cpu samples of each stack, root first (pprof: the samples
                             count; kernel frames without their "[k] ")
  profile_samples PID TID N  chrome: the samples of the thread's CPU profile (Profile and
                             ProfileChunk events), which must be the instants' samples: the
                             same stacks, as many of each (else exit 1)
  offcpu TID NAME n=N total_ms=T ge95=A ge290=B
                             --offcpu slices ("off-CPU: idle" / "off-CPU: runnable") of the
                             thread: how many, their total length, how many of >= 95 ms and
                             of >= 290 ms
  drop NAME VALUE
"""
import collections
import gzip
import json
import sys


def fail(msg):
    print("BAD TRACE: " + msg)
    sys.exit(1)


class Facts:
    def __init__(self):
        self.slices = collections.Counter()
        self.nested = collections.Counter()
        self.top = collections.Counter()
        self.instants = collections.Counter()
        self.lines = []
        self.stacks = collections.defaultdict(list)
        self.last_ts = {}
        self.heap = collections.defaultdict(list)  # pid -> counter values in order
        self.heap_ts = {}  # pid -> the time of its last counter value
        self.heap_same = collections.Counter()  # pid -> values at the time of the one before
        self.large = collections.Counter()  # bytes -> instants
        self.large_in = collections.Counter()  # innermost open slice -> instants
        self.heap_delta = collections.Counter()  # slice name -> counter change inside it
        self.begun_at = collections.defaultdict(list)  # thread -> counter value at each begin
        self.cpu = collections.Counter()  # thread -> samples
        self.cpu_in = collections.Counter()
        self.cpu_at = collections.Counter()
        self.cpu_kernel = 0
        self.cpu_stacks = collections.Counter()
        self.cpu_ts = []
        self.begun_ts = collections.defaultdict(list)
        self.offcpu = collections.defaultdict(lambda: [0, 0, 0, 0])  # (tid, name) -> n, ns, ...
        self.unit_ns = 1  # chrome: ts in us
        self.end_ts = None  # the trace's end, in its own unit

    def at(self, thread, ts):
        if ts < self.last_ts.get(thread, ts):
            fail(f"time goes back on {thread}: {ts} after {self.last_ts[thread]}")
        self.last_ts[thread] = ts

    def begin(self, thread, ts, name):
        self.at(thread, ts)
        self.stacks[thread].append(name)
        self.begun_at[thread].append(self.heap_now(thread))
        self.begun_ts[thread].append(ts)

    def end(self, thread, ts):
        self.at(thread, ts)
        st = self.stacks[thread]
        if not st:
            fail(f"end without begin on {thread} at {ts}")
        name = st.pop()
        self.slices[name] += 1
        self.heap_delta[name] += self.heap_now(thread) - self.begun_at[thread].pop()
        ns = (ts - self.begun_ts[thread].pop()) * self.unit_ns
        if name.startswith("off-CPU: "):
            o = self.offcpu[(thread[1], name)]
            o[0] += 1
            o[1] += ns
            o[2] += ns >= 95e6
            o[3] += ns >= 290e6
        if st:
            self.nested[st[-1] + ">" + name] += 1
        else:
            self.top[name] += 1

    def heap_now(self, thread):
        vals = self.heap.get(thread[0])
        return vals[-1] if vals else 0

    def counter(self, pid, ts, value):
        self.at(("heap counter", pid), ts)
        self.heap_same[pid] += self.heap_ts.get(pid) == ts
        self.heap_ts[pid] = ts
        if value < 0:
            fail(f"negative heap counter {value} of {pid}")
        self.heap[pid].append(value)

    def large_alloc(self, thread, ts, size):
        self.at(thread, ts)
        if size < 1 << 20:
            fail(f"large allocation of only {size} bytes")
        self.large[size] += 1
        if self.stacks[thread]:
            self.large_in[self.stacks[thread][-1]] += 1

    def cpu_sample(self, thread, ts, name, stack):
        frames = stack.split(";") if stack else []
        if frames and frames[-1] != name:
            fail(f"cpu sample named {name} but its leaf is {frames[-1]}")
        if not frames and name != "[no stack]":
            fail(f"cpu sample {name} without a stack")
        self.cpu[thread] += 1
        for fr in set(frames):
            self.cpu_in[fr] += 1
            self.cpu_at[(thread[1], fr)] += 1
        self.cpu_kernel += any(fr.startswith("[k] ") for fr in frames)
        self.cpu_stacks[stack] += 1
        self.cpu_ts.append(ts)

    def done(self):
        for thread, st in self.stacks.items():
            if st:
                fail(f"slices left open on {thread}: {st}")
        for k, v in sorted(self.slices.items()):
            print(f"slices {k} {v}")
        for k, v in sorted(self.nested.items()):
            print(f"nested {k} {v}")
        for k, v in sorted(self.top.items()):
            print(f"top {k} {v}")
        for k, v in sorted(self.instants.items()):
            print(f"instants {k} {v}")
        if self.cpu_ts:
            # Written at the end, out of order: each still within the run (the end's time).
            if self.end_ts is None or max(self.cpu_ts) > self.end_ts or min(self.cpu_ts) <= 0:
                fail(f"cpu samples {min(self.cpu_ts)}..{max(self.cpu_ts)} after the end {self.end_ts}")
            for (pid, tid), v in sorted(self.cpu.items()):
                print(f"cpu {pid} {tid} {v}")
            for k, v in sorted(self.cpu_in.items()):
                print(f"cpu_in {k} {v}")
            for (tid, k), v in sorted(self.cpu_at.items()):
                print(f"cpu_at {tid} {k} {v}")
            print(f"cpu_kernel {self.cpu_kernel}")
            print_stacks(self.cpu_stacks)
        for (tid, name), (n, ns, a, b) in sorted(self.offcpu.items()):
            print(f"offcpu {tid} {name} n={n} total_ms={ns / 1e6:.0f} ge95={a} ge290={b}")
        for pid, vals in sorted(self.heap.items()):
            print(f"heap {pid} final {vals[-1]}")
            print(f"heap {pid} peak {max(vals)}")
            print(f"heap {pid} updates {len(vals)}")
            print(f"heap {pid} same_time {self.heap_same[pid]}")
        for k, v in sorted(self.large.items()):
            print(f"large_alloc {k} {v}")
        for k, v in sorted(self.large_in.items()):
            print(f"large_in {k} {v}")
        if self.heap:
            for k, v in sorted(self.heap_delta.items()):
                print(f"heap_delta {k} {v}")
        for line in self.lines:
            print(line)


def print_stacks(stacks):
    for stack, n in sorted(stacks.items()):
        print("stack", n, ";".join(fr[4:] if fr.startswith("[k] ") else fr
                                   for fr in stack.split(";")) if stack else "")


def cpu_profiles(events):
    """Chrome's CPU profile events (ph "P"): per id, a Profile then ProfileChunks whose nodes
    name their parent (declared before), samples of nodes and timeDeltas (never negative).
    Returns {(pid, tid): Counter of stacks, root first, the root's samples (idle) left out}."""
    profiles = {}
    out = collections.defaultdict(collections.Counter)
    for ev in events:
        if ev["ph"] != "P":
            continue
        if ev.get("cat") != "disabled-by-default-v8.cpu_profiler":
            fail(f"profile event of category {ev.get('cat')}")
        key = ev["id"]
        if ev["name"] == "Profile":
            if key in profiles:
                fail(f"profile {key} declared twice")
            profiles[key] = {"nodes": {}, "thread": (ev["pid"], ev["tid"])}
            continue
        if ev["name"] != "ProfileChunk":
            fail(f"profile event {ev['name']}")
        pr = profiles.get(key)
        if pr is None or pr["thread"] != (ev["pid"], ev["tid"]):
            fail(f"ProfileChunk of {key} before its Profile, or on another thread")
        data = ev["args"]["data"]
        nodes = pr["nodes"]
        for nd in data["cpuProfile"].get("nodes", []):
            if nd["id"] in nodes:
                fail(f"profile {key}: node {nd['id']} twice")
            parent = nd.get("parent")
            if parent is None and nodes:
                fail(f"profile {key}: a second root node {nd['id']}")
            if parent is not None and parent not in nodes:
                fail(f"profile {key}: node {nd['id']}'s parent {parent} not declared before")
            name = nd["callFrame"]["functionName"]
            nodes[nd["id"]] = (parent, name)
        samples, deltas = data["cpuProfile"].get("samples", []), data.get("timeDeltas", [])
        if len(samples) != len(deltas):
            fail(f"profile {key}: {len(samples)} samples, {len(deltas)} timeDeltas")
        for node, delta in zip(samples, deltas):
            if node not in nodes:
                fail(f"profile {key}: sample of undeclared node {node}")
            if delta < 0:
                fail(f"profile {key}: negative timeDelta {delta}")
            frames = []
            while nodes[node][0] is not None:
                frames.append(nodes[node][1])
                node = nodes[node][0]
            if not frames:
                continue  # the root: not on the CPU
            stack = ";".join(frames[::-1])
            out[pr["thread"]]["" if stack == "[no stack]" else stack] += 1
    return out


def chrome(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw.decode("utf-8"))  # strict: invalid UTF-8 fails here
    if set(doc) - {"traceEvents", "displayTimeUnit", "metadata"}:
        fail(f"unexpected top-level keys {sorted(doc)}")
    if doc.get("displayTimeUnit") != "ns":
        fail("displayTimeUnit is not ns")
    f = Facts()
    f.unit_ns = 1000
    for ev in doc["traceEvents"]:
        ph = ev["ph"]
        thread = (ev["pid"], ev["tid"])
        if ph == "B":
            f.begin(thread, ev["ts"], ev["name"])
        elif ph == "E":
            f.end(thread, ev["ts"])
        elif ph == "i":
            if ev.get("s") != "t":
                fail("instant event not thread-scoped")
            f.instants[ev["name"]] += 1
            if ev.get("cat") == "cpu":
                f.cpu_sample(thread, ev["ts"], ev["name"], ev["args"]["stack"])
            elif ev.get("cat") == "heap":
                f.large_alloc(thread, ev["ts"], ev["args"]["bytes"])
            else:
                f.at(thread, ev["ts"])
        elif ph == "P":
            pass  # the CPU profile: read below
        elif ph == "C":
            if ev["name"] != "heap in use" or set(ev["args"]) != {"bytes"}:
                fail(f"unknown counter {ev['name']} {ev['args']}")
            f.counter(ev["pid"], ev["ts"], ev["args"]["bytes"])
        elif ph == "M":
            if ev["name"] == "process_name":
                f.lines.append(f"process {ev['pid']} {ev['args']['name']}")
            elif ev["name"] == "thread_name":
                f.lines.append(f"thread {ev['pid']} {ev['tid']} {ev['args']['name']}")
            else:
                fail(f"unknown metadata event {ev['name']}")
        else:
            fail(f"unexpected phase {ph}")
    f.end_ts = doc["metadata"]["end_ts_ns"] / 1000
    for k, v in doc["metadata"]["counters"].items():
        f.lines.append(f"drop {k} {v}")
    profiles = cpu_profiles(doc["traceEvents"])
    instants = collections.defaultdict(collections.Counter)
    for ev in doc["traceEvents"]:
        if ev["ph"] == "i" and ev.get("cat") == "cpu":
            instants[(ev["pid"], ev["tid"])][ev["args"]["stack"]] += 1
    for thread in sorted(set(profiles) | set(instants)):
        if profiles.get(thread) != instants.get(thread):
            diff = (profiles.get(thread, collections.Counter()) - instants.get(thread, collections.Counter())) + \
                (instants.get(thread, collections.Counter()) - profiles.get(thread, collections.Counter()))
            fail(f"{thread}: the CPU profile's samples are not the instants': {list(diff.items())[:3]}")
        f.lines.append(f"profile_samples {thread[0]} {thread[1]} {sum(profiles[thread].values())}")
    f.done()


# ---- protobuf wire format, by hand ----

def varint(buf, i):
    v = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            fail("truncated or overlong varint")
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    """(field number, value) pairs; value: int for varints, bytes for length-delimited."""
    i = 0
    out = []
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 2:
            n, i = varint(buf, i)
            if i + n > len(buf):
                fail("length-delimited field past the end")
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            fail(f"wire type {wt}")
        out.append((num, v))
    return out


def one(fs, num, default=None):
    vals = [v for n, v in fs if n == num]
    return vals[-1] if vals else default


def perfetto(path):
    buf = open(path, "rb").read()
    f = Facts()
    names = {}  # iid -> name (per sequence; we write one)
    tracks = {}  # uuid -> ("thread", pid, tid) | ("process", pid) | ("counter", name)
    cleared = False
    packets = 0
    for num, pkt in fields(buf):
        if num != 1:
            fail(f"Trace field {num}, not packet")
        packets += 1
        p = fields(pkt)
        if one(p, 10) != 1:
            fail("packet without trusted_packet_sequence_id 1")
        flags = one(p, 13, 0)
        if flags & 1:
            cleared = True
        td = one(p, 60)
        if td is not None:
            t = fields(td)
            uuid = one(t, 1)
            proc, thr, cnt = one(t, 3), one(t, 4), one(t, 8)
            if thr is not None:
                th = fields(thr)
                tracks[uuid] = ("thread", one(th, 1), one(th, 2))
                f.lines.append(f"thread {one(th, 1)} {one(th, 2)} {one(th, 5, b'').decode()}")
                parent = one(t, 5)
                if parent is not None and tracks.get(parent, ("",))[0] != "process":
                    fail("thread track's parent is not a process track declared before")
            elif proc is not None:
                pr = fields(proc)
                tracks[uuid] = ("process", one(pr, 1))
                f.lines.append(f"process {one(pr, 1)} {one(pr, 6, b'').decode()}")
            elif cnt is not None:
                parent = one(t, 5)
                if parent is None:
                    tracks[uuid] = ("counter", one(t, 2, b"").decode())
                elif tracks.get(parent, ("",))[0] == "process":
                    if one(t, 2) != b"heap in use" or one(fields(cnt), 3) != 3:
                        fail("a process's counter track that is not heap in use (bytes)")
                    tracks[uuid] = ("heap", tracks[parent][1])
                else:
                    fail("counter track's parent is not a process track declared before")
            else:
                fail("track descriptor of an unknown kind")
        interned = one(p, 12)
        if interned is not None:
            if not cleared:
                fail("interned data before the incremental state was cleared")
            for n, en in fields(interned):
                if n == 2:
                    e = fields(en)
                    names[one(e, 1)] = one(e, 2).decode("utf-8")
        te = one(p, 11)
        if te is None:
            continue
        if not flags & 2:
            fail("track event without SEQ_NEEDS_INCREMENTAL_STATE")
        ts = one(p, 8)
        if ts is None:
            fail("track event without a timestamp")
        e = fields(te)
        typ, uuid, iid = one(e, 9), one(e, 11), one(e, 10)
        track = tracks.get(uuid)
        if track is None:
            fail(f"event on undeclared track {uuid}")
        if typ == 4 and track[0] == "heap":
            f.counter(track[1], ts, one(e, 30, 0))
            continue
        if typ == 4:
            if track[0] != "counter":
                fail("counter value on a non-counter track")
            f.lines.append(f"drop {track[1].split(': ', 1)[1]} {one(e, 30, 0)}")
            f.end_ts = ts
            continue
        if track[0] != "thread":
            fail("slice on a non-thread track")
        if typ in (1, 3) and iid not in names:
            fail(f"name iid {iid} used before it was interned")
        if typ == 1:
            f.begin(track[1:], ts, names[iid])
        elif typ == 2:
            f.end(track[1:], ts)
        elif typ == 3:
            f.instants[names[iid]] += 1
            ann = {}
            for n, da in e:
                if n == 4:
                    d = fields(da)
                    ann[one(d, 10, b"").decode()] = one(d, 3, one(d, 7, one(d, 6)))
            if "stack" in ann:
                f.cpu_sample(track[1:], ts, names[iid], ann["stack"].decode("utf-8"))
            elif names[iid] == "large allocation":
                f.large_alloc(track[1:], ts, ann["bytes"])
            else:
                f.at(track[1:], ts)
        else:
            fail(f"event type {typ}")
    if not packets:
        fail("no packets")
    f.done()


def pprof(path):
    """profile.proto: sample 2 {location_id 1, value 2}, location 4 {id 1, address 3, line 4
    {function_id 1}}, function 5 {id 1, name 2}, string_table 6; location ids leaf first."""
    buf = gzip.decompress(open(path, "rb").read())
    strings, funcs, locs, samples = [], {}, {}, []

    def packed(fs, num):
        out = []
        for n, v in fs:
            if n != num:
                continue
            if isinstance(v, int):
                out.append(v)
            else:
                i = 0
                while i < len(v):
                    x, i = varint(v, i)
                    out.append(x)
        return out

    for num, v in fields(buf):
        if num == 6:
            strings.append(v.decode("utf-8"))
        elif num == 5:
            fs = fields(v)
            funcs[one(fs, 1)] = one(fs, 2, 0)
        elif num == 4:
            fs = fields(v)
            fids = [one(fields(ln), 1, 0) for n, ln in fs if n == 4]
            locs[one(fs, 1)] = (one(fs, 3, 0), fids)
        elif num == 2:
            fs = fields(v)
            samples.append((packed(fs, 1), packed(fs, 2)))
    stacks = collections.Counter()
    for lids, vals in samples:
        frames = []
        for lid in lids:
            addr, fids = locs[lid]
            # a location's lines are its inlined functions, the innermost first
            frames += [strings[funcs[fid]] for fid in fids] if fids else [f"0x{addr:x}"]
        stacks[";".join(frames[::-1])] += vals[0]
    print_stacks(stacks)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("chrome", "perfetto", "pprof"):
        sys.exit(__doc__)
    {"chrome": chrome, "perfetto": perfetto, "pprof": pprof}[sys.argv[1]](sys.argv[2])
