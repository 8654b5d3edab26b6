#!/usr/bin/python3
"""A second reader of -f perfetto traces, through Debian's python3-protobuf (tests/e2e/test_trace.sh).

  perfetto_check.py FILE

Generates Python classes from tests/perfetto_subset.proto with `protoc --python_out` into a
temporary directory, parses FILE as one perfetto.protos.Trace, and fails (exit 1) on a field the
subset does not know (an unknown field anywhere), a packet outside sequence 1, an event on an
undeclared track or with a name not interned before, or slices that do not nest per thread.
Prints one fact a line, named as tests/e2e/trace_check.py names them so the same expectations
apply:
  slices NAME N / nested PARENT>NAME N / top NAME N / instants NAME N
  thread_slices PID TID N    complete slices on the thread's track
  process PID NAME / thread PID TID NAME
  heap PID final|peak|updates V   the process's "heap in use" counter track
  large_alloc BYTES N        "large allocation" instants by their "bytes" debug annotation
  cpu PID TID N              --cpu sample instants (a "stack" debug annotation) per thread
  cpu_in NAME N              samples whose stack has a frame NAME
  stack N F1;F2;…            samples of each stack, root first, kernel frames without "[k] "
  drop NAME VALUE            the "bpftrace-prof counter: NAME" tracks
"""
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join(HERE, "..", "perfetto_subset.proto")


def fail(msg):
    print("BAD TRACE: " + msg)
    sys.exit(1)


def load_classes():
    with tempfile.TemporaryDirectory(prefix="perfetto_pb.") as out:
        subprocess.run(["protoc", "--proto_path=" + os.path.dirname(PROTO),
                        "--python_out=" + out, PROTO], check=True)
        sys.path.insert(0, out)
        import perfetto_subset_pb2  # noqa: E402 (generated just now; loaded before out goes)
        sys.path.remove(out)
        return perfetto_subset_pb2


def no_unknown(msg, where):
    if len(msg.UnknownFields()):
        fail(f"{where}: fields the subset does not know: {len(msg.UnknownFields())}")
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        for i, v in enumerate(value if fd.label == fd.LABEL_REPEATED else [value]):
            no_unknown(v, f"{where}.{fd.name}[{i}]")


