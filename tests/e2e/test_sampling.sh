# --sample-bytes end to end: tests/targets/sampling_target makes 3,200,000 allocations of known
# sizes.  Exact with --sample-bytes 0; with sampling, the weighted totals must stay unbiased.
#
# Tolerances follow from the sampling statistics, not from taste.  An allocation of s bytes is
# taken with probability p = 1 - exp(-s/N), so a count estimated from n allocations has a
# relative standard error of sqrt((1-p)/(n p)): for churn_64 (3,000,000 x 64 B) 5.2% at
# N = 524288 (a ±5% assertion there would fail one run in three), 0.92% at N = 16384; for a
# tenth of the run (300,000 x 64 B, the mechanisms that trap on every call) 1.0% at N = 2048.
# The intervals come from a table of the exponential's 4096 quantiles (user/attach/heap_attach.c); an
# earlier table of random draws carried its own error, shared by every allocation of a run
# (measured, 6 runs at N = 16384: sigma 2.8%); with quantiles sigma is 1.1% on counts and 0.45%
# on bytes, the Poisson floor.  TOL = 5% is then over 4 sigma at N = 16384.
TOL=5
ST=build/targets/sampling_target

# Total of sample index INDEX over the whole profile, as go tool pprof computes it.
pprof_total() { # FILE INDEX
	go tool pprof -symbolize=none -top -nodecount=1 -unit=B -sample_index="$2" "$1" 2>/dev/null |
		sed -n 's/.* of \([0-9.]*\)B* total.*/\1/p' | head -1
}

pprof_period() { # FILE
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null | sed -n 's/^Period: //p'
}

# expect_near WHAT EXPECTED PERCENT ACTUAL
expect_near() {
	local lo hi
	lo=$(awk -v e="$2" -v p="$3" 'BEGIN { printf "%.0f", e * (1 - p / 100) }')
	hi=$(awk -v e="$2" -v p="$3" 'BEGIN { printf "%.0f", e * (1 + p / 100) }')
	expect_range "$1 (exact $2, ±$3%)" "$lo" "$hi" "$4"
}

# Ring-buffer records the profiler consumed (its -v summary line).
events_of() { # LOG
	sed -n 's/.*events: \([0-9]*\) in .*/\1/p' "$1" | tail -1
}

# Exact: every call is probed, so a tenth of the run (320,000 allocations) says as much.
t_sampling_exact_when_zero() {
	local f=$E2E_TMP/exact.pb.gz
	"$PROF" -v --heap --sample-bytes 0 -o "$f" --top 0 -- "$ST" 10 2>"$E2E_TMP/exact.log" ||
		fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "period" 0 "$(pprof_period "$f")"
	expect_eq "churn_64 alloc_objects" 300000 "$(pprof_flat "$f" alloc_objects churn_64)"
	expect_eq "churn_64 alloc_space" 19200000 "$(pprof_flat "$f" alloc_space churn_64)"
	expect_eq "churn_64 inuse_objects" 0 "$(pprof_flat "$f" inuse_objects churn_64)"
	expect_eq "pages_4096 alloc_objects" 20000 "$(pprof_flat "$f" alloc_objects pages_4096)"
	expect_eq "pages_4096 alloc_space" 81920000 "$(pprof_flat "$f" alloc_space pages_4096)"
	expect_eq "pages_4096 inuse_objects" 2000 "$(pprof_flat "$f" inuse_objects pages_4096)"
	expect_eq "pages_4096 inuse_space" 8192000 "$(pprof_flat "$f" inuse_space pages_4096)"
	# Libc's own start-up allocations come on top of the two functions': a few, not thousands.
	expect_range "total alloc_objects" 320000 320100 "$(pprof_total "$f" alloc_objects)"
	expect_range "ring-buffer events (allocs + frees)" 638000 638300 "$(events_of "$E2E_TMP/exact.log")"
}

