# On-CPU sampling end to end with tests/targets/cpu_target.c: a 3:1 split on the main thread,
# a spinner thread, a thread looping on getppid(2) whose stacks carry kernel frames.

CT=build/targets/cpu_target

ncpus() { nproc; }

# Total samples must be plausible for HZ x seconds x busy CPUs (3 busy threads).
check_total() { # FILE HZ SECONDS
	local total busy expect
	total=$(go tool pprof -symbolize=none -raw "$1" 2>/dev/null |
		awk '/^Samples:/ { s = 1; getline; next } /^Locations/ { s = 0 } s && /^ *[0-9]+ +[0-9]+:/ { n += $1 } END { print n + 0 }')
	busy=$(ncpus)
	[ "$busy" -gt 3 ] && busy=3
	expect=$(awk -v hz="$2" -v s="$3" -v b="$busy" 'BEGIN { print hz * s * b }')
	expect_range "total samples (expect ~$expect)" "$(awk -v e="$expect" 'BEGIN { print int(e * 0.5) }')" \
		"$(awk -v e="$expect" 'BEGIN { print int(e * 1.15) + 5 }')" "$total"
}

t_cpu_cmd_split_threads_kernel() {
	local f=$E2E_TMP/cpu.pb.gz three one pid
	"$PROF" --cpu -o "$f" --top 0 -- "$CT" 4 || fail "exit status $?"
	go tool pprof -symbolize=none -raw "$f" >"$f.raw" 2>&1 || fail "pprof cannot read the profile"
	grep -q '^PeriodType: cpu nanoseconds' "$f.raw" || fail "period type"
	grep -q '^Period: 10101010$' "$f.raw" || fail "period 1e9/99"
	grep -q 'samples/count cpu/nanoseconds\[dflt\]' "$f.raw" || fail "sample types: $(grep -A1 '^Samples' "$f.raw")"
	three=$(pprof_cum "$f" samples hot_three)
	one=$(pprof_cum "$f" samples hot_one)
	[ "$one" -gt 0 ] || fail "no samples in hot_one"
	expect_range "hot_three/hot_one" 2.0 4.5 "$(awk -v a="$three" -v b="$one" 'BEGIN { print a / b }')"
	check_total "$f" 99 4

	pprof_traces "$f" >"$f.traces"
	pid=$(grep -o 'pid=[0-9]*' "$f.traces" | head -1 | cut -d= -f2)
	grep -q "tid=$pid |.*hot_three;main" "$f.traces" || fail "hot_three not on the main thread"
	grep '|.*spin_other;spinner' "$f.traces" | grep -q "comm=spinner" || fail "spinner thread"
	grep '|.*spin_other;spinner' "$f.traces" | grep -q "tid=$pid " && fail "spinner has the main tid"
	[ "$(grep -E '\|.*(spin_other|hot_three|syscaller)' "$f.traces" | grep -o 'tid=[0-9]*' | sort -u | wc -l)" -eq 3 ] ||
		fail "expected 3 busy tids"
	# kernel frames on top of the user frames of the syscall thread
	grep 'comm=syscaller' "$f.traces" | grep -Eq '\|[^|]*(do_syscall_64|entry_SYSCALL)[^|]*;syscaller;start_thread' ||
		fail "no kernel frames under the syscall thread's user frames"
	echo "ok: threads and kernel frames"
}

t_cpu_pid_attach_duration() {
	local f=$E2E_TMP/cpu_pid.folded
	start_waiting_target "$E2E_TMP/target.out" "$CT" 30 --wait
	echo go >&$TARGET_IN
	"$PROF" --cpu=199 -p "$TARGET_PID" -d 2 -f folded -o "$f" --top 0 || fail "exit status $?"
	kill -0 "$TARGET_PID" || fail "-d stopped the -p target"
	kill "$TARGET_PID"
	grep -q '^split;.*;main;hot_three;work [0-9]*$' "$f" || { head "$f"; fail "folded line for hot_three"; }
	# folded values are cpu nanoseconds: about 2 s x 2 CPUs in total
	expect_range "folded total seconds" 2.0 4.7 "$(awk '{ s += $NF } END { print s / 1e9 }' "$f")"
}

t_cpu_sigint_and_heap_together() {
	local base=$E2E_TMP/both.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$CT" 30 --wait
	echo go >&$TARGET_IN
	start_profiler "$E2E_TMP/prof.log" --cpu --heap -p "$TARGET_PID" -o "$base" --top 3
	sleep 1.5
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "exit status $? after SIGINT"
	kill "$TARGET_PID"
	[ -s "$E2E_TMP/both.cpu.pb.gz" ] || fail "no cpu profile"
	[ -s "$E2E_TMP/both.heap.pb.gz" ] || fail "no heap profile"
	[ -e "$base" ] && fail "unsuffixed output written with two modes"
	go tool pprof -symbolize=none -raw "$E2E_TMP/both.heap.pb.gz" | grep -q 'inuse_space/bytes\[dflt\]' || fail "heap profile types"
	[ "$(pprof_cum "$E2E_TMP/both.cpu.pb.gz" samples hot_three)" -gt 0 ] || fail "no hot_three samples"
	echo "ok: two profiles"
}

t_cpu_follows_children_of_cmd() {
	local f=$E2E_TMP/children.pb.gz
	"$PROF" --cpu -o "$f" --top 0 -- sh -c "$CT 1; $CT 1" || fail "exit status $?"
	pprof_traces "$f" >"$f.t"
	expect_eq "cpu_target processes sampled" 2 \
		"$(grep '|.*hot_three;main' "$f.t" | grep -o 'pid=[0-9]*' | sort -u | wc -l)"
}
