# Container and host mode end to end (DESIGN.md §4: --container ID, --cgroup PATH, -a): real
# Docker containers made by tests/e2e/docker.sh (busybox + our targets + their own copies of the
# libraries, so the container's libc is another file than the host's), and a hand-made cgroup
# holding an `unshare --pid --mount --fork` process.  Numbers are read back with go tool pprof.

HT=build/targets/heap_target
CT=build/targets/cpu_target
SL=build/targets/short_spin

# One image for every test here (built once per run).
container_image() {
	docker_require
	docker_image prof "$HT" "$CT" "$SL"
}

# `go tool pprof -traces` as one line per sample with every label, in the order pprof prints
# them: "comm=C process=P pid=N tid=N container_id=… cgroup=… ns_pid=N |leaf;caller;…".
traces_all() { # FILE
	go tool pprof -symbolize=none -traces "$1" 2>/dev/null | awk '
		/^-----------/ { if (stack != "") print labels "|" stack; labels = ""; stack = ""; next }
		/^ *[a-z_]+: / && stack == "" { k = $1; sub(/:$/, "", k); $1 = ""; sub(/^ +/, ""); labels = labels k "=" $0 " "; next }
		/^ *[0-9.]+[a-zA-Z]* +[^ ]/ && labels != "" && stack == "" { stack = $2; next }
		/^ +[^ ]/ && stack != "" { stack = stack ";" $1; next }
		END { if (stack != "") print labels "|" stack }'
}