# The mechanism a sampled -- CMD run took, from its counters: our preloaded sampler (its
# otel_memory probes, sampled in the process) or, with --no-preload, the allocator probes
# (sampled in BPF): as uprobe sessions, where an unsampled call skips its return probe (Linux
# 6.13), or as an entry and a return uprobe per function (older kernels; here the environment
# turns sessions and uprobe_multi links off), or without sessions through uprobe_multi links
# (multi: Linux 6.6-6.12).  All must give the same unbiased numbers.
expect_mechanism() { # FILE preload|sessions|uprobes|multi
	local want_otel=0 want_session=0
	case $2 in
	preload) want_otel=1 ;;
	sessions) want_session=1 ;;
	esac
	expect_eq "heap_procs_otel ($2)" "$want_otel" "$(pprof_counter_value "$1" heap_procs_otel)"
	# libc and libstdc++ (sampling_cxx), or libc alone: one session link each
	if [ "$want_session" = 1 ]; then
		expect_range "heap_session_files ($2)" 1 2 "$(pprof_counter_value "$1" heap_session_files)"
	else
		expect_eq "heap_session_files ($2)" 0 "$(pprof_counter_value "$1" heap_session_files)"
	fi
	# multi: three links per file; uprobes: a uprobe per function (the switch turns them off)
	if [ "$2" = multi ]; then
		expect_range "heap_multi_files ($2)" 1 2 "$(pprof_counter_value "$1" heap_multi_files)"
	else
		expect_eq "heap_multi_files ($2)" 0 "$(pprof_counter_value "$1" heap_multi_files)"
	fi
}

# sampled_prof MECH ARGS…: the profiler as MECH takes it.
sampled_prof() {
	local mech=$1
	shift
	case $mech in
	preload) "$PROF" "$@" ;;
	sessions) "$PROF" --no-preload "$@" ;;
	uprobes) BPFTRACE_PROF_NO_UPROBE_SESSIONS=1 BPFTRACE_PROF_NO_UPROBE_MULTI=1 \
		"$PROF" --no-preload "$@" ;;
	multi) BPFTRACE_PROF_NO_UPROBE_SESSIONS=1 "$PROF" --no-preload "$@" ;;
	esac
}

# MECH: preload (the default of sampled -- CMD), sessions, uprobes or multi (expect_mechanism).
# Our sampler decides in the process: the whole run at N = 16384.  The others trap on every
# call (seconds per million): a tenth of the run at N = 2048, the same relative errors (churn_64:
# 1.0%, pages_4096's kept blocks 0.9%: ±5% is over 4 sigma).
sampling_unbiased_totals() { # MECH
	local f=$E2E_TMP/sampled.$1.pb.gz n=16384 div=1
	[ "$1" = preload ] || n=2048 div=10
	sampled_prof "$1" --heap --sample-bytes $n -o "$f" --top 0 -- "$ST" $div || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_mechanism "$f" "$1"
	expect_eq "period" $n "$(pprof_period "$f")"
	go tool pprof -symbolize=none -raw "$f" | grep -q "^Comment: sampled: one allocation per $n bytes" ||
		fail "no sampling comment in the profile"
	expect_near "total alloc_objects" $((3200000 / div)) "$TOL" "$(pprof_total "$f" alloc_objects)"
	expect_near "total alloc_space" $((1011200000 / div)) "$TOL" "$(pprof_total "$f" alloc_space)"
	expect_near "churn_64 alloc_objects" $((3000000 / div)) "$TOL" "$(pprof_flat "$f" alloc_objects churn_64)"
	expect_near "churn_64 alloc_space" $((192000000 / div)) "$TOL" "$(pprof_flat "$f" alloc_space churn_64)"
	expect_near "pages_4096 alloc_objects" $((200000 / div)) "$TOL" "$(pprof_flat "$f" alloc_objects pages_4096)"
	expect_near "pages_4096 alloc_space" $((819200000 / div)) "$TOL" "$(pprof_flat "$f" alloc_space pages_4096)"
	expect_near "pages_4096 inuse_objects" $((20000 / div)) "$TOL" "$(pprof_flat "$f" inuse_objects pages_4096)"
	expect_near "pages_4096 inuse_space" $((81920000 / div)) "$TOL" "$(pprof_flat "$f" inuse_space pages_4096)"
	# Sampled blocks of churn_64 are all freed: their weighted in-use value must cancel exactly.
	expect_eq "churn_64 inuse_space" 0 "$(pprof_flat "$f" inuse_space churn_64)"
}

