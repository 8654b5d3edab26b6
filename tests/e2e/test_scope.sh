# Wide scopes without containers: --cgroup on a cgroup v2 directory made by the test, -a, and
# continuous mode (--interval / --output-dir / --retain).  Container cases: test_container.sh.

# Distinct pid labels of a profile, sorted, space-separated.
profile_pids() { # FILE
	pprof_traces "$1" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -un | xargs
}

stop_profiler() {
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $?: $(tail -5 "$1")"
}

t_scope_cgroup_cpu_only_its_processes() {
	local cg f=$E2E_TMP/cg.pb.gz in out
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" -o "$f" --top 0
	bg_in_cgroup "$cg" build/targets/cpu_target 3 >/dev/null
	in=$!
	build/targets/cpu_target 3 >/dev/null &
	out=$!
	wait "$in" "$out"
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	expect_eq "processes in the profile (the one in the cgroup)" "$in" "$(profile_pids "$f")"
	expect_eq "first mapping" "$(readlink -f build/targets/cpu_target)" "$(first_mapping "$f")"
	# The split itself is test_cpu.sh's business; here: its stacks are there, whole.
	expect_range "hot_three samples" 5 100000 "$(pprof_cum "$f" samples hot_three)"
	expect_range "hot_three stacks with main below" 1 100000 \
		"$(pprof_traces "$f" | grep -c '|[^|]*hot_three;main;')"
}

# A process that starts in the cgroup after the profiler: every allocation, exactly; the same
# program on the host at the same time is not in the profile.
t_scope_cgroup_heap_exact_for_a_later_process() {
	local cg f=$E2E_TMP/heap.pb.gz in out
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	bg_in_cgroup "$cg" build/targets/heap_target >"$E2E_TMP/in.out" 2>&1
	in=$!
	build/targets/heap_target >"$E2E_TMP/out.out" 2>&1 &
	out=$!
	wait "$in" || fail "target in the cgroup failed: $(cat "$E2E_TMP/in.out")"
	wait "$out"
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	check_heap_numbers "$f"
	pprof_traces "$f" | grep -q "pid=$out " && fail "the host process $out is in the profile"
	pprof_traces "$f" | grep '|leak_pages;' | grep -q "pid=$in " || fail "leak_pages not charged to $in"
}

# A process moved into the cgroup by writing cgroup.procs (as runc does with its init) while its
# threads are inside malloc: those calls began out of scope, so their returns are counted as
# pending_joined (bookkeeping), never as lost (pending_missing).  A process born in the cgroup
# maps the same libc first, so its allocators are probed (filtered to the cgroup in BPF).
t_scope_cgroup_joined_mid_call() {
	local cg f=$E2E_TMP/joined.pb.gz sleeper pid home i
	cg=$(make_cgroup)
	cgroup2_mount
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	bg_in_cgroup "$cg" sleep 60
	sleeper=$!
	wait_for_line "$E2E_TMP/prof.log" "probed [0-9]* allocator functions" 10 || fail "libc not probed: $(cat "$E2E_TMP/prof.log")"
	build/targets/malloc_threads 60 &
	pid=$!
	home=$(sed -n "s/^0:://p" "/proc/$pid/cgroup")
	for i in $(seq 20); do
		echo "$pid" >"$cg/cgroup.procs" || fail "moving $pid into $cg"
		sleep 0.1
		echo "$pid" >"$CGROUP2$home/cgroup.procs" || fail "moving $pid back to $home"
		sleep 0.05
	done
	kill "$pid" "$sleeper"
	wait "$pid" "$sleeper" 2>/dev/null
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	expect_eq "pending_missing" 0 "$(pprof_counter_value "$f" pending_missing)"
	expect_range "pending_joined (20 joins, 4 threads in malloc)" 1 1000000 \
		"$(pprof_counter_value "$f" pending_joined)"
	pprof_traces "$f" | grep '|churn;' | grep -q "pid=$pid " || fail "no churn samples of $pid while it was in the cgroup"
}

# A program that lives a few milliseconds, ten times: every run symbolized (its maps are read
# while it lives, at the dynamic loader's hook), every allocation counted.
t_scope_cgroup_short_lived_processes_symbolized() {
	local cg f=$E2E_TMP/short.pb.gz i
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	for i in 1 2 3 4 5 6 7 8 9 10; do
		in_cgroup "$cg" build/targets/short_lived || fail "short_lived run $i failed"
	done
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	expect_no_drops "$f"
	expect_eq "short_alloc alloc_objects (10 runs x 10)" 100 "$(pprof_flat "$f" alloc_objects short_alloc)"
	expect_eq "short_alloc inuse_space" 100000 "$(pprof_flat "$f" inuse_space short_alloc)"
	expect_eq "processes with short_alloc" 10 \
		"$(pprof_traces "$f" | grep '|short_alloc;main' | grep -o 'pid=[0-9]*' | sort -u | wc -l)"
}

