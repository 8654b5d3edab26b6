#!/bin/bash
# Libraries loaded by dlopen after the profiler started (issue 25, item 11): the process is held
# at the loader's RT_CONSISTENT _dl_debug_state — the library mapped, its constructors not run —
# until the library's unwind table is in, so that every stack through it, the constructor's
# first, reaches main.  Libraries built here without frame pointers (tests/targets/lib/dlo_lib.c),
# loaded by tests/targets/dlopen_nofp.c; Debian's python3.11 importing _json.

DL=build/targets/dlopen_nofp
ROOTS='(__libc_start_call_main|start_thread|clone3)'

# dlo_lib.c as a shared library without frame pointers: LIB OUT [ID] [extra gcc flags...]
build_dlo() {
	local out=$1 id=${2:-0}
	shift 2
	gcc -shared -fPIC -g -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -DDLO_ID="$id" "$@" \
		tests/targets/lib/dlo_lib.c -o "$out" || fail "building $out failed"
}

# dlo_lib.c's exact bytes, each on a stack unwound from the library's leaf through the caller
# in the program to main and the root: the constructor's (inside dlopen) and dlo_work's.
check_dlo_stacks() { # FILE LIBS
	local f=$1 n=$2 s=$E2E_TMP/dlo.stacks
	expect_no_drops "$f"
	pprof_stacks "$f" alloc_space >"$s"
	expect_eq "dlo_ctor_alloc alloc_space" $((n * 100000)) "$(pprof_flat "$f" alloc_space dlo_ctor_alloc)"
	expect_eq "dlo_alloc alloc_space" $((n * 400000)) "$(pprof_flat "$f" alloc_space dlo_alloc)"
	expect_eq "constructor bytes on dlo_ctor_alloc;dlo_ctor;…;dlopen;open_lib;main;root" $((n * 100000)) \
		"$(sum_matching "$s" "\|dlo_ctor_alloc;dlo_ctor;([^;]+;)*dlopen;open_lib;main;$ROOTS;")"
	expect_eq "bytes on dlo_alloc;dlo_work;call_lib;main;root" $((n * 400000)) \
		"$(sum_matching "$s" "\|dlo_alloc;dlo_work;call_lib;main;$ROOTS;")"
	expect_eq "unwind_no_table_yet" 0 "$(pprof_counter_value "$f" unwind_no_table_yet)"
	expect_eq "dlopen_hold_fail" 0 "$(pprof_counter_value "$f" dlopen_hold_fail)"
	echo "ok: every stack of the $n dlopen'd libraries reaches main"
}

# `-- CMD` (ptraced: our SIGSTOP is a signal-delivery-stop the tracer swallows).
t_dlopen_cmd_stacks_reach_main() {
	local f=$E2E_TMP/cmd.pb.gz
	build_dlo "$E2E_TMP/libdlo1.so" 1
	build_dlo "$E2E_TMP/libdlo2.so" 2
	"$PROF" --heap -o "$f" --top 0 -- "$DL" "$E2E_TMP/libdlo1.so" "$E2E_TMP/libdlo2.so" \
		>"$E2E_TMP/target.out" || fail "profiler exit status $?"
	expect_eq "target output" "DONE 2" "$(cat "$E2E_TMP/target.out")"
	check_dlo_stacks "$f" 2
}

# More libraries than the unwinder once kept mappings of a process (256; `import torch` maps
# 316): 300 copies of one library (files of their own, one table shared by build id), opened
# before -p attaches; every stack of each one's dlo_work reaches main, no mapping dropped.
t_dlopen_many_libraries_stacks_reach_main() {
	local f=$E2E_TMP/many.pb.gz n=300 i libs=() s=$E2E_TMP/many.stacks
	build_dlo "$E2E_TMP/libdlo.so" 1
	for ((i = 0; i < n; i++)); do
		cp "$E2E_TMP/libdlo.so" "$E2E_TMP/libdlo.$i.so" || fail "cp failed"
		libs+=("$E2E_TMP/libdlo.$i.so")
	done
	start_waiting_target "$E2E_TMP/target.out" setsid "$DL" --wait --open-first "${libs[@]}"
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	finish_waiting_run
	expect_no_drops "$f"
	expect_eq "unwind_mappings_dropped" 0 "$(pprof_counter_value "$f" unwind_mappings_dropped)"
	pprof_stacks "$f" alloc_space >"$s"
	expect_eq "dlo_alloc alloc_space" $((n * 400000)) "$(pprof_flat "$f" alloc_space dlo_alloc)"
	expect_eq "bytes on dlo_alloc;dlo_work;call_lib;main;root" $((n * 400000)) \
		"$(sum_matching "$s" "\|dlo_alloc;dlo_work;call_lib;main;$ROOTS;")"
}

