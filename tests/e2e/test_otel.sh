#!/bin/bash
# --heap through the otel_memory USDT contract (issue 27, item 1; docs/how-it-works.md: The
# otel_memory probes): a process whose mapped files carry otel_memory:alloc/free is profiled
# through them instead of the allocator probes — alloc_* from alloc's weight as given, in-use
# from free.  tests/targets/otel_probes.c fires them from its own tiny deterministic sampler
# (every 4th block, weight 4 x size), so every number is exact.  Its plain_alloc mallocs outside
# the sampler: a process on the probes' path is not seen by the allocator probes, so plain_alloc
# is not in the profile (the allocator path is not double counting), nor is the sampler's own
# sampled_malloc, whose malloc calls those probes would charge to it.

OT=build/targets/otel_probes

otel_stop_profiler() { # LOG
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $?: $(tail -5 "$1")"
}

# The program started in cgroup CG, run through (TARGET_PID: its pid).
otel_run_in_cgroup() { # CG
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/target.out" sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --wait' \
		sh "$1" "$OT"
	echo go >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "target did not finish"
	echo bye >&"$TARGET_IN"
	wait "$TARGET_PID"
}

# The sampler's exact numbers in FILE, the leaf being the caller of the allocation function
# (the probe site's frame dropped, as the allocator return probes see a malloc's caller).
check_otel_numbers() { # FILE
	local f=$1
	expect_no_drops "$f"
	expect_eq "otel_arg_fail" 0 "$(pprof_counter_value "$f" otel_arg_fail)"
	expect_eq "alloc_a alloc_space" 400000 "$(pprof_flat "$f" alloc_space alloc_a)"
	expect_eq "alloc_a alloc_objects" 400 "$(pprof_flat "$f" alloc_objects alloc_a)"
	expect_eq "alloc_a inuse_space" 400000 "$(pprof_flat "$f" inuse_space alloc_a)"
	expect_eq "alloc_a inuse_objects" 400 "$(pprof_flat "$f" inuse_objects alloc_a)"
	expect_eq "alloc_b alloc_space" 600000 "$(pprof_flat "$f" alloc_space alloc_b)"
	expect_eq "alloc_b alloc_objects" 200 "$(pprof_flat "$f" alloc_objects alloc_b)"
	expect_eq "alloc_b inuse_space" 0 "$(pprof_flat "$f" inuse_space alloc_b)"
	expect_eq "alloc_b inuse_objects" 0 "$(pprof_flat "$f" inuse_objects alloc_b)"
	# Not double counting: mallocs outside the sampler, and the sampler's own, are not seen.
	expect_eq "plain_alloc alloc_space (outside the sampler)" 0 \
		"$(pprof_cum "$f" alloc_space plain_alloc)"
	expect_eq "sampled_malloc alloc_space (its malloc calls)" 0 \
		"$(pprof_cum "$f" alloc_space sampled_malloc)"
	pprof_stacks "$f" alloc_space >"$f.stacks"
	expect_eq "alloc_a's bytes on alloc_a;main" 400000 "$(sum_matching "$f.stacks" '\|alloc_a;main;')"
	expect_eq "counter heap_procs_otel" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
}

# `-- CMD`: the program's probes are attached for every process (the exe file), its tree on them.
t_otel_cmd_exact_weights() {
	local f=$E2E_TMP/cmd.pb.gz
	"$PROF" --heap -o "$f" --top 0 -- "$OT" >"$E2E_TMP/target.out" 2>"$E2E_TMP/prof.log" ||
		fail "profiler exit status $?: $(tail -5 "$E2E_TMP/prof.log")"
	expect_eq "target output" DONE "$(cat "$E2E_TMP/target.out")"
	check_otel_numbers "$f"
	expect_eq "counter heap_procs_uprobes" 0 "$(pprof_counter_value "$f" heap_procs_uprobes)"
	# Exact, but no allocator probe: the start line says the path, without the cost line.
	grep -q "^bpftrace-prof: profiling heap (through the program's own otel_memory probes, its own sampling: no allocator probe) of $OT " \
		"$E2E_TMP/prof.log" || fail "start line: $(grep -m1 'profiling' "$E2E_TMP/prof.log")"
	! grep -q "exact heap tracing" "$E2E_TMP/prof.log" || fail "a cost line for a program on its own probes"
}

