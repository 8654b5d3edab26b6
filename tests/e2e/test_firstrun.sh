# The first five minutes (issue 25): our output never mixes with the program's (stdout is the
# program's, or the data asked for with -o -), and a run says on stderr what it does, what it
# costs, where the result goes, what it wrote; on a terminal, a status line.

# "$PROF" ARGS… -- sh -c 'printf hello': stdout is exactly the program's.
first_hello() { # TAG ARGS…
	local tag=$1
	shift
	"$PROF" "$@" -o "$E2E_TMP/$tag.pb.gz" -- sh -c 'printf hello' >"$E2E_TMP/$tag.out" \
		2>"$E2E_TMP/$tag.err" || { cat "$E2E_TMP/$tag.err"; fail "$tag: exit status $?"; }
	cat "$E2E_TMP/$tag.err"
	cmp -s "$E2E_TMP/$tag.out" <(printf hello) ||
		fail "$tag: stdout is not the program's 'hello': $(head -c 300 "$E2E_TMP/$tag.out" | cat -v)"
	echo "ok: $tag: stdout is exactly hello"
	[ -s "$E2E_TMP/$tag.pb.gz" ] || fail "$tag: no profile"
}

t_first_stdout_is_the_programs() {
	first_hello cpu --cpu
	first_hello quiet -q --cpu
	first_hello heap --heap
	# -q: nothing but errors, and a clean run has none.
	[ ! -s "$E2E_TMP/quiet.err" ] || fail "-q wrote to stderr: $(cat -v "$E2E_TMP/quiet.err")"
	echo "ok: -q: stderr empty"
	# The summary went to stderr instead.
	grep -q '^cpu profile: ' "$E2E_TMP/cpu.err" || fail "no summary on stderr"
}

# The issue's case: a compressor writing to stdout under the profiler.
t_first_gzip_to_stdout_intact() {
	local d=$E2E_TMP
	seq 1 200000 >"$d/nums.txt"
	"$PROF" -q --cpu -o "$d/p.pb.gz" -- gzip -9 -c "$d/nums.txt" >"$d/nums.txt.gz" ||
		fail "exit status $?"
	gzip -t "$d/nums.txt.gz" 2>"$d/gzip.err" || fail "gzip -t: $(cat "$d/gzip.err")"
	cmp -s "$d/nums.txt" <(gzip -dc "$d/nums.txt.gz") || fail "the .gz does not hold nums.txt"
	echo "ok: the .gz passes gzip -t and holds nums.txt"
}

# -f text -o FILE: the report is written once, to FILE.
t_first_text_report_once() {
	local f=$E2E_TMP/r.txt
	"$PROF" --cpu -f text -o "$f" --top 5 -- "$TARGETS/cpu_target" 1 >"$E2E_TMP/out" \
		2>"$E2E_TMP/err" || fail "exit status $?"
	cat "$E2E_TMP/err"
	grep -q '^cpu profile: 1 process' "$f" || fail "no report in $f: $(head -3 "$f")"
	grep -q '  work$' "$f" || fail "work (the target's hot function) not in the report"
	! grep -q '^cpu profile: \|  work$\|drops' "$E2E_TMP/out" "$E2E_TMP/err" ||
		fail "the report is also on stdout or stderr"
	grep -q "^bpftrace-prof: wrote cpu profile to $f\$" "$E2E_TMP/err" || fail "no 'wrote' line"
	echo "ok: the report only in $f"
}

# The stderr lines of a default run: what, how, where, how to stop; the cost of exact heap
# tracing; the files written (escaped: a path is bytes anyone may have chosen).
t_first_says_what_it_does() {
	local err=$E2E_TMP/heap.err esc f pid
	first_hello heap --heap
	expect_one_line "start" '^bpftrace-prof: profiling heap \(every allocation\) of sh and its children$' "$err"
	expect_one_line "cost" '^bpftrace-prof: exact heap tracing: every malloc and free is probed \(slows allocation-heavy programs several-fold\); --sample-bytes N samples instead$' "$err"
	expect_one_line "destination" "^bpftrace-prof: writing $E2E_TMP/heap.pb.gz at the end; Ctrl-C to stop\$" "$err"
	expect_eq "last line" "bpftrace-prof: wrote heap profile to $E2E_TMP/heap.pb.gz" "$(tail -1 "$err")"
	head -1 "$err" | grep -q '^bpftrace-prof: profiling heap ' || fail "the start line is not the first"
	# Sampled: no cost to say.  Two modes, two files; a path with ESC in it shown escaped.
	esc=$E2E_TMP/a$'\033'b.pb.gz
	"$PROF" --heap --sample-bytes 4096 --cpu -o "$esc" -- sh -c 'printf hello' >/dev/null \
		2>"$E2E_TMP/two.err" || fail "exit status $?"
	cat -v "$E2E_TMP/two.err"
	! grep -q $'\033' "$E2E_TMP/two.err" || fail "a raw ESC on stderr"
	! grep -q 'exact heap tracing' "$E2E_TMP/two.err" || fail "a cost line for sampled heap"
	grep -qxF 'bpftrace-prof: profiling heap (sampled in the program by our preloaded sampler: about one allocation per 4096 bytes; no allocator probe) and cpu (99 Hz) of sh and its children' \
		"$E2E_TMP/two.err" || fail "no start line for heap and cpu"
	for m in heap cpu; do
		f="$E2E_TMP/a\\x1bb.$m.pb.gz"
		grep -qxF "bpftrace-prof: wrote $m profile to $f" "$E2E_TMP/two.err" || fail "no 'wrote' line for $f"
		[ -s "$E2E_TMP/a"$'\033'"b.$m.pb.gz" ] || fail "no $m profile"
	done
	echo "ok: two 'wrote' lines, escaped"
	# -p with -d: the process named, the duration instead of Ctrl-C.
	sleep 30 &
	pid=$!
	"$PROF" --cpu -p "$pid" -d 0.5 -o "$E2E_TMP/p.pb.gz" --top 0 2>"$E2E_TMP/p.err" || fail "exit status $?"
	kill "$pid"
	cat "$E2E_TMP/p.err"
	expect_one_line "-p start" "^bpftrace-prof: profiling cpu \(99 Hz\) of pid $pid \(sleep\) for 0.5 s\$" "$E2E_TMP/p.err"
	expect_one_line "-d: no Ctrl-C" "^bpftrace-prof: writing $E2E_TMP/p.pb.gz at the end\$" "$E2E_TMP/p.err"
}

