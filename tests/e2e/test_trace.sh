# -f chrome / -f perfetto: --calls recorded as event traces, read back by tests/e2e/trace_check.py
# (python's json for Trace Event JSON; a protobuf decoder written from perfetto's field numbers)
# and, for perfetto, `protoc --decode_raw`.  The PHP target's exact calls (tests/targets/calls.php):
# main once, Calc::alpha 100 times from main, Calc::beta 3 times per alpha, sleeper once.

TRACE_PHP=tests/targets/calls.php
TRACE_CHECK=tests/e2e/trace_check.py
# The second perfetto reader: python3-protobuf's, with classes protoc generates from
# tests/perfetto_subset.proto.  Debian's python (its python3-protobuf), whatever PATH says.
PERFETTO_CHECK="/usr/bin/python3 tests/e2e/perfetto_check.py"

perfetto_need() {
	trace_need protoc
	/usr/bin/python3 -c 'import google.protobuf' 2>/dev/null ||
		fail "python3-protobuf is not installed (scripts/install-deps.sh test)"
}

trace_need() {
	command -v "$1" >/dev/null || fail "$1 is not installed (scripts/install-deps.sh test)"
}

# The fact lines trace_check.py printed for KEY (e.g. "slices Calc::alpha"), value only.
fact() { # FACTS_FILE KEY
	awk -v k="$2" 'index($0, k " ") == 1 { v = substr($0, length(k) + 2) } END { print v }' "$1"
}

# The exact calls of calls.php, and nothing lost.
expect_php_calls() { # FACTS_FILE
	expect_eq "Calc::alpha slices" 100 "$(fact "$1" "slices Calc::alpha")"
	expect_eq "Calc::beta slices" 300 "$(fact "$1" "slices Calc::beta")"
	expect_eq "Calc::beta inside Calc::alpha" 300 "$(fact "$1" "nested Calc::alpha>Calc::beta")"
	expect_eq "Calc::alpha inside main" 100 "$(fact "$1" "nested main>Calc::alpha")"
	expect_eq "sleeper slices" 1 "$(fact "$1" "slices sleeper")"
	expect_eq "main slices" 1 "$(fact "$1" "slices main")"
	expect_eq "slices at depth 0" "top main 1" "$(grep '^top ' "$1")"
	expect_eq "ring buffer drops" 0 "$(fact "$1" "drop ringbuf_full")"
	expect_eq "unmatched returns" 0 "$(fact "$1" "drop trace_unmatched_returns")"
	expect_eq "unfinished slices" 0 "$(fact "$1" "drop trace_unfinished_frames")"
	expect_eq "unnamed" 0 "$(fact "$1" "drop trace_unnamed")"
	expect_eq "process name" php "$(awk '$1 == "process" { print $3 }' "$1")"
	expect_eq "thread name" php "$(awk '$1 == "thread" { print $4 }' "$1")"
	# One process, one thread, whose tid is the pid.
	expect_eq "threads" 1 "$(grep -c '^thread ' "$1")"
	awk '$1 == "thread" && $2 != $3 { exit 1 }' "$1" || fail "the PHP thread's tid is not its pid"
}

t_trace_chrome_php_exact() {
	trace_need php
	local f=$E2E_TMP/php.json facts=$E2E_TMP/php.facts
	USE_ZEND_DTRACE=1 "$PROF" --calls -f chrome -o "$f" -- php "$TRACE_PHP" \
		>"$E2E_TMP/php.out" 2>"$E2E_TMP/php.err" || fail "profiler exit status $?"
	cat "$E2E_TMP/php.err"
	expect_eq "script output" 5550 "$(head -1 "$E2E_TMP/php.out")"
	grep -q '^no drops$' "$E2E_TMP/php.err" || fail "no drop summary printed"
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	cat "$facts"
	expect_php_calls "$facts"
	expect_eq "file mode" 600 "$(stat -c %a "$f")"
	# The sleeper slice covers its usleep(200 ms): ts are microseconds.
	python3 - "$f" <<'PY' || fail "sleeper slice shorter than 200 ms"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
i = next(i for i, e in enumerate(ev) if e.get("name") == "sleeper")
end = next(e for e in ev[i + 1:] if e["ph"] == "E" and e["tid"] == ev[i]["tid"])
d = end["ts"] - ev[i]["ts"]
print("sleeper us", d)
sys.exit(0 if 200000 <= d < 2000000 else 1)
PY
}

t_trace_chrome_gzip() {
	trace_need php
	local f=$E2E_TMP/php.json.gz facts=$E2E_TMP/gz.facts
	USE_ZEND_DTRACE=1 "$PROF" --calls -f chrome -o "$f" -- php "$TRACE_PHP" >/dev/null ||
		fail "profiler exit status $?"
	gzip -t "$f" || fail "not a valid gzip file"
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	expect_php_calls "$facts"
}

