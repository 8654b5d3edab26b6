# Off-CPU time end to end with tests/targets/offcpu_target.c: its thread "sleeper" sleeps
# 3 x 300 ms in sleeper_a (nanosleep) and waits 3 x 100 ms in blocker_b (a futex); the main
# thread is blocked in pthread_join all along.
OT=build/targets/offcpu_target
# The loss counters of this mode besides the common ones.
DROP_COUNTERS="$DROP_COUNTERS offcpu_full offcpu_deep_full"

# One line per sample of a pprof profile, from go tool pprof -raw (an independent decoder):
# "EVENTS NS comm=C pid=P process=N state=S tid=T | leaf;caller;…" (function names; a
# function inlined into another comes before it, as a frame of its own).
offcpu_rows() { # FILE
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | awk '
		/^Samples:/ { sec = "s"; getline; next }
		/^Locations/ { sec = "l"; next }
		/^Mappings/ { sec = "" }
		sec == "s" && /^ *[0-9]+ +[0-9]+:/ {
			n++; ev[n] = $1; ns[n] = $2; sub(/:$/, "", ns[n]); ids[n] = ""
			for (i = 3; i <= NF; i++) ids[n] = ids[n] " " $i
			lab[n] = ""; next }
		sec == "s" && /^ +[a-z_]+:\[/ {
			for (i = 1; i <= NF; i++) { l = $i; gsub(/[\[\]]/, "", l); sub(/:/, "=", l); lab[n] = lab[n] l " " }
			next }
		sec == "l" && /^ *[0-9]+: 0x/ { id = $1; sub(/:$/, "", id); fn[id] = ($4 ~ /^:/ || $4 == "") ? $2 : $4; next }
		# a Line more: the function an inlined one was inlined into, rootward
		sec == "l" && /^ +[^ 0-9]/ && id != "" { fn[id] = fn[id] ";" $1 }
		END {
			for (k = 1; k <= n; k++) {
				m = split(ids[k], a, " "); st = ""
				for (j = 1; j <= m; j++) st = st (j > 1 ? ";" : "") fn[a[j]]
				print ev[k], ns[k], lab[k] "|", st
			}
		}'
}

# Sum of column COL (1 events, 2 ns) over the rows matching REGEX.
rows_sum() { # ROWS COL REGEX
	awk -v c="$2" -v re="$3" '$0 ~ re { s += $c } END { printf "%.0f\n", s }' "$1"
}

t_offcpu_cmd_sleeper_stacks() {
	local f=$E2E_TMP/offcpu.pb.gz rows=$E2E_TMP/rows a b pid
	run() { "$PROF" --offcpu -o "$f" --top 0 -- "$OT" || fail "exit status $?"; }
	run
	go tool pprof -symbolize=none -raw "$f" >"$f.raw" 2>&1 || fail "pprof cannot read the profile"
	grep -q '^Samples:' "$f.raw" || fail "no samples section"
	grep -q '^events/count offcpu/nanoseconds\[dflt\]$' "$f.raw" ||
		fail "sample types: $(grep -A1 '^Samples' "$f.raw")"
	expect_no_drops "$f"
	offcpu_rows "$f" >"$rows"
	[ -s "$rows" ] || fail "no samples"
	cat "$rows"

	# The sleeps: exactly three blocked periods in nanosleep under sleeper_a, at least as long
	# as the target slept (the kernel may wake it late, never early).
	a=$(rows_sum "$rows" 2 'state=idle .*[|].*;sleeper_a;')
	expect_range "ns off-CPU under sleeper_a" 873000000 1350000000 "$a"
	expect_eq "blocked nanosleep periods under sleeper_a" 3 \
		"$(rows_sum "$rows" 1 'state=idle .*[|].*(do_nanosleep|clock_nanosleep).*;sleeper_a;sleeper;')"
	b=$(rows_sum "$rows" 2 'state=idle .*[|].*;blocker_b;')
	expect_range "ns off-CPU under blocker_b" 291000000 450000000 "$b"
	expect_range "sleeper_a/blocker_b" 2.0 4.5 "$(awk -v a="$a" -v b="$b" 'BEGIN { print a / b }')"
	expect_eq "blocked futex periods under blocker_b" 3 \
		"$(rows_sum "$rows" 1 'state=idle .*[|].*futex.*;blocker_b;sleeper;')"

	# Labels: the sleeper thread has its own tid and name, in the target's process.
	pid=$(grep -o 'pid=[0-9]*' "$rows" | head -1 | cut -d= -f2)
	[ -n "$pid" ] || fail "no pid label"
	expect_eq "pids" 1 "$(grep -o ' pid=[0-9]*' "$rows" | sort -u | wc -l)"
	grep ';sleeper_a;' "$rows" | grep -q "comm=sleeper " || fail "sleeper_a not on the thread named sleeper"
	grep ';sleeper_a;' "$rows" | grep -q "tid=$pid " && fail "sleeper_a on the main thread's tid"
	expect_eq "tids with sleeper_a" 1 "$(grep ';sleeper_a;' "$rows" | grep -o 'tid=[0-9]*' | sort -u | wc -l)"
	expect_eq "process label" 0 "$(grep -vc 'process=offcpu_target ' "$rows")"
	# Every sample has a state, and only the two known ones.
	expect_eq "samples without a known state" 0 "$(grep -Evc 'state=(idle|runnable) ' "$rows")"
	# The main thread waited in pthread_join (a futex) while the sleeper ran (about 1.2 s).
	expect_range "ns the main thread waited on a futex" 1164000000 5000000000 \
		"$(rows_sum "$rows" 2 "state=idle pid=$pid tid=$pid [|].*;futex_wait;")"
	# Kernel frames leafward of the user frames, starting at the scheduler.
	grep ';sleeper_a;' "$rows" | grep -q '| __schedule;schedule;' || fail "kernel stack does not start at __schedule"
}

t_offcpu_folded_text_with_cpu() {
	local base=$E2E_TMP/both.folded txt=$E2E_TMP/offcpu.txt a
	"$PROF" --offcpu --cpu -f folded -o "$base" --top 0 -- "$OT" || fail "exit status $?"
	[ -s "$E2E_TMP/both.offcpu.folded" ] || fail "no offcpu folded file"
	[ -e "$E2E_TMP/both.cpu.folded" ] || fail "no cpu folded file"
	[ -e "$base" ] && fail "unsuffixed output written with two modes"
	grep -q '^offcpu_target;.*;sleeper;sleeper_a;.*;__schedule [0-9]*$' "$E2E_TMP/both.offcpu.folded" ||
		{ cat "$E2E_TMP/both.offcpu.folded"; fail "folded line for sleeper_a"; }
	# folded values are nanoseconds off the CPU (folded carries no counters: at least two of
	# the three sleeps, should one be lost)
	a=$(awk '/;sleeper_a;/ { s += $NF } END { printf "%.0f", s }' "$E2E_TMP/both.offcpu.folded")
	expect_range "folded ns under sleeper_a" 582000000 1350000000 "$a"

	# 20 rows: every own frame fits (a CMD's ptrace and exit stops add a few), so the 0-own
	# functions (__schedule, sleeper_a) are listed too
	"$PROF" --offcpu -f text -o "$txt" --top 20 -- "$OT" >/dev/null || fail "exit status $?"
	cat "$txt"
	grep -q '^offcpu profile: 1 process' "$txt" || fail "text header"
	grep -q 'top 20 by offcpu (nanoseconds)' "$txt" || fail "text top table"
	grep -Eq ' sleeper_a$| sleep_ms$| __schedule$' "$txt" || fail "no known function in the top table"
	expect_no_drops_text "$txt"
	# The own column is the first frame below the kernel's scheduling functions (every stack
	# starts at __schedule;schedule): why the thread waited.  Times read in s/ms.
	local first
	first=$(grep -A2 'top 20 by offcpu' "$txt" | tail -1)
	grep -Eq '^ +[0-9.]+ m?s +[0-9.]+% +[0-9.]+ m?s +[0-9.]+%  ' <<<"$first" || fail "first row not in s/ms: $first"
	grep -Eq '  (__schedule|schedule|schedule_[a-z_]*|io_schedule[a-z_]*|preempt_schedule[a-z_]*)$' <<<"$first" &&
		fail "the first own row is the scheduler's: $first"
	grep -Eq '^ +0 ns +0\.00% +[0-9.]+ m?s +100\.00%  __schedule$' "$txt" ||
		fail "__schedule is not 0 own, 100 % total"
	grep -Eq '  (do_nanosleep|futex_wait_queue|futex_wait|hrtimer_nanosleep)$' "$txt" ||
		fail "neither nanosleep nor futex waits own time"
}

# A trace event enabled on the host (here bpf_trace_printk's, which any BPF program calling
# bpf_printk turns on for good) makes ftrace add its own sched_switch probe: the tracepoint then
# runs through its iterator, one more frame between our program and __schedule.  The stacks
# still start at __schedule, and the iterator is nowhere.
t_offcpu_stacks_with_a_trace_event_enabled() {
	local ev=/sys/kernel/tracing/events/bpf_trace/bpf_trace_printk/enable f=$E2E_TMP/ev.pb.gz
	local rows=$E2E_TMP/rows was mounted=""
	# A fresh machine may not have tracefs mounted (the profiler needs none): mounted for this
	# test only, and unmounted after it (only what it mounted), so no later test or run finds
	# it there.
	if [ ! -e /sys/kernel/tracing/events ]; then
		mount -t tracefs tracefs /sys/kernel/tracing || fail "cannot mount tracefs"
		mounted=1
	fi
	[ -w "$ev" ] || fail "no $ev to enable"
	was=$(cat "$ev")
	# shellcheck disable=SC2064 # the values read now
	trap "echo $was >$ev; [ -z '$mounted' ] || umount /sys/kernel/tracing; kill \$(jobs -p) 2>/dev/null" EXIT
	echo 1 >"$ev" || fail "cannot enable $ev"
	"$PROF" --offcpu -o "$f" --top 0 -- "$OT" >/dev/null || fail "exit status $?"
	echo "$was" >"$ev"
	offcpu_rows "$f" >"$rows"
	[ -s "$rows" ] || fail "no samples"
	grep ';sleeper_a;' "$rows" | grep -q '| __schedule;schedule;' ||
		{ grep ';sleeper_a;' "$rows"; fail "kernel stack does not start at __schedule"; }
	expect_eq "samples through __traceiter_sched_switch" 0 "$(grep -c '__traceiter_' "$rows")"
}

t_offcpu_pid_attach() {
	local f=$E2E_TMP/offcpu_pid.pb.gz rows=$E2E_TMP/rows
	run() {
		start_waiting_target "$E2E_TMP/target.out" "$OT" --wait
		start_profiler "$E2E_TMP/prof.log" --offcpu -p "$TARGET_PID" -o "$f" --top 0
		echo go >&"$TARGET_IN"
		wait "$TARGET_PID" || fail "target failed"
		# -p ends when its target does
		wait "$PROF_PID" || fail "exit status $?"
	}
	run
	expect_no_drops "$f"
	offcpu_rows "$f" >"$rows"
	expect_eq "pid label" "$TARGET_PID" "$(grep -o ' pid=[0-9]*' "$rows" | sort -u | cut -d= -f2 | xargs)"
	expect_range "ns off-CPU under sleeper_a" 873000000 1350000000 \
		"$(rows_sum "$rows" 2 'state=idle .*[|].*;sleeper_a;')"
}

# -d ends the run while the main thread is still blocked in pthread_join: that period counts up
# to the end, from the kernel's record of it (it never ran again during the run).
t_offcpu_pid_open_period_counted_at_end() {
	local f=$E2E_TMP/offcpu_open.pb.gz rows=$E2E_TMP/rows ns
	run() {
		start_waiting_target "$E2E_TMP/target.out" "$OT" --wait
		start_profiler "$E2E_TMP/prof.log" --offcpu -p "$TARGET_PID" -d 0.6 -o "$f" --top 0
		echo go >&"$TARGET_IN"
		wait "$PROF_PID" || fail "exit status $?"
		kill -0 "$TARGET_PID" || fail "-d stopped the -p target"
		wait "$TARGET_PID" || fail "target failed"
	}
	run
	expect_no_drops "$f"
	offcpu_rows "$f" >"$rows"
	cat "$rows"
	expect_eq "main thread's join periods" 1 \
		"$(rows_sum "$rows" 1 "state=idle pid=$TARGET_PID tid=$TARGET_PID [|].*;futex_wait;")"
	ns=$(rows_sum "$rows" 2 "state=idle pid=$TARGET_PID tid=$TARGET_PID [|].*;futex_wait;")
	# more than nothing, and never more than the run lasted (0.6 s, and its shutdown)
	expect_range "ns of the period still open at the end" 1 1100000000 "$ns"
}

# --cgroup: a process started in the cgroup after the profiler has its sleeps; one started
# outside at the same time is not in the profile.
t_offcpu_cgroup_only_its_processes() {
	local root cg f=$E2E_TMP/cg.pb.gz rows=$E2E_TMP/rows in out
	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] || fail "no cgroup2 mount in /proc/mounts"
	cg=$root/bpftrace-prof-e2e.$$.$RANDOM
	mkdir "$cg" || fail "cannot create cgroup $cg"
	run() {
		start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --offcpu -o "$f" --top 0
		(exec sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2"' sh "$cg" "$OT") &
		in=$!
		"$OT" &
		out=$!
		wait "$in" "$out"
		kill -INT "$PROF_PID"
		wait "$PROF_PID" || fail "profiler exit status $?: $(tail -5 "$E2E_TMP/prof.log")"
	}
	run
	rmdir "$cg"
	expect_no_drops "$f"
	offcpu_rows "$f" >"$rows"
	expect_eq "processes in the profile (the one in the cgroup)" "$in" \
		"$(grep -o ' pid=[0-9]*' "$rows" | cut -d= -f2 | sort -un | xargs)"
	expect_range "ns off-CPU under sleeper_a" 873000000 1350000000 \
		"$(rows_sum "$rows" 2 'state=idle .*[|].*;sleeper_a;')"
	expect_eq "blocked nanosleep periods under sleeper_a" 3 \
		"$(rows_sum "$rows" 1 'state=idle .*[|].*(do_nanosleep|clock_nanosleep).*;sleeper_a;sleeper;')"
}

# Two threads spinning on one CPU for 600 ms each: whenever one runs the other waits, runnable
# (preempted in user code, never asleep).
t_offcpu_runnable_when_preempted() {
	local f=$E2E_TMP/offcpu_run.pb.gz rows=$E2E_TMP/rows t
	"$PROF" --offcpu -o "$f" --top 0 -- "$OT" --runnable || fail "exit status $?"
	expect_no_drops "$f"
	# periods that came back unseen (docs/how-it-works.md, How it works: Off-CPU) are timed, not lost
	echo "offcpu_unseen_returns: $(pprof_counter_value "$f" offcpu_unseen_returns)"
	offcpu_rows "$f" >"$rows"
	grep ';spinner;' "$rows"
	# (spinner, not spin_c: preempted inside the vDSO's clock_gettime, --unwind fp loses spin_c)
	for t in spin1 spin2; do
		expect_range "runnable periods of $t under spinner" 1 1000000 \
			"$(rows_sum "$rows" 1 "comm=$t .*state=runnable .*[|].*;spinner;")"
	done
	# spin_c itself: with the unwind tables; frame pointers lose it whenever the preemption
	# lands in the vDSO (most of the loop), so under --unwind fp a run may have none there.
	if [[ "${E2E_PROF_ARGS:-}" != *"--unwind fp"* ]]; then
		expect_range "runnable periods under spin_c" 1 1000000 \
			"$(rows_sum "$rows" 1 'state=runnable .*[|].*;spin_c;spinner;')"
	fi
	# together they waited at least half of the 600 ms they shared one CPU
	expect_range "ns the spinners were runnable" 300000000 10000000000 \
		"$(rows_sum "$rows" 2 'comm=spin[12] .*state=runnable ')"
	expect_eq "blocked periods under spin_c" 0 "$(rows_sum "$rows" 1 'state=idle .*[|].*;spin_c;spinner;')"
}
