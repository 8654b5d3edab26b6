#!/bin/bash
# The profiler with $E2E_PROF_ARGS before the caller's arguments (see prof_wrap in lib.sh).
# exec: the caller's $! stays the profiler's pid, for its signals and waits.
read -ra extra <<<"${E2E_PROF_ARGS:-}"
exec "${E2E_PROF_BIN:?E2E_PROF_BIN not set}" "${extra[@]}" "$@"