t_trace_perfetto_php_exact() {
	trace_need php
	perfetto_need
	local f=$E2E_TMP/php.pftrace facts=$E2E_TMP/pf.facts raw=$E2E_TMP/pf.raw
	USE_ZEND_DTRACE=1 "$PROF" --calls -f perfetto -o "$f" -- php "$TRACE_PHP" \
		>"$E2E_TMP/php.out" 2>"$E2E_TMP/php.err" || fail "profiler exit status $?"
	cat "$E2E_TMP/php.err"
	protoc --decode_raw <"$f" >"$raw" 2>"$E2E_TMP/protoc.err" ||
		{ cat "$E2E_TMP/protoc.err"; fail "protoc --decode_raw could not parse the trace"; }
	# protoc's view agrees on the packet count and on the slice begin/end events.
	local packets begins ends
	packets=$(grep -c '^1 {' "$raw")
	begins=$(grep -c '^    9: 1$' "$raw")
	ends=$(grep -c '^    9: 2$' "$raw")
	expect_eq "begin events (protoc)" 402 "$begins"
	expect_eq "end events (protoc)" 402 "$ends"
	python3 "$TRACE_CHECK" perfetto "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	cat "$facts"
	expect_php_calls "$facts"
	[ "$packets" -gt 804 ] || fail "only $packets packets"
	echo "ok: $packets packets"
	# python3-protobuf's reading agrees: the same exact counts, all 402 slices on the one thread.
	$PERFETTO_CHECK "$f" >"$facts.pb" || { cat "$facts.pb"; fail "perfetto_check rejected the trace"; }
	expect_php_calls "$facts.pb"
	expect_eq "slices on the thread (protobuf)" 402 "$(awk '$1 == "thread_slices" { print $4 }' "$facts.pb")"
}

# perfetto_check.py is strict: a field outside tests/perfetto_subset.proto is an error.
t_trace_perfetto_check_rejects_unknown_fields() {
	perfetto_need
	local f=$E2E_TMP/u.pftrace
	"$PROF" --heap -f perfetto -o "$f" -- "$TARGETS/heap_trace" >/dev/null 2>&1 || fail "profiler exit status $?"
	$PERFETTO_CHECK "$f" >/dev/null || fail "perfetto_check rejected a good trace"
	# One more packet: {trusted_packet_sequence_id 1, field 31 = 0}.
	printf '\x0a\x05\x50\x01\xf8\x01\x00' >>"$f"
	local out
	out=$($PERFETTO_CHECK "$f") && fail "perfetto_check took an unknown field"
	echo "$out"
	grep -q 'fields the subset does not know' <<<"$out" || fail "not rejected for the unknown field"
}

t_trace_pid_midrun_nesting() {
	trace_need php
	local f=$E2E_TMP/mid.json facts=$E2E_TMP/mid.facts
	USE_ZEND_DTRACE=1 php "$TRACE_PHP" loop >"$E2E_TMP/mid.target" 2>&1 &
	local pid=$!
	wait_for_line "$E2E_TMP/mid.target" READY 10 || fail "target never became ready"
	sleep 0.3 # inside forever() when we attach: its return never comes, main's neither
	"$PROF" --calls -f chrome -p "$pid" -d 2 -o "$f" >"$E2E_TMP/mid.out" 2>"$E2E_TMP/mid.err"
	local rc=$?
	kill "$pid"
	wait "$pid" 2>/dev/null
	cat "$E2E_TMP/mid.err" "$E2E_TMP/mid.out"
	expect_eq "profiler exit status" 0 "$rc"
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	grep -v '^drop .* 0$' "$facts"
	local alpha beta
	alpha=$(fact "$facts" "slices Calc::alpha")
	expect_range "alpha slices in 2 s" 100 3000 "$alpha"
	expect_eq "functions entered before the attach" "" "$(grep -E '^slices (main|forever) ' "$facts")"
	# Every beta sits in an alpha, but those of an alpha entered before the attach (at most 2).
	beta=$(fact "$facts" "slices Calc::beta")
	expect_range "betas outside an alpha" 0 2 "$((beta - $(fact "$facts" "nested Calc::alpha>Calc::beta")))"
	# The returns of what was open at the attach were skipped and counted, the same in the
	# file and in the summary; an alpha cut by the end was closed there.
	local skipped
	skipped=$(fact "$facts" "drop trace_unmatched_returns")
	expect_range "unmatched returns (file)" 0 4 "$skipped"
	if [ "$skipped" -gt 0 ]; then
		grep -q "trace_unmatched_returns: $skipped " "$E2E_TMP/mid.err" ||
			fail "summary does not print the $skipped unmatched returns"
	fi
	expect_eq "ring buffer drops" 0 "$(fact "$facts" "drop ringbuf_full")"
}