t_sampling_unbiased_totals() { sampling_unbiased_totals preload; }
t_sampling_unbiased_totals_sessions() { sampling_unbiased_totals sessions; }
t_sampling_unbiased_totals_uprobes() { sampling_unbiased_totals uprobes; }
t_sampling_unbiased_totals_multi() { sampling_unbiased_totals multi; }

t_sampling_default_rate_saves_traffic() {
	local f=$E2E_TMP/sampled512k.pb.gz log=$E2E_TMP/sampled512k.log
	# pages_4096 alone (churn_64's small blocks are covered at 16 KiB above, unbiased)
	"$PROF" -v --heap --sample-bytes 524288 -o "$f" --top 0 -- "$ST" pages 2>"$log" ||
		fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "period" 524288 "$(pprof_period "$f")"
	# 200,000 blocks of 4 KiB, each taken with p = 1 - exp(-4096/524288) = 0.78%: 1560 sampled,
	# 2.5% Poisson error (+ the table's) on count and bytes: ±25% is more than 4 sigma.
	expect_near "total alloc_objects" 200000 25 "$(pprof_total "$f" alloc_objects)"
	expect_near "total alloc_space" 819200000 25 "$(pprof_total "$f" alloc_space)"
	expect_eq "churn_64 alloc_objects (not run)" 0 "$(pprof_flat "$f" alloc_objects churn_64)"
	# About 800 MB / 512 KiB = 1560 sampled blocks and their frees travel, instead of 400,000
	# records (a count, not a timing).
	expect_range "ring-buffer events" 1 8000 "$(events_of "$log")"
}

# No allocator frame may be the leaf of a sample: the caller of malloc / operator new is.
expect_no_allocator_leaf() { # FILE
	local bad
	pprof_traces_inline "$1" >"$1.traces" # an inlined wrapper is its caller's code
	[ -s "$1.traces" ] || fail "no samples in $1"
	bad=$(grep -E '\|(malloc|calloc|realloc|operator[^;]*)(;|$)' "$1.traces" | head -1)
	[ -z "$bad" ] || fail "allocator frame as the counted leaf: $bad"
	echo "ok: no allocator leaf"
}

SC=build/targets/sampling_cxx

# A tenth of the run: every call is probed.
t_sampling_cxx_exact_when_zero() {
	local f=$E2E_TMP/cxx_exact.pb.gz
	"$PROF" --heap --sample-bytes 0 -o "$f" --top 0 -- "$SC" 10 || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "cxx_churn_64 alloc_objects" 100000 "$(pprof_flat "$f" alloc_objects cxx_churn_64)"
	expect_eq "cxx_churn_64 alloc_space" 6400000 "$(pprof_flat "$f" alloc_space cxx_churn_64)"
	expect_eq "cxx_churn_64 inuse_objects" 0 "$(pprof_flat "$f" inuse_objects cxx_churn_64)"
	expect_eq "cxx_pages_4096 alloc_objects" 10000 "$(pprof_flat "$f" alloc_objects cxx_pages_4096)"
	expect_eq "cxx_pages_4096 alloc_space" 40960000 "$(pprof_flat "$f" alloc_space cxx_pages_4096)"
	expect_eq "cxx_pages_4096 inuse_objects" 1000 "$(pprof_flat "$f" inuse_objects cxx_pages_4096)"
	expect_eq "cxx_pages_4096 inuse_space" 4096000 "$(pprof_flat "$f" inuse_space cxx_pages_4096)"
	expect_no_allocator_leaf "$f"
}

