# Deep stacks (issue 28): user stacks up to 1024 frames are kept whole, as a user counts frames (a
# Python frame is one); deeper ones keep 768 frames of the leaf side and 255 of the root side
# around one frame "[N frames cut]", counted in unwind_depth (stacks) and unwind_cut_frames
# (frames).  Off the CPU too: a stack deeper than the thread's 255-word record is kept whole in a
# record of its own (offcpu_deep_full when there is no room: cut to 255 words).
# tests/targets/deep_nofp.c (no frame pointers: the .eh_frame unwinder walks it) and
# tests/targets/py_deep.py.  Read back with go tool pprof only.

DN=build/targets/deep_nofp
PY_DEEP=$PWD/tests/targets/py_deep.py
DEEP_BLOCK=4321 # deep_nofp's block size

# deep_nofp DEPTH COUNT under --heap; writes $E2E_TMP/deep.pb.gz and its stacks (pprof_stacks,
# inuse_space) with deep_leaf to $E2E_TMP/deep.leaf.
deep_heap_run() { # DEPTH COUNT
	local f=$E2E_TMP/deep.pb.gz
	"$PROF" --heap -o "$f" --top 0 -- "$DN" "$1" "$2" >"$E2E_TMP/target.out" 2>"$E2E_TMP/prof.err" ||
		{ cat "$E2E_TMP/prof.err"; fail "profiler exit status $?"; }
	expect_eq "target output" "DONE $1" "$(cat "$E2E_TMP/target.out")"
	pprof_stacks "$f" inuse_space >"$E2E_TMP/deep.stacks"
	grep -E '\|deep_leaf(;|$)' "$E2E_TMP/deep.stacks" >"$E2E_TMP/deep.leaf"
	expect_eq "in-use bytes on stacks with deep_leaf as leaf" $(($2 * DEEP_BLOCK)) \
		"$(sum_all "$E2E_TMP/deep.leaf")"
	expect_eq "stacks with deep_leaf as leaf" 1 "$(wc -l <"$E2E_TMP/deep.leaf")"
}

# Frames of the stack on line 1 of FILE matching an ERE (whole frame names).
frames_matching() { # FILE ERE
	head -1 "$1" | sed 's/^[^|]*|//' | tr ';' '\n' | grep -cE "^($2)\$"
}

# The stack of LEAF (one line; LEAF_ERE before its deep_leaf) is whole: 400 deep_a/deep_b frames
# from deep_leaf to main and glibc's start; no stack of STACKS is cut, none of PROFILE counted.
expect_400_whole() { # PROFILE STACKS LEAF LEAF_ERE
	expect_eq "deep_a/deep_b frames" 400 "$(frames_matching "$3" 'deep_a|deep_b')"
	expect_one_line "the stack, deep_leaf to glibc's start" \
		"$4deep_leaf;(deep_[ab];){400}main;(.*;)?__libc_start_call_main(;|$)" "$3"
	expect_eq "frames cut" 0 "$(grep -c 'frames cut' "$2")"
	expect_eq "unwind_depth" 0 "$(pprof_counter_value "$1" unwind_depth)"
}

# A 400-deep native recursion: its allocation stack is whole, from deep_leaf through 400
# deep_a/deep_b frames to main and glibc's start.  (255 frames was the limit before.)
t_deep_native_400_whole() {
	local f=$E2E_TMP/deep.pb.gz
	deep_heap_run 400 50
	expect_no_drops "$f"
	expect_400_whole "$f" "$E2E_TMP/deep.stacks" "$E2E_TMP/deep.leaf" '\|'
}

# Deeper than the cap: 1500 levels.  The leaf side (deep_leaf and 767 levels), one frame
# "[N frames cut]", the root side (255 frames down to _start); N and the levels kept add up to
# 1500, and the counters say so.
t_deep_native_cut_keeps_both_ends() {
	local f=$E2E_TMP/deep.pb.gz s=$E2E_TMP/deep.leaf count=20 cut kept total
	deep_heap_run 1500 "$count"
	expect_one_line "leaf side, one cut frame, root side to glibc's start" \
		'\|deep_leaf;(deep_[ab];){767}\[[0-9]+ frames cut\];(deep_[ab];)+main;(.*;)?__libc_start_call_main(;|$)' "$s"
	cut=$(grep -oE '\[[0-9]+ frames cut\]' "$s" | tr -dc 0-9)
	kept=$(frames_matching "$s" 'deep_a|deep_b')
	expect_eq "levels kept + levels cut" 1500 $((kept + cut))
	total=$(head -1 "$s" | sed 's/^[^|]*|//' | tr ';' '\n' | wc -l)
	expect_eq "frames of the stack (1024: the cap)" 1024 "$total"
	expect_eq "unwind_depth (the stacks cut: one per allocation)" "$count" \
		"$(pprof_counter_value "$f" unwind_depth)"
	expect_eq "unwind_cut_frames" $((count * cut)) "$(pprof_counter_value "$f" unwind_cut_frames)"
	expect_eq "unwind_walk_bound" 0 "$(pprof_counter_value "$f" unwind_walk_bound)"
}

