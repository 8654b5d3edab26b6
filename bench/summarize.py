#!/usr/bin/python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Turn bench/run.sh's measurements into bench/results/latest.md (markdown on stdout).

    summarize.py META RUNS_TSV SAMPLE_FUNCS_TSV [TABLES_TXT]

META: key=value lines (machine, kernel, rounds).  RUNS_TSV: one line per run (see run.sh).
SAMPLE_FUNCS_TSV: variant, round, sample index, function (or TOTAL), value — from the
profiles of the sampling section.  TABLES_TXT: build/bench/unwind_tables's output (a header
line of column names, then one line per file).  Medians throughout; runs that failed are left
out.
"""
import csv
import os
import statistics
import sys

TOOL_NAMES = {
    "untraced": "untraced",
    "ours": "**bpftrace-prof --heap**",
    "ours_dwarf": "**bpftrace-prof --heap --unwind dwarf**",
    "ours_fp": "**bpftrace-prof --heap --unwind fp**",
    "floor": "floor (same probes, empty programs)",
    "floor_multi": "floor through uprobe_multi links (as bpftrace-prof attaches)",
    "bpftrace": "bpftrace script",
    "memleak": "memleak-bpfcc",
}
COST_ROWS = [
    ("floor_entry", "entry probes only (no return probes), empty programs"),
    ("floor", "empty programs (the floor)"),
    ("floor_filter", "+ target filter (hash lookup of the tgid)"),
    ("floor_pending", "+ pending-call map (update at entry, lookup + delete at return)"),
    ("floor_stack", "+ `bpf_get_stackid` of the user stack at the return"),
    ("floor_rawstack", "+ `bpf_get_stack` (raw IPs into a per-CPU buffer) instead"),
    ("floor_ringbuf", "+ ring buffer: 40 B per allocation, 24 B per free, batched wake-ups"),
    ("floor_all", "all four together"),
    ("ours", "bpftrace-prof --heap"),
    ("floor_multi", "empty programs through uprobe_multi links (one per file and program)"),
    ("floor_session", "uprobe session on the entries, the return run for 1 call in 64"),
]
# The same probes on posix_memalign (first instruction single-stepped, a probe 7 bytes in
# emulated): where the entry of a session (which also places its return) sits.
ALIGNED_ALLOCS = 100000  # bench/run.sh's aligned_100k
ALIGNED_ROWS = [
    ("floor_entry", "entry probes only, on the first emulated instruction (today's place)"),
    ("floor_entry_first", "entry probes only, on the first instruction"),
    ("floor", "empty programs (the floor: entry + return at the first emulated instruction)"),
    ("floor_session", "uprobe session, 1 return in 64, on the first emulated instruction"),
    ("floor_session_first", "uprobe session, 1 return in 64, on the first instruction"),
]
# Our heap variants: the default, and one per unwind mode (the heap section runs the latter).
OURS = ["ours", "ours_dwarf", "ours_fp"]
UNWIND_NAMES = {"ours": "auto", "ours_dwarf": "dwarf", "ours_fp": "fp"}
KERNEL_GOAL_BYTES = 4 << 20  # issue 10: the four libraries' tables under 4 MiB of kernel memory
GOAL_FILES = {"libc.so.6", "libstdc++.so.6", "libsqlite3.so.0", "python3.11"}
WORKLOADS = [
    ("malloc_micro", "malloc/free microbenchmark (64 B, 5 frames deep)"),
    ("cxx_containers", "C++ containers and strings"),
    ("sqlite3", "sqlite3: bulk insert + queries"),
    ("python3", "Python 3 script (json, str, dict)"),
]


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def fmt(x, digits=0, suffix=""):
    if x is None:
        return "—"
    return f"{x:,.{digits}f}{suffix}"


def load_runs(path):
    runs = {}
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["ok"] != "1":
                continue
            runs.setdefault((row["section"], row["workload"], row["variant"]), []).append(row)
    return runs


def col(rows, key):
    return [num(r[key]) for r in rows]


class Heap:
    def __init__(self, runs, section, workload, allocs=None):
        self.runs, self.section, self.workload = runs, section, workload
        self.base = self.wall("untraced")
        # Every unwind mode sees the same allocations; the first variant that ran counts them.
        self.allocs = allocs or next(
            (a for a in (med(col(self.rows(v), "allocs")) for v in OURS) if a), None)

    def rows(self, variant):
        return self.runs.get((self.section, self.workload, variant), [])

    def wall(self, variant):
        return med(col(self.rows(variant), "wall_s"))

    def ns_per(self, variant):
        w = self.wall(variant)
        if w is None or self.base is None or not self.allocs:
            return None
        return (w - self.base) / self.allocs * 1e9

    def events_per_s(self, variant):
        rs = [num(r["events"]) / num(r["wall_s"]) for r in self.rows(variant)
              if num(r["events"]) is not None and num(r["wall_s"])]
        return med(rs)


def ratio(a, b):
    return a / b if a is not None and b else None


def heap_table(out, runs):
    if not any(Heap(runs, "heap", wl).base is not None for wl, _ in WORKLOADS):
        return
    out.append("| workload | allocations | tool | median wall (s) | slowdown | ns added per "
               "malloc+free | events/s consumed | events dropped | peak RSS (MiB) | tool CPU (s) "
               "| attach (s) |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    goals = []
    for wl, desc in WORKLOADS:
        h = Heap(runs, "heap", wl)
        if h.base is None:
            continue
        first = True
        for v in ["untraced"] + OURS + ["floor", "floor_multi", "bpftrace", "memleak"]:
            rs = h.rows(v)
            if not rs:
                continue
            w = h.wall(v)
            dropped = "—"
            if v in OURS:
                rbf = max(int(num(r["ringbuf_full"]) or 0) for r in rs)
                other = max(int(num(r["dropped"]) or 0) - int(num(r["ringbuf_full"]) or 0) for r in rs)
                dropped = f"{rbf:,}" + (f" (+{other:,} stacks lost)" if other else "")
            out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                desc if first else "", fmt(h.allocs) if first else "", TOOL_NAMES[v], fmt(w, 3),
                "1" if v == "untraced" else fmt(ratio(w, h.base), 1, "×"),
                "—" if v == "untraced" else fmt(h.ns_per(v)),
                fmt(h.events_per_s(v)) if v in OURS else "—", dropped,
                "—" if v == "untraced" else fmt(med(col(rs, "rss_kb")) / 1024, 1),
                "—" if v == "untraced" else fmt(med(col(rs, "cpu_s")), 2),
                "—" if v == "untraced" else fmt(med(col(rs, "ready_s")), 2)))
            first = False
        goals.append((desc, h))
    out.append("")
    out.append("Goals, per malloc+free pair and per unwind mode: bpftrace-prof at most 1.3× the "
               "floor (issue 5), and at least 3× cheaper than the bpftrace script and than "
               "memleak-bpfcc (issues 5 and 10). dwarf ÷ fp: what complete stacks cost the "
               "whole event. Where the kernel takes uprobe_multi links, bpftrace-prof attaches "
               "through them, and the floor of the same links (floor_multi) is the one its "
               "goal is judged against; the per-function floor is shown beside it.")
    out.append("")
    out.append("| workload | unwind | floor (ns) | floor, multi links (ns) | bpftrace-prof (ns) | "
               "÷ floor | ÷ floor of its links (goal ≤ 1.3) | bpftrace ÷ ours (goal ≥ 3) | "
               "memleak ÷ ours (goal ≥ 3) | dwarf ÷ fp |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for desc, h in goals:
        floor, first = h.ns_per("floor"), True
        multi = h.ns_per("floor_multi")
        for v in OURS:
            if not h.rows(v):
                continue
            ours = h.ns_per(v)
            vs_fp = ratio(ours, h.ns_per("ours_fp")) if v == "ours_dwarf" else None
            out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                desc if first else "", UNWIND_NAMES[v], fmt(floor), fmt(multi), fmt(ours),
                fmt(ratio(ours, floor), 2),
                verdict(ratio(ours, multi if multi else floor), lambda x: x <= 1.3),
                verdict(ratio(h.ns_per("bpftrace"), ours), lambda x: x >= 3),
                verdict(ratio(h.ns_per("memleak"), ours), lambda x: x >= 3), fmt(vs_fp, 2, "×")))
            first = False


def verdict(x, ok):
    return "—" if x is None else f"{x:.2f} {'✓' if ok(x) else '✗'}"


def tables_table(out, path):
    """Unwind-table cost per file, from build/bench/unwind_tables's columns."""
    if not path or not os.path.exists(path):
        return
    with open(path) as f:
        lines = [ln.split() for ln in f if ln.strip()]
    if len(lines) < 2:
        return
    head = lines[0]
    files = [dict(zip(head, ln)) for ln in lines[1:] if len(ln) == len(head)]
    if not files:
        return

    def kib(b):
        return "—" if b is None or b < 0 else f"{b / 1024:,.0f} KiB"
    out.append("Each file's table built by `user/unwind/unwind_table.c` (best of 10 builds; user CPU is "
               "the mean per build). In the kernel a table is an array map of 16 KiB chunks, one "
               "more for the index when the rows fill several (`include/prof_unwind.h`); "
               "\"charged\" is what the kernel accounts for such a map (its `memlock` in fdinfo), "
               "measured by creating one.")
    out.append("")
    out.append("| file | FDEs | rows | unsupported rows | table (8 B rows) | kernel chunks | kernel "
               "bytes | charged by the kernel | build (ms) | user CPU (ms) | peak RSS growth |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    tot = {"rows": 0, "table_B": 0, "kernel_B": 0, "memlock_B": 0, "build_ms": 0.0}

    def row(r, bold=False):
        out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            os.path.basename(r["file"]), fmt(num(r.get("fdes"))), fmt(num(r.get("rows"))),
            fmt(num(r.get("unsupp"))), kib(num(r.get("table_B"))), fmt(num(r.get("chunks"))),
            kib(num(r.get("kernel_B"))), kib(num(r.get("memlock_B"))),
            fmt(num(r.get("build_ms")), 1), fmt(num(r.get("user_ms")), 1),
            kib((num(r.get("peak+KiB")) or 0) * 1024)))

    # The goal's four libraries, their total, then the big ones (libtorch_cpu, the generated
    # file of 5 M rows) on their own.
    goal = [r for r in files if os.path.basename(r["file"]) in GOAL_FILES]
    big = [r for r in files if os.path.basename(r["file"]) not in GOAL_FILES]
    for r in goal:
        for k in tot:
            x = num(r.get(k))
            tot[k] = None if tot[k] is None or x is None or x < 0 else tot[k] + x
        row(r)
    if goal:
        out.append("| **together** | | {} | | {} | | **{}** | **{}** | {} | | |".format(
            fmt(tot["rows"]), kib(tot["table_B"]), kib(tot["kernel_B"]), kib(tot["memlock_B"]),
            fmt(tot["build_ms"], 1)))
    for r in big:
        row(r)
    kernel = tot["memlock_B"] or tot["kernel_B"]
    if kernel is not None and len(goal) == 4:
        out.append("")
        out.append(f"Goal (issue 10): the tables of these four files together under 4 MiB of "
                   f"kernel memory: {kernel / 1048576:.2f} MiB "
                   f"{'✓' if kernel < KERNEL_GOAL_BYTES else '✗'}.")
    if big:
        out.append("")
        out.append("Below the total: the big libraries (issue 28) — PyTorch's libtorch_cpu where "
                   "python3-torch is installed, and `big_cfi.elf` (tests/targets/gen_big_cfi.py: "
                   "560,001 FDEs of 9 rows), past the old 4 M-row cap, standing for the 450 MB "
                   "libraries of a GPU machine. A table in the kernel holds at most 8,388,608 "
                   "rows (`--unwind-max-rows`).")


