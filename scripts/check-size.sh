#!/bin/bash
# No source file of user/ over 1,100 lines: past that a file holds more than one responsibility
# (issue 26).  The exceptions are format writers whose length is the format's (named here, each
# with its reason in docs/how-it-works.md).  Prints each file over; exit 1 if any.
set -u
max=1100
exceptions=(
	user/trace/firefox_trace.c # the Firefox profiler's processed format: one writer per table
)
cd "$(dirname "$0")/.." || exit 1
bad=0
for f in user/*.c user/*/*.c; do
	n=$(wc -l <"$f")
	[ "$n" -le "$max" ] && continue
	for e in "${exceptions[@]}"; do [ "$f" = "$e" ] && continue 2; done
	echo "$f: $n lines (more than $max: split it by responsibility)"
	bad=1
done
exit $bad
