#!/bin/bash
# Run every cmocka unit-test binary given; print cmocka's own output and a tally on the last
# line ("unit: N passed, N failed") that tests/run-all.sh folds into the final summary.
passed=0 failed=0
for t in "$@"; do
	out=$("$t" 2>&1)
	rc=$?
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