# Continuous mode: at the end, how many profiles went where (each one with -v).
t_first_says_interval_files() {
	local d=$E2E_TMP/series n
	"$PROF" --cpu --interval 1 --output-dir "$d" -d 2.5 -- "$TARGETS/cpu_target" 4 >/dev/null \
		2>"$E2E_TMP/err" || fail "exit status $?"
	cat "$E2E_TMP/err"
	expect_one_line "start" "^bpftrace-prof: writing a profile per mode every 1 s to $d/\$" "$E2E_TMP/err"
	n=$(find "$d" -name '*.cpu.pb.gz' | wc -l)
	[ "$n" -ge 2 ] || fail "only $n profiles in $d"
	expect_eq "last line" "bpftrace-prof: wrote $n profiles to $d" "$(tail -1 "$E2E_TMP/err")"
}

# A run of PROF_ARGS under a pseudo-terminal (script(1)); what the terminal got in $E2E_TMP/TAG.
on_a_terminal() { # TAG SHELL-COMMAND
	command -v script >/dev/null || fail "script is not installed (util-linux)"
	script -qefc "$2" "$E2E_TMP/$1" </dev/null >/dev/null || fail "$1: exit status $?"
	cat -v "$E2E_TMP/$1"
}

# The status line: drawn in place on a terminal (and cleared before the next line), absent
# when stderr is a file, and with -q.
t_first_status_line_on_a_terminal() {
	local pid cmd re='bpftrace-prof: 0:0[0-9] elapsed, [0-9,]+ events, [0-9,]+ samples, [0-9,]+ drops'
	"$TARGETS/cpu_target" 30 >/dev/null &
	pid=$!
	cmd=$(printf '%q ' "$PROF" --cpu -p "$pid" -d 1.5 -o "$E2E_TMP/t.pb.gz" --top 0)
	on_a_terminal tty "$cmd"
	grep -qE $'\r\033\\[K'"$re" "$E2E_TMP/tty" || fail "no status line on the terminal"
	grep -qE "[0-9] samples, " "$E2E_TMP/tty" || fail "no samples counted"
	# Cleared before the next line: the 'wrote' line starts a line of its own.
	grep -qF $'\r\033[Kbpftrace-prof: wrote cpu profile to ' "$E2E_TMP/tty" ||
		fail "the status line was not cleared before the 'wrote' line"
	echo "ok: status line drawn and cleared"
	on_a_terminal file "$cmd 2>$(printf '%q' "$E2E_TMP/stderr.txt")"
	cat -v "$E2E_TMP/stderr.txt"
	grep -q 'wrote cpu profile' "$E2E_TMP/stderr.txt" || fail "stderr to a file: no 'wrote' line"
	! grep -qE "$re" "$E2E_TMP/stderr.txt" "$E2E_TMP/file" || fail "a status line with stderr in a file"
	! grep -q $'\033' "$E2E_TMP/stderr.txt" || fail "an escape sequence in the stderr file"
	on_a_terminal quiet "$cmd -q"
	! grep -qE "$re" "$E2E_TMP/quiet" || fail "a status line with -q"
	kill "$pid"
	echo "ok: no status line into a file or with -q"
	# -- CMD: not among the lines CMD writes to the terminal; drawn when its output goes elsewhere.
	cmd=$(printf '%q ' "$PROF" --cpu -d 1.5 -o "$E2E_TMP/c.pb.gz" --top 0 -- "$TARGETS/cpu_target" 30)
	on_a_terminal cmdtty "$cmd"
	! grep -qE "$re" "$E2E_TMP/cmdtty" || fail "a status line among CMD's lines on the terminal"
	on_a_terminal cmdfile "$cmd >/dev/null"
	grep -qE "$re" "$E2E_TMP/cmdfile" || fail "no status line with CMD's output in a file"
	echo "ok: -- CMD: a status line only when its output is not on the terminal"
}