# py_deep.py DEPTH under --heap with the interpreter PY: stacks of the 5 MiB kept, to $2.
py_deep_run() { # PY OUT DEPTH
	local f=$2.pb.gz
	"$PROF" --heap -o "$f" --top 0 -- "$1" "$PY_DEEP" "$3" >"$2.out" 2>"$2.err" ||
		{ cat "$2.err"; fail "$1: profiler exit status $?"; }
	expect_eq "$1: script output" "KEPT $3 5" "$(cat "$2.out")"
	expect_py_reads "$f" "$1"
	pprof_stacks "$f" inuse_space | grep -E '(;|\|)down;' >"$2.stacks"
	expect_range "$1: in-use bytes under down" 5242885 5505024 "$(sum_all "$2.stacks")"
}

py_deep_bin() { # MINOR
	local root p found=""
	root=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
	for p in "$root"/versions/3."$1".*/bin/python3."$1"; do
		[ -x "$p" ] && found=$p
	done
	echo "$found"
}

# The stacks of FILE without DEPTH frames of down and main;<module> below them.
py_down_not_whole() { # FILE DEPTH
	awk -F'|' -v depth="$2" '{
		k = split($2, f, ";"); d = 0; m = 0
		for (i = 1; i <= k; i++) {
			if (f[i] == "down") d++
			else if (d && f[i] == "main" && f[i + 1] == "<module>") m = 1
		}
		if (d != depth || !m) print
	}' "$1" | wc -l
}

# A 600-deep Python recursion on 3.11 (Python calls add no native frames): 600 frames of down,
# then main and <module>, whole.
t_deep_python_600_whole() {
	local py s=$E2E_TMP/py311
	py=$(py_deep_bin 11)
	[ -n "$py" ] || skip "no pyenv 3.11"
	py_deep_run "$py" "$s" 600
	expect_no_drops "$s.pb.gz"
	expect_eq "unwind_depth" 0 "$(pprof_counter_value "$s.pb.gz" unwind_depth)"
	expect_eq "stacks under down cut" 0 "$(grep -c 'frames cut' "$s.stacks")"
	expect_eq "stacks without 600 down frames and main;<module> below them" 0 \
		"$(py_down_not_whole "$s.stacks" 600)"
}

# The same on 3.10, where every Python call adds a native frame (_PyEval_Vector: about 1220
# frames, 1820 words in all): cut, the root side still reaches main and <module>.
t_deep_python_600_cut_310() {
	local py s=$E2E_TMP/py310 n
	py=$(py_deep_bin 10)
	[ -n "$py" ] || skip "no pyenv 3.10"
	py_deep_run "$py" "$s" 600
	n=$(grep -cvE '\|(.*;)?down;(.*;)?\[[0-9]+ frames cut\];(.*;)?down;(.*;)?main;(.*;)?<module>(;|$)' "$s.stacks")
	expect_eq "stacks under down without a cut between down frames, main and <module> at the root side" 0 "$n"
	expect_eq "unwind_walk_bound" 0 "$(pprof_counter_value "$s.pb.gz" unwind_walk_bound)"
	[ "$(pprof_counter_value "$s.pb.gz" unwind_depth)" -gt 0 ] || fail "unwind_depth is 0"
}

