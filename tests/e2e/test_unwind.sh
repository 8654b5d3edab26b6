# Complete user stacks without frame pointers (issue 10): targets built -O2 -fomit-frame-pointer
# (tests/targets/*_nofp.*), Debian's own sqlite3 and python3.11, the demo, and code without an
# unwind table.  Read back with go tool pprof only.

HN=build/targets/heap_nofp
# The frames a thread's stack ends in once it is unwound all the way: main's caller in glibc, or
# a thread's start (clone3's child is the outermost frame).
ROOTS='(__libc_start_call_main|start_thread|clone3)'

ratio() { # A B
	awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f\n", b ? a / b : 0 }'
}

# A counter from the profile's comments ("Comment: NAME=VALUE (…)"; absent = 0).
pprof_counter() { # FILE NAME
	grep -q '^Comment: bpftrace-prof ' <(go tool pprof -symbolize=none -raw "$1" 2>/dev/null) ||
		fail "no comments of ours in $1"
	pprof_counter_value "$1" "$2"
}

# No stack may have an allocator of its own as its leaf: the heap probe charges the caller (a
# wrapper inlined at the call site, such as rtld's calloc, is the caller's code: "(inline)").
expect_no_allocator_leaf() { # FILE
	local bad
	bad=$(grep -E '\|(malloc|calloc|realloc|posix_memalign|aligned_alloc|operator new[^;]*)(;|$)' \
		<(pprof_traces_inline "$1") | head -1)
	[ -z "$bad" ] || fail "allocator frame as leaf: $bad"
}

# heap_nofp's exact table (tests/targets/heap_nofp.c), main above every allocating function and
# the stack unwound to glibc's __libc_start_call_main.  Args: the profiler's --unwind options.
check_heap_nofp() { # [--unwind MODE]
	local f=$E2E_TMP/heap_nofp.pb.gz s=$E2E_TMP/heap_nofp.stacks fns='(alloc_a|alloc_b|use_strdup|use_fopen)'
	"$PROF" --heap "$@" -o "$f" --top 0 -- "$HN" >"$E2E_TMP/target.out" || fail "profiler exit status $?"
	expect_eq "target output" "DONE 1" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	pprof_stacks "$f" alloc_space >"$s"
	expect_eq "alloc_a alloc_objects" 1000 "$(pprof_flat "$f" alloc_objects alloc_a)"
	expect_eq "alloc_a alloc_space" 3000000 "$(pprof_flat "$f" alloc_space alloc_a)"
	expect_eq "alloc_a inuse_space" 3000000 "$(pprof_flat "$f" inuse_space alloc_a)"
	expect_eq "alloc_b alloc_objects" 1000 "$(pprof_flat "$f" alloc_objects alloc_b)"
	expect_eq "alloc_b alloc_space" 1000000 "$(pprof_flat "$f" alloc_space alloc_b)"
	expect_eq "alloc_b inuse_space" 1000000 "$(pprof_flat "$f" inuse_space alloc_b)"
	# strdup and fopen call malloc themselves, inside glibc (no frame pointers): their frames are
	# the leaves, and the callers the frame-pointer walk lost must come right after them.
	expect_eq "use_strdup alloc_space" 32000 "$(pprof_cum "$f" alloc_space use_strdup)"
	expect_eq "use_strdup inuse_space" 32000 "$(pprof_cum "$f" inuse_space use_strdup)"
	expect_eq "bytes on strdup;use_strdup;main" 32000 \
		"$(sum_matching "$s" '\|[^;|]*strdup;use_strdup;main;')"
	# 200 FILE objects of 472 bytes (glibc 2.36's locked FILE), all closed again.
	expect_eq "use_fopen alloc_space" 94400 "$(pprof_cum "$f" alloc_space use_fopen)"
	expect_eq "use_fopen alloc_objects" 200 "$(pprof_cum "$f" alloc_objects use_fopen)"
	expect_eq "use_fopen inuse_space" 0 "$(pprof_cum "$f" inuse_space use_fopen)"
	expect_eq "bytes on fopen's frames;use_fopen;main" 94400 \
		"$(sum_matching "$s" '\|([^;|]*fopen[^;|]*;)+use_fopen;main;')"
	expect_no_allocator_leaf "$f"
	# Every byte of the four functions sits on a stack with main right above the function and
	# glibc's start below main: 3000000 + 1000000 + 32000 + 94400.
	expect_eq "bytes of the four functions with main above and the root below" 4126400 \
		"$(sum_matching "$s" "[|;]$fns;main;([^|]*;)?__libc_start_call_main(;|\$)")"
	expect_eq "bytes of the four functions in all" 4126400 "$(sum_matching "$s" "[|;]$fns(;|\$)")"
}