# -a: a process of the host is in, we are not.
t_scope_all_host_processes() {
	local f=$E2E_TMP/all.pb.gz t
	start_profiler "$E2E_TMP/prof.log" -a --cpu -o "$f" --top 0
	build/targets/cpu_target 2 >/dev/null &
	t=$!
	wait "$t"
	stop_profiler "$E2E_TMP/prof.log"
	profile_pids "$f" | tr ' ' '\n' | grep -qx "$t" || fail "cpu_target ($t) not in the -a profile"
	profile_pids "$f" | tr ' ' '\n' | grep -qx "$PROF_PID" && fail "the profiler profiled itself"
	expect_range "hot_three samples" 5 100000 "$(pprof_cum "$f" samples hot_three)"
	# Mapping 1: the executable of the busiest process, whichever it was; never the kernel's
	# or a library.
	first_mapping "$f" | grep -Eq '^/[^[]*$' || fail "first mapping: '$(first_mapping "$f")'"
	first_mapping "$f" | grep -Eq '\.so(\.[0-9]+)*$' && fail "first mapping a library: $(first_mapping "$f")"
	true
}

# -a with Python processes already running when it starts (Debian's static python3.11 and
# pyenv's shared-libpython 3.13): found host-wide, each one's Python frames read, hot_a under
# main.  Folded names a process by its comm: python3.11 and python3.13 tell the two apart.
t_scope_all_python() {
	local f=$E2E_TMP/pyall.folded pids="" p py pyenv_py="" comm n=0
	for py in "${PYENV_ROOT:-/root/.pyenv}"/versions/3.13.*/bin/python3.13 /root/.pyenv/versions/3.13.*/bin/python3.13; do
		[ -x "$py" ] && pyenv_py=$py && break
	done
	[ -x /usr/bin/python3.11 ] || fail "/usr/bin/python3.11 missing (apt-get install python3.11)"
	[ -n "$pyenv_py" ] || [ "${CI:-}" != true ] || fail "pyenv's python3.13 missing"
	# running for a minute (host-wide start-up takes seconds), killed once the profile is written
	for py in /usr/bin/python3.11 $pyenv_py; do
		start_waiting_target "$E2E_TMP/target.$((++n)).out" "$py" tests/targets/py_cpu.py --wait 60
		echo go >&"$TARGET_IN"
		pids="$pids $TARGET_PID"
	done
	"$PROF" -a --cpu -d 3 -f folded -o "$f" --top 0 2>"$f.err" || { tail -5 "$f.err"; fail "profiler exit status $?"; }
	for p in $pids; do
		comm=$(cat "/proc/$p/comm") || fail "python $p ended before the profile was written"
		n=$(grep -cE "^$comm;([^;]+;)*<module>;main;hot_a(;.*)? [0-9]+$" "$f")
		[ "$n" -gt 0 ] || { grep "^$comm;" "$f" | head -3; fail "pid $p ($comm): no <module>;main;hot_a line"; }
		echo "ok: pid $p ($comm): $n folded lines <module>;main;hot_a"
		expect_eq "pid $p ($comm): hot_a lines with _PyEval_EvalFrameDefault" 0 \
			"$(grep -E "^$comm;" "$f" | grep -E '(;|^)hot_a(;| )' | grep -c '_PyEval_EvalFrameDefault')"
	done
	for p in $pids; do kill "$p"; done
}