# --unwind fp: the kernel's walk (bpf_get_stack) stops at kernel.perf_event_max_stack frames and
# says nothing of the rest: a stack that long ends in "[frames cut]", counted.
t_deep_fp_cut_at_the_kernel_limit() {
	local f=$E2E_TMP/deep.pb.gz s=$E2E_TMP/deep.stacks max count=20
	max=$(cat /proc/sys/kernel/perf_event_max_stack)
	[ "$max" -lt 1000 ] || skip "perf_event_max_stack is $max: a 1000-deep stack fits"
	"$PROF" --heap --unwind fp -o "$f" --top 0 -- build/targets/deep_fp 1000 "$count" \
		>"$E2E_TMP/target.out" 2>"$E2E_TMP/prof.err" || { cat "$E2E_TMP/prof.err"; fail "profiler exit status $?"; }
	expect_eq "target output" "DONE 1000" "$(cat "$E2E_TMP/target.out")"
	pprof_stacks "$f" inuse_space >"$s"
	expect_one_line "deep_leaf and deep frames up to the kernel's limit, then [frames cut]" \
		"\\|deep_leaf;(deep_[ab];){$((max - 1))}\\[frames cut\\]\$" "$s"
	expect_eq "unwind_depth" "$count" "$(pprof_counter_value "$f" unwind_depth)"
}

# Deeper than the walk goes (3,584 words): 4,000 levels.  The walk stops there; the stack keeps
# its leaf side, "[N+ frames cut]" (N: the frames walked past the leaf side and before the last
# 255) and the 255 frames before the stop, which are not the root; unwind_walk_bound counts it.
t_deep_native_walk_bound() {
	local f=$E2E_TMP/deep.pb.gz s=$E2E_TMP/deep.leaf count=5
	deep_heap_run 4000 "$count"
	expect_one_line "leaf side, [N+ frames cut], 255 more levels and no root" \
		'\|deep_leaf;(deep_[ab];){767}\[2561\+ frames cut\];(deep_[ab];){254}deep_[ab]$' "$s"
	expect_eq "unwind_walk_bound" "$count" "$(pprof_counter_value "$f" unwind_walk_bound)"
	expect_eq "unwind_depth" "$count" "$(pprof_counter_value "$f" unwind_depth)"
}

# Off the CPU.  The loss counters of --offcpu besides the common ones.
OFFCPU_DROPS="$DROP_COUNTERS offcpu_full offcpu_deep_full"

# The stacks (events) of an --offcpu profile's periods asleep (state idle: one preempted as it
# went to sleep has the same stack, runnable).
offcpu_idle_stacks() { # FILE
	go tool pprof -symbolize=none -proto -tagfocus=state=idle "$1" >"$1.idle" 2>/dev/null ||
		fail "pprof cannot filter $1"
	pprof_stacks "$1.idle" events
}

# deep_nofp DEPTH 5 sleep under --offcpu (ENV: assignments for the profiler): 5 sleeps of 100 ms
# in deep_leaf.  Writes $E2E_TMP/off.pb.gz, its stacks (events) to $E2E_TMP/off.stacks and the
# stack of those sleeps (do_nanosleep in the kernel, deep_leaf in the target) to $E2E_TMP/off.leaf.
deep_offcpu_run() { # DEPTH [ENV…]
	local f=$E2E_TMP/off.pb.gz depth=$1
	shift
	env "$@" "$PROF" --offcpu -o "$f" --top 0 -- "$DN" "$depth" 5 sleep >"$E2E_TMP/target.out" \
		2>"$E2E_TMP/prof.err" || { cat "$E2E_TMP/prof.err"; fail "profiler exit status $?"; }
	expect_eq "target output" "DONE $depth" "$(cat "$E2E_TMP/target.out")"
	pprof_stacks "$f" events >"$E2E_TMP/off.stacks"
	offcpu_idle_stacks "$f" | grep -E '(\||;)do_nanosleep;(.*;)?nanosleep;deep_leaf(;|$)' >"$E2E_TMP/off.leaf"
	expect_eq "stacks of the sleeps in deep_leaf" 1 "$(wc -l <"$E2E_TMP/off.leaf")"
	expect_eq "periods off the CPU in deep_leaf's nanosleep" 5 "$(sum_all "$E2E_TMP/off.leaf")"
}

# The user frames of the stack on line 1 of FILE (those below the kernel's system call entry),
# or with "leaf" those before its cut frame.
user_frames() { # FILE [leaf]
	head -1 "$1" | sed 's/^[^|]*|//' | tr ';' '\n' | awk -v leaf="${2:-}" '
		/^entry_SYSCALL_64/ { n = 0; next }
		leaf && /frames cut\]$/ { exit }
		{ n++ } END { print n }'
}