def linfit(points):
    """Least-squares slope and intercept of (x, y) points; None when x does not vary."""
    if len(points) < 2:
        return None, None
    mx = statistics.mean(x for x, _ in points)
    my = statistics.mean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if not sxx:
        return None, None
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return slope, my - slope * mx


# Issue 27: ns per frame the walk may cost (15-25 ns leaves exact mode within 1.3x the floor on a
# host whose malloc+free traps cost ~2 us).
DEPTH_BUDGET_NS = 25


def depth_table(out, runs, meta):
    """ns per event of the heap return program against the depth of the stack it walks."""
    depths = sorted({int(wl[len("deep_"):]) for (sec, wl, _v) in runs if sec == "depth"})
    if not depths:
        return
    modes = [v for v in ("ours_dwarf", "ours_fp")
             if any(runs.get(("depth", f"deep_{d}", v)) for d in depths)]
    out.append(f"`bench/deep_stack.c` (frame pointers on) makes {fmt(num(meta.get('depth_pairs')))} "
               f"malloc(64)+free at a depth of D frames below main under `bpftrace-prof --heap "
               f"--unwind dwarf` and `--unwind fp` (rounds: {meta.get('depth_rounds', '?')}); "
               "with `kernel.bpf_stats_enabled=1`, the heap return program's `run_time_ns ÷ "
               "run_cnt` is the BPF time per allocation (stack walk + the rest of the program). "
               "Frames: the stack the profile holds (the unwinder also reaches the libc frames "
               "above main that the frame-pointer walk cannot).")
    out.append("")
    out.append("| D | unwind | frames per stack | ns per event | stacks cut | frames by frame "
               "pointer | dwarf ÷ fp (goal ≤ 2) |")
    out.append("|---:|---|---:|---:|---:|---:|---:|")
    points = {v: [] for v in modes}
    for d in depths:
        ns = {}
        for v in modes:
            rs = runs.get(("depth", f"deep_{d}", v), [])
            ns[v] = med([num(r["prog_ns"]) / num(r["prog_cnt"]) for r in rs
                         if num(r.get("prog_ns")) is not None and num(r.get("prog_cnt"))])
        for v in modes:
            rs = runs.get(("depth", f"deep_{d}", v), [])
            frames = med(col(rs, "frames"))
            if ns[v] is not None:
                points[v].append((frames if frames else d, ns[v]))
            out.append("| {} | {} | {} | {} | {} | {} | {} |".format(
                d, UNWIND_NAMES[v], fmt(frames), fmt(ns[v]), fmt(med(col(rs, "cut"))),
                fmt(med(col(rs, "fp_frames"))),
                verdict(ratio(ns[v], ns.get("ours_fp")), lambda x: x <= 2)
                if v == "ours_dwarf" else "—"))
    out.append("")
    out.append("Least squares over the depths, per unwind mode: the slope is the cost of one "
               "more frame, the intercept the rest of the program's work per event.")
    out.append("")
    out.append("| unwind | ns per frame | ns per event at 0 frames |")
    out.append("|---|---:|---:|")
    slopes = {}
    for v in modes:
        slopes[v], icpt = linfit(points[v])
        out.append(f"| {UNWIND_NAMES[v]} | {fmt(slopes[v], 1)} | {fmt(icpt)} |")
    r = ratio(slopes.get("ours_dwarf"), slopes.get("ours_fp"))
    if r is not None:
        out.append("")
        out.append(f"Goal (issue 10): a complete stack at most 2× the frame-pointer walk of the "
                   f"same depth — per frame, dwarf ÷ fp = {verdict(r, lambda x: x <= 2)}.")
    if slopes.get("ours_dwarf") is not None:
        out.append("")
        out.append(f"Budget (issue 27): at most {DEPTH_BUDGET_NS} ns per frame with complete "
                   f"stacks, what exact mode's ≤ 1.3× the floor leaves a 30-frame walk where a "
                   f"malloc+free trap pair costs ~2 µs — dwarf, ns per frame: "
                   f"{verdict(slopes['ours_dwarf'], lambda x: x <= DEPTH_BUDGET_NS)}. (Hosts "
                   "whose traps cost several times more ran BPF slower too: the budget is the "
                   "cheap-trap host's.)")


