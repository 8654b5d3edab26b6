# Shared helpers of the end-to-end tests (sourced).
# Variables set here (TARGETS, BPF_WHY, TARGET_PID, …) are read by the files this is sourced into.
# shellcheck disable=SC2034
PROF=${PROF:-./bpftrace-prof}
# go tool pprof wants a home for its caches (CI may run without HOME)
export HOME=${HOME:-/root}
# Debug files come from the servers tests start (test_names.sh), never from the caller's.
unset DEBUGINFOD_URLS DEBUGINFOD_CACHE_PATH
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

# Exactly one line of FILE matches REGEX (grep -E).  When not, the lines go to the log and the
# FAIL line says where the first two differ: a CI log's tail then shows why.
expect_one_line() { # WHAT REGEX FILE
	local n
	n=$(grep -cE -- "$2" "$3")
	if [ "$n" = 1 ]; then
		echo "ok: $1 = 1 line"
		return
	fi
	grep -E -- "$2" "$3" | head -5 | sed 's/^/  line: /'
	fail "$1: expected 1 line, got $n; the first two differ at: $(grep -E -- "$2" "$3" | head -2 |
		awk '{ n = split($0, w, /[ ;|]/) } NR == 1 { for (i = 1; i <= n; i++) a[i] = w[i]; m = n }
			NR == 2 { for (i = 1; i <= (n > m ? n : m); i++) if (a[i] != w[i]) { print "[" a[i] "] vs [" w[i] "]"; exit } }')"
}

# expect_range WHAT LO HI ACTUAL
expect_range() {
	awk -v lo="$2" -v hi="$3" -v v="$4" 'BEGIN { exit !(v >= lo && v <= hi) }' ||
		fail "$1: expected within [$2, $3], got '$4'"
	echo "ok: $1 = $4 in [$2, $3]"
}


# Flat value of FUNC for sample index INDEX, as go tool pprof computes it (exact integer).
# "|stack" per sample as pprof_traces, without labels, and with an inlined frame's " (inline)":
# a function inlined at its caller's call site (glibc's rtld inlines a calloc wrapper) is told
# from the allocator itself.
pprof_traces_inline() { # FILE
	go tool pprof -symbolize=none -traces "$1" 2>/dev/null | awk '
		/^-----------/ { if (stack != "") print "|" stack; stack = ""; next }
		/^ *(comm|process|pid|tid):/ { next }
		/^ *[0-9.]+[a-zA-Z]* +[^ ]/ && stack == "" { $1 = ""; sub(/^ +/, ""); stack = $0; next }
		/^ +[^ ]/ && stack != "" { sub(/^ +/, ""); stack = stack ";" $0; next }
		END { if (stack != "") print "|" stack }'
}

pprof_flat() { # FILE INDEX FUNC
	pprof_flat_all "$1" "$2" | awk -v fn="$3" '$1 == fn { print $2; found = 1; exit }
		END { if (!found) print 0 }'
}

# "FUNC VALUE" per function of FILE: its flat value of sample type INDEX (bytes without the B).
pprof_flat_all() { # FILE INDEX
	go tool pprof -symbolize=none -top -nodefraction=0 -nodecount=100000 -unit=B \
		-sample_index="$2" "$1" 2>/dev/null |
		awk 'NF >= 6 && $1 ~ /^-?[0-9]/ { v = $1; sub(/B$/, "", v); print $6, v }'
}

