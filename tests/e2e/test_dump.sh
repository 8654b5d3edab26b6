# `bpftrace-prof dump -p PID` end to end with tests/targets/dump_target.c: its main thread waits
# in pthread_join under main_waits, "napper" sleeps in nanosleep under wait_here, "spinner"
# spins in spin_here.  The JSON is read by tests/e2e/dump_check.py.
DT=build/targets/dump_target

# Start dump_target; sets DT_PID once its threads are in place.
start_dump_target() {
	local out=$E2E_TMP/target.out
	"$DT" >"$out" 2>&1 &
	DT_PID=$!
	wait_for_line "$out" READY 10 || fail "dump_target never became ready"
}

# The process runs on (not stopped, not traced) and its spinner still spins.
expect_running() { # PID
	local st
	st=$(awk '{ print $3 }' "/proc/$1/stat") || fail "process $1 is gone"
	[ "$st" = R ] || [ "$st" = S ] || fail "process $1 is in state $st after the dump"
	expect_eq "tracer of $1" 0 "$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status")"
}

t_dump_native_threads_json() {
	local f=$E2E_TMP/dump.json
	start_dump_target
	"$PROF" dump -p "$DT_PID" --json -o "$f" || fail "exit status $?"
	python3 -m json.tool "$f" | head -80
	python3 tests/e2e/dump_check.py "$f" "$DT_PID" \
		"name=dump_target,state=sleeping,syscall=futex,kernel=1,chain=main_waits->main" \
		"name=napper,state=sleeping,syscall=clock_nanosleep,kernel=1,chain=__x64_sys_clock_nanosleep->do_syscall_64->nanosleep->wait_here->napper" \
		"name=spinner,state=running|runnable,user_leaf=spin_here,chain=spin_here->spinner->start_thread" ||
		fail "dump_check"
	expect_eq "threads" 3 "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["processes"][0]["threads"]))' "$f")"
	[ "$(stat -c %a "$f")" = 600 ] || fail "mode of $f: $(stat -c %a "$f")"
	expect_running "$DT_PID"
}

t_dump_native_threads_text() {
	local f=$E2E_TMP/dump.txt
	start_dump_target
	"$PROF" dump -p "$DT_PID" >"$f" || fail "exit status $?"
	cat "$f"
	grep -q "^Process $DT_PID (dump_target): .*/dump_target\$" "$f" || fail "no process line"
	grep -Eq "^  Thread [0-9]+ \"napper\" \(sleeping in clock_nanosleep\)\$" "$f" || fail "napper line"
	grep -Eq "^  Thread [0-9]+ \"spinner\" \((running|runnable)\)\$" "$f" || fail "spinner line"
	# The napper's stack: its way into the kernel, then wait_here in the target.
	awk '/"napper"/ { on = 1; next } /^  Thread/ { on = 0 } on' "$f" >"$f.napper"
	grep -q '^    hrtimer_nanosleep \[kernel\]$' "$f.napper" || fail "no kernel sleep frames"
	# the target's own DWARF (built -g) gives the source line
	grep -Eq '^    wait_here \(.*tests/targets/dump_target\.c:[0-9]+\) \[dump_target\]$' "$f.napper" ||
		fail "no wait_here with its source line"
	awk '/"spinner"/ { on = 1; next } /^  Thread/ { on = 0 } on' "$f" >"$f.spinner"
	grep -Eq '^    spin_here \(.*tests/targets/dump_target\.c:[0-9]+\) \[dump_target\]$' "$f.spinner" ||
		fail "no spin_here"
	expect_running "$DT_PID"
}

# Two processes at once, one named by a thread id (it stands for its process).
t_dump_two_processes_by_thread_id() {
	local f=$E2E_TMP/dump.json a b tid
	start_dump_target
	a=$DT_PID
	start_dump_target
	b=$DT_PID
	tid=$(find "/proc/$b/task" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n | tail -1)
	[ "$tid" != "$b" ] || fail "no second thread in $b"
	"$PROF" dump -p "$a,$tid" --json -o "$f" || fail "exit status $?"
	python3 tests/e2e/dump_check.py "$f" "$a" "name=napper,chain=wait_here" || fail "dump_check $a"
	python3 tests/e2e/dump_check.py "$f" "$b" "name=spinner,user_leaf=spin_here" ||
		fail "dump_check $b"
}