# The same with --unwind fp, where no unwind table holds the new image at its exec: the
# process's path is decided and its probes attached at its ptrace exec stop, before its first
# instruction (decided when its exec record was read, its first blocks went uncounted or to the
# allocator probes: 364,000 bytes seen under alloc_a, 55,000 under sampled_malloc).
t_otel_cmd_exact_weights_fp() {
	local f=$E2E_TMP/cmdfp.pb.gz
	"$PROF" --heap --unwind fp -o "$f" --top 0 -- "$OT" >"$E2E_TMP/target.out" ||
		fail "profiler exit status $?"
	check_otel_numbers "$f"
	expect_eq "counter heap_procs_uprobes" 0 "$(pprof_counter_value "$f" heap_procs_uprobes)"
}

# -p: the probes attached for that process only, and no allocator probe at all for it (the
# sampler's weights are the sampler's, whatever --sample-bytes says).
t_otel_pid_exact_weights() {
	local f=$E2E_TMP/pid.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$OT" --wait
	start_profiler "$E2E_TMP/prof.log" --heap --sample-bytes 65536 -p "$TARGET_PID" -o "$f" --top 0
	finish_waiting_run
	check_otel_numbers "$f"
	expect_eq "counter heap_procs_uprobes" 0 "$(pprof_counter_value "$f" heap_procs_uprobes)"
	# Its two otel_memory probes and the dynamic loader's hook (dlopens): no allocator probe.
	expect_eq "probe links (-v)" 3 "$(sed -n 's/.*bookkeeping:.* probe_links=\([0-9]*\).*/\1/p' "$E2E_TMP/prof.log")"
	# The start line says so, not "sampled: about one allocation per 65536 bytes" (ignored).
	grep -q "^bpftrace-prof: profiling heap (through the program's own otel_memory probes, its own sampling: no allocator probe) of pid $TARGET_PID " \
		"$E2E_TMP/prof.log" || fail "start line: $(grep -m1 'profiling' "$E2E_TMP/prof.log")"
}

# -p on a shell that then execs the program: at the new image's start it moves onto its probes,
# and the allocator probes attached for the shell go (before, they stayed: BPF ignored them, but
# every malloc and free of the program still trapped there, counted in heap_traps_otel; a
# preloaded sqlite3 exec'd that way ran 32x slower).
t_otel_pid_exec_onto_probes() {
	local f=$E2E_TMP/pidexec.pb.gz
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/target.out" sh -c 'echo READY; read -r x && exec "$0" --wait' "$OT"
	start_profiler "$E2E_TMP/prof.log" -v --heap --sample-bytes 65536 -p "$TARGET_PID" -o "$f" --top 0
	echo exec >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" "READY $TARGET_PID" 10 || fail "the exec'd program never became ready"
	wait_for_line "$E2E_TMP/prof.log" "process $TARGET_PID: on its otel_memory probes" 10 ||
		echo "  (no line: its allocator probes were not detached)" >&2
	finish_waiting_run
	check_otel_numbers "$f"
	expect_eq "counter heap_procs_uprobes (the shell's image)" 1 "$(pprof_counter_value "$f" heap_procs_uprobes)"
	expect_eq "counter heap_traps_otel" 0 "$(pprof_counter_value "$f" heap_traps_otel)"
}

# The other way: -p on a shell on its probes (a library with them preloaded) that execs a plain
# program (LD_PRELOAD dropped): that image takes the allocator probes, attached at its start
# (before, a -p process found on its probes got none, ever: 0 bytes seen).
t_otel_pid_exec_off_probes() {
	local f=$E2E_TMP/pidoff.pb.gz lib=$E2E_TMP/libotel.so
	gcc -shared -fPIC -g -O2 tests/targets/lib/otel_lib.c -o "$lib" || fail "building $lib failed"
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/target.out" env LD_PRELOAD="$lib" \
		sh -c 'echo READY; read -r x && exec env -u LD_PRELOAD "$0"' build/targets/heap_nofp
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	echo exec >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "heap_nofp did not finish"
	otel_stop_profiler "$E2E_TMP/prof.log"
	wait "$TARGET_PID"
	expect_no_drops "$f"
	expect_eq "alloc_a alloc_space" 3000000 "$(pprof_flat "$f" alloc_space alloc_a)"
	expect_eq "alloc_b alloc_space" 1000000 "$(pprof_flat "$f" alloc_space alloc_b)"
	# the shell's and env's images on the probes (env is preloaded too), heap_nofp's not
	expect_eq "counter heap_procs_otel" 2 "$(pprof_counter_value "$f" heap_procs_otel)"
	expect_eq "counter heap_procs_uprobes" 1 "$(pprof_counter_value "$f" heap_procs_uprobes)"
}