# Sampled `-- CMD` under our preloaded sampler: the process's heap comes from its otel_memory
# probes, so its dlopens run on unheld (only ld.so's startup, which brings the sampler, is held),
# counted; with --cpu, which walks its stacks at every sample, they are held again.
t_dlopen_otel_cmd_unheld() {
	local f=$E2E_TMP/otel.pb.gz c=$E2E_TMP/otelcpu.pb.gz
	build_dlo "$E2E_TMP/libdlo1.so" 1
	build_dlo "$E2E_TMP/libdlo2.so" 2
	"$PROF" --heap --sample-bytes 4096 -o "$f" --top 0 -- "$DL" "$E2E_TMP/libdlo1.so" \
		"$E2E_TMP/libdlo2.so" >"$E2E_TMP/target.out" || fail "profiler exit status $?"
	expect_eq "target output" "DONE 2" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	expect_eq "heap_procs_otel" 1 "$(pprof_counter_value "$f" heap_procs_otel)"
	expect_eq "dlopen_unheld_otel" 2 "$(pprof_counter_value "$f" dlopen_unheld_otel)"
	expect_eq "dlopen_holds (ld.so's startup)" 1 "$(pprof_counter_value "$f" dlopen_holds)"
	"$PROF" --heap --cpu --sample-bytes 4096 -o "$c" --top 0 -- "$DL" "$E2E_TMP/libdlo1.so" \
		"$E2E_TMP/libdlo2.so" >"$E2E_TMP/target.out" || fail "profiler exit status $?"
	c=${c%.pb.gz}.heap.pb.gz
	expect_eq "--cpu: dlopen_unheld_otel" 0 "$(pprof_counter_value "$c" dlopen_unheld_otel)"
	expect_eq "--cpu: dlopen_holds" 3 "$(pprof_counter_value "$c" dlopen_holds)"
}

# The same, unheld: its maps are read at the dlopen, so that a library's table comes in at
# once and not at the first stack through it.  Libraries without the constructor (nothing runs
# in them before dlo_work), each dlo_work 300 ms after its dlopen: all its sampled bytes are on
# stacks reaching main (before: its first samples cut at the walker's first miss).
t_dlopen_otel_unheld_table_at_dlopen() {
	local f=$E2E_TMP/settle.pb.gz s=$E2E_TMP/settle.stacks total
	build_dlo "$E2E_TMP/libdlo1.so" 1 -DDLO_NO_CTOR
	build_dlo "$E2E_TMP/libdlo2.so" 2 -DDLO_NO_CTOR
	"$PROF" --heap --sample-bytes 4096 -o "$f" --top 0 -- "$DL" --settle 300 \
		"$E2E_TMP/libdlo1.so" "$E2E_TMP/libdlo2.so" >"$E2E_TMP/target.out" ||
		fail "profiler exit status $?"
	expect_eq "target output" "DONE 2" "$(cat "$E2E_TMP/target.out")"
	expect_eq "dlopen_unheld_otel" 2 "$(pprof_counter_value "$f" dlopen_unheld_otel)"
	pprof_stacks "$f" alloc_space >"$s"
	total=$(pprof_flat "$f" alloc_space dlo_alloc)
	[ "$total" -gt 0 ] || fail "no sampled bytes in dlo_alloc"
	expect_eq "dlo_alloc's sampled bytes on stacks reaching main" "$total" \
		"$(sum_matching "$s" "\|dlo_alloc;dlo_work;call_lib;main;$ROOTS;")"
	expect_eq "unwind_no_table_yet" 0 "$(pprof_counter_value "$f" unwind_no_table_yet)"
}

