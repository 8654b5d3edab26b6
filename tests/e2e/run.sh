#!/bin/bash
# End-to-end tests: real BPF, real processes, as root.  Each tests/e2e/test_*.sh defines
# functions named t_*; each runs in its own subshell and passes unless it calls fail.
# Without BPF (not root, no BTF) the suite skips — except under CI=true, where that fails.
cd "$(dirname "$0")/../.." || exit 1
. tests/e2e/lib.sh
. tests/e2e/docker.sh

if ! bpf_available; then
	if [ "${CI:-}" = "true" ]; then
		echo "e2e: BPF unavailable ($BPF_WHY) but CI=true: failing"
		echo "e2e: 0 passed, 1 failed"
		exit 1
	fi
	echo "e2e: SKIPPED: BPF unavailable ($BPF_WHY)"
	echo "e2e: 0 passed, 0 failed (skipped)"
	exit 0
fi

E2E_BASE=$E2E_TMP
passed=0 failed=0 skipped=0 failures="" why=""
# The containers, images and dockerd this run started go when it ends, however it ends.
trap docker_down EXIT
only=${E2E_ONLY:-}

# run_pass LABEL PROF_ARGS FILE…: every t_* of the files, each in its own subshell; with a LABEL
# the tests run again with PROF_ARGS in front of the profiler's options (lib.sh's prof_wrap) and
# are named t_…[LABEL].  E2E_ONLY matches that name.
run_pass() {
	local label=$1 args=$2 file t name log start rc secs reason
	shift 2
	for file in "$@"; do
		for t in $(bash -c ". tests/e2e/lib.sh; . $file; declare -F" | awk '{print $3}' | grep '^t_'); do
			name=$t${label:+[$label]}
			if [ -n "$only" ] && ! [[ "$name" == *$only* ]]; then continue; fi
			if [ -n "$label" ] && [[ " ${PASS_SKIP:-} " == *" $t "* ]]; then continue; fi
			log="$E2E_BASE/$t${label:+.${label//[^a-z0-9]/}}.log"
			start=$(date +%s)
			# Each test gets its own scratch directory: no file leaks from one test into the next.
			# shellcheck disable=SC1090,SC2030 # a test file by its path; E2E_TMP is per subshell
			(
				export E2E_TMP="$E2E_BASE/$t${label:+.${label//[^a-z0-9]/}}"
				mkdir -p "$E2E_TMP"
				trap 'kill $(jobs -p) 2>/dev/null; container_test_cleanup' EXIT
				if [ -n "$label" ]; then E2E_PROF_ARGS=$args; prof_wrap; fi
				. "$file"
				set -u
				"$t"
			) >"$log" 2>&1
			rc=$?
			secs=$(($(date +%s) - start))
			if [ $rc -eq 0 ]; then
				# A passing test's scratch files go (some are large: sample dumps of a JVM).
				rm -rf "${log%.log}"
				passed=$((passed + 1))
				echo "[ OK   ] $name (${secs}s)"
			elif [ $rc -eq 77 ]; then
				# lib.sh/docker.sh's skip: what is missing, never under CI=true for docker
				skipped=$((skipped + 1))
				echo "[ SKIP ] $name: $(sed -n 's/^SKIP: //p' "$log" | tail -1)"
			else
				failed=$((failed + 1))
				failures="$failures $name"
				# Repeated at the end, where a CI log's tail shows it: why, in one line.
				reason=$(grep -a '^FAIL: ' "$log" | tail -1 | cut -c7-246)
				[ -n "$reason" ] || reason="exit status $rc, last line: $(tail -1 "$log" | cut -c1-200)"
				why="$why  $name: $reason"$'\n'
				echo "[ FAIL ] $name (${secs}s)"
				sed 's/^/    | /' "$log" | tail -120
			fi
		done
	done
}

run_pass "" "" tests/e2e/test_*.sh
# The frame-pointer tests through the frame-pointer walker too: the default (auto) unwinds with
# .eh_frame tables, and --unwind fp must keep what these tests assert (about a minute).
# Not those whose subject is not the walk (35 s of CI): the ring buffer's transport of 131,072
# distinct stacks, the uprobe_multi links a file gets, and -p following an exec (through the
# dynamic loader's hook, which --unwind fp does not set under -p).
if [ -z "${E2E_NO_FP_PASS:-}" ]; then
	skip="t_heap_no_stack_lost_with_many_distinct_stacks t_heap_multi_links_per_file"
	PASS_SKIP="$skip t_heap_pid_exec_other_libc t_heap_pid_exec_static" \
		run_pass "--unwind fp" "--unwind fp" tests/e2e/test_heap.sh tests/e2e/test_cpu.sh \
		tests/e2e/test_offcpu.sh
fi
if [ -n "$failures" ]; then
	printf 'e2e failed because:\n%s' "$why"
	echo "e2e failures:$failures"
fi
docker_down
trap - EXIT
# shellcheck disable=SC2031 # the base directory, set before the per-test subshells
[ -z "${E2E_KEEP:-}" ] && [ $failed -eq 0 ] && rm -rf "$E2E_TMP"
if [ $skipped -gt 0 ]; then
	echo "e2e: $passed passed, $failed failed, $skipped skipped"
else
	echo "e2e: $passed passed, $failed failed"
fi
[ $failed -eq 0 ]