# --interval 2 over a run of about 5.5 s: consecutive files covering the run without gaps,
# every allocation in exactly one of them, in-use heap carried over exactly.
t_scope_interval_heap_carried_exactly() {
	local dir=$E2E_TMP/out f n prev_end="" span first="" inuse
	"$PROF" --heap --interval 2 --output-dir "$dir" -- build/targets/phases ||
		fail "profiler exit status $?"
	n=$(find "$dir" -name '*.heap.pb.gz' | wc -l)
	expect_range "interval files" 3 4 "$n"
	expect_eq "files named <UTC time>-<run id>.heap.pb.gz" "$n" \
		"$(find "$dir" -regextype posix-extended -regex '.*/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\.heap\.pb\.gz' | wc -l)"
	local early=0 late=0
	for f in $(find "$dir" -name '*.heap.pb.gz' | sort); do
		expect_no_drops "$f"
		# time_nanos and duration_nanos: each interval starts exactly where the last ended.
		read -r -a span <<<"$(pprof_span "$f")"
		expect_range "interval length (ns)" 500000000 2600000000 "${span[1]}"
		[ -z "$prev_end" ] || expect_eq "start of $(basename "$f") = end of the one before" "$prev_end" "${span[0]}"
		prev_end=$((span[0] + span[1]))
		early=$((early + $(pprof_flat "$f" alloc_space leak_early)))
		late=$((late + $(pprof_flat "$f" alloc_space leak_late)))
		inuse=$(pprof_flat "$f" inuse_space leak_early)
		if [ -z "$first" ]; then
			first=$f
			expect_eq "leak_early in use in the first interval" 409600 "$inuse"
		else
			expect_eq "leak_early in use carried into $(basename "$f")" 409600 "$inuse"
		fi
	done
	expect_eq "leak_early allocated over all intervals" 409600 "$early"
	expect_eq "leak_late allocated over all intervals" 204800 "$late"
	expect_eq "leak_late in use at the end" 204800 "$(pprof_flat "$f" inuse_space leak_late)"
	expect_eq "leak_late allocated in the first interval" 0 "$(pprof_flat "$first" alloc_space leak_late)"
}

t_scope_interval_retain_keeps_newest() {
	local dir=$E2E_TMP/out
	mkdir -p "$dir"
	# Someone else's file in the directory: never touched.
	: >"$dir/notes.txt"
	"$PROF" --cpu --interval 1 --retain 2 --output-dir "$dir" -- build/targets/cpu_target 4 >/dev/null ||
		fail "profiler exit status $?"
	expect_eq "cpu profiles kept" 2 "$(find "$dir" -name '*.cpu.pb.gz' | wc -l)"
	[ -e "$dir/notes.txt" ] || fail "--retain removed a file that is not ours"
	local f
	f=$(find "$dir" -name '*.cpu.pb.gz' | sort | tail -1)
	go tool pprof -raw "$f" >/dev/null 2>&1 || fail "$f does not decode"
}

# Our profiles in DIR for MODE: <UTC time>-<run id>.MODE.pb.gz, one per line, sorted.
run_files() { # DIR MODE
	find "$1" -maxdepth 1 -regextype posix-extended -regex ".*/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}\.$2\.pb\.gz" | sort
}

# The cpu profiles in DIR that the test did not put there (whatever their names' format).
new_cpu_files() { # DIR
	find "$1" -maxdepth 1 -name '*.cpu.pb.gz' ! -name '20990101T000000Z.cpu.pb.gz' ! -name '20200101T000000Z.cpu.pb.gz' | sort
}

# A profile named from the future (a clock once wrong, or put there) beside the run: --retain 2
# keeps the run's own two newest (it used to keep the future one and delete each new profile),
# leaves that name alone, and deletes an earlier run's profile once its slot is needed.
t_scope_interval_retain_beside_future_file() {
	local dir=$E2E_TMP/out f
	mkdir -p "$dir"
	: >"$dir/20990101T000000Z.cpu.pb.gz"
	: >"$dir/20200101T000000Z.cpu.pb.gz"
	"$PROF" --cpu --interval 1 --retain 2 --output-dir "$dir" -d 4 -- build/targets/cpu_target 6 >/dev/null ||
		fail "profiler exit status $?"
	ls -l "$dir"
	expect_eq "this run's cpu profiles kept" 2 "$(new_cpu_files "$dir" | wc -l)"
	[ -e "$dir/20990101T000000Z.cpu.pb.gz" ] || fail "a profile named from the future was deleted"
	[ ! -e "$dir/20200101T000000Z.cpu.pb.gz" ] || fail "the earlier run's profile was kept past --retain"
	for f in $(new_cpu_files "$dir"); do
		go tool pprof -raw "$f" >/dev/null 2>&1 || fail "$f does not decode"
	done
}