t_unwind_c_nofp_exact_bytes() {
	check_heap_nofp --unwind dwarf
}

# The default (--unwind auto) must be as complete as dwarf where the files have tables.
t_unwind_c_nofp_auto() {
	check_heap_nofp
}

t_unwind_cxx_nofp_new_charged_to_caller() {
	local f=$E2E_TMP/cxx_nofp.pb.gz s=$E2E_TMP/cxx_nofp.stacks
	"$PROF" --heap -o "$f" --top 0 -- build/targets/heap_cxx_nofp >"$E2E_TMP/target.out" ||
		fail "profiler exit status $?"
	expect_eq "target output" "DONE 1" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	# Flat at the function that wrote `new`: operator new (libstdc++) is not a frame of its own.
	expect_eq "make_a alloc_objects" 400 "$(pprof_flat "$f" alloc_objects make_a)"
	expect_eq "make_a alloc_space" 480000 "$(pprof_flat "$f" alloc_space make_a)"
	expect_eq "make_a inuse_space" 480000 "$(pprof_flat "$f" inuse_space make_a)"
	expect_eq "make_b alloc_objects" 600 "$(pprof_flat "$f" alloc_objects make_b)"
	expect_eq "make_b alloc_space" 300000 "$(pprof_flat "$f" alloc_space make_b)"
	expect_eq "make_b inuse_space" 300000 "$(pprof_flat "$f" inuse_space make_b)"
	pprof_stacks "$f" alloc_space >"$s"
	expect_no_allocator_leaf "$f"
	expect_eq "make_a bytes with main above and the root below" 480000 \
		"$(sum_matching "$s" '\|make_a;main;([^|]*;)?__libc_start_call_main(;|$)')"
	expect_eq "make_b bytes with main above and the root below" 300000 \
		"$(sum_matching "$s" '\|make_b;main;([^|]*;)?__libc_start_call_main(;|$)')"
}

# cpu_nofp (tests/targets/cpu_nofp.c) for ROUNDS, its samples as pprof_stacks lines in STACKS.
# 499 Hz: a ratio of a few hundred samples (99 Hz's) varies too much for a 3:1 check.
profile_cpu_nofp() { # ROUNDS STACKS [--unwind MODE]
	local rounds=$1 s=$2 f=$2.pb.gz
	shift 2
	"$PROF" --cpu=499 "$@" -o "$f" --top 0 -- build/targets/cpu_nofp "$rounds" ||
		fail "profiler exit status $?"
	expect_eq "ringbuf_full" 0 "$(pprof_counter "$f" ringbuf_full)"
	pprof_stacks "$f" samples >"$s"
	[ -s "$s" ] || fail "no samples in $f"
}

