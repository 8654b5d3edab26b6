# Shared helpers of the end-to-end tests (sourced).
# Variables set here (TARGETS, BPF_WHY, TARGET_PID, …) are read by the files this is sourced into.
# shellcheck disable=SC2034
PROF=${PROF:-./bpftrace-prof}
# go tool pprof wants a home for its caches (CI may run without HOME)
export HOME=${HOME:-/root}
TARGETS=build/targets
E2E_TMP=${E2E_TMP:-$(mktemp -d /tmp/bpftrace-prof-e2e.XXXXXX)}
export E2E_TMP

bpf_available() {
	if [ "$(id -u)" -ne 0 ]; then BPF_WHY="not root"; return 1; fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then BPF_WHY="no kernel BTF"; return 1; fi
	if ! bpftool prog list >/dev/null 2>&1; then BPF_WHY="bpftool prog list failed"; return 1; fi
	return 0
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: expected '$2', got '$3'"
	echo "ok: $1 = $3"
}

# expect_range WHAT LO HI ACTUAL
expect_range() {
	awk -v lo="$2" -v hi="$3" -v v="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
		fail "$1: expected within [$2, $3], got '$4'"
	echo "ok: $1 = $4 in [$2, $3]"
}


# Flat value of FUNC for sample index INDEX, as go tool pprof computes it (exact integer).
pprof_flat() { # FILE INDEX FUNC
	go tool pprof -symbolize=none -top -nodefraction=0 -nodecount=100000 -unit=B \
		-sample_index="$2" "$1" 2>/dev/null |
		awk -v fn="$3" '$6 == fn { v = $1; sub(/B$/, "", v); print v; found = 1; exit }
			END { if (!found) print 0 }'
}

# Cumulative value of FUNC (column 4 of -top).
pprof_cum() { # FILE INDEX FUNC
	go tool pprof -symbolize=none -top -nodefraction=0 -nodecount=100000 -unit=B \
		-sample_index="$2" "$1" 2>/dev/null |
		awk -v fn="$3" '$6 == fn { v = $4; sub(/B$/, "", v); print v; found = 1; exit }
			END { if (!found) print 0 }'
}

# `go tool pprof -traces` as one line per sample: "tid=T comm=C pid=P | leaf;caller;…".
pprof_traces() { # FILE
	go tool pprof -symbolize=none -traces "$1" 2>/dev/null | awk '
		/^-----------/ { if (stack != "") print labels "|" stack; labels = ""; stack = ""; next }
		/^ *(comm|process|pid|tid):/ { k = $1; sub(/:$/, "", k); $1 = ""; sub(/^ +/, ""); labels = labels k "=" $0 " "; next }
		/^ *[0-9.]+[a-zA-Z]* +[^ ]/ && labels != "" && stack == "" { stack = $2; next }
		/^ +[^ ]/ && stack != "" { stack = stack ";" $1; next }
		END { if (stack != "") print labels "|" stack }'
}

# Start a target that prints "READY pid" and then waits for a line on stdin.
# Sets TARGET_PID and TARGET_IN (a fd to write the go line to).
start_waiting_target() { # OUTFILE CMD...
	local out=$1
	shift
	local fifo="$E2E_TMP/fifo.$$.$RANDOM"
	mkfifo "$fifo"
	: >"$out"
	"$@" <"$fifo" >"$out" 2>&1 &
	TARGET_PID=$!
	exec {TARGET_IN}>"$fifo"
	rm -f "$fifo"
	wait_for_line "$out" READY 10 || fail "target $* never became ready"
}

# wait_for_line FILE PATTERN SECONDS
wait_for_line() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# Start the profiler in the background (args...), wait until it says it is profiling.
start_profiler() { # LOG ARGS...
	local log=$1
	shift
	: >"$log"
	"$PROF" -v "$@" >"$log.out" 2>"$log" &
	PROF_PID=$!
	wait_for_line "$log" "profiling; Ctrl-C to stop" 20 || { cat "$log"; fail "profiler did not start"; }
}

# Counters of lost data an exact count depends on: each must be 0 before exact numbers are
# trusted (a dropped event makes any exact assertion meaningless).
DROP_COUNTERS=${DROP_COUNTERS:-"ringbuf_full pending_full pending_missing stack_fail
	sampled_full sample_left_full heap_read_fail targets_full bad_records"}

# expect_no_drops FILE: from a pprof profile's counter comments.
expect_no_drops() {
	local raw c
	raw=$(go tool pprof -symbolize=none -raw "$1" 2>/dev/null | grep '^Comment: ')
	[ -n "$raw" ] || fail "no counter comments in $1"
	for c in $DROP_COUNTERS; do
		grep -q "^Comment: $c=0 " <<<"$raw" ||
			fail "drop counter $c is not 0 ($(grep "^Comment: $c=" <<<"$raw")): exact numbers cannot be trusted"
	done
	echo "ok: no drops in $1"
}

# expect_no_drops_text FILE: from a text report's counter lines.
expect_no_drops_text() {
	local c
	for c in $DROP_COUNTERS; do
		grep -Eq "^ +$c: 0 " "$1" ||
			fail "drop counter $c is not 0 ($(grep -E "^ +$c:" "$1")): exact numbers cannot be trusted"
	done
	echo "ok: no drops in $1"
}

# expect_no_drops_log LOG: from the -v summary of a run whose output carries no counters.
expect_no_drops_log() {
	grep -q 'dropped 0 (ringbuf_full 0)' "$1" ||
		fail "events were dropped ($(grep -o 'dropped [0-9]* (ringbuf_full [0-9]*)' "$1")): exact numbers cannot be trusted"
	echo "ok: no drops in $1"
}

# E2E_PROF_ARGS (e.g. "--unwind fp"): options put in front of the options of every profiler run,
# through tests/e2e/prof_args.sh, so no test's "$PROF …" line has to know about them.  PROF stays
# relative to the tree's root (test_pprof.sh runs "$OLDPWD/$PROF" from another directory).
prof_wrap() {
	[ -n "${E2E_PROF_ARGS:-}" ] || return 0
	[ -n "${E2E_PROF_BIN:-}" ] || E2E_PROF_BIN=$(realpath "$PROF") || fail "no profiler at $PROF"
	export E2E_PROF_BIN E2E_PROF_ARGS
	PROF=tests/e2e/prof_args.sh
}
prof_wrap