t_trace_python311_instants() {
	[ -x /usr/bin/python3.11 ] || fail "/usr/bin/python3.11 missing (apt-get install python3.11)"
	local f=$E2E_TMP/py.pftrace facts=$E2E_TMP/py.facts
	"$PROF" --calls -f perfetto -o "$f" -- /usr/bin/python3.11 tests/targets/calls.py \
		>"$E2E_TMP/py.out" 2>"$E2E_TMP/py.err" || fail "profiler exit status $?"
	python3 "$TRACE_CHECK" perfetto "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	grep -v '^drop .* 0$' "$facts"
	# CPython 3.11 fires returns only: each call is an instant at its return, no slice.
	expect_eq "f instants" 1500 "$(fact "$facts" "instants f")"
	expect_eq "g instants" 1 "$(fact "$facts" "instants g")"
	expect_eq "slices" "" "$(grep '^slices ' "$facts")"
}

# chrome and perfetto record every mode, alone or together; codetracer --calls only.
t_trace_format_modes() {
	local out=$E2E_TMP/bad.err
	"$PROF" --heap -f codetracer -o "$E2E_TMP/x" -- /bin/true 2>"$out"
	expect_eq "--heap -f codetracer exit status" 2 "$?"
	expect_eq "one line" 1 "$(wc -l <"$out")"
	grep -q 'records --calls only' "$out" || fail "message does not say what -f codetracer records"
	"$PROF" --calls --cpu -f firefox -o "$E2E_TMP/x.json.gz" -- /bin/true 2>"$out"
	expect_eq "--calls --cpu -f firefox exit status" 2 "$?"
	expect_eq "one line" 1 "$(wc -l <"$out")"
	if [ -e "$E2E_TMP/x" ] || [ -e "$E2E_TMP/x.json.gz" ]; then fail "a file was written"; fi
	"$PROF" --heap --cpu --offcpu -f perfetto -o "$E2E_TMP/all.pftrace" -- /bin/true >/dev/null 2>"$out" ||
		{ cat "$out"; fail "--heap --cpu --offcpu -f perfetto exit status $?"; }
	python3 "$TRACE_CHECK" perfetto "$E2E_TMP/all.pftrace" >/dev/null || fail "--heap --cpu --offcpu -f perfetto: not a valid trace"
	"$PROF" --heap -f chrome -o "$E2E_TMP/h.json" -- /bin/true >/dev/null 2>"$out" ||
		{ cat "$out"; fail "--heap -f chrome exit status $?"; }
	python3 "$TRACE_CHECK" chrome "$E2E_TMP/h.json" >/dev/null || fail "--heap -f chrome: not a valid trace"
	ln -s /etc/passwd-does-not-matter "$E2E_TMP/link.json"
	USE_ZEND_DTRACE=1 "$PROF" --calls -f chrome -o "$E2E_TMP/link.json" -- php "$TRACE_PHP" \
		>/dev/null 2>"$out"
	expect_eq "symlink output exit status" 2 "$?"
	grep -q 'symbolic link' "$out" || fail "no symbolic-link message"
}

t_trace_perfetto_java_threads() {
	trace_need javac
	local d=$E2E_TMP/java f=$E2E_TMP/java.pftrace facts=$E2E_TMP/java.facts
	{ mkdir -p "$d" && javac -d "$d" tests/targets/Calls.java; } || fail "javac failed"
	"$PROF" --calls -f perfetto -o "$f" -- java -XX:+ExtendedDTraceProbes -cp "$d" Calls \
		>"$E2E_TMP/java.out" 2>"$E2E_TMP/java.err" || { cat "$E2E_TMP/java.err"; fail "profiler exit status"; }
	expect_eq "program output" 5550 "$(head -1 "$E2E_TMP/java.out")"
	python3 "$TRACE_CHECK" perfetto "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	grep -E 'Calls\.|^thread|^process' "$facts"
	grep '^drop' "$facts" | grep -v ' 0$'
	expect_eq "Calls.alpha slices" 100 "$(fact "$facts" "slices Calls.alpha")"
	expect_eq "Calls.beta slices" 300 "$(fact "$facts" "slices Calls.beta")"
	expect_eq "Calls.beta inside Calls.alpha" 300 "$(fact "$facts" "nested Calls.alpha>Calls.beta")"
	expect_eq "Calls.alpha inside Calls.main" 100 "$(fact "$facts" "nested Calls.main>Calls.alpha")"
	expect_eq "Calls.main slices" 1 "$(fact "$facts" "slices Calls.main")"
	expect_eq "Thread.sleep inside Calls.sleeper" 1 "$(fact "$facts" "nested Calls.sleeper>java.lang.Thread.sleep")"
	expect_eq "ring buffer drops" 0 "$(fact "$facts" "drop ringbuf_full")"
	expect_eq "unnamed" 0 "$(fact "$facts" "drop trace_unnamed")"
	# The JVM's threads each have their own named track, in one process.
	expect_range "thread tracks" 2 1000 "$(grep -c '^thread ' "$facts")"
	expect_eq "processes" 1 "$(awk '$1 == "process" { print $2 }' "$facts" | sort -u | wc -l)"
	grep -q '^thread [0-9]* [0-9]* Reference Handl$' "$facts" || fail "no JVM thread name"
}