# "INDEX FUNC VALUE" for every function of each FILE, its flat values summed over the files
# (pprof_flat's figures, two pprof passes a file rather than one a function).
pprof_flat_sums() { # INDEX1,INDEX2,... FILE...
	local idx f
	for f in "${@:2}"; do
		for idx in ${1//,/ }; do
			pprof_flat_all "$f" "$idx" | sed "s/^/$idx /"
		done
	done | awk '{ s[$1 " " $2] += $3 } END { for (k in s) print k, s[k] }'
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

# `go tool pprof -traces` as one line per sample: "VALUE LABELS |leaf;caller;…", VALUE the
# sample's value of INDEX, exact (-unit=B prints bytes unscaled), frame names whole.
pprof_stacks() { # FILE INDEX
	go tool pprof -symbolize=none -traces -unit=B -sample_index="$2" "$1" 2>/dev/null | awk '
		function flush() {
			if (stack != "") print value " " labels "|" stack
			labels = ""; stack = ""; value = ""
		}
		/^-----------/ { flush(); next }
		/^ *(comm|process|pid|tid):/ && stack == "" {
			k = $1; sub(/:$/, "", k); $1 = ""; sub(/^ +/, ""); labels = labels k "=" $0 " "; next
		}
		labels != "" && stack == "" && /^ *[0-9][0-9.]*[a-zA-Z]* +[^ ]/ {
			value = $1; sub(/[a-zA-Z]+$/, "", value)
			f = $0; sub(/^ *[^ ]+ +/, "", f); stack = f; next
		}
		stack != "" && /^ +[^ ]/ { f = $0; sub(/^ +/, "", f); stack = stack ";" f; next }
		END { flush() }'
}

# Sum of the values of a pprof_stacks file's lines (that match an extended regex).
sum_all() { # STACKS
	awk '{ s += $1 } END { printf "%.0f\n", s }' "$1"
}
sum_matching() { # STACKS ERE
	grep -E -- "$2" "$1" | awk '{ s += $1 } END { printf "%.0f\n", s }'
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
	wait_for_line "$log" "^bpftrace-prof: profiling " 20 || { cat "$log"; fail "profiler did not start"; }
}

# After start_waiting_target (its OUTFILE $E2E_TMP/target.out) and start_profiler: let the
# target go, wait for its DONE, stop the profiler (SIGINT, exit status 0), let the target exit.
finish_waiting_run() {
	echo go >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "target did not finish"
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $? after SIGINT"
	echo bye >&"$TARGET_IN"
	wait "$TARGET_PID"
}

# Counters of lost data an exact count depends on: each must be 0 before exact numbers are
# trusted (a dropped event makes any exact assertion meaningless).
DROP_COUNTERS=${DROP_COUNTERS:-"ringbuf_full pending_full pending_missing stack_fail
	sampled_full heap_read_fail targets_full bad_records stacks_capped"}

# expect_no_drops FILE: from a pprof profile's counter comments (only non-zero counters are
# written; "no drops" when no loss counter is).
expect_no_drops() {
	# Not a pipe: fail must end the test, not a subshell.
	expect_no_drops_raw "$1" "$DROP_COUNTERS" < <(go tool pprof -symbolize=none -raw "$1" 2>/dev/null)
}

# The same from `go tool pprof -raw` output on stdin (a test that reads it anyway), for the
# counters named in COUNTERS.
expect_no_drops_raw() { # FILE COUNTERS
	local raw c
	raw=$(grep '^Comment: ')
	grep -q '^Comment: bpftrace-prof ' <<<"$raw" || fail "no comments of ours in $1"
	for c in $2; do
		! grep -q "^Comment: $c=" <<<"$raw" ||
			fail "drop counter $c is not 0 ($(grep "^Comment: $c=" <<<"$raw")): exact numbers cannot be trusted"
	done
	echo "ok: no drops in $1"
}

# first_mapping FILE: the file of the profile's Mapping 1 (the main executable, by convention).
first_mapping() {
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null |
		awk '/^Mappings/ { m = 1; next } m && /^1: / { print $3; exit }'
}

# pprof_counter_value FILE NAME: a counter (or statistic) from the comments, 0 when absent
# (zeros are not written).
pprof_counter_value() {
	local v
	v=$(go tool pprof -symbolize=none -raw "$1" 2>/dev/null | sed -n "s/^Comment: $2=\([0-9]*\) .*/\1/p")
	echo "${v:-0}"
}

# expect_py_reads FILE [WHO]: Python frames were read (py_frames > 0) and at most 1 in 1000 of
# them failed (py_read_fail).  Interpreters are sampled from their first instructions, and a read
# in BPF (an NMI, a uprobe, the scheduler) cannot fault in a page the interpreter has not
# touched yet (a frame chunk just mapped): counted, the native frame kept.  Seen a few times in
# thousands of frames (3 in one CPython 3.12 run on a cold page cache); more is a walker bug.
expect_py_reads() {
	local frames fails
	frames=$(pprof_counter_value "$1" py_frames)
	fails=$(pprof_counter_value "$1" py_read_fail)
	[ "$frames" -gt 0 ] || fail "${2:+$2: }py_frames is 0 in $1"
	expect_range "${2:+$2: }py_read_fail ($fails) per 1000 py_frames ($frames)" 0 1 \
		"$(awk -v a="$fails" -v b="$frames" 'BEGIN { print 1000 * a / b }')"
}

# expect_no_drops_text FILE: from a text report's drop lines (only non-zero ones are printed).
expect_no_drops_text() {
	local c
	grep -Eq '^(drops:|no drops)$' "$1" || fail "no drops section in $1"
	for c in $DROP_COUNTERS; do
		! grep -Eq "^ +$c: " "$1" ||
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

# The exact numbers of tests/targets/heap_target.cc (a full run of it).
# The exact allocation table of heap_target (see its header comment).
check_heap_numbers() { # FILE
	local f=$1
	expect_no_drops "$f"
	expect_eq "leak_pages alloc_objects" 1000 "$(pprof_flat "$f" alloc_objects leak_pages)"
	expect_eq "leak_pages alloc_space" 4096000 "$(pprof_flat "$f" alloc_space leak_pages)"
	expect_eq "leak_pages inuse_objects" 1000 "$(pprof_flat "$f" inuse_objects leak_pages)"
	expect_eq "leak_pages inuse_space" 4096000 "$(pprof_flat "$f" inuse_space leak_pages)"
	expect_eq "churn_small alloc_objects" 400000 "$(pprof_flat "$f" alloc_objects churn_small)"
	expect_eq "churn_small alloc_space" 25600000 "$(pprof_flat "$f" alloc_space churn_small)"
	expect_eq "churn_small inuse_objects" 0 "$(pprof_flat "$f" inuse_objects churn_small)"
	expect_eq "churn_small inuse_space" 0 "$(pprof_flat "$f" inuse_space churn_small)"
	expect_eq "calloc_kept alloc_objects" 50 "$(pprof_flat "$f" alloc_objects calloc_kept)"
	expect_eq "calloc_kept inuse_space" 50000 "$(pprof_flat "$f" inuse_space calloc_kept)"
	expect_eq "realloc_chain alloc_objects" 4 "$(pprof_flat "$f" alloc_objects realloc_chain)"
	expect_eq "realloc_chain alloc_space" 1500 "$(pprof_flat "$f" alloc_space realloc_chain)"
	expect_eq "realloc_chain inuse_objects" 1 "$(pprof_flat "$f" inuse_objects realloc_chain)"
	expect_eq "realloc_chain inuse_space" 800 "$(pprof_flat "$f" inuse_space realloc_chain)"
	expect_eq "memalign_kept alloc_objects" 20 "$(pprof_flat "$f" alloc_objects memalign_kept)"
	expect_eq "memalign_kept inuse_space" 15360 "$(pprof_flat "$f" inuse_space memalign_kept)"
	expect_eq "cxx_new_kept alloc_objects" 50 "$(pprof_flat "$f" alloc_objects cxx_new_kept)"
	expect_eq "cxx_new_kept alloc_space" 49000 "$(pprof_flat "$f" alloc_space cxx_new_kept)"
	expect_eq "cxx_new_kept inuse_objects" 20 "$(pprof_flat "$f" inuse_objects cxx_new_kept)"
	expect_eq "cxx_new_kept inuse_space" 40000 "$(pprof_flat "$f" inuse_space cxx_new_kept)"
	# Flat == total above already means each function is the leaf: the immediate caller of the
	# allocator is on every stack.  Also check no allocator or operator new frame sits on top.
	expect_eq "operator new frames" 0 "$(pprof_flat "$f" alloc_objects 'operator')"
	pprof_traces_inline "$f" >"$f.traces"
	local bad
	bad=$(grep -E '\|(malloc|calloc|realloc|posix_memalign|aligned_alloc|operator[^;]*)(;|$)' "$f.traces" | head -1)
	[ -z "$bad" ] || fail "allocator frame as leaf: $bad"
	# main is the caller of every named function (frame pointers kept in the target)
	expect_one_line "leak_pages caller" '\|leak_pages;main;' "$f.traces"
}

# time_nanos and duration_nanos of a pprof file (profile.proto fields 9 and 10), read by a few
# lines of Python from the wire format: go tool pprof prints the duration to 10 ms only.
pprof_span() { # FILE
	python3 - "$1" <<'PY'
import gzip, sys
b = gzip.open(sys.argv[1]).read()
i, out = 0, {}
def varint():
    global i
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v
while i < len(b):
    key = varint(); f, w = key >> 3, key & 7
    if w == 0:
        v = varint()
        if f in (9, 10):
            out[f] = v
    elif w == 2:
        n = varint(); i += n
    elif w == 1:
        i += 8
    elif w == 5:
        i += 4
    else:
        sys.exit("bad wire type %d" % w)
print(out.get(9, 0), out.get(10, 0))
PY
}

# A fresh cgroup v2 directory (removed at exit once empty).
make_cgroup() {
	local root dir
	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] || fail "no cgroup2 mount in /proc/mounts"
	dir=$root/bpftrace-prof-e2e.$$.$RANDOM
	mkdir "$dir" || fail "cannot create cgroup $dir"
	echo "$dir"
}

# in_cgroup DIR CMD…: run CMD inside DIR (the shell moves itself, then execs).
in_cgroup() {
	local dir=$1
	shift
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$dir" "$@"
}

# bg_in_cgroup DIR CMD…: the same in the background, $! being CMD's pid.
bg_in_cgroup() {
	(exec sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$@") &
}
