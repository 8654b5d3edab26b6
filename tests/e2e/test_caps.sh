#!/bin/bash
# The heap profiler's memory per process (docs/how-it-works.md, heap limits): a process holding
# more live blocks than its cap is counted, not tracked past it, and other processes keep their
# room.  The real caps (1 Mi live blocks in userspace, a quarter of BPF's 1 Mi sampled blocks)
# take too long to fill in a test: the hidden environment variables BPFTRACE_PROF_LIVE_CAP and
# BPFTRACE_PROF_SAMPLED_SHARE lower them, through the same code.
# tests/targets/live_blocks.c: A keeps 300 blocks, frees them, keeps 100; B keeps 50, frees
# them, keeps 50.  Both attached with -p after their set-up, so no other block is seen.

LB=build/targets/live_blocks

# Run A and B (the command CAPS_CMD, an array, else live_blocks) under the profiler with ARGS…,
# writing OUT; CAPS_A, CAPS_B: their pids.
caps_record() { # OUT ARGS…
	local f=$1 a ain b bin cmd=("${CAPS_CMD[@]:-$LB}")
	shift
	start_waiting_target "$E2E_TMP/a.out" "${cmd[@]}" 300 100
	a=$TARGET_PID ain=$TARGET_IN CAPS_A=$TARGET_PID
	start_waiting_target "$E2E_TMP/b.out" "${cmd[@]}" 50 50
	b=$TARGET_PID bin=$TARGET_IN CAPS_B=$TARGET_PID
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
}