# Two runs writing one directory at once, in the same seconds: each profile has a name of its
# own (names were <UTC time>.<mode>.pb.gz: the second run's replaced the first's).
t_scope_interval_two_runs_one_dir() {
	local dir=$E2E_TMP/out a b
	mkdir -p "$dir"
	"$PROF" --cpu --interval 1 --output-dir "$dir" -d 4 -v -- build/targets/cpu_target 6 >/dev/null 2>"$E2E_TMP/a.err" &
	a=$!
	"$PROF" --cpu --interval 1 --output-dir "$dir" -d 4 -v -- build/targets/cpu_target 6 >/dev/null 2>"$E2E_TMP/b.err"
	b=$?
	wait "$a" || fail "first profiler exit status $?"
	expect_eq "second profiler exit status" 0 "$b"
	sed -n 's/^.*wrote cpu profile to //p' "$E2E_TMP/a.err" "$E2E_TMP/b.err" | sort >"$E2E_TMP/written"
	cat "$E2E_TMP/written"
	expect_range "profiles written by both runs" 6 12 "$(wc -l <"$E2E_TMP/written")"
	expect_eq "names written twice" "" "$(uniq -d "$E2E_TMP/written")"
	expect_eq "profiles in the directory" "$(wc -l <"$E2E_TMP/written")" "$(find "$dir" -name '*.cpu.pb.gz' | wc -l)"
	expect_eq "run ids" 2 "$(run_files "$dir" cpu | sed 's/.*Z-\([0-9a-f]*\)\..*/\1/' | sort -u | wc -l)"
}

# A late loop turn (the profiler stopped for 1.5 s) lengthens that interval and not the next:
# every interval but the last is at least --interval long, so no two files of the run share a
# start second.  (The next one was due on the old schedule and came short: two starts in one
# second gave two writes to one name.)
t_scope_interval_late_turn_next_whole() {
	local dir=$E2E_TMP/out f span n=0 short=0
	mkdir -p "$dir"
	"$PROF" --cpu --interval 1 --output-dir "$dir" -d 5 -v -- build/targets/cpu_target 7 >/dev/null 2>"$E2E_TMP/err" &
	local pid=$!
	wait_for_line "$E2E_TMP/err" "wrote cpu profile to" 10 || { cat "$E2E_TMP/err"; fail "no first interval"; }
	sleep 0.3
	kill -STOP "$pid"
	sleep 1.5
	kill -CONT "$pid"
	wait "$pid" || fail "profiler exit status $?"
	sed -n 's/^.*wrote cpu profile to //p' "$E2E_TMP/err" | sort >"$E2E_TMP/written"
	cat "$E2E_TMP/written"
	expect_eq "names written twice" "" "$(uniq -d "$E2E_TMP/written")"
	for f in $(run_files "$dir" cpu | head -n -1); do
		read -r -a span <<<"$(pprof_span "$f")"
		echo "$(basename "$f"): ${span[1]} ns"
		n=$((n + 1))
		[ "${span[1]}" -ge 1000000000 ] || short=$((short + 1))
	done
	expect_range "intervals before the last" 2 4 "$n"
	expect_eq "intervals shorter than --interval (but the last)" 0 "$short"
}

# --retain on a file system whose directory entries carry no type (ext2 without the filetype
# feature: readdir gives DT_UNKNOWN): profiles beyond N are deleted all the same (they were
# never deleted: only DT_REG entries were considered).
t_scope_interval_retain_dt_unknown() {
	local img=$E2E_TMP/ext2.img dir=$E2E_TMP/mnt
	command -v mkfs.ext2 >/dev/null || fail "mkfs.ext2 missing (apt-get install e2fsprogs)"
	truncate -s 16M "$img"
	mkfs.ext2 -q -F -O ^filetype "$img" || fail "mkfs.ext2 failed"
	mkdir -p "$dir"
	mount -o loop "$img" "$dir" || fail "cannot mount $img"
	# shellcheck disable=SC2064 # $dir now: the trap runs after this function's locals are gone
	trap "umount '$dir'; kill \$(jobs -p) 2>/dev/null" EXIT
	: >"$dir/20200101T000000Z.cpu.pb.gz"
	"$PROF" --cpu --interval 1 --retain 2 --output-dir "$dir" -d 5 -- build/targets/cpu_target 7 >/dev/null ||
		fail "profiler exit status $?"
	ls -l "$dir"
	expect_eq "this run's cpu profiles kept" 2 "$(new_cpu_files "$dir" | wc -l)"
	[ ! -e "$dir/20200101T000000Z.cpu.pb.gz" ] || fail "the earlier run's profile was kept past --retain"
}