# Exact -p: no cost line for a process on its own otel_memory probes (no allocator probe is
# attached to it), and still one for a plain program, whose every malloc and free is probed.
t_otel_pid_exact_start_line() {
	local f=$E2E_TMP/line.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$OT" --wait
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	otel_stop_profiler "$E2E_TMP/prof.log"
	kill "$TARGET_PID"
	wait "$TARGET_PID"
	grep -q "^bpftrace-prof: profiling heap (through the program's own otel_memory probes, its own sampling: no allocator probe) of pid $TARGET_PID " \
		"$E2E_TMP/prof.log" || fail "otel start line: $(grep -m1 'profiling' "$E2E_TMP/prof.log")"
	! grep -q "exact heap tracing" "$E2E_TMP/prof.log" || fail "a cost line for a process on its own probes"
	start_waiting_target "$E2E_TMP/plain.out" build/targets/heap_target --wait
	start_profiler "$E2E_TMP/plain.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	otel_stop_profiler "$E2E_TMP/plain.log"
	kill "$TARGET_PID"
	wait "$TARGET_PID"
	grep -q "^bpftrace-prof: profiling heap (every allocation) of pid $TARGET_PID " "$E2E_TMP/plain.log" ||
		fail "plain start line: $(grep -m1 'profiling' "$E2E_TMP/plain.log")"
	grep -q "^bpftrace-prof: exact heap tracing: every malloc and free is probed" "$E2E_TMP/plain.log" ||
		fail "no cost line for a plain program's exact -p"
}

# --cgroup (the wide scopes' default --sample-bytes 524288): a process started in the cgroup after
# the profiler takes the probes' path; libc stays probed file-wide for the others, BPF skips it.
t_otel_cgroup_exact_weights() {
	local cg f=$E2E_TMP/cg.pb.gz
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --heap -o "$f" --top 0
	otel_run_in_cgroup "$cg"
	otel_stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	check_otel_numbers "$f"
	pprof_traces "$f" | grep '|alloc_a;' | grep -q "pid=$TARGET_PID " || fail "alloc_a not charged to $TARGET_PID"
}