# new char[64] is new[] -> new -> malloc: three probed calls, one draw.  Were the inner calls to
# draw again, cxx_churn_64 would be sampled about 3x too often and its weighted count ~3x.
# Our sampler wraps new itself and its inner malloc decides nothing (the same draw-once rule):
# the whole run at N = 16384 (Poisson error 1.6% for 1e6 x 64 B, 1.9% for the 1e4 kept pages).
# The BPF mechanisms trap on every call: a tenth at N = 2048 (1.8% for 1e5 x 64 B, 1.3% for the
# 1e3 kept pages).  ±10% is over 5 sigma.
sampling_cxx_one_draw_per_new() { # MECH
	local f=$E2E_TMP/cxx_sampled.$1.pb.gz n=16384 div=1
	[ "$1" = preload ] || n=2048 div=10
	sampled_prof "$1" --heap --sample-bytes $n -o "$f" --top 0 -- "$SC" $div || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_mechanism "$f" "$1"
	expect_near "cxx_churn_64 alloc_objects" $((1000000 / div)) 10 "$(pprof_flat "$f" alloc_objects cxx_churn_64)"
	expect_near "cxx_churn_64 alloc_space" $((64000000 / div)) 10 "$(pprof_flat "$f" alloc_space cxx_churn_64)"
	expect_eq "cxx_churn_64 inuse_space" 0 "$(pprof_flat "$f" inuse_space cxx_churn_64)"
	expect_near "cxx_pages_4096 alloc_objects" $((100000 / div)) 10 "$(pprof_flat "$f" alloc_objects cxx_pages_4096)"
	expect_near "cxx_pages_4096 alloc_space" $((409600000 / div)) 10 "$(pprof_flat "$f" alloc_space cxx_pages_4096)"
	expect_near "cxx_pages_4096 inuse_objects" $((10000 / div)) 10 "$(pprof_flat "$f" inuse_objects cxx_pages_4096)"
	# Blocks sampled through an inner malloc would have operator new as their leaf.
	expect_no_allocator_leaf "$f"
}

t_sampling_cxx_one_draw_per_new() { sampling_cxx_one_draw_per_new preload; }
t_sampling_cxx_one_draw_per_new_sessions() { sampling_cxx_one_draw_per_new sessions; }
t_sampling_cxx_one_draw_per_new_uprobes() { sampling_cxx_one_draw_per_new uprobes; }

# A file whose session link the kernel refuses gets an entry and a return uprobe per function
# (heap_session_refused); the other files keep theirs (heap_session_files).  This kernel never
# refuses one file alone: BPFTRACE_PROF_FAULT_SESSION refuses libc's link as the kernel would.
# -p of sampling_cxx: operator new draws in libstdc++'s session and skips its return, the malloc
# it calls keeps per-function probes whose return reports new's call — one draw per new across
# the two mechanisms.  A hundredth of the counts (libc's probes cost two traps a malloc, and
# per-function probes take seconds to detach), at N = 256: 2,200 of the 10,000 x 64 B are
# sampled (Poisson error 1.9%: ±10% is over 5 sigma; three draws per new would give 2.4x);
# every 4 KiB page is (the longest interval drawn is under 2,400 bytes), with weight 1.0000001.
# Without the fallback libc is not probed and every value is 0.
t_sampling_session_refused_falls_back() {
	local f=$E2E_TMP/refused.pb.gz
	start_waiting_target "$E2E_TMP/target.out" "$SC" --wait 100
	BPFTRACE_PROF_FAULT_SESSION=libc.so.6 start_profiler "$E2E_TMP/prof.log" --heap \
		--sample-bytes 256 -p "$TARGET_PID" -o "$f" --top 0
	finish_waiting_run
	expect_no_drops "$f"
	expect_eq "heap_session_refused (libc)" 1 "$(pprof_counter_value "$f" heap_session_refused)"
	expect_eq "heap_session_files (libstdc++)" 1 "$(pprof_counter_value "$f" heap_session_files)"
	expect_near "cxx_churn_64 alloc_objects" 10000 10 "$(pprof_flat "$f" alloc_objects cxx_churn_64)"
	expect_near "cxx_churn_64 alloc_space" 640000 10 "$(pprof_flat "$f" alloc_space cxx_churn_64)"
	expect_eq "cxx_churn_64 inuse_space" 0 "$(pprof_flat "$f" inuse_space cxx_churn_64)"
	expect_eq "cxx_pages_4096 alloc_objects" 1000 "$(pprof_flat "$f" alloc_objects cxx_pages_4096)"
	expect_eq "cxx_pages_4096 inuse_objects" 100 "$(pprof_flat "$f" inuse_objects cxx_pages_4096)"
	expect_no_allocator_leaf "$f"
}

RF=build/targets/realloc_fork