# Every cut stack of --offcpu is counted once per period: unwind_depth and unwind_cut_frames are
# the sums over the stacks of FILE's events.
expect_offcpu_cut_counted() { # PROFILE STACKS
	expect_eq "unwind_depth (periods of cut stacks)" \
		"$(grep 'frames cut\]' "$2" | awk '{ s += $1 } END { print s + 0 }')" \
		"$(pprof_counter_value "$1" unwind_depth)"
	expect_eq "unwind_cut_frames (their cut frames)" \
		"$(awk 'match($0, /\[[0-9]+ frames cut\]/) {
			s += $1 * substr($0, RSTART + 1, RLENGTH - 13) } END { print s + 0 }' "$2")" \
		"$(pprof_counter_value "$1" unwind_cut_frames)"
}

# Asleep at the bottom of a 400-deep native recursion: the stack off the CPU is whole, from
# nanosleep and deep_leaf through the 400 levels to main and glibc's start.  (255 words was the
# limit off the CPU before.)
t_deep_offcpu_native_400_whole() {
	local f=$E2E_TMP/off.pb.gz
	deep_offcpu_run 400
	DROP_COUNTERS=$OFFCPU_DROPS expect_no_drops "$f"
	expect_400_whole "$f" "$E2E_TMP/off.stacks" "$E2E_TMP/off.leaf" ';nanosleep;'
}

# Asleep 1500 levels down: deeper than the cap, the stack off the CPU is cut as the other modes
# cut it (1024 user frames: the leaf side, "[N frames cut]", the root side to glibc's start).
t_deep_offcpu_native_cut_keeps_both_ends() {
	local f=$E2E_TMP/off.pb.gz s=$E2E_TMP/off.leaf cut kept
	deep_offcpu_run 1500
	DROP_COUNTERS=$OFFCPU_DROPS expect_no_drops "$f"
	expect_one_line "leaf side, one cut frame, root side to glibc's start" \
		';nanosleep;deep_leaf;(deep_[ab];)+\[[0-9]+ frames cut\];(deep_[ab];)+main;(.*;)?__libc_start_call_main(;|$)' "$s"
	expect_eq "user frames of the leaf side" 768 "$(user_frames "$s" leaf)"
	cut=$(grep -oE '\[[0-9]+ frames cut\]' "$s" | tr -dc 0-9)
	kept=$(frames_matching "$s" 'deep_a|deep_b')
	expect_eq "levels kept + levels cut" 1500 $((kept + cut))
	expect_eq "user frames of the stack (1024: the cap)" 1024 "$(user_frames "$s")"
	expect_offcpu_cut_counted "$f" "$E2E_TMP/off.stacks"
	expect_eq "unwind_walk_bound" 0 "$(pprof_counter_value "$f" unwind_walk_bound)"
}

# No room for a deep stack's own record (BPFTRACE_PROF_OFFCPU_NO_DEEP: as when their map is full):
# the 400-deep stack is cut to the thread's 255 words, both ends kept, and counted.
t_deep_offcpu_no_room_cut_to_255() {
	local f=$E2E_TMP/off.pb.gz s=$E2E_TMP/off.leaf cut kept
	deep_offcpu_run 400 BPFTRACE_PROF_OFFCPU_NO_DEEP=1
	expect_one_line "leaf side, one cut frame, root side to glibc's start" \
		';nanosleep;deep_leaf;(deep_[ab];)+\[[0-9]+ frames cut\];(deep_[ab];)+main;(.*;)?__libc_start_call_main(;|$)' "$s"
	cut=$(grep -oE '\[[0-9]+ frames cut\]' "$s" | tr -dc 0-9)
	kept=$(frames_matching "$s" 'deep_a|deep_b')
	expect_eq "levels kept + levels cut" 400 $((kept + cut))
	expect_eq "user frames of the stack (255 words)" 255 "$(user_frames "$s")"
	expect_eq "user frames of the leaf side" 189 "$(user_frames "$s" leaf)"
	expect_offcpu_cut_counted "$f" "$E2E_TMP/off.stacks"
	expect_eq "offcpu_deep_full (the periods of those stacks)" \
		"$(pprof_counter_value "$f" unwind_depth)" "$(pprof_counter_value "$f" offcpu_deep_full)"
}

