# The heap profile of a process the OOM killer chose (issue 29, OOM kill): tests/targets/oom_leak.c
# fills 64 KiB blocks from leak_block under a 64 MiB memory limit (a cgroup v1 memory cgroup of
# the test's own with oom_score_adj 1000, or a Docker container run with --memory 64m) and prints
# each block's count once it is filled: the truth, but for the one block being filled at the
# kill.  The OOM file <UTC>.oom.<pid>.heap.pb.gz is read back with go tool pprof: leak_block's
# in-use bytes within one block of the truth (exact) or within sampling error (sampled), the
# victim's samples only, the comment and labels of the kill, nothing lost.

OL=build/targets/oom_leak
BLOCK=65536
LIMIT=67108864

# A memory cgroup limited to 64 MiB (the test's own, removed at its end): in the v1 memory
# hierarchy where the host mounts one (ours), else below the cgroup2 mount with its memory
# controller.  Sets MEMCG (its directory) and MEMCG_REL (as /proc/PID/cgroup names it).
memcg_make() {
	local root=/sys/fs/cgroup/memory file=memory.limit_in_bytes
	if [ ! -d "$root" ]; then
		cgroup2_mount
		root=$CGROUP2 file=memory.max
		grep -qw memory "$root/cgroup.subtree_control" ||
			echo +memory >"$root/cgroup.subtree_control" ||
			fail "cannot enable the memory controller below $root"
	fi
	MEMCG_REL=/bpftrace-prof-e2e-oom-$$-$RANDOM
	MEMCG=$root$MEMCG_REL
	mkdir "$MEMCG" || fail "cannot make $MEMCG"
	echo "$MEMCG" >>"$E2E_TMP/.cgroups"
	echo $LIMIT >"$MEMCG/$file" || fail "cannot limit $MEMCG"
}

# The one OOM file in DIR (fails unless exactly one); sets OOM_FILE and OOM_PID.
oom_file() { # DIR
	local n
	n=$(find "$1" -maxdepth 1 -name '*.oom.*.heap.pb.gz' | wc -l)
	expect_eq "OOM kill profiles in $1" 1 "$n"
	OOM_FILE=$(find "$1" -maxdepth 1 -name '*.oom.*.heap.pb.gz')
	[[ "$(basename "$OOM_FILE")" =~ ^[0-9]{8}T[0-9]{6}Z\.oom\.([0-9]+)\.heap\.pb\.gz$ ]] ||
		fail "OOM file name $(basename "$OOM_FILE")"
	OOM_PID=${BASH_REMATCH[1]}
}

# check_oom FILE PID COUNT EXACT(1|0) ADJ CGROUP: leak_block's in-use bytes and blocks against
# the COUNT blocks the target saw filled (exact: COUNT or COUNT + 1 blocks; sampled: within 30 %),
# the victim's samples only, the comment and labels of the kill, no drops.
check_oom() {
	local f=$1 pid=$2 n=$3 exact=$4 adj=$5 cg=$6 raw bytes objs
	raw=$(go tool pprof -symbolize=none -raw "$f" 2>/dev/null)
	[ -n "$raw" ] || fail "go tool pprof cannot read $f"
	grep "^Comment: " <<<"$raw"
	# from the run's (or the interval's) start to the kill: pprof leaves a duration of 0 unsaid
	grep -E '^(Time|Duration): ' <<<"$raw"
	grep -qE '^Duration: [0-9]' <<<"$raw" || fail "no duration up to the kill"
	bytes=$(pprof_flat "$f" inuse_space leak_block)
	objs=$(pprof_flat "$f" inuse_objects leak_block)
	if [ "$exact" = 1 ]; then
		expect_range "leak_block inuse_space (truth $n blocks of $BLOCK)" $((n * BLOCK)) $(((n + 1) * BLOCK)) "$bytes"
		expect_range "leak_block inuse_objects (truth $n)" "$n" $((n + 1)) "$objs"
	else
		expect_range "leak_block inuse_space, sampled (truth $((n * BLOCK)))" \
			$((n * BLOCK * 7 / 10)) $((n * BLOCK * 13 / 10)) "$bytes"
	fi
	# the victim's samples only
	expect_eq "pid labels other than the victim's" 0 \
		"$(grep -oE '(^| )pid:\[[0-9]+\]' <<<"$raw" | grep -vc " pid:\[$pid\]")"
	# the memory controller's hierarchy: v1 where the host mounts it (ours), else v2
	local ver="v1" file="memory.limit_in_bytes"
	[ -d /sys/fs/cgroup/memory ] || { ver="v2" file="memory.max"; }
	grep -qE "^Comment: OOM kill: process $pid \(oom_leak\) chosen by the OOM killer at [0-9TZ:-]+; oom_score_adj $adj; memory cgroup $cg \($ver\), limit $LIMIT bytes \($file\)" <<<"$raw" ||
		fail "no OOM kill comment: $(grep '^Comment: OOM' <<<"$raw")"
	expect_eq "samples without oom_kill:[true]" 0 "$(grep -cE '^ +[0-9]+( +[0-9]+)+: ' <<<"$raw" | awk -v t="$(grep -c 'oom_kill:\[true\]' <<<"$raw")" '{ print $1 - t }')"
	grep -q "oom_score_adj:\[$adj\]" <<<"$raw" || fail "no oom_score_adj label"
	grep -q "memory_limit:\[$LIMIT\]" <<<"$raw" || fail "no memory_limit label"
	grep -qF "memory_cgroup:[$cg]" <<<"$raw" || fail "no memory_cgroup label"
	grep -q '^Comment: oom_kills=1 ' <<<"$raw" || fail "oom_kills is not 1"
	expect_no_drops_raw "$f" "$DROP_COUNTERS oom_lost oom_writes_failed oom_unwatched" <<<"$raw"
}

