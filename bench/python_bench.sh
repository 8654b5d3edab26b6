#!/bin/bash
# `make bench`, section python (also alone: sudo bench/python_bench.sh): what reading Python
# frames in BPF costs, on tests/targets/py_cpu.py (pure-Python loops) under each interpreter.
#
#  overhead  a fixed amount of work (PY_BENCH_WORK rounds of hot_a + hot_b) untraced and under
#            `bpftrace-prof --cpu=99 -p PID`, alternated (the order swapped every round),
#            PY_BENCH_ROUNDS of each; the medians and their ratio.  As in bench/run.sh the target
#            waits on its stdin (a gate) while the profiler attaches; the wall time runs from
#            opening the gate to the target's exit.
#  frames    py_cpu.py --depth D (D Python frames of recursion over main and <module>) at each
#            depth of PY_BENCH_DEPTHS (default 1 and 50), PY_BENCH_SECONDS each, under
#            `--cpu=PY_BENCH_HZ -p PID` with kernel.bpf_stats_enabled=1 (restored after): the
#            run_time_ns of our cpu_sample program (found by the prog_ids of the profiler's
#            fds, read while the target waits after its work) per sample of the target, and the
#            Python and native frames per sample, counted in the profile.  ns per Python frame
#            = the growth of ns per sample ÷ the growth of Python frames per sample between the
#            shallowest and the deepest depth, per round; the median is reported.  The other
#            CPU's (non-target) runs of the program are in both ns per sample alike and cancel.
#            On 3.10 and older each Python call also puts native frames between two Python
#            frames: the figure includes walking them (the table shows how many).
#
# Environment: BENCH_ONLY (this section runs when unset or when it lists "python"),
# PY_BENCH_PYTHONS (interpreters; default Debian's /usr/bin/python3.11 and pyenv's 3.10 and 3.13
# where installed), PY_BENCH_ROUNDS (5), PY_BENCH_WORK (800), PY_BENCH_HZ (999),
# PY_BENCH_SECONDS (3), PY_BENCH_DEPTHS ("1 50"), PY_BENCH_FRAME_ROUNDS (3).
# Writes bench/results/python.md (and every run: bench/results/python-runs.tsv), prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BENCH_ONLY:-}" ] && [[ ",$BENCH_ONLY," != *",python,"* ]]; then
	exit 0
fi
ROUNDS=${PY_BENCH_ROUNDS:-5}
WORK=${PY_BENCH_WORK:-800}
HZ=${PY_BENCH_HZ:-999}
SECONDS_EACH=${PY_BENCH_SECONDS:-3}
DEPTHS=${PY_BENCH_DEPTHS:-1 50}
FRAME_ROUNDS=${PY_BENCH_FRAME_ROUNDS:-3}
SCRIPT=$PWD/tests/targets/py_cpu.py
PROF=./bpftrace-prof
RES=bench/results
TMP=$(mktemp -d /tmp/bpftrace-prof-pybench.XXXXXX)
RUNS=$TMP/runs.tsv

NAME=python_bench
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_prepare
command -v go >/dev/null || die "go (golang-go) is needed to read the profiles"

# Interpreters: "NAME PATH" in PYS.
PYS=()
if [ -n "${PY_BENCH_PYTHONS:-}" ]; then
	for p in $PY_BENCH_PYTHONS; do
		[ -x "$p" ] || die "$p is not an executable"
		PYS+=("$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])') $p")
	done
else
	root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
	[ -x /usr/bin/python3.11 ] && PYS+=("debian-3.11 /usr/bin/python3.11")
	for m in 10 13; do
		found=""
		for p in "$root"/versions/3."$m".*/bin/python3."$m"; do [ -x "$p" ] && found=$p; done
		[ -n "$found" ] && PYS+=("pyenv-3.$m $found")
	done