t_dump_usage_errors() {
	local rc
	"$PROF" dump 2>"$E2E_TMP/err"
	rc=$?
	expect_eq "exit status without -p" 2 "$rc"
	grep -q "no process given" "$E2E_TMP/err" || fail "message: $(cat "$E2E_TMP/err")"
	"$PROF" dump -p 0 2>/dev/null
	expect_eq "exit status for pid 0" 2 "$?"
	"$PROF" dump -p 2147483647 2>"$E2E_TMP/err"
	expect_eq "exit status for a missing pid" 2 "$?"
	expect_eq "error lines" 1 "$(wc -l <"$E2E_TMP/err")"
	"$PROF" dump -p 1 --heap 2>/dev/null
	expect_eq "exit status for a profiling option" 2 "$?"
}

# Python threads (tests/targets/py_threads.py) under every installed CPython 3.8–3.13 and
# Debian's 3.11: the main thread spins holding the GIL in Spinner.spin, "sleeper" naps in
# time.sleep without it.  Python frames with the script as their file, threading's names, and
# stacks that read as Python (--python-frames python, the default): the interpreter's native
# frames between Python frames left out (spin and main, nap and Thread.run adjacent).
# Waits until PID's other thread (py_threads.py's sleeper) sleeps in time.sleep's system call:
# it has let the GIL go, so the main thread is past t.start() and spinning.
wait_sleeper_asleep() { # PID
	local n t
	for ((n = 0; n < 200; n++)); do
		for t in /proc/"$1"/task/*; do
			[ "${t##*/}" = "$1" ] && continue
			case $(cat "$t/wchan" 2>/dev/null) in
			*nanosleep* | poll_schedule_timeout* | *select*) return 0 ;;
			esac
		done
		sleep 0.05
	done
	return 1
}

# Every interpreter at once, one dump of them all (a dump costs about 2 s whatever it reads).
t_dump_python_threads() {
	local i f=$E2E_TMP/dump.json fn run ran="" pids=() list=""
	# shellcheck source=tests/e2e/test_python.sh
	. tests/e2e/test_python.sh # py_list, PY_THREADS
	py_list
	for i in "${!PY_BINS[@]}"; do
		"${PY_BINS[$i]}" "$PY_THREADS" 30 30 >"$E2E_TMP/${PY_NAMES[$i]}.out" 2>&1 &
		pids[i]=$!
		list=$list${list:+,}$!
	done
	for i in "${!PY_BINS[@]}"; do
		wait_sleeper_asleep "${pids[i]}" || fail "${PY_NAMES[$i]}: the sleeper never slept"
	done
	"$PROF" dump -p "$list" --json -o "$f" 2>"$f.err" || { cat "$f.err"; fail "exit status $?"; }
	# the spinners go before the checks (seven of them slow the checks down)
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
	for i in "${!PY_BINS[@]}"; do
		echo "== ${PY_NAMES[$i]}: ${PY_BINS[$i]}"
		case ${PY_NAMES[$i]} in
		*-3.8 | *-3.9 | *-3.10) fn=spin run=run ;;
		*) fn=Spinner.spin run=Thread.run ;;
		esac
		python3 tests/e2e/dump_check.py "$f" "${pids[i]}" \
			"thread_name=MainThread,gil=held,python=$fn,file=$PY_THREADS,adjacent=$fn->main-><module>" \
			"thread_name=sleeper,gil=released,state=sleeping,kernel=1,python=nap,file=$PY_THREADS,adjacent=nap->$run" ||
			{ python3 -m json.tool "$f" | head -150; fail "${PY_NAMES[$i]}: dump_check"; }
		ran="$ran ${PY_NAMES[$i]}"
	done
	echo "ran:$ran"
}