# --cgroup, exact, plain programs beside one on its own otel_memory probes: the libc they share
# is then probed per process (docs/continuous.md: Heap profiles of containers), so the program
# on its probes never traps in it (heap_traps_otel: before, each of its mallocs and frees trapped
# and was ignored), while the plain ones are seen exactly: one moved onto links of its own as it
# waits, one started after the move, and the child of a fork, which gets its own links.
t_otel_cgroup_own_links() {
	local cg f=$E2E_TMP/own.pb.gz p1 p2 child t fd ins=() pids=()
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" -v --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	for t in p1:build/targets/heap_target ot:"$OT" p2:build/targets/heap_target \
		fk:build/targets/fork_alloc; do
		# shellcheck disable=SC2016 # expanded by the inner sh
		start_waiting_target "$E2E_TMP/${t%%:*}.out" sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --wait' \
			sh "$cg" "${t#*:}"
		ins+=("$TARGET_IN")
		pids+=("$TARGET_PID")
	done
	p1=${pids[0]} p2=${pids[2]}
	# Gates open once each plain program is on its own links: an exec the consumer could not
	# hold gets them late (counted in heap_own_late), and its workload would run without them.
	for t in "$p1" "$p2" "${pids[3]}"; do
		wait_for_line "$E2E_TMP/prof.log" "process $t: on allocator probes of its own" 10 ||
			fail "process $t never got its own probes: $(grep -i own "$E2E_TMP/prof.log")"
	done
	echo go >&"${ins[3]}"
	wait_for_line "$E2E_TMP/fk.out" CHILD 10 || fail "no child: $(cat "$E2E_TMP/fk.out")"
	child=$(sed -n 's/^CHILD //p' "$E2E_TMP/fk.out")
	wait_for_line "$E2E_TMP/prof.log" "process $child: on allocator probes of its own" 10 ||
		fail "the child $child never got its own probes: $(grep -i own "$E2E_TMP/prof.log")"
	for fd in "${ins[@]}"; do echo go >&"$fd"; done
	for t in p1 ot p2 fk; do
		wait_for_line "$E2E_TMP/$t.out" DONE 60 || fail "target $t did not finish: $(cat "$E2E_TMP/$t.out")"
	done
	for fd in "${ins[@]}"; do echo bye >&"$fd"; done
	wait "${pids[@]}"
	otel_stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	check_otel_numbers "$f"
	# An exec the consumer could not hold (busy: counted) runs its start before libc is split:
	# a few traps then, never its workload's (hundreds of calls).
	if [ "$(pprof_counter_value "$f" exec_hold_fail)" = 0 ]; then
		expect_eq "allocator traps of the process on its probes" 0 "$(pprof_counter_value "$f" heap_traps_otel)"
	else
		expect_range "allocator traps of the process on its probes (an exec not held)" 0 50 \
			"$(pprof_counter_value "$f" heap_traps_otel)"
	fi
	expect_eq "processes on allocator links of their own" 4 "$(pprof_counter_value "$f" heap_procs_own)"
	# the child, and each exec that could not be held (holds: docs/continuous.md)
	expect_range "of those, late" 1 3 "$(pprof_counter_value "$f" heap_own_late)"
	# Both plain programs, exactly (check_heap_numbers' figures, twice), and the child.
	expect_eq "leak_pages alloc_objects" 2000 "$(pprof_flat "$f" alloc_objects leak_pages)"
	expect_eq "leak_pages inuse_space" 8192000 "$(pprof_flat "$f" inuse_space leak_pages)"
	expect_eq "churn_small alloc_objects" 800000 "$(pprof_flat "$f" alloc_objects churn_small)"
	expect_eq "churn_small inuse_objects" 0 "$(pprof_flat "$f" inuse_objects churn_small)"
	expect_eq "realloc_chain inuse_space" 1600 "$(pprof_flat "$f" inuse_space realloc_chain)"
	expect_eq "cxx_new_kept alloc_space" 98000 "$(pprof_flat "$f" alloc_space cxx_new_kept)"
	expect_eq "child_kept alloc_objects" 300 "$(pprof_flat "$f" alloc_objects child_kept)"
	expect_eq "child_kept inuse_space" 3000000 "$(pprof_flat "$f" inuse_space child_kept)"
	pprof_traces "$f" >"$f.traces"
	for t in "$p1" "$p2"; do
		grep '|leak_pages;' "$f.traces" | grep -q "pid=$t " || fail "leak_pages not charged to $t"
	done
	grep '|child_kept;' "$f.traces" | grep -q "pid=$child " || fail "child_kept not charged to $child"
}

# The same with more plain processes on that libc than are probed per process (5 sleeps, at
# most 4): the libc stays probed for every process, said once, and the program on its probes
# traps there (counted), its numbers as exact as ever.
t_otel_cgroup_split_capped() {
	local cg f=$E2E_TMP/cap.pb.gz i sleeps=()
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	for ((i = 0; i < 5; i++)); do
		bg_in_cgroup "$cg" sleep 300
		sleeps+=($!)
	done
	sleep 1 # their execs read
	otel_run_in_cgroup "$cg"
	kill "${sleeps[@]}"
	wait "${sleeps[@]}" 2>/dev/null
	otel_stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	check_otel_numbers "$f"
	expect_eq "processes on links of their own" 0 "$(pprof_counter_value "$f" heap_procs_own)"
	[ "$(pprof_counter_value "$f" heap_traps_otel)" -gt 0 ] || fail "no trap counted"
	grep -q "libc.so.6: 5 processes in scope map it beside one sampling itself" "$E2E_TMP/prof.log" ||
		fail "not said: $(grep -i 'per process' "$E2E_TMP/prof.log")"
}