# Every block of realloc_fork ends freed: sampled blocks moved by a realloc that was not itself
# sampled, and blocks a forked child frees in its own copy of the heap, must not stay in use.
# Under our sampler the forked child frees sampled blocks through probe sites its parent hit
# (a nop5 site turned into a call by Linux 6.18 killed it: SIGSEGV, exit status 1).
sampling_realloc_and_fork_end_freed() { # MECH
	local f=$E2E_TMP/realloc_fork.$1.pb.gz
	sampled_prof "$1" --heap --sample-bytes 16384 -o "$f" --top 0 -- "$RF" || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_mechanism "$f" "$1"
	# Sampling did happen: 2,000 x (4096 + 16384) bytes; Poisson error 1.6%, ±25% is wide.
	expect_near "realloc_moved alloc_space" 40960000 25 "$(pprof_flat "$f" alloc_space realloc_moved)"
	expect_eq "realloc_moved inuse_objects" 0 "$(pprof_flat "$f" inuse_objects realloc_moved)"
	expect_eq "realloc_moved inuse_space" 0 "$(pprof_flat "$f" inuse_space realloc_moved)"
	# 1 MiB blocks are always sampled, with weight 1: the parent's numbers are exact.
	pprof_traces "$f" | grep '|fork_blocks;' >"$f.fork"
	expect_eq "fork_blocks stacks (the parent's only)" 1 "$(wc -l <"$f.fork")"
	expect_eq "fork_blocks alloc_objects" 100 "$(pprof_flat "$f" alloc_objects fork_blocks)"
	expect_eq "fork_blocks inuse_objects (parent freed them after the child did)" 0 \
		"$(pprof_flat "$f" inuse_objects fork_blocks)"
	expect_eq "fork_blocks inuse_space" 0 "$(pprof_flat "$f" inuse_space fork_blocks)"
}

t_sampling_realloc_and_fork_end_freed() { sampling_realloc_and_fork_end_freed preload; }
t_sampling_realloc_and_fork_end_freed_sessions() { sampling_realloc_and_fork_end_freed sessions; }
t_sampling_realloc_and_fork_end_freed_uprobes() { sampling_realloc_and_fork_end_freed uprobes; }

# 20,000 threads one after another: each thread's countdown and call in flight (BPF's, with
# --no-preload) are made at its first call and must go with it, or new threads find no room.
t_sampling_thread_entries_deleted_at_exit() {
	local f=$E2E_TMP/threads.pb.gz
	"$PROF" --heap --sample-bytes 1024 --no-preload -o "$f" --top 0 -- build/targets/thread_churn ||
		fail "profiler exit status $?"
	expect_eq "pending_full (no room for a thread's state)" 0 "$(pprof_counter_value "$f" pending_full)"
	expect_no_drops "$f"
	expect_near "thread_alloc alloc_objects" 20000 25 "$(pprof_flat "$f" alloc_objects thread_alloc)"
}

# Sampled -- CMD preloads our sampler into CMD's environment only: ahead of the user's own
# LD_PRELOAD, with the rate; not with --no-preload, not for an exact run, never into our own
# process.  No allocator probe is attached then: the tree samples itself (probe_links: the two
# otel_memory probes and the loader hooks, not the 20 allocator functions).
t_sampling_preload_in_cmd_only() {
	local lib=/lib/x86_64-linux-gnu/libm.so.6 f=$E2E_TMP/env.pb.gz out links
	# shellcheck disable=SC2016 # expanded by CMD's shell; $PPID: the profiler
	local show='echo "$LD_PRELOAD|$BPFTRACE_PROF_SAMPLE_BYTES"; tr "\0" "\n" </proc/$PPID/environ | grep -c "sampler" || true'
	out=$(LD_PRELOAD=$lib "$PROF" -v --heap --sample-bytes 65536 -o "$f" --top 0 -- sh -c "$show" 2>"$E2E_TMP/log")
	cat "$E2E_TMP/log"
	expect_eq "CMD's environment, and the sampler in the profiler's own" \
		"$PWD/build/libbpftrace-prof-sampler.so:$lib|65536
0" "$out"
	links=$(sed -n 's/.*probe_links=\([0-9]*\).*/\1/p' "$E2E_TMP/log" | tail -1)
	expect_range "probe_links (no allocator probe)" 1 6 "$links"
	out=$(LD_PRELOAD=$lib "$PROF" --heap --sample-bytes 65536 --no-preload -o "$f" --top 0 -- sh -c "$show")
	expect_eq "CMD's environment with --no-preload" "$lib|
0" "$out"
	out=$("$PROF" --heap -o "$f" --top 0 -- sh -c "$show")
	expect_eq "CMD's environment, exact" "|
0" "$out"
}