# -- CMD in a 64 MiB memory cgroup with oom_score_adj 1000, one-shot: the OOM file beside -o,
# the log line, the summary's line, CMD's status 137 as ours.
oom_cmd() { # NAME SAMPLE_BYTES EXACT
	local d=$E2E_TMP/$1 rc=0 pid n
	memcg_make
	mkdir -p "$d"
	# shellcheck disable=SC2016 # the inner shell's own $$ and arguments
	"$PROF" --heap --sample-bytes "$2" -o "$d/run.pb.gz" -- sh -c \
		'echo $$ >"$1/cgroup.procs" && echo 1000 >/proc/self/oom_score_adj && exec "$2" "$3" >"$4"' \
		sh "$MEMCG" "$OL" "$BLOCK" "$d/count" 2>"$d/err" || rc=$?
	cat "$d/err"
	expect_eq "exit status (CMD killed: 128 + SIGKILL)" 137 "$rc"
	oom_file "$d"
	n=$(tail -1 "$d/count")
	pid=$OOM_PID
	expect_one_line "the log line" "^bpftrace-prof: the OOM killer chose process $pid \(oom_leak\), oom_score_adj 1000, memory cgroup $MEMCG_REL \(limit $LIMIT bytes\): its heap, [0-9]+ bytes in use, to $d/[0-9TZ]+\.oom\.$pid\.heap\.pb\.gz$" "$d/err"
	expect_one_line "the summary's line" "^bpftrace-prof: process $pid \(oom_leak\) was killed by the OOM killer; its heap at that moment is in $OOM_FILE$" "$d/err"
	check_oom "$OOM_FILE" "$pid" "$n" "$3" 1000 "$MEMCG_REL"
	# the run's own profile: the kill counted, nothing lost
	expect_eq "oom_kills in the run's profile" 1 "$(pprof_counter_value "$d/run.pb.gz" oom_kills)"
	DROP_COUNTERS="$DROP_COUNTERS oom_lost oom_writes_failed oom_unwatched" expect_no_drops "$d/run.pb.gz"
}

t_oom_cmd_exact() {
	oom_cmd exact 0 1
}

t_oom_cmd_sampled() {
	oom_cmd sampled 262144 0
}

# -p of a process in the memory cgroup, waiting until the profiler is there: its kill ends the
# run (no target left) with the run's profile and the OOM file beside -o, exit status 0 (-p
# reports no target's status).
t_oom_pid_exact() {
	local d=$E2E_TMP/pid rc=0 pid n
	memcg_make
	mkdir -p "$d"
	# shellcheck disable=SC2016 # the inner shell's own $$ and arguments
	sh -c 'echo $$ >"$1/cgroup.procs" && echo 1000 >/proc/self/oom_score_adj && exec "$2" "$3" "$4" >"$5"' \
		sh "$MEMCG" "$OL" "$BLOCK" "$d/go" "$d/count" &
	pid=$!
	start_profiler "$d.log" --heap -p "$pid" -o "$d/run.pb.gz" --top 0
	touch "$d/go"
	wait "$PROF_PID" || rc=$?
	grep -v 'wrote heap profile\|bookkeeping' "$d.log"
	expect_eq "exit status (-p)" 0 "$rc"
	oom_file "$d"
	expect_eq "OOM file's pid" "$pid" "$OOM_PID"
	n=$(tail -1 "$d/count")
	check_oom "$OOM_FILE" "$pid" "$n" 1 1000 "$MEMCG_REL"
	expect_one_line "the summary's line" "^bpftrace-prof: process $pid \(oom_leak\) was killed by the OOM killer; its heap at that moment is in $OOM_FILE$" "$d.log"
	expect_eq "oom_kills in the run's profile" 1 "$(pprof_counter_value "$d/run.pb.gz" oom_kills)"
}

