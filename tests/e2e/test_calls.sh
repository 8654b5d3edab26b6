# --calls end to end: real interpreters from Debian packages running tests/targets/calls.*,
# exact call counts per stack read back with go tool pprof (an independent decoder).

PHP_T=tests/targets/calls.php
PY311=/usr/bin/python3.11

# One line per sample, from `pprof -raw` (whose sample lines are "calls wall busy idle: location
# ids"): "CALLS WALL_NS BUSY_NS IDLE_NS pid=P tid=T [partial] root;…;leaf".
calls_raw() { # FILE
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { sec = "s"; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { sec = ""; next }
		sec == "s" && /^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+: / {
			n++; v[n] = $1 " " $2 " " $3 " " $4; sub(/:$/, "", v[n]); locs[n] = ""
			for (i = 5; i <= NF; i++) locs[n] = locs[n] " " $i
			next
		}
		sec == "s" && /pid:\[/ { match($0, /pid:\[[0-9]+\]/); pid[n] = substr($0, RSTART + 5, RLENGTH - 6)
			match($0, /tid:\[[0-9]+\]/); tid[n] = substr($0, RSTART + 5, RLENGTH - 6) }
		sec == "s" && /partial/ { part[n] = " partial" }
		sec == "l" && /^ +[0-9]+: / { id = $1; sub(/:$/, "", id); name[id] = $4 }
		END {
			for (s = 1; s <= n; s++) {
				k = split(locs[s], ids, " "); st = ""
				for (i = k; i >= 1; i--) st = st (st == "" ? "" : ";") name[ids[i]]
				print v[s], "pid=" pid[s], "tid=" tid[s] part[s], st
			}
		}'
}

# "CALLS WALL_NS pid=P tid=T [partial] root;…;leaf" per sample.
calls_samples() { # FILE
	calls_raw "$1" | awk '{ l = $1 " " $2; for (i = 5; i <= NF; i++) l = l " " $i; print l }'
}

# "WALL BUSY IDLE root;…;leaf" per sample (self times in ns).
calls_times() { # FILE
	calls_raw "$1" | awk '{ print $2, $3, $4, $NF }'
}

# Sum of calls over samples whose stack (root first) is exactly STACK.
calls_on_stack() { # SAMPLES_FILE STACK
	awk -v st="$2" '$NF == st { c += $1 } END { print c + 0 }' "$1"
}

# Sum of wall ns over samples whose stack is exactly STACK.
wall_on_stack() { # SAMPLES_FILE STACK
	awk -v st="$2" '$NF == st { w += $2 } END { printf "%.0f\n", w }' "$1"
}

need() {
	command -v "$1" >/dev/null || fail "$1 is not installed (scripts/install-deps.sh test)"
}

t_calls_php_exact_stacks() {
	need php
	local f=$E2E_TMP/php.pb.gz s=$E2E_TMP/php.samples
	USE_ZEND_DTRACE=1 "$PROF" --calls -o "$f" --top 0 -- php "$PHP_T" >"$E2E_TMP/php.out" ||
		fail "profiler exit status $?"
	expect_eq "script output" 5550 "$(cat "$E2E_TMP/php.out")"
	calls_samples "$f" >"$s"
	cat "$s"
	expect_eq "alpha calls from main" 100 "$(calls_on_stack "$s" 'main;Calc::alpha')"
	expect_eq "beta calls from alpha" 300 "$(calls_on_stack "$s" 'main;Calc::alpha;Calc::beta')"
	expect_eq "beta anywhere else" 0 "$(awk '/Calc::beta$/ && $NF != "main;Calc::alpha;Calc::beta"' "$s" | wc -l)"
	expect_eq "sleeper calls" 1 "$(calls_on_stack "$s" 'main;sleeper')"
	expect_eq "main calls" 1 "$(calls_on_stack "$s" 'main')"
	expect_range "sleeper wall ns (usleep 200 ms)" 200000000 2000000000 \
		"$(wall_on_stack "$s" 'main;sleeper')"
	# Same numbers through pprof's own aggregation, and the tree gives inclusive time.
	expect_eq "pprof flat calls Calc::beta" 300 "$(pprof_flat "$f" calls Calc::beta)"
	expect_eq "pprof cum calls Calc::alpha" 400 "$(pprof_cum "$f" calls Calc::alpha)"
	expect_range "main inclusive wall (pprof cum) >= sleeper" 200000000 5000000000 \
		"$(go tool pprof -symbolize=none -top -nodefraction=0 -unit=ns -sample_index=wall "$f" 2>/dev/null |
			awk '$6 == "main" { v = $4; sub(/ns$/, "", v); print v }')"
	# Functions carry the source file and line.
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q "Calc::alpha .*tests/targets/calls.php:[0-9]" ||
		fail "Calc::alpha has no file:line"
	local pid
	pid=$(awk '{ print $3 }' "$s" | sort -u)
	expect_eq "one pid, tid = pid" "pid=${pid#pid=} tid=${pid#pid=}" "$(awk '{ print $3, $4 }' "$s" | sort -u)"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q 'comm:\[php\] process:\[php\]' ||
		fail "comm/process labels missing"
	echo "ok: labels"
}

# busy (on the CPU) and idle (off it) split each function's self wall time: a spinning
# function is busy for the CPU time it got (the script measures it with getrusage: on a loaded
# machine it is preempted), a sleeping one idle, one that does both has both.
t_calls_php_busy_idle() {
	need php
	local f=$E2E_TMP/busy.pb.gz s=$E2E_TMP/busy.times out=$E2E_TMP/busy.out fn w b i cpu
	USE_ZEND_DTRACE=1 "$PROF" --calls -o "$f" --top 0 -- php tests/targets/busy_idle.php >"$out" ||
		fail "profiler exit status $?"
	cat "$out"
	expect_eq "script output" "done" "$(tail -1 "$out")"
	expect_no_drops "$f"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q '^ *calls/count wall/nanoseconds\[dflt\] busy/nanoseconds idle/nanoseconds$' ||
		{ go tool pprof -symbolize=none -raw "$f" 2>/dev/null | head -5; fail "sample types"; }
	calls_times "$f" >"$s"
	cat "$s"
	# every sample: busy + idle = wall, exactly
	expect_eq "samples where busy + idle != wall" 0 "$(awk '$2 + $3 != $1' "$s" | wc -l)"
	for fn in spinner:1 napper:1 both:1 spin_ms:2; do
		expect_eq "samples of ${fn%:*}" "${fn#*:}" "$(awk -v f="${fn%:*}" '$4 ~ ("(^|;)" f "$")' "$s" | wc -l)"
	done
	# spin_ms is busy for the CPU time getrusage saw it get (µs, and the clock readings
	# around the call): within 10 % + 5 ms
	for fn in spinner both; do
		cpu=$(awk -v f="$fn" '$1 == f { print $2 * 1000 }' "$out")
		read -r w b i _ < <(awk -v st="main;$fn;spin_ms" '$4 == st' "$s")
		expect_range "$fn's spin_ms busy ns (CPU time $cpu ns)" \
			$((cpu * 9 / 10 - 5000000)) $((cpu * 11 / 10 + 5000000)) "$b"
	done
	read -r w b i _ < <(awk '$4 == "main;napper"' "$s")
	expect_range "napper wall (300 ms)" 300000000 3000000000 "$w"
	expect_range "napper idle (asleep)" $((w * 9 / 10)) "$w" "$i"
	read -r w b i _ < <(awk '$4 == "main;both"' "$s")
	expect_range "both's own idle (its 200 ms sleep)" 200000000 "$w" "$i"
}

t_calls_php_folded_and_text() {
	need php
	local f=$E2E_TMP/php.folded
	USE_ZEND_DTRACE=1 "$PROF" --calls -f folded -o "$f" --top 0 -- php "$PHP_T" >/dev/null ||
		fail "profiler exit status $?"
	cat "$f"
	expect_eq "folded stacks" "php;main php;main;Calc::alpha php;main;Calc::alpha;Calc::beta php;main;sleeper" \
		"$(awk '{ print $1 }' "$f" | sort | xargs)"
	expect_range "folded sleeper wall" 200000000 2000000000 "$(awk '$1 == "php;main;sleeper" { print $2 }' "$f")"
	USE_ZEND_DTRACE=1 "$PROF" --calls -f text -o - --top 5 -- php "$PHP_T" >"$E2E_TMP/php.txt" ||
		fail "profiler exit status $?"
	cat "$E2E_TMP/php.txt"
	grep -q 'top 5 by wall' "$E2E_TMP/php.txt" || fail "no top-by-wall table"
	grep -q 'top 5 by calls' "$E2E_TMP/php.txt" || fail "no top-by-calls table"
	expect_eq "text: beta calls (flat)" 300 "$(awk '/by calls/ { t = 1 } t && $NF == "Calc::beta" { print $1; exit }' "$E2E_TMP/php.txt")"
	expect_eq "text: sleeper first by wall" sleeper "$(awk '/by wall/ { getline; getline; print $NF; exit }' "$E2E_TMP/php.txt")"
}

t_calls_php_without_env_warns() {
	need php
	local f=$E2E_TMP/php-noenv.pb.gz
	env -u USE_ZEND_DTRACE "$PROF" --calls -o "$f" --top 0 -- php "$PHP_T" >/dev/null 2>"$E2E_TMP/noenv.err" ||
		fail "profiler exit status $?"
	cat "$E2E_TMP/noenv.err"
	grep -q 'USE_ZEND_DTRACE=1' "$E2E_TMP/noenv.err" || fail "no USE_ZEND_DTRACE warning"
	expect_eq "calls seen" 0 "$(pprof_flat "$f" calls Calc::alpha)"
}

t_calls_java_exact_stacks() {
	need javac
	local d=$E2E_TMP/java f=$E2E_TMP/java.pb.gz s=$E2E_TMP/java.samples
	{ mkdir -p "$d" && javac -d "$d" tests/targets/Calls.java; } || fail "javac failed"
	"$PROF" --calls -o "$f" --top 0 -- java -XX:+ExtendedDTraceProbes -cp "$d" Calls \
		>"$E2E_TMP/java.out" 2>"$E2E_TMP/java.err" || { cat "$E2E_TMP/java.err"; fail "profiler exit status"; }
	expect_eq "program output" 5550 "$(cat "$E2E_TMP/java.out")"
	calls_samples "$f" >"$s"
	grep 'Calls\.' "$s"
	expect_eq "Calls.alpha calls from main" 100 "$(calls_on_stack "$s" 'Calls.main;Calls.alpha')"
	expect_eq "Calls.beta calls from alpha" 300 "$(calls_on_stack "$s" 'Calls.main;Calls.alpha;Calls.beta')"
	expect_eq "pprof flat Calls.beta" 300 "$(pprof_flat "$f" calls Calls.beta)"
	expect_eq "pprof flat Calls.alpha" 100 "$(pprof_flat "$f" calls Calls.alpha)"
	expect_eq "Calls.main calls" 1 "$(pprof_flat "$f" calls Calls.main)"
	expect_range "Thread.sleep under sleeper (ns)" 200000000 2000000000 \
		"$(wall_on_stack "$s" 'Calls.main;Calls.sleeper;java.lang.Thread.sleep')"
	# Per thread: the launcher runs main() on a thread of its own, JVM threads have theirs.
	local ids
	ids=$(awk '$NF ~ /^Calls\.main/ { print $3, $4 }' "$s" | sort -u)
	expect_eq "Calls.* on one thread" 1 "$(echo "$ids" | wc -l)"
	local mpid mtid
	read -r mpid mtid <<<"$ids"
	[ "${mpid#pid=}" != "${mtid#tid=}" ] || fail "Calls.main on the process's first thread: $ids"
	echo "ok: Calls.main on its own thread ($ids)"
	expect_range "threads with calls" 2 1000 "$(awk '{ print $4 }' "$s" | sort -u | wc -l)"
	# Package-qualified names of JDK methods (class names arrive as java/lang/…).
	grep -q 'java\.lang\.' "$s" || fail "no java.lang.* frames"
	grep -q 'java/lang' "$s" && fail "internal class name form leaked"
	expect_eq "returns matching no entry" 0 "$(pprof_counter_value "$f" call_mismatched_returns)"
}

t_calls_java_without_flag_warns() {
	need javac
	local d=$E2E_TMP/java2 f=$E2E_TMP/java2.pb.gz
	{ mkdir -p "$d" && javac -d "$d" tests/targets/Calls.java; } || fail "javac failed"
	"$PROF" --calls -o "$f" --top 0 -- java -cp "$d" Calls >/dev/null 2>"$E2E_TMP/java2.err" ||
		fail "profiler exit status $?"
	cat "$E2E_TMP/java2.err"
	grep -q 'ExtendedDTraceProbes' "$E2E_TMP/java2.err" || fail "no JVM flag warning"
	expect_eq "calls seen" 0 "$(pprof_flat "$f" calls Calls.alpha)"
}

t_calls_python311_return_only() {
	[ -x "$PY311" ] || fail "$PY311 missing (apt-get install python3.11)"
	local f=$E2E_TMP/py.pb.gz s=$E2E_TMP/py.samples
	"$PROF" --calls -o "$f" --top 0 -- "$PY311" tests/targets/calls.py \
		>"$E2E_TMP/py.out" 2>"$E2E_TMP/py.err" || fail "profiler exit status $?"
	cat "$E2E_TMP/py.err"
	expect_eq "script output" 125250 "$(cat "$E2E_TMP/py.out")"
	grep -q 'CPython 3.11 fires python:function__return .* function__entry never' "$E2E_TMP/py.err" ||
		fail "no 3.11 warning"
	calls_samples "$f" >"$s"
	expect_eq "f calls (1000 from Python, 500 from map)" 1500 "$(calls_on_stack "$s" f)"
	expect_eq "g calls" 1 "$(calls_on_stack "$s" g)"
	expect_eq "pprof flat f" 1500 "$(pprof_flat "$f" calls f)"
	# Return-only: the function alone, flagged partial, no time.
	expect_eq "f samples not partial" 0 "$(awk '$NF == "f" && !/partial/' "$s" | wc -l)"
	expect_eq "f wall" 0 "$(wall_on_stack "$s" f)"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q ' f .*tests/targets/calls.py:' ||
		fail "f has no .py file"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q '^calls/count\[dflt\]' ||
		fail "default sample type is not calls for a return-only profile"
}

t_calls_ruby_cmethods() {
	need ruby
	local f=$E2E_TMP/rb.pb.gz s=$E2E_TMP/rb.samples
	"$PROF" --calls -o "$f" --top 0 -- ruby --disable-gems tests/targets/calls.rb \
		2>"$E2E_TMP/rb.err" || fail "profiler exit status $?"
	cat "$E2E_TMP/rb.err"
	grep -q 'ruby bug 16084' "$E2E_TMP/rb.err" || fail "no Ruby >= 2.5 warning"
	calls_samples "$f" >"$s"
	grep -E 'Integer#(times|gcd|lcm)' "$s"
	expect_eq "outer Integer#times" 1 "$(calls_on_stack "$s" 'Integer#times')"
	expect_eq "inner Integer#times" 7 "$(calls_on_stack "$s" 'Integer#times;Integer#times')"
	expect_eq "Integer#gcd under two times" 35 "$(calls_on_stack "$s" 'Integer#times;Integer#times;Integer#gcd')"
	expect_eq "Integer#lcm under Array#each" 12 "$(calls_on_stack "$s" 'Array#each;Integer#lcm')"
	expect_eq "pprof flat Integer#gcd" 35 "$(pprof_flat "$f" calls 'Integer#gcd')"
}

t_calls_pid_midrun_consistent() {
	need php
	local f=$E2E_TMP/mid.pb.gz s=$E2E_TMP/mid.samples
	USE_ZEND_DTRACE=1 php "$PHP_T" loop >"$E2E_TMP/mid.target" 2>&1 &
	local pid=$!
	wait_for_line "$E2E_TMP/mid.target" READY 10 || fail "target never became ready"
	sleep 0.3 # well inside forever() and its loop when we attach
	"$PROF" --calls -p "$pid" -d 2 -o "$f" --top 0 2>"$E2E_TMP/mid.err"
	local rc=$?
	kill "$pid"
	wait "$pid" 2>/dev/null
	cat "$E2E_TMP/mid.err"
	expect_eq "profiler exit status" 0 "$rc"
	calls_samples "$f" >"$s"
	cat "$s"
	local alpha beta
	# Entered before we attached: forever and main never return, so paths start at alpha.
	alpha=$(calls_on_stack "$s" 'Calc::alpha')
	beta=$(calls_on_stack "$s" 'Calc::alpha;Calc::beta')
	expect_range "alpha calls in 2 s (10 per 10 ms pause)" 100 3000 "$alpha"
	# A call cut at either end loses at most its own 3 betas.
	expect_range "beta = 3 x alpha" $((3 * alpha - 3)) $((3 * alpha + 3)) "$beta"
	expect_eq "samples without the partial label" 0 "$(grep -cv partial "$s")"
	expect_eq "negative times" 0 "$(awk '$2 < 0' "$s" | wc -l)"
	# Both functions took time, and all of it lies inside the window the profile covers: one
	# thread cannot spend more wall time in calls than the profile's own duration (printed
	# rounded to 10 ms, hence the half step).
	local total dur_ns
	total=$(awk '{ w += $2 } END { printf "%.0f", w }' "$s")
	dur_ns=$(go tool pprof -symbolize=none -raw "$f" 2>/dev/null |
		awk '/^Duration:/ { printf "%.0f", ($2 + 0.005) * 1e9 }')
	[ -n "$dur_ns" ] || fail "no duration in the profile"
	[ "$(wall_on_stack "$s" 'Calc::alpha')" -gt 0 ] || fail "alpha self wall is 0"
	[ "$(wall_on_stack "$s" 'Calc::alpha;Calc::beta')" -gt 0 ] || fail "beta wall is 0"
	[ "$total" -le "$dur_ns" ] || fail "total wall $total ns exceeds the profile duration $dur_ns ns"
	echo "ok: total wall $total ns <= duration $dur_ns ns"
	expect_eq "stacks" "Calc::alpha Calc::alpha;Calc::beta" "$(awk '{ print $NF }' "$s" | sort -u | xargs)"
}

t_calls_no_runtime_exit_2() {
	sleep 30 &
	local pid=$!
	"$PROF" --calls -p "$pid" -d 1 -o "$E2E_TMP/none.pb.gz" 2>"$E2E_TMP/none.err"
	local rc=$?
	kill "$pid"
	cat "$E2E_TMP/none.err"
	expect_eq "exit status" 2 "$rc"
	grep -q 'looked for python' "$E2E_TMP/none.err" || fail "message does not say what was looked for"
	expect_eq "stderr lines" 1 "$(wc -l <"$E2E_TMP/none.err")"
	"$PROF" --calls -o "$E2E_TMP/none2.pb.gz" -- /bin/true 2>"$E2E_TMP/none2.err"
	expect_eq "exit status (-- CMD)" 2 "$?"
	grep -q 'looked for python' "$E2E_TMP/none2.err" || fail "-- CMD: message does not say what was looked for"
}

t_calls_with_heap_two_profiles() {
	need php
	local base=$E2E_TMP/both.pb.gz
	USE_ZEND_DTRACE=1 "$PROF" --heap --calls -o "$base" --top 0 -- php "$PHP_T" >/dev/null ||
		fail "profiler exit status $?"
	[ -s "$E2E_TMP/both.heap.pb.gz" ] || fail "no heap profile"
	[ -s "$E2E_TMP/both.calls.pb.gz" ] || fail "no calls profile"
	expect_eq "alpha calls" 100 "$(pprof_flat "$E2E_TMP/both.calls.pb.gz" calls Calc::alpha)"
	# One run, one process: both profiles name the same single php process.
	local heap_pids calls_pids
	heap_pids=$(pprof_traces "$E2E_TMP/both.heap.pb.gz" | grep -o 'pid=[0-9]*' | sort -u | xargs)
	calls_pids=$(pprof_traces "$E2E_TMP/both.calls.pb.gz" | grep -o 'pid=[0-9]*' | sort -u | xargs)
	[ -n "$heap_pids" ] || fail "no heap samples"
	expect_eq "heap pid labels = calls pid labels" "$calls_pids" "$heap_pids"
	expect_eq "one process" 1 "$(wc -w <<<"$heap_pids")"
	# What is still in use was allocated: totals never invert.
	local alloc inuse
	alloc=$(go tool pprof -symbolize=none -top -sample_index=alloc_space -unit=B "$E2E_TMP/both.heap.pb.gz" 2>/dev/null |
		awk '/ total$/ { for (i = 1; i <= NF; i++) if ($i == "of") { v = $(i + 1); sub(/B$/, "", v); print v } }')
	inuse=$(go tool pprof -symbolize=none -top -sample_index=inuse_space -unit=B "$E2E_TMP/both.heap.pb.gz" 2>/dev/null |
		awk '/ total$/ { for (i = 1; i <= NF; i++) if ($i == "of") { v = $(i + 1); sub(/B$/, "", v); print v } }')
	[ "${alloc:-0}" -gt 0 ] || fail "no allocated bytes: '$alloc'"
	[ "$inuse" -le "$alloc" ] || fail "inuse $inuse > alloc $alloc"
	echo "ok: alloc_space $alloc >= inuse_space $inuse"
}

t_calls_java_exceptions_through_compiled_code() {
	need javac
	local d=$E2E_TMP/javaex f=$E2E_TMP/javaex.pb.gz s=$E2E_TMP/javaex.samples
	{ mkdir -p "$d" && javac -d "$d" tests/targets/CallsEx.java; } || fail "javac failed"
	"$PROF" --calls -o "$f" --top 0 -- java -XX:+ExtendedDTraceProbes -cp "$d" CallsEx \
		>"$E2E_TMP/javaex.out" 2>"$E2E_TMP/javaex.err" || { cat "$E2E_TMP/javaex.err"; fail "profiler exit status"; }
	expect_eq "program output" 50000 "$(cat "$E2E_TMP/javaex.out")"
	calls_samples "$f" >"$s"
	grep -E 'CallsEx\.c[0-9]$' "$s"
	expect_eq "c1 from main" 50000 "$(calls_on_stack "$s" 'CallsEx.main;CallsEx.c1')"
	expect_eq "c2 from c1" 50000 "$(calls_on_stack "$s" 'CallsEx.main;CallsEx.c1;CallsEx.c2')"
	expect_eq "c3 from c2" 50000 "$(calls_on_stack "$s" 'CallsEx.main;CallsEx.c1;CallsEx.c2;CallsEx.c3')"
	expect_eq "c3 anywhere" 50000 "$(pprof_flat "$f" calls CallsEx.c3)"
	# The frames were left without returns: counted as unwound, not lost or stacked up.
	expect_range "unwound frames" 1 150000 "$(pprof_counter_value "$f" call_unwound_frames)"
	expect_eq "depth exceeded" 0 "$(pprof_counter_value "$f" call_depth_exceeded)"
}

# ---- launchers: CMD shows no runtime up front; the exec in its tree runs it (issue 14) ----

# The PHP target's exact counts in profile FILE (php ran by a launcher).
expect_php_counts() { # FILE
	local s=$E2E_TMP/launch.samples
	calls_samples "$1" >"$s"
	cat "$s"
	expect_eq "alpha calls from main" 100 "$(calls_on_stack "$s" 'main;Calc::alpha')"
	expect_eq "beta calls from alpha" 300 "$(calls_on_stack "$s" 'main;Calc::alpha;Calc::beta')"
	expect_eq "sleeper calls" 1 "$(calls_on_stack "$s" 'main;sleeper')"
	expect_eq "main calls" 1 "$(calls_on_stack "$s" 'main')"
	expect_eq "returns matching no entry" 0 "$(pprof_counter_value "$1" call_mismatched_returns)"
}

t_calls_launcher_env_php() {
	need php
	local f=$E2E_TMP/envphp.pb.gz
	# Only the process env starts has the variable: the flag check must read its environment.
	env -u USE_ZEND_DTRACE "$PROF" --calls -o "$f" --top 0 -- env USE_ZEND_DTRACE=1 php "$PHP_T" \
		>"$E2E_TMP/out" 2>"$E2E_TMP/err" || { cat "$E2E_TMP/err"; fail "profiler exit status"; }
	cat "$E2E_TMP/err"
	expect_eq "script output" 5550 "$(cat "$E2E_TMP/out")"
	grep -q 'USE_ZEND_DTRACE' "$E2E_TMP/err" && fail "USE_ZEND_DTRACE warned although php had it"
	expect_php_counts "$f"
}

t_calls_launcher_sh_c_php() {
	need php
	local f=$E2E_TMP/shphp.pb.gz
	env -u USE_ZEND_DTRACE "$PROF" --calls -o "$f" --top 0 -- sh -c "USE_ZEND_DTRACE=1 php $PHP_T" \
		>"$E2E_TMP/out" 2>"$E2E_TMP/err" || { cat "$E2E_TMP/err"; fail "profiler exit status"; }
	cat "$E2E_TMP/err"
	expect_eq "script output" 5550 "$(cat "$E2E_TMP/out")"
	grep -q 'USE_ZEND_DTRACE' "$E2E_TMP/err" && fail "USE_ZEND_DTRACE warned although php had it"
	expect_php_counts "$f"
	# The php process is a child of sh (sh forks unless php is its last command; both count).
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q 'comm:\[php\]' || fail "no php comm label"
}

t_calls_launcher_sh_c_php_without_env_warns() {
	need php
	local f=$E2E_TMP/shphp2.pb.gz
	env -u USE_ZEND_DTRACE "$PROF" --calls -o "$f" --top 0 -- sh -c "php $PHP_T" \
		>/dev/null 2>"$E2E_TMP/err" || { cat "$E2E_TMP/err"; fail "profiler exit status"; }
	cat "$E2E_TMP/err"
	grep -q 'process [0-9]* runs PHP without USE_ZEND_DTRACE=1' "$E2E_TMP/err" ||
		fail "no USE_ZEND_DTRACE warning about the php process"
	expect_eq "calls seen" 0 "$(pprof_flat "$f" calls Calc::alpha)"
}

t_calls_launcher_javap_then_java() {
	need javac
	need javap
	local d=$E2E_TMP/classes f=$E2E_TMP/javap.pb.gz s=$E2E_TMP/javap.samples
	mkdir -p "$d" || fail "mkdir"
	javac -d "$d" tests/targets/Calls.java || fail "javac"
	# A JDK launcher (javap here; javac, jar alike) dlopen()s libjvm.so (no DT_NEEDED names
	# it) and takes the JVM flag as -J….  (javap -version: its task still runs, 400,000 calls
	# under it, in half the time javap of a class took traced call by call; javac took 3 minutes.)
	"$PROF" --calls -o "$f" --top 0 -- sh -c "javap -J-XX:+ExtendedDTraceProbes -version >/dev/null &&
		java -XX:+ExtendedDTraceProbes -cp $d Calls" \
		>"$E2E_TMP/out" 2>"$E2E_TMP/err" || { cat "$E2E_TMP/err"; fail "profiler exit status"; }
	cat "$E2E_TMP/err"
	expect_eq "program output" 5550 "$(cat "$E2E_TMP/out")"
	grep -q 'ExtendedDTraceProbes' "$E2E_TMP/err" && fail "JVM flag warned although both JVMs had it"
	calls_samples "$f" >"$s"
	grep 'Calls\.' "$s"
	expect_eq "Calls.alpha calls from main" 100 "$(calls_on_stack "$s" 'Calls.main;Calls.alpha')"
	expect_eq "Calls.beta calls from alpha" 300 "$(calls_on_stack "$s" 'Calls.main;Calls.alpha;Calls.beta')"
	# (From the samples: javap's profile is large, each go tool pprof pass over it is slow.)
	expect_eq "Calls.beta calls anywhere" 300 "$(awk '$NF ~ /(^|;)Calls\.beta$/ { c += $1 } END { print c + 0 }' "$s")"
	expect_eq "Calls.main calls" 1 "$(awk '$NF == "Calls.main" { c += $1 } END { print c + 0 }' "$s")"
	# The tool's own Java code, seen from javap's first calls on.
	local run='com.sun.tools.javap.JavapTask.run'
	expect_range "javap JavapTask.run calls" 1 100 \
		"$(awk -v fn="$run" 'substr(";" $NF, length(";" $NF) - length(fn)) == ";" fn { c += $1 } END { print c + 0 }' "$s")"
	expect_range "calls under javap JavapTask.run" 10000 1000000000 \
		"$(awk -v fn="$run" 'index(";" $NF ";", ";" fn ";") { c += $1 } END { print c + 0 }' "$s")"
	# Two JVM processes (javap, java) under sh.
	expect_eq "processes with Java calls" 2 "$(awk '{ print $3 }' "$s" | sort -u | wc -l)"
}

t_calls_launcher_no_runtime_exit_2() {
	local f=$E2E_TMP/none.pb.gz
	# CMD runs (nothing up front says it will not start a runtime), then exit 2 at its end; -q:
	# the start lines aside, the error is the one line.
	"$PROF" -q --calls -o "$f" -- sh -c 'echo ran; exit 0' >"$E2E_TMP/out" 2>"$E2E_TMP/err"
	local rc=$?
	cat "$E2E_TMP/err"
	expect_eq "exit status" 2 "$rc"
	expect_eq "CMD ran" ran "$(cat "$E2E_TMP/out")"
	grep -q 'no interpreter with call probes in sh (looked for python' "$E2E_TMP/err" ||
		fail "message does not say what was looked for"
	expect_eq "stderr lines" 1 "$(wc -l <"$E2E_TMP/err")"
	local left=""
	for x in "$E2E_TMP"/* "$E2E_TMP"/.[!.]*; do
		[ -e "$x" ] || continue
		case ${x##*/} in err | out) ;; *) left="$left ${x##*/}" ;; esac
	done
	expect_eq "files left in the output directory" "" "$left"
}