# --heap: tests/targets/heap_trace.c makes exactly known allocations and nothing else (write(2),
# no stdio), so the heap-in-use counter's values are exact: 3 x 1 MiB and 10 x 4096 kept, 1000 x
# 100 and 2 MiB freed, 512 KiB realloc'd to 1.5 MiB and kept; 5 allocations of 1 MiB or more.
expect_heap_trace() { # FACTS_FILE PID
	expect_eq "heap counter at the end" 4759552 "$(fact "$1" "heap $2 final")"
	expect_eq "heap counter's peak (2 MiB on top of the rest)" 5283840 "$(fact "$1" "heap $2 peak")"
	# one value per allocation and per free; the realloc moves it once
	expect_eq "heap counter values" 2008 "$(fact "$1" "heap $2 updates")"
	expect_eq "large allocations" 5 "$(fact "$1" "instants large allocation")"
	expect_eq "1 MiB allocations" 3 "$(fact "$1" "large_alloc 1048576")"
	expect_eq "2 MiB allocations" 1 "$(fact "$1" "large_alloc 2097152")"
	expect_eq "1.5 MiB reallocations" 1 "$(fact "$1" "large_alloc 1572864")"
	expect_eq "ring buffer drops" 0 "$(fact "$1" "drop ringbuf_full")"
	expect_eq "unknown frees" 0 "$(fact "$1" "drop trace_heap_unknown_frees")"
	expect_eq "untracked blocks" 0 "$(fact "$1" "drop trace_heap_untracked")"
	expect_eq "processes with a heap counter" 1 "$(grep -c '^heap .* final ' "$1")"
}

t_trace_heap_exact() {
	perfetto_need
	local fmt f facts pid
	for fmt in chrome perfetto; do
		f=$E2E_TMP/heap.$fmt facts=$E2E_TMP/heap.$fmt.facts
		"$PROF" --heap -f "$fmt" -o "$f" -- "$TARGETS/heap_trace" >"$E2E_TMP/heap.out" \
			2>"$E2E_TMP/heap.err" || { cat "$E2E_TMP/heap.err"; fail "$fmt: profiler exit status"; }
		expect_eq "$fmt: target output" "done" "$(head -1 "$E2E_TMP/heap.out")"
		grep -q '^no drops$' "$E2E_TMP/heap.err" || fail "$fmt: no drop summary printed"
		python3 "$TRACE_CHECK" "$fmt" "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the $fmt trace"; }
		grep -v '^drop .* 0$' "$facts"
		pid=$(awk '$1 == "process" { print $2 }' "$facts")
		expect_heap_trace "$facts" "$pid"
		# Traces take the heap records' fine clock (bpf/heap.bpf.c heap_now): no two of the
		# 2008 calls share a time.  The per-tick clock of the other outputs would stamp most
		# of churn()'s thousand mallocs with one time.
		expect_eq "$fmt: heap values at the time of the one before" 0 "$(fact "$facts" "heap $pid same_time")"
		# The instants are on the target's one thread (tid = pid).
		awk '$1 == "thread" && $2 != $3 { exit 1 }' "$facts" || fail "$fmt: a thread other than the target's"
	done
	# python3-protobuf's reading of the perfetto trace: the same values.
	$PERFETTO_CHECK "$E2E_TMP/heap.perfetto" >"$E2E_TMP/heap.pb.facts" ||
		{ cat "$E2E_TMP/heap.pb.facts"; fail "perfetto_check rejected the heap trace"; }
	expect_heap_trace "$E2E_TMP/heap.pb.facts" "$pid"
	protoc --decode_raw <"$E2E_TMP/heap.perfetto" >"$E2E_TMP/heap.raw" ||
		fail "protoc --decode_raw could not parse the heap trace"
	# protoc's view: 2008 counter values (type 4) besides the drop counters' one each.
	expect_eq "counter events (protoc)" 2008 "$(($(grep -c '^    9: 4$' "$E2E_TMP/heap.raw") - $(grep -c 'bpftrace-prof counter: ' "$E2E_TMP/heap.raw")))"
}

