#!/bin/bash
# The heap profiler's memory per process (docs/how-it-works.md, heap limits): a process holding
# more live blocks than its cap is counted, not tracked past it, and other processes keep their
# room.  The real caps (1 Mi live blocks in userspace, a quarter of BPF's 1 Mi sampled blocks)
# take too long to fill in a test: the hidden environment variables BPFTRACE_PROF_LIVE_CAP and
# BPFTRACE_PROF_SAMPLED_SHARE lower them, through the same code.
# tests/targets/live_blocks.c: A keeps 300 blocks, frees them, keeps 100; B keeps 50, frees
# them, keeps 50.  Both attached with -p after their set-up, so no other block is seen.

LB=build/targets/live_blocks

# Run A and B under the profiler with ARGS…; the profile in $E2E_TMP/caps.pb.gz.
caps_run() { # ARGS…
	local f=$E2E_TMP/caps.pb.gz a ain b bin
	start_waiting_target "$E2E_TMP/a.out" "$LB" 300 100
	a=$TARGET_PID ain=$TARGET_IN
	start_waiting_target "$E2E_TMP/b.out" "$LB" 50 50
	b=$TARGET_PID bin=$TARGET_IN
	start_profiler "$E2E_TMP/prof.log" --heap -p "$a,$b" -o "$f" --top 0 "$@"
	echo go >&"$ain"
	echo go >&"$bin"
	wait_for_line "$E2E_TMP/a.out" DONE 30 || fail "target A did not finish"
	wait_for_line "$E2E_TMP/b.out" DONE 30 || fail "target B did not finish"
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $?: $(tail -5 "$E2E_TMP/prof.log")"
	echo bye >&"$ain"
	echo bye >&"$bin"
	wait "$a" "$b"
	expect_no_drops "$f"
}

# Exact mode, 100 live blocks a process: A's blocks past 100 still count as allocated, are not in
# use, and their frees are unknown frees (an event, not a loss); its count is back to zero once
# its tracked blocks are freed (keep_again is tracked whole); B is never capped.
t_caps_live_per_process() {
	local f=$E2E_TMP/caps.pb.gz
	BPFTRACE_PROF_LIVE_CAP=100 caps_run
	expect_eq "live_capped" 200 "$(pprof_counter_value "$f" live_capped)"
	expect_eq "unknown_frees" 200 "$(pprof_counter_value "$f" unknown_frees)"
	expect_eq "keep_blocks alloc_objects" 350 "$(pprof_flat "$f" alloc_objects keep_blocks)"
	expect_eq "keep_blocks alloc_space" 22400 "$(pprof_flat "$f" alloc_space keep_blocks)"
	expect_eq "keep_blocks inuse_objects" 0 "$(pprof_flat "$f" inuse_objects keep_blocks)"
	expect_eq "keep_again inuse_objects" 150 "$(pprof_flat "$f" inuse_objects keep_again)"
	expect_eq "keep_again inuse_space" 9600 "$(pprof_flat "$f" inuse_space keep_again)"
	expect_eq "replaced_live" 0 "$(pprof_counter_value "$f" replaced_live)"
	expect_eq "sampled_proc_cap" 0 "$(pprof_counter_value "$f" sampled_proc_cap)"
}

# Sampled (every 64-byte block: --sample-bytes 1), 100 blocks a process in BPF's map: A's 200
# past its share still count as allocated, flagged untracked (their frees do not travel), so not
# in use, and the addresses handed out again later replace nothing; the 100 tracked frees bring
# A's count back to zero, so keep_again is tracked whole; B is never capped.
t_caps_sampled_per_process() {
	local f=$E2E_TMP/caps.pb.gz
	BPFTRACE_PROF_SAMPLED_SHARE=100 caps_run --sample-bytes 1
	expect_eq "sampled_proc_cap" 200 "$(pprof_counter_value "$f" sampled_proc_cap)"
	expect_eq "keep_blocks alloc_objects" 350 "$(pprof_flat "$f" alloc_objects keep_blocks)"
	expect_eq "keep_blocks inuse_objects" 0 "$(pprof_flat "$f" inuse_objects keep_blocks)"
	expect_eq "keep_again inuse_objects" 150 "$(pprof_flat "$f" inuse_objects keep_again)"
	expect_eq "replaced_live" 0 "$(pprof_counter_value "$f" replaced_live)"
	expect_eq "unknown_frees" 0 "$(pprof_counter_value "$f" unknown_frees)"
	expect_eq "live_capped" 0 "$(pprof_counter_value "$f" live_capped)"
}

# A process's count of sampled blocks goes to zero at its exec (its blocks went with the old
# image): -- CMD keeps 100 blocks (its whole share), execs itself, and keeps 100 more, all tracked.
t_caps_sampled_share_back_at_exec() {
	local f=$E2E_TMP/exec.pb.gz
	BPFTRACE_PROF_SAMPLED_SHARE=100 "$PROF" --heap --sample-bytes 1 --no-preload -o "$f" \
		--top 0 -- "$LB" -x 0 100 0 100 || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "sampled_proc_cap" 0 "$(pprof_counter_value "$f" sampled_proc_cap)"
	expect_eq "keep_again alloc_objects" 200 "$(pprof_flat "$f" alloc_objects keep_again)"
	expect_eq "keep_again inuse_objects" 100 "$(pprof_flat "$f" inuse_objects keep_again)"
	expect_eq "exec_released" 100 "$(pprof_counter_value "$f" exec_released)"
}
