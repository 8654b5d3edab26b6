# Heap profiling end to end: exact numbers from tests/targets/heap_target.cc, read back with
# go tool pprof (an independent decoder), per function, per thread, for -- CMD and -p PID.

HT=build/targets/heap_target


# One tid per worker thread, each with its own name, none equal to the pid.
check_heap_threads() { # FILE PID
	local f=$1 pid=$2
	pprof_traces "$f" | grep '|churn_small;' >"$f.churn"
	expect_eq "churn stacks (one per worker)" 4 "$(wc -l <"$f.churn")"
	expect_eq "distinct worker tids" 4 "$(grep -o 'tid=[0-9]*' "$f.churn" | sort -u | wc -l)"
	expect_eq "worker names" "worker-0 worker-1 worker-2 worker-3" \
		"$(grep -o 'comm=worker-[0-9]' "$f.churn" | sed 's/comm=//' | sort | xargs)"
	grep -q "tid=$pid " "$f.churn" && fail "a worker has the main thread's tid"
	expect_eq "pid label" 4 "$(grep -c "pid=$pid " "$f.churn")"
	grep -q "tid=$pid .*|leak_pages;" <(pprof_traces "$f") || fail "leak_pages not on the main thread"
	echo "ok: threads"
}

t_heap_cmd_exact_numbers() {
	local f=$E2E_TMP/cmd.pb.gz
	"$PROF" --heap -o "$f" --top 0 -- "$HT" || fail "profiler exit status $?"
	check_heap_numbers "$f"
	# -- CMD misses nothing: a constructor's allocations, made before main, are there too
	expect_eq "before_main inuse_space" 2331 "$(pprof_flat "$f" inuse_space before_main)"
	local pid
	pid=$(pprof_traces "$f" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
	check_heap_threads "$f" "$pid"
	go tool pprof -symbolize=none -raw "$f" | grep -Eq '^Comment: (no drops$|unknown_frees=[1-9])' ||
		fail "neither 'no drops' nor a drop counter in the comments"
}

# Exact mode takes uprobe_multi links where the kernel has them (Linux 6.6): three per file
# (returns, frees, entries), detached in one batch at exit instead of one grace period per
# function.  Every file probed got them (heap_multi_files equals the files -vv names, each
# function logged as uprobe_multi) and the numbers are exact.  A file whose links are refused
# (BPFTRACE_PROF_FAULT_SESSION: this kernel never refuses one file alone) gets a uprobe per
# function (heap_multi_refused), the other keeps its links, and the numbers stay exact.
t_heap_multi_links_per_file() {
	local f=$E2E_TMP/multi.pb.gz log=$E2E_TMP/multi.log files
	"$PROF" --heap -vv -o "$f" --top 0 -- "$HT" 2>"$log" || fail "profiler exit status $?"
	check_heap_numbers "$f"
	files=$(sed -n 's/.*: probing \(.*\) at \(.*\)+0x[0-9a-f]* (+[0-9]*).*/\2/p' "$log" | sort -u | wc -l)
	expect_eq "files probed (libc, libstdc++)" 2 "$files"
	expect_eq "heap_multi_files" "$files" "$(pprof_counter_value "$f" heap_multi_files)"
	expect_eq "files logged as uprobe_multi" "$files" "$(grep -c 'through uprobe_multi links$' "$log")"
	expect_eq "functions not on a multi link" 0 "$(grep ': probing .* at ' "$log" | grep -vc ', uprobe_multi$')"
	expect_eq "heap_multi_refused" 0 "$(pprof_counter_value "$f" heap_multi_refused)"

	f=$E2E_TMP/multi_refused.pb.gz log=$E2E_TMP/multi_refused.log
	BPFTRACE_PROF_FAULT_SESSION=libc.so.6 "$PROF" --heap -vv -o "$f" --top 0 -- "$HT" 2>"$log" ||
		fail "profiler exit status $?"
	check_heap_numbers "$f"
	expect_eq "heap_multi_refused (libc)" 1 "$(pprof_counter_value "$f" heap_multi_refused)"
	expect_eq "heap_multi_files (libstdc++)" 1 "$(pprof_counter_value "$f" heap_multi_files)"
	grep -q 'uprobe_multi links refused for .*/libc.so.6: ' "$log" || fail "no refusal logged for libc"
	grep -Eq ': probing malloc at .*/libc.so.6\+0x[0-9a-f]+ \(\+[0-9]+\)$' "$log" ||
		fail "libc's malloc not probed by a uprobe of its own"
}

# ring_bytes PID: max_entries of the ring buffer (prof_events) that process PID holds.
ring_bytes() {
	local fd id map
	for fd in /proc/"$1"/fdinfo/*; do
		id=$(sed -n 's/^map_id:[[:space:]]*//p' "$fd" 2>/dev/null)
		[ -n "$id" ] || continue
		map=$(bpftool map show id "$id" 2>/dev/null)
		[[ $map == *" name prof_events "* ]] || continue
		sed -n 's/.*max_entries \([0-9]*\).*/\1/p' <<<"$map"
		return
	done
}

# The ring buffer's default: a quarter MiB per possible CPU, a power of two from 1 to 16 MiB.
ring_default() {
	local n b=$((1 << 20))
	n=$(awk -F, '{ for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } } END { print n }' /sys/devices/system/cpu/possible)
	while [ "$b" -lt $((16 << 20)) ] && [ "$b" -lt $((n << 18)) ]; do b=$((b * 2)); done
	echo "$b"
}

# The ring buffer: ring_default's size, or --ring-buffer's (t_heap_pid_maps_read_once_per_event);
# the backlog's thread moves its records out (not with --backlog 0: t_heap_backlog_off).
t_heap_pid_attach_and_sigint() {
	local f=$E2E_TMP/pid.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$HT" --wait
	start_profiler "$E2E_TMP/prof.log" --heap -v -p "$TARGET_PID" -o "$f" --top 5
	expect_eq "ring buffer bytes" "$(ring_default)" "$(ring_bytes "$PROF_PID")"
	grep -qx prof-backlog /proc/"$PROF_PID"/task/*/comm || fail "no backlog thread"
	finish_waiting_run
	expect_one_line "events line with the backlog" "events: .*, backlog peak [0-9.]+ MiB \(full 0\)" "$E2E_TMP/prof.log"
	check_heap_numbers "$f"
	check_heap_threads "$f" "$TARGET_PID"
	# The summary goes to stderr: stdout is for data asked for (-o -) and CMD's output.
	grep -q "leak_pages" "$E2E_TMP/prof.log" || fail "no top-N summary on stderr"
	[ ! -s "$E2E_TMP/prof.log.out" ] || fail "something on stdout: $(head -3 "$E2E_TMP/prof.log.out")"
}

# --backlog 0: the event loop reads the ring itself, as before the backlog: no thread, the same
# numbers.
t_heap_backlog_off() {
	local f=$E2E_TMP/nobacklog.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$HT" --wait
	start_profiler "$E2E_TMP/prof.log" --heap -v --backlog 0 -p "$TARGET_PID" -o "$f" --top 5
	! grep -qx prof-backlog /proc/"$PROF_PID"/task/*/comm || fail "a backlog thread with --backlog 0"
	finish_waiting_run
	check_heap_numbers "$f"
	expect_one_line "events line" "events: .*, backlog peak 0.0 MiB \(full 0\)" "$E2E_TMP/prof.log"
}

# One read of a target's /proc/PID/maps per event, shared by all that need it (the unwinder, the
# loader hook and the symbolizer when -p adds it; the allocator probes after the tables are in):
# the run's bookkeeping line counts them.  A sleeping target makes no other event.
t_heap_pid_maps_read_once_per_event() {
	local f=$E2E_TMP/once.pb.gz pid
	sleep 60 &
	pid=$!
	start_profiler "$E2E_TMP/prof.log" --heap -d 1 -p "$pid" -o "$f" --ring-buffer 2
	expect_eq "ring buffer bytes (--ring-buffer 2)" $((2 << 20)) "$(ring_bytes "$PROF_PID")"
	wait "$PROF_PID" || fail "profiler exit status $?"
	kill "$pid"
	expect_one_line "bookkeeping" "heap profile bookkeeping:.* maps_reads=2( |$)" "$E2E_TMP/prof.log"
}

t_heap_sigkilled_target_still_written() {
	local f=$E2E_TMP/killed.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$HT" --wait
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	echo go >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "target did not finish"
	kill -KILL "$TARGET_PID"
	wait "$TARGET_PID" 2>/dev/null
	# The profiler notices the exit by itself.
	local i
	for ((i = 0; i < 100; i++)); do kill -0 "$PROF_PID" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$PROF_PID" 2>/dev/null && fail "profiler still running after its target died"
	wait "$PROF_PID" || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "leak_pages inuse_space after SIGKILL" 4096000 "$(pprof_flat "$f" inuse_space leak_pages)"
	expect_eq "churn_small alloc_objects after SIGKILL" 400000 "$(pprof_flat "$f" alloc_objects churn_small)"
}

# Is PID still a live process named NAME?  (A zombie or a reused pid is not.)
alive_as() { # PID NAME
	[ -r "/proc/$1/stat" ] || return 1
	[ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] || return 1
	! grep -q '^[0-9]* ([^)]*) Z ' "/proc/$1/stat"
}

t_heap_duration_stops_and_kills_cmd() {
	local f=$E2E_TMP/dur.folded start end spid i pidfile=$E2E_TMP/sleep.pid
	start=$(date +%s)
	# CMD's child sleep starts first and says its pid: after -d, that very process must be gone.
	"$PROF" -v --heap -d 1 -f folded -o "$f" --top 0 -- \
		sh -c "sleep 31.5 & echo \$! >$pidfile; build/targets/heap_target; wait" 2>"$E2E_TMP/dur.log" ||
		fail "exit status $?"
	end=$(date +%s)
	[ $((end - start)) -lt 15 ] || fail "-d 1 did not stop the run"
	expect_no_drops_log "$E2E_TMP/dur.log"
	# children are followed: heap_target ran as a child of sh
	grep -q '^heap_target;.*;main;leak_pages 4096000$' "$f" || { head "$f"; fail "folded line for leak_pages"; }
	spid=$(cat "$pidfile") || fail "CMD never started its sleep"
	for ((i = 0; i < 50; i++)); do alive_as "$spid" sleep || break; sleep 0.1; done
	alive_as "$spid" sleep && fail "CMD's child sleep (pid $spid) left running after -d"
	echo "ok: folded + follow children + -d"
}

t_heap_text_to_stdout() {
	local out=$E2E_TMP/text.out
	"$PROF" --heap -f text -o - --top 20 -- "$HT" >"$out" || fail "exit status $?"
	expect_no_drops_text "$out"
	grep -Eq '^ +4096000 .* leak_pages$' "$out" || { cat "$out"; fail "text report lacks leak_pages 4096000"; }
	grep -Eq '^ +25600000 .* churn_small$' "$out" || fail "text report lacks churn_small 25600000"
	grep -Eq '^(drops:|no drops)$' "$out" || fail "no drops section in the text report"
}

t_heap_bad_input() {
	local rc out=$E2E_TMP/bad.err
	"$PROF" --heap -p 999999999 2>"$out"; rc=$?
	expect_eq "unknown pid status" 2 "$rc"
	grep -q "no such process" "$out" || fail "message: $(cat "$out")"
	[ "$(wc -l <"$out")" -eq 1 ] || fail "error is not one line: $(cat "$out")"

	"$PROF" --heap -- /nonexistent/prog 2>"$out"; rc=$?
	expect_eq "missing command status" 2 "$rc"
	grep -q "cannot run /nonexistent/prog" "$out" || fail "message: $(cat "$out")"

	"$PROF" --heap --bogus 2>"$out"; rc=$?
	expect_eq "bad option status" 2 "$rc"

	"$PROF" --heap -o /nonexistent-dir/x.pb.gz --top 0 -- true 2>"$out"; rc=$?
	# found before the run (test_cli_paths.sh has the cases)
	expect_eq "unwritable output status" 2 "$rc"
	grep -q "cannot write /nonexistent-dir/x.pb.gz" "$out" || fail "message: $(cat "$out")"
	[ "$(wc -l <"$out")" -eq 1 ] || fail "error is not one line: $(cat "$out")"

	ln -sf "$E2E_TMP/victim" "$E2E_TMP/link.pb.gz"
	echo keep >"$E2E_TMP/victim"
	"$PROF" --heap -o "$E2E_TMP/link.pb.gz" --top 0 -- true 2>"$out"; rc=$?
	expect_eq "symlink output status" 2 "$rc"
	expect_eq "symlink target untouched" keep "$(cat "$E2E_TMP/victim")"
	grep -q "symbolic link" "$out" || fail "message: $(cat "$out")"

	"$PROF" --heap --top 0 -- build/targets/noalloc 2>"$out"; rc=$?
	expect_eq "no allocator status" 2 "$rc"
	grep -q "no allocator to probe" "$out" || fail "message: $(cat "$out")"

	setpriv --reuid=65534 --regid=65534 --clear-groups "$PROF" --heap --top 0 -o /tmp/x.pb.gz -- true 2>"$out"; rc=$?
	expect_eq "not root status" 1 "$rc"
	grep -q "run with sudo" "$out" || fail "message: $(cat "$out")"
}

t_heap_static_binary_own_allocator() {
	local f=$E2E_TMP/static.pb.gz
	readelf -l build/targets/static_target | grep -q INTERP && fail "static_target is not static"
	"$PROF" --heap -o "$f" --top 0 -- build/targets/static_target || fail "exit status $?"
	expect_no_drops "$f"
	expect_eq "static_leak inuse_space (-- CMD)" 200000 "$(pprof_flat "$f" inuse_space static_leak)"
	expect_eq "static_churn alloc_objects (-- CMD)" 5000 "$(pprof_flat "$f" alloc_objects static_churn)"
	expect_eq "static_churn inuse_objects (-- CMD)" 0 "$(pprof_flat "$f" inuse_objects static_churn)"

	f=$E2E_TMP/static_pid.pb.gz
	start_waiting_target "$E2E_TMP/target.out" build/targets/static_target --wait
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	echo go >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "target did not finish"
	echo bye >&"$TARGET_IN"
	wait "$TARGET_PID"
	wait "$PROF_PID" || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "static_leak inuse_space (-p)" 200000 "$(pprof_flat "$f" inuse_space static_leak)"
	expect_eq "static_churn alloc_space (-p)" 160000 "$(pprof_flat "$f" alloc_space static_churn)"
}

# -p follows an exec: a shell that execs heap_nofp with a copy of the libc (another file than
# the shell's) has the new image's allocators probed at the dynamic loader's first report of it
# (before, only the files mapped at the attach were probed: 0 bytes seen).
t_heap_pid_exec_other_libc() {
	local f=$E2E_TMP/pidexec.pb.gz lib=$E2E_TMP/lib
	mkdir -p "$lib"
	cp "$(realpath /lib/x86_64-linux-gnu/libc.so.6)" "$lib/libc.so.6"
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/target.out" \
		sh -c 'echo READY; read -r x && LD_LIBRARY_PATH="$1" exec "$0"' build/targets/heap_nofp "$lib"
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	echo exec >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "heap_nofp did not finish"
	wait "$TARGET_PID"
	wait "$PROF_PID" || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "alloc_a alloc_space" 3000000 "$(pprof_flat "$f" alloc_space alloc_a)"
	expect_eq "alloc_b inuse_space" 1000000 "$(pprof_flat "$f" inuse_space alloc_b)"
	expect_eq "counter heap_procs_uprobes (the shell's image, heap_nofp's)" 2 \
		"$(pprof_counter_value "$f" heap_procs_uprobes)"
}

# The same for a static program, which no dynamic loader reports: its own allocator is probed
# when its exec is read (before, nothing: 0 bytes).
t_heap_pid_exec_static() {
	local f=$E2E_TMP/pidstatic.pb.gz
	# shellcheck disable=SC2016 # expanded by the inner sh
	start_waiting_target "$E2E_TMP/target.out" \
		sh -c 'echo READY; read -r x && exec "$0" --wait' build/targets/static_target
	start_profiler "$E2E_TMP/prof.log" -v --heap -p "$TARGET_PID" -o "$f" --top 0
	echo exec >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" "READY $TARGET_PID" 10 || fail "static_target never became ready"
	# -p does not hold an exec: the new image's probes go in as the profiler reads it
	wait_for_line "$E2E_TMP/prof.log" "probing the allocator of .*static_target" 10 ||
		echo "  (its allocator was never probed)" >&2
	echo go >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" DONE 30 || fail "static_target did not finish"
	echo bye >&"$TARGET_IN"
	wait "$TARGET_PID"
	wait "$PROF_PID" || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "static_leak inuse_space" 200000 "$(pprof_flat "$f" inuse_space static_leak)"
	expect_eq "static_churn alloc_space" 160000 "$(pprof_flat "$f" alloc_space static_churn)"
}

# A std::bad_alloc thrown by operator new unwinds and is caught while --heap probes operator
# new: a uretprobe there put the kernel's trampoline in the return-address slot, where the C++
# unwinder finds no unwind info and calls std::terminate.
t_heap_cxx_bad_alloc_caught() {
	local f=$E2E_TMP/bad_alloc.pb.gz lib=$E2E_TMP/lib out=$E2E_TMP/bad_alloc.out err=$E2E_TMP/bad_alloc.err
	# A private copy of libstdc++: uprobes belong to an inode, so probes another session holds on
	# the system's copy (a --heap -- CMD probes every process mapping it) cannot decide this test.
	mkdir -p "$lib"
	cp "$(g++ -print-file-name=libstdc++.so.6)" "$lib/libstdc++.so.6" || fail "no libstdc++ to copy"
	LD_LIBRARY_PATH=$lib "$PROF" --heap -o "$f" --top 0 -- build/targets/bad_alloc >"$out" 2>"$err" ||
		fail "profiler exit status $?"
	grep -q terminate "$err" && fail "the target aborted: $(cat "$err")"
	expect_eq "target output (it caught the exception and returned 0 after it)" caught "$(cat "$out")"
	expect_no_drops "$f"
	go tool pprof -symbolize=none -raw "$f" | grep -q '^Comment: cxx_throws=1 ' ||
		fail "the throw was not seen: $(go tool pprof -symbolize=none -raw "$f" | grep cxx_throws)"
	# The failed allocation is not an allocation: nothing of huge_new, live or not.
	expect_eq "huge_new alloc_objects" 0 "$(pprof_flat "$f" alloc_objects huge_new)"
	expect_eq "huge_new inuse_space" 0 "$(pprof_flat "$f" inuse_space huge_new)"
	# Allocations after the throw are counted as usual, with their caller as the leaf.
	expect_eq "after_throw alloc_objects" 10 "$(pprof_flat "$f" alloc_objects after_throw)"
	expect_eq "after_throw inuse_space" 10000 "$(pprof_flat "$f" inuse_space after_throw)"
}

# tests/targets/many_stacks.c: 131072 allocations of 24 bytes on 131072 distinct stacks, twice
# what the old stack map held.  Frames travel with each event, so none is lost or merged.  The
# profile is read once (`go tool pprof -raw`, every value of every sample): parsing it takes
# seconds, and `-top` would parse it again for each sample type.
t_heap_no_stack_lost_with_many_distinct_stacks() {
	local f=$E2E_TMP/many.pb.gz n objects space inuse_objects inuse_space distinct whole re
	"$PROF" --heap -o "$f" --top 0 -- build/targets/many_stacks >"$E2E_TMP/many.out" ||
		fail "profiler exit status $?"
	grep -q '^131072 blocks of 24 bytes, 0 failed$' "$E2E_TMP/many.out" || fail "target: $(cat "$E2E_TMP/many.out")"
	go tool pprof -symbolize=none -raw "$f" >"$f.raw" 2>/dev/null || fail "go tool pprof -raw failed"
	expect_no_drops_raw "$f" "$DROP_COUNTERS no_stack" <"$f.raw"
	# Locations (after the samples) by id, then the samples whose leaf is alloc_leaf: their
	# count, the four values summed, distinct stacks, and stacks with 17 levels of left/right
	# between alloc_leaf and main (each one whole).
	re="^alloc_leaf;level;"
	for _ in $(seq 17); do re+='(left|right);level;'; done
	read -r n objects space inuse_objects inuse_space distinct whole < <(awk -v whole="${re}main;" '
		FNR == NR { if (/^Locations/) l = 1; else if (/^Mappings/) l = 0
			else if (l && /^ +[0-9]+: 0x/) { id = $1; sub(/:$/, "", id); fn[id] = $4 }
			next }
		/^Samples/ { s = 1; next }
		/^Locations/ { s = 0 }
		s && /^ +[0-9]+( +[0-9]+)+: / {
			v = $0; sub(/:.*/, "", v); split(v, val, " ")
			st = $0; sub(/^[^:]*: */, "", st); k = split(st, ids, " ")
			if (fn[ids[1]] != "alloc_leaf") next
			st = fn[ids[1]]
			for (i = 2; i <= k; i++) st = st ";" fn[ids[i]]
			n++; ao += val[1]; as += val[2]; io += val[3]; is += val[4]
			if (!(st in seen)) { seen[st] = 1; d++ }
			if (st ~ whole) w++
		}
		END { print n + 0, ao + 0, as + 0, io + 0, is + 0, d + 0, w + 0 }' "$f.raw" "$f.raw")
	expect_eq "alloc_leaf alloc_objects" 131072 "$objects"
	expect_eq "alloc_leaf alloc_space" 3145728 "$space"
	expect_eq "alloc_leaf inuse_objects" 131072 "$inuse_objects"
	expect_eq "alloc_leaf inuse_space" 3145728 "$inuse_space"
	expect_eq "samples through alloc_leaf" 131072 "$n"
	expect_eq "distinct stacks through alloc_leaf" 131072 "$distinct"
	expect_eq "stacks with 17 levels under main" 131072 "$whole"
}

# A server attached with -p (tests/targets/churn_server.c) frees its 64 connection records
# allocated before the attach: unknown_frees, expected, and not a drop anywhere.  The pprof
# comments keep the event totals and drops but not our bookkeeping (unwind_table_bytes …),
# which goes to the -v log.
t_heap_pid_server_unknown_frees_not_drops() {
	local f=$E2E_TMP/server.pb.gz out=$E2E_TMP/server.out raw=$E2E_TMP/server.raw pid n
	build/targets/churn_server 30 >"$out" 2>&1 &
	pid=$!
	wait_for_line "$out" READY 10 || fail "churn_server never became ready"
	"$PROF" -v --heap -p "$pid" -d 2 -o "$f" --top 5 >"$E2E_TMP/server.sum" 2>"$E2E_TMP/server.log" ||
		fail "exit status $?"
	kill "$pid"
	wait "$pid" 2>/dev/null
	go tool pprof -symbolize=none -raw "$f" >"$raw" 2>/dev/null || fail "pprof cannot read $f"
	grep '^Comment: ' "$raw"
	n=$(pprof_counter_value "$f" unknown_frees)
	# the records' first round: 64 frees of blocks allocated before the attach, and at most
	# the request buffer and the record in the making at that instant — or 63 when the probes
	# begin between a request's free of its record and the malloc of the new one (that new
	# record is seen, and the slot's old block was freed before).  The probes go in one by one
	# over milliseconds but begin together (heap_armed): with the free probe live first, a
	# loaded machine saw 162, and 100 returns without their entry.
	expect_range "unknown_frees" 63 66 "$n"
	cat "$E2E_TMP/server.sum" "$E2E_TMP/server.log" >"$E2E_TMP/server.all"
	# (one call under way at the start, of the one thread, may end without its entry seen)
	n=$(sed -n 's/^ *pending_missing: \([0-9]*\) .*/\1/p' "$E2E_TMP/server.all")
	expect_range "pending_missing" 0 1 "${n:-0}"
	grep -Eq '^(drops:|no drops)$' "$E2E_TMP/server.all" || fail "no drops section in the summary"
	grep -Eq '^ +unknown_frees: ' "$E2E_TMP/server.all" && fail "unknown_frees listed under drops"
	grep -Eq '^Comment: (unwind_table_bytes|unwind_tables_built|unwind_build_ms|probe_links)=' "$raw" &&
		fail "bookkeeping in the pprof comments: $(grep -E '^Comment: (unwind_|probe_links)' "$raw" | tr '\n' ' ')"
	grep -Eq 'heap profile bookkeeping:.* probe_links=[1-9]' "$E2E_TMP/server.log" ||
		fail "no bookkeeping line with probe_links in the -v log"
	# (no tables under --unwind fp)
	[[ " ${E2E_PROF_ARGS:-} " == *" fp "* ]] ||
		grep -Eq 'bookkeeping:.* unwind_tables_built=[1-9].* unwind_table_bytes=[1-9]' "$E2E_TMP/server.log" ||
		fail "unwind_tables_built and unwind_table_bytes not in the -v log"
}
