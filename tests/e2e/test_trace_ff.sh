# -f firefox: --calls as a Firefox Profiler processed profile, read back by tests/e2e/ff_check.py
# (python's json and gzip, written from the format's description): structure, per-thread weights
# against the thread's traced time, and the call tree rebuilt from the sample stacks.

FF_PHP=tests/targets/calls.php
FF_CHECK=tests/e2e/ff_check.py

ff_fact() { # FACTS_FILE KEY
	awk -v k="$2" 'index($0, k " ") == 1 { v = substr($0, length(k) + 2) } END { print v }' "$1"
}

ff_expect_php() { # FACTS_FILE
	expect_eq "Calc::alpha calls" 100 "$(ff_fact "$1" "calls Calc::alpha")"
	expect_eq "Calc::beta calls" 300 "$(ff_fact "$1" "calls Calc::beta")"
	expect_eq "Calc::beta under Calc::alpha" 300 "$(ff_fact "$1" "nested Calc::alpha>Calc::beta")"
	expect_eq "Calc::alpha under main" 100 "$(ff_fact "$1" "nested main>Calc::alpha")"
	expect_eq "sleeper calls" 1 "$(ff_fact "$1" "calls sleeper")"
	expect_eq "main calls" 1 "$(ff_fact "$1" "calls main")"
	expect_eq "threads" 1 "$(ff_fact "$1" threads)"
	expect_eq "ring buffer drops" 0 "$(ff_fact "$1" "drop ringbuf_full")"
	expect_eq "unmatched returns" 0 "$(ff_fact "$1" "drop trace_unmatched_returns")"
	# The weights cover the thread's traced time (within 1 %), which holds sleeper's 200 ms.
	awk '$1 == "thread" {
		split($(NF-1), w, "="); split($NF, s, "=")
		if (s[2] < 200 || w[2] < s[2] * 0.99 || w[2] > s[2] * 1.01) exit 1
		n++
	} END { exit n != 1 }' "$1" || fail "weights do not sum to the thread's traced time"
	echo "ok: weights = traced time"
}

t_trace_ff_php_exact() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/ff.json.gz facts=$E2E_TMP/ff.facts
	USE_ZEND_DTRACE=1 "$PROF" --calls -f firefox -o "$f" -- php "$FF_PHP" \
		>"$E2E_TMP/ff.out" 2>"$E2E_TMP/ff.err" || fail "profiler exit status $?"
	cat "$E2E_TMP/ff.err"
	expect_eq "script output" 5550 "$(head -1 "$E2E_TMP/ff.out")"
	grep -q '^no drops$' "$E2E_TMP/ff.err" || fail "no drop summary printed"
	gzip -t "$f" || fail "not a valid gzip file"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -v '^drop .* 0$' "$facts"
	ff_expect_php "$facts"
	expect_eq "file mode" 600 "$(stat -c %a "$f")"
	# sleeper's own weight (its samples' leaf is sleeper) covers its usleep(200 ms).
	python3 - "$f" <<'PY' || fail "sleeper's self weight is not 200 ms"
import gzip, json, sys
th = json.load(gzip.open(sys.argv[1]))["threads"][0]
st, fr, fn, s = th["stackTable"], th["frameTable"], th["funcTable"], th["stringArray"]
leaf = lambda k: s[fn["name"][fr["func"][st["frame"][k]]]]
w = sum(wt for k, wt in zip(th["samples"]["stack"], th["samples"]["weight"])
        if k is not None and leaf(k) == "sleeper")
print("sleeper self ms", w)
sys.exit(0 if 200 <= w < 2000 else 1)
PY
}

t_trace_ff_plain_json() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/ff.json facts=$E2E_TMP/ffp.facts
	USE_ZEND_DTRACE=1 "$PROF" --calls -f firefox -o "$f" -- php "$FF_PHP" >/dev/null ||
		fail "profiler exit status $?"
	python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" || fail "not plain JSON"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	ff_expect_php "$facts"
}