# A file probed per process that comes to be mapped by more processes of their own than that (at
# most 4): the program on its probes splits libc; heap_target and three sleeps go onto links of
# their own; the fifth process (a sleep) would be one too many, so libc goes back to the probes
# for every process and the four move back onto them.  heap_target then runs: exact, every call
# seen once; the program on its probes traps in libc again (counted), its numbers exact.
t_otel_cgroup_split_merged() {
	local cg f=$E2E_TMP/merged.pb.gz i p1 p1_in ot ot_in sleeps=()
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" -v --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/ot.out" sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --wait' \
		sh "$cg" "$OT"
	ot=$TARGET_PID ot_in=$TARGET_IN
	wait_for_line "$E2E_TMP/prof.log" "libc.so.6: allocators now probed per process" 10 ||
		fail "libc not split: $(grep -i 'per process' "$E2E_TMP/prof.log")"
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/p1.out" sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" --wait' \
		sh "$cg" build/targets/heap_target
	p1=$TARGET_PID p1_in=$TARGET_IN
	wait_for_line "$E2E_TMP/prof.log" "process $p1: on allocator probes of its own" 10 ||
		fail "heap_target not on links of its own"
	for ((i = 0; i < 4; i++)); do
		bg_in_cgroup "$cg" sleep 300
		sleeps+=($!)
		[ "$i" -eq 3 ] && break
		wait_for_line "$E2E_TMP/prof.log" "process $!: on allocator probes of its own" 10 ||
			fail "sleep $! not on links of its own"
	done
	wait_for_line "$E2E_TMP/prof.log" "libc.so.6: 5 processes on allocator probes of their own would map it: probed for every process again (at most 4 per process), 4 moved back" 10 ||
		fail "libc not merged: $(grep -i 'libc' "$E2E_TMP/prof.log")"
	echo go >&"$p1_in"
	echo go >&"$ot_in"
	wait_for_line "$E2E_TMP/p1.out" DONE 60 || fail "heap_target did not finish"
	wait_for_line "$E2E_TMP/ot.out" DONE 30 || fail "the program on its probes did not finish"
	echo bye >&"$p1_in"
	echo bye >&"$ot_in"
	kill "${sleeps[@]}"
	wait "${sleeps[@]}" "$p1" "$ot" 2>/dev/null
	otel_stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	check_otel_numbers "$f"
	check_heap_numbers "$f"
	grep '|leak_pages;' <(pprof_traces "$f") | grep -q "pid=$p1 " || fail "leak_pages not charged to $p1"
	expect_eq "processes on links of their own" 4 "$(pprof_counter_value "$f" heap_procs_own)"
	expect_eq "of those, moved back" 4 "$(pprof_counter_value "$f" heap_own_merged)"
	expect_eq "files probed for every process again" 1 "$(pprof_counter_value "$f" heap_split_merged)"
	[ "$(pprof_counter_value "$f" heap_traps_otel)" -gt 0 ] || fail "no trap counted"
}

# A library carrying the probes, dlopen'd after start by a program that has none: the process
# moves onto them at the dlopen, and is counted there (its image began on the allocator probes).
t_otel_dlopen_library_picked_up() {
	local f=$E2E_TMP/dl.pb.gz lib=$E2E_TMP/libotel.so
	gcc -shared -fPIC -g -O2 tests/targets/lib/otel_lib.c -o "$lib" || fail "building $lib failed"
	"$PROF" --heap -o "$f" --top 0 -- build/targets/dlopen_nofp "$lib" >"$E2E_TMP/target.out" ||
		fail "profiler exit status $?"
	expect_eq "target output" "DONE 1" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	expect_eq "otel_lib_alloc alloc_space" 400000 "$(pprof_flat "$f" alloc_space otel_lib_alloc)"
	expect_eq "otel_lib_alloc alloc_objects" 200 "$(pprof_flat "$f" alloc_objects otel_lib_alloc)"
	expect_eq "otel_lib_alloc inuse_space" 400000 "$(pprof_flat "$f" inuse_space otel_lib_alloc)"
	expect_eq "sampled_malloc alloc_space (its malloc calls)" 0 \
		"$(pprof_cum "$f" alloc_space sampled_malloc)"
	expect_eq "counter heap_procs_otel" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
	expect_eq "counter heap_procs_uprobes" 0 "$(pprof_counter_value "$f" heap_procs_uprobes)"
}