# "BAD TOTAL": of the samples of COMM, how many have an innermost user frame (the first location
# outside the kernel's mapping) without a function name, leaving out those inside execve and those
# that are not COMM's code although labelled with its name: a process's samples carry the name it
# ends with (docs/continuous.md, Short-lived processes: Limits), so the forked shell's before its
# exec are COMM's too.  Those are left out when their leaf is in the [uprobes] slot page, or in
# another file's mapping with a frame of the stack beyond the end of COMM's text (static COMM: all
# its pcs are below that end; a stack wholly below it may be COMM's pcs resolved against the wrong
# maps, and counts).  From `go tool pprof -raw`, read twice: locations and mappings, then the
# samples.
unnamed_user_leaves() { # FILE COMM
	go tool pprof -symbolize=none -raw "$1" 2>/dev/null >"$1.raw"
	awk -v want="$2" '
	function hex(x,   i, v) { # "0x…" (mawk has no strtonum)
		x = tolower(substr(x, 3)); v = 0
		for (i = 1; i <= length(x); i++) v = v * 16 + index("0123456789abcdef", substr(x, i, 1)) - 1
		return v
	}
	FNR == NR {
		if (/^Locations/) { sec = "L"; next }
		if (/^Mappings/) { sec = "M"; next }
		if (/^[A-Z][a-z]+/) { sec = ""; next }
		if ($1 ~ /^[0-9]+:$/) {
			id = $1; sub(/:$/, "", id)
			if (sec == "M") {
				mfile[id] = $3
				if ($3 ~ /^\[kernel/) kmap[id] = 1
				if ($3 ~ ("/" want "$")) { split($2, r, "/"); wantend = hex(r[2]) }
			}
			if (sec == "L") {
				m = ""; name = ""
				if ($3 ~ /^M=/) { m = substr($3, 3); if (NF >= 4) name = $4 }
				else if (NF >= 3) name = $3
				lmap[id] = m; lname[id] = name; laddr[id] = hex($2)
			}
		}
		next
	}
	function judge(   i, n, ids, first, inexec, beyond) {
		if (locs == "" || comm != want) return
		n = split(locs, ids, " ")
		for (i = 1; i <= n; i++) {
			if (lname[ids[i]] ~ /^(bprm_execve|do_execveat_common)/) inexec = 1
			if (lmap[ids[i]] in kmap) continue
			if (first == "") first = ids[i]
			if (wantend && laddr[ids[i]] >= wantend) beyond = 1
		}
		total++
		if (inexec || first == "" || lname[first] != "") return
		if (mfile[lmap[first]] == "[uprobes]") return
		if (lmap[first] != "" && mfile[lmap[first]] !~ ("/" want "$") && beyond) return
		bad++
	}
	/^Samples/ { s = 1; next }
	/^Locations/ { judge(); s = 0; locs = "" }
	s && /^ +[0-9]+ +[0-9]+: / { judge(); sub(/^ +[0-9]+ +[0-9]+: /, ""); locs = $0; comm = ""; next }
	s && /comm:\[/ { c = $0; sub(/.*comm:\[/, "", c); sub(/\].*/, "", c); comm = c }
	END { print bad + 0, total + 0 }' "$1.raw" "$1.raw"
}

# Heap numbers of one heap_target run (its header comment), exactly: a second copy of the
# program profiled by mistake would double every one of them.
check_heap_target_numbers() { # FILE
	local f=$1
	expect_no_drops "$f"
	expect_eq "leak_pages alloc_objects" 1000 "$(pprof_flat "$f" alloc_objects leak_pages)"
	expect_eq "leak_pages inuse_space" 4096000 "$(pprof_flat "$f" inuse_space leak_pages)"
	expect_eq "churn_small alloc_objects" 400000 "$(pprof_flat "$f" alloc_objects churn_small)"
	expect_eq "churn_small alloc_space" 25600000 "$(pprof_flat "$f" alloc_space churn_small)"
	expect_eq "churn_small inuse_space" 0 "$(pprof_flat "$f" inuse_space churn_small)"
	expect_eq "calloc_kept inuse_space" 50000 "$(pprof_flat "$f" inuse_space calloc_kept)"
	expect_eq "realloc_chain alloc_space" 1500 "$(pprof_flat "$f" alloc_space realloc_chain)"
	expect_eq "realloc_chain inuse_space" 800 "$(pprof_flat "$f" inuse_space realloc_chain)"
	expect_eq "memalign_kept inuse_space" 15360 "$(pprof_flat "$f" inuse_space memalign_kept)"
	expect_eq "cxx_new_kept alloc_space" 49000 "$(pprof_flat "$f" alloc_space cxx_new_kept)"
	expect_eq "cxx_new_kept inuse_space" 40000 "$(pprof_flat "$f" inuse_space cxx_new_kept)"
	# Started after the profiler: even its constructor's allocations, made before main.
	expect_eq "before_main inuse_space" 2331 "$(pprof_flat "$f" inuse_space before_main)"
	traces_all "$f" >"$f.all"
	expect_one_line "leak_pages caller" '\|leak_pages;main;' "$f.all"
	# Complete down to the entry point, although the process started after the profiler:
	# docker exec's process is held at its exec and again at its loader's startup until its
	# libraries' maps are read and their tables loaded (docs/continuous.md: Exec holds).
	expect_one_line "leak_pages stack down to _start" '\|leak_pages;main;.*;_start$' "$f.all"
	expect_eq "worker stacks down to clone (of $(grep -c '|churn_small;' "$f.all"))" \
		"$(grep -c '|churn_small;' "$f.all")" "$(grep -cE '\|churn_small;worker[^;]*;start_thread;clone3?$' "$f.all")"
}

# Every sample of FILE carries LABEL=VALUE (exactly that value).
expect_label_everywhere() { # FILE LABEL VALUE
	local n bad
	traces_all "$1" >"$1.labels"
	n=$(wc -l <"$1.labels")
	[ "$n" -gt 0 ] || fail "no samples in $1"
	bad=$(grep -vc " $2=$3 " "$1.labels")
	expect_eq "samples without $2=$3 (of $n)" 0 "$bad"
}

# The container's cgroup path relative to the cgroup2 mount, from its first process.
container_cgroup_rel() { # HOST_PID
	sed -n 's/^0:://p' "/proc/$1/cgroup"
}

# The heap of a process started inside the container after the profiler, exactly; the same
# program run on the host at the same moment is not in the profile.  TARGET… selects the
# container (--container ID / --cgroup PATH).
run_heap_in_container() { # TAG TARGET…
	local tag=$1 f=$E2E_TMP/$1.pb.gz host_pid rel
	shift
	start_profiler "$E2E_TMP/$tag.log" --heap --sample-bytes 0 "$@" -o "$f" --top 0
	"$HT" >"$E2E_TMP/host.out" 2>&1 &
	host_pid=$!
	docker exec "$DOCKER_CID" heap_target >"$E2E_TMP/container.out" 2>&1 ||
		fail "heap_target in the container: exit status $? ($(tail -3 "$E2E_TMP/container.out"))"
	wait "$host_pid" || fail "host heap_target exit status $?"
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $? after SIGINT"
	check_heap_target_numbers "$f"
	traces_all "$f" >"$f.labels"
	grep -q "pid=$host_pid " "$f.labels" && fail "the host's heap_target (pid $host_pid) is in the profile"
	expect_eq "processes in the profile" 1 "$(grep -o ' pid=[0-9]*' "$f.labels" | sort -u | wc -l)"
	rel=$(container_cgroup_rel "$DOCKER_PID")
	expect_label_everywhere "$f" container_id "$DOCKER_CID"
	expect_label_everywhere "$f" cgroup "$rel"
	# Host pids in pid, the container's own in ns_pid (docker exec's process is not its pid 1).
	grep -q ' ns_pid=' "$f.labels" || fail "no ns_pid label: $(head -1 "$f.labels")"
	expect_eq "samples whose ns_pid equals the host pid" 0 \
		"$(awk '{ p = ""; n = ""; for (i = 1; i <= NF; i++) { if ($i ~ /^pid=/) p = substr($i, 5); if ($i ~ /^ns_pid=/) n = substr($i, 8) } if (n == "" || n == p) bad++ } END { print bad + 0 }' "$f.labels")"
}

t_container_heap_exact_by_id() {
	container_image
	docker_run prof sleep 3600
	# docker ps's 12-digit prefix, as a user types it
	run_heap_in_container by_id --container "${DOCKER_CID:0:12}"
}

t_container_heap_exact_by_cgroup() {
	container_image
	docker_run prof sleep 3600
	cgroup2_mount
	run_heap_in_container by_cgroup --cgroup "$CGROUP2$(container_cgroup_rel "$DOCKER_PID")"
}

# A second docker exec of the same program in one session is not held (its executable was
# prepared at the first): ld.so maps its libraries before userspace has read its maps, and the
# BPF walker finds their tables by the inode of the kernel's vma, which on overlayfs is the file
# of the layer below, not the overlay's that /proc/PID/maps names and the tables are filed under.
# Both runs' stacks reach _start, from the constructor's allocations on.
t_container_heap_second_exec_whole_stacks() {
	local f=$E2E_TMP/twice.pb.gz n pids
	container_image
	docker_run prof sleep 3600
	start_profiler "$E2E_TMP/twice.log" --heap --sample-bytes 0 --container "$DOCKER_CID" -o "$f" --top 0
	for n in 1 2; do
		docker exec "$DOCKER_CID" heap_target >"$E2E_TMP/run$n.out" 2>&1 ||
			fail "heap_target run $n in the container: exit status $? ($(tail -3 "$E2E_TMP/run$n.out"))"
	done
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $? after SIGINT"
	expect_no_drops "$f"
	expect_eq "leak_pages alloc_objects (2 runs)" 2000 "$(pprof_flat "$f" alloc_objects leak_pages)"
	expect_eq "before_main inuse_space (2 runs)" 4662 "$(pprof_flat "$f" inuse_space before_main)"
	traces_all "$f" >"$f.all"
	pids=$(grep -E '\|(leak_pages|before_main);' "$f.all" | grep -o ' pid=[0-9]*' | sort -u | wc -l)
	expect_eq "processes with leak_pages and before_main stacks" 2 "$pids"
	expect_eq "leak_pages or before_main stacks not down to _start (of $(grep -cE '\|(leak_pages|before_main);' "$f.all"))" 0 \
		"$(grep -E '\|(leak_pages|before_main);' "$f.all" | grep -vc ';_start$')"
	expect_eq "worker stacks not down to clone (of $(grep -c '|churn_small;' "$f.all"))" 0 \
		"$(grep '|churn_small;' "$f.all" | grep -vcE '\|churn_small;worker[^;]*;start_thread;clone3?$')"
}

# A container that opts in to the sampler as docs/continuous.md says (the library mounted
# read-only, LD_PRELOAD and the rate in its environment) is profiled through the sampler's
# otel_memory probes by a plain --container run, no further flag: its allocations are sampled in
# the process, the allocator probes skip it, and the numbers are the exact run's within the
# sampling's spread (a fixed seed: the same draws every run).
t_container_heap_preloaded_sampler() {
	local f=$E2E_TMP/sampler.pb.gz lib=/opt/bpftrace-prof/libbpftrace-prof-sampler.so cid v
	container_image
	cid=$(docker run -d --label "$DOCKER_LABEL=$DOCKER_RUN_ID" \
		-v "$PWD/build/libbpftrace-prof-sampler.so:$lib:ro" -e LD_PRELOAD=$lib \
		-e BPFTRACE_PROF_SAMPLE_BYTES=4096 -e BPFTRACE_PROF_SAMPLER_SEED=7 \
		"$(docker_ref prof)" sleep 3600) || fail "docker run with the sampler failed"
	echo "$cid" >>"$E2E_TMP/.containers"
	start_profiler "$E2E_TMP/sampler.log" --heap --container "$cid" -o "$f" --top 0
	docker exec "$cid" heap_target >"$E2E_TMP/container.out" 2>&1 ||
		fail "heap_target in the container: exit status $? ($(tail -3 "$E2E_TMP/container.out"))"
	grep -q "$lib" /proc/"$(pgrep -f 'sleep 3600' | head -1)"/maps 2>/dev/null ||
		echo "note: the container's sleep (a static busybox) does not load the sampler"
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $? after SIGINT"
	expect_no_drops "$f"
	expect_range "heap_procs_otel" 1 9 "$(pprof_counter_value "$f" heap_procs_otel)"
	# Every process of the container that maps its libc samples itself: the libc is probed per
	# process (docs/continuous.md), for none of them, so no allocation traps.
	expect_eq "allocator traps of processes on their own probes" 0 \
		"$(pprof_counter_value "$f" heap_traps_otel)"
	# 1000 pages kept, 400,000 blocks of 64 bytes: thousands of samples each at 4096 bytes.
	v=$(pprof_flat "$f" inuse_space leak_pages)
	expect_range "leak_pages inuse_space (4096000 exactly)" 3686400 4505600 "$v"
	v=$(pprof_flat "$f" alloc_space churn_small)
	expect_range "churn_small alloc_space (25600000 exactly)" 23040000 28160000 "$v"
	expect_eq "churn_small inuse_space" 0 "$(pprof_flat "$f" inuse_space churn_small)"
	traces_all "$f" >"$f.all"
	# The sampler's malloc (the probe's frame) is not the leaf: the caller is, as with uprobes.
	expect_one_line "leak_pages caller" '\|leak_pages;main;' "$f.all"
	expect_eq "stacks with the sampler's malloc as their leaf" 0 "$(grep -c '|malloc;' "$f.all")"
}

t_container_cpu_spinner() {
	local f=$E2E_TMP/cpu.pb.gz
	container_image
	docker_run prof cpu_target 60
	"$PROF" --cpu --container "$DOCKER_CID" -d 3 -o "$f" --top 0 || fail "exit status $?"
	traces_all "$f" >"$f.labels"
	grep '|.*spin_other;spinner' "$f.labels" | grep -q "comm=spinner" || fail "no spinner samples"
	[ "$(pprof_cum "$f" samples spin_other)" -gt 0 ] || fail "no samples in spin_other"
	[ "$(pprof_cum "$f" samples hot_three)" -gt 0 ] || fail "no samples in hot_three"
	# the container's one process, by its host pid
	expect_eq "pids in the profile" "$DOCKER_PID" "$(grep -o ' pid=[0-9]*' "$f.labels" | cut -d= -f2 | sort -u | xargs)"
	expect_label_everywhere "$f" container_id "$DOCKER_CID"
	# it is its container's pid 1
	expect_label_everywhere "$f" ns_pid 1
}

# A container running a ~20 ms program (15 M steps) over and over: processes born and gone while
# profiled, each living well under 50 ms.
t_container_short_lived_symbolized() {
	local f=$E2E_TMP/short.pb.gz n bare
	container_image
	docker_run prof sh -c 'while :; do short_spin; done'
	"$PROF" --cpu=199 --container "$DOCKER_CID" -d 4 -o "$f" --top 0 || fail "exit status $?"
	traces_all "$f" | grep 'comm=short_spin ' >"$f.short"
	n=$(wc -l <"$f.short")
	[ "$n" -gt 0 ] || fail "no samples of short_spin"
	grep -q '|burn;main;' "$f.short" || fail "burn;main never on a short_spin stack: $(head -3 "$f.short")"
	# Static: every user pc of short_spin is in its executable, so a sample whose innermost user
	# frame has no function name was not symbolized.  Not counted: samples inside execve, whose
	# user registers still hold the shell's pcs.  (Deeper frames are the unwinder's business.)
	read -r bare n < <(unnamed_user_leaves "$f" short_spin)
	# Processes that ran while the profiler started (before its exit hooks and its loop) may
	# be gone unsymbolized: 1-2 % of 4 s of samples seen here; at most 5 % (docs/continuous.md:
	# Short-lived processes, held only while our loop turns).
	expect_range "short_spin samples whose user leaf is a bare address (of $n)" 0 \
		"$((n / 20))" "$bare"
	expect_range "distinct short_spin processes sampled" 2 1000000 \
		"$(grep -o ' pid=[0-9]*' "$f.short" | sort -u | wc -l)"
}

# -a: a process in the container and one on the host, each with its own labels.
t_container_all_host_and_container() {
	local f=$E2E_TMP/all.pb.gz host_pid host_rel
	container_image
	docker_run prof cpu_target 60
	"$CT" 30 >/dev/null &
	host_pid=$!
	host_rel=$(container_cgroup_rel "$host_pid")
	# default mode for -a is --cpu
	"$PROF" -a -d 3 -o "$f" --top 0 || fail "exit status $?"
	kill "$host_pid"
	go tool pprof -symbolize=none -raw "$f" 2>/dev/null | grep -q 'samples/count cpu/nanoseconds\[dflt\]' ||
		fail "-a is not a cpu profile by default"
	traces_all "$f" >"$f.labels"
	grep " pid=$DOCKER_PID " "$f.labels" | grep -q '|.*spin_other;spinner' || fail "no container spinner samples"
	grep " pid=$host_pid " "$f.labels" | grep -q '|.*spin_other;spinner' || fail "no host spinner samples"
	expect_eq "container samples without its container_id" 0 \
		"$(grep " pid=$DOCKER_PID " "$f.labels" | grep -vc " container_id=$DOCKER_CID ")"
	expect_eq "host samples with a container_id" 0 \
		"$(grep " pid=$host_pid " "$f.labels" | grep -c ' container_id=')"
	expect_eq "host samples with an ns_pid" 0 \
		"$(grep " pid=$host_pid " "$f.labels" | grep -c ' ns_pid=')"
	expect_eq "host process cgroup label" "$host_rel" \
		"$(grep " pid=$host_pid " "$f.labels" | grep -o ' cgroup=[^ ]*' | cut -d= -f2 | sort -u | xargs)"
}

# No Docker: a cgroup made here, a process moved into it that unshares its pid and mount
# namespaces (pid 1 of its own), started after the profiler.
t_container_unshare_cgroup_ns_pid() {
	local f=$E2E_TMP/unshare.pb.gz pids
	command -v unshare >/dev/null || fail "no unshare (util-linux)"
	cgroup_make unshare
	start_profiler "$E2E_TMP/prof.log" --heap --sample-bytes 0 --cgroup "$CGROUP_DIR" -o "$f" --top 0
	# "0" moves the writer (this shell) in; unshare and its child inherit the cgroup.
	sh -c 'echo 0 >"$1/cgroup.procs" && exec unshare --pid --mount --fork --mount-proc "$2"' \
		sh "$CGROUP_DIR" "$PWD/$HT" >"$E2E_TMP/unshare.out" 2>&1 ||
		fail "unshare heap_target: exit status $? ($(tail -3 "$E2E_TMP/unshare.out"))"
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $? after SIGINT"
	check_heap_target_numbers "$f"
	# unshare itself runs in the cgroup (and allocates): heap_target's samples are judged.
	traces_all "$f" | grep ' process=heap_target ' >"$f.labels"
	pids=$(grep -o ' pid=[0-9]*' "$f.labels" | cut -d= -f2 | sort -u | xargs)
	expect_eq "heap_target processes in the profile" 1 "$(wc -w <<<"$pids")"
	[ "$pids" != 1 ] || fail "pid label is the namespace's pid, not the host's"
	expect_eq "heap_target samples without ns_pid=1" 0 "$(grep -vc ' ns_pid=1 ' "$f.labels")"
	expect_eq "heap_target samples without cgroup=$CGROUP_REL" 0 \
		"$(grep -vc " cgroup=$CGROUP_REL " "$f.labels")"
	expect_eq "samples with a container_id" 0 "$(traces_all "$f" | grep -c ' container_id=')"
}

# --container resolves ids and unique prefixes by walking the cgroup2 tree: two hand-made cgroups
# named like container ids (no Docker needed) make an ambiguous prefix; a process moved into one
# before the profiler starts is found (the processes running at start) and labelled with its id.
t_container_id_prefix_resolution() {
	local shared a b out=$E2E_TMP/err f=$E2E_TMP/prefix.pb.gz rc pid
	cgroup_make ids
	# 8 shared hex digits ("e2e0" and 4 random ones), then the two differ
	shared=e2e0$(printf '%04x' $((RANDOM % 65536)))
	a=${shared}a$(printf '%055d' 1)
	b=${shared}b$(printf '%055d' 2)
	mkdir "$CGROUP_DIR/$a" "$CGROUP_DIR/$b" || fail "cannot make the id cgroups"

	"$PROF" --cpu --container "$shared" -d 1 -o "$f" --top 0 2>"$out"
	rc=$?
	expect_eq "ambiguous prefix status" 2 "$rc"
	expect_eq "ambiguous prefix message lines" 1 "$(wc -l <"$out")"
	{ grep -q "${a:0:12}" "$out" && grep -q "${b:0:12}" "$out"; } ||
		fail "the message does not name both candidates: $(cat "$out")"

	"$PROF" --cpu --container "e2e0$(printf '%04x' $(((0x${shared:4:4} + 1) % 65536)))ffff" -d 1 -o "$f" --top 0 2>"$out"
	rc=$?
	expect_eq "absent id status" 2 "$rc"
	expect_eq "absent id message lines" 1 "$(wc -l <"$out")"
	"$PROF" --cpu --container "not an id" -d 1 -o "$f" --top 0 2>"$out"
	rc=$?
	expect_eq "malformed id status" 2 "$rc"

	# one more digit decides; the process is in the cgroup before the profiler starts
	"$CT" 6 >/dev/null &
	pid=$!
	echo "$pid" >"$CGROUP_DIR/$a/cgroup.procs" || fail "cannot move $pid into $a"
	"$PROF" --cpu --container "${shared}a" -d 2 -o "$f" --top 0 || fail "exit status $?"
	kill "$pid" 2>/dev/null
	[ "$(pprof_cum "$f" samples spin_other)" -gt 0 ] || fail "no samples in spin_other"
	expect_label_everywhere "$f" pid "$pid"
	expect_label_everywhere "$f" container_id "$a"
	expect_label_everywhere "$f" cgroup "$CGROUP_REL/$a"
}