t_trace_ff_usage() {
	local out=$E2E_TMP/ffbad.err
	"$PROF" --calls --cpu -f firefox -o "$E2E_TMP/y.json.gz" -- /bin/true 2>"$out"
	expect_eq "--calls --cpu -f firefox exit status" 2 "$?"
	grep -q 'records --calls (with --heap, --offcpu) or --cpu alone' "$out" || fail "message does not say what -f firefox records"
	[ ! -e "$E2E_TMP/y.json.gz" ] || fail "a file was written"
	"$PROF" --calls -f firefx -- /bin/true 2>"$out"
	expect_eq "unknown format exit status" 2 "$?"
	grep -q 'firefox, codetracer' "$out" || fail "unknown-format message does not list firefox"
}

# --heap: allocations on the call stack open at the time, frees negative and paired by address
# (ff_check.py fails on a free that pairs with no allocation of its size).  heap_calls.php
# under USE_ZEND_ALLOC=0 (PHP's strings from malloc): keep() makes 8 strings of 1 MiB, kept to
# the end; churn() one of 2 MiB, freed as it returns, 4 times.
t_trace_ff_heap_php() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/ffh.json.gz facts=$E2E_TMP/ffh.facts
	USE_ZEND_DTRACE=1 USE_ZEND_ALLOC=0 "$PROF" --calls --heap -f firefox -o "$f" \
		-- php tests/targets/heap_calls.php >"$E2E_TMP/ffh.out" 2>"$E2E_TMP/ffh.err" ||
		{ cat "$E2E_TMP/ffh.err"; fail "profiler exit status $?"; }
	expect_eq "script output" 8388614 "$(head -1 "$E2E_TMP/ffh.out")"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -v '^drop .* 0$' "$facts"
	expect_eq "keep calls" 1 "$(ff_fact "$facts" "calls keep")"
	expect_eq "churn calls" 4 "$(ff_fact "$facts" "calls churn")"
	expect_eq "heap records lost" 0 "$(ff_fact "$facts" "drop ringbuf_full")"
	# Each string is its bytes plus PHP's header (at most 1 KiB more).
	local n bytes
	read -r n bytes <<<"$(ff_fact "$facts" "large_alloc keep")"
	expect_eq "large allocations in keep" 8 "$n"
	expect_range "bytes allocated in keep" $((8 << 20)) $(((8 << 20) + 8192)) "$bytes"
	read -r n bytes <<<"$(ff_fact "$facts" "large_alloc churn")"
	expect_eq "large allocations in churn" 4 "$n"
	expect_range "bytes allocated in churn" $((8 << 20)) $(((8 << 20) + 4096)) "$bytes"
	# churn's strings die inside churn (as it returns), keep's do not die inside keep.
	expect_eq "frees in churn" "4 $bytes" "$(ff_fact "$facts" "large_free churn")"
	expect_eq "frees in keep" "" "$(ff_fact "$facts" "large_free keep")"
}

# Java (tests/targets/Calls.java, the same counts as calls.php): the call tree rebuilt from the
# samples of the thread that ran main, among the JVM's other threads, each its own thread.
t_trace_ff_java() {
	command -v javac >/dev/null || fail "javac is not installed"
	local d=$E2E_TMP/ffjava f=$E2E_TMP/ffjava.json.gz facts=$E2E_TMP/ffjava.facts
	{ mkdir -p "$d" && javac -d "$d" tests/targets/Calls.java; } || fail "javac failed"
	"$PROF" --calls -f firefox -o "$f" -- java -XX:+ExtendedDTraceProbes -cp "$d" Calls \
		>"$E2E_TMP/ffjava.out" 2>"$E2E_TMP/ffjava.err" ||
		{ cat "$E2E_TMP/ffjava.err"; fail "profiler exit status"; }
	expect_eq "program output" 5550 "$(head -1 "$E2E_TMP/ffjava.out")"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -E 'Calls\.|^threads' "$facts"
	grep '^drop' "$facts" | grep -v ' 0$'
	expect_eq "Calls.alpha calls" 100 "$(ff_fact "$facts" "calls Calls.alpha")"
	expect_eq "Calls.beta calls" 300 "$(ff_fact "$facts" "calls Calls.beta")"
	expect_eq "Calls.beta under Calls.alpha" 300 "$(ff_fact "$facts" "nested Calls.alpha>Calls.beta")"
	expect_eq "Calls.alpha under Calls.main" 100 "$(ff_fact "$facts" "nested Calls.main>Calls.alpha")"
	expect_eq "Calls.main calls" 1 "$(ff_fact "$facts" "calls Calls.main")"
	expect_eq "ring buffer drops" 0 "$(ff_fact "$facts" "drop ringbuf_full")"
	expect_range "threads" 2 1000 "$(ff_fact "$facts" threads)"
	# Every thread's weights are its traced time.
	awk '$1 == "thread" {
		split($(NF-1), w, "="); split($NF, s, "=")
		if (w[2] < s[2] * 0.99 - 1e-6 || w[2] > s[2] * 1.01 + 1e-6) exit 1
	}' "$facts" || fail "a thread's weights do not sum to its traced time"
}

