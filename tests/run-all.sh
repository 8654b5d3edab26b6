#!/bin/bash
# `make test`: unit tests, then end-to-end tests; the last line is the overall tally.
cd "$(dirname "$0")/.." || exit 1
unit_out=$(mktemp)
tests/run-unit.sh "$@" | tee "$unit_out"
e2e_out=$(mktemp)
tests/e2e/run.sh | tee "$e2e_out"
up=$(sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p' "$unit_out")
uf=$(sed -n 's/^unit: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p' "$unit_out")
ep=$(sed -n 's/^e2e: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$e2e_out")
ef=$(sed -n 's/^e2e: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$e2e_out")
rm -f "$unit_out" "$e2e_out"
passed=$(( ${up:-0} + ${ep:-0} ))
failed=$(( ${uf:-1} + ${ef:-1} ))
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