t_unwind_cpu_nofp_split_and_root() {
	local s=$E2E_TMP/cpu_nofp.stacks total a b hot rooted
	profile_cpu_nofp 300 "$s"
	total=$(sum_all "$s")
	# 300 rounds are about 3 s of CPU on the main thread alone: some 1500 samples.
	[ "$total" -ge 500 ] || fail "only $total samples of two busy threads"
	# hot_a and hot_b with their callers up to glibc's start (a timer interrupt's kernel frames
	# may sit on top of them).
	a=$(sum_matching "$s" '[|;]hot_a;work;main;([^|]*;)?__libc_start_call_main(;|$)')
	b=$(sum_matching "$s" '[|;]hot_b;work;main;([^|]*;)?__libc_start_call_main(;|$)')
	hot=$(sum_matching "$s" '[|;]hot_[ab](;|$)')
	[ "$b" -gt 0 ] || fail "no complete stack of hot_b ($hot samples in hot_a or hot_b)"
	expect_eq "hot_a/hot_b samples without work;main;…;__libc_start_call_main below" 0 $((hot - a - b))
	expect_range "hot_a/hot_b" 2.3 3.9 "$(ratio "$a" "$b")"
	rooted=$(sum_matching "$s" "[|;]$ROOTS(;|\$)")
	expect_range "share of samples whose stack reaches the thread's root ($rooted of $total)" \
		0.97 1 "$(ratio "$rooted" "$total")"
}

# glibc's syscall() has no frame pointer: its caller is the frame the frame-pointer walk skipped.
t_unwind_cpu_kernel_frames_under_syscall() {
	local s=$E2E_TMP/syscall.stacks k good
	profile_cpu_nofp 150 "$s"
	grep ' comm=syscaller ' "$s" >"$s.syscaller"
	# In the kernel through glibc's syscall() (not the thread's other system calls: setting its
	# name, exiting).
	k=$(sum_matching "$s.syscaller" '[|;]entry_SYSCALL_64[a-z_]*;syscall(;|$)')
	[ "$k" -ge 5 ] || fail "only $k samples of the syscall thread in the kernel under syscall()"
	good=$(sum_matching "$s.syscaller" \
		'[|;]entry_SYSCALL_64[a-z_]*;syscall;in_syscall;syscaller;([^|]*;)?start_thread(;|$)')
	expect_eq "kernel samples with syscall;in_syscall;syscaller;…;start_thread under the kernel frames" "$k" "$good"
}

# No drops in FILE, its alloc_space stacks into STACKS, at least MIN bytes allocated, and
# >= 99 % of them on stacks that reach a thread's root.
expect_rooted_bytes() { # FILE STACKS MIN WHY
	local f=$1 s=$2 total rooted
	expect_no_drops "$f"
	pprof_stacks "$f" alloc_space >"$s"
	total=$(sum_all "$s")
	[ "$total" -ge "$3" ] || fail "only $total bytes allocated $4"
	rooted=$(sum_matching "$s" "[|;]$ROOTS(;|\$)")
	expect_range "share of allocated bytes on stacks that reach the root ($rooted of $total)" \
		0.99 1 "$(ratio "$rooted" "$total")"
}

t_unwind_sqlite3_bulk_reaches_root() {
	local f=$E2E_TMP/sqlite3.pb.gz s=$E2E_TMP/sqlite3.stacks sql=$E2E_TMP/bulk.sql total api
	command -v sqlite3 >/dev/null || fail "no sqlite3 (scripts/install-deps.sh test installs it)"
	{
		echo "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL);"
		echo "BEGIN;"
		seq 1 20000 | awk '{ printf "INSERT INTO t(name, v) VALUES(\047name-%d\047, %d.5);\n", $1 * 7919 % 20000, $1 }'
		echo "COMMIT;"
		echo "CREATE INDEX t_name ON t(name);"
		echo "SELECT count(*), sum(v) FROM t;"
	} >"$sql"
	"$PROF" --heap -o "$f" --top 0 -- sh -c "exec sqlite3 :memory: < $sql" >"$E2E_TMP/sqlite3.out" ||
		fail "profiler exit status $?"
	expect_eq "sqlite3 output" "20000|200020000.0" "$(cat "$E2E_TMP/sqlite3.out")"
	expect_rooted_bytes "$f" "$s" 1000000 "by a 20000-row insert"
	total=$(sum_all "$s")
	# Through the library's exported API (the frames a .dynsym names) down to the root; heaptrack
	# puts 99.98 % of this run's allocations under sqlite3_* functions.
	api=$(sum_matching "$s" "[|;]sqlite3_[a-z0-9_]+;([^|]*;)?$ROOTS(;|\$)")
	expect_range "share of allocated bytes under sqlite3_* and the root ($api of $total)" \
		0.95 1 "$(ratio "$api" "$total")"
	[ "$(sum_matching "$s" '[|;]sqlite3_step;')" -gt 0 ] || fail "no bytes under sqlite3_step"
	[ "$(sum_matching "$s" '[|;]sqlite3_prepare[a-z0-9_]*;')" -gt 0 ] || fail "no bytes under sqlite3_prepare*"
}