# Markers: PHP's exception probes (tests/targets/exceptions.php throws and catches exactly 25
# MarkerTestError), each an instant marker on the script's thread, checked by ff_check.py (every
# marker's columns, phases, times inside its thread, data of a schema's type).  They fire
# without USE_ZEND_DTRACE; with it the calls are there too.
t_trace_ff_markers_php() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/ffm.json.gz facts=$E2E_TMP/ffm.facts pid
	USE_ZEND_DTRACE=1 "$PROF" --calls -f firefox -o "$f" -- php tests/targets/exceptions.php \
		>"$E2E_TMP/ffm.out" 2>"$E2E_TMP/ffm.err" ||
		{ cat "$E2E_TMP/ffm.err"; fail "profiler exit status"; }
	expect_eq "script output" 25 "$(head -1 "$E2E_TMP/ffm.out")"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -E '^(marker|threads|thread )' "$facts"
	expect_eq "threads" 1 "$(ff_fact "$facts" threads)"
	expect_eq "marker drops" 0 "$(ff_fact "$facts" "drop marker_lost")"
	expect_eq "ring buffer drops" 0 "$(ff_fact "$facts" "drop ringbuf_full")"
	expect_eq "unreadable marker texts" 0 "$(ff_fact "$facts" "drop marker_read_fail")"
	pid=$(awk '$1 == "thread" { print $2 }' "$facts")
	expect_eq "thrown markers" 25 "$(ff_fact "$facts" "marker Exception_thrown MarkerTestError")"
	expect_eq "caught markers" 25 "$(ff_fact "$facts" "marker Exception_caught MarkerTestError")"
	expect_eq "thrown on the script's thread" 25 \
		"$(ff_fact "$facts" "marker_tid Exception_thrown MarkerTestError $pid")"
	expect_eq "caught on the script's thread" 25 \
		"$(ff_fact "$facts" "marker_tid Exception_caught MarkerTestError $pid")"
	expect_eq "exception markers in all" 50 \
		"$(awk '$1 == "marker" && $2 ~ /^Exception_/ { n += $NF } END { print n + 0 }' "$facts")"
	expect_eq "instant exception markers" 25 "$(ff_fact "$facts" "marker_phase Exception_thrown 0")"
	expect_eq "thrower calls" 25 "$(ff_fact "$facts" "calls thrower")"
	# Each throw is inside thrower, each catch after it returned: times interleave.
	python3 - "$f" <<'PY' || fail "thrown/caught markers are not in order"
import gzip, json, sys
th = json.load(gzip.open(sys.argv[1]))["threads"][0]
m, s = th["markers"], th["stringArray"]
seq = [s[m["name"][i]] for i in sorted(range(m["length"]), key=lambda i: m["startTime"][i])]
sys.exit(0 if seq == ["Exception thrown", "Exception caught"] * 25 else 1)
PY
}