def main(path):
    pb = load_classes()
    trace = pb.Trace()
    trace.ParseFromString(open(path, "rb").read())
    if not trace.packet:
        fail("no packets")
    TE = pb.TrackEvent
    names = {}
    tracks = {}  # uuid -> ("process", pid) | ("thread", pid, tid) | ("heap", pid) | ("drop", name)
    stacks = collections.defaultdict(list)
    slices, nested, top, instants = (collections.Counter() for _ in range(4))
    per_thread = collections.Counter()
    heap = collections.defaultdict(list)
    large = collections.Counter()
    cpu, cpu_in, cpu_stacks = collections.Counter(), collections.Counter(), collections.Counter()
    lines = []
    for n, p in enumerate(trace.packet):
        no_unknown(p, f"packet {n}")
        if p.trusted_packet_sequence_id != 1:
            fail(f"packet {n} not on sequence 1")
        if n == 0 and not p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            fail("the first packet does not clear the incremental state")
        for en in p.interned_data.event_names:
            names[en.iid] = en.name
        if p.HasField("track_descriptor"):
            td = p.track_descriptor
            if td.HasField("thread"):
                tracks[td.uuid] = ("thread", td.thread.pid, td.thread.tid)
                lines.append(f"thread {td.thread.pid} {td.thread.tid} {td.thread.thread_name}")
            elif td.HasField("process"):
                tracks[td.uuid] = ("process", td.process.pid)
                lines.append(f"process {td.process.pid} {td.process.process_name}")
            elif td.HasField("counter") and td.HasField("parent_uuid"):
                parent = tracks.get(td.parent_uuid)
                if not parent or parent[0] != "process" or td.name != "heap in use" or \
                        td.counter.unit != pb.CounterDescriptor.UNIT_SIZE_BYTES:
                    fail(f"counter track {td.name!r} under {parent}")
                tracks[td.uuid] = ("heap", parent[1])
            elif td.HasField("counter") and td.name.startswith("bpftrace-prof counter: "):
                tracks[td.uuid] = ("drop", td.name.split(": ", 1)[1])
            else:
                fail(f"track of an unknown kind: {td}")
        if not p.HasField("track_event"):
            continue
        if not p.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
            fail(f"packet {n}: a track event without SEQ_NEEDS_INCREMENTAL_STATE")
        e = p.track_event
        track = tracks.get(e.track_uuid)
        if track is None:
            fail(f"packet {n}: event on undeclared track {e.track_uuid}")
        if e.type == TE.TYPE_COUNTER:
            if track[0] == "heap":
                heap[track[1]].append(e.counter_value)
            elif track[0] == "drop":
                lines.append(f"drop {track[1]} {e.counter_value}")
            else:
                fail(f"packet {n}: counter value on a {track[0]} track")
            continue
        if track[0] != "thread":
            fail(f"packet {n}: a slice or instant on a {track[0]} track")
        thread = track[1:]
        if e.type in (TE.TYPE_SLICE_BEGIN, TE.TYPE_INSTANT) and e.name_iid not in names:
            fail(f"packet {n}: name iid {e.name_iid} not interned before")
        if e.type == TE.TYPE_SLICE_BEGIN:
            stacks[thread].append(names[e.name_iid])
        elif e.type == TE.TYPE_SLICE_END:
            if not stacks[thread]:
                fail(f"packet {n}: slice end without a begin on {thread}")
            name = stacks[thread].pop()
            slices[name] += 1
            per_thread[thread] += 1
            if stacks[thread]:
                nested[stacks[thread][-1] + ">" + name] += 1
            else:
                top[name] += 1
        elif e.type == TE.TYPE_INSTANT:
            instants[names[e.name_iid]] += 1
            ann = {a.name: a for a in e.debug_annotations}
            if "stack" in ann:
                frames = ann["stack"].string_value.split(";")
                if frames[-1] != names[e.name_iid] and names[e.name_iid] != "[no stack]":
                    fail(f"packet {n}: cpu sample named {names[e.name_iid]}, leaf {frames[-1]}")
                cpu[thread] += 1
                cpu_stacks[";".join(f[4:] if f.startswith("[k] ") else f for f in frames)
                           if frames != [""] else ""] += 1
                for fr in set(frames):
                    cpu_in[fr] += 1
            elif names[e.name_iid] == "large allocation":
                ann = {a.name: a for a in e.debug_annotations}
                if set(ann) != {"bytes", "addr"}:
                    fail(f"packet {n}: large allocation annotations {sorted(ann)}")
                large[ann["bytes"].uint_value] += 1
        else:
            fail(f"packet {n}: event type {e.type}")
    for thread, st in stacks.items():
        if st:
            fail(f"slices left open on {thread}: {st}")
    for label, counter in (("slices", slices), ("nested", nested), ("top", top),
                           ("instants", instants)):
        for k, v in sorted(counter.items()):
            print(f"{label} {k} {v}")
    for (pid, tid), v in sorted(per_thread.items()):
        print(f"thread_slices {pid} {tid} {v}")
    for pid, vals in sorted(heap.items()):
        print(f"heap {pid} final {vals[-1]}")
        print(f"heap {pid} peak {max(vals)}")
        print(f"heap {pid} updates {len(vals)}")
    for k, v in sorted(large.items()):
        print(f"large_alloc {k} {v}")
    for (pid, tid), v in sorted(cpu.items()):
        print(f"cpu {pid} {tid} {v}")
    for k, v in sorted(cpu_in.items()):
        print(f"cpu_in {k} {v}")
    for k, v in sorted(cpu_stacks.items()):
        print(f"stack {v} {k}")
    for line in lines:
        print(line)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