# Debian's python3 is a non-PIE executable that takes malloc's address: it imports the family
# through canonical PLT entries, which dlsym(RTLD_DEFAULT) names as its own.  The sampler took
# itself for bypassed there and sampled nothing: a profile of 0 bytes, with no loss counted.
# 1,000 blocks of 100,000 bytes at 65,536: 1.7 % standard error, and ~1-3 MB of start-up.
t_sampling_preload_non_pie_python() {
	local f=$E2E_TMP/pynopie.pb.gz
	"$PROF" --heap --sample-bytes 65536 -o "$f" --top 0 -- /usr/bin/python3 -c \
		'keep = [bytearray(100000) for _ in range(1000)]' || fail "profiler exit status $?"
	expect_no_drops "$f"
	expect_eq "heap_procs_otel" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
	expect_range "total alloc_space" 95000000 110000000 "$(pprof_total "$f" alloc_space)"
}

# A process of CMD's tree that cannot load the sampler (a static executable) is not seen with
# the preload: counted (heap_procs_unsampled, a loss the summary lists), never silent.
t_sampling_preload_static_unsampled() {
	local f=$E2E_TMP/static.pb.gz
	"$PROF" --heap --sample-bytes 65536 -o "$f" -- sh -c build/targets/static_target \
		>/dev/null 2>"$E2E_TMP/log" || fail "profiler exit status $?"
	cat "$E2E_TMP/log"
	expect_eq "heap_procs_unsampled" 1 "$(pprof_counter_value "$f" heap_procs_unsampled)"
	expect_eq "heap_procs_otel (sh)" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
	grep -q "heap_procs_unsampled" "$E2E_TMP/log" || fail "the summary does not list the loss"
	expect_eq "static_leak alloc_space (unseen)" 0 "$(pprof_flat "$f" alloc_space static_leak)"
}

# More live sampled blocks than the sampler's set holds (every 64-byte block sampled at
# --sample-bytes 1): the ones it cannot track are a loss the profiler counts (sampler_lost, from
# the sampler's own probe), exactly the sampler's table_full, and the summary lists it.
t_sampling_preload_table_full() {
	local f=$E2E_TMP/full.pb.gz out full
	out=$("$PROF" --heap --sample-bytes 1 -o "$f" -- build/targets/sampler_full \
		2>"$E2E_TMP/log") || fail "profiler exit status $?"
	cat "$E2E_TMP/log"
	full=$(sed -n 's/^table_full \([0-9]*\)$/\1/p' <<<"$out")
	# 1,000 blocks over the cap, and as many more as the C library keeps live from before main
	expect_range "the sampler's table_full" 1000 1064 "$full"
	expect_eq "sampler_lost (the sampler's table_full)" "$full" \
		"$(pprof_counter_value "$f" sampler_lost)"
	grep -Eq "^ +sampler_lost: " "$E2E_TMP/log" || fail "the summary does not list the loss"
}