# An interval profile that cannot be written (the file system is full) is counted: the next
# profile written carries interval_writes_failed, the run ends with a line saying how many and
# exit status 1.  (It was only logged.)
t_scope_interval_write_failure_counted() {
	local dir=$E2E_TMP/small rc f n
	mkdir -p "$dir"
	mount -t tmpfs -o size=1m tmpfs "$dir" || fail "cannot mount a tmpfs"
	# shellcheck disable=SC2064 # $dir now: the trap runs after this function's locals are gone
	trap "umount '$dir'; kill \$(jobs -p) 2>/dev/null" EXIT
	dd if=/dev/zero of="$dir/filler" bs=4k 2>/dev/null
	"$PROF" --cpu --interval 1 --output-dir "$dir" -d 6 -- build/targets/cpu_target 8 >/dev/null 2>"$E2E_TMP/err" &
	local pid=$!
	wait_for_line "$E2E_TMP/err" "cannot write\|writing .* failed" 10 || { cat "$E2E_TMP/err"; fail "no failed write"; }
	rm "$dir/filler"
	wait "$pid"
	rc=$?
	cat "$E2E_TMP/err"
	expect_eq "exit status" 1 "$rc"
	n=$(grep -c 'cannot write\|writing .* failed' "$E2E_TMP/err")
	grep -q "$n interval profiles were not written to $dir (interval_writes_failed)" "$E2E_TMP/err" ||
		fail "no closing line counting $n failed writes"
	f=$(new_cpu_files "$dir" | tail -1)
	[ -n "$f" ] || fail "no profile written after the disk had room again"
	expect_eq "interval_writes_failed in $(basename "$f")" "$n" "$(pprof_counter_value "$f" interval_writes_failed)"
}

t_scope_usage_errors() {
	local out=$E2E_TMP/err
	"$PROF" --interval 2 -- true 2>"$out"
	expect_eq "--interval without --output-dir: exit status" 2 $?
	grep -q 'output-dir' "$out" || fail "message: $(cat "$out")"
	"$PROF" --cgroup /nonexistent-cgroup -d 1 2>"$out"
	expect_eq "--cgroup on a missing directory: exit status" 2 $?
	"$PROF" --cgroup /tmp -d 1 2>"$out"
	expect_eq "--cgroup on a directory that is no cgroup: exit status" 2 $?
	grep -q 'not a cgroup v2 directory' "$out" || fail "message: $(cat "$out")"
	"$PROF" -a -p 1 2>"$out"
	expect_eq "two targets: exit status" 2 $?
}

# --interval 2 for 9 s: at least 4 files, each decoded by go tool pprof, each holding no more
# samples than its own interval can (3 threads at 99 Hz for its duration, plus a tick).
t_scope_interval_cpu_files() {
	local dir=$E2E_TMP/out f n span samples max total=0
	"$PROF" --cpu --interval 2 --output-dir "$dir" -d 9 -- build/targets/cpu_target 12 >/dev/null ||
		fail "profiler exit status $?"
	n=$(find "$dir" -name '*.cpu.pb.gz' | wc -l)
	expect_range "cpu interval files" 4 6 "$n"
	for f in $(find "$dir" -name '*.cpu.pb.gz' | sort); do
		go tool pprof -raw "$f" >/dev/null 2>&1 || fail "$f does not decode"
		read -r -a span <<<"$(pprof_span "$f")"
		samples=$(go tool pprof -symbolize=none -raw "$f" 2>/dev/null |
			awk '/^Samples:/ { on = 1; next } /^Locations/ { on = 0 } on && $1 ~ /^[0-9]+$/ { s += $1 } END { print s + 0 }')
		max=$(awk -v d="${span[1]}" 'BEGIN { printf "%d", 3 * 99 * d / 1e9 + 3 }')
		expect_range "samples in $(basename "$f") (at most $max)" 0 "$max" "$samples"
		total=$((total + samples))
	done
	expect_range "samples over the run" 100 100000 "$total"
}

# --calls in a cgroup: Debian's python3.11 (function__return probes), started in the cgroup
# before the profiler and waiting: its runtime is attached when the scan finds it, so every
# call after the go line is counted.
t_scope_cgroup_calls_python() {
	local py=/usr/bin/python3.11 cg f=$E2E_TMP/calls.pb.gz pid i
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	cg=$(make_cgroup)
	mkfifo "$E2E_TMP/go"
	# Read-write: opening a FIFO so does not wait for the other end.
	exec {go}<>"$E2E_TMP/go"
	# The go line comes through the FIFO by name: a background command's stdin is /dev/null.
	bg_in_cgroup "$cg" "$py" -c 'import sys; open(sys.argv[2]).readline(); exec(open(sys.argv[1]).read())' \
		tests/targets/calls.py "$E2E_TMP/go" >"$E2E_TMP/py.out" 2>&1
	pid=$!
	# In the cgroup, and python by now (it reads its stdin), before the profiler looks.
	for ((i = 0; i < 100; i++)); do
		grep -qx "$pid" "$cg/cgroup.procs" && grep -q python "/proc/$pid/comm" && break
		sleep 0.05
	done
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --calls -o "$f" --top 0
	echo go >&"$go"
	exec {go}>&-
	wait "$pid" || fail "python failed: $(cat "$E2E_TMP/py.out")"
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	expect_eq "script output" 125250 "$(cat "$E2E_TMP/py.out")"
	expect_eq "f calls (1000 from Python, 500 from map)" 1500 "$(pprof_flat "$f" calls f)"
	expect_eq "processes with f" "$pid" \
		"$(pprof_traces "$f" | grep '|f' | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u | xargs)"
}