# The same, the profile in $E2E_TMP/caps.pb.gz, checked for drops.
caps_run() { # ARGS…
	caps_record "$E2E_TMP/caps.pb.gz" "$@"
	expect_no_drops "$E2E_TMP/caps.pb.gz"
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

# The trace writers keep their own tables of live blocks, under the same caps.
MT_READER=tests/memtrace_reader.py
TRACE_CHECK=tests/e2e/trace_check.py
FF_CHECK=tests/e2e/ff_check.py

# mt_json JSON EXPR: a value of the memtrace reader's output (EXPR indexes the object j).
mt_json() {
	python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# tr_fact FACTS KEY: the value trace_check.py printed for KEY.
tr_fact() {
	awk -v k="$2" 'index($0, k " ") == 1 { v = substr($0, length(k) + 2) } END { print v }' "$1"
}

# -f memtrace, every allocation, 100 live objects a process: A's 200 past its cap are traced and
# never collected (a reader sees them live at the end; their frees are not in the trace), its
# count is back to zero once its followed ones are freed; B is never capped.  The trace stays
# valid to the second reader, no collect of an object not live.  (The untracked flag needs
# --sample-bytes, whose rate 8 / N per word is no memtrace rate under 8: tests/unit.)
t_caps_live_memtrace() {
	local f=$E2E_TMP/caps.memtrace j=$E2E_TMP/caps.json log=$E2E_TMP/prof.log
	BPFTRACE_PROF_LIVE_CAP=100 caps_record "$f" -f memtrace --sample-bytes 0
	python3 "$MT_READER" "$f" >"$j" || fail "the memtrace reader rejected the trace"
	expect_eq "collects of objects not live" 0 "$(mt_json "$j" 'j["unknown_collects"]')"
	expect_eq "allocations" 500 "$(mt_json "$j" 'j["allocs"]')"
	expect_eq "collects (A's 100 followed, B's 50)" 150 "$(mt_json "$j" 'j["collects"]')"
	expect_eq "keep_blocks live at the end (A's 200 capped)" 12800 \
		"$(mt_json "$j" 'round(j["leaf_live_bytes"].get("keep_blocks", 0))')"
	expect_eq "keep_again live at the end" 9600 \
		"$(mt_json "$j" 'round(j["leaf_live_bytes"].get("keep_again", 0))')"
	mt_json "$j" 'j["context"]' |
		grep -q ' unknown_frees=200 replaced_live=0 no_stack=0 .* live_capped=200 untracked=0 *$' ||
		fail "context: $(mt_json "$j" 'j["context"]')"
	grep -q '^  memtrace_live_capped: 200 ' "$log" || fail "no memtrace_live_capped drop: $(cat "$log")"
	for c in ringbuf_full pending_full pending_missing stack_fail; do
		! grep -q "^  $c: " "$log" || fail "drop $c: $(grep "^  $c: " "$log")"
	done
}

# -f chrome, sampled (every block: --sample-bytes 1), 100 sampled blocks a process in BPF's map
# and 50 live blocks a process followed by the writer.  A keeps 300 blocks: BPF keeps 100 and
# flags 200 untracked (their frees do not travel), of the 100 the heap counter follows 50, 50
# are capped (their frees are unknown); A frees them, its count back to zero, and keeps 100
# again: 50 followed, 50 capped.  The 200 untracked are in neither count (BPF counted them).
# B (50, 50) is never capped: its counter is whole.
t_caps_live_chrome() {
	local f=$E2E_TMP/caps.json facts=$E2E_TMP/caps.facts
	BPFTRACE_PROF_SAMPLED_SHARE=100 BPFTRACE_PROF_LIVE_CAP=50 caps_record "$f" -f chrome \
		--sample-bytes 1
	python3 "$TRACE_CHECK" chrome "$f" >"$facts" || { cat "$facts"; fail "trace_check rejected the trace"; }
	expect_eq "A's counter at its peak (50 x 64)" 3200 "$(tr_fact "$facts" "heap $CAPS_A peak")"
	expect_eq "A's counter at the end" 3200 "$(tr_fact "$facts" "heap $CAPS_A final")"
	expect_eq "B's counter at its peak" 3200 "$(tr_fact "$facts" "heap $CAPS_B peak")"
	expect_eq "B's counter at the end" 3200 "$(tr_fact "$facts" "heap $CAPS_B final")"
	expect_eq "trace_heap_untracked" 100 "$(tr_fact "$facts" "drop trace_heap_untracked")"
	expect_eq "trace_heap_unknown_frees" 50 "$(tr_fact "$facts" "drop trace_heap_unknown_frees")"
	expect_eq "sampled_proc_cap" 200 "$(tr_fact "$facts" "drop sampled_proc_cap")"
	for c in ringbuf_full pending_full pending_missing stack_fail sampled_full; do
		expect_eq "$c" 0 "$(tr_fact "$facts" "drop $c")"
	done
}

# -f firefox --calls --heap, the same run as t_caps_live_chrome's with live_blocks.php (PHP's
# strings from malloc, 64 KiB each: ff_check's large allocations, by leaf function): every
# allocation is written, a free only for a block followed.  A: BPF keeps 100 of keep_blocks'
# 300 and flags 200 untracked, of the 100 the writer follows 50 (their frees written) and 50
# are capped; keep_again the same.  The untracked take no room: trace_heap_untracked counts the
# capped alone.  B (50, 50) is never capped.  Before the caps every tracked free was written.
t_caps_live_firefox() {
	command -v php >/dev/null || fail "php is not installed"
	local f=$E2E_TMP/caps.json facts=$E2E_TMP/caps.facts n bytes
	local CAPS_CMD=(env USE_ZEND_DTRACE=1 USE_ZEND_ALLOC=0 php tests/targets/live_blocks.php)
	BPFTRACE_PROF_SAMPLED_SHARE=100 BPFTRACE_PROF_LIVE_CAP=50 caps_record "$f" --calls \
		-f firefox --sample-bytes 1
	python3 "$FF_CHECK" "$f" >"$facts" || { cat "$facts"; fail "ff_check rejected the profile"; }
	read -r n _ <<<"$(tr_fact "$facts" "large_alloc keep_blocks")"
	expect_eq "keep_blocks allocations written (A 300, B 50)" 350 "$n"
	read -r n _ <<<"$(tr_fact "$facts" "large_alloc keep_again")"
	expect_eq "keep_again allocations written (A 100, B 50)" 150 "$n"
	read -r n bytes <<<"$(tr_fact "$facts" "large_free free_blocks")"
	expect_eq "frees written (A's 50 followed, B's 50)" 100 "$n"
	expect_eq "bytes freed (100 x 65,568)" 6556800 "$bytes"
	expect_eq "trace_heap_untracked (A's capped)" 100 "$(tr_fact "$facts" "drop trace_heap_untracked")"
	expect_eq "trace_heap_unknown_frees (A's capped, freed)" 50 \
		"$(tr_fact "$facts" "drop trace_heap_unknown_frees")"
	expect_eq "sampled_proc_cap" 200 "$(tr_fact "$facts" "drop sampled_proc_cap")"
	for c in ringbuf_full pending_full pending_missing stack_fail sampled_full; do
		expect_eq "$c" 0 "$(tr_fact "$facts" "drop $c")"
	done
}

# The memory of the allocation stacks held (docs/how-it-works.md, heap limits): a process with
# ever new allocation stacks keeps its first ones whole and puts the allocations of the rest
# under its one [stacks capped] stack, counted (stacks_capped), nothing lost; the next process
# has its own room.  BPFTRACE_PROF_STACK_CAP lowers the per-process cap (512 MiB) to 1 MiB:
# many_stacks' 131,072 distinct 40-frame stacks cost 2,688 bytes each there, so about 390 are
# kept; two of it run one after the other (sh -c), each with its own count.  Before the cap
# every one was kept (5 M frames, 335 MB of ours).
t_caps_stacks_per_process() {
	local f=$E2E_TMP/stacks.pb.gz pid kept capped n=0 sum=0
	BPFTRACE_PROF_STACK_CAP=1048576 "$PROF" --heap -o "$f" --top 0 -- \
		sh -c 'build/targets/many_stacks && build/targets/many_stacks' >"$E2E_TMP/stacks.out" ||
		fail "profiler exit status $?"
	expect_eq "targets finished" 2 "$(grep -c '^131072 blocks of 24 bytes, 0 failed$' "$E2E_TMP/stacks.out")"
	go tool pprof -symbolize=none -raw "$f" >"$f.raw" 2>/dev/null || fail "go tool pprof -raw failed"
	expect_no_drops_raw "$f" "${DROP_COUNTERS/stacks_capped/}" <"$f.raw"
	# per pid: allocations whose leaf is alloc_leaf, and those under [stacks capped]
	awk 'FNR == NR { if (/^Locations/) l = 1; else if (/^Mappings/) l = 0
			else if (l && /^ +[0-9]+: 0x/) { id = $1; sub(/:$/, "", id)
				fn[id] = /\[stacks capped\]/ ? "capped" : $4 }
			next }
		/^Samples/ { s = 1; next }
		/^Locations/ { s = 0 }
		s && /^ +[0-9]+( +[0-9]+)+: / { v = $0; sub(/:.*/, "", v); split(v, val, " ")
			st = $0; sub(/^[^:]*: */, "", st); split(st, ids, " "); leaf = fn[ids[1]]; next }
		s && /pid:\[/ { p = $0; sub(/.*pid:\[/, "", p); sub(/\].*/, "", p)
			if (leaf == "alloc_leaf") kept[p] += val[1]; else if (leaf == "capped") cap[p] += val[1] }
		END { for (p in kept) print p, kept[p], cap[p] + 0 }' "$f.raw" "$f.raw" >"$f.pids"
	cat "$f.pids"
	while read -r pid kept capped; do
		n=$((n + 1)) sum=$((sum + capped))
		if [ "$kept" -lt 100 ] || [ "$kept" -gt 1000 ]; then
			fail "pid $pid: $kept allocations under alloc_leaf's own stacks (want the ~390 the cap holds)"
		fi
		expect_eq "pid $pid: allocations kept whole and under [stacks capped]" 131072 "$((kept + capped))"
	done <"$f.pids"
	expect_eq "processes of many_stacks" 2 "$n"
	expect_eq "stacks_capped (each event under [stacks capped])" "$sum" "$(pprof_counter_value "$f" stacks_capped)"
}
