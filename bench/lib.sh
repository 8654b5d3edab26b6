# Shared by the bench scripts that run a workload behind a gate and attach the profiler to it
# (bench/python_bench.sh, bench/calls_bench.sh, bench/heapcost_bench.sh; bench/run.sh takes
# die, say and gate_spawn).  The caller sets NAME (for messages), TMP (a
# scratch directory) and PROF, and traps EXIT to stop WPID and TOOL_PID.
# shellcheck shell=bash

die() {
	echo "$NAME: $*" >&2
	exit 1
}
say() { echo "$NAME: $*" >&2; }

# Start CMD ARGS… blocked on its gate (its stdin): it prints READY, then waits for a line; sets
# WPID, GATE (the fd that opens the gate) and WOUT (its output).
start_workload() { # CMD ARGS...
	local i
	WOUT=$TMP/workload.out
	gate_fork "$WOUT" "$@"
	for ((i = 0; i < 1500; i++)); do
		grep -q '^READY' "$WOUT" 2>/dev/null && return 0
		kill -0 "$WPID" 2>/dev/null || die "workload exited before its gate: $(cat "$TMP/workload.err")"
		sleep 0.01
	done
	die "workload never reached its gate"
}

# Start CMD ARGS… in the background with its stdin a gate (a FIFO whose write end is GATE),
# stdout to OUT, stderr to $TMP/workload.err; sets WPID and GATE.
gate_fork() { # OUT CMD ARGS...
	local out=$1 fifo=$TMP/gate
	shift
	rm -f "$fifo"
	mkfifo "$fifo" || die "mkfifo failed"
	"$@" <"$fifo" >"$out" 2>"$TMP/workload.err" &
	WPID=$!
	exec {GATE}>"$fifo"
	rm -f "$fifo"
}

# Is PID blocked in read(0, …) (on its gate)?
gate_blocked() { # PID
	[[ "$(cat /proc/"$1"/syscall 2>/dev/null)" == "0 0x0 "* ]]
}

# gate_fork, then wait until CMD blocks in read(0, …): its libraries are mapped and its work has
# not begun (for a workload that does not say READY: sqlite3 reads its script there).  WHAT
# names it in messages.
gate_spawn() { # WHAT OUT CMD ARGS...
	local what=$1 i
	shift
	gate_fork "$@"
	for ((i = 0; i < 6000; i++)); do
		gate_blocked "$WPID" && return 0
		kill -0 "$WPID" 2>/dev/null || die "$what exited before its gate: $(cat "$TMP/workload.err")"
		sleep 0.01
	done
	die "$what never reached its gate"
}

# Start CMD… in the background (stderr to LOG) and wait for a line matching READY_RE there:
# sets TOOL_PID.  What the tools below share.
start_bg_tool() { # LOG READY_RE WHAT CMD...
	local log=$1 ready=$2 what=$3 i
	shift 3
	"$@" >"$log.out" 2>"$log" {GATE}>&- &
	TOOL_PID=$!
	for ((i = 0; i < 6000; i++)); do
		grep -q "$ready" "$log" 2>/dev/null && return 0
		kill -0 "$TOOL_PID" 2>/dev/null || break
		sleep 0.01
	done
	cat "$log" >&2
	die "$what did not start"
}

# Attach the profiler (ARGS) to $WPID; sets TOOL_PID once it profiles.
start_tool() { # LOG ARGS...
	local log=$1
	shift
	start_bg_tool "$log" '^bpftrace-prof: profiling ' "the profiler" "$PROF" -v "$@" -p "$WPID"
}

stop_tool() {
	[ -n "${TOOL_PID:-}" ] || return 0
	wait "$TOOL_PID" || say "profiler exit status $?"
	TOOL_PID=""
}

# run_time_ns and run_cnt of program NAME among those process PID holds.
prog_stats() { # PID NAME
	local ids
	ids=$(sed -n 's/^prog_id:[[:space:]]*//p' /proc/"$1"/fdinfo/* 2>/dev/null | sort -u | paste -sd,)
	[ -n "$ids" ] || return 0
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
ids = {int(x) for x in sys.argv[1].split(",")}
for p in json.load(sys.stdin):
    if p["id"] in ids and p.get("name") == sys.argv[2]:
        print(p.get("run_time_ns", 0), p.get("run_cnt", 0))
        break' "$ids" "$2"
}

# A counter (or statistic) from a pprof profile's comments, 0 when absent.
# The profile's samples (its stacks), 0 when it holds none.
samples() { # FILE
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null |
		awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 } s && /^ +[0-9]+ +[0-9]+/ { n++ } END { print n + 0 }'
}

counter() { # FILE NAME
	local v
	v=$(go tool pprof -symbolize=none -raw "$1" 2>/dev/null | sed -n "s/^Comment: $2=\([0-9]*\) .*/\1/p")
	echo "${v:-0}"
}

# What the script started and still runs stops on exit, by pid; the statistics switch goes back.
bench_cleanup() {
	local p
	for p in ${TOOL_PID:-} ${WPID:-}; do
		kill -TERM "$p" 2>/dev/null
	done
	[ -n "${STATS_WAS:-}" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
	rm -rf "$TMP"
}

# Root, bpftool and a built profiler; then measure a copy of it taken now (others may rebuild
# the tree meanwhile): sets PROF to the copy and REV to the revision measured.
bench_prepare() {
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	[ "$(id -u)" -eq 0 ] || die "needs root for BPF"
	[ -x "$PROF" ] || die "$PROF is missing: make all"
	command -v bpftool >/dev/null || die "bpftool is needed for the BPF statistics"
	cp "$PROF" "$TMP/bpftrace-prof" || die "cannot copy $PROF"
	PROF=$TMP/bpftrace-prof
	# shellcheck disable=SC2034 # read by the script that sources this
	REV=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- user bpf include 2>/dev/null || echo "+local changes")
}