# uprobe_state PID LIB: "probed malloc,…" when the code of malloc, free or calloc in LIB as PID
# maps it differs from the file (a uprobe's breakpoint is written into every process mapping the
# probed file, in scope or not), "clean" when all three are as in the file.  The kernel's view,
# read through /proc/PID/mem: nothing of ours in between.
uprobe_state() { # PID LIB
	python3 - "$1" "$2" <<'PY'
import subprocess, sys
pid, lib = sys.argv[1], sys.argv[2]
base = None
for line in open("/proc/%s/maps" % pid):
    f = line.split()
    if len(f) >= 6 and f[5] == lib and int(f[2], 16) == 0:
        base = int(f[0].split("-")[0], 16)
        break
if base is None:
    sys.exit("%s does not map %s" % (pid, lib))
syms = {}
nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
for line in nm.stdout.splitlines():
    f = line.split()
    name = f[-1].split("@")[0] if len(f) == 3 else ""
    if name in ("malloc", "free", "calloc"):
        syms[name] = int(f[0], 16)  # libc's text: address = file offset
if len(syms) != 3:
    sys.exit("malloc, free, calloc not all in %s: %s" % (lib, syms))
changed = []
with open(lib, "rb") as data, open("/proc/%s/mem" % pid, "rb") as mem:
    for name, off in sorted(syms.items()):
        data.seek(off)
        mem.seek(base + off)
        if mem.read(32) != data.read(32):
            changed.append(name)
print("probed " + ",".join(changed) if changed else "clean")
PY
}