# CPython 3.11's import probes: tests/targets/imports.py imports 4 modules written here (one of
# them from inside another) and misses one; each import is an interval marker on the main
# thread, the nested one inside its importer's, the missing one found "no".
t_trace_ff_markers_python311() {
	local py=/usr/bin/python3.11 d=$E2E_TMP/ffmods f=$E2E_TMP/ffpy.json.gz facts=$E2E_TMP/ffpy.facts
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	mkdir -p "$d" || fail "mkdir"
	for m in a b c d; do echo "NAME = 'ffmk_$m'" >"$d/ffmk_$m.py"; done
	echo "import ffmk_c" >>"$d/ffmk_b.py"
	"$PROF" --calls -f firefox -o "$f" -- "$py" tests/targets/imports.py "$d" \
		>"$E2E_TMP/ffpy.out" 2>"$E2E_TMP/ffpy.err" ||
		{ cat "$E2E_TMP/ffpy.err"; fail "profiler exit status"; }
	expect_eq "script output" "ffmk_a ffmk_b ffmk_c ffmk_d" "$(head -1 "$E2E_TMP/ffpy.out")"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -E '^(marker.* ffmk_|threads|thread )' "$facts"
	expect_eq "marker drops" 0 "$(ff_fact "$facts" "drop marker_lost")"
	expect_eq "ring buffer drops" 0 "$(ff_fact "$facts" "drop ringbuf_full")"
	local pid
	pid=$(awk '$1 == "thread" && $2 == $3 { print $2 }' "$facts")
	for m in a b c d missing; do
		expect_eq "import markers of ffmk_$m" 1 "$(ff_fact "$facts" "marker Import ffmk_$m")"
		expect_eq "ffmk_$m imported on the main thread" 1 \
			"$(ff_fact "$facts" "marker_tid Import ffmk_$m $pid")"
	done
	python3 - "$f" <<'PY' || fail "import intervals are wrong"
import gzip, json, sys
th = [t for t in json.load(gzip.open(sys.argv[1]))["threads"] if t["isMainThread"]][0]
m = th["markers"]
iv = {m["data"][i]["module"]: (m["phase"][i], m["startTime"][i], m["endTime"][i],
                               m["data"][i].get("found"))
      for i in range(m["length"]) if m["data"][i]["module"].startswith("ffmk_")}
print(iv)
assert all(v[0] == 1 and v[1] <= v[2] for v in iv.values()), "not intervals"
assert iv["ffmk_b"][1] <= iv["ffmk_c"][1] <= iv["ffmk_c"][2] <= iv["ffmk_b"][2], "c not in b"
assert iv["ffmk_a"][2] <= iv["ffmk_b"][1] and iv["ffmk_b"][2] <= iv["ffmk_d"][1], "order"
assert [iv["ffmk_" + k][3] for k in "abcd"] == ["yes"] * 4, "found"
assert iv["ffmk_missing"][3] == "no", "a missing module was found"
PY
}

# HotSpot has no exception probe: its class loads (hotspot:class__loaded, fired without
# -XX:+ExtendedDTraceProbes too) are Java's import markers.  Calls.java's own class is loaded
# once, on the thread that runs main.
t_trace_ff_markers_java() {
	command -v javac >/dev/null || fail "javac is not installed"
	local d=$E2E_TMP/ffmjava f=$E2E_TMP/ffmjava.json.gz facts=$E2E_TMP/ffmjava.facts tid
	{ mkdir -p "$d" && javac -d "$d" tests/targets/Calls.java; } || fail "javac failed"
	"$PROF" --calls -f firefox -o "$f" -- java -XX:+ExtendedDTraceProbes -cp "$d" Calls \
		>"$E2E_TMP/ffmjava.out" 2>"$E2E_TMP/ffmjava.err" ||
		{ cat "$E2E_TMP/ffmjava.err"; fail "profiler exit status"; }
	expect_eq "program output" 5550 "$(head -1 "$E2E_TMP/ffmjava.out")"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	expect_eq "marker drops" 0 "$(ff_fact "$facts" "drop marker_lost")"
	expect_eq "Calls loaded" 1 "$(ff_fact "$facts" "marker Class_load Calls")"
	expect_range "classes loaded" 100 100000 \
		"$(awk '$1 == "marker" && $2 == "Class_load" { n += $NF } END { print n + 0 }' "$facts")"
	# The thread whose samples hold Calls.main.
	tid=$(python3 - "$f" <<'PY'
import gzip, json, sys
for th in json.load(gzip.open(sys.argv[1]))["threads"]:
    if "Calls.main" in th["stringArray"]:
        print(th["tid"])
PY
)
	expect_eq "Calls loaded on main's thread" 1 "$(ff_fact "$facts" "marker_tid Class_load Calls $tid")"
}