# --calls --heap: large allocations inside the slices of the PHP functions that made them
# (tests/targets/heap_calls.php under USE_ZEND_ALLOC=0: keep() 8 x 1 MiB kept, churn() 2 MiB
# freed, 4 times) and the counter higher by those 8 MiB after keep() only.
t_trace_calls_heap_php() {
	trace_need php
	local fmt f facts
	for fmt in chrome perfetto; do
		f=$E2E_TMP/ph.$fmt facts=$E2E_TMP/ph.$fmt.facts
		USE_ZEND_DTRACE=1 USE_ZEND_ALLOC=0 "$PROF" --calls --heap -f "$fmt" -o "$f" \
			-- php tests/targets/heap_calls.php >"$E2E_TMP/ph.out" 2>"$E2E_TMP/ph.err" ||
			{ cat "$E2E_TMP/ph.err"; fail "$fmt: profiler exit status"; }
		expect_eq "$fmt: script output" 8388614 "$(head -1 "$E2E_TMP/ph.out")"
		python3 "$TRACE_CHECK" "$fmt" "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the $fmt trace"; }
		grep -v '^drop .* 0$' "$facts"
		expect_eq "$fmt: keep slices" 1 "$(fact "$facts" "slices keep")"
		expect_eq "$fmt: churn slices" 4 "$(fact "$facts" "slices churn")"
		expect_eq "$fmt: large allocations in keep" 8 "$(fact "$facts" "large_in keep")"
		expect_eq "$fmt: large allocations in churn" 4 "$(fact "$facts" "large_in churn")"
		expect_eq "$fmt: ring buffer drops" 0 "$(fact "$facts" "drop ringbuf_full")"
		expect_eq "$fmt: unknown frees" 0 "$(fact "$facts" "drop trace_heap_unknown_frees")"
		# keep()'s 8 MiB (and their PHP headers) stay in use after it returns; churn()'s die
		# inside it (PHP frees them at its return).
		expect_range "$fmt: heap grown by keep" $((8 << 20)) $(((8 << 20) + 65536)) "$(fact "$facts" "heap_delta keep")"
		expect_range "$fmt: heap grown by churn" -4096 4096 "$(fact "$facts" "heap_delta churn")"
	done
}

# --cpu: tests/targets/cpu_target.c's threads (main alternating hot_three and hot_one 3:1,
# "spinner" in spin_other, "syscaller" in a system call), each sample an instant named after its
# leaf with its stack, read by both perfetto readers and by trace_check for chrome.
expect_cpu_trace() { # FACTS_FILE
	local three one
	three=$(fact "$1" "cpu_in hot_three") one=$(fact "$1" "cpu_in hot_one")
	[ "${one:-0}" -gt 0 ] || fail "no samples in hot_one"
	expect_range "hot_three/hot_one" 2.0 4.5 "$(awk -v a="$three" -v b="$one" 'BEGIN { print a / b }')"
	expect_eq "threads with samples" 3 "$(grep -c '^cpu [0-9]* [0-9]* ' "$1")"
	# spin_other's samples are all one thread's (not the main one), and nearly all that
	# thread's samples (it starts and names itself first).  (Found by its samples: its name
	# may still be the main thread's "split" when it is first seen, before it renames itself.)
	local spinner pid
	spinner=$(awk '$1 == "cpu_at" && $3 == "spin_other" { print $2 }' "$1")
	pid=$(awk '$1 == "process" { print $2 }' "$1")
	expect_eq "threads in spin_other" 1 "$(echo "$spinner" | wc -w)"
	[ "$spinner" != "$pid" ] || fail "spin_other on the main thread"
	local all
	all=$(awk -v t="$spinner" '$1 == "cpu" && $3 == t { print $4 }' "$1")
	expect_range "spinner's samples in spin_other" "$((all * 95 / 100))" "$all" "$(fact "$1" "cpu_in spin_other")"
	expect_range "samples with kernel frames (the syscall thread)" 1 100000 "$(fact "$1" "cpu_kernel")"
	expect_eq "ring buffer drops" 0 "$(fact "$1" "drop ringbuf_full")"
}

t_trace_cpu_samples() {
	perfetto_need
	local fmt f facts
	for fmt in chrome perfetto; do
		f=$E2E_TMP/cpu.$fmt facts=$E2E_TMP/cpu.$fmt.facts
		"$PROF" --cpu=499 -f "$fmt" -o "$f" -- "$TARGETS/cpu_target" 4 >"$E2E_TMP/cpu.out" \
			2>"$E2E_TMP/cpu.err" || { cat "$E2E_TMP/cpu.err"; fail "$fmt: profiler exit status"; }
		python3 "$TRACE_CHECK" "$fmt" "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the $fmt trace"; }
		grep -E '^cpu |^cpu_in (hot|spin)|^cpu_at [0-9]* spin_other|^cpu_kernel|^thread' "$facts"
		expect_cpu_trace "$facts"
	done
	$PERFETTO_CHECK "$f" >"$facts.pb" || { cat "$facts.pb"; fail "perfetto_check rejected the trace"; }
	# The protobuf reading: the same samples per thread and per function.
	expect_eq "samples per thread (protobuf)" "$(grep '^cpu ' "$facts")" "$(grep '^cpu ' "$facts.pb")"
	expect_eq "samples per function (protobuf)" "$(grep '^cpu_in ' "$facts")" "$(grep '^cpu_in ' "$facts.pb")"
}

