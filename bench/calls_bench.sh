#!/bin/bash
# `make bench`, section calls (also alone: sudo bench/calls_bench.sh): what --calls costs.
#
#  per call   bench/php_calls.php: CALLS_BENCH_N calls of an empty PHP function (PHP 8 with
#             USE_ZEND_DTRACE=1 in both variants), timed by the script itself (hrtime), untraced
#             and under `bpftrace-prof --calls -p PID`, alternated (the order swapped every
#             round), CALLS_BENCH_ROUNDS of each; medians of ns per call and their difference.
#             Two events per call (entry, return).
#  BPF time   during the traced runs, with kernel.bpf_stats_enabled=1 (restored after):
#             run_time_ns / run_cnt of php_entry + php_return (ns per event) and of calls_switch,
#             the sched_switch program that keeps the threads' on-CPU clocks for busy/idle: it
#             runs at every context switch of the host while --calls runs (ns per switch).
#
# Environment: BENCH_ONLY (this section runs when unset or when it lists "calls"),
# CALLS_BENCH_ROUNDS (5), CALLS_BENCH_N (2000000).
# Writes bench/results/calls.md (and every run: bench/results/calls-runs.tsv), prints it.
set -u
cd "$(dirname "$0")/.." || exit 1

if [ -n "${BENCH_ONLY:-}" ] && [[ ",$BENCH_ONLY," != *",calls,"* ]]; then
	exit 0
fi
ROUNDS=${CALLS_BENCH_ROUNDS:-5}
N=${CALLS_BENCH_N:-2000000}
PROF=./bpftrace-prof
RES=bench/results
TMP=$(mktemp -d /tmp/bpftrace-prof-callsbench.XXXXXX)
RUNS=$TMP/runs.tsv
NAME=calls_bench
# shellcheck source=bench/lib.sh
. bench/lib.sh

bench_prepare
command -v php >/dev/null || die "php is needed (scripts/install-deps.sh test)"

printf 'variant\tround\tns_per_call\tprobe_ns\tprobe_cnt\tswitch_ns\tswitch_cnt\tcalls\tok\n' >"$RUNS"

# One run of VARIANT (untraced | calls).
run() { # VARIANT ROUND
	local v=$1 r=$2 d=$TMP/$1.$2 ns pe="" pc="" re="" rc="" se="" sc="" calls="" ok=1 i
	mkdir -p "$d"
	USE_ZEND_DTRACE=1 start_workload php bench/php_calls.php "$N"
	[ "$v" = calls ] && start_tool "$d/log" --calls -o "$d/out.pb.gz" --top 0
	printf 'g\n' >&"$GATE"
	for ((i = 0; i < 30000; i++)); do
		grep -q '^ns_per_call' "$WOUT" 2>/dev/null && break
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.01
	done
	if [ "$v" = calls ]; then
		read -r pe pc <<<"$(prog_stats "$TOOL_PID" php_entry)"
		read -r re rc <<<"$(prog_stats "$TOOL_PID" php_return)"
		read -r se sc <<<"$(prog_stats "$TOOL_PID" calls_switch)"
	fi
	exec {GATE}>&-
	wait "$WPID" || ok=0
	WPID=""
	stop_tool
	ns=$(sed -n 's/^ns_per_call //p' "$WOUT")
	[ -n "$ns" ] || ok=0
	if [ "$v" = calls ]; then
		calls=$(go tool pprof -symbolize=none -top -nodefraction=0 -sample_index=calls "$d/out.pb.gz" 2>/dev/null |
			awk '$NF == "nothing" { print $1 }')
		[ "$calls" = "$N" ] || { say "counted ${calls:-no} calls of $N"; ok=0; }
		if [ "${pc:-0}" -eq 0 ] || [ "${sc:-0}" -eq 0 ]; then
			say "no BPF statistics"
			ok=0
		fi
	fi
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$r" "${ns:-}" \
		"$(( ${pe:-0} + ${re:-0} ))" "$(( ${pc:-0} + ${rc:-0} ))" "${se:-}" "${sc:-}" "${calls:-}" "$ok" >>"$RUNS"
	printf '  calls %-9s round %s: %s ns per call%s\n' "$v" "$r" "${ns:-?}" "$([ $ok = 1 ] || echo "  (FAILED)")" >&2
	rm -rf "$d"
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
START=$(date +%s)
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled) || die "cannot read kernel.bpf_stats_enabled"
sysctl -qw kernel.bpf_stats_enabled=1 || die "cannot enable kernel.bpf_stats_enabled"
for ((r = 1; r <= ROUNDS; r++)); do
	if [ $((r % 2)) = 1 ]; then
		run untraced "$r"
		run calls "$r"
	else
		run calls "$r"
		run untraced "$r"
	fi
done
sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
STATS_WAS=""
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$RES"
{
	echo "# bpftrace-prof: --calls (\`make bench\`, section calls: \`bench/calls_bench.sh\`)"
	echo
	printf '%s · bpftrace-prof %s · kernel %s · %s × %s · PHP %s · load average %s at start, %s at end · %s min\n' \
		"$(date -u '+%Y-%m-%d %H:%M UTC')" "$REV" "$(uname -r)" \
		"$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" "$(nproc)" \
		"$(php -r 'echo PHP_VERSION;')" "$LOAD_START" "$LOAD_END" "$(( ($(date +%s) - START + 30) / 60 ))"
	echo
	python3 - "$RUNS" "$N" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]), delimiter="\t") if r["ok"] == "1"]
def med(xs):
    return statistics.median(xs) if xs else float("nan")
u = [float(r["ns_per_call"]) for r in rows if r["variant"] == "untraced"]
c = [r for r in rows if r["variant"] == "calls"]
cn = [float(r["ns_per_call"]) for r in c]
print("%s calls of an empty PHP function, `USE_ZEND_DTRACE=1`, timed by the script; untraced and "
      "under `bpftrace-prof --calls -p PID`, runs alternated; medians (runs: %d + %d).\n"
      % (sys.argv[2], len(u), len(cn)))
print("| | ns per call in the target |")
print("|---|---:|")
print("| untraced | %.0f |" % med(u))
print("| `--calls` | %.0f |" % med(cn))
print("| added by `--calls` (2 events) | **%.0f** |" % (med(cn) - med(u)))
pe = [int(r["probe_ns"]) / int(r["probe_cnt"]) for r in c if int(r["probe_cnt"] or 0)]
sw = [int(r["switch_ns"]) / int(r["switch_cnt"]) for r in c if int(r["switch_cnt"] or 0)]
swc = [int(r["switch_cnt"]) for r in c if int(r["switch_cnt"] or 0)]
print("\nBPF time (`kernel.bpf_stats_enabled=1`, medians of the traced runs):\n")
print("| program | ns per run | runs per traced run |")
print("|---|---:|---:|")
print("| php_entry + php_return (per event) | %.0f | %.0f |" % (med(pe), med([int(r["probe_cnt"]) for r in c])))
print("| calls_switch (per context switch of the host, busy/idle clocks) | %.0f | %.0f |" % (med(sw), med(swc)))
PY
} >"$TMP/calls.md" || die "summarizing failed"
cp "$RUNS" "$RES/calls-runs.tsv"
cp "$TMP/calls.md" "$RES/calls.md"
cat "$RES/calls.md"
