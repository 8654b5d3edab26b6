#!/bin/bash
# `make bench`, section names (also alone: sudo bench/names_bench.sh): how readable the stacks of
# a real program with big native libraries are — Debian's python3-torch: `import torch` and a CPU
# training loop (bench/torch_train.py), each run under `--cpu`, `--heap` (exact) and
# `--heap --sample-bytes 524288`, started by the profiler (`-- CMD`).
#
# For each run, from its pprof file (go tool pprof -raw): the samples (cpu) or allocations
# (heap: alloc_objects), the frames of their stacks (weighted by that value), the share of those
# frames with no name (`file+0xOFFSET`: no symbol covers them; `[unknown] 0x…`: outside every
# file), the share of Python frames, the deepest stack, and the stacks cut at the frame limit
# (the unwind_depth counter) and unwind tables not built (unwind_table_build_failed); the wall
# time of the run.  Names come from each file's symbols, local debug files, MiniDebugInfo and
# .dynsym (no debuginfod server is reachable here: DEBUGINFOD_URLS is unset).
#
# Environment: BENCH_ONLY (this section runs when unset or when it lists "names"),
# NAMES_BENCH_STEPS (training steps, default 20), NAMES_BENCH_PYTHON (/usr/bin/python3).
# Writes bench/results/names.md, prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BENCH_ONLY:-}" ] && [[ ",$BENCH_ONLY," != *",names,"* ]]; then
	exit 0
fi
NAME=names_bench
STEPS=${NAMES_BENCH_STEPS:-20}
PY=${NAMES_BENCH_PYTHON:-/usr/bin/python3}
PROF=./bpftrace-prof
TMP=$(mktemp -d /tmp/names-bench.XXXXXX)
OUT=bench/results/names.md
trap 'rm -rf "$TMP"' EXIT
unset DEBUGINFOD_URLS
. bench/lib.sh

[ -x "$PROF" ] || die "build first (make)"
"$PY" -c 'import torch' 2>/dev/null || die "$PY cannot import torch (apt-get install python3-torch)"

# stats FILE INDEX: "value frames unnamed% python% deepest cut failed" of a pprof file.
stats() {
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | python3 -c '
import re, sys
idx = int(sys.argv[1])
names, samples, comments, sec = {}, [], {}, None
for line in sys.stdin:
    s = line.rstrip("\n")
    if s in ("Samples:", "Locations", "Mappings"):
        sec = s
        continue
    if s.startswith("Comment: "):
        m = re.match(r"Comment: (\w+)=(\d+)", s)
        if m:
            comments[m.group(1)] = int(m.group(2))
        continue
    if sec == "Samples:":
        m = re.match(r"^\s+([\d\s]+):((?:\s+\d+)*)\s*$", s)
        if m:
            vals = m.group(1).split()
            samples.append((int(vals[idx]), [int(x) for x in m.group(2).split()]))
    elif sec == "Locations":
        m = re.match(r"^\s+(\d+): (?:0x[0-9a-f]+ )?(?:M=\d+ )?(\S+)", s)
        if m:
            names[int(m.group(1))] = (m.group(2), bool(re.search(r"\.py:\d+ ", s + " ")))
unnamed = re.compile(r"(\+0x[0-9a-f]+$)|(^\[unknown\])")
total = frames = anon = py = deepest = 0
for v, locs in samples:
    total += v
    frames += v * len(locs)
    deepest = max(deepest, len(locs))
    for l in locs:
        n, is_py = names.get(l, ("[unknown]", False))
        if unnamed.search(n):
            anon += v
        if is_py:
            py += v
print(total, frames, "%.1f" % (100.0 * anon / frames if frames else 0),
      "%.1f" % (100.0 * py / frames if frames else 0), deepest,
      comments.get("unwind_depth", 0), comments.get("unwind_table_build_failed", 0))
' "$2"
}

# One run: WORKLOAD LABEL OPTIONS... -- CMD...; a row of the table.
run() {
	local wl=$1 label=$2 opts=() f t0 t1 st idx
	shift 2
	while [ "$1" != -- ]; do opts+=("$1") && shift; done
	shift
	f=$TMP/$wl.${label//[^a-z0-9]/_}.pb.gz
	t0=$(date +%s.%N)
	"$PROF" -q "${opts[@]}" -o "$f" -- "$@" >/dev/null 2>"$f.err" </dev/null
	st=$?
	t1=$(date +%s.%N)
	[ "$st" -eq 0 ] || die "$wl $label: exit status $st: $(tail -3 "$f.err")"
	idx=0 # samples (cpu), alloc_objects (heap)
	read -r v fr un pyp deep cut failed < <(stats "$f" "$idx")
	printf '| %s | %s | %s | %s | %s %% | %s %% | %s | %s | %s | %.1f |\n' "$wl" "$label" \
		"$v" "$fr" "$un" "$pyp" "$deep" "$cut" "$failed" "$(echo "$t1 - $t0" | bc)"
	say "$wl $label: done"
}

{
	echo "# Names and stacks of PyTorch (bench/names_bench.sh)"
	echo
	echo "$(date -u +%F), kernel $(uname -r), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), python3-torch $(dpkg-query -W -f '${Version}' python3-torch 2>/dev/null), $($PY --version 2>&1)."
	echo "Value: samples (cpu) or allocations (heap, alloc_objects); frames weighted by it;"
	echo "unnamed: \`file+0xOFFSET\` or \`[unknown]\`; cut: stacks cut at the frame limit"
	echo "(unwind_depth); no table: files whose unwind table was not built."
	echo
	echo "| workload | run | value | frames | unnamed | Python | deepest | cut | no table | wall, s |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for wl in import train; do
		if [ "$wl" = import ]; then
			cmd=("$PY" -c 'import torch')
		else
			cmd=("$PY" bench/torch_train.py "$STEPS")
		fi
		run "$wl" "--cpu=199" --cpu=199 -- "${cmd[@]}"
		run "$wl" "--heap" --heap -- "${cmd[@]}"
		run "$wl" "--heap --sample-bytes 524288" --heap --sample-bytes 524288 -- "${cmd[@]}"
	done
} >"$TMP/names.md" || exit 1
cp "$TMP/names.md" "$OUT"
cat "$OUT"