# --offcpu: tests/targets/offcpu_target.c's "sleeper" thread sleeps 300 ms three times and waits
# 100 ms on a futex three times; the main thread waits for it in pthread_join.  Each period is
# an "off-CPU: idle" slice of its length on its thread; with --runnable two threads pinned to
# one CPU wait for it in turn ("off-CPU: runnable").
offcpu_fact() { # FACTS_FILE TID NAME FIELD
	awk -v t="$2" -v n="$3" -v k="$4" '$1 == "offcpu" && $2 == t && $3 " " $4 == n {
		for (i = 5; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$1"
}

t_trace_offcpu_slices() {
	perfetto_need
	local fmt f facts pid sleeper
	for fmt in chrome perfetto; do
		f=$E2E_TMP/off.$fmt facts=$E2E_TMP/off.$fmt.facts
		"$PROF" --offcpu -f "$fmt" -o "$f" -- "$TARGETS/offcpu_target" >/dev/null 2>"$E2E_TMP/off.err" ||
			{ cat "$E2E_TMP/off.err"; fail "$fmt: profiler exit status"; }
		python3 "$TRACE_CHECK" "$fmt" "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the $fmt trace"; }
		grep -E '^offcpu |^thread' "$facts"
		pid=$(awk '$1 == "process" { print $2 }' "$facts")
		sleeper=$(awk -v p="$pid" '$1 == "thread" && $3 != p { print $3 }' "$facts")
		expect_eq "$fmt: threads" 1 "$(echo "$sleeper" | wc -w)"
		expect_eq "$fmt: sleeper's idle slices of >= 290 ms (3 sleeps)" 3 "$(offcpu_fact "$facts" "$sleeper" "off-CPU: idle" ge290)"
		expect_eq "$fmt: sleeper's idle slices of >= 95 ms (and 3 futex waits)" 6 "$(offcpu_fact "$facts" "$sleeper" "off-CPU: idle" ge95)"
		expect_range "$fmt: sleeper's idle ms" 1190 3000 "$(offcpu_fact "$facts" "$sleeper" "off-CPU: idle" total_ms)"
		expect_range "$fmt: main thread's idle ms (the join)" 1190 3000 "$(offcpu_fact "$facts" "$pid" "off-CPU: idle" total_ms)"
		expect_eq "$fmt: ring buffer drops" 0 "$(fact "$facts" "drop ringbuf_full")"
	done
	$PERFETTO_CHECK "$f" >"$facts.pb" || { cat "$facts.pb"; fail "perfetto_check rejected the trace"; }
	expect_eq "slices per thread (protobuf)" "$(awk -v t="$sleeper" '$1 == "offcpu" && $2 == t { split($5, n, "="); s += n[2] } END { print s }' "$facts")" \
		"$(awk -v t="$sleeper" '$1 == "thread_slices" && $3 == t { print $4 }' "$facts.pb")"
	# Two threads on one CPU: each waits runnable for about the other's run.
	f=$E2E_TMP/offr.json facts=$E2E_TMP/offr.facts
	"$PROF" --offcpu -f chrome -o "$f" -- "$TARGETS/offcpu_target" --runnable >/dev/null 2>&1 ||
		fail "--runnable: profiler exit status"
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	grep '^offcpu ' "$facts"
	# (as test_offcpu.sh: together at least half the 600 ms they shared the CPU; each a good
	# part of it — an even split is about 300 ms each, 297 was seen)
	expect_eq "threads waiting >= 100 ms runnable" 2 \
		"$(awk '$1 == "offcpu" && $4 == "runnable" { split($6, t, "="); if (t[2] >= 100) n++ } END { print n + 0 }' "$facts")"
	expect_range "ms both waited runnable" 300 10000 \
		"$(awk '$1 == "offcpu" && $4 == "runnable" { split($6, t, "="); s += t[2] } END { print s + 0 }' "$facts")"
}