# Asleep (time.sleep) at the bottom of a 600-deep Python recursion on 3.11: 1200 words and more,
# whole off the CPU: 600 frames of down, then main and <module>.
t_deep_offcpu_python_600_whole() {
	local py s=$E2E_TMP/pyoff f
	py=$(py_deep_bin 11)
	[ -n "$py" ] || skip "no pyenv 3.11"
	f=$s.pb.gz
	"$PROF" --offcpu -o "$f" --top 0 -- "$py" "$PY_DEEP" 600 sleep >"$s.out" 2>"$s.err" ||
		{ cat "$s.err"; fail "profiler exit status $?"; }
	expect_eq "script output" "SLEPT 600 5" "$(cat "$s.out")"
	DROP_COUNTERS=$OFFCPU_DROPS expect_no_drops "$f"
	expect_py_reads "$f" "$py"
	offcpu_idle_stacks "$f" | grep -E '(\||;)do_nanosleep;(.*;)?down;' >"$s.stacks"
	expect_eq "periods off the CPU asleep under down" 5 "$(sum_all "$s.stacks")"
	expect_eq "stacks under down cut" 0 "$(grep -c 'frames cut' "$s.stacks")"
	expect_eq "stacks without 600 down frames and main;<module> below them" 0 \
		"$(py_down_not_whole "$s.stacks" 600)"
	expect_eq "unwind_depth" 0 "$(pprof_counter_value "$f" unwind_depth)"
}

# A period still open when the run ends is read from the kernel's records at the end: a deep
# stack's from its own record.  deep_nofp asleep 400 levels down for 5 s (50 sleeps), profiled
# with -p for 1 s from its first second: every period in nanosleep has the whole stack, the open
# one too (none without its user frames).
t_deep_offcpu_open_period_at_end() {
	local f=$E2E_TMP/off.pb.gz s=$E2E_TMP/off.stacks pid
	"$DN" 400 50 sleep >"$E2E_TMP/target.out" &
	pid=$!
	start_profiler "$E2E_TMP/prof.log" --offcpu -p "$pid" -d 1.5 -o "$f" --top 0
	wait "$PROF_PID" || fail "exit status $?: $(tail -5 "$E2E_TMP/prof.log")"
	kill "$pid"
	DROP_COUNTERS=$OFFCPU_DROPS expect_no_drops "$f"
	offcpu_idle_stacks "$f" >"$s"
	expect_one_line "the sleeps' stack, do_nanosleep to glibc's start" \
		'(\||;)do_nanosleep;(.*;)?nanosleep;deep_leaf;(deep_[ab];){400}main;(.*;)?__libc_start_call_main(;|$)' "$s"
	expect_eq "periods in nanosleep without their user frames" 0 \
		"$(grep -cE '(\||;)do_nanosleep;(.*;)?entry_SYSCALL_64_after_hwframe$' "$s")"
}

# --unwind fp off the CPU: the kernel's walk stops at kernel.perf_event_max_stack frames, a stack
# that long ends in "[frames cut]" (as at 255 words before: the record takes it whole), counted
# once per period.
t_deep_offcpu_fp_cut_at_the_kernel_limit() {
	local f=$E2E_TMP/off.pb.gz s=$E2E_TMP/off.leaf max
	max=$(cat /proc/sys/kernel/perf_event_max_stack)
	[ "$max" -lt 1000 ] || skip "perf_event_max_stack is $max: a 1000-deep stack fits"
	"$PROF" --offcpu --unwind fp -o "$f" --top 0 -- build/targets/deep_fp 1000 5 sleep \
		>"$E2E_TMP/target.out" 2>"$E2E_TMP/prof.err" || { cat "$E2E_TMP/prof.err"; fail "profiler exit status $?"; }
	expect_eq "target output" "DONE 1000" "$(cat "$E2E_TMP/target.out")"
	DROP_COUNTERS=$OFFCPU_DROPS expect_no_drops "$f"
	pprof_stacks "$f" events >"$E2E_TMP/off.stacks"
	offcpu_idle_stacks "$f" | grep -E '(\||;)do_nanosleep;(.*;)?deep_[ab];' >"$s"
	expect_one_line "deep frames up to the kernel's limit, then [frames cut]" \
		'(\||;)do_nanosleep;(.*;)?(deep_[ab];)+\[frames cut\]$' "$s"
	expect_eq "user frames (the kernel's limit, then the cut frame)" $((max + 1)) "$(user_frames "$s")"
	expect_eq "periods asleep" 5 "$(sum_all "$s")"
	expect_eq "unwind_depth (periods of cut stacks)" \
		"$(grep 'frames cut\]' "$E2E_TMP/off.stacks" | awk '{ s += $1 } END { print s + 0 }')" \
		"$(pprof_counter_value "$f" unwind_depth)"
}
