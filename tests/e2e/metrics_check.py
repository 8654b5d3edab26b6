#!/usr/bin/env python3
"""Checks two scrapes of --metrics (tests/e2e/test_metrics.sh) with Debian's
python3-prometheus-client parser, an exposition reader that is not ours: every family
typed and described, our names, no per-process labels, the counters never going back and
the events moving between the scrapes, the gauges there.  Prints one line per check."""
import sys

from prometheus_client.parser import text_string_to_metric_families


def families(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = fam
    return out, text


def value(fams, name):
    fam = fams[name]
    assert len(fam.samples) == 1, f"{name}: {len(fam.samples)} samples"
    return fam.samples[0].value


def main():
    a, ta = families(sys.argv[1])
    b, tb = families(sys.argv[2])
    for text in (ta, tb):
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name = line.split("{")[0].split(" ")[0]
                assert name.startswith("bpftrace_prof_"), f"foreign name {name}"
                assert "pid" not in line.split(" ")[0], f"a per-pid series: {line}"
    for name, fam in b.items():
        assert fam.documentation, f"{name}: no HELP"
        assert fam.type in ("counter", "gauge"), f"{name}: type {fam.type}"
    # prometheus_client names counter families without _total
    need = ["bpftrace_prof_events", "bpftrace_prof_ringbuf_full", "bpftrace_prof_resident_memory_bytes",
            "bpftrace_prof_bpf_map_bytes", "bpftrace_prof_processes_tracked",
            "bpftrace_prof_probe_links", "bpftrace_prof_unwind_tables_built", "bpftrace_prof_push_sent",
            "bpftrace_prof_backlog_bytes", "bpftrace_prof_backlog_full"]
    for name in need:
        assert name in b, f"no {name}"
    counters = [n for n, f in b.items() if f.type == "counter"]
    for n in counters:
        if n in a:
            assert value(b, n) >= value(a, n), f"{n} went back: {value(a, n)} -> {value(b, n)}"
    print(f"ok: {len(b)} families, {len(counters)} counters, every one typed and described")
    ev_a, ev_b = value(a, "bpftrace_prof_events"), value(b, "bpftrace_prof_events")
    assert ev_b > ev_a, f"events did not move: {ev_a} -> {ev_b}"
    print(f"ok: events {ev_a:.0f} -> {ev_b:.0f}")
    assert value(b, "bpftrace_prof_resident_memory_bytes") > 0
    assert value(b, "bpftrace_prof_bpf_map_bytes") > 0
    assert value(b, "bpftrace_prof_processes_tracked") >= 1
    assert value(b, "bpftrace_prof_probe_links") >= 1
    sent_a, sent_b = value(a, "bpftrace_prof_push_sent"), value(b, "bpftrace_prof_push_sent")
    assert sent_b > sent_a, f"push_sent did not move: {sent_a} -> {sent_b}"
    print(f"ok: gauges set, push_sent {sent_a:.0f} -> {sent_b:.0f}")


if __name__ == "__main__":
    main()