# --calls --offcpu: the off-CPU slice nests inside the PHP call that slept (calls.php's
# sleeper(): usleep 200 ms).
t_trace_calls_offcpu_php() {
	trace_need php
	local f=$E2E_TMP/co.json facts=$E2E_TMP/co.facts
	USE_ZEND_DTRACE=1 "$PROF" --calls --offcpu -f chrome -o "$f" -- php "$TRACE_PHP" >/dev/null 2>"$E2E_TMP/co.err" ||
		{ cat "$E2E_TMP/co.err"; fail "profiler exit status"; }
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	grep -E '^offcpu |sleeper' "$facts"
	# The calls are exact as without --offcpu (off-CPU slices only nest inside them).
	expect_eq "Calc::alpha slices" 100 "$(fact "$facts" "slices Calc::alpha")"
	expect_eq "Calc::beta inside Calc::alpha" 300 "$(fact "$facts" "nested Calc::alpha>Calc::beta")"
	expect_eq "sleeper slices" 1 "$(fact "$facts" "slices sleeper")"
	expect_range "idle slices inside sleeper" 1 10 "$(fact "$facts" "nested sleeper>off-CPU: idle")"
	expect_range "idle slices of >= 95 ms (the 200 ms usleep)" 1 10 \
		"$(awk '$1 == "offcpu" && $4 == "idle" { split($7, t, "="); n += t[2] } END { print n + 0 }' "$facts")"
}

# TRACE_PY: pyenv's CPython 3.11 (its shared libpython, as test_python.sh finds it), or a skip
# (a failure under CI=true).
trace_pyenv311() {
	local root p found=""
	root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
	for p in "$root"/versions/3.11.*/bin/python3.11; do
		[ -x "$p" ] && found=$p
	done
	if [ -z "$found" ]; then
		[ "${CI:-}" = true ] && fail "pyenv 3.11 is not installed under $root/versions (CI=true)"
		skip "no pyenv 3.11 under $root/versions"
	fi
	TRACE_PY=$found
}

# The "stack N F1;…" lines of a stacks file whose stack holds FN, cut after FN: the part of a
# py_cpu.py stack that is the same in every run (the interpreter's start, <module>, main, FN),
# one line each.
stacks_to() { # STACKS FN
	awk -v fn="$2" '{ s = substr($0, index(substr($0, 7), " ") + 7); n = split(s, f, ";"); p = ""
		for (i = 1; i <= n; i++) { p = p (i > 1 ? ";" : "") f[i]; if (f[i] == fn) { print p; break } } }' "$1" | sort -u
}

# --cpu of Python in every event-trace format: the stacks are pprof's, frame by frame (issue 25:
# each Python frame came after a frame named like 0xb2051c5be24e2606, its fingerprint word).
# Each format is its own run of py_cpu.py, pprof another: no frame is a 16-hex-digit word, and
# the stacks down to hot_a and to hot_b — one each in every run, the same frames — are pprof's
# exactly.  chrome's CPU profile holds the same samples as its instants (trace_check.py).
t_trace_python_cpu_stacks_as_pprof() {
	perfetto_need
	local fmt f st want n
	trace_pyenv311
	for fmt in pprof chrome perfetto firefox; do
		f=$E2E_TMP/py.$fmt st=$E2E_TMP/py.$fmt.stacks
		[ "$fmt" = firefox ] && f=$f.json.gz
		"$PROF" --cpu=299 -f "$fmt" -o "$f" -- "$TRACE_PY" tests/targets/py_cpu.py 1.5 >"$f.out" 2>"$f.err" ||
			{ cat "$f.err"; fail "$fmt: profiler exit status"; }
		grep -q '^rounds [0-9]' "$f.out" || fail "$fmt: the script did not finish"
		case $fmt in
		firefox) python3 tests/e2e/ff_check.py "$f" >"$f.facts" ;;
		*) python3 "$TRACE_CHECK" "$fmt" "$f" >"$f.facts" ;;
		esac || { cat "$f.facts"; fail "the $fmt reader rejected the file"; }
		grep '^stack ' "$f.facts" >"$st"
		if [ "$fmt" = perfetto ]; then
			$PERFETTO_CHECK "$f" >"$f.pb" || { cat "$f.pb"; fail "perfetto_check rejected the trace"; }
			cmp -s <(grep '^stack ' "$f.pb" | sort) <(sort "$st") ||
				fail "perfetto: the protobuf reader's stacks differ"
			echo "ok: perfetto: the protobuf reader's stacks are trace_check's"
		fi
		echo "== $fmt: $(awk '{ s += $2 } END { print s + 0 }' "$st") samples, $(wc -l <"$st") stacks"
		n=$(grep -cE '(^stack [0-9]+ |;)0x[0-9a-f]{16}(;|$)' "$st")
		if [ "$n" != 0 ]; then
			grep -E '0x[0-9a-f]{16}' "$st" | head -3
			fail "$fmt: $n stacks with a 16-hex-digit frame"
		fi
		echo "ok: $fmt: no 16-hex-digit frames"
		stacks_to "$st" hot_a >"$st.to"
		stacks_to "$st" hot_b >>"$st.to"
		cat "$st.to"
		if [ "$fmt" = pprof ]; then
			want=$st.to
			expect_eq "pprof: stacks down to hot_a and hot_b" 2 "$(wc -l <"$want")"
			grep -q ';<module>;main;hot_a$' "$want" || fail "pprof: no <module>;main;hot_a"
		else
			expect_eq "$fmt: stacks down to hot_a and hot_b, as pprof's" "$(cat "$want")" "$(cat "$st.to")"
		fi
	done
	expect_eq "chrome: CPU profile samples of the one thread" 1 "$(grep -c '^profile_samples ' "$E2E_TMP/py.chrome.facts")"
}

