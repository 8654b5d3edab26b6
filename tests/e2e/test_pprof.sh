# pprof export end to end: the profile go tool pprof reads — sample types, mappings with build
# ids, labels, demangled names, comments, default path, atomic write.

t_pprof_structure_and_mappings() {
	local dir=$E2E_TMP/pp f raw
	mkdir -p "$dir"
	# default output path in the current directory
	(cd "$dir" && "$OLDPWD/$PROF" --heap --top 0 -- "$OLDPWD/build/targets/heap_target") || fail "exit status $?"
	f=$dir/bpftrace-prof.pb.gz
	[ -s "$f" ] || fail "default output bpftrace-prof.pb.gz not written"
	[ -n "$(find "$dir" -mindepth 1 -maxdepth 1 -name '.*')" ] &&
		fail "temporary file left behind: $(ls -A "$dir")"
	[ "$(head -c2 "$f" | od -An -tx1 | tr -d ' ')" = "1f8b" ] || fail "not gzip"
	raw=$dir/raw.txt
	go tool pprof -symbolize=none -raw "$f" >"$raw" 2>"$dir/err" || fail "go tool pprof failed: $(cat "$dir/err")"
	[ -s "$dir/err" ] && fail "go tool pprof complained: $(cat "$dir/err")"
	grep -q '^alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\] peak_objects/count peak_space/bytes$' "$raw" ||
		fail "sample types: $(grep -A1 '^Samples' "$raw")"
	grep -q '^PeriodType: space bytes$' "$raw" || fail "period type"
	grep -q '^Period: 0$' "$raw" || fail "period 0 for exact tracing"
	grep -q '^Duration: ' "$raw" || fail "no duration"
	grep -Eq '^Time: 20[0-9]{2}-' "$raw" || fail "no time"
	grep -q '^Comment: command: .*--heap --top 0' "$raw" || fail "command line comment"
	# Counters appear only when not 0 ("no drops" when no loss counter is).
	grep -Eq '^Comment: (no drops$|unknown_frees=[1-9])' "$raw" || fail "neither 'no drops' nor the unknown frees"
	! grep -q '=0 (' "$raw" || fail "a zero counter was written: $(grep '=0 (' "$raw")"
	! grep -q '^Comment: ringbuf_full=' "$raw" || fail "events were dropped: $(grep ringbuf_full "$raw")"
	# mappings carry file and build id (compare with readelf's)
	local bid_exe bid_libc
	bid_exe=$(readelf -n build/targets/heap_target | awk '/Build ID/ { print $3 }')
	bid_libc=$(readelf -n /lib/x86_64-linux-gnu/libc.so.6 | awk '/Build ID/ { print $3 }')
	grep -Eq "^[0-9]+: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ .*build/targets/heap_target $bid_exe \[FN\]" "$raw" ||
		fail "executable mapping with build id $bid_exe: $(sed -n '/^Mappings/,$p' "$raw")"
	grep -Eq "libc\.so\.6 $bid_libc \[FN\]" "$raw" || fail "libc mapping with build id"
	# Mapping 1 is the main executable (pprof's convention; go tool pprof names it).
	expect_eq "first mapping" "$(readlink -f build/targets/heap_target)" "$(first_mapping "$f")"
	# demangled display name, raw system name kept; its source file and line from the target's
	# own DWARF (built with -g)
	grep -Eq 'worker\(void\*\) [^ ]*tests/targets/heap_target\.cc:[0-9]+ s=0\(_ZL6workerPv\)' "$raw" ||
		fail "demangled worker with system name: $(grep -m2 worker "$raw")"
	echo "ok: structure"
}

t_pprof_labels_on_every_sample() {
	local f=$E2E_TMP/labels.pb.gz n nl
	"$PROF" --heap -o "$f" --top 0 -- build/targets/heap_target || fail "exit status $?"
	pprof_traces "$f" >"$f.t"
	n=$(wc -l <"$f.t")
	[ "$n" -gt 5 ] || fail "too few samples: $n"
	nl=$(grep -Ec 'comm=[^ ]+ process=heap_target pid=[0-9]+ tid=[0-9]+ ' "$f.t")
	expect_eq "samples with pid/tid/comm/process labels" "$n" "$nl"
	# numeric labels: pprof can filter on them
	go tool pprof -symbolize=none -top -tagfocus=comm=worker-1 -sample_index=alloc_objects -unit=B "$f" 2>/dev/null |
		grep -q '100000B.*churn_small' || fail "tag filter comm=worker-1 does not give one worker's 100000 allocations"
}

t_pprof_write_failure_leaves_nothing() {
	local dir=$E2E_TMP/full rc
	# A full file system: the profile cannot be written; no partial or temporary file may stay.
	mkdir -p "$dir"
	mount -t tmpfs -o size=64k tmpfs "$dir" || fail "cannot mount a tmpfs for the test"
	dd if=/dev/zero of="$dir/filler" bs=4k 2>/dev/null
	# -q: the start lines aside, the error is the one line on stderr.
	"$PROF" -q --heap -o "$dir/out.pb.gz" --top 0 -- build/targets/heap_target 2>"$E2E_TMP/full.err"
	rc=$?
	local left
	left=$(find "$dir" -mindepth 1 -maxdepth 1 ! -name filler -printf '%f\n')
	umount "$dir"
	expect_eq "status writing into a full file system" 1 "$rc"
	[ -z "$left" ] || fail "left files: $left"
	[ "$(wc -l <"$E2E_TMP/full.err")" -eq 1 ] || fail "error not one line: $(cat "$E2E_TMP/full.err")"
	grep -q "No space left on device" "$E2E_TMP/full.err" || fail "message: $(cat "$E2E_TMP/full.err")"
}