# -p: a process we do not trace, stopped by SIGSTOP and resumed by SIGCONT (started in a
# session of its own: a process with a terminal is never held, docs/how-it-works.md: Limits).
t_dlopen_pid_stacks_reach_main() {
	local f=$E2E_TMP/pid.pb.gz
	build_dlo "$E2E_TMP/libdlo1.so" 1
	start_waiting_target "$E2E_TMP/target.out" setsid "$DL" --wait "$E2E_TMP/libdlo1.so"
	start_profiler "$E2E_TMP/prof.log" --heap -p "$TARGET_PID" -o "$f" --top 0
	finish_waiting_run
	check_dlo_stacks "$f" 1
	[ "$(pprof_counter_value "$f" dlopen_holds)" -ge 1 ] || fail "no dlopen held"
}

# A library without CFI: its cut stacks are "never" (none will come), not "not yet".
t_dlopen_no_cfi_counted_never() {
	local f=$E2E_TMP/nocfi.pb.gz
	build_dlo "$E2E_TMP/libnocfi.so" 3 -fno-asynchronous-unwind-tables -fno-unwind-tables -g0
	[ "$(readelf --debug-dump=frames "$E2E_TMP/libnocfi.so" | grep -c FDE)" = 0 ] ||
		fail "libnocfi.so has CFI"
	"$PROF" --heap --unwind dwarf -o "$f" --top 0 -- "$DL" "$E2E_TMP/libnocfi.so" \
		>"$E2E_TMP/target.out" || fail "profiler exit status $?"
	expect_eq "target output" "DONE 1" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	# Every one of the library's 300 allocations is cut in it (--unwind dwarf: no frame pointers).
	expect_eq "unwind_no_table_never" 300 "$(pprof_counter_value "$f" unwind_no_table_never)"
	expect_eq "unwind_no_table_yet" 0 "$(pprof_counter_value "$f" unwind_no_table_yet)"
}

# The total cap: a process is held at its first 32 dlopens (ld.so's startup is one), later
# ones run on unheld, counted.  41 libraries: 32 held, 9 not.
t_dlopen_holds_capped() {
	local f=$E2E_TMP/cap.pb.gz libs=() i
	for ((i = 1; i <= 40; i++)); do
		build_dlo "$E2E_TMP/libdlo$i.so" "$i"
		libs+=("$E2E_TMP/libdlo$i.so")
	done
	"$PROF" --heap -o "$f" --top 0 -- "$DL" "${libs[@]}" >"$E2E_TMP/target.out" ||
		fail "profiler exit status $?"
	expect_eq "target output" "DONE 40" "$(cat "$E2E_TMP/target.out")"
	expect_no_drops "$f"
	expect_eq "dlopen_hold_fail" 0 "$(pprof_counter_value "$f" dlopen_hold_fail)"
	expect_eq "dlopen_holds" 32 "$(pprof_counter_value "$f" dlopen_holds)"
	expect_eq "dlopen_holds_spent" 9 "$(pprof_counter_value "$f" dlopen_holds_spent)"
}

# Debian's python3.11 encoding JSON: every byte allocated under the _json extension module
# (stripped: its frames are [_json…so]) is on a stack that reaches main, in each of 3 runs.
t_dlopen_python_json() {
	local f s run total main
	command -v python3.11 >/dev/null || fail "python3.11 missing"
	cat >"$E2E_TMP/json_work.py" <<'PY'
import json
big = [{"k%d" % i: [i, str(i) * 5, {"x": i * 1.5}]} for i in range(2000)]
for _ in range(20):
    s = json.dumps(big)
print("DONE", len(s))
PY
	for run in 1 2 3; do
		f=$E2E_TMP/py$run.pb.gz s=$E2E_TMP/py$run.stacks
		"$PROF" --heap -o "$f" --top 0 -- /usr/bin/python3.11 "$E2E_TMP/json_work.py" \
			>"$E2E_TMP/py.out" || fail "profiler exit status $?"
		grep -q '^DONE ' "$E2E_TMP/py.out" || fail "python did not finish"
		expect_no_drops "$f"
		pprof_stacks "$f" alloc_space >"$s"
		# _json's own functions have no names (.dynsym holds its init only): each is named by
		# its file offset (docs/how-it-works.md: Where names come from)
		total=$(sum_matching "$s" '(\||;)_json\.cpython[^;]*\+0x[0-9a-f]+(;|$)')
		main=$(sum_matching "$s" '(\||;)_json\.cpython[^;]*\+0x[0-9a-f]+;.*(main|Py_BytesMain);')
		[ "$total" -gt 1000000 ] || fail "run $run: only $total bytes under _json"
		expect_eq "run $run: bytes under _json on stacks reaching main (of $total)" "$total" "$main"
	done
}