# An allocator preloaded ahead of the sampler (LD_PRELOAD=libjemalloc.so.2:<sampler>, an order
# a container's environment may give): jemalloc serves the program's malloc and free, and the
# sampler is bypassed, firing nothing.  -p reads the order from the process's environ and probes
# the allocator instead, so every byte is there (exact); on the sampler's silent probes the
# profile held none.  The same list in the order the README gives is the sampler's path.
t_sampling_allocator_preloaded_ahead() {
	local f lib=$PWD/build/libbpftrace-prof-sampler.so order which
	local jem=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
	[ -f "$jem" ] || fail "no $jem (libjemalloc2 comes with libjemalloc-dev, a build dependency)"
	for which in ahead behind; do
		order="$jem:$lib"
		[ "$which" = ahead ] || order="$lib $jem"
		f=$E2E_TMP/$which.pb.gz
		start_waiting_target "$E2E_TMP/target.out" env LD_PRELOAD="$order" \
			build/targets/live_blocks 1000 500
		start_profiler "$E2E_TMP/prof.log" -v --heap -p "$TARGET_PID" -o "$f"
		finish_waiting_run
		if [ "$which" = behind ]; then
			expect_eq "$which: heap_procs_otel" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
			continue
		fi
		expect_no_drops "$f"
		expect_eq "$which: keep_blocks alloc_space" 64000 "$(pprof_flat "$f" alloc_space keep_blocks)"
		expect_eq "$which: keep_again inuse_space" 32000 "$(pprof_flat "$f" inuse_space keep_again)"
		expect_eq "$which: heap_procs_uprobes" 1 "$(pprof_counter_value "$f" heap_procs_uprobes)"
		expect_eq "$which: heap_procs_otel" 0 "$(pprof_counter_value "$f" heap_procs_otel)"
		grep -q "allocator is preloaded ahead of libbpftrace-prof-sampler.so" "$E2E_TMP/prof.log" ||
			fail "$which: -v does not say why"
	done
}

# An executable with an allocator of its own (own_alloc exports malloc, free, calloc and
# realloc, as one linking tcmalloc or jemalloc statically does) is looked up before any preloaded
# library: a sampler there never sees its malloc or free.  -- CMD: ours is not preloaded, the
# allocator probes serve it.  -p with the sampler preloaded by hand (the containers' opt-in):
# the sampler samples nothing and passes on what still reaches it (reallocarray, which own_alloc
# lacks; a block of glibc's back from there makes own_alloc abort), and the profiler probes the
# program's allocator instead of the sampler's silent probes.  The profiler itself links jemalloc
# in: under the preload it writes its profile and exits cleanly.
t_sampling_own_allocator_bypasses_preload() {
	local f=$E2E_TMP/own.pb.gz g=$E2E_TMP/ownp.pb.gz lib=$PWD/build/libbpftrace-prof-sampler.so
	local T=build/targets/own_alloc
	"$PROF" -v --heap --sample-bytes 4096 -o "$f" -- "$T" >/dev/null 2>"$E2E_TMP/log" ||
		fail "profiler exit status $?"
	cat "$E2E_TMP/log"
	grep -q "own_alloc has an allocator of its own (it exports free): not preloading" \
		"$E2E_TMP/log" || fail "-- CMD: no word on the preload"
	expect_eq "-- CMD: heap_procs_uprobes" 1 "$(pprof_counter_value "$f" heap_procs_uprobes)"
	# 4,000 blocks of 1,000 bytes: about 980 samples of 4,096 bytes, a standard deviation of
	# about 3 % (the blocks grown to 2,000 bytes by reallocarray are own_grow_site's)
	expect_range "-- CMD: own_alloc_site alloc_space" 3200000 4800000 \
		"$(pprof_flat "$f" alloc_space own_alloc_site)"

	start_waiting_target "$E2E_TMP/target.out" env LD_PRELOAD="$lib" "$T" --wait
	start_profiler "$E2E_TMP/prof.log" --heap --sample-bytes 4096 -p "$TARGET_PID" -o "$g"
	finish_waiting_run
	! grep -q "never gave out" "$E2E_TMP/target.out" || fail "own_alloc got a foreign block"
	expect_eq "-p: heap_procs_otel" 0 "$(pprof_counter_value "$g" heap_procs_otel)"
	expect_eq "-p: heap_procs_uprobes" 1 "$(pprof_counter_value "$g" heap_procs_uprobes)"
	expect_range "-p: own_alloc_site alloc_space" 3200000 4800000 \
		"$(pprof_flat "$g" alloc_space own_alloc_site)"

	LD_PRELOAD=$lib "$PROF" --heap --sample-bytes 4096 -o "$E2E_TMP/self.pb.gz" -- true \
		2>"$E2E_TMP/log" || fail "the profiler under the preload: exit status $?"
	go tool pprof -raw "$E2E_TMP/self.pb.gz" >/dev/null 2>&1 || fail "its profile does not decode"
}
