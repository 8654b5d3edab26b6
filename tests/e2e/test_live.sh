# --live end to end: the profiler runs in a detached tmux session of a known size (its own tmux
# server, on a socket in the test's scratch directory), the test reads the screen with
# capture-pane and quits with send-keys, as a user would.

CT=build/targets/cpu_target

# live_start NAME COLS ROWS ARGS…: run "$PROF ARGS…" in a new tmux server; once it exits the
# pane's shell writes its exit status to $E2E_TMP/NAME.rc and SAME/CHANGED to NAME.tty (the
# terminal's settings before and after), then stays until the test kills the server.
live_start() {
	local name=$1 cols=$2 rows=$3 bin cmd
	shift 3
	command -v tmux >/dev/null || fail "tmux is missing (scripts/install-deps.sh test installs it)"
	bin=$(realpath "${PROF:?}") || fail "no profiler at $PROF"
	LIVE_SOCK="$E2E_TMP/tmux-$name.sock"
	cmd="before=\$(stty -g); $bin $*; rc=\$?; after=\$(stty -g)"
	cmd="$cmd; [ \"\$before\" = \"\$after\" ] && echo SAME >$E2E_TMP/$name.tty || echo CHANGED >$E2E_TMP/$name.tty"
	cmd="$cmd; echo \$rc >$E2E_TMP/$name.rc; exec sleep 600"
	tmux -S "$LIVE_SOCK" -f /dev/null new-session -d -s live -x "$cols" -y "$rows" -c "$PWD" \
		"$cmd" || fail "tmux new-session failed"
	# Our own server only: nothing else of the machine's tmux is touched.  (run.sh's own EXIT
	# trap, which this replaces, kills the test's background jobs: so does this one.)
	trap 'tmux -S "$LIVE_SOCK" kill-server 2>/dev/null; rm -f "$LIVE_SOCK"; kill $(jobs -p) 2>/dev/null' EXIT
}

live_screen() {
	tmux -S "$LIVE_SOCK" capture-pane -p -t live
}

# live_wait_screen PATTERN SECONDS: until the screen matches (bounded, not a timing assertion).
live_wait_screen() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		live_screen | grep -Eq "$1" && return 0
		sleep 0.1
	done
	live_screen
	return 1
}

# live_wait_exit NAME SECONDS: until the profiler has exited; prints its exit status.
live_wait_exit() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -s "$E2E_TMP/$1.rc" ] && { cat "$E2E_TMP/$1.rc"; return 0; }
		sleep 0.1
	done
	live_screen
	fail "the profiler did not exit"
}

t_live_top_view_q_writes_profile() {
	local f=$E2E_TMP/live.pb.gz screen rc
	live_start q 160 80 --cpu --live -o "$f" -- "$CT" 30
	live_wait_screen '^interval 2, ' 60 || fail "no second refresh"
	screen=$(live_screen)
	printf '%s\n' "$screen"
	grep -q -- "--cpu --live -o $f -- $CT 30" <<<"$screen" || fail "command line not shown"
	grep -Eq '^cpu +cpu [0-9.]+ [mu]?s \([0-9.]+% of one CPU\)' <<<"$screen" || fail "cpu total line"
	grep -Eq '^(no drops|drops: )' <<<"$screen" || fail "drops line"
	# The process table: the target by name, with its share of the cpu.
	grep -Eq '^ +[0-9]+ +[0-9.]+ [mu]?s +[0-9.]+%  cpu_target$' <<<"$screen" || fail "cpu_target row"
	grep -Eq '^ +%OWN +%TOTAL +OWN +TOTAL  FUNCTION \(by own cpu\)' <<<"$screen" || fail "own table"
	grep -Eq '^ +%OWN +%TOTAL +OWN +TOTAL  FUNCTION \(by total cpu\)' <<<"$screen" || fail "total table"
	# The target's functions: work is the leaf, hot_three and hot_one its callers (total).
	grep -Eq '  work$' <<<"$screen" || fail "work not on the screen"
	grep -Eq '  hot_three$' <<<"$screen" || fail "hot_three not on the screen"
	grep -Eq '  hot_one$' <<<"$screen" || fail "hot_one not on the screen"
	echo "ok: the screen shows the target's process and functions"

	tmux -S "$LIVE_SOCK" send-keys -t live q
	rc=$(live_wait_exit q 60)
	expect_eq "exit status after q" 0 "$rc"
	expect_eq "terminal settings restored" SAME "$(cat "$E2E_TMP/q.tty")"
	# Back on the normal screen: the end-of-run summary, not the view.
	live_wait_screen '^cpu profile: ' 10 || fail "no summary on the normal screen"
	live_screen | grep -q 'q: quit, m: next mode' && fail "the live view is still on the screen"
	# The whole run's profile, decoded independently.
	[ -s "$f" ] || fail "no profile at $f"
	go tool pprof -symbolize=none -raw "$f" >/dev/null 2>&1 || fail "go tool pprof cannot read $f"
	[ "$(pprof_cum "$f" samples hot_three)" -gt 0 ] || fail "no hot_three samples in $f"
	[ "$(pprof_cum "$f" samples hot_one)" -gt 0 ] || fail "no hot_one samples in $f"
	echo "ok: q wrote the profile"
}