fi
[ ${#PYS[@]} -gt 0 ] || die "no interpreter: set PY_BENCH_PYTHONS"

# "SAMPLES PYFRAMES NATIVEFRAMES" summed over the samples of a cpu profile (count-weighted);
# a Python frame is a location at address 0.
profile_frames() { # FILE
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { sec = "s"; getline; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { sec = "" }
		sec == "s" && /^ +[0-9]+ +[0-9]+: / { n++; c[n] = $1; i = index($0, ":"); l[n] = substr($0, i + 1); next }
		sec == "l" && $1 ~ /^[0-9]+:$/ { id = $1; sub(/:$/, "", id); py[id] = ($2 == "0x0"); nl[id] = 1; next }
		sec == "l" && /^ +[^ ]/ { nl[id]++ }
		END {
			for (s = 1; s <= n; s++) {
				k = split(l[s], ids, " ")
				for (j = 1; j <= k; j++) if (py[ids[j]]) p += c[s]; else q += c[s] * nl[ids[j]]
				t += c[s]
			}
			printf "%d %d %d\n", t, p, q
		}'
}

printf 'section\tpython\tvariant\tround\twall_s\tsamples\tpy_frames\tnative_frames\tprog_ns\tprog_cnt\tpy_read_fail\tok\n' >"$RUNS"

# overhead: one run of VARIANT (untraced | cpu99) under interpreter NAME PY.
run_overhead() { # NAME PY VARIANT ROUND
	local name=$1 py=$2 v=$3 r=$4 d=$TMP/o.$1.$3.$4 t0 t1 wall s=0 pf=0 nf=0 fail=0 ok=1
	mkdir -p "$d"
	start_workload "$py" "$SCRIPT" --wait --rounds "$WORK" 1e9
	[ "$v" = cpu99 ] && start_tool "$d/log" --cpu=99 -o "$d/out.pb.gz" --top 0
	t0=$EPOCHREALTIME
	printf 'g\n' >&"$GATE"
	exec {GATE}>&-
	wait "$WPID" || ok=0
	t1=$EPOCHREALTIME
	WPID=""
	stop_tool
	wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", b - a }')
	grep -q "^rounds $WORK\$" "$WOUT" || ok=0
	if [ "$v" = cpu99 ]; then
		read -r s pf nf < <(profile_frames "$d/out.pb.gz")
		fail=$(counter "$d/out.pb.gz" py_read_fail)
	fi
	printf 'overhead\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\t\t%s\t%s\n' "$name" "$v" "$r" "$wall" "$s" "$pf" "$nf" \
		"$fail" "$ok" >>"$RUNS"
	printf '  overhead %-12s %-9s round %s: %8.3f s%s\n' "$name" "$v" "$r" "$wall" "$([ $ok = 1 ] || echo "  (FAILED)")" >&2
	rm -rf "$d"
}

# frames: one run at DEPTH under interpreter NAME PY, at HZ, statistics on.
run_depth() { # NAME PY DEPTH ROUND
	local name=$1 py=$2 depth=$3 r=$4 d=$TMP/f.$1.$3.$4 i stats ns="" cnt="" s pf nf fail ok=1
	mkdir -p "$d"
	start_workload "$py" "$SCRIPT" --wait --depth "$depth" "$SECONDS_EACH"
	start_tool "$d/log" --cpu="$HZ" -o "$d/out.pb.gz" --top 0
	printf 'g\n' >&"$GATE"
	for ((i = 0; i < 30000; i++)); do # the work, then up to 5 min more
		grep -q '^done' "$WOUT" 2>/dev/null && break
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.01
	done
	stats=$(prog_stats "$TOOL_PID" cpu_sample)
	read -r ns cnt <<<"$stats"
	exec {GATE}>&-
	wait "$WPID" || ok=0
	WPID=""
	stop_tool
	read -r s pf nf < <(profile_frames "$d/out.pb.gz")
	fail=$(counter "$d/out.pb.gz" py_read_fail)
	[ "${cnt:-0}" -gt 0 ] || { say "no BPF statistics for $name depth $depth"; ok=0; }
	[ "$s" -gt 0 ] || ok=0
	printf 'frames\t%s\tdepth_%s\t%s\t\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$depth" "$r" "$s" "$pf" "$nf" \
		"${ns:-}" "${cnt:-}" "$fail" "$ok" >>"$RUNS"
	printf '  frames   %-12s depth %-3s round %s: %s samples, %s ns in cpu_sample\n' "$name" "$depth" "$r" \
		"$s" "${ns:-?}" >&2
	rm -rf "$d"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s)
say "interpreters: $(for e in "${PYS[@]}"; do printf '%s ' "${e%% *}"; done)"
for e in "${PYS[@]}"; do
	name=${e%% *} py=${e#* }
	for ((r = 1; r <= ROUNDS; r++)); do
		if [ $((r % 2)) = 1 ]; then
			run_overhead "$name" "$py" untraced "$r"
			run_overhead "$name" "$py" cpu99 "$r"
		else
			run_overhead "$name" "$py" cpu99 "$r"
			run_overhead "$name" "$py" untraced "$r"
		fi
	done
done
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || die "cannot read kernel.bpf_stats_enabled"
sysctl -qw kernel.bpf_stats_enabled=1 || die "cannot enable kernel.bpf_stats_enabled"
for e in "${PYS[@]}"; do
	name=${e%% *} py=${e#* }
	for ((r = 1; r <= FRAME_ROUNDS; r++)); do
		for depth in $DEPTHS; do
			run_depth "$name" "$py" "$depth" "$r"
		done
	done
done
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
STATS_WAS=""
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$RES"
{
	echo "# bpftrace-prof: Python frames (\`make bench\`, section python: \`bench/python_bench.sh\`)"
	echo
	printf '%s · bpftrace-prof %s · kernel %s · %s × %s · load average %s at start, %s at end · %s min\n' \
		"$(date -u '+%Y-%m-%d %H:%M UTC')" "$REV" "$(uname -r)" \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" "$(nproc)" \
		"$LOAD_START" "$LOAD_END" "$(( ($(date +%s) - START + 30) / 60 ))"
	echo
	python3 - "$RUNS" "$WORK" "$HZ" "$SECONDS_EACH" "$DEPTHS" <<'PY'
import csv, statistics, sys
runs, work, hz, secs, depths = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split()
rows = list(csv.DictReader(open(runs), delimiter="\t"))
names = []
for r in rows:
    if r["python"] not in names:
        names.append(r["python"])
def med(xs):
    return statistics.median(xs) if xs else float("nan")
print("## --cpu=99 overhead on a pure-Python CPU loop\n")
print("`tests/targets/py_cpu.py --rounds %s` (hot_a + hot_b, fixed work) untraced and under "
      "`bpftrace-prof --cpu=99 -p PID`, runs alternated; medians.\n" % work)
print("| interpreter | runs | untraced (s) | --cpu=99 (s) | ratio | samples | Python frames/sample | py_read_fail |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for n in names:
    o = [r for r in rows if r["section"] == "overhead" and r["python"] == n and r["ok"] == "1"]
    u = [float(r["wall_s"]) for r in o if r["variant"] == "untraced"]
    c = [r for r in o if r["variant"] == "cpu99"]
    cw = [float(r["wall_s"]) for r in c]
    s = med([int(r["samples"]) for r in c])
    fps = med([int(r["py_frames"]) / int(r["samples"]) for r in c if int(r["samples"]) > 0])
    fail = sum(int(r["py_read_fail"] or 0) for r in c)
    print("| %s | %d + %d | %.3f | %.3f | %.3f× | %.0f | %.1f | %d |" % (
        n, len(u), len(cw), med(u), med(cw), med(cw) / med(u) if u and cw else float("nan"), s, fps, fail))
lo, hi = "depth_" + depths[0], "depth_" + depths[-1]
print("\n## BPF time per Python frame walked\n")
print("`py_cpu.py --depth D` under `--cpu=%s -p PID` for %s s, `kernel.bpf_stats_enabled=1`: "
      "cpu_sample's run_time_ns per target sample, frames per sample from the profile; "
      "ns per Python frame = Δ(ns/sample) ÷ Δ(Python frames/sample) between depth %s and %s, "
      "median of the rounds.\n" % (hz, secs, depths[0], depths[-1]))
print("| interpreter | depth | rounds | samples | ns/sample | Python frames/sample | native frames/sample | py_read_fail |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
per = {}
for n in names:
    for d in depths:
        f = [r for r in rows if r["section"] == "frames" and r["python"] == n and r["variant"] == "depth_" + d and r["ok"] == "1"]
        if not f:
            continue
        nsps = [int(r["prog_ns"]) / int(r["samples"]) for r in f]
        pfs = [int(r["py_frames"]) / int(r["samples"]) for r in f]
        nfs = [int(r["native_frames"]) / int(r["samples"]) for r in f]
        print("| %s | %s | %d | %.0f | %.0f | %.1f | %.1f | %d |" % (
            n, d, len(f), med([int(r["samples"]) for r in f]), med(nsps), med(pfs), med(nfs),
            sum(int(r["py_read_fail"] or 0) for r in f)))
    a = {r["round"]: r for r in rows if r["section"] == "frames" and r["python"] == n and r["variant"] == lo and r["ok"] == "1"}
    b = {r["round"]: r for r in rows if r["section"] == "frames" and r["python"] == n and r["variant"] == hi and r["ok"] == "1"}
    xs = []
    for k in a:
        if k not in b:
            continue
        dn = int(b[k]["prog_ns"]) / int(b[k]["samples"]) - int(a[k]["prog_ns"]) / int(a[k]["samples"])
        dp = int(b[k]["py_frames"]) / int(b[k]["samples"]) - int(a[k]["py_frames"]) / int(a[k]["samples"])
        dq = int(b[k]["native_frames"]) / int(b[k]["samples"]) - int(a[k]["native_frames"]) / int(a[k]["samples"])
        if dp > 0:
            xs.append((dn / dp, dq / dp))
    if xs:
        per[n] = (med([x[0] for x in xs]), med([x[1] for x in xs]), len(xs))
print("\n| interpreter | ns per Python frame (median) | native frames walked per extra Python frame | rounds |")
print("|---|---:|---:|---:|")
for n in names:
    if n in per:
        print("| %s | **%.0f** | %.1f | %d |" % (n, per[n][0], round(per[n][1], 1) + 0.0, per[n][2]))
PY
} >"$TMP/python.md" || die "summarizing failed"
cp "$RUNS" "$RES/python-runs.tsv"
cp "$TMP/python.md" "$RES/python.md"
cat "$RES/python.md"
