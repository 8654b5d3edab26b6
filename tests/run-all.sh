#!/bin/bash
# `make test`: unit tests, the fuzzers (FUZZ_BINS, FUZZ_SECONDS each), then end-to-end tests;
# the last line is the overall tally.
cd "$(dirname "$0")/.." || exit 1
tally() { # tally FILE PREFIX FIELD: N from the "PREFIX: N passed, N failed" line
	sed -n "s/^$2: \([0-9]*\) passed, \([0-9]*\) failed.*/\\$3/p" "$1" | tail -1
}
unit_out=$(mktemp)
tests/run-unit.sh "$@" | tee "$unit_out"
fuzz_out=$(mktemp)
if [ -n "${FUZZ_BINS:-}" ]; then
	# shellcheck disable=SC2086 # a list of paths without spaces, from the Makefile
	tests/run-fuzz.sh $FUZZ_BINS | tee "$fuzz_out"
else
	echo "fuzz: 0 passed, 0 failed (FUZZ_BINS not set: not run)" | tee "$fuzz_out"
fi
e2e_out=$(mktemp)
tests/e2e/run.sh | tee "$e2e_out"
up=$(tally "$unit_out" unit 1)
uf=$(tally "$unit_out" unit 2)
fp=$(tally "$fuzz_out" fuzz 1)
ff=$(tally "$fuzz_out" fuzz 2)
ep=$(tally "$e2e_out" e2e 1)
ef=$(tally "$e2e_out" e2e 2)
rm -f "$unit_out" "$fuzz_out" "$e2e_out"
passed=$((${up:-0} + ${fp:-0} + ${ep:-0}))
failed=$((${uf:-1} + ${ff:-1} + ${ef:-1}))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
