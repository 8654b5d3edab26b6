#!/bin/bash
# Run every libFuzzer harness given (build/fuzz/fuzz_<parser>) for FUZZ_SECONDS (default 20),
# FUZZ_JOBS at a time (default: one per core), over its seed corpus tests/fuzz/corpus/<parser>/.
# New inputs go to build/fuzz/corpus/, never into the tree; a crash, leak, timeout or RSS
# blow-up leaves its input in build/fuzz/artifacts/ and counts as a failure.  Last line: "fuzz: N passed, N failed"
# (tests/run-all.sh folds it into the final summary).
cd "$(dirname "$0")/.." || exit 1
seconds=${FUZZ_SECONDS:-20}
# Harnesses run side by side, one per core (FUZZ_JOBS to change it); results print in order.
jobs=${FUZZ_JOBS:-$(nproc)}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# run_one BIN OUT: one harness; its report lines go to OUT, its verdict is the exit status.
run_one() {
	local bin=$1 out=$2 name parser seeds work art log max_len stats
	name=$(basename "$bin")
	parser=${name#fuzz_}
	seeds=tests/fuzz/corpus/$parser
	work=build/fuzz/corpus/$parser
	art=build/fuzz/artifacts/$parser
	log=build/fuzz/$name.log
	rm -rf "$art"
	mkdir -p "$work" "$art"
	if [ ! -d "$seeds" ]; then
		echo "fuzz: $name: no seed corpus $seeds" >"$out"
		return 1
	fi
	# -max_len: room for the biggest seed (ELF files), not libFuzzer's 4096 default cap.
	max_len=$(find "$seeds" -type f -printf '%s\n' | sort -n | tail -1)
	[ "${max_len:-0}" -lt 4096 ] && max_len=4096
	if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-max_len="$max_len" -print_final_stats=1 -artifact_prefix="$art/" \
		"$work" "$seeds" >"$log" 2>&1; then
		stats=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		echo "fuzz: $name: ok (${stats:-?} inputs in ${seconds}s)" >"$out"
		return 0
	fi
	{
		echo "fuzz: $name: FAILED (log: $log, input: $(find "$art" -type f | head -1))"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5
	} >"$out"
	return 1
}

n=0
for bin in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	(
		run_one "$bin" "$results/$n"
		echo $? >"$results/$n.rc"
	) &
	n=$((n + 1))
done
wait
passed=0 failed=0
for ((i = 0; i < n; i++)); do
	cat "$results/$i"
	if [ "$(cat "$results/$i.rc" 2>/dev/null)" = 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