# A library carrying the probes LD_PRELOADed into a program that knows nothing of it (env execs
# /bin/true with it): ld.so maps it after the exec, and the loader hook's report of its startup
# (held before any constructor runs) moves the image onto the probes; the library's constructor
# allocates.  env's own image took the allocator probes: one image counted on each path.
# [late]: the report of the startup's first call (RT_ADD, not held) is handled 100 ms late
# (BPFTRACE_PROF_FAULT_DLOPEN_LATE_MS), after ld.so mapped the library and while it searches 12000
# directories for libm: the process is on its probes before the startup's end, which is held all
# the same (before, it was not: the constructor's allocations came without stacks).
otel_preloaded() { # [late]
	local f=$E2E_TMP/pre.pb.gz lib=$E2E_TMP/libotelpre.so late=0 path=
	gcc -shared -fPIC -g -O2 -DOTEL_LIB_CTOR tests/targets/lib/otel_lib.c -o "$lib" ||
		fail "building $lib failed"
	if [ "${1:-}" = late ]; then
		late=100
		[ ! -e /.n ] || fail "/.n exists: the directories searched must not"
		path=$(seq -f "/.n/%g" 1 12000 | paste -sd:)
	fi
	BPFTRACE_PROF_FAULT_DLOPEN_LATE_MS=$late "$PROF" --heap -o "$f" --top 0 -- \
		env LD_LIBRARY_PATH="$path" LD_PRELOAD="$lib${path:+ libm.so.6}" /bin/true ||
		fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "otel_lib_alloc alloc_space" 400000 "$(pprof_flat "$f" alloc_space otel_lib_alloc)"
	expect_eq "otel_lib_alloc alloc_objects" 200 "$(pprof_flat "$f" alloc_objects otel_lib_alloc)"
	expect_eq "sampled_malloc alloc_space (its malloc calls)" 0 \
		"$(pprof_cum "$f" alloc_space sampled_malloc)"
	expect_eq "counter heap_procs_otel" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
	expect_eq "counter heap_procs_uprobes" 1 "$(pprof_counter_value "$f" heap_procs_uprobes)"
	expect_eq "counter no_stack" 0 "$(pprof_counter_value "$f" no_stack)"
	expect_eq "counter dlopen_unheld_otel" 0 "$(pprof_counter_value "$f" dlopen_unheld_otel)"
}
t_otel_preloaded_library_picked_up() { otel_preloaded; }
t_otel_preloaded_library_report_late() { otel_preloaded late; }

# -f memtrace: each reported block's weight in samples of --sample-bytes (4000: alloc_a's blocks
# are one sample each, alloc_b's three), read back exactly by `bpftrace-prof report`.
t_otel_memtrace_weights() {
	local t=$E2E_TMP/otel.memtrace p=$E2E_TMP/report.pb.gz
	"$PROF" --heap -f memtrace --sample-bytes 4000 -o "$t" -- "$OT" >"$E2E_TMP/target.out" ||
		fail "profiler exit status $?"
	"$PROF" report "$t" -o "$p" || fail "report exit status $?"
	expect_eq "alloc_a alloc_space" 400000 "$(pprof_flat "$p" alloc_space alloc_a)"
	expect_eq "alloc_a alloc_objects" 400 "$(pprof_flat "$p" alloc_objects alloc_a)"
	expect_eq "alloc_a inuse_space" 400000 "$(pprof_flat "$p" inuse_space alloc_a)"
	expect_eq "alloc_b alloc_space" 600000 "$(pprof_flat "$p" alloc_space alloc_b)"
	expect_eq "alloc_b alloc_objects" 200 "$(pprof_flat "$p" alloc_objects alloc_b)"
	expect_eq "alloc_b inuse_space" 0 "$(pprof_flat "$p" inuse_space alloc_b)"
	expect_eq "plain_alloc alloc_space" 0 "$(pprof_cum "$p" alloc_space plain_alloc)"
}

# otel_memory probes on 5-byte nops are not attached: Linux 6.18 turns a uprobe on such a nop
# into a call, which pushes a return address into a leaf's red zone and which a child forked
# after it crashes on (both seen under the attach that was: "corrupt 19999 of 20000, child 11").
# The program keeps its data and its child; its allocations go to the allocator probes.
t_otel_nop5_sites_not_attached() {
	local f=$E2E_TMP/nop5.pb.gz rc
	"$PROF" --heap -o "$f" --top 0 -- build/targets/otel_nop5_nofp </dev/null \
		>"$E2E_TMP/target.out" 2>"$E2E_TMP/err"
	rc=$?
	cat "$E2E_TMP/target.out" "$E2E_TMP/err"
	expect_eq "the program's own report" "corrupt 0 of 20000, child 0" "$(cat "$E2E_TMP/target.out")"
	expect_eq "exit status (the program's)" 0 "$rc"
	grep -q "otel_memory probes sit on 5-byte nops" "$E2E_TMP/err" || fail "no line saying why"
	expect_eq "counter otel_nop5_refused" 1 "$(pprof_counter_value "$f" otel_nop5_refused)"
	expect_eq "counter heap_procs_otel" 0 "$(pprof_counter_value "$f" heap_procs_otel)"
	expect_range "main's mallocs, seen by the allocator probes" 20001 20100 \
		"$(pprof_flat "$f" alloc_objects main)"
}