# wait_for_count FILE PATTERN N SECONDS: until PATTERN is on N lines of FILE.
wait_for_count() {
	local i
	for ((i = 0; i < $4 * 20; i++)); do
		[ "$(grep -c "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
		sleep 0.05
	done
	return 1
}

# Number of *.heap.pb.gz in DIR.
heap_files() { find "$1" -name '*.heap.pb.gz' 2>/dev/null | wc -l; }

# A libc copy that only one process in the cgroup maps: probed while it runs, detached after
# the interval that saw it exit (a process outside the scope mapping the same copy shows the
# breakpoints come and go), probed again for the next process that maps it, every allocation
# of that one counted.
# copy_probed_while_mapped CG LIB LOG OBS: a process in CG maps LIB's libc copy: the copy is
# probed while it runs and clean again once it is killed (seen in the observer OBS's memory).
copy_probed_while_mapped() {
	local cg=$1 lib=$2 log=$3 obs=$4 p1
	start_waiting_target "$E2E_TMP/p1.out" in_cgroup "$cg" env LD_LIBRARY_PATH="$lib" \
		build/targets/heap_target --wait
	p1=$(awk '/^READY/ { print $2 }' "$E2E_TMP/p1.out")
	# pvalloc's entry is the copy's last probe (heap_attach__plan: entries last, in list order).
	wait_for_count "$log" "probing pvalloc at $lib/libc.so.6" 1 20 ||
		fail "the copy was not probed for $p1: $(tail -5 "$log")"
	expect_eq "the copy while $p1 maps it" "probed calloc,free,malloc" \
		"$(uprobe_state "$obs" "$lib/libc.so.6")"
	grep -q "detached .* probes from file" "$log" && fail "detached while $p1 runs: $(grep detached "$log")"
	kill -KILL "$p1"
	wait_for_line "$log" "detached .* probes from file" 20 || fail "the copy's probes never went"
	expect_eq "the copy after $p1 is gone" clean "$(uprobe_state "$obs" "$lib/libc.so.6")"
}

t_scope_interval_heap_detached_when_unmapped() {
	local cg dir=$E2E_TMP/out lib=$E2E_TMP/lib log=$E2E_TMP/prof.log obs p2 p2_in p2_job n f
	local sum fn idx want i
	mkdir -p "$lib"
	cp "$(realpath /lib/x86_64-linux-gnu/libc.so.6)" "$lib/libc.so.6"
	cg=$(make_cgroup)
	# The observer: outside the scope, mapping the copy, allocating nothing while it waits.
	start_waiting_target "$E2E_TMP/obs.out" env LD_LIBRARY_PATH="$lib" build/targets/heap_target --wait
	obs=$TARGET_PID
	expect_eq "the copy before the profiler" clean "$(uprobe_state "$obs" "$lib/libc.so.6")"
	# -v twice: the attach and detach lines (debug) say when to look.
	start_profiler "$log" -v --cgroup "$cg" --heap --sample-bytes 0 --interval 1 \
		--output-dir "$dir" --top 0
	expect_eq "the copy, nobody in scope mapping it" clean "$(uprobe_state "$obs" "$lib/libc.so.6")"

	copy_probed_while_mapped "$cg" "$lib" "$log" "$obs"
	# The interval after the detach says so (the counter is cumulative).
	n=$(heap_files "$dir")
	for ((i = 0; i < 400; i++)); do
		[ "$(heap_files "$dir")" -ge $((n + 2)) ] && break
		sleep 0.05
	done
	f=$(find "$dir" -name '*.heap.pb.gz' | sort | tail -1)
	expect_range "probe_files_detached in $(basename "$f")" 1 1000 \
		"$(pprof_counter_value "$f" probe_files_detached)"

	# A new process mapping the copy: probed again before it allocates (it waits for its go).
	mkfifo "$E2E_TMP/p2.in"
	exec {p2_in}<>"$E2E_TMP/p2.in"
	in_cgroup "$cg" env LD_LIBRARY_PATH="$lib" build/targets/heap_target --wait \
		<"$E2E_TMP/p2.in" >"$E2E_TMP/p2.out" 2>&1 &
	p2_job=$!
	wait_for_line "$E2E_TMP/p2.out" READY 20 || fail "the second process never became ready"
	p2=$(awk '/^READY/ { print $2 }' "$E2E_TMP/p2.out")
	wait_for_count "$log" "probing pvalloc at $lib/libc.so.6" 2 20 ||
		fail "the copy was not probed again for $p2: $(tail -5 "$log")"
	expect_eq "the copy while $p2 maps it" "probed calloc,free,malloc" \
		"$(uprobe_state "$obs" "$lib/libc.so.6")"
	echo go >&"$p2_in"
	wait_for_line "$E2E_TMP/p2.out" DONE 300 || fail "the second process never finished"
	# Its last records consumed: one more interval written after DONE.
	n=$(heap_files "$dir")
	for ((i = 0; i < 400; i++)); do
		[ "$(heap_files "$dir")" -ge $((n + 2)) ] && break
		sleep 0.05
	done
	stop_profiler "$log"
	exec {p2_in}>&-
	kill "$obs" "$p2"
	wait "$p2_job"
	rmdir "$cg"
	# Allocations per interval add up to the program's exactly; in use carried to the last.
	for f in $(find "$dir" -name '*.heap.pb.gz' | sort); do
		expect_no_drops "$f" >/dev/null
	done
	# shellcheck disable=SC2046 # the interval files' names: no spaces
	pprof_flat_sums alloc_objects,alloc_space $(find "$dir" -name '*.heap.pb.gz' | sort) >"$E2E_TMP/sums"
	for want in "leak_pages alloc_objects 1000" "leak_pages alloc_space 4096000" \
		"churn_small alloc_objects 400000" "churn_small alloc_space 25600000" \
		"calloc_kept alloc_objects 50" "realloc_chain alloc_objects 4" \
		"realloc_chain alloc_space 1500" "memalign_kept alloc_objects 20" \
		"cxx_new_kept alloc_objects 50" "cxx_new_kept alloc_space 49000"; do
		read -r fn idx want <<<"$want"
		sum=$(awk -v k="$idx $fn" '$1 " " $2 == k { print $3; found = 1 } END { if (!found) print 0 }' "$E2E_TMP/sums")
		expect_eq "$fn $idx over all intervals" "$want" "$sum"
	done
	f=$(find "$dir" -name '*.heap.pb.gz' | sort | tail -1)
	expect_eq "leak_pages inuse_space at the end" 4096000 "$(pprof_flat "$f" inuse_space leak_pages)"
	expect_eq "calloc_kept inuse_space at the end" 50000 "$(pprof_flat "$f" inuse_space calloc_kept)"
	expect_eq "cxx_new_kept inuse_space at the end" 40000 "$(pprof_flat "$f" inuse_space cxx_new_kept)"
	expect_eq "realloc_chain inuse_space at the end" 800 "$(pprof_flat "$f" inuse_space realloc_chain)"
	pprof_traces "$f" | grep '|leak_pages;' | grep -q "pid=$p2 " || fail "leak_pages not charged to $p2"
}

# A runtime started in the cgroup after the profiler: its first exec is held until its probes are
# in (exec holds), so every call is seen, from the first.
t_scope_cgroup_calls_python_started_later() {
	local py=/usr/bin/python3.11 cg f=$E2E_TMP/later.pb.gz pid
	[ -x "$py" ] || fail "$py missing (apt-get install python3.11)"
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --calls -o "$f" --top 0
	in_cgroup "$cg" "$py" tests/targets/calls.py >"$E2E_TMP/py.out" 2>&1 ||
		fail "python failed: $(cat "$E2E_TMP/py.out")"
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	expect_eq "script output" 125250 "$(cat "$E2E_TMP/py.out")"
	expect_eq "f calls (1000 from Python, 500 from map)" 1500 "$(pprof_flat "$f" calls f)"
	expect_eq "exec holds that failed" 0 "$(pprof_counter_value "$f" exec_hold_fail)"
}

# Without --interval too: a file's probes go once its last process in scope has exited (the next
# tick), seen from outside the scope in the observer's memory.
t_scope_heap_detached_when_unmapped_one_shot() {
	local cg lib=$E2E_TMP/lib log=$E2E_TMP/prof.log f=$E2E_TMP/one.pb.gz obs
	mkdir -p "$lib"
	cp "$(realpath /lib/x86_64-linux-gnu/libc.so.6)" "$lib/libc.so.6"
	cg=$(make_cgroup)
	start_waiting_target "$E2E_TMP/obs.out" env LD_LIBRARY_PATH="$lib" build/targets/heap_target --wait
	obs=$TARGET_PID
	start_profiler "$log" -v --cgroup "$cg" --heap --sample-bytes 0 -o "$f" --top 0
	copy_probed_while_mapped "$cg" "$lib" "$log" "$obs"
	stop_profiler "$log"
	kill "$obs"
	rmdir "$cg"
	expect_range "probe_files_detached" 1 1000 "$(pprof_counter_value "$f" probe_files_detached)"
}

# --cgroup --cpu on Python processes started in the cgroup after the profiler (Debian's static
# python3.11 and a pyenv shared-libpython one): Python frames found without any -p or -- CMD,
# hot_a under main in each, labelled with the GIL state.
t_scope_cgroup_cpu_python() {
	local cg f=$E2E_TMP/pycg.pb.gz pids="" p py pyenv_py=""
	for py in "${PYENV_ROOT:-/root/.pyenv}"/versions/3.12.*/bin/python3.12 /root/.pyenv/versions/3.12.*/bin/python3.12; do
		[ -x "$py" ] && pyenv_py=$py && break
	done
	[ -x /usr/bin/python3.11 ] || fail "/usr/bin/python3.11 missing (apt-get install python3.11)"
	[ -n "$pyenv_py" ] || [ "${CI:-}" != true ] || fail "pyenv's python3.12 missing"
	cg=$(make_cgroup)
	start_profiler "$E2E_TMP/prof.log" --cgroup "$cg" --cpu=299 -o "$f" --top 0
	for py in /usr/bin/python3.11 $pyenv_py; do
		bg_in_cgroup "$cg" "$py" tests/targets/py_cpu.py 2 >/dev/null
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || fail "python $p failed"; done
	stop_profiler "$E2E_TMP/prof.log"
	rmdir "$cg"
	expect_eq "processes in the profile" "$(echo "$pids" | tr ' ' '\n' | sort -n | xargs)" "$(profile_pids "$f")"
	for p in $pids; do
		expect_range "pid $p: hot_a;main;<module> stacks, gil=held" 1 100000 \
			"$(go tool pprof -symbolize=none -traces -tagfocus=gil=held "$f" 2>/dev/null |
				awk -v p="$p" '/^-----/ { if (ok && st ~ /hot_a;main;<module>/) n++; ok = 0; st = ""; next }
					/^ *pid:/ { ok = ($2 == p) } /^ +[^ :]+$/ { st = st ";" $1 }
					/^ *[0-9.]+[a-z]* +[^ ]/ { st = $2 }
					END { print n + 0 }')"
	done
	expect_py_reads "$f"
}