t_unwind_python311_reaches_root() {
	local f=$E2E_TMP/python.pb.gz s=$E2E_TMP/python.stacks py=$E2E_TMP/alloc.py
	[ -x /usr/bin/python3.11 ] || fail "no /usr/bin/python3.11 (scripts/install-deps.sh test)"
	# Buffers, dicts and lists larger than pymalloc's 512-byte limit: malloc and realloc.
	cat >"$py" <<-'EOF'
		import ssl
		keep = []
		for i in range(10000):
		    keep.append(bytes(4000 + i % 64))
		    keep.append({j: str(j) * 40 for j in range(100)})
		    keep.append([x * i for x in range(400)])
		    if len(keep) > 3000:
		        keep.clear()
		print("done", len(keep))
	EOF
	"$PROF" --heap -o "$f" --top 0 -- /usr/bin/python3.11 "$py" >"$E2E_TMP/python.out" ||
		fail "profiler exit status $?"
	expect_eq "python output" "done 2973" "$(cat "$E2E_TMP/python.out")"
	expect_rooted_bytes "$f" "$s" 40000000 "(10000 x 4000-byte buffers alone are 40 MB)"
}

# `make demo`'s program (frame pointers kept): strdup (glibc, none) calls malloc, and the
# frame-pointer walk lost strdup's caller, cache_response.
t_unwind_demo_strdup_has_caller() {
	local f=$E2E_TMP/demo.pb.gz s=$E2E_TMP/demo.stacks
	"$PROF" --heap -o "$f" --top 0 -- build/targets/demo >/dev/null || fail "profiler exit status $?"
	expect_no_drops "$f"
	pprof_stacks "$f" alloc_space >"$s"
	# 2000 keys "GET /item/N HTTP/1.1" (N = 0, 10, …, 490 forty times): 40 x (21 + 9 x 22 + 40 x 23)
	expect_eq "strdup's bytes under cache_response;handle;main" 45560 \
		"$(sum_matching "$s" '\|[^;|]*strdup;cache_response;handle;main;')"
	# entries 2000 x 24 + keys 45560 + values 2000 x 1024
	expect_eq "cache_response alloc_space" 2141560 "$(pprof_cum "$f" alloc_space cache_response)"
	expect_no_allocator_leaf "$f"
}

# Two programs whose functions sit at the same addresses with frames of other sizes
# (tests/targets/frames_nofp.c), taking turns on one CPU: the walker's per-CPU cache of the rows
# found for pcs must never hand one process the other's rows (it is kept per process entry's
# generation).  A wrong row reads the return address from inside the other's frame.
t_unwind_same_pcs_other_rows() {
	local f=$E2E_TMP/frames.pb.gz s=$E2E_TMP/frames.stacks T=build/targets
	"$PROF" --heap --unwind dwarf -o "$f" --top 0 -- sh -c \
		"taskset -c 0 $T/frames_nofp & taskset -c 0 $T/frames_wide_nofp; wait" \
		>"$E2E_TMP/target.out" || fail "profiler exit status $?"
	expect_eq "target output" "DONE DONE" "$(tr '\n' ' ' <"$E2E_TMP/target.out" | sed 's/ $//')"
	expect_no_drops "$f"
	pprof_stacks "$f" alloc_space >"$s"
	# 2 programs x 50 rounds x 200 blocks of 64 bytes
	expect_eq "frame_leaf alloc_space" 1280000 "$(pprof_flat "$f" alloc_space frame_leaf)"
	expect_eq "bytes of frame_leaf under frame_mid and main, down to the root" 1280000 \
		"$(sum_matching "$s" "[|;]frame_leaf;frame_mid;main;([^|]*;)?__libc_start_call_main(;|\$)")"
}