def cost_rows(out, h, rows):
    """One line per variant: ns per pair, over the floor, and ratios (wall over the untraced
    run's; time added over the floor's) from the same run."""
    empty = h.ns_per("floor")
    out.append("| programs at the probes | ns per alloc+free | over the floor | ÷ untraced "
               "(wall) | ÷ floor (time added) | records/s consumed |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for v, what in rows:
        ns = h.ns_per(v)
        if ns is None:
            continue
        eps = h.events_per_s(v)
        out.append(f"| {what} | {fmt(ns)} | {'—' if v == 'floor' else fmt(ns - empty, 0, ' ns')} "
                   f"| {fmt(ratio(h.wall(v), h.base), 2, '×')} | {fmt(ratio(ns, empty), 2, '×')} "
                   f"| {fmt(eps) if eps else '—'} |")


def cost_table(out, runs):
    h = Heap(runs, "cost", "micro_500k")
    if not h.rows("floor_stack"):
        return
    out.append(f"The microbenchmark with {fmt(h.allocs)} malloc+free pairs; the floor with one "
               "piece of bpftrace-prof's per-event work at a time (bench/floor.bpf.c), or "
               "another way to attach the probes.")
    out.append("")
    cost_rows(out, h, COST_ROWS)
    a = Heap(runs, "cost", "aligned_100k", allocs=ALIGNED_ALLOCS)
    if a.base is None or not a.rows("floor"):
        return
    out.append("")
    out.append(f"{fmt(ALIGNED_ALLOCS)} posix_memalign+free pairs: glibc's posix_memalign "
               "begins with a `cmpb` the kernel single-steps, 7 bytes before an instruction it "
               "emulates.")
    out.append("")
    cost_rows(out, a, ALIGNED_ROWS)


def sample_table(out, runs, funcs_path, meta):
    h = Heap(runs, "sample", "mixed_1m")
    if h.base is None:
        return
    n, nf = int(meta.get("sample_n", 0)), int(meta.get("sample_n_fine", 0))
    names = {"untraced": "untraced", "ours": "exact (`--sample-bytes 0`)",
             "sampled": f"`--sample-bytes {n}`", "sampled_fine": f"`--sample-bytes {nf}`"}
    out.append("| mode | median wall (s) | ns added per allocation | ring-buffer records | "
               "consumer CPU (s) | consumer wake-ups | peak RSS (MiB) |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for v in ["untraced", "ours", "sampled", "sampled_fine"]:
        rs = h.rows(v)
        if not rs:
            continue
        out.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            names[v], fmt(h.wall(v), 3), "—" if v == "untraced" else fmt(h.ns_per(v)),
            "—" if v == "untraced" else fmt(med(col(rs, "events"))),
            "—" if v == "untraced" else fmt(med(col(rs, "cpu_s")), 2),
            "—" if v == "untraced" else fmt(med(col(rs, "vctx"))),
            "—" if v == "untraced" else fmt(med(col(rs, "rss_kb")) / 1024, 1)))
    exact, sampled = h.rows("ours"), h.rows("sampled")
    if exact and sampled:
        d_cpu = med(col(exact, "cpu_s")) - med(col(sampled, "cpu_s"))
        d_rec = med(col(exact, "events")) - med(col(sampled, "events"))
        d_ctx = med(col(exact, "vctx")) - med(col(sampled, "vctx"))
        if d_rec > 0:
            out.append("")
            out.append(f"Consumer, from the difference exact − `--sample-bytes {n}`: "
                       f"{d_cpu / d_rec * 1e9:,.0f} ns of CPU per ring-buffer record "
                       f"(read + aggregate), one wake-up per {d_rec / max(d_ctx, 1):,.0f} "
                       "records.")
    if not os.path.exists(funcs_path):
        return
    vals = {}
    with open(funcs_path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) == 5 and num(p[4]) is not None:
                vals[(p[0], p[1], p[2], p[3])] = num(p[4])
    rounds = sorted({k[1] for k in vals})
    funcs = ["TOTAL", "small_objs", "medium_objs", "large_objs", "huge_objs"]
    label = {"TOTAL": "total", "small_objs": "small_objs 48 B", "medium_objs": "medium_objs 1000 B",
             "large_objs": "large_objs 16 KiB", "huge_objs": "huge_objs 256 KiB"}
    out.append("")
    out.append("Accuracy against the exact run of the same round: median |error| (worst) over "
               "the rounds, per function (1 in 8 blocks kept, so in-use is about 1/8 of "
               "allocated).")
    out.append("")
    out.append("| rate | value | " + " | ".join(label[f] for f in funcs) + " |")
    out.append("|---|---|" + "---:|" * len(funcs))
    for v in ["sampled", "sampled_fine"]:
        for idx in ["alloc_objects", "alloc_space", "inuse_space"]:
            cells = []
            for fn in funcs:
                errs = []
                for r in rounds:
                    exact, est = vals.get(("ours", r, idx, fn)), vals.get((v, r, idx, fn))
                    if exact and est is not None:
                        errs.append(abs(est - exact) / exact * 100)
                cells.append(f"{med(errs):.1f}% ({max(errs):.1f}%)" if errs else "—")
            out.append(f"| {names[v]} | {idx} | " + " | ".join(cells) + " |")