# The OOM file cannot be written (a directory of its name stands in each second's place for the
# next 90 s: the write fails as on a full or broken disk): counted in oom_writes_failed, said at
# the end, exit status 1; the run's own profile is still written.
t_oom_write_failed_counted() {
	local d=$E2E_TMP/wfail rc=0 pid now i
	memcg_make
	mkdir -p "$d"
	# shellcheck disable=SC2016 # the inner shell's own $$ and arguments
	sh -c 'echo $$ >"$1/cgroup.procs" && echo 1000 >/proc/self/oom_score_adj && exec "$2" "$3" "$4" >"$5"' \
		sh "$MEMCG" "$OL" "$BLOCK" "$d/go" "$d/count" &
	pid=$!
	now=$(date +%s)
	for ((i = 0; i < 90; i++)); do
		mkdir "$d/$(date -u -d "@$((now + i))" +%Y%m%dT%H%M%SZ).oom.$pid.heap.pb.gz"
	done
	start_profiler "$d.log" --heap -p "$pid" -o "$d/run.pb.gz" --top 0
	touch "$d/go"
	wait "$PROF_PID" || rc=$?
	cat "$d.log"
	expect_eq "exit status (an OOM file not written)" 1 "$rc"
	expect_one_line "the summary's line" "^bpftrace-prof: process $pid \(oom_leak\) was killed by the OOM killer; its heap profile was not written \(oom_writes_failed\)$" "$d.log"
	expect_eq "oom_writes_failed in the run's profile" 1 "$(pprof_counter_value "$d/run.pb.gz" oom_writes_failed)"
	expect_eq "oom_kills in the run's profile" 1 "$(pprof_counter_value "$d/run.pb.gz" oom_kills)"
}

# -- CMD in continuous mode with --push: the OOM file in --output-dir beside the series (kept out
# of --retain 1), and sent at once, its series labelled oom_kill="true" (tests/e2e/push_receiver.py
# stores each body with its labels); exit status 137 as in one-shot mode.
t_oom_cmd_continuous_pushed() {
	local d=$E2E_TMP/cont r=$E2E_TMP/recv rc=0 port n series
	memcg_make
	python3 tests/e2e/push_receiver.py "$r" < <(sleep 120) >"$r.out" 2>"$r.err" &
	wait_for_line "$r.out" '^[0-9]' 10 || fail "receiver did not start: $(cat "$r.err")"
	port=$(head -1 "$r.out")
	mkdir -p "$d"
	# shellcheck disable=SC2016 # the inner shell's own $$ and arguments
	"$PROF" -v --heap --interval 1 --output-dir "$d" --retain 1 --push "http://127.0.0.1:$port" -- sh -c \
		'echo $$ >"$1/cgroup.procs" && echo 1000 >/proc/self/oom_score_adj && sleep 1.5 && exec "$2" "$3" >"$4"' \
		sh "$MEMCG" "$OL" "$BLOCK" "$E2E_TMP/count" 2>"$d.err" || rc=$?
	grep -v 'wrote heap profile\|bookkeeping' "$d.err"
	expect_eq "exit status (CMD killed: 128 + SIGKILL)" 137 "$rc"
	oom_file "$d"
	n=$(tail -1 "$E2E_TMP/count")
	check_oom "$OOM_FILE" "$OOM_PID" "$n" 1 1000 "$MEMCG_REL"
	series=$(find "$d" -maxdepth 1 -name '*.heap.pb.gz' ! -name '*.oom.*' | wc -l)
	expect_eq "interval heap profiles left by --retain 1" 1 "$series"
	# the pushed OOM profile: one, labelled, with the victim's leak_block in use
	python3 - "$r" >"$E2E_TMP/pushed" <<'PY' || fail "pushed profiles unreadable"
import glob, json, os, sys
n = 0
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    lab = json.load(open(f))["labels"]
    if lab.get("oom_kill") == "true":
        n += 1
        body = f[:-5] + ".pb.gz"
print(n, body if n else "")
PY
	read -r n body <"$E2E_TMP/pushed"
	expect_eq "pushed profiles labelled oom_kill=true" 1 "$n"
	expect_eq "leak_block inuse_space pushed = written" "$(pprof_flat "$OOM_FILE" inuse_space leak_block)" \
		"$(pprof_flat "$body" inuse_space leak_block)"
	grep -q '^bpftrace-prof: push: .* 0 failed, 0 dropped' "$d.err" || fail "push lost profiles: $(grep 'push:' "$d.err")"
}