# One start state of a walk (malloc's return address, stack and frame pointers) on four paths,
# in bursts and in turn (tests/targets/walk_alias.c): the walk cache keeps whole walks by their
# start, and may hand one back only when every stack word it depends on still holds.  Each
# path's bytes on its own stack, exactly; and most stacks from the cache (else this tests
# nothing; in turn, only a cache keeping four walks per start finds them).
t_unwind_walk_cache_other_paths() {
	local f=$E2E_TMP/alias.pb.gz s=$E2E_TMP/alias.stacks top via size cached mode
	# In bursts of 25 per path, then the four paths in turn (four kept walks per start).
	for mode in bursts interleave; do
		"$PROF" -v --heap --unwind dwarf -o "$f" --top 0 -- build/targets/walk_alias "$mode" \
			>"$E2E_TMP/target.out" 2>"$E2E_TMP/alias.log" || fail "$mode: profiler exit status $?"
		expect_eq "$mode: target output" "DONE" "$(cat "$E2E_TMP/target.out")"
		expect_no_drops "$f"
		pprof_stacks "$f" alloc_space >"$s"
		# 1000 blocks per path
		size=100
		for top in top_1 top_2; do
			for via in via_a via_b; do
				expect_eq "$mode: bytes on leaf;$via;$top;main down to the root" $((1000 * size)) \
					"$(sum_matching "$s" "\|leaf;$via;$top;main;([^|]*;)?__libc_start_call_main(;|\$)")"
				size=$((size + 100))
			done
		done
		expect_eq "$mode: leaf alloc_space" 1000000 "$(pprof_flat "$f" alloc_space leaf)"
		cached=$(sed -n 's/.*bookkeeping:.* unwind_walks_cached=\([0-9]*\).*/\1/p' "$E2E_TMP/alias.log")
		cached=${cached:-0}
		[ "$cached" -ge 3000 ] || fail "$mode: unwind_walks_cached: $cached of 4000 stacks (expected >= 3000)"
		echo "ok: $mode: $cached of 4000 stacks from the walk cache"
	done
}

# 400 starts (call sites of malloc) in turn, ten times: each CPU's cache must hold them all (a
# cache of 64 buckets per CPU kept a fraction: their LRU ways went to the start called next).
t_unwind_walk_cache_many_starts() {
	local f=$E2E_TMP/starts.pb.gz cached
	"$PROF" -v --heap --unwind dwarf -o "$f" --top 0 -- build/targets/walk_alias starts \
		>"$E2E_TMP/target.out" 2>"$E2E_TMP/starts.log" || fail "profiler exit status $?"
	expect_eq "target output" "DONE" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	# site_N allocates 16 + N bytes, N = 100..499, ten times each
	pprof_flat_all "$f" alloc_space >"$E2E_TMP/starts.flat"
	expect_eq "alloc_space of the sites" $((10 * (400 * 16 + (100 + 499) * 400 / 2))) \
		"$(awk '$1 ~ /^site_[0-9]+$/ { s += $2 } END { print s + 0 }' "$E2E_TMP/starts.flat")"
	expect_eq "site_321's bytes" $((10 * (16 + 321))) \
		"$(awk '$1 == "site_321" { print $2 }' "$E2E_TMP/starts.flat")"
	cached=$(sed -n 's/.*bookkeeping:.* unwind_walks_cached=\([0-9]*\).*/\1/p' "$E2E_TMP/starts.log")
	cached=${cached:-0}
	[ "$cached" -ge 3000 ] || fail "unwind_walks_cached: $cached of 4000 stacks (expected >= 3000)"
	echo "ok: $cached of 4000 stacks from the walk cache"
}