# With --output-dir the view shows each interval and the files are written as without --live;
# Ctrl-C stops like q and the terminal comes back too.
t_live_output_dir_and_ctrl_c() {
	local d=$E2E_TMP/out rc n
	live_start c 100 40 --cpu --live --interval 1 --output-dir "$d" -- "$CT" 30
	live_wait_screen '^interval 3, ' 60 || fail "no third refresh"
	# The third screen shows the third interval only: the two before it (about 1 s each) are
	# in the elapsed time, not in the totals (a screen of the run so far would cover it all).
	live_screen | grep -E '^interval 3, ' |
		awk '{ for (i = 1; i < NF; i++) { if ($i == "elapsed") e = $(i + 1); if ($i == "over") o = $(i + 1) } }
			END { if (!(e - o >= 1)) { print "elapsed " e ", totals over " o; exit 1 } }' ||
		fail "the third screen covers more than its interval"
	tmux -S "$LIVE_SOCK" send-keys -t live C-c
	rc=$(live_wait_exit c 60)
	expect_eq "exit status after Ctrl-C" 0 "$rc"
	expect_eq "terminal settings restored" SAME "$(cat "$E2E_TMP/c.tty")"
	n=$(find "$d" -name '*.cpu.pb.gz' | wc -l)
	[ "$n" -ge 3 ] || fail "expected at least 3 interval files in $d, got $n"
	for f in "$d"/*.cpu.pb.gz; do
		go tool pprof -symbolize=none -raw "$f" >/dev/null 2>&1 || fail "go tool pprof cannot read $f"
	done
	echo "ok: $n interval files"
}

t_live_needs_a_terminal() {
	local rc=0
	"$PROF" --cpu --live -- "$CT" 1 >"$E2E_TMP/out" 2>"$E2E_TMP/err" || rc=$?
	expect_eq "exit status without a terminal" 2 "$rc"
	expect_eq "error lines" 1 "$(wc -l <"$E2E_TMP/err")"
	grep -q -- '--live needs a terminal on stdout' "$E2E_TMP/err" || fail "message: $(cat "$E2E_TMP/err")"
}

# A process named with escape sequences (tests/targets/evil_comm.c: ESC "]0;pwn" BEL, a title
# change, then ESC "[31m" and "é"): shown escaped, its é kept; the pane's title is not changed.
t_live_hostile_comm_escaped() {
	local out=$E2E_TMP/evil.out pid screen
	build/targets/evil_comm 60 >"$out" 2>&1 &
	pid=$!
	wait_for_line "$out" READY 10 || fail "evil_comm never became ready"
	live_start e 120 40 --cpu --live -p "$pid"
	live_wait_screen 'PROCESS \(1\)' 60 || fail "no process table"
	live_wait_screen "^ +$pid " 30 || fail "no row of $pid"
	screen=$(live_screen)
	printf '%s\n' "$screen"
	grep -qF '\x1b]0;pwn\x07\x1b[31mé' <<<"$screen" || fail "the name is not shown escaped"
	[ "$(tmux -S "$LIVE_SOCK" display-message -p -t live '#{pane_title}')" != pwn ] ||
		fail "the target's name set the terminal's title"
	tmux -S "$LIVE_SOCK" send-keys -t live q
	expect_eq "exit status after q" 0 "$(live_wait_exit e 60)"
}

# t ranks by the mode's next sample type (a --heap server's in-use is empty: its allocations
# are one key away); the header says so.  Here --cpu: cpu, then samples, then cpu again.
t_live_t_cycles_sample_types() {
	live_start t 140 50 --cpu --live -- "$CT" 30
	live_wait_screen 'FUNCTION \(by own cpu\)' 60 || fail "no own table by cpu"
	live_screen | grep -q 'q: quit, m: next mode, t: next type' || fail "t not in the header"
	tmux -S "$LIVE_SOCK" send-keys -t live t
	live_wait_screen 'FUNCTION \(by own samples\)' 30 || fail "t did not switch to samples"
	live_screen | grep -Eq '^ +[0-9.]+% +[0-9.]+% +[0-9]+ +[0-9]+  work$' ||
		{ live_screen; fail "the work row is not in samples"; }
	tmux -S "$LIVE_SOCK" send-keys -t live t
	live_wait_screen 'FUNCTION \(by own cpu\)' 30 || fail "t did not come back to cpu"
	tmux -S "$LIVE_SOCK" send-keys -t live q
	expect_eq "exit status after q" 0 "$(live_wait_exit t 60)"
}

# --heap: below the heap's tables, the stacks whose memory in use grew over the last intervals
# (tests/targets/growing.c: leak_step keeps 400,000 bytes/s, at every end); q, and the summary
# on the normal screen lists them too.
t_live_heap_growth() {
	local f=$E2E_TMP/grow.pb.gz screen
	live_start g 150 50 --heap --live --interval 1 --growth-intervals 2 -o "$f" -- build/targets/growing 30
	live_wait_screen '^grew over the last 2 intervals \(' 60 || fail "no growth over two intervals"
	screen=$(live_screen)
	printf '%s\n' "$screen"
	grep -Eq '^ +GROWN +PER SECOND +IN USE MONO +PID  STACK \(leaf first\)$' <<<"$screen" ||
		fail "no growth header"
	# about 800,000 bytes over two 1 s intervals (400,000 B/s), at every end
	grep -Eq '^ +[0-9.]+ KiB +[0-9.]+ KiB/s +[0-9.]+ [KM]iB +yes +[0-9]+  leak_step < main' <<<"$screen" ||
		fail "no monotonic leak_step row"
	tmux -S "$LIVE_SOCK" send-keys -t live q
	expect_eq "exit status after q" 0 "$(live_wait_exit g 60)"
	live_wait_screen '^grew over the last [0-9]+ intervals? \(' 10 || fail "no growth list in the summary"
	live_screen | grep -Eq ' yes +[0-9]+ +leak_step < main' || { live_screen; fail "leak_step not in the summary's list"; }
}