# A Docker container run with --memory 64m, profiled by --container in continuous mode: the OOM
# file in --output-dir, kept out of --retain 1 (the interval series keeps one file), labelled with
# the container's memory cgroup; exact (--sample-bytes 0) and sampled (the container default).
oom_container() { # NAME SAMPLE_BYTES_ARGS EXACT
	local d=$E2E_TMP/$1 cid i n series
	docker_require
	docker_image oom "$OL"
	mkdir -p "$d"
	cid=$(docker run -d --memory 64m --label "$DOCKER_LABEL=$DOCKER_RUN_ID" "$(docker_ref oom)" \
		oom_leak $BLOCK /tmp/go) || fail "docker run --memory 64m failed"
	echo "$cid" >>"$E2E_TMP/.containers"
	# shellcheck disable=SC2086 # the sampling options, word by word
	start_profiler "$d.log" --heap $2 --container "$cid" --interval 1 --output-dir "$d" --retain 1 --top 0
	docker exec "$cid" touch /tmp/go || fail "cannot start the leak"
	for ((i = 0; i < 300; i++)); do
		[ "$(docker inspect -f '{{.State.Running}}' "$cid")" = false ] && break
		sleep 0.1
	done
	expect_eq "container OOM-killed" true "$(docker inspect -f '{{.State.OOMKilled}}' "$cid")"
	wait_for_line "$d.log" "the OOM killer chose" 10 || fail "no OOM kill said: $(cat "$d.log")"
	# asked late (below), the cgroup was gone: its name came from the kill
	[ -z "${BPFTRACE_PROF_FAULT_OOM_LATE_MS:-}" ] || ! ls -d /sys/fs/cgroup/{memory/,}docker/"$cid" 2>/dev/null ||
		fail "the container's cgroup outlived the profiler's late look"
	sleep 1.2 # one more interval after the kill
	kill -INT "$PROF_PID"
	wait "$PROF_PID" || fail "profiler exit status $? after SIGINT"
	cat "$d.log"
	oom_file "$d"
	n=$(docker logs "$cid" 2>/dev/null | tail -1)
	[ -n "$n" ] || fail "no count from the container"
	check_oom "$OOM_FILE" "$OOM_PID" "$n" "$3" 0 "/docker/$cid"
	series=$(find "$d" -maxdepth 1 -name '*.heap.pb.gz' ! -name '*.oom.*' | wc -l)
	expect_eq "interval heap profiles left by --retain 1" 1 "$series"
}

t_oom_container_exact() {
	oom_container exact "--sample-bytes 0" 1
}

# The cgroup asked for 2 s late (BPFTRACE_PROF_FAULT_OOM_LATE_MS, tests only): dockerd has
# removed it, the victim its only process; the path BPF named at the kill is the one written.
t_oom_container_sampled() {
	BPFTRACE_PROF_FAULT_OOM_LATE_MS=2000 oom_container sampled "" 0
}

# A kernel without the tracepoint (BPFTRACE_PROF_FAULT_NO_OOM, tests only): everything else runs,
# and the run says and counts that OOM kills go unseen.
t_oom_unwatched_said_and_counted() {
	local f=$E2E_TMP/unwatched.pb.gz
	BPFTRACE_PROF_FAULT_NO_OOM=1 "$PROF" -v --heap -o "$f" --top 0 -- build/targets/aging 2>"$E2E_TMP/err" ||
		fail "profiler exit status $?"
	grep -q '^bpftrace-prof: OOM kills not watched: the kernel has no oom/mark_victim tracepoint' "$E2E_TMP/err" ||
		fail "not said"
	expect_eq "oom_unwatched" 1 "$(pprof_counter_value "$f" oom_unwatched)"
	expect_eq "keep_old inuse_space" 1000 "$(pprof_flat "$f" inuse_space keep_old)"
}