# jit_target runs code from anonymous memory: no file, no unwind table, and with --unwind dwarf
# no frame-pointer fallback.  Each sample there is a cut stack, and each cut must be counted.
t_unwind_cut_stacks_are_counted() {
	local f=$E2E_TMP/jit.pb.gz out=$E2E_TMP/jit.out code size lo hi jit=0 cut=0 id addr n
	"$PROF" --cpu --unwind dwarf -d 2 -o "$f" --top 0 -- build/targets/jit_target >"$out" ||
		fail "profiler exit status $?"
	read -r _ _ code size < <(grep '^READY ' "$out") || fail "jit_target never said READY"
	lo=$((16#$code))
	hi=$((lo + 16#$size))
	# Samples whose leaf is in the anonymous code, from go tool pprof -raw: "count value: ids"
	# (leaf first) and "id: 0xaddress …".
	go tool pprof -symbolize=none -raw "$f" >"$f.raw" 2>/dev/null || fail "pprof cannot read $f"
	declare -A leaf_addr=()
	while read -r id addr; do
		leaf_addr[$id]=$((addr))
	done < <(sed -n '/^Locations/,/^Mappings/p' "$f.raw" | awk '$1 ~ /^[0-9]+:$/ { sub(/:$/, "", $1); print $1, $2 }')
	while read -r n id; do
		addr=${leaf_addr[$id]:-0}
		if [ "$addr" -ge "$lo" ] && [ "$addr" -lt "$hi" ]; then jit=$((jit + n)); fi
	done < <(sed -n '/^Samples:/,/^Locations/p' "$f.raw" | awk '/^ *[0-9]+ +[0-9]+: [0-9]/ { print $1, $3 }')
	[ "$jit" -ge 10 ] || fail "only $jit samples in jit_target's code in 2 s"
	cut=$(($(pprof_counter "$f" unwind_no_mapping) + $(pprof_counter "$f" unwind_no_table_never) + $(pprof_counter "$f" unwind_no_table_yet)))
	[ "$cut" -ge "$jit" ] ||
		fail "$jit samples stopped in code without an unwind table, but unwind_no_mapping + unwind_no_table_never + _yet = $cut: cut stacks went uncounted"
	echo "ok: $jit samples in the anonymous code, $cut stacks counted as cut"
}

# `-- CMD` runs our own image until its exec: no table is built for that (our 40 libraries'
# were, never used).  /usr/bin/true maps itself, libc and ld.so, and the vDSO: 4 tables.
t_unwind_cmd_tables_of_its_image_only() {
	local f=$E2E_TMP/own.pb.gz built
	"$PROF" -v --heap -o "$f" --top 0 -- /usr/bin/true 2>"$E2E_TMP/own.log" ||
		fail "profiler exit status $?"
	built=$(sed -n 's/.*heap profile bookkeeping:.* unwind_tables_built=\([0-9]*\).*/\1/p' "$E2E_TMP/own.log")
	expect_eq "unwind_tables_built (true, libc, ld.so, the vDSO)" 4 "$built"
}

# --unwind-memory caps the kernel memory of all loaded unwind tables.  python3.11 importing ssl
# (libssl, libcrypto) needs about 1.8 MiB of them (10 tables; python3.11 alone fits in 1 MiB,
# which the tables of our own libraries, once built before -- CMD's exec, overfilled):
# with 1 MiB the tables past it are refused and counted, their files walked by frame pointers,
# and the profile is still written whole.
t_unwind_memory_budget_counted() {
	local f=$E2E_TMP/budget.pb.gz s=$E2E_TMP/budget.stacks py=$E2E_TMP/budget.py bytes refused
	[ -x /usr/bin/python3.11 ] || fail "no /usr/bin/python3.11 (scripts/install-deps.sh test)"
	cat >"$py" <<-'EOF'
		import ssl
		keep = []
		for i in range(2000):
		    keep.append(bytes(4000 + i % 64))
		print("done", len(keep))
	EOF
	"$PROF" -v --heap --unwind-memory 1 -o "$f" --top 0 -- /usr/bin/python3.11 "$py" >"$E2E_TMP/budget.out" \
		2>"$E2E_TMP/budget.log" || fail "profiler exit status $?"
	expect_eq "python output" "done 2000" "$(cat "$E2E_TMP/budget.out")"
	refused=$(pprof_counter "$f" unwind_tables_over_budget)
	[ "$refused" -gt 0 ] || fail "no unwind table refused with a 1 MiB budget (unwind_tables_over_budget = 0)"
	echo "ok: $refused tables over the budget"
	# bookkeeping: in the -v log, not in the pprof comments
	bytes=$(sed -n 's/.*heap profile bookkeeping:.* unwind_table_bytes=\([0-9]*\).*/\1/p' "$E2E_TMP/budget.log")
	expect_range "unwind_table_bytes under the 1 MiB budget" 16384 1048576 "$bytes"
	expect_eq "events dropped" 0 "$(pprof_counter "$f" ringbuf_full)"
	# bytes(4000..4063) x 2000: every allocation is there, on whatever stack was walked.
	pprof_stacks "$f" alloc_space >"$s"
	expect_range "bytes allocated" 8000000 100000000 "$(sum_all "$s")"
}

# A file of about 5 M unwind rows (tests/targets/gen_big_cfi.py), past the old 4 M-row cap, as a
# 450 MB library's stand-in: its table is built off the event path and loaded whole, and
# big_call's caller, found only through the file's last FDE, is main — all 1,000,000 bytes of
# tests/targets/big_cfi_call.c on alloc_leaf;big_call;main.  With the cap under its rows the file
# is refused and named, and the frame-pointer walk there skips main: none of those bytes.
big_cfi_run() { # PROFILE LOG [PROFILER OPTIONS…]
	local f=$1 log=$2
	shift 2
	start_waiting_target "$E2E_TMP/target.out" build/targets/big_cfi_call build/targets/big_cfi.elf
	start_profiler "$log" -v --heap --unwind dwarf -p "$TARGET_PID" -o "$f" --top 0 "$@"
	wait_for_line "$log" "unwind table for big_cfi.elf" 60 ||
		fail "no word of big_cfi.elf's table: $(grep -i 'unwind table' "$log" | tail -3)"
	echo go >&"$TARGET_IN"
	wait_for_line "$E2E_TMP/target.out" "DONE 1000" 60 || fail "the target never finished"
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $?"
	echo bye >&"$TARGET_IN"
	wait "$TARGET_PID"
}

t_unwind_table_past_four_million_rows() {
	local f=$E2E_TMP/big.pb.gz c=$E2E_TMP/capped.pb.gz s=$E2E_TMP/big.stacks
	big_cfi_run "$f" "$E2E_TMP/big.log"
	grep 'unwind table for big_cfi.elf' "$E2E_TMP/big.log"
	# 5,040,004 rows: 2,461 chunks of 2,048 and the index
	grep -q 'unwind table for big_cfi.elf: 2462 chunks, 38.5 MiB' "$E2E_TMP/big.log" ||
		fail "not loaded whole"
	expect_no_drops "$f"
	pprof_stacks "$f" alloc_space >"$s"
	expect_eq "bytes on alloc_leaf;big_cfi.elf+…;main" 1000000 \
		"$(sum_matching "$s" '\|alloc_leaf;big_cfi\.elf\+0x[0-9a-f]+;main;')"
	big_cfi_run "$c" "$E2E_TMP/capped.log" --unwind-max-rows 4194304
	grep -q 'no unwind table for big_cfi.elf: over the row cap' "$E2E_TMP/capped.log" ||
		fail "the capped run did not name the file"
	pprof_stacks "$c" alloc_space >"$s"
	expect_eq "bytes on alloc_leaf (capped)" 1000000 "$(sum_matching "$s" '\|alloc_leaf;')"
	expect_eq "bytes with main under big_call (capped)" 0 \
		"$(sum_matching "$s" '\|alloc_leaf;big_cfi\.elf\+0x[0-9a-f]+;main;')"
}