# -f chrome --cpu opens in the real speedscope (issue 25: it found no profile in the instants):
# the npm package scripts/install-deps.sh installs, served from the loopback, in headless
# Chromium (tests/e2e/speedscope_check.py).  Its sandwich view lists py_cpu.py's hot_a with the
# share of the time that pprof gives it (a pprof of another run: within 5 points; ~3000 samples
# a run).
SPEEDSCOPE_DIR=${SPEEDSCOPE_DIR:-/var/cache/bpftrace-prof/speedscope/node_modules/speedscope/dist/release}
t_trace_chrome_cpu_in_speedscope() {
	local f=$E2E_TMP/ss.json p=$E2E_TMP/ss.pb.gz facts=$E2E_TMP/ss.facts want got
	trace_need chromium
	[ -r "$SPEEDSCOPE_DIR/index.html" ] || fail "speedscope is not installed in $SPEEDSCOPE_DIR (scripts/install-deps.sh test)"
	trace_pyenv311
	"$PROF" --cpu=999 -o "$p" -- "$TRACE_PY" tests/targets/py_cpu.py 3 >/dev/null 2>"$p.err" ||
		{ cat "$p.err"; fail "pprof: profiler exit status"; }
	want=$(python3 "$TRACE_CHECK" pprof "$p" | awk '{ n += $2 } $3 ~ /(^|;)hot_a(;|$)/ { a += $2 } END { if (n) printf "%.2f", 100 * a / n }')
	"$PROF" --cpu=999 -f chrome -o "$f" -- "$TRACE_PY" tests/targets/py_cpu.py 3 >/dev/null 2>"$f.err" ||
		{ cat "$f.err"; fail "chrome: profiler exit status"; }
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	python3 tests/e2e/speedscope_check.py "$SPEEDSCOPE_DIR" "$f" "$E2E_TMP/ss" >"$facts.ss" ||
		{ cat "$facts.ss"; fail "speedscope did not draw the trace"; }
	head -5 "$facts.ss"
	expect_eq "speedscope read it as" "Chrome Timeline Object" "$(awk '$1 == "import" { $1 = ""; print substr($0, 2) }' "$facts.ss")"
	got=$(awk '$1 == "sandwich" && $2 == "hot_a" { print $3 }' "$facts.ss")
	[ -n "$got" ] || fail "hot_a is not in speedscope's sandwich view"
	expect_range "hot_a's share in speedscope (pprof: $want %)" "$(awk -v w="$want" 'BEGIN { print w - 5 }')" \
		"$(awk -v w="$want" 'BEGIN { print w + 5 }')" "$got"
}

# The same server as t_heap_pid_server_unknown_frees_not_drops, as a chrome trace: its frees of
# records allocated before the attach are counted (trace_heap_unknown_frees) but are no drop in
# the trace's summary on stderr, as unknown_frees is none in the profiles'.
t_trace_chrome_unknown_frees_not_drops() {
	local f=$E2E_TMP/server.json out=$E2E_TMP/server.out log=$E2E_TMP/server.log pid
	build/targets/churn_server 30 >"$out" 2>&1 &
	pid=$!
	wait_for_line "$out" READY 10 || fail "churn_server never became ready"
	"$PROF" --heap -f chrome -p "$pid" -d 2 -o "$f" 2>"$log" || fail "exit status $?"
	kill "$pid"
	wait "$pid" 2>/dev/null
	grep -Eq '^(drops:|no drops)$' "$log" || { cat "$log"; fail "no drops section on stderr"; }
	grep -Eq '^ +trace_heap_unknown_frees: ' "$log" && fail "trace_heap_unknown_frees listed under drops"
	python3 "$TRACE_CHECK" chrome "$f" >"$E2E_TMP/facts" || { cat "$E2E_TMP/facts"; fail "trace_check rejected the trace"; }
	# 63 to 66: see t_heap_pid_server_unknown_frees_not_drops
	expect_range "trace_heap_unknown_frees" 63 66 "$(fact "$E2E_TMP/facts" "drop trace_heap_unknown_frees")"
}