def cpu_table(out, runs):
    base = med(col(runs.get(("cpu", "cpu_spin", "untraced"), []), "wall_s"))
    if base is None:
        return
    out.append("| mode | median wall (s) | fastest – slowest run (s) | slowdown | overhead | "
               "samples taken | profiler CPU (s) |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for v, name in [("untraced", "untraced"), ("cpu99", "`--cpu=99`"), ("cpu999", "`--cpu=999`")]:
        rs = runs.get(("cpu", "cpu_spin", v), [])
        if not rs:
            continue
        w = med(col(rs, "wall_s"))
        walls = [x for x in col(rs, "wall_s") if x is not None]
        out.append("| {} | {} | {} – {} | {} | {} | {} | {} |".format(
            name, fmt(w, 3), fmt(min(walls), 3), fmt(max(walls), 3), fmt(w / base, 3, "×"),
            "—" if v == "untraced" else fmt((w / base - 1) * 100, 1, "%"),
            "—" if v == "untraced" else fmt(med(col(rs, "allocs"))),
            "—" if v == "untraced" else fmt(med(col(rs, "cpu_s")), 2)))


def main():
    meta = dict(line.rstrip("\n").split("=", 1) for line in open(sys.argv[1]) if "=" in line)
    runs = load_runs(sys.argv[2])
    out = ["# bpftrace-prof benchmarks (`make bench`)", ""]
    out.append(f"{meta['date']} · bpftrace-prof {meta.get('rev', '?')} · kernel {meta['kernel']} · {meta['cpu']} × {meta['nproc']} · "
               f"{meta['mem']} · {meta['os']} · glibc {meta['glibc']} · bpftrace {meta['bpftrace']}"
               f" · bcc {meta['bcc']} · {meta['rounds']} rounds, runs alternated · "
               f"load average {meta['load_start']} at start, {meta['load_end']} at end · "
               f"{meta['minutes']} min")
    out.append("")
    body = []
    tables_table(body, sys.argv[4] if len(sys.argv) > 4 else None)
    if body:
        out += ["## Unwind tables: size and build time", ""] + body + [""]
    with open(sys.argv[2]) as f:
        all_rows = list(csv.DictReader(f, delimiter="\t"))
    failed = sum(1 for r in all_rows if r["ok"] != "1")
    foreign = [f"{r['workload']}/{r['variant']}#{r['round']}" for r in all_rows
               if (num(r["foreign"]) or 0) > 0]
    probes = {(r["workload"], r["variant"]): r["probes"] for r in all_rows
              if r["probes"] and r["variant"] in OURS + ["floor"]}
    notes = []
    if failed:
        notes.append(f"{failed} runs failed and are left out (see latest-runs.tsv).")
    if foreign:
        notes.append(f"{len(foreign)} runs started while uprobes of other processes were "
                     "attached (another profiler on this machine), so their times may be "
                     "inflated: " + ", ".join(foreign[:12]) + (" …" if len(foreign) > 12 else "") + ".")
    if meta.get("memleak_why"):
        notes.append(f"memleak-bpfcc: not measured: {meta['memleak_why']}.")
    for wl, _ in WORKLOADS:
        b = probes.get((wl, "floor"))
        for v in OURS:
            a = probes.get((wl, v))
            if a and b and a != b:
                notes.append(f"{wl}: bpftrace-prof ({UNWIND_NAMES[v]}) probed {a} functions, "
                             f"the floor {b}: the floor is not the same probe set.")
    sections = [("Heap tracing overhead", heap_table), ("Where the cost per event goes",
                                                        cost_table)]
    for title, fn in sections:
        body = []
        fn(body, runs)
        if body:
            out += [f"## {title}", ""] + body + [""]
    body = []
    sample_table(body, runs, sys.argv[3], meta)
    if body:
        out += ["## `--sample-bytes` on 1,000,000 allocations (1.35 GB) of four sizes", ""] + body + [""]
    body = []
    cpu_table(body, runs)
    if body:
        out += ["## `--cpu` sampling overhead (CPU-bound, single thread)", ""] + body + [""]
    body = []
    depth_table(body, runs, meta)
    if body:
        out += ["## Stack walk cost per frame: .eh_frame unwinder against frame pointers", ""] + \
            body + [""]
    if meta.get("pprof_write"):
        out += ["## Writing a profile", "", f"`{meta['pprof_write']}`", ""]
    if notes:
        out += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    out += ["Wall time: from opening the workload's gate to its exit (the tools attach to the "
            "waiting process first; start-up and report time are not counted). Slowdown: "
            "÷ untraced. ns added per malloc+free: (wall − untraced wall) ÷ allocations "
            "(bpftrace-prof's exact count). Events: ring-buffer records (allocations + frees) "
            "÷ wall. Peak RSS, tool CPU (user + system) and wake-ups (voluntary context "
            "switches): /usr/bin/time -v of the tool."]
    print("\n".join(out))


if __name__ == "__main__":
    main()