# The same with -p: the probes attached to a running PHP (no USE_ZEND_DTRACE: no calls, the
# markers all the same), which throws its 25 only after the profiler is in.
t_trace_ff_markers_php_pid() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/ffmp.json.gz facts=$E2E_TMP/ffmp.facts
	start_waiting_target "$E2E_TMP/ffmp.target" php tests/targets/exceptions.php wait
	start_profiler "$E2E_TMP/ffmp.log" --calls -f firefox -o "$f" -p "$TARGET_PID"
	echo go >&"$TARGET_IN"
	wait "$PROF_PID" || { cat "$E2E_TMP/ffmp.log"; fail "profiler exit status"; }
	wait "$TARGET_PID"
	expect_eq "script output" 25 "$(tail -1 "$E2E_TMP/ffmp.target")"
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -E '^(marker|threads|thread )' "$facts"
	expect_eq "marker drops" 0 "$(ff_fact "$facts" "drop marker_lost")"
	expect_eq "thrown markers" 25 \
		"$(ff_fact "$facts" "marker_tid Exception_thrown MarkerTestError $TARGET_PID")"
	expect_eq "caught markers" 25 \
		"$(ff_fact "$facts" "marker_tid Exception_caught MarkerTestError $TARGET_PID")"
}

# --cpu alone: each sample its own stack (weightType "samples", weight 1), native frames named,
# tests/targets/cpu_target.c's threads: hot_three/hot_one 3:1, the spinner, kernel frames.
t_trace_ff_cpu() {
	local f=$E2E_TMP/ffcpu.json.gz facts=$E2E_TMP/ffcpu.facts three one
	"$PROF" --cpu=499 -f firefox -o "$f" -- "$TARGETS/cpu_target" 4 >"$E2E_TMP/ffcpu.out" \
		2>"$E2E_TMP/ffcpu.err" || { cat "$E2E_TMP/ffcpu.err"; fail "profiler exit status"; }
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -E '^thread|^threads|^cpu_in (hot|spin|work)' "$facts"
	expect_eq "threads" 3 "$(ff_fact "$facts" threads)"
	three=$(ff_fact "$facts" "cpu_in hot_three") one=$(ff_fact "$facts" "cpu_in hot_one")
	[ "${one:-0}" -gt 0 ] || fail "no samples in hot_one"
	expect_range "hot_three/hot_one" 2.0 4.5 "$(awk -v a="$three" -v b="$one" 'BEGIN { print a / b }')"
	expect_range "spin_other samples" 1 100000 "$(ff_fact "$facts" "cpu_in spin_other")"
	grep -q '^cpu_in \[k\] ' "$facts" || fail "no kernel frames"
	# Every sample weighs 1: each thread's weights are its sample count.
	awk '$1 == "thread" { split($(NF-2), n, "="); split($(NF-1), w, "=")
		if (n[2] + 0 != w[2] + 0) exit 1 }' "$facts" || fail "weights are not the sample counts"
	# work() is called by the three busy functions only: its samples are among theirs (and
	# make most of them).
	local busy
	busy=$(($(ff_fact "$facts" "cpu_in hot_three") + $(ff_fact "$facts" "cpu_in hot_one") + $(ff_fact "$facts" "cpu_in spin_other")))
	expect_range "work's samples" "$((busy * 9 / 10))" "$busy" "$(ff_fact "$facts" "cpu_in work")"
	expect_eq "ring buffer drops" 0 "$(ff_fact "$facts" "drop ringbuf_full")"
}

# --calls --offcpu: off-CPU periods as frames "off-CPU: idle" / "off-CPU: runnable" under the call
# that waited (calls.php's sleeper(): usleep 200 ms), weighted by their length; the calls exact.
t_trace_ff_offcpu_php() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/ffoff.json.gz facts=$E2E_TMP/ffoff.facts
	USE_ZEND_DTRACE=1 "$PROF" --calls --offcpu -f firefox -o "$f" -- php "$FF_PHP" >/dev/null \
		2>"$E2E_TMP/ffoff.err" || { cat "$E2E_TMP/ffoff.err"; fail "profiler exit status"; }
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	grep -E 'off-CPU|^thread' "$facts"
	ff_expect_php "$facts"
	expect_range "off-CPU frames under sleeper" 1 10 "$(ff_fact "$facts" "nested sleeper>off-CPU: idle")"
	# Every thread's weights are still its traced time.
	awk '$1 == "thread" {
		split($(NF-1), w, "="); split($NF, s, "=")
		if (w[2] < s[2] * 0.99 - 1e-6 || w[2] > s[2] * 1.01 + 1e-6) exit 1
	}' "$facts" || fail "a thread's weights do not sum to its traced time"
}
