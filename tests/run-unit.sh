#!/bin/bash
# Run every cmocka unit-test binary given, UNIT_JOBS at a time (default: one per core); print
# cmocka's own output, in the order given, and a tally on the last line ("unit: N passed, N
# failed") that tests/run-all.sh folds into the final summary.
jobs=${UNIT_JOBS:-$(nproc)}
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
n=0
for t in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
	(
		"$t" >"$results/$n" 2>&1
		echo $? >"$results/$n.rc"
	) &
	n=$((n + 1))
done
wait
passed=0 failed=0 i=0
for t in "$@"; do
	out=$(cat "$results/$i")
	rc=$(cat "$results/$i.rc" 2>/dev/null || echo 1)
	i=$((i + 1))
	printf '%s\n' "$out"
	p=$(printf '%s\n' "$out" | sed -n 's/.*\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	f=$(printf '%s\n' "$out" | sed -n 's/.*\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0}))
	# A binary that crashed or printed no tally counts as one failure.
	if [ "$rc" -ne 0 ] && [ -z "$f" ]; then failed=$((failed + 1)); fi
	if [ -z "$p" ] && [ -z "$f" ]; then failed=$((failed + 1)); echo "$t: no cmocka summary"; fi
done
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
